/* ruby-introspect.h: read a CRuby VM from outside — a live process, a core
 * file, or any memory a caller can supply.
 *
 * Conventions (the whole API follows them):
 *  - Every fallible function returns int: RBI_OK (0) or a negative
 *    rbi_status.  Results come back through OUT pointers.  Never -1, never a
 *    positive errno.
 *  - A failing call also leaves a one-line explanation (what failed and, where
 *    there is one, what to do about it) that rbi_errmsg() returns.  It is per
 *    calling thread and is replaced by the next failing call.
 *  - The library never prints, never exits and never writes to the target.
 *  - Pointers returned by rbi_target_* getters are borrowed: valid until
 *    rbi_target_close() unless said otherwise.
 */
#ifndef RUBY_INTROSPECT_H
#define RUBY_INTROSPECT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Errors -------------------------------------------------------------- */

/* X(NAME, number, message).  Numbers are ABI: never renumber, only append. */
#define RBI_STATUS_LIST(X)                                                    \
	X(OK,          0, "success")                                          \
	X(NOMEM,      -1, "out of memory")                                    \
	X(INVAL,      -2, "invalid argument")                                 \
	X(SYSTEM,     -3, "system error")                                     \
	X(NO_PROCESS, -4, "no such process")                                  \
	X(ZOMBIE,     -5, "process has exited (zombie)")                      \
	X(PERM,       -6, "permission denied")                                \
	X(NOT_ELF,    -7, "not an ELF file")                                  \
	X(NOT_CORE,   -8, "not a core file")                                  \
	X(TRUNCATED,  -9, "truncated core file")                              \
	X(UNMAPPED,  -10, "address not mapped in target")                     \
	X(PARTIAL,   -11, "partial read")                                     \
	X(NOT_RUBY,  -12, "not a Ruby process")                               \
	X(NO_LAYOUT, -13, "unknown Ruby version: no layout")                  \
	X(NO_VM,     -14, "Ruby VM not found")                                \
	X(CORRUPT,   -15, "inconsistent VM data")                             \
	X(LAYOUT,    -16, "field outside struct layout")                      \
	X(ELF,       -17, "ELF error")                                        \
	X(DWARF,     -18, "DWARF error")                                      \
	X(ITER_END,  -19, "end of iteration")                                 \
	X(GONE,      -20, "target process has exited")                        \
	X(UNSUPPORTED, -21, "not supported by this backend or target")

typedef enum {
#define RBI_STATUS_ENUM_(name, num, msg) RBI_##name = (num),
	RBI_STATUS_LIST(RBI_STATUS_ENUM_)
#undef RBI_STATUS_ENUM_
} rbi_status;

/* Static text for a status; never NULL (unknown codes give "unknown error"). */
const char *rbi_strerror(int status);

/* The explanation left by this thread's last failing call, or "" if none. */
const char *rbi_errmsg(void);

/* ---- Memory backends ----------------------------------------------------- */

#define RBI_MEM_OPS_VERSION 1

/* Memory protection bits of a region. */
#define RBI_PROT_READ  1u
#define RBI_PROT_WRITE 2u
#define RBI_PROT_EXEC  4u

/* One mapped range of the target's address space. */
struct rbi_region {
	uint64_t start, end;    /* [start, end) */
	uint64_t file_offset;   /* offset in PATH that START maps */
	uint32_t prot;          /* RBI_PROT_* */
	const char *path;       /* NULL if anonymous; borrowed: valid until the
				   next call into the backend */
};

/* One native thread and the registers rbi needs from it. */
struct rbi_thread_regs {
	int32_t tid;            /* kernel thread id as the target's kernel sees it */
	uint64_t pc, sp;
	uint64_t fs_base;       /* x86_64 thread pointer; 0 if unknown */
};

/* One element of a batched read. */
struct rbi_iov {
	uint64_t addr;
	void *buf;
	size_t len;
	size_t nread;           /* out */
	int status;             /* out: RBI_OK, RBI_PARTIAL or RBI_UNMAPPED */
};

/* The memory a target is read from.  Plain C types only, so a debugger
 * plugin (C++) or a fuzzer can implement it.
 * BE is the backend's own state, passed back unchanged to every member.
 * Members not marked optional must not be NULL. */
struct rbi_mem_ops {
	uint32_t version;       /* RBI_MEM_OPS_VERSION; members are only appended */
	uint32_t flags;         /* RBI_MEM_STATIC: bytes never change (a core),
				   so reads may be cached for the target's life */
	/* Read up to LEN bytes at ADDR into BUF and set *NREAD.  Returns RBI_OK
	   when all LEN bytes were read, RBI_PARTIAL when a prefix was, and
	   RBI_UNMAPPED when none was.  Other errors (RBI_GONE, RBI_PERM) end
	   the read.  Must not write to the target. */
	int (*read)(void *be, uint64_t addr, void *buf, size_t len, size_t *nread);
	/* Optional: N reads in one go (each iov gets its own status).  May be
	   NULL: emulated with read(). */
	int (*read_batch)(void *be, struct rbi_iov *iov, size_t n);
	/* Region number INDEX (0-based, sorted by start) into *OUT; RBI_ITER_END
	   past the last.  The regions describe the whole address space, file
	   paths included (they name the loaded ELF images). */
	int (*region)(void *be, size_t index, struct rbi_region *out);
	/* Optional: native thread number INDEX into *OUT; RBI_ITER_END past the
	   last.  NULL: threads are known only from Ruby's own structures. */
	int (*thread)(void *be, size_t index, struct rbi_thread_regs *out);
	/* Optional: a live target moved on; drop anything cached (region list). */
	void (*refresh)(void *be);
	/* Optional: open a file the target maps (PATH as region() names it),
	   returning an fd or a negative rbi_status.  NULL: opened as PATH. */
	int (*open_file)(void *be, const char *path);
	/* Called once, last, by rbi_target_close(). */
	void (*close)(void *be);
};

#define RBI_MEM_STATIC 1u

/* ---- Targets ------------------------------------------------------------- */

typedef struct rbi_target rbi_target;

struct rbi_open_opts {
	uint32_t size;          /* sizeof(struct rbi_open_opts) */
	const char *sysroot;    /* optional: where the target's files are
				   (a core from another machine or a chroot) */
	const char *exe;        /* optional: the core's executable */
};

/* Open a live process.  Never stops it.  Errors: RBI_NO_PROCESS, RBI_ZOMBIE,
   RBI_PERM (the message says how to get permission). */
int rbi_target_open_pid(pid_t pid, const struct rbi_open_opts *opts,
			rbi_target **out);

/* Open a core file.  Errors: RBI_NOT_ELF, RBI_NOT_CORE, RBI_TRUNCATED. */
int rbi_target_open_core(const char *path, const struct rbi_open_opts *opts,
			 rbi_target **out);

/* Open memory served by OPS/BE.  On success the target owns BE and calls
   ops->close(BE) when closed; on failure the caller still owns it.  OPS must
   stay valid for the target's life. */
int rbi_target_open_ops(const struct rbi_mem_ops *ops, void *be,
			const struct rbi_open_opts *opts, rbi_target **out);

/* NULL-safe. */
void rbi_target_close(rbi_target *t);

/* Read target memory through the target's cache.  Same returns as
   rbi_mem_ops.read. */
int rbi_target_read(rbi_target *t, uint64_t addr, void *buf, size_t len,
		    size_t *nread);

/* Read N ranges in one go (one system call for a live process, where the
   backend has read_batch).  Each IOV gets its own nread and status (RBI_OK,
   RBI_PARTIAL, RBI_UNMAPPED); the call itself fails only when the target
   does (RBI_GONE, RBI_PERM).  Bypasses the cache: for many small reads of
   memory that is read once (profiler samples, heap scans). */
int rbi_target_read_batch(rbi_target *t, struct rbi_iov *iov, size_t n);

/* Forget everything read from a live target; the next call re-reads. */
int rbi_target_refresh(rbi_target *t);

/* The process id (live: the pid opened; core: the dumped pid). */
pid_t rbi_target_pid(const rbi_target *t);

/* Warnings collected while opening (for example a file on disk whose
   build-id differs from the one the core recorded).  INDEX from 0; NULL past
   the last. */
const char *rbi_target_warning(const rbi_target *t, size_t index);

/* ---- Which Ruby, and where its VM is ------------------------------------- */

/* Where an address came from. */
typedef enum {
	RBI_ADDR_NONE = 0,
	RBI_ADDR_SYMBOL,        /* an ELF symbol (.dynsym or .symtab) */
	RBI_ADDR_DWARF,         /* a DWARF variable */
	RBI_ADDR_CODE,          /* decoded from machine code of an exported function */
} rbi_addr_source;

const char *rbi_addr_source_name(rbi_addr_source s);

struct rbi_ruby_info {
	char version[32];       /* ruby_version, e.g. "3.3.8" */
	int major, minor, teeny;
	char description[256];  /* ruby_description */
	const char *image;      /* path of libruby (or of a static ruby) */
	char build_id[129];     /* hex, "" if none */
	uint64_t vm;            /* the rb_vm_t */
	rbi_addr_source vm_source;
	const char *vm_via;     /* symbol or function it came from */
	uint64_t symbols;       /* the global symbol table (IDs); 0 if not found */
	rbi_addr_source symbols_source;
	const char *symbols_via;
	const char *layout;     /* where struct layouts came from, e.g.
				   "dwarf", "table 3.3 (dwarf of 3.3.8)" */
	unsigned thread_count;  /* Ruby threads in all ractors */
	unsigned ractor_count;
};

/* Find Ruby in the target, read its version and locate and validate its VM.
   *OUT is borrowed from T.  Errors: RBI_NOT_RUBY, RBI_NO_LAYOUT (the
   message says how to supply DWARF), RBI_NO_VM, RBI_CORRUPT. */
int rbi_ruby_info(rbi_target *t, const struct rbi_ruby_info **out);

/* ---- Threads ------------------------------------------------------------- */

/* enum rb_thread_status, in Ruby's own numbering. */
typedef enum {
	RBI_THREAD_RUNNABLE = 0,        /* running or ready to run */
	RBI_THREAD_STOPPED = 1,         /* sleeping with a timeout */
	RBI_THREAD_STOPPED_FOREVER = 2, /* sleeping until woken (join, Queue#pop) */
	RBI_THREAD_KILLED = 3,          /* finished or being killed */
} rbi_thread_status;

/* "runnable", "stopped", "stopped_forever", "killed"; "unknown" otherwise. */
const char *rbi_thread_status_name(rbi_thread_status s);

/* One Ruby thread, as rbi_thread_foreach() found it.  The struct and its
   strings are valid only during the callback; copy what you keep. */
struct rbi_thread {
	unsigned number;        /* 1, 2, ... in the order Ruby lists threads,
				   ractor after ractor; stable while the
				   target's thread set does not change */
	uint64_t thread;        /* the rb_thread_t */
	uint64_t self;          /* the Thread object (a VALUE) */
	uint64_t ractor;        /* its rb_ractor_t; 0 before Ruby 3.0 */
	uint32_t ractor_id;     /* Ractor id (1 = main ractor); 0 before 3.0 */
	uint64_t ec;            /* th->ec: the execution context running on the
				   thread now (its current fiber's); 0 if none */
	uint64_t pthread;       /* native pthread_t; 0 if unknown */
	int32_t tid;            /* kernel thread id; 0 if unknown (a thread
				   not started, or M:N without its own) */
	rbi_thread_status status;
	const char *name;       /* Thread#name, raw bytes (untrusted: escape
				   before printing); NULL if nil or unreadable */
	int main;               /* non-zero: the VM's main thread */
	int gvl;                /* non-zero: holds its ractor's GVL now */
	int error;              /* RBI_OK, or why the thread could not be read;
				   then only NUMBER, THREAD and ERROR_MSG are
				   valid */
	const char *error_msg;  /* explanation when ERROR != RBI_OK, else "" */
};

/* Callback for each thread.  Returning non-zero stops the walk and makes
   rbi_thread_foreach() return that value. */
typedef int (*rbi_thread_fn)(const struct rbi_thread *th, void *arg);

/* Call FN for every Ruby thread of every ractor of T's VM.  A thread that
   cannot be read is still passed, with ERROR set.  Returns RBI_OK after the
   last thread, FN's non-zero return, or an error when the VM or its thread
   lists cannot be read (RBI_CORRUPT: a list that does not close).  FN may
   call rbi_frame_foreach() on the thread it is given. */
int rbi_thread_foreach(rbi_target *t, rbi_thread_fn fn, void *arg);

/* ---- Frames -------------------------------------------------------------- */

typedef enum {
	RBI_FRAME_RUBY = 1,     /* Ruby code (an iseq) */
	RBI_FRAME_CFUNC = 2,    /* a method written in C */
} rbi_frame_kind;

/* The control frame's type (VM_FRAME_MAGIC_* in its environment flags). */
typedef enum {
	RBI_FRAME_TYPE_UNKNOWN = 0,
	RBI_FRAME_TYPE_METHOD, RBI_FRAME_TYPE_BLOCK, RBI_FRAME_TYPE_CLASS, RBI_FRAME_TYPE_TOP,
	RBI_FRAME_TYPE_CFUNC, RBI_FRAME_TYPE_IFUNC, RBI_FRAME_TYPE_EVAL,
	RBI_FRAME_TYPE_RESCUE, RBI_FRAME_TYPE_DUMMY,
} rbi_frame_type;

/* "method", "block", "class", "top", "cfunc", "ifunc", "eval", "rescue",
   "dummy"; "unknown" otherwise. */
const char *rbi_frame_type_name(rbi_frame_type type);

/* One frame of a Ruby backtrace, innermost first, exactly the frames the
   target's own Thread#backtrace_locations would list.  Valid only during
   the callback, strings included; copy what you keep.  Strings are raw
   target bytes (untrusted: escape before printing); NULL when unknown. */
struct rbi_frame {
	size_t index;           /* 0 = the innermost frame (running now) */
	rbi_frame_kind kind;
	rbi_frame_type type;
	const char *label;      /* as Ruby 3.4 prints it, whatever the target's
				   version: "Foo::Bar#baz", "Foo.baz", "block in
				   Foo#bar", "block (2 levels) in <main>",
				   "Kernel#sleep".  On Ruby 3.2 class names are
				   not read (they hide in object shapes), so
				   methods are unqualified there ("baz", "block
				   in bar", "sleep").  NULL if unreadable (Ruby
				   prints "unknown method") */
	const char *own_label;  /* the label the target itself prints in
				   caller_locations: "baz", "block in bar",
				   "sleep" up to Ruby 3.3; LABEL from 3.4 */
	const char *base_label; /* the bare method name: "baz", "sleep" */
	const char *path;       /* source file (an iseq's path); for a C frame
				   that of the nearest Ruby frame below it, as
				   Ruby reports it.  NULL if none */
	int line;               /* source line of PATH; 0 if unknown */
	uint64_t cfp;           /* the rb_control_frame_t */
	uint64_t iseq;          /* its rb_iseq_t (Ruby frames), else 0 */
	uint64_t pc;            /* its pc (Ruby frames), else 0 */
	uint64_t cme;           /* the rb_callable_method_entry_t running, 0 if
				   none (top-level code, class bodies) */
	uint64_t self;          /* the receiver (a VALUE) */
};

/* Callback for each frame.  Returning non-zero stops the walk and makes
   rbi_frame_foreach() return that value. */
typedef int (*rbi_frame_fn)(const struct rbi_frame *frame, void *arg);

/* Call FN for the frames of thread TH (as passed to an rbi_thread_fn, or a
   copy of it: its THREAD, EC and STATUS are used), innermost first, at most MAX_FRAMES of them (0: all; the
   walk is always bounded by the thread's VM stack).  A thread that is
   starting or finishing has no frames: RBI_OK without any call.  Returns
   RBI_OK after the last frame, FN's non-zero return, or an error for this
   thread (RBI_CORRUPT: a frame that makes no sense, e.g. a live thread's
   stack changing under the walk; frames before it were delivered). */
int rbi_frame_foreach(rbi_target *t, const struct rbi_thread *th,
		      size_t max_frames, rbi_frame_fn fn, void *arg);

#ifdef __cplusplus
}
#endif
#endif
