/* sample-read.c: the sampler's reads B and C of each wanted thread (see
 * sample.c) and the tear check between them: which frames and values to
 * read, whether the stack held still while they were read (steady), and
 * the retries of torn stacks before they are decoded. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vm/stack/sample-priv.h"

/* Room for NEED bytes at *BUF (rbi_grow: at least doubled). */
static int grow(uint8_t **buf, size_t *cap, size_t need)
{
	return rbi_grow(buf, cap, need, 1, need) ? RBI_OK : rbi_fail(RBI_NOMEM, "out of memory");
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
	if ((th->vm_stack & 7) || !th->vm_stack_size || th->vm_stack_size > RBI_VM_STACK_MAX ||
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

/* Stage C for TH: its frames again, the values their environments are in
   (found in B's reading), escaped environments, and the second look.  The
   tear check compares the two readings of the frames in this one batch:
   the closer together, the less a busy stack moves between them (rubocop,
   140 frames: 18-33 % of its samples kept in part, under "(moving)",
   against 36-45 % when B's reading was compared; bench/rubocop.sh). */
static int plan_values(struct rbi_vm_sampler *s, struct rbi_vm_sthread *th)
{
	const struct rbi_layout *l = s->l;
	uint64_t lo = UINT64_MAX, hi = 0;
	size_t first = s->niov;
	int rc;

	th->nheap = 0;
	for (size_t k = 0; k < th->ncfps; k++) {
		uint64_t ep = rbi_get_u64(th->cfps + k * l->cfp_size, l->cfp_ep);

		if (!ep || (ep & 7))
			continue;       /* rbi_vm_sampler_decode() reports it */
		if (ep - 16 >= th->vm_stack && ep + 8 <= th->cfp && ep >= 16) {
			if (ep - 16 < lo)
				lo = ep - 16;
			if (ep + 8 > hi)
				hi = ep + 8;
		} else if (k >= th->ext && th->nheap < HEAP_ENVS_MAX) {
			/* HEAP_ENVS holds 3 words for each of HEAP_EPS. */
			size_t cap = th->heap_cap, cap3 = th->heap_cap * 3;

			if (!RBI_GROW(th->heap_eps, cap, th->nheap + 1, 8) ||
			    !RBI_GROW(th->heap_envs, cap3, (th->nheap + 1) * 3, 24))
				return rbi_fail(RBI_NOMEM, "out of memory");
			th->heap_cap = cap;
			th->heap_eps[th->nheap++] = ep;
		}
	}
	th->vals_lo = th->vals_hi = 0;
	if ((rc = iov_add(s, th->cfps_at, th->cfps, th->ncfps * l->cfp_size)))
		return rc;
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
	th->niov_c = s->niov - first;
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

/* From TH's outermost frame in, down to FROM: the frames that run the same
   code for the same receiver in C's two readings, with their
   environments read (and ENV_MOVED set for each: whether it changed while
   C read it) and each caller's pc where it called (settled).  Returns the
   index of the innermost of them (FROM when all are; NCFPS when the
   outermost is not one).  Frames pushed or popped between the two readings
   break the run; those beneath the change are the same in both. */
static size_t kept_from(struct rbi_vm_sampler *s, struct rbi_vm_sthread *th, size_t from)
{
	const struct rbi_layout *l = s->l;
	size_t k;

	for (k = th->ncfps; k > from; k--) {
		const uint8_t *a = th->cfps + (k - 1) * l->cfp_size;
		uint8_t *b = th->cfps2 + (k - 1) * l->cfp_size;
		uint64_t ep = rbi_get_u64(b, l->cfp_ep);

		/* A frame that is not (popped, or C's copy caught the stack
		   half way through a change) would be a frame that never was. */
		if (!rbi_vm_cfp_kept(l, a, b))
			break;
		/* C's copy of a caller that ran on past its callee. */
		if (k - 1 > from)
			rbi_vm_cfp_caller_settle(l, a - l->cfp_size, b - l->cfp_size, a, b);
		th->env_moved[k - 1] = false;
		if (ep >= 16 && ep - 16 >= th->vals_lo && ep + 8 <= th->vals_hi)
			th->env_moved[k - 1] = memcmp(th->vals + (ep - 16 - th->vals_lo),
						      th->vals2 + (ep - 16 - th->vals_lo), 24) != 0;
		else if (k - 1 < th->ext)
			break;  /* pushed since: its environment was not read */
	}
	return k;
}

/* Leave out TH's N innermost frames (N <= ncfps). */
static void drop_inner(const struct rbi_layout *l, struct rbi_vm_sthread *th, size_t n)
{
	th->ncfps -= n;
	memmove(th->cfps, th->cfps + n * l->cfp_size, th->ncfps * l->cfp_size);
	memmove(th->env_moved, th->env_moved + n, th->ncfps * sizeof(*th->env_moved));
	th->cfps_at += n * l->cfp_size;
}

/* Take C's reading of TH's frames to decode: the frames, and the values as read
   after them. */
static void take_second(const struct rbi_layout *l, struct rbi_vm_sthread *th)
{
	memcpy(th->cfps, th->cfps2, th->ncfps * l->cfp_size);
	swap_vals(th);
}

/* Is TH's stack from C's look one that was there: its top no deeper than
   what was read, its frames running what C's first reading saw there,
   their environments read?  Then keep those frames and environments (C's
   second look) and note which environments changed while C read; return
   true.  If not, set KEPT_FROM (what of it held still: keep_outer) and
   take C's look as the next starting point. */
static bool steady(struct rbi_vm_sampler *s, struct rbi_vm_sthread *th)
{
	const struct rbi_layout *l = s->l;
	uint64_t cfp = rbi_get_u64(th->check_ec, l->ec_cfp - s->ec_lo), skip = 0;
	bool same = th->check_th_ec == th->ec &&
		    rbi_get_u64(th->check_ec, l->ec_vm_stack - s->ec_lo) == th->vm_stack;
	bool top = false, comparable = false;

	th->kept_from = th->ncfps;
	if (!rbi_grow(&th->env_moved, &th->env_moved_cap, th->ncfps + 1,
		      sizeof(*th->env_moved), 64)) {
		same = false;
	} else if (same && cfp >= th->cfps_at && (cfp - th->cfps_at) % l->cfp_size == 0) {
		skip = (cfp - th->cfps_at) / l->cfp_size;
		/* Popped below what was read: it was not the stack then. */
		top = skip <= th->ncfps && (skip < th->ncfps || !th->truncated);
		comparable = skip < th->ncfps;
	} else if (same && cfp < th->cfps_at && cfp >= th->vm_stack) {
		/* Deeper than the slots read above the top: read more of them
		   (what was read may still have held still beneath). */
		size_t want = 2 * ((th->cfps_at - cfp) / l->cfp_size + th->ext);

		th->ext_hint = want > EXT_MAX ? EXT_MAX : want;
		comparable = true;
	}
	if (comparable)
		th->kept_from = kept_from(s, th, skip);
	if (!top || th->kept_from != skip) {
		if (th->check_th_ec == th->ec)
			parse_ec(s, th, th->check_ec);
		return false;
	}
	if (th->ext_hint > EXT_MIN)
		th->ext_hint -= th->ext_hint / 8;
	/* The stack as it was at C's look: the later reading, from its top. */
	take_second(l, th);
	drop_inner(l, th, skip);
	th->cfp = cfp;
	return true;
}

/* TH's stack moved under every read: the part beneath the change, which
   the last attempt's two readings agree on (C's, from KEPT_FROM out, when
   not TAKEN; else the frames left in TH's buffers), with s->moving_frame
   as its leaf, so that a sample of code that calls and returns all the
   time still counts for the callers it runs in.  A frame decoding finds
   moving (an environment being written) cuts it further, a few times.
   RBI_TORN when no frame that would be shown is left. */
static int keep_outer(struct rbi_vm_sampler *s, struct rbi_vm_sthread *th, bool taken)
{
	size_t torn_at = 0;
	int rc = RBI_TORN;

	if (!taken) {
		if (th->kept_from >= th->ncfps)
			return RBI_TORN;
		take_second(s->l, th);
		drop_inner(s->l, th, th->kept_from);
	}
	for (unsigned pass = 0; rc == RBI_TORN && pass < KEEP_OUTER_PASSES && th->ncfps;
	     pass++) {
		rc = rbi_vm_sampler_decode(s, th, true, &torn_at);
		if (rc == RBI_TORN)
			drop_inner(s->l, th, torn_at + 1);
	}
	if (rc == RBI_OK && th->nframes < 2) {
		th->nframes = 0;
		rc = RBI_TORN;  /* only the leaf: nothing of the stack kept */
	}
	return rc;
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
			size_t torn_at = 0;
			bool bad = false, taken;

			if (!th->want)
				continue;
			for (size_t j = 0; j < th->niov_c; j++)
				bad |= s->iov[k + j].status != RBI_OK;
			k += th->niov_c;
			taken = false;
			if (bad) {
				th->kept_from = th->ncfps;      /* nothing to keep */
			} else if (steady(s, th)) {
				th->rc = rbi_vm_sampler_decode(s, th, false, &torn_at);
				if (th->rc == RBI_NOMEM)
					return th->rc;
				if (th->rc != RBI_TORN) {
					th->want = false;
					pending--;
					continue;
				}
				/* A frame caught moving: those beneath it held. */
				drop_inner(s->l, th, torn_at + 1);
				taken = true;
			}
			th->retries++;
			th->rc = RBI_TORN;
			if (th->check_th_ec != th->ec) {
				/* Another fiber: start over next sample. */
				th->want = false;
				pending--;
			} else if (attempt == retries) {
				th->rc = keep_outer(s, th, taken);
				if (th->rc == RBI_NOMEM)
					return th->rc;
				th->want = false;
				pending--;
			}
		}
	}
	return rest_torn(s);
}
