/* test-fuzz.c: the library on memory and core files that lie.
 *
 * "Never trust target memory" (ARCHITECTURE.md): a torn or garbage read
 * gives an error for that item, never a crash, a hang or an unbounded
 * walk.  Two fuzzers, on the bundled core (testdata/cores/ruby-3.1-threads.core.xz, Debian's
 * Ruby 3.1 with threads):
 *
 *  - vm: the core's own backend wrapped by one that corrupts reads (flips a
 *    bit, replaces a word with 0, ~0, a random value or a pointer back into
 *    the same read, cuts a read short, or fails it), then ruby info, every
 *    thread's frames (bt) and native frames (bt --native, from the core's
 *    registers), every fiber's frames, the locals of the first frames, and a heap walk
 *    with each object's class, class name and dump_all fields (objects,
 *    classes).  Most runs corrupt only what is read after the VM was found
 *    (so the walkers, not attach, meet the garbage); some from the start.
 *  - core: the core file made to lie (enum shape: bytes flipped in its
 *    headers or notes; a segment's field, the program header count, a
 *    note's sizes, NT_FILE's count, page size or entries set to values at
 *    the edges where size arithmetic overflows, or to another segment's;
 *    another machine), or cut short, or its .xz cut short, then opened and
 *    walked the same way.
 *
 * Every run is a child process with an alarm (a hang fails) whose exit
 * status is checked (a crash, or a sanitizer's report: exit 99, fails);
 * the seed of a failing run is printed, and RBI_FUZZ_SEED=S replays it.
 * RBI_FUZZ_RUNS (default 100 of each) and RBI_FUZZ_SEED (default: from the
 * time) make longer runs (bench/fuzz.sh).  TAP output; exit 1 on failure. */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "tap.h"
#include "bundled-core.h"


/* xorshift64*: the same seed, the same run. */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1DULL;
}

/* ---- The lying backend ----------------------------------------------------- */

struct liar {
	struct wrapped w;               /* the core's own backend */
	uint64_t seed;
	unsigned rate;                  /* about one read in RATE lies */
	bool on;
	unsigned lies;
};

static int liar_read(void *be, uint64_t addr, void *buf, size_t len, size_t *nread)
{
	struct liar *l = be;
	int rc = l->w.ops->read(l->w.be, addr, buf, len, nread);
	uint8_t *b = buf;

	if (!l->on || rc != RBI_OK || !len || rnd(&l->seed) % l->rate)
		return rc;
	l->lies++;
	uint64_t r = rnd(&l->seed);
	size_t at = (size_t)(r >> 8) % len, w = at & ~(size_t)7;
	uint64_t v;

	switch (r % 8) {
	case 0:         /* one bit */
		b[at] ^= (uint8_t)(1u << ((r >> 4) & 7));
		break;
	case 1:         /* a word of zeros, of ones, of noise */
	case 2:
	case 3:
		if (w + 8 > len)
			w = 0;
		v = r % 8 == 1 ? 0 : r % 8 == 2 ? ~0ull : rnd(&l->seed);
		memcpy(b + w, &v, len - w < 8 ? len - w : 8);
		break;
	case 4:         /* a pointer back into this read: lists that loop */
		if (w + 8 > len)
			w = 0;
		v = addr + (rnd(&l->seed) % len & ~7ull);
		memcpy(b + w, &v, len - w < 8 ? len - w : 8);
		break;
	case 5:         /* a length or count gone huge */
		if (w + 8 > len)
			w = 0;
		v = 1ull << (32 + r % 31);
		memcpy(b + w, &v, len - w < 8 ? len - w : 8);
		break;
	case 6:         /* a short read */
		*nread = at;
		return at ? RBI_PARTIAL : RBI_UNMAPPED;
	default:        /* no read at all */
		*nread = 0;
		return RBI_UNMAPPED;
	}
	return RBI_OK;
}

/* ---- What a user asks of a target ---------------------------------------- */

/* What the runs reached, summed over the children (that the fuzzers get
   past attach into the walkers, and lie on the way). */
static struct reach {
	uint64_t runs, opened, attached, threads, frames, locals, objects, lies, native, fibers,
		 roots;
} reach;

struct walk {
	rbi_target *t;
	unsigned frames, locals;
};

static int on_local(const struct rbi_local *lv, void *arg)
{
	struct walk *w = arg;

	w->locals++;
	reach.locals++;
	(void)lv;
	return 0;
}

static int on_frame(const struct rbi_frame *f, void *arg)
{
	struct walk *w = arg;

	reach.frames++;
	if (w->frames++ < 40)
		rbi_local_foreach(w->t, f, 64, on_local, w);
	return 0;
}

static int on_mixed(const struct rbi_mixed_frame *f, void *arg)
{
	(void)f;
	(void)arg;
	reach.native++;
	return 0;
}

static int on_thread(const struct rbi_thread *th, void *arg)
{
	struct walk *w = arg;
	struct rbi_native_info ni;

	reach.threads++;
	if (th->error == RBI_OK) {
		rbi_frame_foreach(w->t, th, 2000, on_frame, w);
		/* bt --native: the core's registers, unwound through stacks
		   that lie. */
		rbi_native_foreach(w->t, th, 500, on_mixed, NULL, &ni);
	}
	return 0;
}

static int on_fiber(const struct rbi_fiber *fb, void *arg)
{
	struct walk *w = arg;

	reach.fibers++;
	rbi_fiber_frame_foreach(w->t, fb, 500, on_frame, w);
	return 0;
}

static int on_root(const struct rbi_heap_root *root, void *arg)
{
	(void)arg;
	reach.roots += root->nrefs;
	return 0;
}

/* info, bt, locals, the heap's roots, objects with classes, GC flags and
   sizes: errors are fine, crashes not. */
static void exercise(rbi_target *t, struct liar *l)
{
	const struct rbi_ruby_info *info;
	struct walk w = { .t = t };
	rbi_heap_iter *it = NULL;
	const struct rbi_heap_slot *s;
	char name[256];

	if (rbi_ruby_info(t, &info) != RBI_OK)
		return;
	reach.attached++;
	if (l)
		l->on = true;
	rbi_thread_foreach(t, on_thread, &w);
	struct rbi_fiber_stats fs = { .size = sizeof(fs) };
	rbi_fiber_foreach(t, 64, on_fiber, &w, &fs);
	rbi_heap_roots_foreach(t, on_root, NULL);
	if (rbi_heap_iter_init(t, 0, &it) != RBI_OK)
		return;
	for (unsigned n = 0; n < 50000 && rbi_heap_iter_next(it, &s) == RBI_OK; n++) {
		struct rbi_heap_object o;
		uint64_t k, size;
		unsigned gc;

		reach.objects++;
		if (n % 7 == 0 && rbi_heap_object_class(it, s, &k) == RBI_OK)
			rbi_class_name(t, k, name, sizeof(name));
		if (n % 3 == 0)
			rbi_heap_object_read(it, s, 64, &o);
		if (n % 5 == 0) {
			rbi_heap_object_gc_flags(it, s, &gc);
			rbi_heap_object_memsize(it, s, &size);
		}
	}
	rbi_heap_iter_free(it);
	if (rbi_heap_iter_init(t, 0, &it) == RBI_OK) {
		uint64_t counts[RBI_TYPE_COUNT] = { 0 };
		for (unsigned n = 0; n < 1000 && rbi_heap_iter_count_classes(it, counts) == RBI_OK; n++)
			;
		rbi_heap_iter_free(it);
	}
}

/* ---- Runs ----------------------------------------------------------------- */

/* Run FN(SEED, ARG) in a child; true if it ended with exit 0 within the
   time.  A failure says how, with the seed to replay. */
static bool run_child(const char *what, uint64_t seed, void (*fn)(uint64_t, void *), void *arg)
{
	int st, fds[2];
	pid_t pid;
	struct reach r = { 0 };

	fflush(stdout);
	if (pipe(fds))
		return false;
	pid = fork();
	if (pid < 0)
		return false;
	if (pid == 0) {
		close(fds[0]);
		alarm(60);
		memset(&reach, 0, sizeof(reach));
		fn(seed, arg);
		reach.runs = 1;
		if (write(fds[1], &reach, sizeof(reach)) != (ssize_t)sizeof(reach))
			exit(4);
		exit(0);        /* exit, not _exit: LeakSanitizer checks at exit */
	}
	close(fds[1]);
	if (read(fds[0], &r, sizeof(r)) == (ssize_t)sizeof(r)) {
		reach.runs += r.runs, reach.attached += r.attached, reach.threads += r.threads;
		reach.frames += r.frames, reach.locals += r.locals, reach.objects += r.objects;
		reach.lies += r.lies, reach.native += r.native, reach.fibers += r.fibers;
		reach.roots += r.roots, reach.opened += r.opened;
	}
	close(fds[0]);
	if (waitpid(pid, &st, 0) != pid)
		return false;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return true;
	if (WIFSIGNALED(st))
		diag("%s: seed %" PRIu64 ": killed by signal %d%s (replay: RBI_FUZZ_SEED=%" PRIu64
		     " RBI_FUZZ_RUNS=1)", what, seed, WTERMSIG(st),
		     WTERMSIG(st) == SIGALRM ? " (a hang: 60 s)" : "", seed);
	else
		diag("%s: seed %" PRIu64 ": exit %d (replay: RBI_FUZZ_SEED=%" PRIu64
		     " RBI_FUZZ_RUNS=1)", what, seed, WEXITSTATUS(st), seed);
	return false;
}

static rbi_target *core0;       /* the bundled core, opened once */

static void vm_run(uint64_t seed, void *arg)
{
	struct liar l = { .w = backend_of(core0), .seed = seed | 1,
			  .rate = 4 + (unsigned)(seed % 60) };
	struct rbi_mem_ops ops = wrapped_ops(&l.w, liar_read, NULL);
	struct rbi_open_opts o = { .size = sizeof(o) };
	rbi_target *t = NULL;

	(void)arg;
	/* One run in four lies from the first read (images, the VM's search). */
	l.on = seed % 4 == 0;
	if (rbi_target_open_ops(&ops, &l, &o, &t) == RBI_OK)
		exercise(t, &l);
	rbi_target_free(t);
	reach.lies += l.lies;
}

/* The decompressed core, mutated in place by a run and put back after it:
   its first 64 KiB (the ELF header and program headers) and its note
   segment (gcore writes it last). */
struct corefile {
	const char *path;
	const char *work;       /* a copy cut short */
	off_t size;
	uint8_t head[65536];
	uint8_t *notes;         /* the PT_NOTE segment's bytes */
	uint64_t notes_off, notes_len;
};

/* How a run lies about the core: bytes cut or flipped at random, and the
   structural lies of an audit's hand-made cores, each at the edges where
   a size computation overflows. */
enum shape {
	SHAPE_CUT,              /* cut short within its first 16 MiB */
	SHAPE_HEAD_BYTES,       /* 1-16 bytes of the first 64 KiB */
	SHAPE_NOTE_BYTES,       /* 1-16 bytes of the notes */
	SHAPE_SEGMENT,          /* a PT_LOAD's field: an edge, or another's
				   (overlapping or aliased segments) */
	SHAPE_PHNUM,            /* e_phnum an edge or PN_XNUM, e_shoff where
				   section 0 then lies */
	SHAPE_NOTE_SIZE,        /* a note's name or descriptor size an edge */
	SHAPE_NT_FILE,          /* NT_FILE's count, page size or an entry */
	SHAPE_MACHINE,          /* e_machine of another machine */
	SHAPE_PACKED_CUT,       /* the .xz itself cut short */
	SHAPE_COUNT
};

static const char *const shape_names[SHAPE_COUNT] = {
	"cut", "header bytes", "note bytes", "segment", "phnum", "note size",
	"NT_FILE", "machine", "packed and cut",
};

/* A value at an edge of the arithmetic done on it. */
static uint64_t edge(uint64_t *s, uint64_t file_size)
{
	static const uint64_t edges[] = {
		0, 1, 0x7fffffff, 0x80000000, 0xffffffff, 0x100000000,
		0x7fffffffffffffff, 0x8000000000000000, 0xfffffffffffff000,
		0xfffffffffffffff8, 0xffffffffffffffff,
	};
	uint64_t r = rnd(s) % (sizeof(edges) / sizeof(edges[0]) + 2);

	if (r == sizeof(edges) / sizeof(edges[0]))
		return file_size;
	if (r > sizeof(edges) / sizeof(edges[0]))
		return file_size + 1;
	return edges[r];
}

static void put(int fd, uint64_t at, const void *v, size_t len)
{
	if (pwrite(fd, v, len, (off_t)at) != (ssize_t)len)
		exit(3);
}

static void put_u64(int fd, uint64_t at, uint64_t v) { put(fd, at, &v, sizeof(v)); }
static void put_u32(int fd, uint64_t at, uint32_t v) { put(fd, at, &v, sizeof(v)); }
static void put_u16(int fd, uint64_t at, uint16_t v) { put(fd, at, &v, sizeof(v)); }

/* N random bytes (zeros and 0xff often) within LEN bytes from AT. */
static void flip_bytes(int fd, uint64_t *s, uint64_t at, uint64_t len)
{
	for (unsigned n = 1 + rnd(s) % 16; n && len; n--) {
		uint64_t r = rnd(s);
		uint8_t b = (uint8_t)(r >> 32);

		if (r % 3 == 0)
			b = (r >> 40) & 1 ? 0xff : 0;
		put(fd, at + r % len, &b, 1);
	}
}

static const Elf64_Ehdr *ehdr(const struct corefile *c)
{
	return (const Elf64_Ehdr *)c->head;
}

/* The file offset of program header I, whose bytes are in HEAD. */
static uint64_t phdr_at(const struct corefile *c, size_t i)
{
	return ehdr(c)->e_phoff + i * sizeof(Elf64_Phdr);
}

static Elf64_Phdr phdr(const struct corefile *c, size_t i)
{
	Elf64_Phdr ph;

	memcpy(&ph, c->head + phdr_at(c, i), sizeof(ph));
	return ph;
}

/* A random PT_LOAD's index. */
static size_t some_load(const struct corefile *c, uint64_t *s)
{
	size_t n = ehdr(c)->e_phnum, i = rnd(s) % n;

	for (size_t k = 0; k < n; k++, i = (i + 1) % n)
		if (phdr(c, i).p_type == PT_LOAD)
			break;
	return i;
}

static void lie_segment(int fd, const struct corefile *c, uint64_t *s)
{
	size_t i = some_load(c, s);
	Elf64_Phdr ph = phdr(c, i), other = phdr(c, some_load(c, s));
	uint64_t v = edge(s, (uint64_t)c->size);

	switch (rnd(s) % 6) {
	case 0:         /* over another segment, or at its very address */
		ph.p_vaddr = other.p_vaddr + (rnd(s) % 2 ? rnd(s) % (other.p_memsz + 1) : 0);
		break;
	case 1:         /* the same file bytes as another */
		ph.p_offset = other.p_offset;
		break;
	case 2:
		ph.p_vaddr = v;
		break;
	case 3:
		ph.p_offset = v;
		break;
	case 4:
		ph.p_filesz = v;
		break;
	default:
		ph.p_memsz = v;
		break;
	}
	put(fd, phdr_at(c, i), &ph, sizeof(ph));
}

static void lie_phnum(int fd, const struct corefile *c, uint64_t *s)
{
	static const uint16_t counts[] = { 0, 1, PN_XNUM, PN_XNUM - 1 };
	uint16_t phnum = rnd(s) % 5 ? counts[rnd(s) % 4] : ehdr(c)->e_phnum + 1;

	put_u16(fd, offsetof(Elf64_Ehdr, e_phnum), phnum);
	/* Section 0 holds the real count under PN_XNUM: put it at an edge,
	   or inside the program headers, whose bytes then say what it is. */
	if (phnum == PN_XNUM && rnd(s) % 2)
		put_u64(fd, offsetof(Elf64_Ehdr, e_shoff),
			rnd(s) % 2 ? edge(s, (uint64_t)c->size) : phdr_at(c, rnd(s) % 8));
}

/* The offset in C->notes of a random note's header, and of NT_FILE's
   descriptor (0 if none) in *NT_FILE_DESC. */
static uint64_t some_note(const struct corefile *c, uint64_t *s, uint64_t *nt_file_desc)
{
	uint64_t at = 0, pick = 0, n = 0, want = rnd(s) % 64;

	*nt_file_desc = 0;
	while (at + sizeof(Elf64_Nhdr) <= c->notes_len) {
		Elf64_Nhdr nh;
		uint64_t desc;

		memcpy(&nh, c->notes + at, sizeof(nh));
		desc = at + sizeof(nh) + ((nh.n_namesz + 3) & ~3u);
		if (n++ <= want)
			pick = at;
		if (nh.n_type == NT_FILE && nh.n_namesz == 5)
			*nt_file_desc = desc;
		at = desc + ((nh.n_descsz + 3) & ~3u);
	}
	return pick;
}

static void lie_note_size(int fd, const struct corefile *c, uint64_t *s)
{
	static const uint32_t sizes[] = { 0, 3, 0x7ffffffc, 0x80000000, 0xfffffffc, 0xffffffff };
	uint64_t file_desc, at = some_note(c, s, &file_desc);
	uint32_t v = sizes[rnd(s) % 6];

	put_u32(fd, c->notes_off + at + (rnd(s) % 2 ? offsetof(Elf64_Nhdr, n_namesz)
						  : offsetof(Elf64_Nhdr, n_descsz)), v);
}

static void lie_nt_file(int fd, const struct corefile *c, uint64_t *s)
{
	uint64_t desc, v = edge(s, (uint64_t)c->size);

	some_note(c, s, &desc);
	if (!desc)
		exit(3);        /* the bundled core has one */
	desc += c->notes_off;
	switch (rnd(s) % 4) {
	case 0:         /* the count: an edge, or one more than fits */
		put_u64(fd, desc, rnd(s) % 2 ? v : 0xffffffffffffffffULL / 24 + 1);
		break;
	case 1:         /* the page size */
		put_u64(fd, desc + 8, rnd(s) % 2 ? v : 1ULL << (rnd(s) % 64));
		break;
	default:        /* an entry's start, end or offset */
		put_u64(fd, desc + 16 + 8 * (rnd(s) % 30), v);
		break;
	}
}

static void lie_machine(int fd, uint64_t *s)
{
	static const uint16_t machines[] = { EM_AARCH64, EM_386, EM_RISCV, EM_NONE, 0xffff };

	put_u16(fd, offsetof(Elf64_Ehdr, e_machine), machines[rnd(s) % 5]);
}

/* Copy LEN bytes of file IN to OUT (made anew). */
static bool copy_prefix(const char *in, const char *out, off_t len)
{
	int a = open(in, O_RDONLY | O_CLOEXEC), b = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	bool ok_ = a >= 0 && b >= 0;
	off_t left = len;

	while (ok_ && left > 0) {
		ssize_t n = copy_file_range(a, NULL, b, NULL, (size_t)left, 0);
		if (n <= 0)
			ok_ = false;
		else
			left -= n;
	}
	if (a >= 0)
		close(a);
	if (b >= 0)
		close(b);
	return ok_;
}

/* A copy of IN cut at a random point within its first LIMIT bytes. */
static void cut_copy(const char *in, const char *out, uint64_t *s, off_t limit)
{
	struct stat st;

	if (stat(in, &st) != 0)
		exit(3);
	if (st.st_size < limit)
		limit = st.st_size;
	if (!copy_prefix(in, out, (off_t)(rnd(s) % (uint64_t)(limit ? limit : 1))))
		exit(3);
}

static uint64_t shape_opened[SHAPE_COUNT], shape_runs[SHAPE_COUNT];

static void core_run(uint64_t seed, void *arg)
{
	struct corefile *c = arg;
	uint64_t s = seed | 1;
	enum shape shape = (enum shape)(seed % SHAPE_COUNT);
	const char *open_path = c->path;
	rbi_target *t = NULL;
	int fd;

	if (shape == SHAPE_CUT || shape == SHAPE_PACKED_CUT) {
		cut_copy(shape == SHAPE_CUT ? c->path : CORE_XZ, c->work, &s, 16 << 20);
		open_path = c->work;
	} else {
		fd = open(c->path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			exit(3);
		switch (shape) {
		case SHAPE_HEAD_BYTES:
			flip_bytes(fd, &s, 0, sizeof(c->head));
			break;
		case SHAPE_NOTE_BYTES:
			flip_bytes(fd, &s, c->notes_off, c->notes_len);
			break;
		case SHAPE_SEGMENT:
			lie_segment(fd, c, &s);
			break;
		case SHAPE_PHNUM:
			lie_phnum(fd, c, &s);
			break;
		case SHAPE_NOTE_SIZE:
			lie_note_size(fd, c, &s);
			break;
		case SHAPE_NT_FILE:
			lie_nt_file(fd, c, &s);
			break;
		default:
			lie_machine(fd, &s);
			break;
		}
		close(fd);
	}
	if (rbi_target_open_core(open_path, NULL, &t) == RBI_OK) {
		reach.opened++;
		exercise(t, NULL);
	}
	rbi_target_free(t);
}

/* Undo core_run's mutations of C's header and notes. */
static bool restore_core(const struct corefile *c)
{
	int fd = open(c->path, O_WRONLY | O_CLOEXEC);
	bool ok_ = fd >= 0 && pwrite(fd, c->head, sizeof(c->head), 0) == (ssize_t)sizeof(c->head) &&
		   pwrite(fd, c->notes, c->notes_len, (off_t)c->notes_off) == (ssize_t)c->notes_len;

	if (fd >= 0)
		close(fd);
	return ok_;
}

/* Keep C's header and notes, to put them back after each run. */
static bool keep_core(struct corefile *c)
{
	int fd = open(c->path, O_RDONLY | O_CLOEXEC);
	bool ok_ = fd >= 0 && c->size >= (off_t)sizeof(c->head) &&
		   pread(fd, c->head, sizeof(c->head), 0) == (ssize_t)sizeof(c->head);

	for (size_t i = 0; ok_ && i < ehdr(c)->e_phnum && phdr_at(c, i + 1) <= sizeof(c->head); i++) {
		Elf64_Phdr ph = phdr(c, i);

		if (ph.p_type != PT_NOTE)
			continue;
		c->notes_off = ph.p_offset, c->notes_len = ph.p_filesz;
		c->notes = malloc(ph.p_filesz);
		ok_ = c->notes && pread(fd, c->notes, ph.p_filesz, (off_t)ph.p_offset) ==
				  (ssize_t)ph.p_filesz;
		break;
	}
	if (fd >= 0)
		close(fd);
	return ok_ && c->notes;
}

static unsigned env_uint(const char *name, unsigned dflt)
{
	const char *v = getenv(name);

	return v && *v ? (unsigned)strtoul(v, NULL, 10) : dflt;
}

int main(void)
{
	unsigned runs = env_uint("RBI_FUZZ_RUNS", 100), bad;
	const char *seed_env = getenv("RBI_FUZZ_SEED");
	uint64_t seed0 = seed_env && *seed_env ? strtoull(seed_env, NULL, 10)
					       : (uint64_t)time(NULL);
	char dir[] = "/tmp/rbi-fuzz-XXXXXX", path[64], work[64];
	off_t size;

	setvbuf(stdout, NULL, _IOLBF, 0);
	diag("seeds from %" PRIu64 ", %u runs each (RBI_FUZZ_SEED, RBI_FUZZ_RUNS)", seed0, runs);
	if (!bundled_core("fuzzers", dir, path, sizeof(path), &size))
		return tap_plan();
	snprintf(work, sizeof(work), "%s/mutated", dir);
	if (check(rbi_target_open_core(path, NULL, &core0) == RBI_OK, "the bundled core opens")) {
		bad = 0;
		for (unsigned i = 0; i < runs; i++)
			bad += !run_child("vm", seed0 + i, vm_run, NULL);
		diag("vm: %" PRIu64 " runs attached, %" PRIu64 " threads, %" PRIu64 " fibers, %"
		     PRIu64 " frames, %" PRIu64 " native frames, %" PRIu64 " locals, %" PRIu64
		     " objects, %" PRIu64 " root references, %" PRIu64 " reads lied", reach.attached,
		     reach.threads, reach.fibers, reach.frames, reach.native, reach.locals,
		     reach.objects, reach.roots, reach.lies);
		ok(!runs || (reach.frames && reach.objects && reach.lies),
		   "vm: the runs reach frames and objects, and reads lie");
		ok(bad == 0, "vm: %u runs of info, bt, locals, objects and classes on corrupted "
		   "reads: no crash, no hang, no sanitizer report (%u failed)", runs, bad);
		rbi_target_free(core0);
	}

	static struct corefile c;

	c.path = path, c.work = work, c.size = size;
	if (!ok(keep_core(&c), "the core's header and notes kept")) {
		free(c.notes);
		unlink(path);
		rmdir(dir);
		return tap_plan();
	}
	bad = 0;
	memset(&reach, 0, sizeof(reach));
	for (unsigned i = 0; i < runs; i++) {
		uint64_t opened = reach.opened, seed = seed0 + i;

		bad += !run_child("core", seed, core_run, &c);
		shape_runs[seed % SHAPE_COUNT]++;
		shape_opened[seed % SHAPE_COUNT] += reach.opened - opened;
		if (!restore_core(&c)) {
			bad++;
			break;
		}
	}
	for (unsigned k = 0; k < SHAPE_COUNT; k++)
		diag("core: %s: %" PRIu64 " of %" PRIu64 " runs opened", shape_names[k],
		     shape_opened[k], shape_runs[k]);
	diag("core: %" PRIu64 " of %u runs attached, %" PRIu64 " frames, %" PRIu64
	     " objects", reach.attached, runs, reach.frames, reach.objects);
	ok(bad == 0, "core: %u runs on the core cut short, its bytes flipped, or its segments, "
	   "program header count, note sizes, NT_FILE or machine made to lie, or its .xz cut: "
	   "no crash, no hang, no sanitizer report (%u failed)", runs, bad);
	free(c.notes);
	unlink(work);
	unlink(path);
	rmdir(dir);
	return tap_plan();
}
