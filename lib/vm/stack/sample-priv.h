/* sample-priv.h: what the sampler's three files share (not for other
 * files): the sampler's state, its limits and the small helpers of its
 * fast path.  sample.c polls (the thread set and every thread's volatile
 * state), sample-read.c reads the stacks and tells torn ones, and
 * sample-decode.c turns what was read into frames. */
#ifndef RBI_VM_SAMPLE_PRIV_H
#define RBI_VM_SAMPLE_PRIV_H

#include "util/table.h"
#include "vm/stack/sample.h"

#define EP_CHAIN_MAX 4096
#define RESCAN_NS 1000000000ull
#define FLUSH_NS 1000000000ull
#define THREAD_SPAN_MAX 4096
#define HEAP_ENVS_MAX 4096
/* Frame slots read above the top, in case the stack is deeper by the
   second look, more for a thread that keeps growing under reads.  A stack
   that grew past them is read again, so samples taken while it grows are
   lost and the stacks kept lean shallow: with 4, a recursion's stacks 30+
   deep were 19 % of samples instead of the 25 % a paused profile has
   (recurse.rb, deb 3.3); with 64, 25-27 %, for 0.2 us more a sample. */
#define EXT_MIN 64
#define EXT_MAX 256
/* Times a kept outer part is cut again because decoding found a frame of
   it moving (keep_outer). */
#define KEEP_OUTER_PASSES 4
/* The third key word of s->mes entries that hold a method entry's iseq. */
#define MES_ISEQ 1
/* Collecting rounds of a decode (sample-decode.c): the depth of the reads a
   miss makes one after another (iseq, body, label, its string's bytes,
   method entry, owner, class path, its bytes), and one to spare. */
#define DECODE_ROUNDS 9

struct iseq_info {
	struct rbi_iseq is;
	const char *path;               /* interned, NULL if unreadable */
	bool path_known;
};

struct ractor_state {
	uint64_t addr;
	uint64_t gvl_owner;
	uint64_t gvlq_next;             /* its GVL queue's first node */
	uint64_t running_ec;            /* threads.running_ec (3.0+) */
	uint32_t cnt, cnt_seen;
};

struct rbi_vm_sampler {
	struct rbi_target *t;
	struct rbi_vm *vm;
	const struct rbi_layout *l;

	struct rbi_vm_sthread *th;
	size_t nth;
	struct ractor_state *ractors;
	size_t nractors;
	uint8_t *thbuf, *ecbuf;         /* poll buffers, per thread */
	uint32_t th_lo, th_span, ec_lo, ec_span;
	uint32_t vm_cnt_off;            /* ractor.cnt or living_thread_num */
	uint32_t vm_cnt, vm_cnt_seen;
	uint64_t gvl_owner_vm;          /* 2.x: vm->gvl.owner */
	/* The threads queued for the GVL: a list from its head (2.x in the VM,
	   3.0+ in each ractor) through a node in each rb_thread_t; unknown
	   (gvlq_node absent) where the layout lacks either. */
	uint32_t gvlq_node;             /* the node's offset in rb_thread_t */
	uint32_t gvlq_head;             /* the head's in rb_ractor_t (3.0+) */
	uint64_t gvlq_next_vm;          /* 2.x: vm->gvl.waitq's first node */

	uint64_t objspace;
	uint32_t gc_word;
	uint64_t gc_count, flush_gc_count;
	bool during_gc;
	unsigned gc_mode;               /* objspace flags.mode: 1 marking, 2
					   sweeping, 3 compacting; 0 unknown */

	uint64_t last_rescan_ns, last_flush_ns, rescans;
	bool need_rescan;
	bool cache_fresh;
	size_t missed_at;               /* rbi_target_missed at the frame's start */

	struct rbi_map frames;          /* (iseq, pc, cme) | (1, cme, 0) -> frame | rescue bit */
	struct rbi_map mes;             /* (v | can_be_svar) -> cme | 1 */
	struct rbi_map iseqs;           /* iseq -> struct iseq_info * */
	struct rbi_map labels;          /* (iseq, cme, 2) -> interned label */
	struct rbi_map envs;            /* (ep, 0, 3) -> index in env_words */
	uint64_t *env_words;            /* escaped environments, 3 words each */
	size_t nenv_words, env_words_cap;
	struct rbi_frametab ft;
	const struct rbi_sample_frame *gc_frame;
	/* Beneath it, what the GC does, by gc_mode (NULL: none). */
	const struct rbi_sample_frame *gc_mode_frame[4];
	/* The leaf of a stack of which only the outer part held still. */
	const struct rbi_sample_frame *moving_frame;

	struct rbi_iov *iov;
	size_t iov_cap, niov;
};

static inline bool present(uint32_t off)
{
	return off != RBI_ABSENT;
}

/* The page cache is shared with every other reader of the target; clear it
   once per sample before anything here reads through it. */
static inline void fresh(struct rbi_vm_sampler *s)
{
	if (!s->cache_fresh) {
		rbi_target_forget(s->t);
		s->cache_fresh = true;
	}
}

/* Did a read since the frame's start miss while collecting (sample-decode.c)?
   Then what was concluded is not kept: the bytes were never read. */
static inline bool missed(const struct rbi_vm_sampler *s)
{
	return rbi_target_missed(s->t) != s->missed_at;
}

static inline int iov_add(struct rbi_vm_sampler *s, uint64_t addr, void *buf, size_t len)
{
	if (!RBI_GROW(s->iov, s->iov_cap, s->niov + 1, 64))
		return rbi_fail(RBI_NOMEM, "out of memory");
	s->iov[s->niov++] = (struct rbi_iov){ .addr = addr, .buf = buf, .len = len };
	return RBI_OK;
}

/* An execution context read into B (S->ec_lo on) into TH. */
static inline void parse_ec(struct rbi_vm_sampler *s, struct rbi_vm_sthread *th,
			    const uint8_t *b)
{
	const struct rbi_layout *l = s->l;

	th->vm_stack = rbi_get_u64(b, l->ec_vm_stack - s->ec_lo);
	th->vm_stack_size = rbi_get_u64(b, l->ec_vm_stack_size - s->ec_lo);
	th->cfp = rbi_get_u64(b, l->ec_cfp - s->ec_lo);
	th->ec_thread = present(l->ec_thread_ptr) ? rbi_get_u64(b, l->ec_thread_ptr - s->ec_lo)
						  : th->thread;
	th->fiber = present(l->ec_fiber_ptr) ? rbi_get_u64(b, l->ec_fiber_ptr - s->ec_lo) : 0;
}

/* sample-decode.c: frames of TH from its buffers, outermost first, into
   TH->frames, and above them the GC's frames, or s->moving_frame if
   MOVING (the frames are the part of a stack that held still).  RBI_TORN
   for a frame caught moving: its index in TH's buffers in *TORN_AT. */
int rbi_vm_sampler_decode(struct rbi_vm_sampler *s, struct rbi_vm_sthread *th, bool moving,
			  size_t *torn_at);

#endif
