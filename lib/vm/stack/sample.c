/* sample.c: the sampler's fast path through the VM (see sample.h).
 *
 * One sample is three batched reads (process_vm_readv with one iovec per
 * thread and region), whatever the stack depth:
 *   A (poll)  each thread's rb_thread_t fields (status, ec, vm) and its
 *             execution context (vm_stack, size, cfp, thread_ptr); each
 *             ractor's GVL owner and thread count; the GC flag and count;
 *   B         each wanted thread's control frames, ec->cfp to the end of
 *             its VM stack, in one piece;
 *   C         the frames again, the VM stack values from the lowest to
 *             the highest environment B's frames point at (where the
 *             method entries and frame flags are), escaped environments
 *             one by one, then again th->ec, the execution context, the
 *             frames and the values.
 * B only finds what C reads: the two readings of the frames that are
 * compared are both C's, as close together as one batch puts them.
 * The stack is then taken as C's second look saw it, from its ec->cfp
 * down, if that top is no deeper than A's (a deeper one has frames nobody
 * read), with the environments as read after those frames.  Every one of
 * those frames must run the same iseq for the same self as C's first
 * reading saw there: a frame popped in between, or one C's copy caught
 * half way through a change of the stack, would otherwise be a frame that
 * never was.  Its ep and pc may differ: code that calls all the time (a
 * recursion) pops the frames under its top and pushes them again from
 * another call site between the two readings, so requiring them equal
 * would leave such code out of a profile; but a caller whose callee is
 * the same invocation in both readings gets the first reading's pc back
 * if the second's moved: the callee returned while C read, and C's second
 * copy of the caller ran on (rbi_vm_cfp_caller_settle).  An environment
 * that changed while C read it (between its two reads of the values) is
 * kept only for a method frame, and only the reading of it (after the
 * frames, else before) that names a method running that frame's own
 * iseq: the same method pushed again, whose names are right either way;
 * any other frame with a moving environment (being written, or its slot
 * reused by another call) makes the stack torn.  A torn stack is read again from C's look.  After
 * RETRIES attempts, what held still is kept: the frames beneath the
 * innermost change that both of the last attempt's readings agree on (the
 * same tests, from the outermost frame in), under a made-up leaf,
 * "(moving)".  Dropping the stack instead would bias a profile: the
 * stacks that move are those of code that calls and returns all the time,
 * and leaving them out shrinks its share (fib(22) beside a flat loop lost
 * 0.4 to 4 points); its callers are still known.  A stack of which nothing
 * held still (its outermost frame changed, another fiber runs) is given
 * up (RBI_TORN), never decoded.
 *
 * Frames are then decoded from the buffers: a frame's environment
 * (ep[-2..0]) and the environments of enclosing blocks are found in the
 * values read in C (no system call); method entries, iseqs and labels come
 * from caches, filled on a miss through the page cache (cleared once per
 * sample that misses, so it never serves an older sample's bytes).  The
 * misses of a sample are read together, a batch per level of what they
 * read (sample-decode.c: decoding rounds).
 *
 * Cache validity: an iseq, a method entry or a label only goes away when
 * the GC frees it, and its address can then be reused.  The caches are
 * dropped when the GC count moved (at most once a second), or every second
 * when the layout has no GC count.
 *
 * Here: the sampler's life, its thread set and the poll (A);
 * sample-read.c: B, C and the tear check; sample-decode.c: the frames;
 * sample-priv.h: what they share. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vm/stack/sample-priv.h"

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
	uint32_t lo = UINT32_MAX, hi = 0, vm_head;
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
	if (!rbi_vm_gvl_queue(l, &s->gvlq_node, &s->gvlq_head, &vm_head))
		s->gvlq_node = RBI_ABSENT;
	span_add(s->gvlq_node, 8, &lo, &hi);
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
	s->moving_frame = rbi_frametab_intern(&s->ft, RBI_FRAME_OTHER, "(moving)", NULL, 0, 0);
	if (!s->gc_frame || !s->gc_mode_frame[1] || !s->gc_mode_frame[2] ||
	    !s->gc_mode_frame[3] || !s->moving_frame) {
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
	rbi_target_forget(s->t);
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

/* Poll, step 1: read A's iovecs, each thread's and then each execution
   context's (from *FIRST_EC), the ractors' GVL owners and thread counts,
   the GC flag (into GCBUF) and count. */
static int poll_plan(struct rbi_vm_sampler *s, uint8_t gcbuf[4], size_t *first_ec)
{
	const struct rbi_layout *l = s->l;
	uint32_t owner_off = present(l->ractor_gvl_owner) ? l->ractor_gvl_owner
							  : l->ractor_sched_running;
	int rc;

	s->niov = 0;
	for (size_t i = 0; i < s->nth; i++)
		if ((rc = iov_add(s, s->th[i].thread + s->th_lo, s->thbuf + i * s->th_span,
				  s->th_span)))
			return rc;
	*first_ec = s->niov;
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
		if (present(s->gvlq_node) && present(s->gvlq_head) &&
		    (rc = iov_add(s, r->addr + s->gvlq_head, &r->gvlq_next, 8)))
			return rc;
		if (present(l->ractor_running_ec) &&
		    (rc = iov_add(s, r->addr + l->ractor_running_ec, &r->running_ec, 8)))
			return rc;
	}
	if (present(l->vm_gvl_owner) &&
	    (rc = iov_add(s, s->vm->info.vm + l->vm_gvl_owner, &s->gvl_owner_vm, 8)))
		return rc;
	if (present(s->gvlq_node) && present(l->vm_gvl_waitq) &&
	    (rc = iov_add(s, s->vm->info.vm + l->vm_gvl_waitq, &s->gvlq_next_vm, 8)))
		return rc;
	if (s->objspace && present(l->objspace_during_gc) &&
	    (rc = iov_add(s, s->objspace + l->objspace_during_gc / 8, gcbuf, 4)))
		return rc;
	if (s->objspace && present(l->objspace_gc_count) &&
	    (rc = iov_add(s, s->objspace + l->objspace_gc_count, &s->gc_count, 8)))
		return rc;
	memset(gcbuf, 0, 4);
	return RBI_OK;
}

/* Poll, step 2: what A read of the VM as a whole: whether the thread set
   changed (*AGAIN), and whether the GC runs. */
static void poll_vm(struct rbi_vm_sampler *s, const uint8_t gcbuf[4], bool *again)
{
	const struct rbi_layout *l = s->l;

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
}

/* Poll, step 3: thread I's state as A read it (FIRST_EC as poll_plan set
   it).  What is wrong with the thread alone is its poll_rc; the return is
   an error reading the target at all. */
static int poll_thread(struct rbi_vm_sampler *s, size_t i, size_t first_ec, bool *again)
{
	const struct rbi_layout *l = s->l;
	struct rbi_vm_sthread *th = &s->th[i];
	const uint8_t *b = s->thbuf + i * s->th_span;
	uint64_t ec, owner = s->gvl_owner_vm;
	const struct ractor_state *ractor = NULL;
	uint32_t unit;
	int rc;

	th->poll_rc = RBI_OK;
	th->gvl = th->gvl_wait = th->gc = false;
	if (s->iov[i].status != RBI_OK ||
	    rbi_get_u64(b, l->thread_vm - s->th_lo) != s->vm->info.vm) {
		/* Freed: the thread is gone. */
		th->poll_rc = rbi_fail(RBI_CORRUPT, "thread 0x%" PRIx64 " went away",
				       th->thread);
		*again = true;
		return RBI_OK;
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
			return RBI_OK;
		}
	} else if (ec && s->iov[first_ec + i].status != RBI_OK) {
		th->poll_rc = rbi_fail(RBI_CORRUPT, "cannot read execution "
				       "context 0x%" PRIx64, ec);
		return RBI_OK;
	}
	th->vm_stack = th->vm_stack_size = th->cfp = th->fiber = 0;
	if (ec)
		parse_ec(s, th, s->ecbuf + i * s->ec_span);
	/* th->root_fiber is set once the thread first switches fibers
	   (cont.c makes the root's object then): until then it runs in its
	   root. */
	if (present(l->thread_root_fiber)) {
		uint64_t root = rbi_get_u64(b, l->thread_root_fiber - s->th_lo);

		th->root_fiber = th->fiber && (!root || root == th->fiber);
	}
	if (ec && th->ec_thread != th->thread) {
		/* Between fibers, or reused: look again next time. */
		th->poll_rc = rbi_fail(RBI_CORRUPT, "execution context 0x%" PRIx64
				       " is not thread 0x%" PRIx64 "'s", ec, th->thread);
		return RBI_OK;
	}
	for (size_t r = 0; r < s->nractors; r++)
		if (s->ractors[r].addr && s->ractors[r].addr == th->ractor)
			ractor = &s->ractors[r];
	if (ractor)
		owner = ractor->gvl_owner;
	th->gvl = owner && owner == th->thread;
	/* Handed the GVL, not running yet: it still waits (a woken thread's
	   wait: tens of microseconds, most of the time of threads that
	   release the GVL for short calls). */
	if (th->gvl && ractor && present(l->ractor_running_ec) &&
	    rbi_vm_gvl_handed_on(ractor->running_ec, ec)) {
		th->gvl = false;
		th->gvl_wait = true;
	}
	th->gc = s->during_gc && th->gvl;
	return RBI_OK;
}

/* The index of the thread at ADDR, or s->nth. */
static size_t thread_index(const struct rbi_vm_sampler *s, uint64_t addr)
{
	size_t i = 0;

	while (i < s->nth && s->th[i].thread != addr)
		i++;
	return i;
}

/* Poll, step 4: the threads in the GVL queue whose head is at HEAD (its
   first node NEXT), followed through the nodes the threads' own reads
   hold.  Those reads are one moment's, not one instant's: a queue that
   changed between them ends the walk where it stops making sense (a node
   of no thread polled, or more nodes than threads). */
static void poll_gvl_queue(struct rbi_vm_sampler *s, uint64_t head, uint64_t next)
{
	for (size_t hops = 0; next != head && hops < s->nth; hops++) {
		size_t i = next > s->gvlq_node ? thread_index(s, next - s->gvlq_node) : s->nth;

		if (i == s->nth || s->th[i].poll_rc)
			return;
		s->th[i].gvl_wait = !s->th[i].gvl;      /* not one that holds it already */
		next = rbi_get_u64(s->thbuf + i * s->th_span, s->gvlq_node - s->th_lo);
	}
}

static int poll_once(struct rbi_vm_sampler *s, bool *again)
{
	uint8_t gcbuf[4];
	size_t first_ec;
	int rc;

	*again = false;
	if ((rc = poll_plan(s, gcbuf, &first_ec)) ||
	    (rc = rbi_target_read_batch(s->t, s->iov, s->niov)))
		return rc;
	for (size_t i = first_ec + s->nth; i < s->niov; i++)
		if (s->iov[i].status != RBI_OK)
			return rbi_fail(RBI_CORRUPT, "cannot read the VM's thread state "
					"at 0x%" PRIx64, s->iov[i].addr);
	poll_vm(s, gcbuf, again);
	for (size_t i = 0; i < s->nth; i++)
		if ((rc = poll_thread(s, i, first_ec, again)))
			return rc;
	if (!present(s->gvlq_node))
		return RBI_OK;
	if (present(s->l->vm_gvl_waitq))
		poll_gvl_queue(s, s->vm->info.vm + s->l->vm_gvl_waitq, s->gvlq_next_vm);
	for (size_t r = 0; r < s->nractors && present(s->gvlq_head); r++)
		if (s->ractors[r].addr)
			poll_gvl_queue(s, s->ractors[r].addr + s->gvlq_head,
				       s->ractors[r].gvlq_next);
	return RBI_OK;
}

int rbi_vm_sampler_poll(struct rbi_vm_sampler *s, struct rbi_vm_sthread **threads,
			size_t *n)
{
	uint64_t now = rbi_now_ns();
	bool again;
	int rc;

	s->cache_fresh = false;
	rbi_vm_symbols_again(s->t, s->vm);
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
