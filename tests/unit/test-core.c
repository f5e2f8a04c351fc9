/* test-core.c: the core backend (lib/mem/core.c) against real cores.
 *
 * Usage: test-core [FIXTURE_A FIXTURE_B]
 *   FIXTURE_A/B: core-fixture.c built with -DFIXTURE_VARIANT=1 and =2;
 *   by default the ones the build made (FIXTURE_A_PATH, FIXTURE_B_PATH).
 * Needs gdb's gcore for gcore cases and core_pattern writing plain files
 * for kernel-core cases; each group is skipped (TAP "# SKIP") without them.
 * Output is TAP; exits 1 if any test failed, 77 if nothing could run. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "tap.h"

static char tmpdir[PATH_MAX];
static const char *fixture_a, *fixture_b;

/* ---- processes and files ------------------------------------------------- */

struct fixture {
	pid_t pid;
	int in;                 /* its stdin */
	uint64_t magic, data, runtime, runtime_value, fs0, fs1;
	uint64_t map;           /* the data file's page (FIXTURE_MAP) */
	int tid0, tid1;
};

static const char magic_a[] = "RBINSPECT-CORE-FIXTURE-MAGIC-1";
static const uint64_t data_value = 0x1122334455667788ull;

static char *path_in_tmp(const char *name)
{
	char *p;

	if (asprintf(&p, "%s/%s", tmpdir, name) < 0)
		abort();
	return p;
}

static bool copy_file(const char *src, const char *dst)
{
	char buf[65536];
	int in = open(src, O_RDONLY), out;
	ssize_t n;
	bool good = true;

	if (in < 0)
		return false;
	unlink(dst);
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	if (out < 0) {
		close(in);
		return false;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			good = false;
	if (n < 0)
		good = false;
	close(in);
	if (close(out) != 0)
		good = false;
	return good;
}

static bool write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	bool good;

	if (fd < 0)
		return false;
	good = write(fd, data, len) == (ssize_t)len;
	return close(fd) == 0 && good;
}

static void *read_whole(const char *path, size_t *len)
{
	struct stat st;
	unsigned char *buf;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st) != 0) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (buf && pread(fd, buf, (size_t)st.st_size, 0) != st.st_size) {
		free(buf);
		buf = NULL;
	}
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

/* Run ARGV with output to LOG; returns its exit status or -1. */
static int run(char *const argv[], const char *log)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		close(0);
		execvp(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Start EXE MODE in CWD and read the line it prints about itself. */
static bool fixture_start(const char *exe, const char *mode, const char *cwd,
			  struct fixture *fx)
{
	int in[2], out[2];
	char line[1024];
	FILE *f;
	void *magic, *data, *runtime;

	memset(fx, 0, sizeof(*fx));
	if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
		return false;
	fx->pid = fork();
	if (fx->pid < 0)
		return false;
	if (fx->pid == 0) {
		struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };

		dup2(in[0], 0);
		dup2(out[1], 1);
		if (cwd && chdir(cwd) != 0)
			_exit(126);
		setrlimit(RLIMIT_CORE, &rl);
		execl(exe, exe, mode, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	fx->in = in[1];
	f = fdopen(out[0], "r");
	if (!f || !fgets(line, sizeof(line), f)) {
		if (f)
			fclose(f);
		return false;
	}
	fclose(f);
	if (sscanf(line, "pid=%*d magic=%p data=%p runtime=%p runtime_value=%"
		   SCNu64 " tid0=%d fs0=%" SCNu64 " tid1=%d fs1=%" SCNu64 " map=%" SCNu64,
		   &magic, &data, &runtime, &fx->runtime_value, &fx->tid0,
		   &fx->fs0, &fx->tid1, &fx->fs1, &fx->map) != 9)
		return false;
	fx->magic = (uint64_t)(uintptr_t)magic;
	fx->data = (uint64_t)(uintptr_t)data;
	fx->runtime = (uint64_t)(uintptr_t)runtime;
	return true;
}

/* Close its stdin (or send a byte to make it abort) and reap it. */
static int fixture_stop(struct fixture *fx, bool poke)
{
	int status = 0;

	if (poke && write(fx->in, "x", 1) != 1)
		kill(fx->pid, SIGKILL);
	close(fx->in);
	waitpid(fx->pid, &status, 0);
	return status;
}

/* ---- making cores -------------------------------------------------------- */

/* What the running fixture's core is to lack: its executable on disk
   (DELETE_EXE), and the mappings coredump_filter FILTER leaves out (0: the
   default filter). */
static void before_dump(const struct fixture *fx, const char *exe, unsigned filter,
			bool delete_exe)
{
	if (delete_exe)
		unlink(exe);
	if (filter) {
		char f[64], v[16];

		snprintf(f, sizeof(f), "/proc/%d/coredump_filter", (int)fx->pid);
		snprintf(v, sizeof(v), "0x%x", filter);
		write_file(f, v, strlen(v));
	}
}

static char *make_gcore(const char *exe, struct fixture *fx, unsigned filter,
			const char *name, bool delete_exe)
{
	char pidbuf[32], *prefix = path_in_tmp(name);
	char *core = NULL, *log = path_in_tmp("gcore.log");
	char *argv[] = { "gcore", "-o", prefix, pidbuf, NULL };
	struct stat st;
	int rc;

	if (!fixture_start(exe, "wait", NULL, fx)) {
		diag("fixture did not start");
		goto out;
	}
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)fx->pid);
	before_dump(fx, exe, filter, delete_exe);
	rc = run(argv, log);
	if (asprintf(&core, "%s.%d", prefix, (int)fx->pid) < 0)
		abort();
	if (rc != 0 || stat(core, &st) != 0) {
		diag("gcore failed (exit %d); see %s", rc, log);
		free(core);
		core = NULL;
	}
	fixture_stop(fx, false);
out:
	free(prefix);
	free(log);
	return core;
}

/* Where the kernel will write a core of PID started in DIR, or NULL when
   core_pattern sends cores elsewhere (a pipe, systemd-coredump). */
static char *kernel_core_path(const char *dir, pid_t pid, const char **why)
{
	char pat[256] = "", out[PATH_MAX] = "", *nl;
	size_t o = 0;
	bool has_pid = false;
	int uses_pid = 0;
	FILE *f = fopen("/proc/sys/kernel/core_pattern", "r");

	if (!f || !fgets(pat, sizeof(pat), f)) {
		if (f)
			fclose(f);
		*why = "cannot read core_pattern";
		return NULL;
	}
	fclose(f);
	if ((nl = strchr(pat, '\n')))
		*nl = '\0';
	f = fopen("/proc/sys/kernel/core_uses_pid", "r");
	if (f) {
		if (fscanf(f, "%d", &uses_pid) != 1)
			uses_pid = 0;
		fclose(f);
	}
	if (pat[0] == '|' || pat[0] == '\0') {
		*why = "core_pattern pipes cores to a helper";
		return NULL;
	}
	if (pat[0] != '/')
		o = (size_t)snprintf(out, sizeof(out), "%s/", dir);
	for (const char *s = pat; *s && o + 32 < sizeof(out); s++) {
		if (*s != '%') {
			out[o++] = *s;
			continue;
		}
		s++;
		if (*s == 'p') {
			o += (size_t)snprintf(out + o, sizeof(out) - o, "%d", (int)pid);
			has_pid = true;
		} else if (*s == '%') {
			out[o++] = '%';
		} else {
			*why = "core_pattern uses specifiers this test does not expand";
			return NULL;
		}
	}
	out[o] = '\0';
	if (uses_pid && !has_pid)
		snprintf(out + o, sizeof(out) - o, ".%d", (int)pid);
	return strdup(out);
}

static char *make_kernel_core(const char *exe, struct fixture *fx,
			      unsigned filter, const char *name,
			      bool delete_exe, const char **why)
{
	char *dir = path_in_tmp(name), *core = NULL, *dst = NULL;
	struct rlimit rl;
	struct stat st;
	int status;

	*why = NULL;
	if (getrlimit(RLIMIT_CORE, &rl) == 0 && rl.rlim_max != RLIM_INFINITY &&
	    rl.rlim_max < (1u << 30)) {
		*why = "hard core size limit too small";
		goto out;
	}
	if (mkdir(dir, 0755) != 0 || !fixture_start(exe, "abort", dir, fx)) {
		*why = "fixture did not start";
		goto out;
	}
	core = kernel_core_path(dir, fx->pid, why);
	before_dump(fx, exe, filter, delete_exe);
	status = fixture_stop(fx, true);
	if (!core)
		goto out;
	if (!WIFSIGNALED(status) || !WCOREDUMP(status) || stat(core, &st) != 0) {
		*why = "the kernel wrote no core (rlimit, core_pattern or a container)";
		free(core);
		core = NULL;
		goto out;
	}
	/* Keep it under a predictable name in tmpdir. */
	if (asprintf(&dst, "%s/%s.core", tmpdir, name) < 0)
		abort();
	if (rename(core, dst) == 0) {
		free(core);
		core = dst;
		dst = NULL;
	}
out:
	free(dst);
	free(dir);
	return core;
}

/* ---- the backend --------------------------------------------------------- */

struct core_h {
	const struct rbi_mem_ops *ops;
	void *be;
	struct rbi_diag diag;
	pid_t pid;
};

static int open_core(struct core_h *h, const char *path, const char *sysroot,
		     const char *exe)
{
	struct rbi_open_opts opts = {
		.size = sizeof(opts), .sysroot = sysroot, .exe = exe,
	};

	memset(h, 0, sizeof(*h));
	return rbi_mem_core_open(path, &opts, &h->diag, &h->pid, &h->ops, &h->be);
}

static void close_core(struct core_h *h)
{
	if (h->ops)
		h->ops->close(h->be);
	rbi_diag_free(&h->diag);
	memset(h, 0, sizeof(*h));
}

static const char *warning_with(const struct core_h *h, const char *a,
				const char *b)
{
	for (size_t i = 0; i < h->diag.n; i++)
		if (strstr(h->diag.msgs[i], a) && (!b || strstr(h->diag.msgs[i], b)))
			return h->diag.msgs[i];
	return NULL;
}

static void print_warnings(const struct core_h *h)
{
	for (size_t i = 0; i < h->diag.n; i++)
		diag("warning: %s", h->diag.msgs[i]);
}

static int read_u64(const struct core_h *h, uint64_t addr, uint64_t *v)
{
	size_t n = 0;

	return h->ops->read(h->be, addr, v, sizeof(*v), &n);
}

/* Whether the core file itself holds bytes for ADDR (a PT_LOAD's filesz
   covers it): tells whether a read was served by the file fallback. */
static bool core_holds(const char *core, uint64_t addr)
{
	int fd = open(core, O_RDONLY);
	Elf *elf;
	size_t phnum = 0;
	bool held = false;

	if (fd < 0)
		return false;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && elf_getphdrnum(elf, &phnum) == 0)
		for (size_t i = 0; i < phnum; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
			    addr >= ph.p_vaddr && addr - ph.p_vaddr < ph.p_filesz)
				held = true;
		}
	if (elf)
		elf_end(elf);
	close(fd);
	return held;
}

struct regions {
	struct rbi_region v[4096];
	size_t n;
};

static bool load_regions(const struct core_h *h, struct regions *r)
{
	int rc;

	for (r->n = 0; r->n < RBI_ARRAY_SIZE(r->v); r->n++) {
		rc = h->ops->region(h->be, r->n, &r->v[r->n]);
		if (rc == RBI_ITER_END)
			return true;
		if (rc != RBI_OK)
			return false;
	}
	return false;
}

static const struct rbi_region *region_at(const struct regions *r, uint64_t a)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->v[i].start <= a && a < r->v[i].end)
			return &r->v[i];
	return NULL;
}

static bool same_path(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

/* ---- checks on one good core --------------------------------------------- */

static void check_regions(const char *label, const struct core_h *h,
			  const struct fixture *fx, const char *exe,
			  struct regions *r)
{
	const struct rbi_region *m, *d;
	bool sorted = true;
	bool loaded = load_regions(h, r);

	if (!ok(loaded && r->n > 5, "%s: region list (%zu regions)", label, r->n))
		return;
	for (size_t i = 0; i < r->n; i++)
		if (r->v[i].start >= r->v[i].end ||
		    (i && r->v[i].start < r->v[i - 1].end))
			sorted = false;
	ok(sorted, "%s: regions sorted, non-empty, disjoint", label);
	m = region_at(r, fx->magic);
	ok(m && same_path(m->path, exe) && (m->prot & RBI_PROT_READ) &&
	   !(m->prot & RBI_PROT_WRITE),
	   "%s: .rodata in a read-only region of %s", label, exe);
	d = region_at(r, fx->data);
	ok(d && same_path(d->path, exe) && (d->prot & RBI_PROT_WRITE),
	   "%s: .data in a writable region of %s", label, exe);
}

static void check_threads(const char *label, const struct core_h *h,
			  const struct fixture *fx, const struct regions *r)
{
	struct rbi_thread_regs t[8];
	size_t n = 0;
	bool tids = true, fs = true, pcs = true, sps = true;

	while (n < RBI_ARRAY_SIZE(t) && h->ops->thread(h->be, n, &t[n]) == RBI_OK)
		n++;
	if (!ok(n == 2, "%s: 2 threads (got %zu)", label, n))
		return;
	for (size_t i = 0; i < n; i++) {
		const struct rbi_region *pc = region_at(r, t[i].pc);
		const struct rbi_region *sp = region_at(r, t[i].sp);
		uint64_t want = t[i].tid == fx->tid0 ? fx->fs0 : fx->fs1;

		diag("%s: thread %d pc 0x%" PRIx64 " sp 0x%" PRIx64 " fs_base 0x%"
		     PRIx64 " (pc in %s)", label, t[i].tid, t[i].pc, t[i].sp,
		     t[i].fs_base, pc && pc->path ? pc->path : "?");
		if (t[i].tid != fx->tid0 && t[i].tid != fx->tid1)
			tids = false;
		if (t[i].fs_base != want || want == 0)
			fs = false;
		if (!pc || !pc->path)
			pcs = false;
		if (!sp || sp->path || !(sp->prot & RBI_PROT_WRITE))
			sps = false;
	}
	ok(tids && t[0].tid != t[1].tid, "%s: thread ids are the fixture's", label);
	ok(fs, "%s: fs_base of each thread is its thread pointer", label);
	ok(pcs, "%s: each pc is in a mapped file", label);
	ok(sps, "%s: each sp is in anonymous writable memory", label);
}

/* A read spanning two regions of the executable (core bytes, then bytes
   the core may lack) must equal the file's bytes. */
static void check_spanning(const char *label, const struct core_h *h,
			   const struct regions *r, const char *exe)
{
	unsigned char got[64], want[64];
	size_t n = 0;
	int fd, rc;

	for (size_t i = 0; i + 1 < r->n; i++) {
		const struct rbi_region *a = &r->v[i], *b = &r->v[i + 1];

		if (!same_path(a->path, exe) || !same_path(b->path, exe) ||
		    a->end != b->start || a->file_offset != 0 ||
		    (a->prot & RBI_PROT_WRITE) || (b->prot & RBI_PROT_WRITE))
			continue;
		rc = h->ops->read(h->be, a->end - 32, got, sizeof(got), &n);
		fd = open(exe, O_RDONLY);
		memset(want, 0, sizeof(want));
		if (fd >= 0) {
			if (pread(fd, want, 32, (off_t)(a->file_offset + (a->end - a->start) - 32)) != 32 ||
			    pread(fd, want + 32, 32, (off_t)b->file_offset) != 32)
				want[0] ^= 1;
			close(fd);
		}
		ok(rc == RBI_OK && n == sizeof(got) && memcmp(got, want, sizeof(got)) == 0,
		   "%s: read across 0x%" PRIx64 " (two mappings) equals the file",
		   label, a->end);
		return;
	}
	ok(false, "%s: no two adjacent read-only mappings of the executable", label);
}

/* A read running off the end of a region returns the prefix. */
static void check_partial(const char *label, const struct core_h *h,
			  const struct regions *r)
{
	unsigned char buf[16];
	size_t n = 99;
	int rc;

	for (size_t i = 0; i < r->n; i++) {
		const struct rbi_region *a = &r->v[i];
		uint64_t v;

		if (a->path || !(a->prot & RBI_PROT_WRITE) ||
		    (i + 1 < r->n && r->v[i + 1].start == a->end) ||
		    read_u64(h, a->end - 8, &v) != RBI_OK)
			continue;
		rc = h->ops->read(h->be, a->end - 8, buf, sizeof(buf), &n);
		ok(rc == RBI_PARTIAL && n == 8, "%s: read off the end of 0x%" PRIx64
		   "-0x%" PRIx64 " gives RBI_PARTIAL with 8 bytes (rc %d, %zu)",
		   label, a->start, a->end, rc, n);
		rc = h->ops->read(h->be, 16, buf, sizeof(buf), &n);
		ok(rc == RBI_UNMAPPED && n == 0, "%s: read at 0x10 is RBI_UNMAPPED", label);
		rc = h->ops->read(h->be, UINT64_MAX - 3, buf, sizeof(buf), &n);
		ok(rc == RBI_UNMAPPED && n == 0,
		   "%s: read wrapping past 2^64 is RBI_UNMAPPED", label);
		return;
	}
	ok(false, "%s: no anonymous region followed by a hole", label);
}

/* A core whose ELF header pages were filtered out (-F 0x23): the
   executable cannot be checked, so it is used, with a warning. */
static void check_headerless_core(const char *label, const char *core,
				  const struct fixture *fx, const char *exe)
{
	struct core_h h;
	char magic[sizeof(magic_a)];
	size_t n;
	int rc = open_core(&h, core, NULL, NULL);

	ok(rc == RBI_OK && warning_with(&h, exe, "cannot be checked") &&
	   h.ops->read(h.be, fx->magic, magic, sizeof(magic), &n) == RBI_OK &&
	   memcmp(magic, magic_a, sizeof(magic)) == 0,
	   "%s, filter 0x23 (no ELF headers): file used unchecked, with a warning", label);
	if (rc == RBI_OK)
		close_core(&h);
}

static const char data_secret[] = "RBINSPECT-DATA-FILE-SECRET";

/* A core names any file: the data file the fixture mapped (FIXTURE_MAP),
   or, in a copy of the core whose NT_FILE was rewritten, /proc/self/environ.
   Neither is read; a warning says so. */
static void check_data_files(const char *label, const char *core, const struct fixture *fx,
			     const char *data_path)
{
	char *copy = path_in_tmp("core-proc"), buf[sizeof(data_secret)], *name = NULL;
	struct core_h h;
	size_t n, len = strlen(data_path);
	int rc;

	if (!fx->map) {
		ok(false, "%s: the fixture mapped no data file", label);
		return;
	}
	rc = open_core(&h, core, NULL, NULL);
	ok(rc == RBI_OK && h.ops->read(h.be, fx->map, buf, sizeof(buf), &n) != RBI_OK &&
	   warning_with(&h, data_path, "data file") && warning_with(&h, "not read", NULL),
	   "%s: a data file the core names is not read, and a warning says so", label);
	if (rc == RBI_OK)
		close_core(&h);
	/* The same name's bytes, made "/proc/////self/environ" (as long),
	   wherever they are (NT_FILE, and the environment that named it). */
	if (len >= sizeof("/proc/self/environ") && copy_file(core, copy)) {
		FILE *f = fopen(copy, "r+b");
		char *all = NULL, *at;
		long size;

		if (f && fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > 0 &&
		    (all = malloc((size_t)size)) && fseek(f, 0, SEEK_SET) == 0 &&
		    fread(all, 1, (size_t)size, f) == (size_t)size &&
		    (name = malloc(len + 1))) {
			size_t pad = len - strlen("/proc/self/environ");

			snprintf(name, len + 1, "/proc%.*s/self/environ", (int)pad,
				 "////////////////////////////////////////////////////////////"
				 "////////////////////////////////////////////////////////////");
			for (at = all; strlen(name) == len &&
			     (at = memmem(at, (size_t)(all + size - at), data_path, len + 1));
			     at += len)
				if (fseek(f, at - all, SEEK_SET) != 0 || fwrite(name, 1, len, f) != len)
					break;
		}
		free(all);
		if (f)
			fclose(f);
	}
	rc = name && strlen(name) == len ? open_core(&h, copy, NULL, NULL) : -1;
	ok(rc == RBI_OK && h.ops->read(h.be, fx->map, buf, sizeof(buf), &n) != RBI_OK &&
	   warning_with(&h, "/proc", "not read"),
	   "%s: a core naming /proc/self/environ: not read", label);
	if (rc == RBI_OK)
		close_core(&h);
	free(name);
	free(copy);
}

/* Everything a good core of the fixture must give. */
static void check_good_core(const char *label, const char *core,
			    const struct fixture *fx, const char *exe,
			    bool want_fallback)
{
	struct core_h h;
	struct regions *r = calloc(1, sizeof(*r));
	char magic[sizeof(magic_a)];
	uint64_t v = 0;
	size_t n = 0;
	int rc, fd;

	rc = open_core(&h, core, NULL, NULL);
	if (!ok(rc == RBI_OK, "%s: opens (%s)", label, rc ? rbi_errmsg() : "ok")) {
		free(r);
		return;
	}
	print_warnings(&h);
	ok(h.pid == fx->pid, "%s: pid %d is the fixture's (%d)", label,
	   (int)h.pid, (int)fx->pid);
	ok(!warning_with(&h, exe, NULL), "%s: no warning about the executable", label);
	rc = read_u64(&h, fx->data, &v);
	ok(rc == RBI_OK && v == data_value,
	   "%s: .data value from the core (0x%" PRIx64 ")", label, v);
	ok(read_u64(&h, fx->runtime, &v) == RBI_OK && v == fx->runtime_value,
	   "%s: .data changed at run time: core bytes win over the file's", label);
	rc = h.ops->read(h.be, fx->magic, magic, sizeof(magic), &n);
	ok(rc == RBI_OK && n == sizeof(magic) && memcmp(magic, magic_a, sizeof(magic)) == 0,
	   "%s: .rodata magic readable (rc %d)", label, rc);
	if (want_fallback)
		ok(!core_holds(core, fx->magic),
		   "%s: the core has no bytes for .rodata (read came from the file)",
		   label);
	check_regions(label, &h, fx, exe, r);
	check_threads(label, &h, fx, r);
	check_spanning(label, &h, r, exe);
	check_partial(label, &h, r);
	fd = h.ops->open_file(h.be, exe);
	ok(fd >= 0, "%s: open_file(%s)", label, exe);
	if (fd >= 0)
		close(fd);
	fd = h.ops->open_file(h.be, "/nonexistent/rbi-file");
	ok(fd < 0 && fd == RBI_SYSTEM, "%s: open_file of a missing file fails (%s)",
	   label, rbi_errmsg());
	close_core(&h);
	free(r);
}

/* After the executable was replaced by another build. */
static void check_mismatch(const char *label, const char *core,
			   const struct fixture *fx, const char *exe)
{
	struct core_h h;
	char magic[sizeof(magic_a)], *root = NULL, *copy = NULL;
	const char *w;
	uint64_t v = 0;
	size_t n = 0;
	int rc;

	rc = open_core(&h, core, NULL, NULL);
	if (!ok(rc == RBI_OK, "%s: opens with a rebuilt executable (%s)", label,
		rc ? rbi_errmsg() : "ok"))
		return;
	w = warning_with(&h, exe, "differs");
	ok(w != NULL, "%s: build-id mismatch warning", label);
	if (w)
		diag("%s", w);
	rc = h.ops->read(h.be, fx->magic, magic, sizeof(magic), &n);
	ok(rc == RBI_UNMAPPED && n == 0,
	   "%s: no bytes from the mismatched file (rc %d, %zu bytes)", label, rc, n);
	ok(read_u64(&h, fx->data, &v) == RBI_OK && v == data_value,
	   "%s: core bytes still readable", label);
	close_core(&h);

	/* The right executable, named explicitly. */
	rc = open_core(&h, core, NULL, fixture_a);
	ok(rc == RBI_OK && !warning_with(&h, exe, NULL) &&
	   h.ops->read(h.be, fx->magic, magic, sizeof(magic), &n) == RBI_OK &&
	   memcmp(magic, magic_a, sizeof(magic)) == 0,
	   "%s: opts.exe supplies the executable", label);
	close_core(&h);

	/* The right executable, under a sysroot. */
	if (asprintf(&root, "%s/sysroot", tmpdir) < 0 ||
	    asprintf(&copy, "%s%s", root, exe) < 0)
		abort();
	{
		char cmd[PATH_MAX * 2];
		char *slash = strrchr(copy, '/');

		*slash = '\0';
		snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", copy);
		if (system(cmd) != 0)
			diag("mkdir failed");
		*slash = '/';
	}
	rc = copy_file(fixture_a, copy) ? open_core(&h, core, root, NULL) : -1;
	ok(rc == RBI_OK && !warning_with(&h, exe, NULL) &&
	   h.ops->read(h.be, fx->magic, magic, sizeof(magic), &n) == RBI_OK &&
	   memcmp(magic, magic_a, sizeof(magic)) == 0,
	   "%s: the sysroot's copy is preferred", label);
	if (rc == RBI_OK)
		close_core(&h);
	free(root);
	free(copy);
}

/* The executable was deleted while it ran (NT_FILE says "X (deleted)"),
   then put back: the same build is used, another build is refused.  gdb
   dumps deleted mappings whole, so only a kernel core needs the file. */
static void check_deleted(bool kernel)
{
	const char *label = kernel ? "kernel, deleted exe" : "gcore, deleted exe";
	char *exe = path_in_tmp("deleted-fixture"), *core, *name = NULL;
	char magic[sizeof(magic_a)];
	const char *why = NULL;
	struct fixture fx = { 0 };
	struct core_h h;
	size_t n = 0;
	int rc;

	if (!copy_file(fixture_a, exe)) {
		ok(false, "%s: copy", label);
		free(exe);
		return;
	}
	core = kernel ? make_kernel_core(exe, &fx, 0, "kernel-deleted", true, &why) :
			make_gcore(exe, &fx, 0, "gcore-deleted", true);
	if (!core) {
		skip(why ? why : "gcore failed", label);
		free(exe);
		return;
	}
	if (asprintf(&name, "%s (deleted)", exe) < 0)
		abort();
	copy_file(fixture_a, exe);
	rc = open_core(&h, core, NULL, NULL);
	ok(rc == RBI_OK && !warning_with(&h, exe, NULL) &&
	   h.ops->read(h.be, fx.magic, magic, sizeof(magic), &n) == RBI_OK &&
	   memcmp(magic, magic_a, sizeof(magic)) == 0,
	   "%s: same build put back: .rodata readable", label);
	if (rc == RBI_OK) {
		struct regions *r = calloc(1, sizeof(*r));
		const struct rbi_region *m;

		m = r && load_regions(&h, r) ? region_at(r, fx.magic) : NULL;
		ok(m && same_path(m->path, name), "%s: region path is \"%s\"",
		   label, m && m->path ? m->path : "(none)");
		free(r);
		close_core(&h);
	}
	if (kernel) {
		ok(!core_holds(core, fx.magic),
		   "%s: the core has no bytes for .rodata", label);
		copy_file(fixture_b, exe);
		rc = open_core(&h, core, NULL, NULL);
		ok(rc == RBI_OK && warning_with(&h, name, "differs") &&
		   h.ops->read(h.be, fx.magic, magic, sizeof(magic), &n) == RBI_UNMAPPED,
		   "%s: another build put back is refused", label);
		if (rc == RBI_OK)
			close_core(&h);
	} else {
		ok(core_holds(core, fx.magic),
		   "%s: gdb dumped the deleted file's mappings whole", label);
	}
	free(name);
	free(core);
	free(exe);
}

/* The executable's path now names what is not a regular file: a FIFO (a
   writer waits on it), a device node; and under a sysroot, a symlink out of
   it.  The core opens at once, the file is not opened (the writer still
   waits), a warning says why, and the bytes the core lacks are unreadable. */
static void check_not_regular(const char *label, const char *core, const struct fixture *fx,
			      const char *exe)
{
	char magic[sizeof(magic_a)], *root = NULL, *link = NULL, *dir;
	struct core_h h;
	size_t n = 0;
	pid_t writer;
	int rc, status;

	unlink(exe);
	if (mkfifo(exe, 0600) != 0) {
		skip(strerror(errno), "not a regular file: mkfifo");
		return;
	}
	if ((writer = fork()) == 0) {
		int fd = open(exe, O_WRONLY);   /* blocks until someone reads */

		_exit(fd < 0 ? 1 : 0);
	}
	rc = open_core(&h, core, NULL, NULL);
	ok(rc == RBI_OK && warning_with(&h, exe, "not a regular file") &&
	   h.ops->read(h.be, fx->magic, magic, sizeof(magic), &n) == RBI_UNMAPPED,
	   "%s: a FIFO where the executable was: not used, said so", label);
	if (rc == RBI_OK)
		close_core(&h);
	usleep(100000);
	ok(writer > 0 && waitpid(writer, &status, WNOHANG) == 0,
	   "%s: the FIFO was never opened for reading (its writer still waits)", label);
	if (writer > 0) {
		kill(writer, SIGKILL);
		waitpid(writer, &status, 0);
	}
	unlink(exe);
	if (mknod(exe, S_IFCHR | 0600, makedev(1, 3)) == 0) {     /* /dev/null */
		rc = open_core(&h, core, NULL, NULL);
		ok(rc == RBI_OK && warning_with(&h, exe, "not a regular file"),
		   "%s: a device node where the executable was: not opened, said so", label);
		if (rc == RBI_OK)
			close_core(&h);
		unlink(exe);
	} else {
		skip(strerror(errno), "a device node where the executable was (mknod)");
	}
	/* A sysroot whose copy of the executable is an absolute symlink to
	   the real one: resolved inside the sysroot, it leads nowhere. */
	if (asprintf(&root, "%s/escape-root", tmpdir) < 0 || asprintf(&link, "%s%s", root, exe) < 0)
		abort();
	copy_file(fixture_a, exe);
	dir = strdup(link);
	if (dir) {
		char cmd[PATH_MAX * 2];

		*strrchr(dir, '/') = '\0';
		snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", dir);
		if (system(cmd) != 0)
			diag("mkdir failed");
	}
	if (symlink(exe, link) == 0) {
		rc = open_core(&h, core, root, NULL);
		ok(rc == RBI_OK && h.ops->read(h.be, fx->magic, magic, sizeof(magic), &n) == RBI_UNMAPPED,
		   "%s: a symlink out of the sysroot is not followed out of it", label);
		if (rc == RBI_OK)
			close_core(&h);
	} else {
		skip(strerror(errno), "a symlink out of the sysroot");
	}
	free(dir);
	free(link);
	free(root);
}

/* ---- bad input ----------------------------------------------------------- */

/* Run the shell command FMT (with its arguments): whether it exited 0. */
__attribute__((format(printf, 1, 2)))
static bool command_ok(const char *fmt, ...)
{
	char cmd[2 * PATH_MAX + 256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return n > 0 && (size_t)n < sizeof(cmd) && system(cmd) == 0;
}

static void check_bad_files(const char *good_core)
{
	struct core_h h;
	char *p = path_in_tmp("bad");
	/* A zstd frame header cut short; "hello\n" gzipped. */
	static const unsigned char zstd[] = { 0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0, 0 };
	static const unsigned char gz_text[] = {
		0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xcb, 0x48,
		0xcd, 0xc9, 0xc9, 0xe7, 0x02, 0x00, 0x20, 0x30, 0x3a, 0x36, 0x06, 0x00,
		0x00, 0x00 };
	unsigned char *core;
	size_t len = 0;
	int rc;

	write_file(p, "hello, world\n", 13);
	rc = open_core(&h, p, NULL, NULL);
	ok(rc == RBI_NOT_ELF && strstr(rbi_errmsg(), "not an ELF file"),
	   "text file: RBI_NOT_ELF (%s)", rbi_errmsg());
	write_file(p, zstd, sizeof(zstd));
	rc = open_core(&h, p, NULL, NULL);
	ok(rc == RBI_TRUNCATED && strstr(rbi_errmsg(), "zstd data ends early"),
	   "zstd header only: RBI_TRUNCATED (%s)", rbi_errmsg());
	write_file(p, gz_text, sizeof(gz_text));
	rc = open_core(&h, p, NULL, NULL);
	ok(rc == RBI_NOT_ELF && strstr(rbi_errmsg(), "decompresses to something that is not"),
	   "gzipped text: RBI_NOT_ELF (%s)", rbi_errmsg());
	/* Bombs: a few kilobytes of zstd that would decompress to 256 MiB of
	   zeros (no ELF header: stops at the first megabyte), and a good core
	   with a megabyte more after it than its headers give. */
	if (command_ok("head -c 268435456 /dev/zero | zstd -q -c >'%s'", p)) {
		rc = open_core(&h, p, NULL, NULL);
		/* "it decompresses": said by the decompressor as it goes, not
		   by the core reader once all of it is out. */
		ok(rc == RBI_NOT_ELF &&
		   strstr(rbi_errmsg(), ": it decompresses to something that is not"),
		   "zstd of 256 MiB of zeros: RBI_NOT_ELF from its first bytes (%s)", rbi_errmsg());
	} else {
		skip("no zstd command", "zero bomb");
	}
	if (good_core && command_ok("{ cat '%s'; head -c 1048576 /dev/urandom; } | zstd -q -c >'%s'",
				    good_core, p)) {
		rc = open_core(&h, p, NULL, NULL);
		ok(rc == RBI_CORRUPT && strstr(rbi_errmsg(), "past the"),
		   "a core with more after it than its headers give: RBI_CORRUPT (%s)", rbi_errmsg());
		if (rc == RBI_OK)
			close_core(&h);
	} else {
		skip("no zstd command", "a core with more after it");
	}
	/* A core of another machine: its e_machine made AArch64's (x86-64's
	   on an AArch64 host). */
	if (good_core && copy_file(good_core, p)) {
		int fd = open(p, O_WRONLY);
#ifdef __x86_64__
		uint16_t other = EM_AARCH64;
#else
		uint16_t other = EM_X86_64;
#endif

		rc = fd >= 0 && pwrite(fd, &other, 2, 18) == 2 ? 0 : -1;
		if (fd >= 0)
			close(fd);
		rc = rc ? -1 : open_core(&h, p, NULL, NULL);
		ok(rc == RBI_UNSUPPORTED && strstr(rbi_errmsg(), "a core of an") &&
		   strstr(rbi_errmsg(), "read it on such a machine"),
		   "a core of another machine: RBI_UNSUPPORTED, saying whose (%s)", rbi_errmsg());
		if (rc == RBI_OK)
			close_core(&h);
	}
	write_file(p, "BZh91AY&SY", 10);
	rc = open_core(&h, p, NULL, NULL);
	ok(rc == RBI_NOT_ELF && strstr(rbi_errmsg(), "bzip2-compressed"),
	   "bzip2 file: RBI_NOT_ELF, decompress it first (%s)", rbi_errmsg());
	write_file(p, "", 0);
	rc = open_core(&h, p, NULL, NULL);
	ok(rc == RBI_NOT_ELF, "empty file: RBI_NOT_ELF (%s)", rbi_errmsg());
	rc = open_core(&h, tmpdir, NULL, NULL);
	ok(rc == RBI_NOT_ELF, "directory: RBI_NOT_ELF (%s)", rbi_errmsg());
	rc = open_core(&h, "/nonexistent/core", NULL, NULL);
	ok(rc == RBI_SYSTEM, "missing file: RBI_SYSTEM (%s)", rbi_errmsg());
	rc = open_core(&h, fixture_a, NULL, NULL);
	ok(rc == RBI_NOT_CORE && strstr(rbi_errmsg(), "is an executable, not a core"),
	   "executable: RBI_NOT_CORE (%s)", rbi_errmsg());

	if (!good_core) {
		skip("no core", "truncated cores");
		free(p);
		return;
	}
	core = read_whole(good_core, &len);
	if (!core) {
		ok(false, "reading %s", good_core);
		free(p);
		return;
	}
	write_file(p, core, len / 2);
	rc = open_core(&h, p, NULL, NULL);
	ok(rc == RBI_TRUNCATED && strstr(rbi_errmsg(), "core truncated: ") &&
	   strstr(rbi_errmsg(), "segment at 0x"),
	   "core cut in half: RBI_TRUNCATED (%s)", rbi_errmsg());
	/* gcore puts section headers after the segments; the kernel puts
	   the notes first.  Cut one byte off the last segment. */
	{
		Elf64_Ehdr eh;
		uint64_t end = 0;

		memcpy(&eh, core, sizeof(eh));
		for (size_t i = 0; i < eh.e_phnum &&
		     eh.e_phoff + (i + 1) * sizeof(Elf64_Phdr) <= len; i++) {
			Elf64_Phdr ph;

			memcpy(&ph, core + eh.e_phoff + i * sizeof(ph), sizeof(ph));
			if (ph.p_filesz && ph.p_offset + ph.p_filesz > end)
				end = ph.p_offset + ph.p_filesz;
		}
		write_file(p, core, (size_t)end - 1);
		rc = open_core(&h, p, NULL, NULL);
		ok(rc == RBI_TRUNCATED, "core short by 1 byte of its last segment: "
		   "RBI_TRUNCATED (%s)", rbi_errmsg());
		write_file(p, core, (size_t)end);
		rc = open_core(&h, p, NULL, NULL);
		ok(rc == RBI_OK, "core cut right after its last segment opens (%s)",
		   rc ? rbi_errmsg() : "ok");
		if (rc == RBI_OK)
			close_core(&h);
	}
	write_file(p, core, 200);
	rc = open_core(&h, p, NULL, NULL);
	ok(rc == RBI_TRUNCATED, "core cut inside its program headers: "
	   "RBI_TRUNCATED (%s)", rbi_errmsg());
	write_file(p, core, 40);
	rc = open_core(&h, p, NULL, NULL);
	ok(rc == RBI_TRUNCATED, "core cut inside its ELF header: RBI_TRUNCATED (%s)",
	   rbi_errmsg());
	free(core);
	free(p);
}

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Mutate a good core many times: every open must end in success or an
   error with a message, never a crash; a successful open must survive
   walking regions and threads and reading. */
static void fuzz(const char *good_core, unsigned iters)
{
	unsigned char *orig, *buf;
	size_t len = 0, phoff, phend, noff = 0, nend = 0;
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	unsigned opened = 0, rejected = 0, silent = 0;
	char *p = path_in_tmp("fuzz");
	bool verbose = getenv("RBI_FUZZ_VERBOSE") != NULL;
	Elf64_Ehdr eh;

	orig = read_whole(good_core, &len);
	if (!orig || len < sizeof(eh)) {
		ok(false, "fuzz: reading %s", good_core);
		free(orig);
		free(p);
		return;
	}
	memcpy(&eh, orig, sizeof(eh));
	phoff = eh.e_phoff;
	phend = phoff + (size_t)eh.e_phnum * sizeof(Elf64_Phdr);
	for (size_t i = 0; i < eh.e_phnum && phend <= len; i++) {
		Elf64_Phdr ph;

		memcpy(&ph, orig + phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type == PT_NOTE) {
			noff = ph.p_offset;
			nend = ph.p_offset + ph.p_filesz;
		}
	}
	buf = malloc(len);
	if (!buf || phend > len || nend > len || nend <= noff) {
		ok(false, "fuzz: core layout");
		free(buf);
		free(orig);
		free(p);
		return;
	}
	for (unsigned it = 0; it < iters; it++) {
		unsigned muts = 1 + (unsigned)(rng_next(&seed) % 8);
		struct core_h h;
		int rc;

		memcpy(buf, orig, len);
		for (unsigned m = 0; m < muts; m++) {
			uint64_t r = rng_next(&seed), at;
			unsigned where = (unsigned)(r % 10);

			if (where < 4)
				at = phoff + rng_next(&seed) % (phend - phoff);
			else if (where < 8)
				at = noff + rng_next(&seed) % (nend - noff);
			else if (where < 9)
				at = rng_next(&seed) % sizeof(eh);
			else
				at = rng_next(&seed) % len;
			if ((r >> 8) % 4 == 0 && at + 8 <= len) {
				/* An interesting 64-bit value. */
				static const uint64_t vals[] = {
					0, 1, 0xffffffffffffffffull, 0x7fffffffffffffffull,
					0x1000, 0xffffffff, 0x100000000ull, 0x8000000000000000ull,
				};
				uint64_t val = vals[(r >> 16) % RBI_ARRAY_SIZE(vals)];

				memcpy(buf + (at & ~(uint64_t)7), &val, 8);
			} else {
				buf[at] ^= (unsigned char)(1u << ((r >> 8) % 8));
			}
		}
		if (!write_file(p, buf, len))
			break;
		rbi_fail(RBI_OK, "%s", "");
		rc = open_core(&h, p, NULL, NULL);
		if (rc != RBI_OK) {
			rejected++;
			if (!rbi_errmsg()[0])
				silent++;
			if (verbose)
				diag("fuzz %u: %s: %s", it, rbi_strerror(rc), rbi_errmsg());
			continue;
		}
		opened++;
		{
			struct rbi_region reg;
			struct rbi_thread_regs t;
			unsigned char tmp[256];
			size_t n;

			for (size_t i = 0; i < 100000 &&
			     h.ops->region(h.be, i, &reg) == RBI_OK; i++) {
				h.ops->read(h.be, reg.start, tmp, sizeof(tmp), &n);
				h.ops->read(h.be, reg.end - 8, tmp, sizeof(tmp), &n);
				if (reg.path && strlen(reg.path) > PATH_MAX * 4)
					silent++;
			}
			for (size_t i = 0; i < 100000 &&
			     h.ops->thread(h.be, i, &t) == RBI_OK; i++)
				h.ops->read(h.be, t.sp, tmp, sizeof(tmp), &n);
			for (int i = 0; i < 16; i++)
				h.ops->read(h.be, rng_next(&seed), tmp, sizeof(tmp), &n);
		}
		close_core(&h);
	}
	ok(silent == 0, "fuzz: %u mutated cores: %u opened, %u rejected, each "
	   "rejection explained, no crash", iters, opened, rejected);
	free(buf);
	free(orig);
	free(p);
}

/* ---- util/ --------------------------------------------------------------- */

struct membuf {
	const unsigned char *p;
	size_t len;
	uint64_t base;
};

static int membuf_read(void *ctx, uint64_t addr, void *buf, size_t len,
		       size_t *nread)
{
	const struct membuf *m = ctx;
	size_t n;

	*nread = 0;
	if (addr < m->base || addr - m->base >= m->len)
		return RBI_UNMAPPED;
	n = m->len - (size_t)(addr - m->base);
	n = n < len ? n : len;
	memcpy(buf, m->p + (addr - m->base), n);
	*nread = n;
	return n == len ? RBI_OK : RBI_PARTIAL;
}

static void check_util(void)
{
	struct rbi_build_id a = { .len = 0 }, b = { .len = 0 }, m = { .len = 0 };
	struct rbi_diag d = { 0 };
	char hex[2 * RBI_BUILD_ID_MAX + 1];
	unsigned char *img;
	size_t len = 0;
	int fd, rc;

	ok(strcmp(rbi_strerror(RBI_TRUNCATED), "truncated core file") == 0 &&
	   strcmp(rbi_strerror(12345), "unknown error") == 0, "rbi_strerror");
	rc = rbi_fail(RBI_CORRUPT, "bad %s", "thing");
	rc = rbi_fail_context(rc, "reading thread %d: ", 3);
	ok(rc == RBI_CORRUPT && strcmp(rbi_errmsg(), "reading thread 3: bad thing") == 0,
	   "rbi_fail + rbi_fail_context (%s)", rbi_errmsg());
	rbi_diag_add(&d, "w%d", 1);
	rbi_diag_add(&d, "%s", "w2");
	ok(d.n == 2 && strcmp(d.msgs[1], "w2") == 0, "rbi_diag_add");
	rbi_diag_free(&d);

	fd = open(fixture_a, O_RDONLY);
	rc = fd >= 0 ? rbi_build_id_from_fd(fd, &a) : -1;
	if (fd >= 0)
		close(fd);
	fd = open(fixture_b, O_RDONLY);
	if (fd >= 0) {
		rbi_build_id_from_fd(fd, &b);
		close(fd);
	}
	rbi_build_id_hex(&a, hex);
	ok(rc == RBI_OK && a.len == 20 && strlen(hex) == 40,
	   "build-id of fixture A from its file: %s", hex);
	ok(b.len == 20 && !rbi_build_id_equal(&a, &b), "fixtures A and B differ");

	img = read_whole(fixture_a, &len);
	if (!img) {
		ok(false, "reading %s", fixture_a);
		return;
	}
	{
		struct membuf mb = { img, len, 0x555555554000ull };

		rc = rbi_build_id_from_memory(membuf_read, &mb, mb.base, &m);
		ok(rc == RBI_OK && rbi_build_id_equal(&a, &m),
		   "build-id from memory equals the file's");
		mb.len = 4096;          /* only the first page: a short read */
		rc = rbi_build_id_from_memory(membuf_read, &mb, mb.base, &m);
		ok(rc == RBI_OK && rbi_build_id_equal(&a, &m),
		   "build-id from a one-page image");
		mb.len = 40;
		rc = rbi_build_id_from_memory(membuf_read, &mb, mb.base, &m);
		ok(rc != RBI_OK && m.len == 0, "40 bytes: no build-id (%s)",
		   rbi_errmsg());
		mb.len = len;
		rc = rbi_build_id_from_memory(membuf_read, &mb, mb.base + 1, &m);
		ok(rc == RBI_NOT_ELF, "not an ELF header: RBI_NOT_ELF");
		rc = rbi_build_id_from_memory(membuf_read, &mb, 0x1000, &m);
		ok(rc == RBI_UNMAPPED, "unmapped: RBI_UNMAPPED");
	}
	free(img);
}

int main(int argc, char **argv)
{
	struct fixture gfx, kfx, k2fx, gffx;
	char *exe, *data_path, *gcore = NULL, *kcore = NULL, *k2core = NULL, *gfcore = NULL;
	const char *why = NULL, *why2 = NULL;
	const char *iters_env = getenv("RBI_FUZZ_ITERS");
	unsigned iters = iters_env ? (unsigned)strtoul(iters_env, NULL, 10) : 300;
	char tmpl[] = "/tmp/rbi-test-core.XXXXXX";
	int status;

	alarm(600);
	if (argc == 3) {
		fixture_a = argv[1];
		fixture_b = argv[2];
	} else {
		fixture_a = FIXTURE_A_PATH;
		fixture_b = FIXTURE_B_PATH;
	}
	if (access(fixture_a, X_OK) != 0 || access(fixture_b, X_OK) != 0) {
		printf("1..0 # SKIP fixtures not built\n");
		return 77;
	}
	if (!mkdtemp(tmpl)) {
		printf("1..0 # SKIP cannot make a temporary directory\n");
		return 77;
	}
	snprintf(tmpdir, sizeof(tmpdir), "%s", tmpl);
	diag("working in %s", tmpdir);

	check_util();

	/* The fixture runs as TMPDIR/fixture, so it can be swapped later. */
	exe = path_in_tmp("fixture");
	if (!ok(copy_file(fixture_a, exe), "copy fixture A to %s", exe))
		return 1;
	/* ... mapping a data file (a page that begins with a secret). */
	data_path = path_in_tmp("data-file");
	{
		char page[4096] = { 0 };

		memcpy(page, data_secret, sizeof(data_secret));
		if (!ok(write_file(data_path, page, sizeof(page)), "write %s", data_path))
			return 1;
		setenv("FIXTURE_MAP", data_path, 1);
	}

	gcore = make_gcore(exe, &gfx, 0, "gcore", false);
	gfcore = gcore ? make_gcore(exe, &gffx, 0x23, "gcore-filtered", false) : NULL;
	kcore = make_kernel_core(exe, &kfx, 0, "kernel", false, &why);
	k2core = kcore ? make_kernel_core(exe, &k2fx, 0x23, "kernel-noheaders",
					  false, &why2) : NULL;

	if (gcore) {
		check_good_core("gcore", gcore, &gfx, exe, true);
		check_data_files("gcore", gcore, &gfx, data_path);
	} else {
		skip("gcore unavailable or failed", "gcore cases");
	}
	if (kcore) {
		check_good_core("kernel", kcore, &kfx, exe, true);
		check_data_files("kernel", kcore, &kfx, data_path);
	} else {
		skip(why, "kernel core cases");
	}

	/* Cores whose ELF header pages were filtered out: the executable
	   cannot be checked, so it is used with a warning. */
	if (gfcore)
		check_headerless_core("gcore", gfcore, &gffx, exe);
	if (k2core)
		check_headerless_core("kernel", k2core, &k2fx, exe);
	else if (kcore)
		skip(why2, "kernel core without ELF headers");

	/* Rebuild: the executable on disk is now fixture B. */
	if (gcore || kcore) {
		if (ok(copy_file(fixture_b, exe), "replace %s by fixture B", exe)) {
			if (gcore)
				check_mismatch("gcore", gcore, &gfx, exe);
			if (kcore)
				check_mismatch("kernel", kcore, &kfx, exe);
		}
	}

	if (gcore)
		check_deleted(false);
	if (kcore) {
		check_deleted(true);
		check_not_regular("kernel", kcore, &kfx, exe);
	}
	check_bad_files(gcore ? gcore : kcore);
	if (gcore)
		fuzz(gcore, kcore ? iters / 2 : iters);
	if (kcore)
		fuzz(kcore, gcore ? iters - iters / 2 : iters);
	if (!gcore && !kcore)
		skip("no core", "fuzz");

	status = tap_plan();
	if (!status && !getenv("RBI_KEEP_TMP")) {
		char cmd[PATH_MAX + 16];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		if (system(cmd) != 0)
			diag("could not remove %s", tmpdir);
	} else {
		diag("kept %s", tmpdir);
	}
	free(exe);
	free(data_path);
	free(gcore);
	free(gfcore);
	free(kcore);
	free(k2core);
	return status;
}
