/* test-images.c: loaded images, symbols and code anchors against real
 * Rubies (Debian's binaries, and DWARF builds when present).
 *
 * Each Ruby under $RBI_RUBIES (default ~/.cache/rbinspect/rubies) is run
 * (deb-X.Y in a chroot, dwarf-X.Y/bin/ruby directly), then inspected live:
 *  - the image defining ruby_version is libruby (or a static ruby), its
 *    build-id equals `readelf -n` of the file, and ruby_version reads back
 *    the RUBY_VERSION the process printed;
 *  - rb_sym_immortal_count, ruby_vm_at_exit, rb_gc_count, rb_thread_main,
 *    rb_gc_get_objspace decode to the RIP-relative references objdump
 *    finds in the file, and those agree with ruby-internals.md §1.3;
 *  - with the file made unavailable or replaced by another file, the
 *    image is rebuilt from target memory and gives the same answers;
 *  - on DWARF builds the LOCAL ruby_current_vm_ptr is found, matches the
 *    code anchors, and rbi_image_dwarf() returns DWARF.
 * Always run: the decoder on bytes we control, and this test's own
 * process (a LOCAL and a TLS symbol, its DWARF).  A Ruby that is not
 * installed is reported and skipped; deb-X.Y need root (chroot), the core
 * tests need gdb's gcore.  TAP output; exit 1 on any failure. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "tap.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- The Ruby under test ------------------------------------------------ */

struct ruby {
	const char *name;       /* deb-3.3, dwarf-3.4 */
	bool ns;                /* in its own mount+pid namespace (a container) */
	pid_t pid;              /* the Ruby, as our pid namespace numbers it */
	pid_t child;            /* what we forked (the Ruby, or run-in-ns.sh) */
	char version[32];       /* RUBY_VERSION as the process printed it */
	int major, minor;
	bool dwarf;
};

/* A script of the source tree's tools/ (the build passes RBI_SRCDIR). */
static const char *src_tool(const char *name)
{
	static char path[4096];

	snprintf(path, sizeof(path), "%s/tools/%s", RBI_SRCDIR, name);
	return access(path, X_OK) == 0 ? path : NULL;
}

/* Start NAME's ruby; it prints RUBY_VERSION and sleeps.  deb-X.Y run in a
   chroot of their root (or, with RB->ns, in a namespace whose / is that
   root), dwarf-X.Y/bin/ruby directly. */
static bool ruby_start(const char *dir, struct ruby *rb)
{
	char root[4096 + 64], exe[4096 + 96], pidfile[64] = "";
	const char *script = "$stdout.sync = true; puts RUBY_VERSION; sleep";
	const char *ns = rb->ns ? src_tool("run-in-ns.sh") : NULL;
	bool chrooted;
	int fds[2];
	FILE *f;

	snprintf(root, sizeof(root), "%s/%s", dir, rb->name);
	snprintf(exe, sizeof(exe), "%s/usr/bin/ruby", root);
	chrooted = access(exe, X_OK) == 0;
	if (!chrooted) {
		snprintf(exe, sizeof(exe), "%s/bin/ruby", root);
		if (rb->ns || access(exe, X_OK) != 0)
			return false;
	}
	if (rb->ns && !ns)
		return false;
	if (rb->ns) {
		snprintf(pidfile, sizeof(pidfile), "/tmp/rbi-test-images.%d.pid", (int)getpid());
		unlink(pidfile);
	}
	if (pipe(fds))
		return false;
	rb->child = fork();
	if (rb->child < 0)
		return false;
	if (rb->child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		if (rb->ns) {
			setenv("RBI_NS_PIDFILE", pidfile, 1);
			execl("/bin/bash", "bash", ns, root, "/usr/bin/ruby", "-e", script,
			      (char *)NULL);
		} else if (chrooted) {
			if (chroot(root) || chdir("/"))
				_exit(126);
			execl("/usr/bin/ruby", "ruby", "-e", script, (char *)NULL);
		} else {
			execl(exe, "ruby", "-e", script, (char *)NULL);
		}
		_exit(127);
	}
	close(fds[1]);
	rb->pid = rb->child;
	f = fdopen(fds[0], "r");
	if (!f || !fgets(rb->version, sizeof(rb->version), f)) {
		if (f)
			fclose(f);
		kill(rb->child, SIGKILL);
		waitpid(rb->child, NULL, 0);
		return false;
	}
	fclose(f);
	rb->version[strcspn(rb->version, "\n")] = '\0';
	sscanf(rb->version, "%d.%d", &rb->major, &rb->minor);
	/* The Ruby printed, so it exists; its pid file comes within ~10 ms. */
	for (int i = 0; rb->ns && i < 500; i++) {
		int pid = 0;

		if ((f = fopen(pidfile, "r"))) {
			if (fscanf(f, "%d", &pid) != 1)
				pid = 0;
			fclose(f);
		}
		if (pid > 0) {
			rb->pid = pid;
			break;
		}
		usleep(10000);
	}
	if (rb->ns)
		unlink(pidfile);
	if (rb->pid == rb->child && rb->ns) {
		kill(rb->child, SIGKILL);
		waitpid(rb->child, NULL, 0);
		return false;
	}
	return true;
}

static void ruby_stop(struct ruby *rb)
{
	if (rb->pid != rb->child)
		kill(rb->pid, SIGKILL);
	kill(rb->child, SIGKILL);
	waitpid(rb->child, NULL, 0);
}

/* ---- Truth from binutils ------------------------------------------------ */

/* Single-quote S for the shell. */
static void shell_quote(char *out, size_t cap, const char *s)
{
	size_t n = 0;

	if (cap < 3)
		return;
	out[n++] = '\'';
	for (; *s && n + 5 < cap; s++) {
		if (*s == '\'') {
			memcpy(out + n, "'\\''", 4);
			n += 4;
		} else {
			out[n++] = *s;
		}
	}
	out[n++] = '\'';
	out[n] = '\0';
}

/* The output of the command "TOOL FILE 2>/dev/null" (TOOL: a program and
   its options; FILE quoted for the shell), to pclose(); NULL if popen
   fails. */
static FILE *tool_on(const char *tool, const char *file)
{
	char q[4200], cmd[4400];

	shell_quote(q, sizeof(q), file);
	snprintf(cmd, sizeof(cmd), "%s %s 2>/dev/null", tool, q);
	return popen(cmd, "r");
}

static bool readelf_build_id(const char *file, char *hex, size_t cap)
{
	char line[512];
	bool found = false;
	FILE *p;

	if (!(p = tool_on("readelf -n", file)))
		return false;
	while (fgets(line, sizeof(line), p)) {
		char *s = strstr(line, "Build ID: ");

		if (s && !found) {
			snprintf(hex, cap, "%s", s + 10);
			hex[strcspn(hex, " \n")] = '\0';
			found = true;
		}
	}
	pclose(p);
	return found;
}

/* Value, type and binding of NAME in FILE's .symtab/.dynsym per readelf. */
static bool readelf_sym(const char *file, const char *name, uint64_t *value,
			char *type, char *bind)
{
	char line[1024];
	bool found = false;
	FILE *p;

	if (!(p = tool_on("readelf -sW", file)))
		return false;
	while (fgets(line, sizeof(line), p)) {
		char v[32], sz[32], ty[16], bi[16], vis[16], ndx[16], nm[512];

		if (found || sscanf(line, "%*s %31s %31s %15s %15s %15s %15s %511s",
				    v, sz, ty, bi, vis, ndx, nm) != 7 ||
		    strcmp(nm, name) || !strcmp(ndx, "UND"))
			continue;
		*value = strtoull(v, NULL, 16);
		strcpy(type, ty);
		strcpy(bind, bi);
		found = true;
	}
	pclose(p);
	return found;
}

#define REFS_MAX 32

/* The RIP-relative operands objdump shows in [START, STOP) of FILE (ELF
   addresses), up to the first instruction after which code does not fall
   through, like rbi_code_rip_refs. */
static int objdump_refs(const char *file, uint64_t start, uint64_t stop,
			struct rbi_rip_ref *refs, size_t max, size_t *n)
{
	char tool[128], line[1024];
	FILE *p;

	*n = 0;
	snprintf(tool, sizeof(tool), "objdump -d --no-show-raw-insn --start-address=0x%"
		 PRIx64 " --stop-address=0x%" PRIx64, start, stop);
	if (!(p = tool_on(tool, file)))
		return -1;
	while (fgets(line, sizeof(line), p)) {
		char *colon, *s, mn[32] = "";
		uint64_t insn, target;

		insn = strtoull(line, &colon, 16);
		if (colon == line || colon[0] != ':' || colon[1] != '\t')
			continue;
		s = colon + 2;
		/* Skip prefixes objdump prints as words. */
		for (int k = 0; k < 4; k++) {
			if (sscanf(s, "%31s", mn) != 1)
				break;
			if (strcmp(mn, "bnd") && strcmp(mn, "notrack") &&
			    strcmp(mn, "data16") && strcmp(mn, "cs") &&
			    strcmp(mn, "ds") && strncmp(mn, "rex", 3) &&
			    strcmp(mn, "lock") && strcmp(mn, "rep") && strcmp(mn, "repz"))
				break;
			s += strspn(s, " \t");
			s += strlen(mn);
			s += strspn(s, " \t");
		}
		char *rip = strstr(s, "(%rip)"), *hash = strstr(s, "# ");
		if (rip && hash && *n < max) {
			target = strtoull(hash + 2, NULL, 16);
			refs[(*n)++] = (struct rbi_rip_ref){ .insn = insn, .target = target,
				.load = strncmp(mn, "lea", 3) != 0 };
		}
		if (!strncmp(mn, "ret", 3) || !strncmp(mn, "jmp", 3) ||
		    !strcmp(mn, "ljmp") || !strcmp(mn, "ud2") || !strcmp(mn, "hlt") ||
		    !strcmp(mn, "int3"))
			break;
	}
	pclose(p);
	return 0;
}

/* ---- Checks ------------------------------------------------------------- */

struct anchor {
	const char *fn;
	uint64_t addr, size;
	struct rbi_rip_ref refs[REFS_MAX];
	size_t n;
	bool found;
};

/* Decode FN in T and compare with objdump of IMG's file. */
static void check_anchor(struct rbi_target *t, const struct rbi_image *img,
			 const char *tag, struct anchor *a)
{
	struct rbi_rip_ref want[REFS_MAX];
	size_t nwant = 0;
	bool tls = false, same;

	a->found = rbi_image_symbol(img, a->fn, &a->addr, &a->size, &tls) == RBI_OK;
	if (!a->found) {
		diag("%s: %s not defined", tag, a->fn);
		return;
	}
	int rc = rbi_code_rip_refs(t, a->addr, 64, a->refs, REFS_MAX, &a->n);
	ok(rc == RBI_OK, "%s: %s decodes (%zu RIP-relative refs)", tag, a->fn, a->n);
	if (!img->file)
		return;
	uint64_t start = a->addr - img->bias;
	objdump_refs(img->file, start, start + (a->size ? a->size : 64), want,
		     REFS_MAX, &nwant);
	same = nwant == a->n;
	for (size_t i = 0; same && i < nwant; i++)
		same = want[i].insn + img->bias == a->refs[i].insn &&
		       want[i].target + img->bias == a->refs[i].target &&
		       want[i].load == a->refs[i].load;
	ok(same, "%s: %s refs equal objdump's (%zu)", tag, a->fn, nwant);
	for (size_t i = 0; !same && i < nwant; i++)
		diag("  objdump: 0x%" PRIx64 " -> 0x%" PRIx64 " %s", want[i].insn,
		     want[i].target, want[i].load ? "load" : "lea");
	for (size_t i = 0; !same && i < a->n; i++)
		diag("  ours:    0x%" PRIx64 " -> 0x%" PRIx64 " %s",
		     a->refs[i].insn - img->bias, a->refs[i].target - img->bias,
		     a->refs[i].load ? "load" : "lea");
}

static const struct rbi_region *region_of(struct rbi_target *t, uint64_t addr)
{
	const struct rbi_region_list *rl;

	if (rbi_regions(t, &rl))
		return NULL;
	return rbi_region_find(rl, addr);
}

/* What one pass over a target found, to compare file and memory images. */
struct found {
	uint64_t bias;          /* of libruby */
	uint64_t ruby_version, rb_gc_count, vm_ptr_slot, main_ractor_slot, vm;
	uint64_t immortal_ref;
};

/* The §1.3 facts for 3.3 and 3.4 (and the parts that hold for all). */
static void check_anchors(struct rbi_target *t, const struct rbi_image *img,
			  const struct ruby *rb, const char *tag, struct found *f)
{
	struct anchor imm = { .fn = "rb_sym_immortal_count" },
		      at_exit = { .fn = "ruby_vm_at_exit" },
		      gc_count = { .fn = "rb_gc_count" },
		      th_main = { .fn = "rb_thread_main" },
		      objspace = { .fn = "rb_gc_get_objspace" };
	bool v33 = rb->major == 3 && rb->minor == 3;
	bool v34 = (rb->major == 3 && rb->minor >= 4) || rb->major > 3;
	int rc;

	check_anchor(t, img, tag, &imm);
	check_anchor(t, img, tag, &at_exit);
	check_anchor(t, img, tag, &gc_count);
	check_anchor(t, img, tag, &th_main);
	check_anchor(t, img, tag, &objspace);
	f->rb_gc_count = gc_count.addr;

	if (imm.found && ok(imm.n >= 1 && imm.refs[0].load,
			    "%s: rb_sym_immortal_count loads a global (&ruby_global_symbols)", tag))
		f->immortal_ref = imm.refs[0].target;
	if (!v33 && !v34)
		return;

	/* ruby_vm_at_exit: `mov ruby_current_vm_ptr(%rip),%reg` first. */
	ok(at_exit.found && at_exit.n >= 1 && at_exit.refs[0].load,
	   "%s: ruby_vm_at_exit loads ruby_current_vm_ptr", tag);
	uint64_t vm_slot = at_exit.n ? at_exit.refs[0].target : 0;
	if (v33) {
		ok(gc_count.n >= 1 && !gc_count.refs[0].load &&
		   gc_count.refs[0].target == vm_slot,
		   "%s: rb_gc_count: lea &ruby_current_vm_ptr, same slot as ruby_vm_at_exit", tag);
	} else {
		struct rbi_call_ref calls[8];
		size_t nc = 0;

		ok(objspace.found && objspace.n >= 1 && !objspace.refs[0].load &&
		   objspace.refs[0].target == vm_slot,
		   "%s: rb_gc_get_objspace: lea &ruby_current_vm_ptr, same slot as ruby_vm_at_exit", tag);
		rc = gc_count.found ? rbi_code_calls(t, gc_count.addr, 64, calls, 8, &nc) : -1;
		ok(gc_count.n == 0 && rc == RBI_OK &&
		   nc >= 1 && !calls[0].tail && calls[0].resolved == objspace.addr,
		   "%s: rb_gc_count calls rb_gc_get_objspace (through PLT 0x%" PRIx64 ")",
		   tag, nc ? calls[0].target : 0);
	}
	f->vm_ptr_slot = vm_slot;
	uint64_t vm = 0;
	rc = vm_slot ? rbi_read_u64(t, vm_slot, &vm) : -1;
	f->vm = vm;
	ok(rc == RBI_OK && vm && region_of(t, vm) && (region_of(t, vm)->prot & RBI_PROT_WRITE),
	   "%s: *ruby_current_vm_ptr = 0x%" PRIx64 " is writable memory", tag, vm);
	/* rb_thread_main: lea &ruby_single_main_ractor; mov (%rax); test ... */
	ok(th_main.found && th_main.n >= 1 && !th_main.refs[0].load,
	   "%s: rb_thread_main: lea &ruby_single_main_ractor", tag);
	f->main_ractor_slot = th_main.n ? th_main.refs[0].target : 0;
}

static void check_target(struct rbi_target *t, const struct ruby *rb, const char *tag,
			 struct found *f, const struct rbi_image **out_img)
{
	struct rbi_image_list *l = NULL;
	const struct rbi_image *img;
	char hex[2 * RBI_BUILD_ID_MAX + 1], want[256], ver[32];
	uint64_t addr = 0, size = 0;
	bool tls = true;
	double t0 = now_ms();
	int rc = rbi_images_load(t, &l);
	double t1 = now_ms();

	*out_img = NULL;
	if (!ok(rc == RBI_OK && l && l->n > 0, "%s: images load (%zu images, %.2f ms)",
		tag, l ? l->n : 0, t1 - t0)) {
		diag("%s", rbi_errmsg());
		return;
	}
	struct rbi_image_list *again = NULL;
	ok(rbi_images_load(t, &again) == RBI_OK && again == l, "%s: images are cached", tag);
	img = rbi_images_find_symbol(l, "ruby_version");
	double t2 = now_ms();
	if (!ok(img != NULL, "%s: ruby_version found (%.2f ms)", tag, t2 - t1))
		return;
	*out_img = img;
	f->bias = img->bias;
	const char *base = strrchr(img->name, '/');
	base = base ? base + 1 : img->name;
	ok(strstr(base, "libruby") || (rb->dwarf && strstr(base, "ruby")),
	   "%s: ruby_version is in %s", tag, base);
	GElf_Addr dwbias = 0;
	bool have_elf = dwfl_module_getelf(img->mod, &dwbias) != NULL;
	ok(have_elf && dwbias == img->bias,
	   "%s: bias 0x%" PRIx64 " agrees with libdwfl's 0x%" PRIx64, tag, img->bias,
	   (uint64_t)dwbias);

	rbi_build_id_hex(&img->build_id, hex);
	if (img->file && readelf_build_id(img->file, want, sizeof(want)))
		ok(!strcmp(hex, want), "%s: build-id %s equals readelf's %s", tag, hex, want);
	else
		ok(img->origin == RBI_IMAGE_MEMORY && hex[0],
		   "%s: memory image with build-id %s", tag, hex);

	rc = rbi_image_symbol(img, "ruby_version", &addr, &size, &tls);
	ok(rc == RBI_OK && !tls && addr >= img->start && addr < img->end,
	   "%s: ruby_version at 0x%" PRIx64 " inside the image", tag, addr);
	ver[0] = '\0';
	rc = rbi_read_cstr(t, addr, ver, sizeof(ver));
	ok(rc == RBI_OK && !strcmp(ver, rb->version),
	   "%s: ruby_version reads \"%s\" (process says %s)", tag, ver, rb->version);
	f->ruby_version = addr;
	ok(rbi_image_symbol(img, "no_such_symbol_here", &addr, NULL, NULL) == RBI_ITER_END,
	   "%s: absent symbol gives RBI_ITER_END", tag);
	/* ruby_current_ec: a TLS symbol in 3.0-3.2 .dynsym. */
	if (rb->major == 3 && rb->minor < 3 && !rb->dwarf) {
		tls = false;
		rc = rbi_image_symbol(img, "ruby_current_ec", &addr, NULL, &tls);
		ok(rc == RBI_OK && tls && addr < 4096,
		   "%s: ruby_current_ec is TLS at offset %" PRIu64, tag, addr);
	}
	check_anchors(t, img, rb, tag, f);
}

/* ---- A backend that hides or swaps files -------------------------------- */

struct wrap {
	const struct rbi_mem_ops *ops;
	void *be;
	const char *swap_to;    /* NULL: every file is missing */
};

static int wrap_read(void *be, uint64_t a, void *b, size_t l, size_t *n)
{
	struct wrap *w = be;
	return w->ops->read(w->be, a, b, l, n);
}

static int wrap_region(void *be, size_t i, struct rbi_region *r)
{
	struct wrap *w = be;
	return w->ops->region(w->be, i, r);
}

static int wrap_open_file(void *be, const char *path)
{
	struct wrap *w = be;

	if (w->swap_to && strstr(path, "libruby"))
		return w->ops->open_file(w->be, w->swap_to);
	if (w->swap_to)
		return w->ops->open_file(w->be, path);
	return rbi_fail(RBI_SYSTEM, "hidden by the test: %s", path);
}

static void wrap_close(void *be)
{
	struct wrap *w = be;
	w->ops->close(w->be);
	free(w);
}

static const struct rbi_mem_ops wrap_ops = {
	.size = sizeof(struct rbi_mem_ops),
	.read = wrap_read,
	.region = wrap_region,
	.open_file = wrap_open_file,
	.close = wrap_close,
};

/* A live target (CORE NULL) or a core, with its files hidden or swapped. */
static struct rbi_target *open_wrapped(pid_t pid, const char *core,
				       const char *swap_to)
{
	struct wrap *w = calloc(1, sizeof(*w));
	struct rbi_target *t = NULL;
	struct rbi_diag d = { 0 };
	pid_t cpid;
	int rc;

	if (!w)
		return NULL;
	rc = core ? rbi_mem_core_open(core, NULL, &d, &cpid, &w->ops, &w->be)
		  : rbi_mem_live_open(pid, &w->ops, &w->be);
	rbi_diag_free(&d);
	if (rc) {
		diag("%s", rbi_errmsg());
		free(w);
		return NULL;
	}
	w->swap_to = swap_to;
	if (rbi_target_open_ops(&wrap_ops, w, NULL, &t)) {
		wrap_close(w);
		return NULL;
	}
	return t;
}

static bool has_warning(struct rbi_target *t, const char *needle)
{
	const char *w;

	for (size_t i = 0; (w = rbi_target_warning(t, i)); i++)
		if (strstr(w, needle))
			return true;
	return false;
}

/* ---- Cores -------------------------------------------------------------- */

/* gcore RB with its file-backed mappings included (coredump_filter bit 2),
   then read it twice: as a core (files from disk where the core has no
   bytes) and with every file hidden, so that libruby's symbols and code
   can only come from the core's own copy of the image. */
static void test_core(const struct ruby *rb, const struct found *live)
{
	char dir[] = "/tmp/rbi-test-images-XXXXXX", core[64], cmd[4352], tag[64];
	struct rbi_target *t = NULL;
	const struct rbi_image *img;
	struct found f = { 0 };

	if (system("command -v gcore >/dev/null 2>&1") != 0 || !src_tool("make-core.sh")) {
		skip("no gdb gcore or tools/make-core.sh", rb->name);
		return;
	}
	if (!mkdtemp(dir))
		return;
	snprintf(core, sizeof(core), "%s/core", dir);
	snprintf(cmd, sizeof(cmd), "%s %d %s --with-file-mappings >/dev/null 2>&1",
		 src_tool("make-core.sh"), (int)rb->pid, core);
	double t0 = now_ms();
	int rc = system(cmd);
	double t1 = now_ms();
	if (!ok(rc == 0 && access(core, R_OK) == 0, "%s: gcore (%.0f ms)", rb->name, t1 - t0))
		goto out;

	snprintf(tag, sizeof(tag), "%s core", rb->name);
	if (ok(rbi_target_open_core(core, NULL, &t) == RBI_OK, "%s: open", tag)) {
		check_target(t, rb, tag, &f, &img);
		ok(img && img->origin == RBI_IMAGE_FILE && f.ruby_version == live->ruby_version &&
		   f.vm == live->vm, "%s: same symbols and VM as live", tag);
		rbi_target_free(t);
	}
	snprintf(tag, sizeof(tag), "%s core-only", rb->name);
	memset(&f, 0, sizeof(f));
	if ((t = open_wrapped(0, core, NULL))) {
		check_target(t, rb, tag, &f, &img);
		ok(img && img->origin == RBI_IMAGE_MEMORY && !img->file,
		   "%s: libruby is rebuilt from the core", tag);
		ok(f.ruby_version == live->ruby_version && f.rb_gc_count == live->rb_gc_count &&
		   f.vm_ptr_slot == live->vm_ptr_slot && f.immortal_ref == live->immortal_ref &&
		   f.vm == live->vm, "%s: same symbols, anchors and VM as live", tag);
		rbi_target_free(t);
	}
out:
	unlink(core);
	rmdir(dir);
}

/* ---- Containers --------------------------------------------------------- */

/* Whether this test runs in a chroot (its / is not init's): there the kernel names a
   contained process's files by the host's paths, which the chroot does not have. */
static bool in_chroot(void)
{
	struct stat ours, init;

	if (stat("/", &ours) != 0 || stat("/proc/1/root/", &init) != 0)
		return false;
	return ours.st_dev != init.st_dev || ours.st_ino != init.st_ino;
}

/* The same Ruby in its own mount namespace: its maps name files such as
   /usr/lib/x86_64-linux-gnu/libc.so.6 that here are other files (or none);
   they must be opened through /proc/PID/root and still match by build-id. */
static void test_container(const char *dir, const char *name, const struct found *live)
{
	struct ruby rb = { .name = name, .ns = true };
	struct rbi_target *t = NULL;
	const struct rbi_image *img = NULL;
	struct found f = { 0 };
	char tag[64], prefix[64];

	if (in_chroot()) {
		char what[96];

		snprintf(what, sizeof(what), "%s container", name);
		skip("the test runs in a chroot, where the kernel names a contained process's "
		     "files by the host's paths", what);
		return;
	}
	if (!ruby_start(dir, &rb)) {
		char what[96];

		snprintf(what, sizeof(what), "%s container", name);
		skip("cannot start it in a namespace (tools/run-in-ns.sh needs root and "
		     "unshare)", what);
		return;
	}
	snprintf(tag, sizeof(tag), "%s container", name);
	snprintf(prefix, sizeof(prefix), "/proc/%d/root/", (int)rb.pid);
	if (ok(rbi_target_open_pid(rb.pid, NULL, &t) == RBI_OK, "%s: open pid %d", tag,
	       (int)rb.pid)) {
		check_target(t, &rb, tag, &f, &img);
		ok(img && img->origin == RBI_IMAGE_FILE && !img->mismatch && img->file &&
		   !strncmp(img->file, prefix, strlen(prefix)) && img->name[0] == '/' &&
		   strncmp(img->name, dir, strlen(dir)) != 0,
		   "%s: %s opened as %s", tag, img ? img->name : "?",
		   img && img->file ? img->file : "?");
		bool all_file = true;
		struct rbi_image_list *l = rbi_target_images(t);
		for (size_t i = 0; l && i < l->n; i++)
			all_file &= l->v[i].origin == RBI_IMAGE_FILE && !l->v[i].mismatch;
		ok(all_file && rbi_target_warning(t, 0) == NULL,
		   "%s: every image from its own file, no warnings", tag);
#define REL(x, b) ((x) ? (x) - (b) : 0)
		ok(REL(f.ruby_version, f.bias) == REL(live->ruby_version, live->bias) &&
		   REL(f.vm_ptr_slot, f.bias) == REL(live->vm_ptr_slot, live->bias) &&
		   REL(f.immortal_ref, f.bias) == REL(live->immortal_ref, live->bias),
		   "%s: same symbols and anchors (relative to the image) as in a chroot", tag);
		rbi_target_free(t);
	}
	ruby_stop(&rb);
}

/* ---- One Ruby ----------------------------------------------------------- */

static void test_ruby(const char *dir, const char *name)
{
	struct ruby rb = { .name = name, .dwarf = !strncmp(name, "dwarf-", 6) };
	struct rbi_target *t = NULL;
	const struct rbi_image *img = NULL;
	struct found live = { 0 }, mem = { 0 };
	char tag[64];

	if (!ruby_start(dir, &rb)) {
		skip("not installed (tools/test-rubies.sh), or cannot start", name);
		return;
	}
	diag("%s: pid %d, Ruby %s", name, (int)rb.pid, rb.version);
	snprintf(tag, sizeof(tag), "%s live", name);
	if (!ok(rbi_target_open_pid(rb.pid, NULL, &t) == RBI_OK, "%s: open pid", tag)) {
		diag("%s", rbi_errmsg());
		ruby_stop(&rb);
		return;
	}
	check_target(t, &rb, tag, &live, &img);
	if (img && rb.dwarf) {
		uint64_t addr = 0, size = 0;
		Dwarf_Addr bias = 1;
		bool tls = true;

		int rc = rbi_image_symbol(img, "ruby_current_vm_ptr", &addr, &size, &tls);
		ok(rc == RBI_OK && !tls && size == 8,
		   "%s: ruby_current_vm_ptr (LOCAL in 3.3+) at 0x%" PRIx64, tag, addr);
		if (live.vm_ptr_slot)
			ok(addr == live.vm_ptr_slot,
			   "%s: code anchors point at ruby_current_vm_ptr", tag);
		uint64_t want = 0;
		char type[16] = "", bind[16] = "";
		if (img->file && rb.major >= 3 &&
		    readelf_sym(img->file, "ruby_current_ec", &want, type, bind)) {
			tls = false;
			rc = rbi_image_symbol(img, "ruby_current_ec", &addr, &size, &tls);
			ok(rc == RBI_OK && tls && addr == want && !strcmp(type, "TLS"),
			   "%s: ruby_current_ec is TLS (%s) at block offset 0x%" PRIx64
			   " like readelf's 0x%" PRIx64, tag, bind, addr, want);
		}
		if (img->file && (rb.major > 3 || (rb.major == 3 && rb.minor >= 3)))
			ok(readelf_sym(img->file, "ruby_current_vm_ptr", &want, type, bind) &&
			   !strcmp(bind, "LOCAL"), "%s: ruby_current_vm_ptr is %s in .symtab",
			   tag, bind);
		if (rbi_image_symbol(img, "ruby_single_main_ractor", &addr, NULL, NULL) == RBI_OK &&
		    live.main_ractor_slot)
			ok(addr == live.main_ractor_slot,
			   "%s: rb_thread_main points at ruby_single_main_ractor", tag);
		if (rbi_image_symbol(img, "ruby_global_symbols", &addr, NULL, NULL) == RBI_OK &&
		    live.immortal_ref)
			ok(addr == live.immortal_ref,
			   "%s: rb_sym_immortal_count points at ruby_global_symbols", tag);
		double t0 = now_ms();
		Dwarf *dw = rbi_image_dwarf(img, &bias);
		ok(dw != NULL && bias == img->bias, "%s: DWARF found (%.1f ms)", tag,
		   now_ms() - t0);
	}
	rbi_target_free(t);

	/* Files hidden: every image comes from target memory. */
	snprintf(tag, sizeof(tag), "%s memory", name);
	if ((t = open_wrapped(rb.pid, NULL, NULL))) {
		check_target(t, &rb, tag, &mem, &img);
		ok(img && img->origin == RBI_IMAGE_MEMORY && !img->mismatch && !img->file,
		   "%s: libruby is a memory image", tag);
		ok(has_warning(t, "not found"), "%s: missing files are warned about", tag);
		ok(mem.ruby_version == live.ruby_version && mem.rb_gc_count == live.rb_gc_count &&
		   mem.vm_ptr_slot == live.vm_ptr_slot && mem.immortal_ref == live.immortal_ref,
		   "%s: same symbols and anchors as from the file", tag);
		rbi_target_free(t);
	}

	/* libruby replaced on disk by another ELF file: build-ids differ. */
	snprintf(tag, sizeof(tag), "%s swapped", name);
	if ((t = open_wrapped(rb.pid, NULL, "/proc/self/exe"))) {
		memset(&mem, 0, sizeof(mem));
		check_target(t, &rb, tag, &mem, &img);
		if (img && strstr(img->name, "libruby")) {
			ok(img->origin == RBI_IMAGE_MEMORY && img->mismatch,
			   "%s: mismatch detected, memory image used", tag);
			ok(has_warning(t, "build-id"), "%s: mismatch is warned about", tag);
			ok(mem.ruby_version == live.ruby_version &&
			   mem.vm_ptr_slot == live.vm_ptr_slot,
			   "%s: same symbols and anchors as from the file", tag);
		}
		rbi_target_free(t);
	}
	test_core(&rb, &live);
	ruby_stop(&rb);
	if (!rb.dwarf)
		test_container(dir, name, &live);
}

/* ---- Our own process: LOCAL and TLS symbols, DWARF ---------------------- */

__attribute__((used)) static const char self_marker[] = "rbi-test-images-marker";
__attribute__((used)) static __thread uint64_t self_tls[4];

static bool self_has_debug_info(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "readelf -SW /proc/%d/exe 2>/dev/null | "
		 "grep -q '\\.debug_info'", (int)getpid());
	return system(cmd) == 0;
}

static void test_self(void)
{
	struct rbi_target *t = NULL;
	struct rbi_image_list *l = NULL;
	const struct rbi_image *img;
	uint64_t addr = 0, size = 0;
	bool tls = true;
	int rc;

	if (!ok(rbi_target_open_pid(getpid(), NULL, &t) == RBI_OK, "self: open own pid")) {
		diag("%s", rbi_errmsg());
		return;
	}
	ok(rbi_images_load(t, &l) == RBI_OK, "self: images load");
	img = rbi_images_find_symbol(l, "self_marker");
	ok(img && img->origin == RBI_IMAGE_FILE, "self: LOCAL self_marker found in %s",
	   img ? img->name : "(none)");
	rc = rbi_image_symbol(img, "self_marker", &addr, &size, &tls);
	ok(rc == RBI_OK && !tls && addr == (uint64_t)(uintptr_t)self_marker &&
	   size == sizeof(self_marker), "self: self_marker at its real address");
	rc = rbi_image_symbol(img, "self_tls", &addr, &size, &tls);
	ok(rc == RBI_OK && tls && size == sizeof(self_tls) && addr < 65536,
	   "self: self_tls is TLS at block offset %" PRIu64, addr);
	self_tls[0] = 1;
	if (self_has_debug_info()) {
		Dwarf_Addr bias = 1;
		Dwarf *dw = rbi_image_dwarf(img, &bias);
		ok(dw && bias == img->bias, "self: DWARF of the test itself");
	} else {
		skip("built without -g", "self: DWARF of the test itself");
	}
	rbi_target_free(t);
}

/* ---- Code decoding on bytes we control ---------------------------------- */

struct buf_be {
	uint64_t base;
	const uint8_t *bytes;
	size_t len;
	const char *path;       /* of the one region, or NULL */
	uint64_t extra_start;   /* if nonzero, a second region of PATH */
	uint64_t extra_len, extra_off;
};

static int buf_read(void *be, uint64_t addr, void *out, size_t len, size_t *n)
{
	struct buf_be *b = be;

	*n = 0;
	if (addr < b->base || addr >= b->base + b->len)
		return RBI_UNMAPPED;
	size_t off = addr - b->base, avail = b->len - off;
	*n = len < avail ? len : avail;
	memcpy(out, b->bytes + off, *n);
	return *n == len ? RBI_OK : RBI_PARTIAL;
}

static int buf_region(void *be, size_t i, struct rbi_region *r)
{
	struct buf_be *b = be;

	if (i == 1 && b->extra_start) {
		*r = (struct rbi_region){ .start = b->extra_start,
					  .end = b->extra_start + b->extra_len,
					  .file_offset = b->extra_off,
					  .prot = RBI_PROT_READ, .path = b->path };
		return RBI_OK;
	}
	if (i > 0)
		return RBI_ITER_END;
	*r = (struct rbi_region){ .start = b->base, .end = b->base + b->len,
				  .prot = RBI_PROT_READ | RBI_PROT_EXEC, .path = b->path };
	return RBI_OK;
}

static void buf_close(void *be) { (void)be; }

static const struct rbi_mem_ops buf_ops = {
	.size = sizeof(struct rbi_mem_ops), .flags = RBI_MEM_STATIC,
	.read = buf_read, .region = buf_region, .close = buf_close,
};

static void test_code_edges(void)
{
	/* endbr64; mov 0x10(%rip),%eax; lea -0x20(%rip),%rdx;
	   mov %rax,0x30(%rip); call +0; ret; then a lea never reached. */
	static const uint8_t code[] = {
		0xf3, 0x0f, 0x1e, 0xfa,
		0x8b, 0x05, 0x10, 0x00, 0x00, 0x00,
		0x48, 0x8d, 0x15, 0xe0, 0xff, 0xff, 0xff,
		0x48, 0x89, 0x05, 0x30, 0x00, 0x00, 0x00,
		0xe8, 0x00, 0x00, 0x00, 0x00,
		0xc3,
		0x48, 0x8d, 0x05, 0x00, 0x00, 0x00, 0x00,
	};
	struct buf_be b = { .base = 0x1000, .bytes = code, .len = sizeof(code) };
	struct rbi_target *t = NULL;
	struct rbi_rip_ref refs[8];
	struct rbi_call_ref calls[4];
	size_t n = 99;

	if (!ok(rbi_target_open_ops(&buf_ops, &b, NULL, &t) == RBI_OK, "code: buffer target"))
		return;
	int rc = rbi_code_rip_refs(t, 0x1000, 64, refs, 8, &n);
	ok(rc == RBI_OK && n == 3 &&
	   refs[0].insn == 0x1004 && refs[0].target == 0x100a + 0x10 && refs[0].load &&
	   refs[1].insn == 0x100a && refs[1].target == 0x1011 - 0x20 && !refs[1].load &&
	   refs[2].target == 0x1018 + 0x30 && refs[2].load,
	   "code: mov/lea/store decoded, stops at ret (%zu refs)", n);
	ok(rbi_code_calls(t, 0x1000, 64, calls, 4, &n) == RBI_OK && n == 1 &&
	   calls[0].insn == 0x1018 && calls[0].target == 0x101d &&
	   calls[0].resolved == 0x101d && !calls[0].tail,
	   "code: direct call found");
	ok(rbi_code_rip_refs(t, 0x1000, 2, refs, 8, &n) == RBI_OK && n == 1,
	   "code: max_insns bounds the walk");
	ok(rbi_code_rip_refs(t, 0x1000, 64, refs, 1, &n) == RBI_OK && n == 1,
	   "code: max bounds the output");
	/* The last instruction cut after 3 of its 7 bytes: another target, as
	   a static backend's bytes never change under one (they are cached). */
	struct buf_be cut = b;
	struct rbi_target *tc = NULL;

	cut.len = sizeof(code) - 4;
	ok(rbi_target_open_ops(&buf_ops, &cut, NULL, &tc) == RBI_OK &&
	   rbi_code_rip_refs(tc, 0x101e, 64, refs, 8, &n) == RBI_OK && n == 0,
	   "code: bytes ending mid-instruction end the walk quietly");
	rbi_target_free(tc);
	ok(rbi_code_rip_refs(t, 0x9000, 64, refs, 8, &n) == RBI_UNMAPPED && n == 0,
	   "code: unmapped function gives RBI_UNMAPPED");
	struct rbi_image_list *l = NULL;
	ok(rbi_images_load(t, &l) == RBI_OK && l->n == 0 &&
	   !rbi_images_find_symbol(l, "ruby_version"),
	   "images: a target with no file mappings has no images");
	rbi_target_free(t);
}

static int count_fds(void)
{
	char path[64];
	int n = 0;

	for (int fd = 0; fd < 4096; fd++) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n += access(path, F_OK) == 0;
	}
	return n;
}

/* Garbage images: a valid-looking ELF header and program headers (a
   PT_LOAD, a PT_DYNAMIC, a PT_NOTE) over random bytes and random dynamic
   entries, mapped from a file that does not exist so the memory path runs.
   Nothing may crash, hang or leak (run under ASan to see the last). */
static void test_hostile_images(void)
{
	static const int64_t dtags[] = { DT_SYMTAB, DT_STRTAB, DT_STRSZ, DT_SYMENT,
					 DT_GNU_HASH, DT_HASH, DT_NULL };
	static uint8_t mem[16384];
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	int found = 0, runs = 300;
	double t0 = now_ms();

	for (int it = 0; it < runs; it++) {
		struct buf_be b = { .base = 0x40000, .bytes = mem, .len = sizeof(mem),
				    .path = "/nonexistent/libruby-hostile.so" };
		struct rbi_target *t = NULL;
		struct rbi_image_list *l = NULL;
		Elf64_Ehdr *eh = (Elf64_Ehdr *)mem;
		Elf64_Phdr *ph = (Elf64_Phdr *)(mem + 64);

		for (size_t i = 0; i < sizeof(mem); i += 8) {
			seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17;
			memcpy(mem + i, &seed, 8);
		}
		memset(eh, 0, sizeof(*eh));
		memcpy(eh->e_ident, ELFMAG, SELFMAG);
		eh->e_ident[EI_CLASS] = ELFCLASS64;
		eh->e_ident[EI_DATA] = ELFDATA2LSB;
		eh->e_ident[EI_VERSION] = EV_CURRENT;
		eh->e_type = ET_DYN;
		eh->e_machine = EM_X86_64;
		eh->e_version = EV_CURRENT;
		eh->e_phoff = 64;
		eh->e_phentsize = sizeof(Elf64_Phdr);
		eh->e_phnum = 3;
		eh->e_ehsize = sizeof(*eh);
		if (it % 3)
			eh->e_shoff = seed % (2 * sizeof(mem)), eh->e_shnum = seed >> 48,
			eh->e_shentsize = sizeof(Elf64_Shdr);
		ph[0] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_X,
				      .p_filesz = sizeof(mem), .p_memsz = sizeof(mem),
				      .p_align = 4096 };
		ph[1] = (Elf64_Phdr){ .p_type = PT_DYNAMIC, .p_offset = 0x200,
				      .p_vaddr = 0x200, .p_filesz = 0x100, .p_memsz = 0x100,
				      .p_align = 8 };
		ph[2] = (Elf64_Phdr){ .p_type = PT_NOTE, .p_offset = 0x300,
				      .p_vaddr = 0x300, .p_filesz = (seed >> 20) % 0x400,
				      .p_memsz = 0x40, .p_align = 4 };
		/* Dynamic entries with real tags and random (often in-range)
		   values. */
		for (int d = 0; d < 16; d++) {
			int64_t tag = dtags[(seed >> (d * 3)) % RBI_ARRAY_SIZE(dtags)];
			uint64_t v;

			memcpy(&v, mem + 0x1000 + d * 8, 8);
			if (d % 2)
				v %= sizeof(mem);
			memcpy(mem + 0x200 + d * 16, &tag, 8);
			memcpy(mem + 0x200 + d * 16 + 8, &v, 8);
		}
		if (it % 4 == 0) {
			b.extra_start = b.base + sizeof(mem) + (seed % 5) * 4096;
			b.extra_len = 1ull << (12 + seed % 30);
			b.extra_off = seed >> 8;
		}
		if (rbi_target_open_ops(&buf_ops, &b, NULL, &t))
			continue;
		if (rbi_images_load(t, &l) == RBI_OK) {
			const struct rbi_image *img = rbi_images_find_symbol(l, "ruby_version");
			uint64_t a, sz;
			bool tls;
			struct rbi_rip_ref refs[8];
			size_t n;

			found += img != NULL;
			for (size_t i = 0; i < l->n; i++) {
				rbi_image_symbol(&l->v[i], "rb_gc_count", &a, &sz, &tls);
				rbi_image_dwarf(&l->v[i], NULL);
			}
			rbi_code_rip_refs(t, b.base + (seed % sizeof(mem)), 64, refs, 8, &n);
		}
		rbi_target_free(t);
	}
	ok(true, "hostile: %d garbage images handled (%d claimed ruby_version) in %.0f ms",
	   runs, found, now_ms() - t0);
}

/* The path of a file mapped into this process whose name contains NEEDLE. */
static bool self_mapped_file(const char *needle, char *out, size_t cap)
{
	char line[4096 + 128];
	bool found = false;
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');

		line[strcspn(line, "\n")] = '\0';
		if (p && strstr(p, needle)) {
			snprintf(out, cap, "%s", p);
			found = true;
		}
	}
	fclose(f);
	return found;
}

/* A real library (libdw) served as a memory image from a file nobody can
   open: first intact (its .dynsym must be found through PT_DYNAMIC), then
   with random bytes of its headers, dynamic section and symbol tables
   changed.  Nothing may crash, hang or leak. */
static void test_mutated_images(void)
{
	char path[4096];
	uint8_t *orig = NULL, *mem = NULL;
	size_t len = 0;
	uint64_t seed = 0x2545f4914f6cdd1dull;
	int runs = 200, found = 0;
	FILE *f;

	if (!self_mapped_file("libdw", path, sizeof(path)) || !(f = fopen(path, "rb"))) {
		skip("libdw not found in our own maps", "mutated images");
		return;
	}
	orig = malloc(4u << 20);
	mem = malloc(4u << 20);
	if (orig && mem)
		len = fread(orig, 1, 4u << 20, f);
	fclose(f);
	len &= ~(size_t)4095;
	if (len < 65536) {
		free(orig);
		free(mem);
		return;
	}
	double t0 = now_ms();
	for (int it = 0; it <= runs; it++) {
		struct buf_be b = { .base = 0x7f0000000000ull, .bytes = mem, .len = len,
				    .path = "/nonexistent/libdw-mutated.so.1" };
		struct rbi_target *t = NULL;
		struct rbi_image_list *l = NULL;
		const Elf64_Ehdr *eh = (const Elf64_Ehdr *)orig;
		size_t hot = 65536;     /* headers, .gnu.hash, .dynsym, .dynstr */

		memcpy(mem, orig, len);
		/* The dynamic section: PT_DYNAMIC's file range. */
		size_t dyn_off = 0, dyn_len = 0;
		for (size_t i = 0; i < eh->e_phnum && eh->e_phoff + (i + 1) * sizeof(Elf64_Phdr) <= len; i++) {
			const Elf64_Phdr *ph = (const Elf64_Phdr *)(orig + eh->e_phoff) + i;

			if (ph->p_type == PT_DYNAMIC && ph->p_offset < len) {
				dyn_off = ph->p_offset;
				dyn_len = ph->p_filesz < len - dyn_off ? ph->p_filesz : len - dyn_off;
			}
		}
		for (int k = 0; it > 0 && k < 1 + it % 48; k++) {
			seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17;
			size_t at = (k % 3 == 0 && dyn_len) ? dyn_off + seed % dyn_len
							     : (seed >> 16) % hot;
			mem[at] = (uint8_t)(seed >> 40);
		}
		if (rbi_target_open_ops(&buf_ops, &b, NULL, &t))
			continue;
		if (rbi_images_load(t, &l) == RBI_OK && l->n == 1) {
			uint64_t a = 0, sz = 0;
			bool tls = false;
			int rc = rbi_image_symbol(&l->v[0], "dwfl_begin", &a, &sz, &tls);

			found += rc == RBI_OK;
			if (it == 0)
				ok(rc == RBI_OK && !tls && a > b.base && a < b.base + len &&
				   (uint64_t)l->v[0].origin == RBI_IMAGE_MEMORY,
				   "mutated: intact libdw from memory: dwfl_begin at +0x%" PRIx64,
				   a - b.base);
			rbi_images_find_symbol(l, "ruby_version");
			rbi_image_dwarf(&l->v[0], NULL);
		}
		rbi_target_free(t);
	}
	ok(true, "mutated: %d mutated libdw images handled (%d still had dwfl_begin) in %.0f ms",
	   runs, found - 1, now_ms() - t0);
	free(orig);
	free(mem);
}

int main(void)
{
	static const char *names[] = {
		"deb-2.7", "deb-3.1", "deb-3.3", "deb-3.4",
		"dwarf-2.7", "dwarf-3.1", "dwarf-3.3", "dwarf-3.4",
	};
	char dir[4096];
	const char *env = getenv("RBI_RUBIES"), *home = getenv("HOME");
	int started = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (env)
		snprintf(dir, sizeof(dir), "%s", env);
	else
		snprintf(dir, sizeof(dir), "%s/.cache/rbinspect/rubies", home ? home : "");
	int fds = count_fds();
	test_code_edges();
	test_hostile_images();
	test_mutated_images();
	test_self();
	for (size_t i = 0; i < RBI_ARRAY_SIZE(names); i++) {
		int before = tap_n;

		if (!strncmp(names[i], "deb-", 4) && geteuid() != 0) {
			skip("chroot needs root", names[i]);
			continue;
		}
		test_ruby(dir, names[i]);
		started += tap_n > before;
	}
	if (!started)
		diag("no Ruby under %s: only the code tests ran (each is a SKIP above)", dir);
	ok(count_fds() == fds, "no file descriptor leaked (%d open)", fds);
	return tap_plan();
}
