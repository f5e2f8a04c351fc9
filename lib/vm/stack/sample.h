/* sample.h: the sampler's fast path through the VM (vm/sample.c).
 *
 * rbi_frame_foreach() is exact and general: it walks one thread, reads
 * through the page cache and decodes every frame afresh.  A sampler reads
 * the same stacks hundreds of times a second, so this path:
 *  - keeps the thread set between samples and only re-walks the thread
 *    lists when they change (counts, a thread that no longer points back),
 *    or once a second;
 *  - reads each thread's volatile state (status, ec, GVL owner, GC flag),
 *    then every wanted thread's control frames, then the environments they
 *    point at, in three batched reads for all threads together;
 *  - resolves frames from caches: (iseq, pc, method-entry chain) -> frame,
 *    method-entry candidates -> method entry, (iseq, cme) -> label;
 *  - reads the execution context and the frames again after the batch:
 *    if they changed, the stack moved under the read (torn); it is read
 *    again, and then only the outer part that held still is kept, with a
 *    "(moving)" leaf.
 * Frames are interned: one struct rbi_sample_frame per distinct frame for
 * the life of the struct rbi_vm_sampler. */
#ifndef RBI_VM_SAMPLE_H
#define RBI_VM_SAMPLE_H

#include "vm/stack/stack.h"

/* One Ruby thread as the sampler tracks it. */
struct rbi_vm_sthread {
	/* Identity, from the last walk of the thread lists. */
	unsigned number;
	uint64_t thread;
	uint64_t ractor;
	int32_t tid;
	char *name;                     /* owned; NULL if none */
	bool main;
	/* Volatile state, from rbi_vm_sampler_poll. */
	int poll_rc;                    /* RBI_OK or why it could not be read */
	uint64_t ec;
	rbi_thread_status status;
	bool gvl;
	bool gvl_wait;                  /* queued for its ractor's GVL */
	bool gc;                        /* VM in GC, and this thread holds the GVL */
	uint64_t vm_stack, vm_stack_size, cfp, ec_thread;
	uint64_t fiber;                 /* ec->fiber_ptr: the fiber it runs; 0 if
					   the layout has none */
	bool root_fiber;                /* FIBER is the thread's root fiber */
	/* Input and output of rbi_vm_sampler_read. */
	bool want;
	int rc;                         /* RBI_OK, RBI_TORN or an error */
	bool truncated;
	unsigned retries;               /* reads redone for this thread */
	size_t nframes;
	const struct rbi_sample_frame **frames;         /* outermost first */
	/* Private to sample.c. */
	size_t frames_cap;
	uint8_t *cfps;
	size_t cfps_cap, ncfps;
	uint64_t cfps_at;
	size_t ext, ext_hint;           /* slots read above the top */
	uint8_t *vals, *vals2;          /* read twice: before and after */
	size_t vals_cap, vals2_cap;
	uint64_t vals_lo, vals_hi;
	uint64_t *heap_eps;             /* environments off the VM stack */
	uint64_t *heap_envs;            /* (escaped: on the heap), 3 words each */
	size_t nheap, heap_cap;
	size_t niov_c;                  /* the reads stage C planned */
	uint8_t *cfps2;                 /* the frames again, after */
	size_t cfps2_cap;
	bool *env_moved;                /* per frame kept: its environment
					   changed while it was read */
	size_t env_moved_cap;
	size_t kept_from;               /* a torn read: the frames from here
					   out held still (ncfps: none) */
	uint8_t check_ec[64];
	uint64_t check_th_ec;
};

struct rbi_vm_sampler;

int rbi_vm_sampler_new(struct rbi_target *t, struct rbi_vm_sampler **out);
void rbi_vm_sampler_free(struct rbi_vm_sampler *s);

/* Read every thread's volatile state (one batched read; the thread lists
   are walked again first when needed).  After it, *THREADS and *N describe the
   current threads.  Errors are for the whole VM (RBI_GONE ...). */
int rbi_vm_sampler_poll(struct rbi_vm_sampler *s, struct rbi_vm_sthread **threads,
			size_t *n);
/* Read the stacks of the threads marked WANT (after a poll), innermost
   MAX_FRAMES at most (0: all).  Sets each one's RC, FRAMES, NFRAMES,
   TRUNCATED.  Torn stacks are re-read up to RETRIES times, then keep the
   outer part that held still under a "(moving)" leaf (RC RBI_OK), or are
   RBI_TORN when none did. */
int rbi_vm_sampler_read(struct rbi_vm_sampler *s, size_t max_frames, unsigned retries);
/* Thread-list walks so far (changes whenever the thread set did). */
uint64_t rbi_vm_sampler_rescans(const struct rbi_vm_sampler *s);

/* ---- frame.c: one frame's names without a walk -------------------------- */

rbi_frame_type rbi_vm_frame_type(uint64_t ep_flags);
/* What a backtrace shows for a control frame, the one classification the
   walker (frame.c) and the sampler (sample.c) both use. */
typedef enum {
	RBI_VM_SHOWN_NONE,      /* nothing */
	RBI_VM_SHOWN_RUBY,      /* a Ruby frame (its iseq may still be a
				   builtin shown as a C method) */
	RBI_VM_SHOWN_CFUNC,     /* a C method's frame */
} rbi_vm_shown;
/* For the frame with ISEQ and PC whose environment flags have TYPE:
   frames with an iseq but no pc (IFUNC, dummy and finished frames) are
   never shown, whatever their type, so TYPE may be
   RBI_FRAME_TYPE_UNKNOWN (environment not read yet) when ISEQ && !PC is
   all that is asked; without an iseq only a C method's frame is. */
rbi_vm_shown rbi_vm_frame_shown(uint64_t iseq, uint64_t pc, rbi_frame_type type);
/* Was the frame with ISEQ, whose environment flags have TYPE, read half
   pushed?  Ruby pushes a C function's frame without an iseq; one that
   runs an iseq with a C frame's type has its new iseq and its slot's last
   environment (2.7 writes the control frame first), its label a stack
   never had. */
bool rbi_vm_frame_half_pushed(uint64_t iseq, rbi_frame_type type);
/* Whether the Ruby frame running IS hides the frame that called it
   (Ruby 3.4 on: a rescue or ensure clause's caller is left out). */
bool rbi_vm_frame_hides_caller(const struct rbi_vm *vm, const struct rbi_iseq *is);
/* Is the control frame read as AFTER (layout L's bytes) the one read as
   BEFORE, still there: the same code for the same receiver?  Its pc and
   ep may differ (the same method pushed again from another call site).  A
   stack whose frames are not is torn (sample.c steady, frame.c). */
bool rbi_vm_cfp_kept(const struct rbi_layout *l, const uint8_t *before,
		     const uint8_t *after);
/* A caller's pc stays put while its callee runs.  If the callee
   (CALLEE_BEFORE, CALLEE_AFTER) is the same invocation in both readings
   (kept, and the same ep) but the caller's pc moved, the callee returned
   while AFTER was read, its slot not yet reused, and the caller, read
   after it, ran on: AFTER's pc is not where it called the callee, BEFORE's
   is (read while the callee ran).  Put BEFORE's pc in CALLER_AFTER, so
   that the stack is one that was: fiber-spin.rb called Burn.burn_root
   from line 46, not 44 or 51; recurse.rb's block calls r from line 19,
   not 20 or 21.  (Treating such a stack as torn instead drops a recursion's
   stacks by the hundred a second, the bias the sampler avoids.) */
void rbi_vm_cfp_caller_settle(const struct rbi_layout *l, const uint8_t *callee_before,
			      const uint8_t *callee_after, const uint8_t *caller_before,
			      uint8_t *caller_after);
/* The iseq a method entry runs (*ISEQ 0 for a method of another kind:
   C, attr, alias...). */
int rbi_vm_cme_iseq(struct rbi_target *t, const struct rbi_vm *vm, uint64_t cme,
		    uint64_t *iseq);
/* Label and path (malloc'd, NULL when unreadable) of a frame running IS
   (NULL: a C method) for method entry CME (0 if none).  RBI_TORN (and
   both NULL) if a process that runs moved them under the read. */
int rbi_vm_frame_names(struct rbi_target *t, struct rbi_vm *vm,
		       const struct rbi_iseq *is, uint64_t cme,
		       char **label, char **path);

#endif
