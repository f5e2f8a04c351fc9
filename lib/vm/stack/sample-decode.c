/* sample-decode.c: the sampler's frames from the buffers sample-read.c
 * filled (see sample.c for the whole path): a frame's environment and
 * those of enclosing blocks from the values read, method entries, iseqs
 * and labels from the sampler's caches, filled on a miss.
 *
 * A miss reads the iseq, its body, its label and path strings, the
 * method's owner and its class path: ~7 dependent page reads, a system
 * call each on a live target, and a deep stack that changes meets several
 * misses a sample.  So the frames are decoded in rounds, collecting
 * (rbi_target_collect_begin): each round notes the pages its misses need
 * instead of reading them, and they are fetched together; a round that
 * missed nothing is the answer.  Nothing concluded from a read that
 * missed is cached (missed()). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vm/stack/sample-priv.h"

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
	if (!missed(s))
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
	for (int hops = 0; !(env[2] & RBI_VM_ENV_FLAG_LOCAL); hops++) {
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
	if ((rc = rbi_iseq_read(s->t, s->vm, iseq, &info->is)) || missed(s)) {
		/* A torn or stale pointer, or one not read yet: don't keep it. */
		memset(&info->is, 0, sizeof(info->is));
		info->is.addr = 0;
		return rc ? rc : RBI_UNMAPPED;
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
	char bad[RBI_LINE_WHY_MAX];     /* a line the VM cannot have: sampled as unknown */
	const char *label;
	bool keep = true;       /* false: a label made before class names could be read */
	uint64_t v;
	int line, rc;

	if ((rc = iseq_info_get(s, iseq, false, &info)))
		return rc;
	if (!info->is.addr && (rc = iseq_info_get(s, iseq, true, &info)))
		return rc;
	rc = rbi_iseq_frame_line(s->t, s->vm, &info->is, pc, jit_return, &line,
				 bad, sizeof(bad));
	if (missed(s))
		return RBI_UNMAPPED;
	if (rc == RBI_CORRUPT) {
		/* The address may hold another iseq now: read it again. */
		if ((rc = iseq_info_get(s, iseq, true, &info)) ||
		    (rc = rbi_iseq_frame_line(s->t, s->vm, &info->is, pc, jit_return, &line,
				 bad, sizeof(bad))))
			return rc;
		if (missed(s))
			return RBI_UNMAPPED;
		rbi_map_put(&s->labels, iseq, cme, 2, 0);
	} else if (rc) {
		return rc;
	}
	if (rbi_map_get(&s->labels, iseq, cme, 2, &v) && v && info->path_known) {
		label = (const char *)(uintptr_t)v;
	} else {
		char *lab = NULL, *path = NULL;

		fresh(s);
		if ((rc = rbi_vm_frame_names(s->t, s->vm, &info->is, cme, &lab, &path)) ||
		    missed(s)) {
			free(lab);
			free(path);
			return rc ? rc : RBI_UNMAPPED;  /* moved: read again, never cached */
		}
		label = rbi_strtab_intern(&s->ft.strs, lab ? lab : "(unknown)",
					  strlen(lab ? lab : "(unknown)"));
		info->path = path ? rbi_strtab_intern(&s->ft.strs, path, strlen(path)) : NULL;
		info->path_known = true;
		free(lab);
		free(path);
		if (!label)
			return rbi_fail(RBI_NOMEM, "out of memory");
		keep = rbi_vm_class_names_settled(s->t, s->vm);
		if (keep && (rc = rbi_map_put(&s->labels, iseq, cme, 2, (uintptr_t)label)))
			return rc;
	}
	/* A builtin that backtraces show as a C method is sampled as one. */
	f = rbi_iseq_c_trace(&info->is) ?
	    rbi_frametab_intern(&s->ft, RBI_FRAME_CFUNC, label, NULL, 0, 0) :
	    rbi_frametab_intern(&s->ft, RBI_FRAME_RUBY, label, info->path, line,
				info->is.first_lineno);
	if (!f)
		return rbi_fail(RBI_NOMEM, "out of memory");
	*out = (uintptr_t)f | rbi_vm_frame_hides_caller(s->vm, &info->is);
	return keep ? rbi_map_put(&s->frames, iseq, pc, cme, *out) : RBI_OK;
}

static int resolve_cfunc(struct rbi_vm_sampler *s, uint64_t cme, uint64_t *out)
{
	const struct rbi_sample_frame *f;
	char *lab = NULL, *path = NULL;
	int rc;

	fresh(s);
	if (cme && ((rc = rbi_vm_frame_names(s->t, s->vm, NULL, cme, &lab, &path)) ||
		    missed(s))) {
		free(lab);
		free(path);
		return rc ? rc : RBI_UNMAPPED;
	}
	f = rbi_frametab_intern(&s->ft, RBI_FRAME_CFUNC, lab, NULL, 0, 0);
	free(lab);
	free(path);
	if (!f)
		return rbi_fail(RBI_NOMEM, "out of memory");
	*out = (uintptr_t)f;
	return rbi_vm_class_names_settled(s->t, s->vm) ? rbi_map_put(&s->frames, 1, cme, 0, *out) :
						  RBI_OK;
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
		if (!missed(s))
			rbi_map_put(&s->mes, cme, 0, MES_ISEQ, v);
	}
	if (v == iseq)
		return true;
	/* Either may be an iseq GC.compact is moving. */
	fresh(s);
	return rbi_vm_location(s->t, s->vm, v) == rbi_vm_location(s->t, s->vm, iseq);
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

/* Control frame I of TH as a sampled frame in *OUT (a frame and the bit
   rbi_vm_frame_hides_caller), or 0 when it is not shown. */
static int decode_frame(struct rbi_vm_sampler *s, struct rbi_vm_sthread *th, size_t i,
			bool *skip_next, uint64_t *out)
{
	const struct rbi_layout *l = s->l;
	const uint8_t *c = th->cfps + i * l->cfp_size;
	uint64_t pc = rbi_get_u64(c, l->cfp_pc), iseq = rbi_get_u64(c, l->cfp_iseq);
	uint64_t ep = rbi_get_u64(c, l->cfp_ep), env[3], cme, v = 0;
	rbi_frame_type type;
	int rc;

	*out = 0;
	if (iseq && rbi_vm_frame_shown(iseq, pc, RBI_FRAME_TYPE_UNKNOWN) == RBI_VM_SHOWN_NONE)
		return RBI_OK;  /* IFUNC, dummy and finished frames */
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
		if (rbi_vm_frame_half_pushed(iseq, type))
			return rbi_fail(RBI_TORN, "control frame 0x%" PRIx64 " was "
					"read half pushed", th->cfps_at + i * l->cfp_size);
		if (rbi_vm_frame_shown(iseq, pc, type) == RBI_VM_SHOWN_NONE)
			return RBI_OK;
		if ((rc = frame_cme(s, th, ep, env, &cme)))
			return rc;
	}
	/* A method or C method frame always has its method entry; one without
	   was caught half written (Ruby 2.7 sets ec->cfp before it fills the
	   frame in). */
	if (!cme && (type == RBI_FRAME_TYPE_METHOD || type == RBI_FRAME_TYPE_CFUNC))
		return RBI_TORN;
	if (iseq) {
		bool skip = *skip_next;
		uint64_t jit_return = l->cfp_jit_return != RBI_ABSENT ?
				      rbi_get_u64(c, l->cfp_jit_return) : 0;

		if (!rbi_map_get(&s->frames, iseq, pc, cme, &v) &&
		    (rc = resolve_ruby(s, iseq, pc, jit_return, cme, &v)))
			return rc;
		*skip_next = v & 1;     /* rbi_vm_frame_hides_caller */
		if (skip)
			return RBI_OK;
	} else if (!rbi_map_get(&s->frames, 1, cme, 0, &v) &&
		   (rc = resolve_cfunc(s, cme, &v))) {
		return rc;
	}
	*out = v;
	return RBI_OK;
}

/* TH's frames, innermost first; while collecting, a frame whose reads
   missed is passed over so that the next frames' misses are noted too. */
static int decode_frames(struct rbi_vm_sampler *s, struct rbi_vm_sthread *th, size_t *n,
			 size_t *torn_at)
{
	bool skip_next = false;
	uint64_t v;
	int rc;

	*n = 0;
	for (size_t i = 0; i < th->ncfps; i++) {
		s->missed_at = rbi_target_missed(s->t);
		*torn_at = i;
		if ((rc = decode_frame(s, th, i, &skip_next, &v))) {
			if (missed(s))
				continue;
			return rc;
		}
		if (v)
			th->frames[(*n)++] = (const struct rbi_sample_frame *)(uintptr_t)
					     (v & ~(uint64_t)1);
	}
	return RBI_OK;
}

int rbi_vm_sampler_decode(struct rbi_vm_sampler *s, struct rbi_vm_sthread *th, bool moving,
			  size_t *torn_at)
{
	bool answered = false;
	size_t n = 0;
	int rc = RBI_OK;

	if (!RBI_GROW(th->frames, th->frames_cap, th->ncfps + 2, th->ncfps + 2))
		return rbi_fail(RBI_NOMEM, "out of memory");
	/* Each round fetches a level of what the misses read (iseq, body,
	   strings, owner, class path); when rounds run out, or one fetches
	   nothing readable (a torn pointer), the rest is read page by page
	   as any reader does. */
	for (int round = 0; !answered && round < DECODE_ROUNDS; round++) {
		rbi_target_collect_begin(s->t);
		rc = decode_frames(s, th, &n, torn_at);
		answered = !rbi_target_missed(s->t);
		if (!rbi_target_collect_end(s->t) && !answered)
			break;
	}
	if (!answered)
		rc = decode_frames(s, th, &n, torn_at);
	if (rc)
		return rc;
	/* Innermost first so far: turn it round, then GC on top, and what it
	   does (marking, sweeping) on top of that; or, for the part of a
	   stack that held still, the leaf that says the rest moved (the GC
	   state was read before: the GC may be over). */
	for (size_t i = 0; i < n / 2; i++) {
		const struct rbi_sample_frame *f = th->frames[i];

		th->frames[i] = th->frames[n - 1 - i];
		th->frames[n - 1 - i] = f;
	}
	if (moving) {
		th->frames[n++] = s->moving_frame;
	} else if (th->gc) {
		th->frames[n++] = s->gc_frame;
		if (s->gc_mode_frame[s->gc_mode])
			th->frames[n++] = s->gc_mode_frame[s->gc_mode];
	}
	th->nframes = n;
	return RBI_OK;
}
