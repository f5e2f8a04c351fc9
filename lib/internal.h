/* internal.h: what the layers of libruby-introspect share.  Not installed.
 *
 * Layers, bottom up (each calls only those below it):
 *   util/   errors, warnings, small helpers
 *   mem/    the target, its backends (live, core, callback) and read cache
 *   image/  loaded ELF images, symbols, DWARF, code anchors
 *   layout/ struct layouts as data (DWARF or built-in tables)
 *   vm/     Ruby: version, VM, threads, frames, heap
 *   native/ how the process died (signals, signal frames); native stacks
 *           (libdwfl unwinding) and their merge with Ruby's frames, which
 *           is why it sits above vm/
 * session.c, above them all, opens, refreshes and closes an rbi_target and
 * owns what the layers found (images, VM); profile/ and out/ use it.
 */
#ifndef RBI_INTERNAL_H
#define RBI_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <elfutils/libdwfl.h>

#include "ruby-introspect.h"

#define RBI_EXPORT __attribute__((visibility("default")))
#define RBI_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define RBI_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- util: small helpers, inline (the sampler's fast path uses them) ----- */

/* The 64-, 32- or 16-bit word at B + OFF (a buffer read from the target,
   any alignment). */
static inline uint64_t rbi_get_u64(const uint8_t *b, uint32_t off)
{
	uint64_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

static inline uint32_t rbi_get_u32(const uint8_t *b, uint32_t off)
{
	uint32_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

static inline uint16_t rbi_get_u16(const uint8_t *b, uint32_t off)
{
	uint16_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t rbi_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Room for NEED elements of SIZE bytes in the array whose pointer is at
   ARRP and whose capacity is *CAP: when it is smaller, doubled (from
   FIRST) until it fits, and reallocated.  False when out of memory, with
   the array and *CAP as they were. */
static inline bool rbi_grow(void *arrp, size_t *cap, size_t need, size_t size, size_t first)
{
	void *v;
	size_t c;

	if (need <= *cap)
		return true;
	for (c = *cap ? *cap * 2 : first; c < need; c *= 2)
		;
	memcpy(&v, arrp, sizeof(v));
	if (!(v = realloc(v, c * size)))
		return false;
	memcpy(arrp, &v, sizeof(v));
	*cap = c;
	return true;
}
/* The same for a typed array ARR (a pointer lvalue). */
#define RBI_GROW(arr, cap, need, first) rbi_grow(&(arr), &(cap), (need), sizeof(*(arr)), (first))

/* rbi_grow, with the elements it adds zeroed (for arrays indexed by id). */
static inline bool rbi_grow_zero(void *arrp, size_t *cap, size_t need, size_t size, size_t first)
{
	size_t old = *cap;
	char *v;

	if (!rbi_grow(arrp, cap, need, size, first))
		return false;
	if (*cap > old) {
		memcpy(&v, arrp, sizeof(v));
		memset(v + old * size, 0, (*cap - old) * size);
	}
	return true;
}
#define RBI_GROW_ZERO(arr, cap, need, first) \
	rbi_grow_zero(&(arr), &(cap), (need), sizeof(*(arr)), (first))

/* ---- the ABI rule for structs with a size member ------------------------ */

/* A public struct whose first member is `uint32_t size` (set by the
   caller to sizeof as its header had it) grows only by appending members
   past that old sizeof (never into its tail padding).  The library is
   tolerant both ways: a caller built against an older header passes a
   smaller size, and the members past it take their defaults; a newer
   caller's larger size is accepted, the members this library does not
   know ignored.  include/ruby-introspect.h and libruby-introspect(3) say
   so to callers. */

/* Whether the caller's struct S (a pointer, not NULL) holds member
   FIELD. */
#define RBI_HAS_FIELD(s, field) \
	((size_t)(s)->size >= offsetof(__typeof__(*(s)), field) + sizeof((s)->field))

/* Copy the caller's sized struct at SRC (SRCSIZE bytes of it, its size
   member) over DST, a whole struct of DSTSIZE bytes that holds the
   defaults: min(SRCSIZE, DSTSIZE) bytes; DST's size member is then
   DSTSIZE.  For input structs (then read DST only) and, the other way
   round, for outputs the caller allocated (DST the caller's, with
   DSTSIZE its size member, SRC the library's whole struct: only the
   bytes the caller has room for are written, its size member kept). */
static inline void rbi_copy_sized(void *dst, size_t dstsize, const void *src, size_t srcsize)
{
	size_t n = srcsize < dstsize ? srcsize : dstsize;
	uint32_t sz = (uint32_t)dstsize;

	if (n > sizeof(sz))
		memcpy((char *)dst + sizeof(sz), (const char *)src + sizeof(sz), n - sizeof(sz));
	memcpy(dst, &sz, sizeof(sz));
}
static inline void rbi_copy_in(void *dst, size_t dstsize, const void *src)
{
	uint32_t srcsize;

	if (!src)
		return;
	memcpy(&srcsize, src, sizeof(srcsize));
	rbi_copy_sized(dst, dstsize, src, srcsize);
}
/* Input: the caller's struct *SRC (may be NULL: DST keeps its defaults)
   over the library's own *DST (of the same type), holding defaults. */
#define RBI_COPY_IN(dst, src) \
	(rbi_copy_in((dst), sizeof(*(dst)), (src)), (void)sizeof((dst) == (src)))
/* Output: the library's whole struct *SRC into the caller's *DST (not
   NULL), as far as DST->size reaches. */
#define RBI_COPY_OUT(dst, src) rbi_copy_sized((dst), (dst)->size, (src), sizeof(*(src)))

/* ---- util/error.c ------------------------------------------------------- */

/* Bytes of an explanation, its NUL included. */
#define RBI_ERRMSG_MAX 512

/* Record STATUS with a formatted explanation for rbi_errmsg(); returns
   STATUS so callers can write `return rbi_fail(RBI_PERM, "...", ...)`. */
int rbi_fail(int status, const char *fmt, ...) RBI_PRINTF(2, 3);
/* How many times this thread has called rbi_fail: code that passes up a
   status from a call that may leave it unexplained (a memory backend's
   operations, which programs linking the library supply) takes the count
   before, and gives rbi_fail_unexplained the call's status after. */
unsigned rbi_fail_count(void);
/* RC, explained as WHAT failing when the call since BEFORE recorded no
   explanation of its own: rbi_errmsg() never shows an earlier, unrelated
   failure.  Statuses that answer rather than fail (RBI_OK, RBI_PARTIAL,
   RBI_UNMAPPED, RBI_ITER_END) pass unchanged. */
int rbi_fail_unexplained(unsigned before, int rc, const char *what);
/* Prefix the current explanation with more context ("reading thread 3: ").
   Returns STATUS unchanged. */
int rbi_fail_context(int status, const char *fmt, ...) RBI_PRINTF(2, 3);

/* ---- util/diag.c: warnings kept with a target -------------------------- */

struct rbi_diag {
	char **msgs;
	size_t n;
};
void rbi_diag_add(struct rbi_diag *d, const char *fmt, ...) RBI_PRINTF(2, 3);
void rbi_diag_free(struct rbi_diag *d);

/* ---- util/procstat.c: /proc/PID/stat, /proc/PID/task/TID/stat ---------- */

/* The state letter (R, S, T, t, Z, X...) and the parent's pid in a stat
   LINE; either out pointer may be NULL.  False if LINE is not one. */
bool rbi_proc_stat_parse(const char *line, char *state, int *ppid);
/* The same from the stat file at PATH: 0, or -errno (-ENOENT: no such
   process or task; -EINVAL: not a stat line). */
int rbi_proc_stat(const char *path, char *state, int *ppid);
/* A value of a stat LINE that changes when the process runs another
   program (execve): its name and where its code and stack start, which
   address space randomization moves at every exec.  0 if LINE is not one
   (or the fields are hidden: no permission to trace the process). */
uint64_t rbi_proc_stat_image(const char *line);
/* Where the 16 random bytes the kernel wrote for the program process PID
   runs are (AT_RANDOM of /proc/PID/auxv), 0 if unknown.  Each exec gets
   new ones, wherever ASLR puts them or not. */
uint64_t rbi_proc_at_random(int pid);
/* Those bytes at AT_RANDOM, read from the process now, hashed (never 0);
   0 if unreadable (the process gone, or another program's stack). */
uint64_t rbi_proc_exec_nonce(int pid, uint64_t at_random);
/* Whether PID is in our pid namespace (true when it cannot be told). */
bool rbi_proc_same_pidns(pid_t pid);
/* The target's own number (the last of NSpid) for its task HOST (as our
   /proc/PID/task names it), or 0. */
int32_t rbi_proc_ns_tid(pid_t pid, long host);

/* The tasks (threads) of a process as /proc/PID/task lists them: the one
   place that reads that folder.  Open, take tids until 0, close. */
struct rbi_proc_tasks {
	void *dir;              /* DIR * */
};
/* 0, or -errno (-ENOENT: no such process); IT is then closed already. */
int rbi_proc_tasks_open(struct rbi_proc_tasks *it, int pid);
/* The next task's id, or 0 when there are no more (entries that are not
   task ids are skipped). */
int rbi_proc_tasks_next(struct rbi_proc_tasks *it);
/* NULL-safe and idempotent. */
void rbi_proc_tasks_close(struct rbi_proc_tasks *it);

/* ---- util/line.c -------------------------------------------------------- */

/* Read a line of at most MAX bytes (its newline included) from F into
   *LINE (CAP bytes, grown as getline grows it, never past MAX + 2): its
   length; -1 at the end of F; -2 when the line is longer than MAX (or out
   of memory): the rest of F is not to be trusted. */
ssize_t rbi_read_line(char **line, size_t *cap, FILE *f, size_t max);

/* ---- util/open.c: files a core or a process names ----------------------- */

/* Open PATH for reading if it is a regular file (nothing else is opened at
   all: no device node, FIFO or socket); with ROOT, PATH is resolved inside
   ROOT as if it were "/" (symlinks and ".." cannot lead out).  An fd, or
   -errno: -EINVAL for a file that is not a regular one. */
int rbi_open_regular(const char *root, const char *path);
/* mkdir -p PATH, mode 0700 for what it creates (PATH is changed while it
   runs and restored). */
bool rbi_make_dirs(char *path);

/* ---- util/signal.c: signals and siginfo_t ------------------------------- */

/* Bytes of a 64-bit Linux siginfo_t. */
#define RBI_SIGINFO_SIZE 128
/* Decode the siginfo_t at SI (RBI_SIGINFO_SIZE bytes, as the kernel wrote
   it into a core note or a signal frame), taken by thread TID. */
void rbi_signal_from_siginfo(const unsigned char *si, int32_t tid,
			     struct rbi_signal *out);

/* ---- util/buildid.c: GNU build-id notes --------------------------------- */

#define RBI_BUILD_ID_MAX 64
struct rbi_build_id {
	uint8_t bytes[RBI_BUILD_ID_MAX];
	size_t len;             /* 0: none */
};
typedef int (*rbi_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len,
			   size_t *nread);
/* Build-id of the ELF image whose header is mapped at BASE, read with READ.
   RBI_OK with id->len == 0 when the image has no build-id note. */
int rbi_build_id_from_memory(rbi_read_fn read, void *ctx, uint64_t base,
			     struct rbi_build_id *id);
/* Build-id of an ELF file open on FD. */
int rbi_build_id_from_fd(int fd, struct rbi_build_id *id);
bool rbi_build_id_equal(const struct rbi_build_id *a, const struct rbi_build_id *b);
/* Lower-case hex into OUT (at least 2*RBI_BUILD_ID_MAX+1 bytes). */
void rbi_build_id_hex(const struct rbi_build_id *id, char *out);

/* ---- mem/: the target and its memory ------------------------------------ */

/* A small direct-mapped page cache in front of the backend (mem/cache.c). */
#define RBI_CACHE_PAGE 4096u
#define RBI_CACHE_SLOTS 512u
#define RBI_CACHE_WANT_MAX 128u     /* pages one collecting round fetches */
struct rbi_cache_tag {
	uint64_t page;          /* page address + 1; 0 = empty */
	uint32_t valid;         /* bytes valid from the page start */
};
/* The tags apart from the pages: clearing the cache (before every command
   of a live session) writes 8 KiB, not a word into each of 512 pages that
   then all become resident. */
struct rbi_cache {
	struct rbi_cache_tag *tags;     /* RBI_CACHE_SLOTS of them, lazily */
	uint8_t *data;                  /* RBI_CACHE_SLOTS pages, lazily */
	/* While collecting (rbi_target_collect_begin): the pages reads
	   missed, to be read in one batch. */
	bool collecting;
	uint64_t want[RBI_CACHE_WANT_MAX];
	size_t nwant;
	size_t missed;                  /* misses since collecting began */
};

/* mem/regions.c: a sorted snapshot of the backend's regions. */
struct rbi_region_list {
	struct rbi_region *v;   /* paths owned by the list */
	size_t n;
};

struct rbi_image_list;          /* image/ */
struct rbi_vm;                  /* vm/ */
struct rbi_layout_seed;         /* vm/vm.h */

/* native/crash.c's answer for a target, looked for once. */
struct rbi_crash_memo {
	enum {
		RBI_CRASH_UNKNOWN,      /* not looked at yet */
		RBI_CRASH_NONE,         /* no signal killed it */
		RBI_CRASH_SIGNAL,       /* CRASH says how it died */
	} state;
	struct rbi_crash crash;
};

/* struct rbi_target is lib/mem's (mem/target.h).  What the layers above
   keep with a target, and what it was opened with, they get here
   (mem/target.c): the images (image/) and the VM (vm/) once found, the
   layout another process's DWARF gave (vm/), the crash (native/), the
   warnings list, --sysroot, --ruby-version and where layouts are cached. */
struct rbi_image_list *rbi_target_images(const struct rbi_target *t);
void rbi_target_set_images(struct rbi_target *t, struct rbi_image_list *images);
struct rbi_vm *rbi_target_vm(const struct rbi_target *t);
void rbi_target_set_vm(struct rbi_target *t, struct rbi_vm *vm);
const struct rbi_layout_seed *rbi_target_seed(const struct rbi_target *t);
struct rbi_crash_memo *rbi_target_crash_memo(struct rbi_target *t);
struct rbi_diag *rbi_target_diag(struct rbi_target *t);
const char *rbi_target_sysroot(const struct rbi_target *t);
const char *rbi_target_ruby_version(const struct rbi_target *t);
const char *rbi_target_layout_cache(const struct rbi_target *t);

/* A process forked from one being read maps the same libruby, and reading
   its struct layout from DWARF again costs 0.1 s of CPU (more under load):
   what one target read is handed to the next.  rbi_target_layout_seed: a
   copy of the layout T's Ruby got from DWARF, with its build-id, or NULL
   (T's layout is a built-in table, T has no VM located, out of memory);
   free() it.  rbi_target_open_pid_seeded: rbi_target_open_pid, taking
   SEED (freed with the target, or at once on failure), whose layout is
   used only if PID's Ruby image has SEED's build-id: a build-id names one
   build, and the layout is the build's, whatever the process. */
struct rbi_layout_seed *rbi_target_layout_seed(rbi_target *t);
int rbi_target_open_pid_seeded(pid_t pid, const struct rbi_open_opts *opts,
			       struct rbi_layout_seed *seed, rbi_target **out);

/* What the layers above lib/mem ask of a target (mem/target.c), rather
   than reaching into it: lib/vm never knows where bytes came from.
   rbi_target_is_live: a process, paused or not, not a snapshot file.
   rbi_target_moves: its memory may change between two reads (a process
   running: not paused by us nor held by a debugger).
   rbi_target_regs_ready: its threads' registers can be read as they are
   (a core, or a process we paused): none need be held for it.
   rbi_target_concurrent: reads may run on several threads at once. */
bool rbi_target_is_live(const struct rbi_target *t);
bool rbi_target_moves(const struct rbi_target *t);
bool rbi_target_regs_ready(const struct rbi_target *t);
bool rbi_target_concurrent(const struct rbi_target *t);
/* Forget cached bytes: what is read next comes from the target (a
   snapshot, whose bytes never change, keeps them). */
void rbi_target_forget(struct rbi_target *t);
/* Collecting: between begin and end, a read that needs a page the cache
   does not hold fails (RBI_UNMAPPED) and notes the page instead of
   reading it; end reads every page noted in one batch into the cache.
   Readers whose reads depend on each other (an iseq, then its body, then
   its label) run once per level with all their misses fetched together:
   a system call a level, not one a page.  What a reader concluded from a
   read that failed so is not to be kept: rbi_target_missed counts those
   reads since begin.  A snapshot's reads (a core) are not collected. */
void rbi_target_collect_begin(struct rbi_target *t);
size_t rbi_target_missed(const struct rbi_target *t);
/* Stop collecting and fetch the pages noted; how many could be read. */
size_t rbi_target_collect_end(struct rbi_target *t);
/* The backend's optional threads, registers and signal (struct
   rbi_mem_ops: thread, registers, signal); RBI_UNSUPPORTED when it has
   none. */
int rbi_target_thread_at(struct rbi_target *t, size_t index, struct rbi_thread_regs *out);
int rbi_target_registers(struct rbi_target *t, int32_t tid, struct rbi_registers *out);
bool rbi_target_has_registers(const struct rbi_target *t);
int rbi_target_signal(struct rbi_target *t, struct rbi_signal *out);

/* Native threads a backend may list (ops->thread). */
#define RBI_THREADS_REGS_MAX 65536

/* Read exactly LEN bytes or fail with RBI_UNMAPPED/RBI_PARTIAL and an
   explanation naming ADDR.  Goes through the cache. */
int rbi_read(struct rbi_target *t, uint64_t addr, void *buf, size_t len);
/* The same past the cache: for memory that changes under a live walk (the
   heap).  Safe to call from several threads when the backend is
   RBI_MEM_CONCURRENT. */
int rbi_read_fresh(struct rbi_target *t, uint64_t addr, void *buf, size_t len);
int rbi_read_u64(struct rbi_target *t, uint64_t addr, uint64_t *out);
int rbi_read_u32(struct rbi_target *t, uint64_t addr, uint32_t *out);
/* Read a NUL-terminated string of at most CAP-1 bytes; RBI_CORRUPT if no
   NUL within the bound. */
int rbi_read_cstr(struct rbi_target *t, uint64_t addr, char *out, size_t cap);
/* rbi_read_fn adapter over a target (CTX is the target). */
int rbi_target_read_fn(void *ctx, uint64_t addr, void *buf, size_t len,
		       size_t *nread);

void rbi_cache_clear(struct rbi_cache *c);
void rbi_cache_free(struct rbi_cache *c);
/* ops->read of T, noting a process found gone (T->gone). */
int rbi_backend_read(struct rbi_target *t, uint64_t addr, void *buf, size_t len,
		     size_t *nread);
/* Whether a read of T found the process gone (or its core cut short,
   RBI_TRUNCATED).  Code that takes an
   unreadable item as absent (an anonymous class, a name not found) asks
   this before saying so: a target gone is RBI_GONE, not a fact about the
   item.  Safe from any thread. */
bool rbi_target_gone_seen(const struct rbi_target *t);
/* Fail with RBI_GONE for T, whose reads found it gone (RBI_TRUNCATED for
   a core cut short). */
int rbi_fail_gone(const struct rbi_target *t);

/* Read through the cache; same returns as rbi_mem_ops.read. */
int rbi_cache_read(struct rbi_target *t, uint64_t addr, void *buf, size_t len,
		   size_t *nread);

/* The target's regions, loaded on first use (refresh drops them). */
int rbi_regions(struct rbi_target *t, const struct rbi_region_list **out);
void rbi_region_list_free(struct rbi_region_list *l);
/* The region containing ADDR, or NULL. */
const struct rbi_region *rbi_region_find(const struct rbi_region_list *l,
					 uint64_t addr);

/* Open a file the target maps: via ops->open_file, else sysroot/PATH, else
   PATH.  Returns an fd or a negative status (with rbi_fail). */
int rbi_target_open_file(struct rbi_target *t, const char *path);

/* Whether TID, a thread id as the live target numbers its threads (in its
   own pid namespace), is one of its kernel threads now: 1 with our number
   for it in *HOST (as /proc/PID/task names it), 0 if it is not (gone, or
   another process's: a forked child's Ruby may keep its parent's thread
   ids), -1 when T cannot tell (a core, a callback backend: their threads
   are their notes'). */
int rbi_target_task(struct rbi_target *t, int32_t tid, int32_t *host);
/* The thread id the live target's main thread (its thread-group leader)
   has in the target's own pid namespace, or 0. */
int32_t rbi_target_leader_tid(struct rbi_target *t);
/* The tid of the core thread whose thread pointer is PTHREAD (glibc's
   pthread_t: x86-64's fs_base), 0 if none: a core's own
   answer where libc's record cannot be read (its file absent). */
int32_t rbi_target_tid_by_pointer(struct rbi_target *t, uint64_t pthread);

/* mem/ptrace.c: stopping every thread of a live process.  All calls on
   one rbi_pause must come from the thread that made it (ptrace's rule). */
struct rbi_pause;
/* Attach to every task of PID without stopping it.  RBI_BUSY (traced
   already), RBI_PERM (ptrace not allowed), RBI_GONE. */
int rbi_pause_new(pid_t pid, struct rbi_pause **out);
/* Stop every task (attaching new ones) and wait until each has stopped. */
int rbi_pause_stop(struct rbi_pause *p);
/* Let them all run again. */
void rbi_pause_resume(struct rbi_pause *p);
/* Detach (NULL-safe): stopped tasks run again. */
void rbi_pause_free(struct rbi_pause *p);

/* Stop task TID of PID alone (PTRACE_SEIZE, PTRACE_INTERRUPT) so that its
   registers and stack hold still; RBI_BUSY, RBI_PERM, RBI_GONE. */
int rbi_task_hold(pid_t pid, pid_t tid);
/* Let it run again (PTRACE_DETACH). */
void rbi_task_release(pid_t tid);
/* Registers of TID, which we hold stopped (rbi_task_hold, rbi_pause). */
int rbi_task_registers(pid_t tid, struct rbi_registers *out);

/* mem/unpack.c: when HEAD (the first HEAD_LEN bytes of the file open on
   FD) starts a gzip, xz, zstd or lz4 stream, decompress all of FD into an
   anonymous memory file, sparse, and return it in *OUT_FD.  RBI_ITER_END
   when HEAD is none of those; RBI_TRUNCATED for a stream that is cut or
   corrupt.  OPTS (or NULL) may ask for progress. */
int rbi_core_unpack(int fd, const char *path, const unsigned char *head, size_t head_len,
		    const struct rbi_open_opts *opts, int *out_fd);

/* util/memroom.c: the bytes of memory this process may still fill: the
   machine's MemAvailable and SwapFree, or less where its memory cgroup
   (v1 or v2, at any level up) leaves less, then *BY_CGROUP.  UINT64_MAX
   when nothing says. */
uint64_t rbi_memory_room(bool *by_cgroup);
/* The same from other files than /proc/meminfo, /proc/self/cgroup and the
   hierarchies under /sys/fs/cgroup (a test's). */
uint64_t rbi_memory_room_at(const char *meminfo, const char *cgroups, const char *sysfs,
			    bool *by_cgroup);


/* Backends.  On success *OPS and *BE are set and the caller owns BE. */
int rbi_mem_live_open(pid_t pid, const struct rbi_mem_ops **ops, void **be);
int rbi_mem_core_open(const char *path, const struct rbi_open_opts *opts,
		      struct rbi_diag *diag, pid_t *pid,
		      const struct rbi_mem_ops **ops, void **be);

/* ---- image/: ELF images, symbols, DWARF, code -------------------------- */

enum rbi_image_origin {
	RBI_IMAGE_FILE,         /* opened from disk, build-id matches */
	RBI_IMAGE_MEMORY,       /* rebuilt from the target's own memory */
};

struct rbi_image {
	char *name;             /* path as the target names it */
	char *file;             /* path we opened; NULL for RBI_IMAGE_MEMORY */
	uint64_t start, end;    /* lowest and highest mapped address */
	uint64_t bias;          /* load bias: runtime address - ELF vaddr */
	struct rbi_build_id build_id;   /* as found in target memory */
	enum rbi_image_origin origin;
	bool mismatch;          /* the file on disk had another build-id */
	Dwfl_Module *mod;
	struct rbi_fde_table *fdes;     /* image/functions.c, on first use */
	bool fdes_tried;
};

struct rbi_image_list {
	struct rbi_image *v;
	size_t n;
	Dwfl *dwfl;
	void *unwind;           /* native/unwind.c's state, freed by dwfl_end */
};

/* The target's images, loaded on first use and owned by the target
   (t->images; rbi_target_refresh drops them when the files mapped
   change).  *OUT is borrowed. */
int rbi_images_load(struct rbi_target *t, struct rbi_image_list **out);
void rbi_images_free(struct rbi_image_list *l);
/* The image defining symbol NAME (e.g. "ruby_version"), or NULL. */
const struct rbi_image *rbi_images_find_symbol(struct rbi_image_list *l,
					       const char *name);
/* Runtime address and size of symbol NAME in IMG (.dynsym or .symtab):
   a variable, local ones included, or a function other than a local one
   (file-scope functions are not looked up by name, and are most of a
   .symtab).  RBI_ITER_END if absent.  For a TLS symbol *ADDR is its
   offset in the module's TLS block and *IS_TLS is set. */
int rbi_image_symbol(const struct rbi_image *img, const char *name,
		     uint64_t *addr, uint64_t *size, bool *is_tls);
/* The runtime range [*START, *END) of IMG's first writable PT_LOAD (its
   .data and .bss, and what the dynamic linker relocates).  RBI_ITER_END
   if it has none, RBI_ELF without program headers. */
int rbi_image_writable(const struct rbi_image *img, uint64_t *start, uint64_t *end);
/* IMG's DWARF (its own or from separate debug info: debuglink,
   /usr/lib/debug/.build-id, debuginfod), or NULL. */
Dwarf *rbi_image_dwarf(const struct rbi_image *img, Dwarf_Addr *bias);

/* image/functions.c: the start of the function ADDR lies in, from IMG's
   call frame information index (.eh_frame_hdr): every function, static
   ones of a stripped library too.  RBI_ITER_END if none is known. */
int rbi_image_function_start(struct rbi_image *img, uint64_t addr, uint64_t *start);
void rbi_image_functions_free(struct rbi_image *img);
/* The image mapping ADDR, or NULL. */
struct rbi_image *rbi_images_at(struct rbi_image_list *l, uint64_t addr);

/* image/debuginfo.c: libdwfl's find_debuginfo, given the module's
   debuginfo path (Dwfl_Callbacks.debuginfo_path, NULL for the default):
   dwfl_standard_find_debuginfo, but libdebuginfod is not loaded unless
   DEBUGINFOD_URLS names a server or a debug file could be found
   locally. */
int rbi_debuginfo_find(Dwfl_Module *mod, const char *path, void **userdata,
		       const char *modname, Dwarf_Addr base, const char *file_name,
		       const char *debuglink_file, GElf_Word debuglink_crc,
		       char **debuginfo_file_name);

/* image/code.c: pc-relative memory references in machine code (lib/arch
   reads the machine's instructions). */
struct rbi_rip_ref {
	uint64_t insn;          /* address of the instruction */
	uint64_t target;        /* address it refers to */
	bool load;              /* true: the instruction accesses memory at
				   TARGET (mov/cmp/movzx read it, a store
				   writes it); false: lea takes its address */
};
/* Decode at most MAX_INSNS instructions of the function at FUNC (stopping
   at its first ret or jmp) and list its pc-relative references. */
int rbi_code_rip_refs(struct rbi_target *t, uint64_t func, size_t max_insns,
		      struct rbi_rip_ref *out, size_t max, size_t *n);

/* A direct call (or jmp: a tail call) in machine code. */
struct rbi_call_ref {
	uint64_t insn;          /* address of the call */
	uint64_t target;        /* its destination (maybe a PLT entry) */
	uint64_t resolved;      /* where the PLT entry at TARGET jumps (its GOT
				   slot, read from the target; with lazy
				   binding that may still be the PLT), or
				   TARGET if it is no PLT entry */
	bool tail;              /* a jmp, not a call */
};
/* Decode like rbi_code_rip_refs and list the direct calls and jumps. */
int rbi_code_calls(struct rbi_target *t, uint64_t func, size_t max_insns,
		   struct rbi_call_ref *out, size_t max, size_t *n);
/* Whether a call instruction ends right before RET (then RET is a return
   address: what a stack scan looks for). */
bool rbi_code_call_ends_at(struct rbi_target *t, uint64_t ret);

#endif
