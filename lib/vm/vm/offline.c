/* offline.c: Ruby in a core carried off its machine.
 *
 * A core holds a process's written memory: libruby's .data and .bss, the
 * Ruby heap, the stacks.  It does not hold what could be read back from
 * the files (code, .rodata, .dynsym) unless its coredump_filter said so;
 * on another machine, or once a container image is gone, libruby's file is
 * not there either.  Then no symbol names ruby_version or the VM, and the
 * version string itself is in the missing .rodata.  What is left:
 *   - libruby's image, by its name (libruby-3.1.so.3.1.2, libruby.so.3.3.8,
 *     or the executable for a static Ruby);
 *   - the version: Ruby installs libruby under its full version
 *     (lib$(RUBY_SO_NAME).so.MAJOR.MINOR.TEENY), and its extensions under
 *     .../ruby/MAJOR.MINOR.0/ (the family only: then each of the family's
 *     layouts is tried, newest first); or the version the user gives;
 *   - the VM and the symbol table: variables in libruby's data, found by
 *     the same structural validation every other way of finding them must
 *     pass (ruby.c).
 * Everything then reads as from a whole core, but for strings that lived
 * in the missing read-only data (ruby_description), which stay unknown. */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm/vm/find.h"

#define SCAN_BYTES_MAX (32u << 20)     /* libruby's data is < 1 MiB */
#define SCAN_CHUNK     (64u << 10)

/* ---- Scanning libruby's data --------------------------------------------- */

static int scan_region(struct rbi_target *t, uint64_t start, uint64_t end, uint8_t *buf,
		       int (*fn)(struct rbi_target *, void *, uint64_t, uint64_t),
		       void *arg, uint64_t *at)
{
	for (uint64_t a = start; a < end; a += SCAN_CHUNK) {
		size_t want = end - a < SCAN_CHUNK ? (size_t)(end - a) : SCAN_CHUNK, n = 0;
		int rc = rbi_target_read_fn(t, a, buf, want, &n);

		if (rc != RBI_OK && rc != RBI_PARTIAL)
			continue;       /* pages the core lacks: nothing there */
		for (size_t off = 0; off + 8 <= n; off += 8) {
			if (fn(t, arg, a + off, rbi_get_u64(buf, (uint32_t)off))) {
				*at = a + off;
				return 1;
			}
		}
	}
	return 0;
}

int rbi_vm_scan_data(struct rbi_target *t, const struct rbi_image *img,
		     int (*fn)(struct rbi_target *t, void *arg, uint64_t addr, uint64_t word),
		     void *arg, uint64_t *at)
{
	const struct rbi_region_list *rl;
	uint64_t budget = SCAN_BYTES_MAX, data_end = 0;
	uint8_t *buf;
	int found = 0;

	if (rbi_regions(t, &rl) || !(buf = malloc(SCAN_CHUNK)))
		return 0;
	for (size_t i = 0; i < rl->n && !found && budget; i++) {
		const struct rbi_region *r = &rl->v[i];
		uint64_t end;

		/* The image's writable mappings of its file (.data), and the
		   anonymous mapping right after the last one (.bss past the
		   file's last page). */
		bool data = r->path && !strcmp(r->path, img->name) &&
			    r->start >= img->start && r->end <= img->end;
		bool bss = !r->path && data_end && r->start == data_end;

		if (data)
			data_end = (r->prot & RBI_PROT_WRITE) ? r->end : 0;
		if (!(data || bss) || (r->prot & (RBI_PROT_READ | RBI_PROT_WRITE)) !=
		    (RBI_PROT_READ | RBI_PROT_WRITE))
			continue;
		end = r->end - r->start > budget ? r->start + budget : r->end;
		budget -= end - r->start;
		found = scan_region(t, r->start, end, buf, fn, arg, at);
		if (bss)
			data_end = 0;
	}
	free(buf);
	return found;
}

/* ---- Which Ruby: names and the user's word ------------------------------- */

/* A version "X.Y.Z" (or "X.Y": *TEENY -1) at S, ending at END or NUL. */
static bool parse_version(const char *s, int *major, int *minor, int *teeny)
{
	char tail;
	int n;

	*teeny = -1;
	n = sscanf(s, "%d.%d.%d%c", major, minor, teeny, &tail);
	if (n == 2)
		*teeny = -1;
	return (n == 2 || n == 3) && *major >= 1 && *major < 100 && *minor >= 0 &&
	       *minor < 100 && *teeny < 1000;
}

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

bool rbi_vm_libruby_version(const char *path, int *major, int *minor, int *teeny)
{
	const char *so = strstr(base_name(path), ".so.");

	return so && parse_version(so + 4, major, minor, teeny) && *teeny >= 0;
}

bool rbi_vm_path_family(const char *path, int *major, int *minor, size_t *prefix)
{
	for (const char *q = strstr(path, "/ruby/"); q; q = strstr(q + 1, "/ruby/")) {
		char dir[16];
		size_t n = strcspn(q + 6, "/");
		int teeny;

		if (!isdigit((unsigned char)q[6]) || n >= sizeof(dir) || q[6 + n] != '/')
			continue;
		memcpy(dir, q + 6, n);
		dir[n] = '\0';
		if (sscanf(dir, "%d.%d.%d", major, minor, &teeny) == 3 && teeny == 0) {
			*prefix = (size_t)(q + 6 + n - path);
			return true;
		}
	}
	return false;
}

bool rbi_vm_ruby_image_name(const char *path, bool exe)
{
	return !strncmp(base_name(path), exe ? "ruby" : "libruby", exe ? 4 : 7);
}

/* A mapped path with "/ruby/X.Y.0/" (extensions, encodings): the family. */
static bool version_of_paths(struct rbi_target *t, int *major, int *minor, char *via, size_t cap)
{
	const struct rbi_region_list *rl;
	size_t prefix;

	if (rbi_regions(t, &rl))
		return false;
	for (size_t i = 0; i < rl->n; i++) {
		const char *p = rl->v[i].path;

		if (p && rbi_vm_path_family(p, major, minor, &prefix)) {
			snprintf(via, cap, "path %.*s (patch release unknown)", (int)prefix, p);
			return true;
		}
	}
	return false;
}

/* libruby, else the executable of a static Ruby. */
static const struct rbi_image *ruby_image(struct rbi_image_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		if (rbi_vm_ruby_image_name(l->v[i].name, false))
			return &l->v[i];
	for (size_t i = 0; i < l->n; i++)
		if (rbi_vm_ruby_image_name(l->v[i].name, true))
			return &l->v[i];
	return NULL;
}

/* ---- Finding it ---------------------------------------------------------- */

static void set_version(struct rbi_vm *vm, int major, int minor, int teeny)
{
	struct rbi_ruby_info *info = &vm->info;

	info->major = major;
	info->minor = minor;
	info->teeny = teeny < 0 ? 0 : teeny;
	if (teeny < 0)
		snprintf(info->version, sizeof(info->version), "%d.%d", major, minor);
	else
		snprintf(info->version, sizeof(info->version), "%d.%d.%d", major, minor, teeny);
}

/* Locate with each layout of the family, newest first: the one whose VM
   validates is the patch release's. */
static int locate_in_family(struct rbi_target *t, struct rbi_vm *vm, int major, int minor)
{
	int rc = RBI_NO_LAYOUT;
	size_t n = 0;

	while (rbi_layout_tables[n])
		n++;
	for (size_t i = n; i-- > 0;) {
		const struct rbi_layout *l = rbi_layout_tables[i];

		if (l->major != major || l->minor != minor)
			continue;
		set_version(vm, major, minor, l->min_teeny);
		if ((rc = rbi_vm_locate(t, vm)) == RBI_OK)
			break;
	}
	set_version(vm, major, minor, -1);
	if (rc == RBI_NO_LAYOUT)
		return rbi_fail(rc, "Ruby %d.%d is not known to this rbinspect", major, minor);
	return rc;
}

/* What to give when the version cannot be read. */
#define OFFLINE_HINT "give the Ruby's files (--sysroot DIR, or the executable after " \
		     "the core) or its version (--ruby-version X.Y.Z)"

int rbi_vm_find_offline(struct rbi_target *t, struct rbi_vm *vm,
			struct rbi_image_list *images)
{
	/* A family read from a path (/ruby/X.Y.0/) has no patch release. */
	int major, minor, teeny = -1, gmajor, gminor, gteeny;
	const char *ruby_version;
	bool named, given = false, family = false;
	int rc;

	if (!vm->image && !(vm->image = ruby_image(images)))
		return rbi_fail(RBI_NOT_RUBY, "not a Ruby process: no loaded image defines "
				"ruby_version or is named like libruby or ruby");
	named = rbi_vm_libruby_version(vm->image->name, &major, &minor, &teeny);
	if (named)
		snprintf(vm->version_via, sizeof(vm->version_via), "file name %s",
			 base_name(vm->image->name));
	else
		family = version_of_paths(t, &major, &minor, vm->version_via,
					  sizeof(vm->version_via));
	if ((ruby_version = rbi_target_ruby_version(t))) {
		if (!parse_version(ruby_version, &gmajor, &gminor, &gteeny))
			return rbi_fail(RBI_INVAL, "--ruby-version \"%s\" is not a version "
					"(X.Y.Z)", ruby_version);
		if ((named || family) && (gmajor != major || gminor != minor ||
					  (named && gteeny >= 0 && gteeny != teeny)))
			rbi_diag_add(rbi_target_diag(t), "the core's %s says Ruby %d.%d%s, but "
				     "--ruby-version %s was given: using it", vm->version_via,
				     major, minor, named ? "" : ".x", ruby_version);
		major = gmajor, minor = gminor, teeny = gteeny;
		given = true;
		snprintf(vm->version_via, sizeof(vm->version_via), "--ruby-version");
	}
	if (!named && !family && !given)
		return rbi_fail(RBI_NO_LAYOUT, "%s: which Ruby this is cannot be read: its "
				"version is in read-only data the core does not hold, and no "
				"file name says it; " OFFLINE_HINT, vm->image->name);
	set_version(vm, major, minor, teeny);
	rbi_diag_add(rbi_target_diag(t), "%s: neither its symbols nor its version string are in the "
		     "core or on this machine: Ruby %s%s from %s", vm->image->name,
		     vm->info.version, teeny >= 0 ? "" : ".x", vm->version_via);
	if (teeny >= 0) {
		rc = rbi_vm_locate(t, vm);
	} else {
		rc = locate_in_family(t, vm, major, minor);
	}
	if (rc == RBI_NO_VM || rc == RBI_NO_LAYOUT)
		return rbi_fail(RBI_NO_LAYOUT, "%s: no VM validates as Ruby %s (from %s), "
				"a wrong version, or the core lacks that memory; " OFFLINE_HINT, vm->image->name,
				vm->info.version, vm->version_via);
	return rc;
}
