/* sample.c: the sampler's fast path through the VM (see sample.h).
 *
 * One sample is three batched reads (process_vm_readv with one iovec per
 * thread and region), whatever the stack depth:
 *   A (poll)  each thread's rb_thread_t fields (status, ec, vm) and its
 *             execution context (vm_stack, size, cfp, thread_ptr); each
 *             ractor's GVL owner and thread count; the GC flag and count;
 *   B         each wanted thread's control frames, ec->cfp to the end of
 *             its VM stack, in one piece;
 *   C         the VM stack values from the lowest to the highest
 *             environment those frames point at (where the method entries
 *             and frame flags are), escaped environments one by one, then
 *             again th->ec, the execution context, the frames and the
 *             values.
 * The stack is then taken as C's second look saw it, from its ec->cfp
 * down, if that top is no deeper than A's (a deeper one has frames nobody
 * read), with the environments as read after those frames.  Every one of
 * those frames must run the same iseq for the same self as B read there: a
 * frame popped in between, or one C's copy caught half way through a
 * change of the stack, would otherwise be a frame that never was.  Its ep
 * and pc may differ: code that calls all the time (a recursion) pops the
 * frames under its top and pushes them again from another call site
 * between B and C, so requiring them equal would leave such code out of a
 * profile.  An environment that changed while C read it (between its two
 * reads of the values) is kept only for a method frame, and only the
 * reading of it (after the frames, else before) that names a method
 * running that frame's own iseq: the same method pushed again, whose
 * names are right either way; any other frame with a moving
 * environment (being written, or its slot reused by another call) makes
 * the stack torn.  A torn stack is read again from C's look, and after
 * RETRIES attempts given up (RBI_TORN), never decoded.
 *
 * Frames are then decoded from the buffers: a frame's environment
 * (ep[-2..0]) and the environments of enclosing blocks are found in the
 * values read in C (no system call); method entries, iseqs and labels come
 * from caches, filled on a miss through the page cache (cleared once per
 * sample that misses, so it never serves an older sample's bytes).
 *
 * Cache validity: an iseq, a method entry or a label only goes away when
 * the GC frees it, and its address can then be reused.  The caches are
 * dropped when the GC count moved (at most once a second), or every second
 * when the layout has no GC count. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/table.h"
#include "vm/sample.h"

#define VM_STACK_MAX (1ull << 27)       /* VALUEs; as frame.c */
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
#define VM_ENV_FLAG_LOCAL 0x2u
/* The third key word of s->mes entries that hold a method entry's iseq. */
#define MES_ISEQ 1

struct iseq_info {
	struct rbi_iseq is;
	const char *path;               /* interned, NULL if unreadable */
	bool path_known;
};

struct ractor_state {
	uint64_t addr;
	uint64_t gvl_owner;
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

	uint64_t objspace;
	uint32_t gc_word;
	uint64_t gc_count, flush_gc_count;
	bool during_gc;
	unsigned gc_mode;               /* objspace flags.mode: 1 marking, 2
					   sweeping, 3 compacting; 0 unknown */

	uint64_t last_rescan_ns, last_flush_ns, rescans;
	bool need_rescan;
	bool cache_fresh;

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

	struct rbi_iov *iov;
	size_t iov_cap, niov;
};

static bool present(uint32_t off)
{
	return off != RBI_ABSENT;
}

/* The page cache is shared with every other reader of the target; clear it
   once per sample before anything here reads through it. */
static void fresh(struct rbi_vm_sampler *s)
{
	if (!s->cache_fresh) {
		rbi_cache_clear(&s->t->cache);
		s->cache_fresh = true;
	}
}

static int iov_add(struct rbi_vm_sampler *s, uint64_t addr, void *buf, size_t len)
{
	if (!RBI_GROW(s->iov, s->iov_cap, s->niov + 1, 64))
		return rbi_fail(RBI_NOMEM, "out of memory");
	s->iov[s->niov++] = (struct rbi_iov){ .addr = addr, .buf = buf, .len = len };
	return RBI_OK;
}

static void iseq_infos_free(struct rbi_vm_sampler *s)
{
	for (size_t i = 0; i < s->iseqs.cap; i++)
		if (s->iseqs.e[i].k[0])
			free((void *)(uintptr_t)s->iseqs.e[i].v);
	rbi_map_clear(&s->iseqs);
}

static void caches_flush(struct rbi_vm_sampler *s)
{
	rbi_map_clear(&s->frames);
	rbi_map_clear(&s->mes);
	rbi_map_clear(&s->labels);
	rbi_map_clear(&s->envs);
	s->nenv_words = 0;
	iseq_infos_free(s);
}

static void threads_free(struct rbi_vm_sampler *s)
{
	for (size_t i = 0; i < s->nth; i++) {
		struct rbi_vm_sthread *th = &s->th[i];

		free(th->name);
		free(th->frames);
		free(th->cfps);
		free(th->cfps2);
		free(th->vals);
		free(th->vals2);
		free(th->heap_eps);
		free(th->heap_envs);
		free(th->env_moved);
	}
	free(s->th);
	free(s->thbuf);
	free(s->ecbuf);
	free(s->ractors);
	s->th = NULL;
	s->thbuf = s->ecbuf = NULL;
	s->ractors = NULL;
	s->nth = s->nractors = 0;
}

void rbi_vm_sampler_free(struct rbi_vm_sampler *s)
{
	if (!s)
		return;
	threads_free(s);
	iseq_infos_free(s);
	rbi_map_free(&s->iseqs);
	rbi_map_free(&s->frames);
	rbi_map_free(&s->mes);
	rbi_map_free(&s->labels);
	rbi_map_free(&s->envs);
	free(s->env_words);
	rbi_frametab_free(&s->ft);
	free(s->iov);
	free(s);
}

static void span_add(uint32_t off, uint32_t len, uint32_t *lo, uint32_t *hi)
{
	if (off == RBI_ABSENT)
		return;
	if (off < *lo)
		*lo = off;
	if (off + len > *hi)
		*hi = off + len;
}

int rbi_vm_sampler_new(struct rbi_target *t, struct rbi_vm_sampler **out)
{
	struct rbi_vm_sampler *s;
	const struct rbi_layout *l;
	uint32_t lo = UINT32_MAX, hi = 0;
	struct rbi_vm *vm;
	int rc;

	if ((rc = rbi_vm_get(t, &vm)))
		return rc;
	l = vm->layout;
	if (!present(l->ec_vm_stack) || !present(l->ec_vm_stack_size) || !present(l->ec_cfp) ||
	    !present(l->cfp_size) || l->cfp_size < 40 || l->cfp_size > 256 ||
	    !present(l->thread_ec) || !present(l->thread_vm) || !present(l->thread_status) ||
	    !present(l->cfp_pc) || !present(l->cfp_iseq) || !present(l->cfp_ep) ||
	    !present(l->cfp_self))
		return rbi_fail(RBI_LAYOUT, "no thread, execution context or control "
				"frame layout to sample with");
	if (!(s = calloc(1, sizeof(*s))))
		return rbi_fail(RBI_NOMEM, "out of memory");
	s->t = t;
	s->vm = vm;
	s->l = l;

	span_add(l->thread_ec, 8, &lo, &hi);
	span_add(l->thread_vm, 8, &lo, &hi);
	span_add(l->thread_status / 8, 4, &lo, &hi);
	span_add(l->thread_root_fiber, 8, &lo, &hi);
	s->th_lo = lo;
	s->th_span = hi - lo;
	lo = UINT32_MAX;
	hi = 0;
	span_add(l->ec_vm_stack, 8, &lo, &hi);
	span_add(l->ec_vm_stack_size, 8, &lo, &hi);
	span_add(l->ec_cfp, 8, &lo, &hi);
	span_add(l->ec_thread_ptr, 8, &lo, &hi);
	span_add(l->ec_fiber_ptr, 8, &lo, &hi);
	s->ec_lo = lo;
	s->ec_span = hi - lo;
	if (s->th_span > THREAD_SPAN_MAX || s->ec_span > sizeof(s->th->check_ec)) {
		rc = rbi_fail(RBI_LAYOUT, "thread or execution context fields too far "
			      "apart to sample (%u, %u bytes)", s->th_span, s->ec_span);
		free(s);
		return rc;
	}
	s->vm_cnt_off = present(l->vm_ractor_cnt) ? l->vm_ractor_cnt : l->vm_living_thread_num;

	/* The objspace (GC state): vm->objspace up to 3.3, vm->gc.objspace
	   from 3.4.  Without its layout GC is simply not reported. */
	if (present(l->objspace_during_gc) || present(l->objspace_gc_count)) {
		uint32_t off = present(l->vm_objspace) ? l->vm_objspace : l->vm_gc_objspace;

		if (present(off) && rbi_read_u64(t, vm->info.vm + off, &s->objspace) == RBI_OK &&
		    (s->objspace & 7))
			s->objspace = 0;
	}
	s->gc_frame = rbi_frametab_intern(&s->ft, RBI_FRAME_GC, "(garbage collection)",
					  NULL, 0, 0);
	s->gc_mode_frame[1] = rbi_frametab_intern(&s->ft, RBI_FRAME_GC, "(marking)", NULL, 0, 0);
	s->gc_mode_frame[2] = rbi_frametab_intern(&s->ft, RBI_FRAME_GC, "(sweeping)", NULL, 0, 0);
	s->gc_mode_frame[3] = rbi_frametab_intern(&s->ft, RBI_FRAME_GC, "(compacting)",
						  NULL, 0, 0);
	if (!s->gc_frame || !s->gc_mode_frame[1] || !s->gc_mode_frame[2] ||
	    !s->gc_mode_frame[3]) {
		rbi_vm_sampler_free(s);
		return rbi_fail(RBI_NOMEM, "out of memory");
	}
	s->need_rescan = true;
	s->last_flush_ns = rbi_now_ns();
	*out = s;
	return RBI_OK;
}

uint64_t rbi_vm_sampler_rescans(const struct rbi_vm_sampler *s)
{
	return s->rescans;
}

/* ---- The thread set ----------------------------------------------------- */

struct rescan_ctx {
	struct rbi_vm_sampler *s;
	size_t cap;
	int rc;
};

static int rescan_thread(const struct rbi_thread *th, void *arg)
{
	struct rescan_ctx *c = arg;
	struct rbi_vm_sampler *s = c->s;
	struct rbi_vm_sthread *st;

	if (th->error)
		return 0;       /* starting or dying: the next rescan sees it */
	if (!RBI_GROW(s->th, c->cap, s->nth + 1, 16)) {
		c->rc = rbi_fail(RBI_NOMEM, "out of memory");
		return 1;
	}
	st = &s->th[s->nth++];
	memset(st, 0, sizeof(*st));
	st->number = th->number;
	st->thread = th->thread;
	st->ractor = th->ractor;
	st->tid = th->tid;
	st->main = th->main;
	st->ec = th->ec;
	st->status = th->status;
	if (th->name && !(st->name = strdup(th->name))) {
		c->rc = rbi_fail(RBI_NOMEM, "out of memory");
		return 1;
	}
	for (size_t i = 0; i < s->nractors; i++)
		if (s->ractors[i].addr == th->ractor)
			return 0;
	struct ractor_state *r = realloc(s->ractors, (s->nractors + 1) * sizeof(*r));
	if (!r) {
		c->rc = rbi_fail(RBI_NOMEM, "out of memory");
		return 1;
	}
	s->ractors = r;
	s->ractors[s->nractors++] = (struct ractor_state){ .addr = th->ractor };
	return 0;
}

/* Read the thread counts (a change means threads came or went). */
static int read_counts(struct rbi_vm_sampler *s, bool baseline)
{
	const struct rbi_layout *l = s->l;
	int rc;

	s->niov = 0;
	if (present(s->vm_cnt_off) &&
	    (rc = iov_add(s, s->vm->info.vm + s->vm_cnt_off, &s->vm_cnt_seen, 4)))
		return rc;
	for (size_t i = 0; i < s->nractors && present(l->ractor_threads_cnt); i++)
		if (s->ractors[i].addr &&
		    (rc = iov_add(s, s->ractors[i].addr + l->ractor_threads_cnt,
				  &s->ractors[i].cnt_seen, 4)))
			return rc;
	if ((rc = rbi_target_read_batch(s->t, s->iov, s->niov)))
		return rc;
	if (baseline) {
		s->vm_cnt = s->vm_cnt_seen;
		for (size_t i = 0; i < s->nractors; i++)
			s->ractors[i].cnt = s->ractors[i].cnt_seen;
	}
	return RBI_OK;
}

static int rescan(struct rbi_vm_sampler *s)
{
	struct rescan_ctx c = { .s = s };
	int rc;

	threads_free(s);
	rbi_cache_clear(&s->t->cache);
	s->cache_fresh = true;
	rc = rbi_thread_foreach(s->t, rescan_thread, &c);
	if (!rc)
		rc = c.rc;
	if (!rc)
		rc = read_counts(s, true);
	if (!rc && s->nth) {
		s->thbuf = calloc(s->nth, s->th_span);
		s->ecbuf = calloc(s->nth, s->ec_span);
		if (!s->thbuf || !s->ecbuf)
			rc = rbi_fail(RBI_NOMEM, "out of memory");
	}
	s->rescans++;
	s->last_rescan_ns = rbi_now_ns();
	s->need_rescan = rc != RBI_OK;
	if (rc)
		threads_free(s);
	return rc;
}

/* ---- Poll: every thread's volatile state -------------------------------- */

static void parse_ec(struct rbi_vm_sampler *s, struct rbi_vm_sthread *th,
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

static int poll_once(struct rbi_vm_sampler *s, bool *again)
{
	const struct rbi_layout *l = s->l;
	uint32_t owner_off = present(l->ractor_gvl_owner) ? l->ractor_gvl_owner
							  : l->ractor_sched_running;
	uint8_t gcbuf[4];
	size_t first_ec;
	int rc;

	*again = false;
	s->niov = 0;
	for (size_t i = 0; i < s->nth; i++)
		if ((rc = iov_add(s, s->th[i].thread + s->th_lo, s->thbuf + i * s->th_span,
				  s->th_span)))
			return rc;
	first_ec = s->niov;
	for (size_t i = 0; i < s->nth; i++)
		if ((rc = iov_add(s, s->th[i].ec + s->ec_lo, s->ecbuf + i * s->ec_span,
				  s->th[i].ec ? s->ec_span : 0)))
			return rc;
	if (present(s->vm_cnt_off) &&
	    (rc = iov_add(s, s->vm->info.vm + s->vm_cnt_off, &s->vm_cnt_seen, 4)))
		return rc;
	for (size_t i = 0; i < s->nractors; i++) {
		struct ractor_state *r = &s->ractors[i];

		if (!r->addr)
			continue;
		if (present(owner_off) && (rc = iov_add(s, r->addr + owner_off, &r->gvl_owner, 8)))
			return rc;
		if (present(l->ractor_threads_cnt) &&
		    (rc = iov_add(s, r->addr + l->ractor_threads_cnt, &r->cnt_seen, 4)))
			return rc;
	}
	if (present(l->vm_gvl_owner) &&
	    (rc = iov_add(s, s->vm->info.vm + l->vm_gvl_owner, &s->gvl_owner_vm, 8)))
		return rc;
	if (s->objspace && present(l->objspace_during_gc) &&
	    (rc = iov_add(s, s->objspace + l->objspace_during_gc / 8, gcbuf, 4)))
		return rc;
	if (s->objspace && present(l->objspace_gc_count) &&
	    (rc = iov_add(s, s->objspace + l->objspace_gc_count, &s->gc_count, 8)))
		return rc;
	memset(gcbuf, 0, sizeof(gcbuf));
	if ((rc = rbi_target_read_batch(s->t, s->iov, s->niov)))
		return rc;
	for (size_t i = first_ec + s->nth; i < s->niov; i++)
		if (s->iov[i].status != RBI_OK)
			return rbi_fail(RBI_CORRUPT, "cannot read the VM's thread state "
					"at 0x%" PRIx64, s->iov[i].addr);
	if (s->vm_cnt_seen != s->vm_cnt)
		*again = true;
	for (size_t i = 0; i < s->nractors; i++)
		if (s->ractors[i].addr && present(l->ractor_threads_cnt) &&
		    s->ractors[i].cnt_seen != s->ractors[i].cnt)
			*again = true;
	s->during_gc = false;
	s->gc_mode = 0;
	if (s->objspace && present(l->objspace_during_gc)) {
		uint32_t w, lo = l->objspace_during_gc / 8 * 8;

		memcpy(&w, gcbuf, 4);
		s->during_gc = (w >> (l->objspace_during_gc % 8)) & 1;
		/* The mode (2 bits) shares the flags word (Ruby 2.7-3.4). */
		if (present(l->objspace_gc_mode) && l->objspace_gc_mode >= lo &&
		    l->objspace_gc_mode + 2 <= lo + 32)
			s->gc_mode = (w >> (l->objspace_gc_mode - lo)) & 3;
	}

	for (size_t i = 0; i < s->nth; i++) {
		struct rbi_vm_sthread *th = &s->th[i];
		const uint8_t *b = s->thbuf + i * s->th_span;
		uint64_t ec, owner = s->gvl_owner_vm;
		uint32_t unit;

		th->poll_rc = RBI_OK;
		th->gvl = th->gc = false;
		if (s->iov[i].status != RBI_OK ||
		    rbi_get_u64(b, l->thread_vm - s->th_lo) != s->vm->info.vm) {
			/* Freed: the thread is gone. */
			th->poll_rc = rbi_fail(RBI_CORRUPT, "thread 0x%" PRIx64 " went away",
					       th->thread);
			*again = true;
			continue;
		}
		unit = rbi_get_u32(b, l->thread_status / 8 - s->th_lo);
		th->status = (rbi_thread_status)((unit >> (l->thread_status % 8)) & 3);
		ec = rbi_get_u64(b, l->thread_ec - s->th_lo);
		if (ec != th->ec) {
			/* Another fiber (or the first look): read its context. */
			struct rbi_iov v = { .addr = ec + s->ec_lo,
					     .buf = s->ecbuf + i * s->ec_span,
					     .len = s->ec_span };

			th->ec = ec;
			rc = RBI_OK;
			if (ec && ((ec & 7) || (rc = rbi_target_read_batch(s->t, &v, 1)) ||
				   v.status != RBI_OK)) {
				if (rc)
					return rc;
				th->poll_rc = rbi_fail(RBI_CORRUPT, "cannot read execution "
						       "context 0x%" PRIx64, ec);
				continue;
			}
		} else if (ec && s->iov[first_ec + i].status != RBI_OK) {
			th->poll_rc = rbi_fail(RBI_CORRUPT, "cannot read execution "
					       "context 0x%" PRIx64, ec);
			continue;
		}
		th->vm_stack = th->vm_stack_size = th->cfp = th->fiber = 0;
		if (ec)
			parse_ec(s, th, s->ecbuf + i * s->ec_span);
		/* th->root_fiber is set once the thread first switches fibers
		   (cont.c makes the root's object then): until then it runs
		   in its root. */
		if (present(l->thread_root_fiber)) {
			uint64_t root = rbi_get_u64(b, l->thread_root_fiber - s->th_lo);

			th->root_fiber = th->fiber && (!root || root == th->fiber);
		}
		if (ec && th->ec_thread != th->thread) {
			/* Between fibers, or reused: look again next time. */
			th->poll_rc = rbi_fail(RBI_CORRUPT, "execution context 0x%" PRIx64
					       " is not thread 0x%" PRIx64 "'s", ec, th->thread);
			continue;
		}
		for (size_t r = 0; r < s->nractors; r++)
			if (s->ractors[r].addr && s->ractors[r].addr == th->ractor)
				owner = s->ractors[r].gvl_owner;
		th->gvl = owner && owner == th->thread;
		th->gc = s->during_gc && th->gvl;
	}
	return RBI_OK;
}

int rbi_vm_sampler_poll(struct rbi_vm_sampler *s, struct rbi_vm_sthread **threads,
			size_t *n)
{
	uint64_t now = rbi_now_ns();
	bool again;
	int rc;

	s->cache_fresh = false;
	/* Caches go stale only when the GC frees what they describe. */
	if (now - s->last_flush_ns >= FLUSH_NS &&
	    (!present(s->l->objspace_gc_count) || !s->objspace ||
	     s->gc_count != s->flush_gc_count)) {
		caches_flush(s);
		s->flush_gc_count = s->gc_count;
		s->last_flush_ns = now;
	}
	if (s->need_rescan || now - s->last_rescan_ns >= RESCAN_NS) {
		if ((rc = rescan(s)))
			return rc;
	}
	if ((rc = poll_once(s, &again)))
		return rc;
	if (again && now - s->last_rescan_ns >= RESCAN_NS / 20) {
		/* The thread set changed: walk it again (at most 20 times a
		   second) and look once more. */
		if ((rc = rescan(s)) || (rc = poll_once(s, &again)))
			return rc;
	}
	s->need_rescan = again;
	*threads = s->th;
	*n = s->nth;
	return RBI_OK;
}

/* ---- Read: control frames and environments ------------------------------ */

/* The environment (ep[-2], ep[-1], ep[0]) at EP: from the values read for
   TH, else its escaped copy, else the target. */
static int env_at(struct rbi_vm_sampler *s, struct rbi_vm_sthread *th, uint64_t ep,
		  uint64_t env[3])
{
	uint64_t v;
	int rc;

	if (!ep || (ep & 7) || ep < 16)
		return rbi_fail(RBI_CORRUPT, "environment 0x%" PRIx64 " is no pointer", ep);
	if (ep - 16 >= th->vals_lo && ep + 8 <= th->vals_hi) {
		memcpy(env, th->vals + (ep - 16 - th->vals_lo), 24);
		return RBI_OK;
	}
	for (size_t i = 0; i < th->nheap; i++)
		if (th->heap_eps[i] == ep) {
			memcpy(env, th->heap_envs + 3 * i, 24);
			return RBI_OK;
		}
	/* An escaped environment that no frame points at (a block's outer
	   scope kept by a Proc): its three words do not change while it
	   lives, so they are cached like the rest. */
	if (rbi_map_get(&s->envs, ep, 0, 3, &v)) {
		memcpy(env, s->env_words + 3 * v, 24);
		return RBI_OK;
	}
	fresh(s);
	if ((rc = rbi_read(s->t, ep - 16, env, 24)))
		return rbi_fail_context(rc, "environment 0x%" PRIx64 ": ", ep);
	if (!rbi_grow(&s->env_words, &s->env_words_cap, s->nenv_words + 1,
		      3 * sizeof(*s->env_words), 64))
		return RBI_OK;
	memcpy(s->env_words + 3 * s->nenv_words, env, 24);
	if (!rbi_map_put(&s->envs, ep, 0, 3, s->nenv_words))
		s->nenv_words++;
	return RBI_OK;
}

static uint64_t me_check(struct rbi_vm_sampler *s, uint64_t v, bool can_be_svar)
{
	uint64_t got;

	if (!rbi_vm_heap_p(s->vm, v))
		return 0;
	if (rbi_map_get(&s->mes, v | can_be_svar, 0, 0, &got))
		return got & ~(uint64_t)1;
	fresh(s);
	got = rbi_vm_check_method_entry(s->t, s->vm, v, can_be_svar);
	rbi_map_put(&s->mes, v | can_be_svar, 0, 0, got | 1);
	return got;
}

/* rb_vm_frame_method_entry from the environment ENV at EP. */
static int frame_cme(struct rbi_vm_sampler *s, struct rbi_vm_sthread *th, uint64_t ep,
		     const uint64_t env_in[3], uint64_t *cme)
{
	uint64_t env[3];
	int rc;

	memcpy(env, env_in, sizeof(env));
	*cme = 0;
	for (int hops = 0; !(env[2] & VM_ENV_FLAG_LOCAL); hops++) {
		if (hops > EP_CHAIN_MAX)
			return rbi_fail(RBI_CORRUPT, "environment chain from 0x%" PRIx64
					" does not end", ep);
		if ((*cme = me_check(s, env[0], false)))
			return RBI_OK;
		if (!(env[1] & ~(uint64_t)3) || (env[1] & 4))
			return rbi_fail(RBI_CORRUPT, "environment 0x%" PRIx64 " has no "
					"previous environment", ep);
		ep = env[1] & ~(uint64_t)3;
		if ((rc = env_at(s, th, ep, env)))
			return rc;
	}
	*cme = me_check(s, env[0], true);
	return RBI_OK;
}

static int iseq_info_get(struct rbi_vm_sampler *s, uint64_t iseq, bool reread,
			 struct iseq_info **out)
{
	struct iseq_info *info;
	uint64_t v;
	int rc;

	if (!reread && rbi_map_get(&s->iseqs, iseq, 0, 0, &v)) {
		*out = (struct iseq_info *)(uintptr_t)v;
		return RBI_OK;
	}
	fresh(s);
	if (rbi_map_get(&s->iseqs, iseq, 0, 0, &v)) {
		info = (struct iseq_info *)(uintptr_t)v;
		memset(info, 0, sizeof(*info));
	} else if (!(info = calloc(1, sizeof(*info)))) {
		return rbi_fail(RBI_NOMEM, "out of memory");
	} else if ((rc = rbi_map_put(&s->iseqs, iseq, 0, 0, (uintptr_t)info))) {
		free(info);
		return rc;
	}
	if ((rc = rbi_iseq_read(s->t, s->vm, iseq, &info->is))) {
		/* A torn or stale pointer: don't keep it. */
		memset(&info->is, 0, sizeof(info->is));
		info->is.addr = 0;
		return rc;
	}
	*out = info;
	return RBI_OK;
}

/* A Ruby frame met for the first time (or since the last flush). */
static int resolve_ruby(struct rbi_vm_sampler *s, uint64_t iseq, uint64_t pc,
			uint64_t jit_return, uint64_t cme, uint64_t *out)
{
	const struct rbi_sample_frame *f;
	struct iseq_info *info;
	const char *label;
	uint64_t v;
	int line, rc;

	if ((rc = iseq_info_get(s, iseq, false, &info)))
		return rc;
	if (!info->is.addr && (rc = iseq_info_get(s, iseq, true, &info)))
		return rc;
	rc = rbi_iseq_frame_line(s->t, s->vm, &info->is, pc, jit_return, &line);
	if (rc == RBI_CORRUPT) {
		/* The address may hold another iseq now: read it again. */
		if ((rc = iseq_info_get(s, iseq, true, &info)) ||
		    (rc = rbi_iseq_frame_line(s->t, s->vm, &info->is, pc, jit_return, &line)))
			return rc;
		rbi_map_put(&s->labels, iseq, cme, 2, 0);
	} else if (rc) {
		return rc;
	}
	if (rbi_map_get(&s->labels, iseq, cme, 2, &v) && v && info->path_known) {
		label = (const char *)(uintptr_t)v;
	} else {
		char *lab = NULL, *path = NULL;

		fresh(s);
		rbi_vm_frame_names(s->t, s->vm, &info->is, cme, &lab, &path);
		label = rbi_strtab_intern(&s->ft.strs, lab ? lab : "(unknown)",
					  strlen(lab ? lab : "(unknown)"));
		info->path = path ? rbi_strtab_intern(&s->ft.strs, path, strlen(path)) : NULL;
		info->path_known = true;
		free(lab);
		free(path);
		if (!label || (rc = rbi_map_put(&s->labels, iseq, cme, 2, (uintptr_t)label)))
			return rbi_fail(RBI_NOMEM, "out of memory");
	}
	/* A builtin that backtraces show as a C method is sampled as one. */
	f = rbi_iseq_c_trace(&info->is) ?
	    rbi_frametab_intern(&s->ft, RBI_FRAME_CFUNC, label, NULL, 0, 0) :
	    rbi_frametab_intern(&s->ft, RBI_FRAME_RUBY, label, info->path, line,
				info->is.first_lineno);
	if (!f)
		return rbi_fail(RBI_NOMEM, "out of memory");
	*out = (uintptr_t)f | (info->is.type == RBI_ISEQ_RESCUE ||
			       info->is.type == RBI_ISEQ_ENSURE);
	return rbi_map_put(&s->frames, iseq, pc, cme, *out);
}

static int resolve_cfunc(struct rbi_vm_sampler *s, uint64_t cme, uint64_t *out)
{
	const struct rbi_sample_frame *f;
	char *lab = NULL, *path = NULL;

	fresh(s);
	if (cme)
		rbi_vm_frame_names(s->t, s->vm, NULL, cme, &lab, &path);
	f = rbi_frametab_intern(&s->ft, RBI_FRAME_CFUNC, lab, NULL, 0, 0);
	free(lab);
	free(path);
	if (!f)
		return rbi_fail(RBI_NOMEM, "out of memory");
	*out = (uintptr_t)f;
	return rbi_map_put(&s->frames, 1, cme, 0, *out);
}

/* Is the frame a method frame whose method entry CME runs its ISEQ? */
static bool runs_iseq(struct rbi_vm_sampler *s, uint64_t cme, uint64_t iseq,
		      rbi_frame_type type)
{
	uint64_t v;

	if (!cme || !iseq || type != RBI_FRAME_TYPE_METHOD)
		return false;
	if (!rbi_map_get(&s->mes, cme, 0, MES_ISEQ, &v)) {
		fresh(s);
		if (rbi_vm_cme_iseq(s->t, s->vm, cme, &v))
			v = 0;
		rbi_map_put(&s->mes, cme, 0, MES_ISEQ, v);
	}
	return v == iseq;
}

/* A frame whose environment at EP moved while C read it: of C's two
   readings of it (after the frames, then before them), take the first that
   is the environment of a method frame whose method runs the frame's own
   ISEQ: the same method pushed again, whose names are right either way.
   False if neither is. */
static bool settle_env(struct rbi_vm_sampler *s, struct rbi_vm_sthread *th, uint64_t ep,
		       uint64_t iseq, uint64_t env[3], rbi_frame_type *type, uint64_t *cme)
{
	const uint8_t *reads[] = { th->vals, th->vals2 };       /* see swap_vals */

	for (size_t r = 0; r < RBI_ARRAY_SIZE(reads); r++) {
		memcpy(env, reads[r] + (ep - 16 - th->vals_lo), 24);
		*type = rbi_vm_frame_type(env[2]);
		/* A method frame's environment is local: frame_cme reads
		   nothing else. */
		if (*type == RBI_FRAME_TYPE_METHOD && !frame_cme(s, th, ep, env, cme) &&
		    runs_iseq(s, *cme, iseq, *type))
			return true;
	}
	return false;
}

/* Frames of TH from its buffers, outermost first, into TH->frames. */
static int decode(struct rbi_vm_sampler *s, struct rbi_vm_sthread *th)
{
	const struct rbi_layout *l = s->l;
	bool skip_next = false;
	size_t n = 0;
	int rc;

	if (th->frames_cap < th->ncfps + 2) {
		const struct rbi_sample_frame **v =
			realloc(th->frames, (th->ncfps + 2) * sizeof(*v));

		if (!v)
			return rbi_fail(RBI_NOMEM, "out of memory");
		th->frames = v;
		th->frames_cap = th->ncfps + 2;
	}
	for (size_t i = 0; i < th->ncfps; i++) {
		const uint8_t *c = th->cfps + i * l->cfp_size;
		uint64_t pc = rbi_get_u64(c, l->cfp_pc), iseq = rbi_get_u64(c, l->cfp_iseq);
		uint64_t ep = rbi_get_u64(c, l->cfp_ep), env[3], cme, v = 0;
		rbi_frame_type type;

		if (iseq && !pc)
			continue;       /* IFUNC, dummy and finished frames */
		if (th->env_moved[i]) {
			if (!settle_env(s, th, ep, iseq, env, &type, &cme))
				return rbi_fail(RBI_TORN, "control frame 0x%" PRIx64 " was "
						"pushed again while it was read",
						th->cfps_at + i * l->cfp_size);
		} else {
			if ((rc = env_at(s, th, ep, env)))
				return rc;
			type = rbi_vm_frame_type(env[2]);
			if (type == RBI_FRAME_TYPE_UNKNOWN)     /* being written */
				return rbi_fail(RBI_TORN, "control frame 0x%" PRIx64 " has no "
						"frame magic", th->cfps_at + i * l->cfp_size);
			if (!iseq && type != RBI_FRAME_TYPE_CFUNC)
				continue;
			if ((rc = frame_cme(s, th, ep, env, &cme)))
				return rc;
		}
		/* A method or C method frame always has its method entry; one
		   without was caught half written (Ruby 2.7 sets ec->cfp before
		   it fills the frame in). */
		if (!cme && (type == RBI_FRAME_TYPE_METHOD || type == RBI_FRAME_TYPE_CFUNC))
			return RBI_TORN;
		if (iseq) {
			bool skip = skip_next;

			uint64_t jit_return = l->cfp_jit_return != RBI_ABSENT ?
					      rbi_get_u64(c, l->cfp_jit_return) : 0;

			if (!rbi_map_get(&s->frames, iseq, pc, cme, &v) &&
			    (rc = resolve_ruby(s, iseq, pc, jit_return, cme, &v)))
				return rc;
			skip_next = s->vm->k.label_skips_rescue_caller && (v & 1);
			if (skip)
				continue;
		} else if (!rbi_map_get(&s->frames, 1, cme, 0, &v) &&
			   (rc = resolve_cfunc(s, cme, &v))) {
			return rc;
		}
		th->frames[n++] = (const struct rbi_sample_frame *)(uintptr_t)(v & ~(uint64_t)1);
	}
	/* Innermost first so far: turn it round, then GC on top, and what it
	   does (marking, sweeping) on top of that. */
	for (size_t i = 0; i < n / 2; i++) {
		const struct rbi_sample_frame *f = th->frames[i];

		th->frames[i] = th->frames[n - 1 - i];
		th->frames[n - 1 - i] = f;
	}
	if (th->gc) {
		th->frames[n++] = s->gc_frame;
		if (s->gc_mode_frame[s->gc_mode])
			th->frames[n++] = s->gc_mode_frame[s->gc_mode];
	}
	th->nframes = n;
	return RBI_OK;
}

static int grow(uint8_t **buf, size_t *cap, size_t need)
{
	if (*cap >= need)
		return RBI_OK;
	uint8_t *b = realloc(*buf, need);
	if (!b)
		return rbi_fail(RBI_NOMEM, "out of memory");
	*buf = b;
	*cap = need;
	return RBI_OK;
}

/* Stage B for TH: its frame range (or a final RC without frames). */
static int plan_frames(struct rbi_vm_sampler *s, struct rbi_vm_sthread *th,
		       size_t max_frames, bool *done)
{
	const struct rbi_layout *l = s->l;
	uint64_t end, last, n;
	int rc;

	*done = true;
	th->nframes = th->ncfps = 0;
	th->truncated = false;
	th->rc = RBI_OK;
	/* Ruby has no backtrace for a killed thread; a thread without
	   vm_stack or cfp is starting or finishing. */
	if (th->status == RBI_THREAD_KILLED || !th->ec || !th->vm_stack || !th->cfp)
		return RBI_OK;
	if ((th->vm_stack & 7) || !th->vm_stack_size || th->vm_stack_size > VM_STACK_MAX ||
	    th->vm_stack + th->vm_stack_size * 8 < th->vm_stack) {
		th->rc = rbi_fail(RBI_CORRUPT, "execution context 0x%" PRIx64 " has a "
				  "VM stack of %" PRIu64 " values", th->ec, th->vm_stack_size);
		return RBI_OK;
	}
	end = th->vm_stack + th->vm_stack_size * 8;
	last = end - l->cfp_size;
	if (th->cfp < th->vm_stack || th->cfp > end || (end - th->cfp) % l->cfp_size) {
		th->rc = rbi_fail(RBI_CORRUPT, "control frame 0x%" PRIx64 " is not in "
				  "its VM stack", th->cfp);
		return RBI_OK;
	}
	if (th->cfp >= last)
		return RBI_OK;
	n = (last - th->cfp) / l->cfp_size;
	if (max_frames && n > max_frames) {
		n = max_frames;
		th->truncated = true;
	}
	th->ext = th->truncated ? 0 : th->ext_hint ? th->ext_hint : EXT_MIN;
	if (th->ext > (th->cfp - th->vm_stack) / l->cfp_size)
		th->ext = (th->cfp - th->vm_stack) / l->cfp_size;
	n += th->ext;
	if ((rc = grow(&th->cfps, &th->cfps_cap, n * l->cfp_size)))
		return rc;
	th->ncfps = n;
	th->cfps_at = th->cfp - th->ext * l->cfp_size;
	*done = false;
	return iov_add(s, th->cfps_at, th->cfps, n * l->cfp_size);
}

/* Stage C for TH: the values its frames' environments are in, escaped
   environments, and the second look. */
static int plan_values(struct rbi_vm_sampler *s, struct rbi_vm_sthread *th)
{
	const struct rbi_layout *l = s->l;
	uint64_t lo = UINT64_MAX, hi = 0;
	int rc;

	th->nheap = 0;
	for (size_t k = 0; k < th->ncfps; k++) {
		uint64_t ep = rbi_get_u64(th->cfps + k * l->cfp_size, l->cfp_ep);

		if (!ep || (ep & 7))
			continue;       /* decode() reports it */
		if (ep - 16 >= th->vm_stack && ep + 8 <= th->cfp && ep >= 16) {
			if (ep - 16 < lo)
				lo = ep - 16;
			if (ep + 8 > hi)
				hi = ep + 8;
		} else if (k >= th->ext && th->nheap < HEAP_ENVS_MAX) {
			if (th->nheap == th->heap_cap) {
				size_t cap = th->heap_cap ? th->heap_cap * 2 : 8;
				uint64_t *a = realloc(th->heap_eps, cap * sizeof(*a));

				if (!a)
					return rbi_fail(RBI_NOMEM, "out of memory");
				th->heap_eps = a;
				a = realloc(th->heap_envs, cap * 3 * sizeof(*a));
				if (!a)
					return rbi_fail(RBI_NOMEM, "out of memory");
				th->heap_envs = a;
				th->heap_cap = cap;
			}
			th->heap_eps[th->nheap++] = ep;
		}
	}
	th->vals_lo = th->vals_hi = 0;
	if (hi > lo) {
		if ((rc = grow(&th->vals, &th->vals_cap, hi - lo)) ||
		    (rc = iov_add(s, lo, th->vals, hi - lo)))
			return rc;
		th->vals_lo = lo;
		th->vals_hi = hi;
	}
	for (size_t k = 0; k < th->nheap; k++)
		if ((rc = iov_add(s, th->heap_eps[k] - 16, th->heap_envs + 3 * k, 24)))
			return rc;
	if ((rc = iov_add(s, th->thread + l->thread_ec, &th->check_th_ec, 8)) ||
	    (rc = iov_add(s, th->ec + s->ec_lo, th->check_ec, s->ec_span)) ||
	    (rc = grow(&th->cfps2, &th->cfps2_cap, th->ncfps * l->cfp_size)) ||
	    (rc = iov_add(s, th->cfps_at, th->cfps2, th->ncfps * l->cfp_size)))
		return rc;
	if (hi > lo && ((rc = grow(&th->vals2, &th->vals2_cap, hi - lo)) ||
			(rc = iov_add(s, lo, th->vals2, hi - lo))))
		return rc;
	return RBI_OK;
}

/* The values read after the frames become the ones decoded; those read
   before stay in vals2 (settle_env). */
static void swap_vals(struct rbi_vm_sthread *th)
{
	uint8_t *v = th->vals;
	size_t cap = th->vals_cap;

	th->vals = th->vals2;
	th->vals_cap = th->vals2_cap;
	th->vals2 = v;
	th->vals2_cap = cap;
}

/* Is TH's stack from C's look one that was there: its top no deeper than
   what was read, its frames running what B saw there, their environments
   read?  Then keep those frames and environments (C's second look) and
   note which environments changed while C read; return true.  If not, take C's look as the next starting
   point. */
static bool steady(struct rbi_vm_sampler *s, struct rbi_vm_sthread *th)
{
	const struct rbi_layout *l = s->l;
	uint64_t cfp = rbi_get_u64(th->check_ec, l->ec_cfp - s->ec_lo), skip = 0;
	bool ok = th->check_th_ec == th->ec && cfp >= th->cfps_at &&
		  (cfp - th->cfps_at) % l->cfp_size == 0 &&
		  rbi_get_u64(th->check_ec, l->ec_vm_stack - s->ec_lo) == th->vm_stack;

	if (ok) {
		skip = (cfp - th->cfps_at) / l->cfp_size;
		/* Popped below what was read: it was not the stack then. */
		ok = skip <= th->ncfps && (skip < th->ncfps || !th->truncated) &&
		     rbi_grow(&th->env_moved, &th->env_moved_cap, th->ncfps - skip + 1,
			      sizeof(*th->env_moved), 64);
	} else if (th->check_th_ec == th->ec && cfp < th->cfps_at && cfp >= th->vm_stack) {
		/* Deeper than the slots read above the top: read more of them. */
		size_t want = 2 * ((th->cfps_at - cfp) / l->cfp_size + th->ext);

		th->ext_hint = want > EXT_MAX ? EXT_MAX : want;
	}
	for (size_t k = skip; ok && k < th->ncfps; k++) {
		const uint8_t *a = th->cfps + k * l->cfp_size, *b = th->cfps2 + k * l->cfp_size;
		uint64_t ep = rbi_get_u64(b, l->cfp_ep);
		bool *moved = &th->env_moved[k - skip];

		/* The same code for the same receiver in B and C: a frame that
		   is not (popped, or C's copy caught the stack half way through
		   a change) would be a frame that never was. */
		ok = rbi_vm_cfp_kept(l, a, b);
		*moved = false;
		if (!ok)
			break;
		if (ep >= 16 && ep - 16 >= th->vals_lo && ep + 8 <= th->vals_hi)
			*moved = memcmp(th->vals + (ep - 16 - th->vals_lo),
					th->vals2 + (ep - 16 - th->vals_lo), 24) != 0;
		else if (k < th->ext)
			ok = false;     /* pushed since: its environment was not read */
	}
	if (!ok) {
		if (th->check_th_ec == th->ec)
			parse_ec(s, th, th->check_ec);
		return false;
	}
	if (th->ext_hint > EXT_MIN)
		th->ext_hint -= th->ext_hint / 8;
	/* The stack as it was at C's look: the later reading, from its top. */
	th->ncfps -= skip;
	memcpy(th->cfps, th->cfps2 + skip * l->cfp_size, th->ncfps * l->cfp_size);
	th->cfps_at = th->cfp = cfp;
	swap_vals(th);
	return true;
}

/* Read the batch planned in s->iov; *NONE (and nothing read) if nothing is
   planned: no thread is wanted any more. */
static int read_planned(struct rbi_vm_sampler *s, bool *none)
{
	*none = !s->niov;
	return *none ? RBI_OK : rbi_target_read_batch(s->t, s->iov, s->niov);
}

/* The end of a read: threads still wanted are torn. */
static int rest_torn(struct rbi_vm_sampler *s)
{
	for (size_t i = 0; i < s->nth; i++)
		if (s->th[i].want) {
			s->th[i].want = false;
			s->th[i].rc = RBI_TORN;
		}
	return RBI_OK;
}

int rbi_vm_sampler_read(struct rbi_vm_sampler *s, size_t max_frames, unsigned retries)
{
	size_t pending = 0;
	bool none;
	int rc;

	for (size_t i = 0; i < s->nth; i++) {
		struct rbi_vm_sthread *th = &s->th[i];

		th->retries = 0;
		th->nframes = 0;
		th->truncated = false;
		th->rc = th->poll_rc;
		if (th->want && !th->poll_rc)
			pending++;
		else
			th->want = false;
	}
	for (unsigned attempt = 0; pending && attempt <= retries; attempt++) {
		bool done;

		/* B: control frames. */
		s->niov = 0;
		for (size_t i = 0; i < s->nth; i++) {
			struct rbi_vm_sthread *th = &s->th[i];

			if (!th->want)
				continue;
			if ((rc = plan_frames(s, th, max_frames, &done)))
				return rc;
			if (done) {
				th->want = false;
				pending--;
			}
		}
		if ((rc = read_planned(s, &none)) || none)
			return rc ? rc : rest_torn(s);
		for (size_t i = 0, k = 0; i < s->nth; i++) {
			struct rbi_vm_sthread *th = &s->th[i];

			if (!th->want)
				continue;
			if (s->iov[k++].status != RBI_OK) {
				/* Its stack went away (a fiber ended, the thread
				   died): moved under the read. */
				th->rc = RBI_TORN;
				th->want = false;
				pending--;
			}
		}
		/* C: environments and the second look. */
		s->niov = 0;
		for (size_t i = 0; i < s->nth; i++)
			if (s->th[i].want && (rc = plan_values(s, &s->th[i])))
				return rc;
		if ((rc = read_planned(s, &none)) || none)
			return rc ? rc : rest_torn(s);
		for (size_t i = 0, k = 0; i < s->nth; i++) {
			struct rbi_vm_sthread *th = &s->th[i];
			size_t nio;
			bool bad = false;

			if (!th->want)
				continue;
			nio = 2 * (th->vals_hi > th->vals_lo) + th->nheap + 3;
			for (size_t j = 0; j < nio; j++)
				bad |= s->iov[k + j].status != RBI_OK;
			k += nio;
			if (!bad && steady(s, th)) {
				th->rc = decode(s, th);
				if (th->rc == RBI_NOMEM)
					return th->rc;
				if (th->rc != RBI_TORN) {
					th->want = false;
					pending--;
					continue;
				}
			}
			th->retries++;
			th->rc = RBI_TORN;
			if (th->check_th_ec != th->ec) {
				/* Another fiber: start over next sample. */
				th->want = false;
				pending--;
			}
		}
	}
	return rest_torn(s);
}
