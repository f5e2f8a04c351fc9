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
 *  - An object the caller owns is released with one verb, whatever made it
 *    (open, new, init, load): rbi_<object>_free(), NULL-safe, once.  Those
 *    are rbi_target_free, rbi_frame_cursor_free, rbi_heap_iter_free,
 *    rbi_sampler_free and rbi_profile_free.  (A memory backend's own
 *    close member is the backend's, not the caller's to call.)
 *  - Pointers returned by rbi_target_* getters are borrowed: valid until
 *    rbi_target_free() unless said otherwise.
 *  - Structs and sizes (the ABI rule).  A struct whose first member is
 *    `uint32_t size` is versioned by it: the caller sets it to sizeof(the
 *    struct) as its header has it (rbi_mem_ops, rbi_open_opts, rbi_sampler_opts,
 *    rbi_profile_view, rbi_record_opts, rbi_fiber_stats).  New members are
 *    only ever appended past the previous sizeof.  The library is tolerant
 *    both ways: from a program built against an older header (a smaller
 *    size) it reads only the members that size holds, and the members past
 *    it take their defaults (0, NULL, as documented for each); a newer
 *    program's larger size is accepted, the members this library does not
 *    know ignored.  An output struct with a size member is written only as
 *    far as its size reaches.  The same holds for a sized struct nested in
 *    another (rbi_record_opts.open).
 *    Structs without a size member that the caller allocates for the
 *    library to fill (rbi_value, rbi_native_info, rbi_sample_stats,
 *    rbi_heap_stats, rbi_heap_class), and the arrays of structs the library
 *    hands out, are frozen: their members never change, and anything new
 *    comes as a getter function.
 */
#ifndef RUBY_INTROSPECT_H
#define RUBY_INTROSPECT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "ruby-introspect-version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Version ------------------------------------------------------------- */

/* The version of the library running (RBI_VERSION_* are the header's, which
   a program was built with): "MAJOR.MINOR.PATCH", and its numbers through
   each non-NULL pointer.  A program built against a newer header than the
   library it runs with can tell, and not call what the library lacks.
   Each exported function carries the symbol version of the release that
   added it (LIBRUBY_INTROSPECT_MAJOR.MINOR; lib/libruby-introspect.sym),
   so the newest node is always the library's MAJOR.MINOR. */
const char *rbi_version(int *major, int *minor, int *patch);

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
	X(UNSUPPORTED, -21, "not supported by this backend or target")     \
	X(TORN,      -22, "the stack changed while it was read")             \
	X(THREAD_GONE, -23, "the thread has no kernel thread (exited)")       \
	X(BUSY,      -24, "traced by another process (a debugger)")

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
	union {
		uint64_t tp;    /* the thread pointer (x86-64's fs_base, glibc's
				   pthread_t there); 0 if unknown */
		uint64_t fs_base;       /* its first name (x86-64's), kept */
	};
};

/* A native thread's registers, numbered as DWARF numbers them for the
   machine: on x86-64 rax rdx rcx rbx rsi rdi rbp rsp r8-r15 rip are 0-16. */
#define RBI_REGS_MAX 40
struct rbi_registers {
	uint16_t machine;       /* ELF e_machine (EM_X86_64 = 62) */
	uint16_t count;         /* REG[0, COUNT) hold the values */
	uint64_t reg[RBI_REGS_MAX];
};

/* A signal as the kernel delivered it: the portable part of siginfo_t. */
struct rbi_signal {
	int signo;              /* SIGSEGV, SIGABRT...; 0: none */
	int code;               /* si_code: SEGV_MAPERR, SI_TKILL, SI_USER... */
	int32_t tid;            /* the thread that took it; 0 if unknown */
	int32_t sender_pid;     /* sent by a process (SI_USER, SI_TKILL,
				   SI_QUEUE): that process; else 0 */
	uint64_t addr;          /* the address that faulted, when HAS_ADDR */
	int has_addr;           /* non-zero: a fault (SIGSEGV, SIGBUS, SIGILL,
				   SIGFPE, SIGTRAP raised by the CPU) */
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
 * Members not marked optional must not be NULL.  Sized as the structs
 * above say ("Structs and sizes"): a member past the caller's SIZE is
 * NULL.  Up to LIBRUBY_INTROSPECT_0.7 the first member was a version
 * number instead (RBI_MEM_OPS_VERSION, 1 to 3); a program built then
 * still passes it, and it is read as the size of that version: 1 up to
 * CLOSE, 2 up to SIGNAL, 3 up to REGISTERS. */
struct rbi_mem_ops {
	uint32_t size;          /* sizeof(struct rbi_mem_ops) */
	uint32_t flags;         /* RBI_MEM_STATIC: bytes never change (a core),
				   so reads may be cached for the target's life.
				   RBI_MEM_CONCURRENT: read and read_batch may
				   run on several threads at once (a heap walk
				   then reads ahead on a second thread) */
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
	/* Called once, last, by rbi_target_free(). */
	void (*close)(void *be);
	/* Appended in 0.3.  Optional: the signal that ended the process (a core
	   the kernel wrote when it died) into *OUT: RBI_OK, or RBI_ITER_END
	   when none did (a live process, a gcore of a running one). */
	int (*signal)(void *be, struct rbi_signal *out);
	/* Appended in 0.4.  Optional: the registers of native thread TID into
	   *OUT: RBI_OK, or RBI_ITER_END when there is no such thread.  Called
	   only while that thread holds still: a core's always do, a debugger's
	   stopped process does, and the live backend's threads are stopped
	   by the library first.  NULL: no native frames (rbi_native_foreach). */
	int (*registers)(void *be, int32_t tid, struct rbi_registers *out);
};

#define RBI_MEM_STATIC 1u
#define RBI_MEM_CONCURRENT 2u

/* ---- Targets ------------------------------------------------------------- */

typedef struct rbi_target rbi_target;

struct rbi_open_opts {
	uint32_t size;          /* sizeof(struct rbi_open_opts) */
	const char *sysroot;    /* optional: where the target's files are
				   (a core from another machine or a chroot) */
	const char *exe;        /* optional: the core's executable */
	pid_t pid;              /* optional: the process id of a target opened
				   with rbi_target_open_ops (rbi_target_pid) */
	const char *ruby_version; /* optional: "X.Y.Z", the target's Ruby, for
				   a core whose libruby is not at hand (its
				   version string is in libruby's read-only
				   data, which cores leave out).  What the
				   target shows of its version wins; a
				   disagreement is a warning */
	void (*progress)(uint64_t done, uint64_t total, void *arg);
				/* optional: told about every quarter second
				   while a compressed core is decompressed
				   (DONE of TOTAL bytes; TOTAL 0 until the
				   core's headers are in), for a progress
				   line; never called for a core that opens
				   at once */
	void *progress_arg;
	const char *layout_cache; /* optional: the directory where struct
				   layouts read from DWARF are kept by
				   build-id; "" keeps none.  NULL: the
				   default, $XDG_CACHE_HOME/rbinspect/layouts
				   or ~/.cache/rbinspect/layouts, none when
				   RBI_NO_CACHE is set.  A file there is read
				   only if it and its directory belong to the
				   effective user and no one else may write
				   them */
};

/* Open a live process.  Never stops it.  Errors: RBI_NO_PROCESS, RBI_ZOMBIE,
   RBI_PERM (the message says how to get permission). */
int rbi_target_open_pid(pid_t pid, const struct rbi_open_opts *opts,
			rbi_target **out);

/* Open a core file.  Errors: RBI_NOT_ELF, RBI_NOT_CORE (also a core broken
   inside: bad program headers or notes, no memory segment, no thread),
   RBI_TRUNCATED. */
int rbi_target_open_core(const char *path, const struct rbi_open_opts *opts,
			 rbi_target **out);

/* Open memory served by OPS/BE.  On success the target owns BE and calls
   ops->close(BE) when closed; on failure the caller still owns it.  OPS is
   copied (as far as its SIZE reaches): it may go once the call returns.
   RBI_INVAL for an OPS without READ or REGION, or whose SIZE does not
   reach CLOSE. */
int rbi_target_open_ops(const struct rbi_mem_ops *ops, void *be,
			const struct rbi_open_opts *opts, rbi_target **out);

/* NULL-safe. */
void rbi_target_free(rbi_target *t);

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

/* Forget everything read from a live target; the next call re-reads.
   What cannot have changed is kept: while the process maps the same files
   at the same places, its images and the VM's location (the costly part
   of a first call).  RBI_GONE if the process has exited (or is a zombie) since it was
   opened: T stays valid (close it), but reads fail.  RBI_OK for a core.
   Pointers borrowed from T (rbi_ruby_info's) are invalid after it. */
int rbi_target_refresh(rbi_target *t);

/* The process id (live: the pid opened; core: the dumped pid). */
pid_t rbi_target_pid(const rbi_target *t);

/* Warnings collected while opening (for example a file on disk whose
   build-id differs from the one the core recorded).  INDEX from 0; NULL past
   the last. */
const char *rbi_target_warning(const rbi_target *t, size_t index);

/* The tid this process's pid namespace gives the live target's thread TID
   (rbi_thread.tid: the number the target itself sees), so that a thread
   in a container can be matched with top -H or /proc here: TID itself
   when the target shares our pid namespace, its task's NSpid otherwise.
   0 when it cannot be told (a core) or TID is none of the target's tasks
   (gone, or another process's). */
int32_t rbi_target_host_tid(rbi_target *t, int32_t tid);

/* ---- How the process died ------------------------------------------------ */

/* "SIGSEGV"; NULL for a number that names no signal. */
const char *rbi_signal_name(int signo);
/* si_code's name for SIGNO: "SEGV_MAPERR", "SI_TKILL", "BUS_ADRERR"...;
   NULL if it has none. */
const char *rbi_signal_code_name(int signo, int code);

struct rbi_crash {
	int32_t pid;            /* the process that died */
	struct rbi_signal signal;       /* the signal that ended the process;
					   SIGNAL.TID is the thread that took it */
	/* A signal whose handler that thread was running when it died,
	   from the kernel's own signal frame on its stack (checked, never
	   guessed); HANDLED.SIGNO is 0 when there is none.  Ruby's crash
	   handler prints its [BUG] report for SIGSEGV, SIGBUS, SIGILL or
	   SIGFPE and then aborts (or raises the signal again): the core's
	   signal is then SIGABRT, and this is the signal the report names. */
	struct rbi_signal handled;
	uint64_t handled_frame; /* where that signal frame is */
	int handler_ended_it;   /* non-zero: that handler ended the process
				   itself (it aborted, or raised a signal
				   again): Ruby's [BUG] handler does, for
				   SIGSEGV, SIGBUS, SIGILL and SIGFPE */
};

/* How T's process died: *OUT (borrowed from T) when its core was written
   because a signal killed it.  RBI_ITER_END when no signal did: a live
   process, a core of a running one (gcore), a backend that cannot tell. */
int rbi_target_crash(rbi_target *t, const struct rbi_crash **out);

/* C in one line, into BUF (CAP bytes, NUL-terminated, cut to fit):
   "SIGSEGV (SEGV_MAPERR) at 0x0; Ruby's [BUG] handler then aborted the
   process (SIGABRT, SI_TKILL)", "SIGTERM (SI_USER) sent by pid 77".
   Returns BUF. */
const char *rbi_crash_describe(const struct rbi_crash *c, char *buf, size_t cap);

/* ---- Which Ruby, and where its VM is ------------------------------------- */

/* Where an address came from. */
typedef enum {
	RBI_ADDR_NONE = 0,
	RBI_ADDR_SYMBOL,        /* an ELF symbol (.dynsym or .symtab) */
	RBI_ADDR_DWARF,         /* a DWARF variable */
	RBI_ADDR_CODE,          /* decoded from machine code of an exported function */
	RBI_ADDR_SCAN,          /* found by scanning libruby's data for what
				   validates (a core without libruby's files) */
} rbi_addr_source;

const char *rbi_addr_source_name(rbi_addr_source s);

struct rbi_ruby_info {
	char version[32];       /* ruby_version, e.g. "3.3.8"; "3.3" when only
				   the family is known */
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
	unsigned thread_count;  /* Ruby threads in all ractors; counted again
				   at every rbi_ruby_info() of a live target */
	unsigned ractor_count;
	const char *version_via; /* where VERSION came from: "ruby_version"
				   (the target's own string), "file name
				   libruby-3.1.so.3.1.2", "path .../ruby/3.1.0/
				   (patch release unknown)", "--ruby-version" */
};

/* Find Ruby in the target, read its version and locate and validate its VM.
   *OUT is borrowed from T.  Errors: RBI_NOT_RUBY, RBI_NO_LAYOUT (the
   message says how to supply DWARF), RBI_NO_VM, RBI_CORRUPT. */
int rbi_ruby_info(rbi_target *t, const struct rbi_ruby_info **out);

/* ---- Ruby processes on this machine -------------------------------------- */

/* One Ruby process, as rbi_process_foreach() found it without attaching.
   Valid only during the callback, strings included. */
struct rbi_process {
	pid_t pid;              /* as this machine numbers it */
	pid_t ns_pid;           /* as its own pid namespace does (PID when it
				   shares ours) */
	int container;          /* non-zero: another pid namespace than ours */
	char version[16];       /* "3.4.11" from libruby's file name; "3.4"
				   when only a library directory tells the
				   family; "" unknown (rbi_ruby_info reads it) */
	const char *image;      /* libruby, or the executable of a static
				   Ruby, as its maps name it */
	uint64_t uptime_ms;     /* since it started; 0 unknown */
	uint64_t rss_bytes;     /* resident memory; 0 unknown */
	unsigned threads;       /* the kernel's threads (Ruby's and others) */
	const char *cmdline;    /* its arguments joined by spaces: raw bytes
				   (untrusted: escape before printing) */
	size_t cmdline_len;
};

typedef int (*rbi_process_fn)(const struct rbi_process *p, void *arg);

/* Call FN for every Ruby process this one may inspect, in /proc's order:
   those whose /proc/PID/maps can be read (the kernel's ptrace access
   check) and map libruby or an executable named like ruby.  Nothing is
   attached and no process memory is read.  Returns RBI_OK, FN's non-zero
   return, or an error (RBI_SYSTEM: no /proc). */
int rbi_process_foreach(rbi_process_fn fn, void *arg);

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
				   not started, or M:N without its own, or
				   none of a live target's threads): the C
				   library's record first, Ruby's a hint */
	rbi_thread_status status;
	const char *name;       /* Thread#name, raw bytes (untrusted: escape
				   before printing); NULL if nil or unreadable */
	int main;               /* non-zero: the VM's main thread */
	int gvl;                /* non-zero: holds its ractor's GVL now */
	int error;              /* RBI_OK, or why the thread could not be read;
				   then only NUMBER, THREAD and ERROR_MSG are
				   valid */
	const char *error_msg;  /* explanation when ERROR != RBI_OK, else "" */
	int gvl_wait;           /* non-zero: waits for its ractor's GVL (in its
				   queue, or handed it and not yet running);
				   0 also where the layout lacks the queue */
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
	RBI_FRAME_GC = 3,       /* the VM collecting garbage (samples only) */
	RBI_FRAME_OTHER = 4,    /* made up by a profile view: a process, a
				   thread, a thread state; by a sampler:
				   "(moving)", the leaf of a stack whose
				   inner part moved while it was read */
	RBI_FRAME_NATIVE = 5,   /* a machine frame (samples of a sampler with
				   RBI_SAMPLER_NATIVE only) */
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
	uint64_t cfunc;         /* C frames: the C function that implements
				   the method, else 0 */
	int vm_entry;           /* non-zero: a Ruby frame that a run of the
				   interpreter loop began with (a C function
				   called into Ruby, a thread or the program
				   started): the outermost Ruby frame of that
				   run (VM_FRAME_FLAG_FINISH) */
	const char *line_error; /* LINE is 0 because the line table gave a
				   line the VM cannot have (corrupt memory):
				   why; NULL otherwise */
	uint64_t label_cut;     /* LABEL holds the start of a longer label
				   (names are read up to 4 KiB): the bytes
				   left out; 0 when it is whole */
	uint64_t path_cut;      /* the same for PATH (4 KiB) */
	uint64_t own_label_cut; /* the same for OWN_LABEL */
	uint64_t base_label_cut;        /* the same for BASE_LABEL */
};

/* Callback for each frame.  Returning non-zero stops the walk and makes
   rbi_frame_foreach() return that value. */
typedef int (*rbi_frame_fn)(const struct rbi_frame *frame, void *arg);

/* Call FN for the frames of thread TH (as passed to an rbi_thread_fn, or a
   copy of it: its THREAD, EC and STATUS are used), innermost first, at most MAX_FRAMES of them (0: all; the
   walk is always bounded by the thread's VM stack).  A thread that is
   starting or finishing has no frames: RBI_OK without any call.  Returns
   RBI_OK after the last frame, FN's non-zero return, or an error for this
   thread (RBI_CORRUPT: a frame that makes no sense, frames before it
   were delivered; RBI_TORN: a live thread's stack that kept changing
   between two reads of it, none delivered). */
int rbi_frame_foreach(rbi_target *t, const struct rbi_thread *th,
		      size_t max_frames, rbi_frame_fn fn, void *arg);

/* ---- Fibers -------------------------------------------------------------- */

/* A fiber's state, as Fiber#alive? and the VM see it. */
typedef enum {
	RBI_FIBER_CREATED = 0,          /* made, never resumed: no frames */
	RBI_FIBER_RESUMED = 1,          /* running, or waiting for the fiber it
					   resumed to yield back */
	RBI_FIBER_SUSPENDED = 2,        /* in Fiber.yield (or transferred away) */
	RBI_FIBER_TERMINATED = 3,       /* finished: no frames */
} rbi_fiber_status;

/* "created", "resumed", "suspended", "terminated"; "unknown" otherwise. */
const char *rbi_fiber_status_name(rbi_fiber_status s);

/* One fiber.  Valid during the callback. */
struct rbi_fiber {
	size_t index;           /* 0, 1, ... in the order delivered */
	uint64_t fiber;         /* the rb_fiber_t */
	uint64_t self;          /* the Fiber object (a VALUE); 0 for a root
				   fiber Ruby made no object for */
	uint64_t ec;            /* its execution context: the frames */
	uint64_t thread;        /* the rb_thread_t it belongs to; 0 unknown */
	unsigned thread_number; /* that thread's rbi_thread.number; 0 if it is
				   no Ruby thread alive now */
	rbi_fiber_status status;
	int root;               /* its thread's root fiber */
	int current;            /* the fiber its thread runs now */
	int chain;              /* its place in its thread's chain of
				   resumes: 0 the current fiber, 1 the fiber
				   that resumed it, ...; -1 not in the chain */
	uint64_t resumed_by;    /* the fiber that resumed it and waits for
				   it to yield (rb_fiber_t), 0 if none */
	const char *enumerator; /* an external enumerator's fiber (one that
				   Enumerator#next started: its outermost frame
				   is the C method Enumerator#each): the method
				   it iterates, the label of the frame inside
				   that one ("Array#each", "Enumerable#each_slice",
				   "Enumerator::Generator#each" for
				   Enumerator.new); else NULL.  Raw bytes */
};

typedef int (*rbi_fiber_fn)(const struct rbi_fiber *f, void *arg);

/* What rbi_fiber_foreach found. */
struct rbi_fiber_stats {
	uint32_t size;          /* sizeof(struct rbi_fiber_stats), set by
				   the caller */
	size_t found;           /* fibers found */
	size_t delivered;       /* of which passed to FN (MAX_FIBERS) */
	int approximate;        /* a live heap changed during the search:
				   fibers made or freed meanwhile may be
				   missing or stale */
};

/* Call FN for every fiber of T's VM: first each thread's chain (the
   fiber it runs now, the fiber that resumed that one, and so on; then
   its root fiber if that is not in the chain), thread after thread in
   rbi_thread_foreach's order; then every other fiber (suspended,
   created, terminated: Ruby keeps no list of them, they are found in
   the heap), grouped by the thread they belong to in the same order,
   those of threads gone last.  At most MAX_FIBERS (0: all).  STATS (may
   be NULL) is filled in at the end.  RBI_NO_LAYOUT when the layout has
   no fiber fields (a Ruby without its DWARF whose built-in table lacks
   them).  Returns RBI_OK, FN's non-zero return, or an error. */
int rbi_fiber_foreach(rbi_target *t, size_t max_fibers, rbi_fiber_fn fn, void *arg,
		      struct rbi_fiber_stats *stats);

/* The frames of fiber F (as passed to an rbi_fiber_fn, or a copy), as
   rbi_frame_foreach gives a thread's: read from the fiber's own execution
   context. */
int rbi_fiber_frame_foreach(rbi_target *t, const struct rbi_fiber *f, size_t max_frames,
			    rbi_frame_fn fn, void *arg);

/* The thread to pass to rbi_frame_foreach or rbi_local_foreach for F's
   frames: F's thread, with F's execution context. */
void rbi_fiber_as_thread(const struct rbi_fiber *f, struct rbi_thread *out);

/* ---- Native frames ------------------------------------------------------ */

/* One native (machine) frame of a thread, innermost first, unwound with
   the call frame information of its images (.eh_frame, .debug_frame).
   Strings are borrowed: valid during the callback. */
struct rbi_native_frame {
	size_t index;           /* 0 = the innermost */
	uint64_t pc;            /* where it runs (the innermost frame, one a
				   signal interrupted) or will return to */
	const char *module;     /* the image's path as the target names it;
				   NULL: no image maps PC (JIT code, garbage) */
	uint64_t module_offset; /* the ELF address of the instruction PC runs
				   or returns from, as `addr2line -e MODULE`
				   takes it (PC - 1 for a return address) */
	const char *function;   /* from .symtab, .dynsym or DWARF, only when it
				   covers the address; NULL: unknown (show
				   MODULE+0xMODULE_OFFSET, never a guess) */
	uint64_t function_offset; /* PC - the function's start (FUNCTION set) */
	const char *file;       /* DWARF: the source file; NULL without */
	int line;               /* DWARF: its line; 0 without */
	int inlined;            /* non-zero: a function inlined into the next
				   frame, at the same PC (as eu-stack -i and gdb
				   list them) */
	int signal_trampoline;  /* non-zero: the C library's return-from-signal
				   code: the frame after it was interrupted by a
				   signal (gdb's "<signal handler called>") */
	uint64_t function_start; /* the ELF address (as MODULE_OFFSET) where
				   the function PC is in starts, from a symbol or,
				   without one, the call frame information; 0:
				   unknown.  Every frame of one function has it,
				   named or not: what a profile groups by */
	int found_by_scan;      /* non-zero: the frame under it runs code
				   without call frame information (musl's
				   libc), and this one was found by searching
				   the stack for a return address after a
				   call; frames in between are not listed */
};

/* One line of a mixed stack: a native frame, a Ruby frame, or both (a C
   method on the native frame of its C function). */
struct rbi_mixed_frame {
	size_t index;           /* 0 = the innermost */
	const struct rbi_native_frame *native;  /* NULL: a Ruby frame that the
						   interpreter frame after it
						   runs */
	const struct rbi_frame *ruby;           /* NULL: native only */
};

typedef int (*rbi_mixed_fn)(const struct rbi_mixed_frame *f, void *arg);

/* How a mixed stack was read.
   Frozen ("Structs and sizes" above): anything new comes as a getter. */
struct rbi_native_info {
	const char *unmerged;   /* NULL: merged; else why the two stacks are
				   listed one after the other (static until
				   the next call from this thread) */
	uint64_t stopped_ns;    /* how long a live thread was held stopped to
				   read it; 0 for a core */
	int cut;                /* non-zero: the native stack went on past the
				   frames rbi reads (1024) */
};

/* Call FN for thread TH's native frames merged with its Ruby frames,
   innermost first: each run of Ruby frames goes right before the native
   frame of the interpreter loop that runs it, and a C method on its C
   function's frame.  Where the two stacks do not fit together (a frame
   in code without call frame information, JIT code, a stack cut short),
   nothing is interleaved: FN gets every native frame, then every Ruby
   frame, and INFO->unmerged says why.  A live target's thread is stopped
   (ptrace) while both its stacks are read, then let go at once; a thread
   that cannot be is an error (RBI_PERM: how to allow ptrace; RBI_BUSY: a
   debugger traces it; RBI_UNSUPPORTED: no registers from this backend;
   RBI_THREAD_GONE: the thread has exited, or its kernel thread id is not
   one of the process's: nothing else is touched, and the process's other
   threads can still be read).  At
   most MAX_FRAMES lines (0: all; the walk is bounded anyway).  INFO (may
   be NULL) is filled in before the first call of FN.  Returns RBI_OK, FN's non-zero return, or an error. */
int rbi_native_foreach(rbi_target *t, const struct rbi_thread *th,
		       size_t max_frames, rbi_mixed_fn fn, void *arg,
		       struct rbi_native_info *info);

/* ---- Frames one at a time ----------------------------------------------- */

/* A pull cursor over a thread's frames, as libunwind's unw_step steps, for
 * a caller that cannot hand the library a callback (a binding, a crash
 * reporter, a loop in a debugger command).  It gives exactly the frames
 * rbi_frame_foreach gives, or with RBI_FRAMES_NATIVE the lines
 * rbi_native_foreach gives, in the same order: the cursor runs that walk
 * once, when it is opened (a live thread's stack read twice until two
 * reads agree, or held stopped while its native frames are unwound, as
 * the callbacks do), and keeps the frames.  Stepping never reads the
 * target, and the thread is not held between steps.
 *
 * Usage:
 *      rbi_frame_cursor *c;
 *      const struct rbi_frame *f;
 *      int rc = rbi_thread_frames_open(t, th, 0, 0, &c);
 *      while (rc == RBI_OK && (rc = rbi_frame_cursor_next(c, &f)) == RBI_OK)
 *              printf("%s:%d:in '%s'\n", f->path, f->line, f->label);
 *      if (rc == RBI_ITER_END) rc = RBI_OK;
 *      rbi_frame_cursor_free(c);
 */
typedef struct rbi_frame_cursor rbi_frame_cursor;

/* Flags for rbi_thread_frames_open(). */
#define RBI_FRAMES_NATIVE 1u    /* native frames merged with the Ruby ones
				   (rbi_native_foreach): step with
				   rbi_frame_cursor_next_mixed */

/* Open a cursor over thread TH's frames (as rbi_frame_foreach takes it:
   from an rbi_thread_fn, a copy, or rbi_fiber_as_thread for a fiber's),
   at most MAX_FRAMES of them (0: all).  Errors: those of
   rbi_frame_foreach (or of rbi_native_foreach with RBI_FRAMES_NATIVE)
   when the walk failed before its first frame, RBI_INVAL for unknown
   FLAGS.  A walk that failed after some frames (RBI_CORRUPT) opens: its
   error is what the step after its last frame returns.  *OUT is the
   caller's: free it with rbi_frame_cursor_free().  T must outlive it. */
int rbi_thread_frames_open(rbi_target *t, const struct rbi_thread *th, unsigned flags,
			   size_t max_frames, rbi_frame_cursor **out);

/* The next Ruby frame into *OUT, innermost first (with RBI_FRAMES_NATIVE:
   the Ruby frame of the next line that has one, native-only lines passed
   over).  *OUT and its strings are the cursor's: valid until the next
   step or rbi_frame_cursor_free(), whichever comes first; copy what you
   keep.  RBI_ITER_END after the last frame, or the walk's error when it
   ended in one (rbi_thread_frames_open). */
int rbi_frame_cursor_next(rbi_frame_cursor *c, const struct rbi_frame **out);

/* The next line of the stack into *OUT, as an rbi_mixed_fn gets it: with
   RBI_FRAMES_NATIVE a native frame, a Ruby frame or both; without, every
   line is a Ruby frame (NATIVE NULL).  Shares its position with
   rbi_frame_cursor_next; lifetime and returns as rbi_frame_cursor_next's. */
int rbi_frame_cursor_next_mixed(rbi_frame_cursor *c, const struct rbi_mixed_frame **out);

/* How a cursor opened with RBI_FRAMES_NATIVE read the stacks (borrowed
   from C: valid until it is closed); NULL for a cursor without. */
const struct rbi_native_info *rbi_frame_cursor_native_info(const rbi_frame_cursor *c);

/* NULL-safe.  Frees the cursor and every frame it holds. */
void rbi_frame_cursor_free(rbi_frame_cursor *c);

/* ---- Values and local variables ------------------------------------------ */

/* What a Ruby VALUE is, as far as rbi decodes it. */
typedef enum {
	RBI_VALUE_UNREADABLE = 0, /* not decoded: ERROR says why */
	RBI_VALUE_NIL,
	RBI_VALUE_TRUE,
	RBI_VALUE_FALSE,
	RBI_VALUE_INTEGER,      /* a Fixnum: INTEGER (a Bignum is an OBJECT) */
	RBI_VALUE_FLOAT,        /* a flonum or a heap Float: REAL */
	RBI_VALUE_SYMBOL,       /* static or dynamic: its name in BYTES */
	RBI_VALUE_STRING,       /* BYTES, cut to the caller's limit */
	RBI_VALUE_OBJECT,       /* anything else: CLASS_NAME and RAW (its address) */
	RBI_VALUE_UNDEF,        /* Qundef: a slot not holding a value */
} rbi_value_kind;

/* "unreadable", "nil", "true", "false", "integer", "float", "symbol",
   "string", "object", "undef"; "unknown" otherwise. */
const char *rbi_value_kind_name(rbi_value_kind kind);

/* One decoded VALUE.  Strings are raw target bytes (untrusted: escape
   before printing), NUL-terminated, and borrowed: see the function that
   filled the struct for how long they live.
   Frozen ("Structs and sizes" above): anything new comes as a getter. */
struct rbi_value {
	rbi_value_kind kind;
	uint64_t raw;           /* the VALUE as the target holds it */
	int64_t integer;        /* INTEGER */
	double real;            /* FLOAT */
	const char *bytes;      /* SYMBOL: its name; STRING: its bytes; for an
				   OBJECT that is a class or module: its
				   path ("Foo::Bar"); else NULL */
	size_t len;             /* bytes in BYTES (it may hold NULs) */
	uint64_t full_len;      /* STRING: the String's whole length (more
				   than LEN when BYTES was cut) */
	int truncated;          /* non-zero: BYTES was cut */
	const char *class_name; /* the class ("Integer", "Foo::Bar"); NULL if
				   it cannot be named (anonymous classes;
				   Ruby 3.2, whose class names are not read) */
	unsigned type;          /* heap objects: Ruby's T_xxx type
				   (ruby_value_type: 0x01 T_OBJECT, 0x05
				   T_STRING, ...); 0 for immediates */
	int error;              /* UNREADABLE: why (a negative rbi_status) */
	const char *error_msg;  /* UNREADABLE: explanation; else "" */
};

/* Decode VALUE.  BUF (CAP bytes, the caller's) holds every string OUT
   points to: the class name first, then the Symbol or String bytes, cut to
   what fits (then OUT->truncated is set); 4096 bytes show any class name
   and the first few KiB of a String.  A value that cannot be read (a
   pointer to garbage, a freed object) gives its error with OUT->kind
   RBI_VALUE_UNREADABLE, OUT->raw set and OUT->error_msg the text of
   rbi_errmsg() (valid until this thread's next failing call). */
int rbi_value_read(rbi_target *t, uint64_t value, char *buf, size_t cap,
		   struct rbi_value *out);

/* One local variable of a frame, as rbi_local_foreach() found it.  Valid
   only during the callback, strings included. */
struct rbi_local {
	unsigned level;         /* 0: the frame's own scope; 1: the scope
				   around it (a block's method or outer
				   block), and so on out to the method */
	size_t index;           /* position in that scope's local table */
	const char *name;       /* the variable's name (raw bytes); NULL if
				   its ID has none we can read */
	int internal;           /* non-zero: not a variable Ruby's
				   local_variables lists (anonymous *, **, &
				   and ... parameters, compiler temporaries) */
	struct rbi_value value;
	int argument;           /* 1: a parameter of its scope's method or
				   block (Method#parameters lists it); 0: not;
				   -1: unknown (the Ruby's built-in layout has
				   no iseq parameter size: read its DWARF) */
};

/* Callback for each local.  Returning non-zero stops the walk and makes
   rbi_local_foreach() return that value. */
typedef int (*rbi_local_fn)(const struct rbi_local *local, void *arg);

/* Call FN for the local variables of FRAME (as passed to an rbi_frame_fn,
   or a copy of it: its KIND, CFP and ISEQ are used), the frame's own
   first, then for a block those of the scopes around it out to its
   method (what binding.local_variables lists there).  Names come from
   each iseq's local table, values from its environment.  A String value
   is cut to MAX_STRING bytes (0: 256).  A C frame has none: RBI_OK without
   any call.  A live target may have moved on since FRAME was read: a
   control frame that no longer runs FRAME's iseq gives RBI_CORRUPT (walk
   the frames again).  Errors: RBI_LAYOUT when the Ruby's iseq body layout
   has no local table (read its DWARF), RBI_CORRUPT. */
int rbi_local_foreach(rbi_target *t, const struct rbi_frame *frame,
		      size_t max_string, rbi_local_fn fn, void *arg);

/* ---- Names and members: a debugger's `p EXPR` ---------------------------- */

/* The VALUE that NAME denotes in FRAME (as passed to an rbi_frame_fn, or a
   copy), into *VALUE, as Ruby reads the name there: "self" is the frame's
   receiver; "@name" an instance variable of self (an Object's, a Class's
   or a Module's); "$name" a global variable; a capitalized word or path
   ("Foo", "Foo::BAR", "::Foo") a constant, its first name resolved as the
   frame's code reads it (the own constants of the class and module bodies
   around the code, innermost first, then the ancestors of the innermost,
   then Object's; a path from "::" and a C frame's from Object), each
   later one through the ancestors of the one before; any other word a local
   variable of the frame or of a scope around it, the innermost first (a
   block's variable shadows its method's).  Decode it with
   rbi_value_read().  Errors: RBI_INVAL for a name that is not there (the
   message lists the locals, ivars or constants that are),
   RBI_UNSUPPORTED for what this Ruby or this value does not let us read
   (ivars of a String's or another non-Object self, or on Ruby 3.2; a
   virtual global such as $~ whose value a C function computes; the
   global table of a Ruby without symbols whose code does not show it),
   and rbi_local_foreach's. */
int rbi_frame_lookup(rbi_target *t, const struct rbi_frame *frame,
		     const char *name, uint64_t *value);

/* Callback for each name rbi_frame_names() finds.  Returning non-zero
   stops the walk and makes rbi_frame_names() return that value. */
typedef int (*rbi_name_fn)(const char *name, void *arg);

/* Call FN for the names rbi_frame_lookup() can read in FRAME that are of
   KIND: '@' the instance variables of self (as rbi_frame_lookup reads
   them), '$' the global variables (virtual ones included), 'A' the
   constants the frame's code reads by their bare names (its lexical
   scope's, then the ancestors', then Object's: a name may come more than
   once).  For a debugger's completion.  Errors: RBI_INVAL for another
   KIND, and rbi_frame_lookup's for reading those of that kind. */
int rbi_frame_names(rbi_target *t, const struct rbi_frame *frame, char kind,
		    rbi_name_fn fn, void *arg);

/* VALUE[INDEX] of an Array, into *OUT: INDEX < 0 counts from the end, and
   past either end it is nil, as Array#[].  RBI_INVAL if VALUE is no
   Array. */
int rbi_value_at(rbi_target *t, uint64_t value, int64_t index, uint64_t *out);

/* VALUE.MEMBER, into *OUT, for the members that need no method call:
   "class" of a heap object (its real class: no singleton class), "length"
   and "size" of an Array and "bytesize" of a String (Integers), and "@NAME",
   an instance variable of an Object, a Class or a Module (RBI_INVAL if it
   has none of that name, RBI_UNSUPPORTED for another type, as
   rbi_frame_lookup's "@name" of self).  RBI_INVAL for anything else, with
   a message naming what is read. */
int rbi_value_member(rbi_target *t, uint64_t value, const char *member,
		     uint64_t *out);

/* ---- Sampling ------------------------------------------------------------ */

/* A sampler reads the Ruby stacks of every thread of a live target, over and
   over, without stopping it (unless asked to).  It keeps what it decoded
   (frames by iseq and pc, labels by method entry, strings by address) so a
   repeated stack costs a few system calls and hash lookups.  A stack that
   moves while it is read is detected (the execution context and the frames
   are read again afterwards and must not have changed) and read again.  If
   it keeps moving, the outer part that held still (the frames beneath the
   change, the same in both reads) is delivered under a made-up leaf frame,
   "(moving)" (RBI_FRAME_OTHER): the time is the callers' all the same, the
   code above them unknown.  One of which nothing held still is counted as
   torn and delivered without frames: never as frames that were not
   there. */

/* What a thread was doing when it was sampled. */
typedef enum {
	RBI_STATE_GVL = 0,      /* holds its ractor's GVL: running Ruby code */
	RBI_STATE_RUNNING = 1,  /* runnable and on a CPU without the GVL: C
				   code that released it (zlib, bcrypt ...) */
	RBI_STATE_WAITING = 2,  /* runnable, off CPU, without the GVL and not
				   in its queue (or its queue unknown: a Ruby
				   whose layout lacks it): waiting for the GVL
				   or blocked in I/O */
	RBI_STATE_SLEEPING = 3, /* sleep, join, Queue#pop, Mutex#lock ... */
	RBI_STATE_UNKNOWN = 4,  /* runnable without the GVL, OS state unknown
				   (no kernel thread id): counted as active */
	RBI_STATE_GVL_WAIT = 5, /* in its ractor's GVL queue: ready to run
				   Ruby code, waiting for another thread to
				   let the GVL go (after a call that released
				   it, or its time slice) */
} rbi_sample_state;

/* "gvl", "running", "waiting", "sleeping", "unknown", "gvl-wait". */
const char *rbi_sample_state_name(rbi_sample_state s);
/* WAITING and SLEEPING are idle; the others are active (GVL_WAIT: a wait
   the thread does not choose, shown in every profile of wall time). */
int rbi_sample_state_idle(rbi_sample_state s);

/* One frame of a sampled stack.  Interned by whoever hands it out (a
   sampler, a profile): the same frame is the same pointer, valid until that
   object is freed.  Strings are raw target bytes (escape before printing). */
struct rbi_sample_frame {
	uint32_t id;            /* 0, 1, 2 ... dense, in order of first sight */
	rbi_frame_kind kind;    /* RUBY, CFUNC, GC (sampler); OTHER (views,
				   a sampler's "(moving)") */
	const char *label;      /* as rbi_frame.label; never NULL: an unreadable
				   one is "(unknown)" */
	const char *path;       /* Ruby frames: the iseq's path; NULL for C
				   methods, GC and made-up frames */
	int line;               /* Ruby frames: the line running; else 0 */
	int first_line;         /* Ruby frames: the iseq's first line; else 0 */
};

/* One thread's stack at one moment. */
struct rbi_sample {
	pid_t pid;
	uint64_t time_ns;       /* CLOCK_MONOTONIC, when the thread was read */
	unsigned thread_number; /* as rbi_thread.number */
	uint64_t thread;        /* the rb_thread_t */
	int32_t tid;            /* kernel thread id (the target's namespace); 0
				   if unknown */
	const char *thread_name;        /* NULL if none */
	int main;               /* the VM's main thread */
	rbi_sample_state state;
	int gc;                 /* the VM was collecting garbage (set on the
				   thread holding the GVL; its stack then ends
				   in an RBI_FRAME_GC frame, "(garbage
				   collection)", and above it, where the layout
				   tells, another: "(marking)", "(sweeping)"
				   or "(compacting)") */
	int status;             /* RBI_OK: FRAMES is the stack (or the part
				   of it that held still, under a "(moving)"
				   leaf); RBI_TORN: nothing of it held still
				   while it was read, no frames; else an
				   error, no frames */
	int truncated;          /* deeper than max_frames: FRAMES holds the
				   innermost max_frames */
	size_t nframes;
	const struct rbi_sample_frame *const *frames;   /* outermost first */
	/* With RBI_SAMPLER_NATIVE (else 0 and NULL): */
	int native;             /* non-zero: FRAMES are the native frames merged
				   with the Ruby ones (rbi_native_foreach) */
	const char *native_unmerged;    /* NATIVE 0: why FRAMES hold the Ruby
				   frames only (the stacks did not fit, or the
				   thread could not be unwound) */
	uint64_t stopped_ns;    /* how long the thread was held stopped */
	uint64_t fiber;         /* the fiber the thread ran (rb_fiber_t, as
				   rbi_fiber.fiber): FRAMES are its stack; 0
				   if unknown */
	int root_fiber;         /* non-zero: FIBER is the thread's root fiber */
	uint64_t weight_ns;     /* the time this sample stands for: the time
				   since the sampler's previous tick (since it
				   was made, for the first; in
				   rbi_profile_record, less the periods a
				   late tick missed); with
				   RBI_SAMPLER_CPU the CPU time the thread used
				   since then (rbi_profile_add takes 0 as
				   one period of the profile's "rate") */
};

/* Callback for each thread of a sample.  Valid only during the call, except
   the frames, which live as long as their sampler.  Non-zero stops. */
typedef int (*rbi_sample_fn)(const struct rbi_sample *s, void *arg);

/* Sampling-quality figures.  A sampler counts the first group; a recording
   (rbi_profile_record) adds LATE and MISSED and sums its samplers.  Every
   tick due ends as one of: a tick taken (SAMPLES), each thread of it a
   stack delivered (STACKS), an idle thread skipped (IDLE) or a stack lost
   (ERRORS, TORN); or a tick missed (MISSED).
   Frozen from LIBRUBY_INTROSPECT_0.7 on, which appended MISSED ("Structs
   and sizes" above): anything new comes as a getter. */
struct rbi_sample_stats {
	uint64_t samples;       /* rbi_sampler_sample calls (ticks) */
	uint64_t stacks;        /* thread stacks delivered */
	uint64_t idle;          /* idle threads not read (no RBI_SAMPLER_IDLE;
				   with RBI_SAMPLER_CPU: off the CPU) */
	uint64_t errors;        /* thread stacks lost to errors */
	uint64_t torn;          /* thread stacks lost: nothing of them held
				   still under every read (those of which a
				   part did are STACKS, "(moving)" leaf) */
	uint64_t retries;       /* reads redone because the stack moved */
	uint64_t rescans;       /* full walks of the thread lists */
	uint64_t total_ns;      /* time spent in rbi_sampler_sample ... */
	uint64_t max_ns;        /* ... and the longest call */
	uint64_t late;          /* ticks taken more than a period late */
	uint64_t missed;        /* ticks not taken: the periods a late tick
				   came after it was due */
};

typedef struct rbi_sampler rbi_sampler;

#define RBI_SAMPLER_IDLE  1u    /* also read idle threads' stacks */
#define RBI_SAMPLER_PAUSE 2u    /* stop the process (ptrace) while sampling */
#define RBI_SAMPLER_NATIVE 4u   /* native frames merged with the Ruby ones:
				   each sampled thread is stopped (ptrace) while
				   its stacks are read, about a millisecond; not
				   with RBI_SAMPLER_PAUSE */
#define RBI_SAMPLER_CPU 8u      /* CPU time: read a thread only if it ran on a
				   CPU since the previous tick, whatever Ruby
				   says it does, and weigh its sample by that
				   CPU time (/proc/PID/task/TID/schedstat);
				   without it every tick weighs its interval
				   (wall time) */

struct rbi_sampler_opts {
	uint32_t size;          /* sizeof(struct rbi_sampler_opts) */
	uint32_t flags;         /* RBI_SAMPLER_* */
	size_t max_frames;      /* per stack; 0: all (bounded by the VM stack) */
};

/* A sampler for the live target T (borrowed: T must outlive it).  Locates
   the VM (rbi_ruby_info's errors).  RBI_UNSUPPORTED for a core.  With
   RBI_SAMPLER_PAUSE the process is attached with ptrace (PTRACE_SEIZE: it
   keeps running) and stopped only inside rbi_sampler_sample; RBI_PERM if
   it is already traced or ptrace is not allowed.  RBI_SAMPLER_NATIVE
   checks at once that a thread can be stopped (RBI_PERM, RBI_UNSUPPORTED
   as rbi_native_foreach); RBI_INVAL with RBI_SAMPLER_PAUSE.
   RBI_SAMPLER_CPU: RBI_UNSUPPORTED if the kernel keeps no per-thread run
   time (/proc/PID/schedstat, CONFIG_SCHED_INFO). */
int rbi_sampler_new(rbi_target *t, const struct rbi_sampler_opts *opts,
		    rbi_sampler **out);
/* NULL-safe.  Detaches a paused process. */
void rbi_sampler_free(rbi_sampler *s);
/* Read every Ruby thread now and call FN for each (idle threads only with
   RBI_SAMPLER_IDLE).  Torn and unreadable stacks are delivered with their
   status, and counted.  Returns RBI_OK, FN's non-zero return, or an error
   for the whole process (RBI_GONE once it has exited). */
int rbi_sampler_sample(rbi_sampler *s, rbi_sample_fn fn, void *arg);
/* The sampler's figures so far. */
void rbi_sampler_stats(const rbi_sampler *s, struct rbi_sample_stats *out);

/* ---- Profiles ------------------------------------------------------------ */

/* A profile is what a recording keeps: every sample (time, thread, state
   and stack, the stack as a node of a call tree), the frames and threads
   they name, key/value metadata and the sampling-quality figures.  It can
   be saved in a raw form and loaded again, and rendered in any format
   through a view that filters and reshapes it.  An aggregated profile
   (rbi_profile_aggregate) keeps instead, for each distinct (stack, thread,
   fiber, state), how many samples had it and their summed weight: its
   memory grows with the distinct stacks, not with the samples. */
typedef struct rbi_profile rbi_profile;

int rbi_profile_new(rbi_profile **out);
void rbi_profile_free(rbi_profile *p);      /* NULL-safe */
/* Add a sample (as a sampler hands it; everything is copied).  Samples
   without frames (torn, errors) are not kept: their counts are in the
   stats. */
int rbi_profile_add(rbi_profile *p, const struct rbi_sample *s);
/* rbi_profile_add as an rbi_sample_fn (ARG is the profile). */
int rbi_profile_add_fn(const struct rbi_sample *s, void *arg);
/* Drop the samples kept so far (frames and threads stay): for a live view
   that only looks at the latest ones. */
void rbi_profile_clear_samples(rbi_profile *p);
/* Samples added (aggregated or not). */
size_t rbi_profile_sample_count(const rbi_profile *p);
/* Make P aggregated: from now on samples alike in all but time are summed
   into one record, in memory that does not grow with the samples.  What
   needs every sample in order then fails with RBI_UNSUPPORTED:
   rbi_profile_save, the formats rbi_profile_format_in_order says so of,
   views with a range of samples.  RBI_INVAL once P keeps samples one by
   one. */
int rbi_profile_aggregate(rbi_profile *p);
/* Metadata ("target", "ruby", "rate", "start" ...).  Replaces KEY's value. */
int rbi_profile_set_meta(rbi_profile *p, const char *key, const char *value);
/* The value of KEY, or NULL. */
const char *rbi_profile_meta(const rbi_profile *p, const char *key);
/* Add ST to the profile's figures / read them. */
void rbi_profile_add_stats(rbi_profile *p, const struct rbi_sample_stats *st);
void rbi_profile_stats(const rbi_profile *p, struct rbi_sample_stats *out);

/* The raw form (line-based text, versioned): everything a profile holds.
   rbi_profile_load: RBI_CORRUPT for a file that is not one; a file cut
   short loads what it holds, with the metadata "incomplete" saying where
   it ends. */
int rbi_profile_save(const rbi_profile *p, FILE *f);
int rbi_profile_load(FILE *f, rbi_profile **out);
/* rbi_profile_load into an aggregated profile (rbi_profile_aggregate):
   for the formats that need no order of samples, in memory that grows with
   the distinct stacks only. */
int rbi_profile_load_aggregated(FILE *f, rbi_profile **out);

#define RBI_VIEW_THREADS  1u    /* a root frame per thread */
#define RBI_VIEW_IDLE     2u    /* keep idle samples (WAITING, SLEEPING),
				   each with a leaf frame naming its state; a
				   profile of CPU time ("mode" "cpu") keeps
				   them anyway (each used CPU since the tick
				   before): this only adds the frame */
#define RBI_VIEW_GVL      4u    /* only samples of threads holding the GVL */
#define RBI_VIEW_NO_LINES 8u    /* one frame per method: lines set to 0 */
#define RBI_VIEW_FIBERS   16u   /* a root frame per fiber ("Fiber 0x... (root
				   of thread N)", "Fiber 0x... (thread N)"),
				   inside the thread's with RBI_VIEW_THREADS */

/* Which samples a rendering uses, and how stacks are shaped.  A profile of
   more than one process always gets a root frame per process. */
struct rbi_profile_view {
	uint32_t size;          /* sizeof(struct rbi_profile_view) */
	uint32_t flags;         /* RBI_VIEW_* */
	size_t first_sample;    /* samples [FIRST_SAMPLE, END_SAMPLE) ... */
	size_t end_sample;      /* ... 0: to the last (an aggregated profile:
				   all of them only) */
};

/* Callback for each distinct stack of a view (FRAMES outermost first, with
   the view's made-up frames; valid until the profile is freed), how many
   samples had it and the time they stand for (the sum of their
   weight_ns: wall or CPU time, as the profile's "mode").  Non-zero
   stops. */
typedef int (*rbi_stack_fn)(const struct rbi_sample_frame *const *frames,
			    size_t n, uint64_t count, uint64_t weight_ns, void *arg);
/* Each distinct stack once, in no particular order.  VIEW may be NULL
   (all samples, active only). */
int rbi_profile_foreach_stack(rbi_profile *p, const struct rbi_profile_view *view,
			      rbi_stack_fn fn, void *arg);

typedef enum {
	RBI_FORMAT_FLAMEGRAPH = 0,      /* interactive SVG (self-contained) */
	RBI_FORMAT_FOLDED = 1,          /* Brendan Gregg's collapsed stacks */
	RBI_FORMAT_SPEEDSCOPE = 2,      /* speedscope JSON, one profile a thread */
	RBI_FORMAT_PPROF = 3,           /* gzipped profile.proto */
	RBI_FORMAT_CALLGRIND = 4,       /* callgrind_annotate / kcachegrind */
	RBI_FORMAT_RAW = 5,             /* rbi_profile_save */
} rbi_profile_format;

/* "flamegraph", "folded", ...; NULL for an unknown format. */
const char *rbi_profile_format_name(rbi_profile_format f);
/* The usual file name extension: "svg", "txt", "speedscope.json",
   "pb.gz", "callgrind", "rbiprof". */
const char *rbi_profile_format_extension(rbi_profile_format f);
/* RBI_INVAL for an unknown NAME. */
int rbi_profile_format_from_name(const char *name, rbi_profile_format *out);
/* Non-zero if FORMAT needs every sample in the order taken (speedscope's
   timeline, raw): an aggregated profile cannot be written in it. */
int rbi_profile_format_in_order(rbi_profile_format f);
/* Render P in FORMAT through VIEW (NULL: all samples, active only) to F.
   Target strings are escaped for the format.  RBI_SYSTEM if writing
   fails. */
int rbi_profile_write(rbi_profile *p, rbi_profile_format format,
		      const struct rbi_profile_view *view, FILE *f);

/* ---- Recording ----------------------------------------------------------- */

#define RBI_RECORD_SUBPROCESSES 0x100u  /* also every descendant process
					   that runs Ruby (forking servers) */
#define RBI_RECORD_WAIT 0x200u  /* the process may not run Ruby yet (just
				   started): keep trying until it does */

struct rbi_record_opts {
	uint32_t size;          /* sizeof(struct rbi_record_opts) */
	uint32_t flags;         /* RBI_RECORD_* | RBI_SAMPLER_* */
	double rate;            /* samples per second; 0: 100 */
	double duration;        /* seconds; 0: until STOP or every process
				   has exited */
	size_t max_frames;      /* as rbi_sampler_opts */
	const struct rbi_open_opts *open;       /* optional, for each process */
	/* Optional: recording ends when *STOP becomes non-zero (set it from a
	   signal handler). */
	const volatile int *stop;
	/* Optional: called every PROGRESS_INTERVAL seconds (0: 1) with the
	   profile so far; a non-zero return ends the recording. */
	int (*progress)(rbi_profile *p, void *arg);
	void *progress_arg;
	double progress_interval;
};

/* Sample process PID (and its Ruby descendants with RBI_RECORD_SUBPROCESSES)
   into P at OPTS->rate until the duration is over, *STOP is set or every
   process has exited.  Ticks are spread randomly (uniform in 0.5 to 1.5
   periods) so periodic work in the target does not alias.  Each sample
   weighs the time since its process's previous tick (wall time), or with
   RBI_SAMPLER_CPU the CPU time its thread used since then.  The profile
   gets metadata (pid, ruby, rate, start, mode "wall" or "cpu", duration;
   "exec.N" for each time a process sampled ran another program: it is
   followed, its new VM sampled once it has one;
   "warning" when more than a fifth of the stacks could not be read) and
   the figures.  Returns RBI_OK
   or an error that prevented any sampling (RBI_PERM, RBI_NOT_RUBY ...). */
int rbi_profile_record(rbi_profile *p, pid_t pid, const struct rbi_record_opts *opts);

/* ---- Stopping a live target ---------------------------------------------- */

/* Stop every thread of live target T, for a consistent snapshot (exact
   object counts), and return once all have stopped.  The threads are
   stopped with ptrace (attached with PTRACE_SEIZE, stopped with
   PTRACE_INTERRUPT), not a signal: the process and its parent see nothing,
   and if the caller dies while T is paused the kernel lets the process
   go.  Reads made after it see the stopped process (T's read cache is
   dropped).  *STOPPED (optional) is set non-zero when this call stopped
   the process; if it was stopped already (job control, a debugger)
   nothing is done, *STOPPED is 0 and rbi_target_resume() leaves it
   stopped.  Calls do not nest: a second pause is a no-op.  Resume from
   the thread that paused (ptrace's rule); rbi_target_free() resumes too.
   Errors: RBI_UNSUPPORTED (a core, or memory served by
   rbi_target_open_ops), RBI_PERM (traced already, or ptrace not allowed:
   the message says how), RBI_GONE. */
int rbi_target_pause(rbi_target *t, int *stopped);

/* Let a target stopped by rbi_target_pause() run again (detach) and drop
   the read cache.  RBI_OK without doing anything when T is not paused by
   rbi_target_pause() (or was stopped before it).  NULL-safe. */
int rbi_target_resume(rbi_target *t);

/* ---- Heap: every object ------------------------------------------------- */

/* Ruby's object types (enum ruby_value_type, RBasic.flags & 0x1f): the
   same numbers in Ruby 2.6 to 4.0.  A slot whose flags are 0 is free. */
#define RBI_TYPE_COUNT 0x20

/* The key ObjectSpace.count_objects uses for TYPE: "T_OBJECT", "T_STRING",
   ..., "T_NONE"; NULL for a number Ruby has no name for. */
const char *rbi_value_type_name(unsigned type);

/* A walk over the target's object heap: every slot of every heap page, in
 * the order ObjectSpace.count_objects visits them.  Pages are read whole,
 * a batch of them per read (one system call for a live process), so the
 * memory a walk holds is bounded (about 256 KiB of page bodies) whatever
 * the heap's size.
 *
 * A walk of a live target that is not stopped (rbi_target_pause) sees a
 * moving heap: objects allocated or freed during the walk may be missed or
 * seen twice, and a page freed under the walk is skipped.  Every page is
 * checked before its slots are used (its body must point back at it, its
 * slots must fit in it), the walk is bounded by the page count read at
 * the start, and the stats say when the result is only approximate.
 *
 * Usage:
 *      rbi_heap_iter *it;
 *      const struct rbi_heap_slot *s;
 *      int rc = rbi_heap_iter_init(t, 0, &it);
 *      while (rc == RBI_OK && (rc = rbi_heap_iter_next(it, &s)) == RBI_OK)
 *              counts[s->type]++;
 *      if (rc == RBI_ITER_END) rc = RBI_OK;
 *      rbi_heap_iter_stats(it, &st);   // TOTAL = st.slots, FREE = st.free
 *      rbi_heap_iter_free(it);
 */
typedef struct rbi_heap_iter rbi_heap_iter;

/* Flags for rbi_heap_iter_init(). */
#define RBI_HEAP_FREE_SLOTS 1u  /* also return free slots (flags 0) */

/* One heap slot, as rbi_heap_iter_next() returns it.  Borrowed from the
   iterator: valid until its next call, BYTES included. */
struct rbi_heap_slot {
	uint64_t addr;          /* the object (its VALUE) */
	uint64_t flags;         /* RBasic.flags; 0: a free slot */
	uint64_t klass;         /* RBasic.klass; 0: a hidden internal object */
	unsigned type;          /* flags & 0x1f (see rbi_value_type_name) */
	uint32_t size;          /* the slot's size in bytes: 40 up to Ruby
				   3.1, 40/80/160/320/640 from 3.2 */
	const void *bytes;      /* the slot's SIZE bytes as read */
	uint64_t owned;         /* a String's or Array's buffer outside the
				   heap that it owns: its capacity in bytes;
				   0 when embedded in the slot, shared with
				   another object, or not a String or Array */
};

/* Slots of one size (rbi_heap_stats.sizes). */
#define RBI_HEAP_SIZES 8
struct rbi_heap_size {
	uint32_t slot_size;     /* bytes; 0: an unused entry */
	uint64_t slots;         /* slots of this size walked */
	uint64_t free;          /* of which free */
};

/* What a walk saw so far (rbi_heap_iter_stats).
   Frozen ("Structs and sizes" above): anything new comes as a getter. */
struct rbi_heap_stats {
	uint64_t pages;         /* heap pages listed when the walk started */
	uint64_t pages_done;    /* pages walked (read or skipped) so far */
	uint64_t pages_skipped; /* pages that could not be read or failed their
				   checks: their slots are not counted */
	uint64_t slots;         /* slots of the pages walked: what
				   ObjectSpace.count_objects calls TOTAL */
	uint64_t free;          /* free slots among them (FREE) */
	uint64_t slot_bytes;    /* bytes of those slots */
	uint64_t bytes_read;    /* target memory read */
	uint64_t gc_count;      /* GC.count when the walk started */
	struct rbi_heap_size sizes[RBI_HEAP_SIZES];     /* per slot size,
				   smallest first: one size up to Ruby 3.1,
				   one per size pool from 3.2 */
	int moved;              /* non-zero: the heap changed during the walk
				   (a GC ran or was running, the page list
				   changed, pages were skipped) or holds
				   what no heap has (used slots of T_NONE,
				   T_NIL...: corrupt memory), so counts are
				   approximate; MOVED_WHY says how */
	const char *moved_why;  /* "" if MOVED is 0; static text */
};

/* Start a walk of T's heap into *OUT.  FLAGS: RBI_HEAP_*.  Locates the
   VM (rbi_ruby_info's errors), its objspace and page list, and checks the
   first pages against the layout: RBI_LAYOUT when they do not match it
   (a built-in table that is wrong for this Ruby: supply its DWARF),
   RBI_NO_LAYOUT when the layout has no heap fields (read its DWARF),
   RBI_UNSUPPORTED for a GC this walker does not know (Ruby 3.4+ built
   with a modular GC library).  Free with rbi_heap_iter_free().
   Where T's memory allows reads from two threads (RBI_MEM_CONCURRENT: live
   processes and cores) and there is a second CPU, the walk reads the next
   pages on a thread of its own (all signals blocked) until
   rbi_heap_iter_free(); T must not be freed before that. */
int rbi_heap_iter_init(rbi_target *t, unsigned flags, rbi_heap_iter **out);

/* The next slot in *OUT: a used slot (flags non-zero), or a free one with
   RBI_HEAP_FREE_SLOTS.  RBI_ITER_END after the last.  Pages that cannot
   be read are skipped (counted in the stats), never an error; errors end
   the walk: RBI_GONE (the process exited), RBI_PERM, RBI_NOMEM. */
int rbi_heap_iter_next(rbi_heap_iter *it, const struct rbi_heap_slot **out);

/* Count the types of the used slots of the next batch of pages (about
   256 KiB of page bodies) into COUNTS (added to: COUNTS[t] += used slots of
   type t; free slots go to the stats' FREE as with rbi_heap_iter_next),
   without returning them one by one: the fast way to
   ObjectSpace.count_objects.  RBI_OK after a batch (call again; check the
   stats for progress), RBI_ITER_END when no page is left; the errors of
   rbi_heap_iter_next.  May follow calls of rbi_heap_iter_next: it goes on
   from the next slot; once it is called, the walk only counts (a later
   rbi_heap_iter_next or rbi_heap_iter_count_classes fails with
   RBI_INVAL). */
int rbi_heap_iter_count(rbi_heap_iter *it, uint64_t counts[RBI_TYPE_COUNT]);

/* The figures of the walk so far into *OUT (call it at the end for the
   totals; during the walk for progress: PAGES_DONE of PAGES).  At the
   end of a walk the page list and GC count are read again, so that MOVED
   also reports a GC that ran during it. */
void rbi_heap_iter_stats(rbi_heap_iter *it, struct rbi_heap_stats *out);

/* Used slots the walk saw so far whose type no heap object has (T_NONE,
   the special constants' T_NIL, T_TRUE..., numbers no Ruby uses): values
   the VM cannot have, so corrupt memory, in a core too.  They are counted
   under that type and make the stats' MOVED say so; this tells them from
   a heap that only changed while it was read.  0 for a NULL IT. */
uint64_t rbi_heap_iter_impossible(const rbi_heap_iter *it);

/* Used slots the walk saw so far that are garbage: after a GC marked the
   heap, its lazy sweep frees the slots it did not mark page by page, as
   the program allocates; an unmarked used slot on a page it has not
   reached yet is no object (gc.c is_garbage_object).  rbi_heap_iter_next
   and the tally by class leave them out, as ObjectSpace.each_object and
   dump_all do (they finish the sweep first); counts by type keep them
   under their type, as ObjectSpace.count_objects does.  0 when the
   layout has no page flags and mark bits to tell (a Ruby without DWARF
   or a built-in table for them), and for a NULL IT. */
uint64_t rbi_heap_iter_garbage(const rbi_heap_iter *it);

/* The class of the object in slot S as obj.class returns it (singleton
   classes and module inclusions skipped) into *KLASS.  RBI_ITER_END when
   ObjectSpace.each_object(Object) would not yield the object: free and
   internal slots (T_IMEMO, T_ICLASS, T_NODE, T_ZOMBIE, T_MOVED), hidden
   objects (klass 0), metaclasses Ruby keeps to itself, BasicObject
   instances.  The answers per class are cached in IT, so calling it for
   every slot is cheap.  Errors: RBI_CORRUPT (a class chain that cannot be
   read, e.g. a live heap moving). */
int rbi_heap_object_class(rbi_heap_iter *it, const struct rbi_heap_slot *s,
			  uint64_t *klass);

/* The live objects of one class (rbi_heap_iter_classes).
   Frozen ("Structs and sizes" above): anything new comes as a getter. */
struct rbi_heap_class {
	uint64_t klass;         /* the class, as rbi_heap_object_class says
				   (0 in the internal and unknown rows) */
	uint64_t count;         /* objects */
	uint64_t slot_bytes;    /* bytes of their heap slots */
	uint64_t owned_bytes;   /* bytes they own outside the heap (the sum
				   of rbi_heap_slot.owned) */
};

/* Count the next batch of pages by type as rbi_heap_iter_count does, and
   tally their used slots by class as rbi_heap_object_class sees them,
   without returning them one by one: the fast way to
   ObjectSpace.each_object(Object) counted by class.  The threads that
   read the pages also tally them; each class is looked up once.  Returns
   as rbi_heap_iter_count.  May follow calls of rbi_heap_iter_next (it
   goes on from the next slot), not of rbi_heap_iter_count: a walk counts
   one way (RBI_INVAL). */
int rbi_heap_iter_count_classes(rbi_heap_iter *it, uint64_t counts[RBI_TYPE_COUNT]);

/* The tally of rbi_heap_iter_count_classes so far: *V, *N classes in the
   order first seen (borrowed from IT: valid until its next call); the
   objects each_object(Object) would not yield into *INTERNAL; those
   whose class chain could not be read (a live heap moving) into
   *UNKNOWN.  Any pointer may be NULL. */
void rbi_heap_iter_classes(rbi_heap_iter *it, const struct rbi_heap_class **v, size_t *n,
			   struct rbi_heap_class *internal, struct rbi_heap_class *unknown);

/* One used slot decoded as ObjectSpace.dump_all writes it (the fields of
   its JSON line that can be read from outside).  Borrowed from the
   iterator: valid until the next call on it. */
struct rbi_heap_object {
	const char *type_name;  /* dump_all's "type": "STRING", "IMEMO"... */
	uint64_t klass;         /* dump_all's "class": RBasic.klass as it is
				   (singleton classes included); 0: none
				   (hidden objects, T_IMEMO, T_NODE) */
	int frozen;
	int embedded;           /* STRING, ARRAY: contents inside the slot */
	int shared;             /* STRING, ARRAY: contents shared with another
				   object (a STRING's LENGTH is then -1) */
	int fstring;            /* STRING: interned */
	int64_t length;         /* STRING: bytesize; ARRAY: length; else -1 */
	int encoding_index;     /* STRING: Ruby's encoding index; else -1 */
	const char *encoding;   /* STRING: the name of ASCII-8BIT, UTF-8 and
				   US-ASCII (indexes 0-2, the same in every
				   Ruby); NULL for other encodings */
	const char *coderange;  /* STRING: "unknown", "7bit", "valid",
				   "broken"; else NULL */
	const char *value;      /* STRING: its bytes when asked for (VALUE_MAX)
				   and, as dump_all, only 7-bit ones in those
				   three encodings; NULL otherwise */
	size_t value_len;
	int value_cut;          /* the String is longer than VALUE_LEN */
	const char *name;       /* CLASS, MODULE: the permanent name; NULL:
				   anonymous, or unknown (3.2) */
	int singleton;          /* CLASS: a singleton class */
	uint64_t real_class;    /* CLASS, MODULE: rb_class_real of it (itself
				   unless a singleton class); 0: unreadable */
	const char *real_class_name;    /* the permanent name of REAL_CLASS
				   when that is another class; else NULL */
	int refs_known;         /* non-zero: REFS are all of the object's
				   references (ARRAY, STRING, FLOAT, BIGNUM,
				   SYMBOL; OBJECT and HASH where IVARS and
				   ENTRIES are read; STRUCT, RATIONAL, COMPLEX,
				   REGEXP, MATCH, FILE, a Proc, Binding,
				   Method, IMEMO env and ment where the
				   layout has them; CLASS, MODULE and ICLASS
				   where their layout and marking are known);
				   zero: not read (other types, and objects
				   with generic instance variables where
				   their table was not found: see
				   rbi_heap_object_generic_ivars) */
	const uint64_t *refs;   /* the heap objects it references, as dump_all
				   lists them: in marking order, repeats kept,
				   its class left out */
	size_t nrefs;
	int64_t ivars;          /* OBJECT: dump_all's "ivars" (ROBJECT_NUMIV:
				   the slots for instance variables, up to 3.1);
				   -1: not read (3.2+ counts by object shapes) */
	int64_t entries;        /* HASH: its size; -1: not read */
	uint64_t default_proc;  /* HASH: its default proc (Hash.new { }); 0:
				   none */
};

/* Decode used slot S of IT's walk (from rbi_heap_iter_next) into *OUT.
   VALUE_MAX: the most bytes of a String's value to read (0: none).
   Reads the target only for a String's value, a heap Array's elements,
   an Object's instance variables outside its slot, a Hash's table, a
   Proc's, Binding's or Method's struct, an environment's values and
   frame and a method entry's definition.  Errors: RBI_INVAL (a free slot), RBI_CORRUPT (lengths that
   cannot be: a live heap moving), RBI_NOMEM, read errors. */
int rbi_heap_object_read(rbi_heap_iter *it, const struct rbi_heap_slot *s,
			 size_t value_max, struct rbi_heap_object *out);

/* The bytes left out of the NAME and REAL_CLASS_NAME of IT's last
   rbi_heap_object_read (names are read up to 4 KiB): 0 when whole or
   NULL (rbi_heap_object is frozen, so these come apart). */
void rbi_heap_object_name_cut(rbi_heap_iter *it, uint64_t *name_cut,
			      uint64_t *real_class_name_cut);
/* Whether IT's last rbi_heap_object_read found generic instance
   variables (an object other than an Object, class or module with
   FL_EXIVAR set: dump_all lists them first among its references) and
   read them: RBI_OK, with how many it has in *N; RBI_ITER_END: it has
   none; else why its references were left unknown (RBI_UNSUPPORTED: the
   table of them was not found, as in a stripped libruby that two or no
   tables pass for; RBI_CORRUPT: the object is not in it).
   Since: 0.8 (LIBRUBY_INTROSPECT_0.8). */
int rbi_heap_object_generic_ivars(rbi_heap_iter *it, uint64_t *n);
/* The shape id of used slot S of IT's walk (Ruby 3.3-3.4: dump_all's
   "shape_id", every object has one) into *ID.  RBI_UNSUPPORTED for Rubies
   without object shapes, and for 3.2 (see rbi_heap_shapes_foreach). */
int rbi_heap_object_shape_id(rbi_heap_iter *it, const struct rbi_heap_slot *s, uint32_t *id);
/* What kind of internal object used slot S of IT's walk is, as dump_all
   names it, into BUF (CAP bytes, cut to fit): for a T_IMEMO its "imemo_type"
   ("env", "ment", "iseq"...), for a typed T_DATA its "struct" (its
   rb_data_type_t's wrap_struct_name: "proc", "encoding"...); "" for an
   untyped T_DATA and any other type.  RBI_UNSUPPORTED for an IMEMO type
   this Ruby's layout does not name (read its DWARF); read errors. */
int rbi_heap_object_kind(rbi_heap_iter *it, const struct rbi_heap_slot *s, char *buf,
			 size_t cap);
/* The GC's flags of an object, as dump_all's "flags" names them
   (rbi_heap_object_gc_flags). */
#define RBI_GC_WB_PROTECTED 1u  /* "wb_protected": not write-barrier unprotected */
#define RBI_GC_OLD 2u           /* "old": survived three GCs (age 3) */
#define RBI_GC_UNCOLLECTIBLE 4u /* "uncollectible" */
#define RBI_GC_MARKING 8u       /* "marking" */
#define RBI_GC_MARKED 16u       /* "marked": by the last (or running) GC */
#define RBI_GC_PINNED 32u       /* "pinned": compaction may not move it */

/* The GC flags (RBI_GC_*) of slot S, the one rbi_heap_iter_next returned
   last, into *OUT, read from the bitmaps of its heap page (read once a
   page).  RBI_UNSUPPORTED when this Ruby's layout lacks the bitmaps
   (DWARF gives them); RBI_INVAL for another slot. */
int rbi_heap_object_gc_flags(rbi_heap_iter *it, const struct rbi_heap_slot *s,
			     unsigned *out);

/* ObjectSpace.memsize_of of the object in slot S (dump_all's "memsize")
   into *OUT: its slot and what it owns outside it, for Strings (in
   ASCII-8BIT, UTF-8 and US-ASCII), Arrays, Objects, Hashes, Structs,
   Floats, Bignums, Symbols, Rationals, Complexes, Regexps, MatchData and
   Files.  RBI_UNSUPPORTED for
   other objects (other types, generic instance variables whose table was
   not found, a File that converts encodings...) rather than a part of it;
   generic instance variables, where found, are added as
   rb_generic_ivar_memsize adds them. */
int rbi_heap_object_memsize(rbi_heap_iter *it, const struct rbi_heap_slot *s,
			    uint64_t *out);

/* Where an object was allocated, as ObjectSpace.trace_object_allocations
   recorded it (the objspace extension's table) and dump_all writes it:
   "file", "line", "method", "generation".  Borrowed from the iterator:
   the strings are valid until rbi_heap_iter_free.
   Since: 0.8 (LIBRUBY_INTROSPECT_0.8). */
struct rbi_heap_alloc {
	const char *file;       /* the path of the Ruby code that allocated
				   it; NULL: none recorded (no Ruby frame) */
	uint64_t line;          /* its line; 0: none recorded */
	const char *method;     /* the name of the method allocating it
				   (rb_tracearg_method_id); NULL: none */
	const char *class_path; /* the path of that method's class
				   (ObjectSpace.allocation_class_path, not in
				   dump_all); NULL: none */
	uint64_t generation;    /* GC.count when it was allocated */
};

/* The allocation site of used slot S of IT's walk into *OUT: RBI_OK when
   the target's ObjectSpace.trace_object_allocations recorded one for this
   address (as dump_all looks it up: any object at that address, so a
   reused slot keeps it while tracing keeps the dead's, as in Ruby);
   RBI_ITER_END when it did not, tracing was never started, or the objspace
   extension is not loaded.  The tracer is found at the first call of a
   walk (by objspace.so's symbol tmp_trace_arg, or, stripped, by a scan of
   its data for the struct its two tracepoints point back at) and its table
   read then.  Errors: RBI_UNSUPPORTED (a layout without st_table, two
   candidate tracers), RBI_CORRUPT, read errors; a failure to find or read
   the table is returned by every call of the walk. */
int rbi_heap_object_alloc(rbi_heap_iter *it, const struct rbi_heap_slot *s,
			  struct rbi_heap_alloc *out);

/* One GC root as ObjectSpace.dump_all writes its ROOT line: the heap
   objects it keeps alive.  Borrowed: valid during the callback.
   Frozen ("Structs and sizes" above). */
struct rbi_heap_root {
	const char *name;       /* dump_all's "root": "vm" (what rb_vm_mark
				   marks of the VM's own: its ractors' or
				   threads' objects, its VALUE fields and
				   tables, trap handlers, global call
				   caches), "global_tbl" (every global
				   variable's value), "global_list" (2.7-3.3:
				   the addresses C code registered),
				   "finalizers" (up to 3.3; 3.4: "objspace",
				   a GC root its dump_all does not write:
				   the finalizer table's Arrays, when there
				   are any),
				   "machine_context" (the words of each
				   thread's machine stack and registers that
				   point at a used heap slot: Ruby scans them
				   conservatively); and one of this library's
				   own, "vm_stack" (each thread's VM stack
				   values and frames' self and iseq, which
				   dump_all reaches through Thread objects) */
	const uint64_t *refs;   /* in the order found, repeats kept */
	size_t nrefs;
	int error;              /* RBI_OK, or why the root could not be read
				   (then NREFS is 0) */
	const char *error_msg;  /* explanation when ERROR != RBI_OK, else "" */
	const char *note;       /* what REFS leave out or guess, or "" */
};

typedef int (*rbi_heap_root_fn)(const struct rbi_heap_root *root, void *arg);

/* Call FN for each root this library reads of T's heap, unreadable ones
   too (with ERROR set): vm, vm_stack, global_tbl, machine_context,
   global_list, finalizers, objspace (vm_stack beside vm; a root this Ruby does not
   have, or an empty finalizer table, is not called for).  Suspended fibers' stacks are not
   scanned.  dump_all's "machine_context"
   is the stack of the thread that runs the dump and every other thread's
   stack is marked through its Thread object; from outside no thread runs
   the dump, so every thread's stack and registers are in it.  The
   registers and stack pointer of a thread come from a core or from a
   process stopped with rbi_target_pause(); otherwise from where the
   thread saved them when it last left Ruby (ec->machine.stack_end), which
   a running thread has moved past (the NOTE says so).  Returning non-zero
   from FN ends the walk with that value. */
int rbi_heap_roots_foreach(rbi_target *t, rbi_heap_root_fn fn, void *arg);

/* One object shape (Ruby 3.3-3.4, shape.c), with what ObjectSpace.dump_all's
   SHAPE line says of it.  Borrowed: valid during the callback. */
struct rbi_heap_shape {
	uint64_t addr;          /* its rb_shape_t in the target */
	uint32_t id;            /* its index in the shape list: an object's
				   shape id (rbi_heap_object_shape_id) */
	uint32_t parent_id;     /* 0xffffffff (INVALID_SHAPE_ID) for a root,
				   and for 3.4's T_OBJECT shapes */
	int root;               /* a SHAPE_ROOT (3.3 has one per slot size) */
	const char *type_name;  /* "ROOT", "IVAR", "FROZEN", "T_OBJECT",
				   "OBJ_TOO_COMPLEX"; "UNKNOWN" for another */
	uint64_t depth;         /* shapes from it up to one without a parent,
				   itself included (rb_shape_depth) */
	const char *edge_name;  /* IVAR: the instance variable's name ("@a", or
				   an internal one such as "mesg"); NULL for
				   other types, or a name that cannot be read
				   (EDGE_ERROR set) */
	int edge_error;         /* RBI_OK, or why EDGE_NAME could not be read */
	int edges_known;        /* zero: its edge table could not be read
				   (EDGES and MEMSIZE unknown) */
	uint64_t edges;         /* its child shapes */
	uint64_t memsize;       /* rb_shape_memsize: the shape and its table
				   of edges */
};

typedef int (*rbi_heap_shape_fn)(const struct rbi_heap_shape *shape, void *arg);

/* Call FN for each object shape of T's Ruby, by id from 0, as dump_all
   writes its SHAPE lines (the list is read once, at the call).  Rubies
   before 3.2 have no shapes: RBI_OK without a call.  Errors:
   RBI_UNSUPPORTED (Ruby 3.2, whose shapes live in the VM, or a layout
   without the shape tree: read its DWARF), RBI_CORRUPT (no shape list
   found), RBI_NOMEM, read errors.  Returning non-zero from FN ends the
   walk with that value. */
int rbi_heap_shapes_foreach(rbi_target *t, rbi_heap_shape_fn fn, void *arg);

/* NULL-safe.  Frees the iterator and everything it holds. */
void rbi_heap_iter_free(rbi_heap_iter *it);

/* The name of class or module KLASS into BUF (CAP bytes, NUL-terminated,
   cut to fit): its permanent path ("Foo::Bar"), or as Ruby inspects an
   anonymous one ("#<Class:0x000055d0c0ffee00>").  On Ruby 3.2, whose
   class paths hide in object shapes, every class is shown the anonymous
   way.  Errors: RBI_CORRUPT (not a class or module), RBI_GONE (the
   process exited: its classes cannot be named, anonymous or not). */
int rbi_class_name(rbi_target *t, uint64_t klass, char *buf, size_t cap);
/* rbi_class_name, and *CUT: the bytes of a name longer than CAP - 1 that
   BUF left out (0: the name is whole). */
int rbi_class_name_cut(rbi_target *t, uint64_t klass, char *buf, size_t cap,
		       uint64_t *cut);

/* ---- Printing what the target holds --------------------------------------- */

/* Names, paths, thread names and values come from the target: untrusted
   bytes that could drive a terminal, reorder a line (U+202E), or break out
   of a JSON string or an HTML attribute.  These write LEN bytes of S (NULL
   when LEN is 0) to F as rbinspect prints them.

   rbi_escape_text: printable UTF-8 as it is; '\\' and every other byte
   as \\, \n, \t, \r, \e or \xNN; the bidirectional controls as \u{202e}.
   rbi_escape_json: a JSON string, quotes included (controls and invalid
   bytes as \u00NN, the bidirectional controls as \u202e).
   rbi_escape_xml: text or an attribute value of XML, SVG or HTML: & < > " '
   as entities, the rest as rbi_escape_text. */
void rbi_escape_text(FILE *f, const char *s, size_t len);
void rbi_escape_json(FILE *f, const char *s, size_t len);
void rbi_escape_xml(FILE *f, const char *s, size_t len);

/* ---- Former names ------------------------------------------------------ */

/* The names 0.1-0.7 gave two destructors, before every destructor was
   rbi_<object>_free: still exported (LIBRUBY_INTROSPECT_0.1), so that
   programs linked then keep running, and declared, so that their sources
   still build.  The same functions: new code uses the new names. */
void rbi_target_close(rbi_target *t);           /* = rbi_target_free */
void rbi_heap_iter_fini(rbi_heap_iter *it);     /* = rbi_heap_iter_free */

#ifdef __cplusplus
}
#endif
#endif
