/* frame.c: a thread's Ruby backtrace from its control frames
 * (ruby-internals.md §3; vm_backtrace.c rb_ec_partial_backtrace_object).
 *
 * Control frames are an array at the top of the thread's VM stack growing
 * down: ec->cfp is the innermost, cfp + 1 its caller, and the one frame at
 * vm_stack + vm_stack_size - 1 is a dummy that Ruby never reports.  Like
 * Ruby, a frame with an iseq is reported if its pc is set, a frame without
 * one is a C function (named by its method entry, found through the
 * environment chain: rb_vm_frame_method_entry), and a C frame takes the
 * path and line of the nearest Ruby frame below it.  From 3.4 Ruby also
 * drops the method frame under a rescue/ensure frame (which then carries
 * the method's label).
 *
 * Frames are read in chunks (one read each); labels, paths and iseqs are
 * memoized per walk, so a 10,000-deep recursion costs one label. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm/sample.h"

/* A VM stack larger than this (in VALUEs; Ruby's default is 128 Ki) is
   garbage. */
#define VM_STACK_MAX (1ull << 27)
#define CHUNK_FRAMES 256
#define MEMO_SLOTS 256
#define LABEL_MAX 1024
#define PATH_MAX_ 4096
/* Walks of a live thread redone when its stack moved before any frame
   was delivered. */
#define LIVE_RETRIES 3
/* Environments between a block and its method: deeper is a cycle. */
#define EP_CHAIN_MAX 4096

/* vm_core.h: frame magic and environment flags (2.6-4.0). */
#define VM_FRAME_MAGIC_MASK 0x7fff0001u
#define VM_ENV_FLAG_LOCAL 0x2u
#define VM_FRAME_FLAG_FINISH 0x20u
#define VM_ENV_DATA_INDEX_ME_CREF (-2)
#define VM_ENV_DATA_INDEX_SPECVAL (-1)
#define VM_METHOD_TYPE_ISEQ 0
#define VM_METHOD_TYPE_CFUNC 1
#define VM_METHOD_TYPE_BITS 4

RBI_EXPORT const char *rbi_frame_type_name(rbi_frame_type type)
{
	static const char *const names[] = {
		[RBI_FRAME_TYPE_METHOD] = "method", [RBI_FRAME_TYPE_BLOCK] = "block",
		[RBI_FRAME_TYPE_CLASS] = "class", [RBI_FRAME_TYPE_TOP] = "top",
		[RBI_FRAME_TYPE_CFUNC] = "cfunc", [RBI_FRAME_TYPE_IFUNC] = "ifunc",
		[RBI_FRAME_TYPE_EVAL] = "eval", [RBI_FRAME_TYPE_RESCUE] = "rescue",
		[RBI_FRAME_TYPE_DUMMY] = "dummy",
	};

	if ((unsigned)type < RBI_ARRAY_SIZE(names) && names[type])
		return names[type];
	return "unknown";
}

static rbi_frame_type frame_type(uint64_t flags)
{
	switch (flags & VM_FRAME_MAGIC_MASK) {
	case 0x11110001: return RBI_FRAME_TYPE_METHOD;
	case 0x22220001: return RBI_FRAME_TYPE_BLOCK;
	case 0x33330001: return RBI_FRAME_TYPE_CLASS;
	case 0x44440001: return RBI_FRAME_TYPE_TOP;
	case 0x55550001: return RBI_FRAME_TYPE_CFUNC;
	case 0x66660001: return RBI_FRAME_TYPE_IFUNC;
	case 0x77770001: return RBI_FRAME_TYPE_EVAL;
	case 0x78880001: return RBI_FRAME_TYPE_RESCUE;
	case 0x79990001: return RBI_FRAME_TYPE_DUMMY;
	default: return RBI_FRAME_TYPE_UNKNOWN;
	}
}

struct cfp {
	uint64_t addr, pc, iseq, self, ep;
	uint64_t jit_return;            /* non-zero: JIT code entered the frame */
};

/* What one (iseq, method entry) pair, or one C method entry, looks like. */
struct memo {
	uint64_t iseq, cme;
	bool used;
	struct rbi_iseq is;
	char *label, *own_label, *base_label, *path;
	uint64_t cfunc;                 /* a C method's function */
	uint64_t last_pc;
	int last_line;
};

struct fwalk {
	struct rbi_target *t;
	struct rbi_vm *vm;
	const struct rbi_layout *l;
	uint64_t first;                 /* ec->cfp */
	size_t n;                       /* frames from FIRST to the dummy */
	uint8_t *chunk;
	size_t chunk_lo, chunk_n;
	struct memo *memo;
	/* The Ruby frame C frames above it report (index into the walk). */
	size_t caller_idx;
	bool caller_valid, caller_none;
	char caller_path[PATH_MAX_];
	int caller_line;
};

static int get_cfp(struct fwalk *w, size_t i, struct cfp *out)
{
	const struct rbi_layout *l = w->l;
	const uint8_t *b;
	int rc;

	if (i < w->chunk_lo || i >= w->chunk_lo + w->chunk_n) {
		size_t n = w->n - i < CHUNK_FRAMES ? w->n - i : CHUNK_FRAMES;

		w->chunk_n = 0;
		if ((rc = rbi_read(w->t, w->first + i * l->cfp_size, w->chunk,
				   n * l->cfp_size)))
			return rbi_fail_context(rc, "reading control frames: ");
		w->chunk_lo = i;
		w->chunk_n = n;
	}
	b = w->chunk + (i - w->chunk_lo) * l->cfp_size;
	out->addr = w->first + i * l->cfp_size;
	out->pc = rbi_get_u64(b, l->cfp_pc);
	out->iseq = rbi_get_u64(b, l->cfp_iseq);
	out->self = rbi_get_u64(b, l->cfp_self);
	out->ep = rbi_get_u64(b, l->cfp_ep);
	out->jit_return = l->cfp_jit_return != RBI_ABSENT ? rbi_get_u64(b, l->cfp_jit_return) : 0;
	return RBI_OK;
}

/* check_method_entry (vm_insnhelper.c): V if it is a method entry, the
   one inside an svar (when allowed), else 0. */
static uint64_t check_method_entry(struct fwalk *w, uint64_t v, bool can_be_svar)
{
	uint64_t flags;

	for (int i = 0; i < 2; i++) {
		if (!rbi_vm_heap_p(w->vm, v) || rbi_read_u64(w->t, v, &flags) ||
		    (flags & RBI_T_MASK) != RBI_T_IMEMO)
			return 0;
		switch (RBI_IMEMO_TYPE(flags)) {
		case RBI_IMEMO_MENT:
			return v;
		case RBI_IMEMO_SVAR:
			if (!can_be_svar || w->l->svar_cref_or_me == RBI_ABSENT ||
			    rbi_read_u64(w->t, v + w->l->svar_cref_or_me, &v))
				return 0;
			can_be_svar = false;
			continue;
		default:
			return 0;
		}
	}
	return 0;
}

/* rb_vm_frame_method_entry: walk the environments from EP (whose flags
   are FLAGS) to the method's, looking for a method entry. */
static int frame_method_entry(struct fwalk *w, uint64_t ep, uint64_t flags,
			      uint64_t me_cref, uint64_t *cme)
{
	uint64_t env[3];        /* ep[-2], ep[-1], ep[0] */
	int rc;

	*cme = 0;
	for (int i = 0; !(flags & VM_ENV_FLAG_LOCAL); i++) {
		if (i > EP_CHAIN_MAX)
			return rbi_fail(RBI_CORRUPT, "environment chain from 0x%" PRIx64
					" does not end", ep);
		if ((*cme = check_method_entry(w, me_cref, false)))
			return RBI_OK;
		if ((rc = rbi_read(w->t, ep - 16, env, sizeof(env))))
			return rc;
		if (!(env[1] & ~(uint64_t)3) || (env[1] & 4))
			return rbi_fail(RBI_CORRUPT, "environment 0x%" PRIx64 " has no "
					"previous environment (0x%" PRIx64 ")", ep, env[1]);
		ep = env[1] & ~(uint64_t)3;     /* VM_ENV_PREV_EP */
		if ((rc = rbi_read(w->t, ep - 16, env, sizeof(env))))
			return rc;
		me_cref = env[0];
		flags = env[2];
	}
	*cme = check_method_entry(w, me_cref, true);
	return RBI_OK;
}

/* The method entry's definition and its type. */
static int cme_def(struct rbi_target *t, const struct rbi_layout *l, uint64_t cme,
		   uint64_t *def, unsigned *type)
{
	uint32_t word;
	int rc;

	if (l->cme_def == RBI_ABSENT || l->method_def_type == RBI_ABSENT)
		return rbi_fail(RBI_LAYOUT, "no method entry layout");
	if ((rc = rbi_read_u64(t, cme + l->cme_def, def)))
		return rc;
	if (!*def || (*def & 7))
		return rbi_fail(RBI_CORRUPT, "method entry 0x%" PRIx64 " has no "
				"definition", cme);
	if ((rc = rbi_read_u32(t, *def + l->method_def_type / 8, &word)))
		return rc;
	*type = (word >> (l->method_def_type % 8)) & ((1u << VM_METHOD_TYPE_BITS) - 1);
	return RBI_OK;
}

/* The method entry's definition type and name (original_id). */
static int cme_name(struct fwalk *w, uint64_t cme, unsigned *type, char *buf,
		    size_t cap)
{
	uint64_t def, id;
	int rc;

	if (w->l->method_def_original_id == RBI_ABSENT)
		return rbi_fail(RBI_LAYOUT, "no method entry layout");
	if ((rc = cme_def(w->t, w->l, cme, &def, type)) ||
	    (rc = rbi_read_u64(w->t, def + w->l->method_def_original_id, &id)))
		return rc;
	return rbi_vm_id_name(w->t, w->vm, id, buf, cap);
}

static uint64_t cme_owner(struct fwalk *w, uint64_t cme)
{
	uint64_t owner = 0;

	if (w->l->cme_owner != RBI_ABSENT)
		rbi_read_u64(w->t, cme + w->l->cme_owner, &owner);
	return owner;
}

static void memo_clear(struct memo *m)
{
	free(m->label);
	free(m->own_label);
	free(m->base_label);
	free(m->path);
	memset(m, 0, sizeof(*m));
}

static char *dup_or_null(const char *s, bool ok)
{
	return ok ? strdup(s) : NULL;
}

static struct memo *memo_slot(struct fwalk *w, uint64_t iseq, uint64_t cme,
			      bool *hit)
{
	uint64_t h = (iseq ^ (cme * 0x9e3779b97f4a7c15ull)) >> 4;
	struct memo *m = &w->memo[h % MEMO_SLOTS];

	*hit = m->used && m->iseq == iseq && m->cme == cme;
	if (!*hit) {
		memo_clear(m);
		m->iseq = iseq;
		m->cme = cme;
	}
	return m;
}

/* The first word of the body of method entry CME's definition when the
   definition has type TYPE (rb_method_iseq_t's iseqptr, rb_method_cfunc_t's
   func), else 0. */
static int cme_body_word(struct rbi_target *t, const struct rbi_layout *l, uint64_t cme,
			 unsigned want, uint64_t *out)
{
	uint64_t def;
	unsigned type;
	int rc;

	*out = 0;
	if (l->method_def_body == RBI_ABSENT)
		return rbi_fail(RBI_LAYOUT, "no method definition layout");
	if ((rc = cme_def(t, l, cme, &def, &type)))
		return rc;
	return type == want ? rbi_read_u64(t, def + l->method_def_body, out) : RBI_OK;
}

/* Labels of a C method entry CME (3.4: location_label's CFUNC case). */
static void cfunc_labels(struct fwalk *w, struct memo *m, uint64_t cme)
{
	char name[LABEL_MAX], label[LABEL_MAX];
	bool qualified;
	unsigned type;

	if (!cme || cme_name(w, cme, &type, name, sizeof(name)))
		return;         /* Ruby prints "unknown method" */
	rbi_vm_method_name(w->t, w->vm, cme_owner(w, cme), name, label,
			   sizeof(label), &qualified);
	m->label = strdup(label);
	m->own_label = strdup(w->vm->k.label_qualified ? label : name);
	m->base_label = strdup(name);
	cme_body_word(w->t, w->l, cme, VM_METHOD_TYPE_CFUNC, &m->cfunc);
}

/* Labels and path of a Ruby frame running IS (method entry CME, or 0). */
static void iseq_labels(struct fwalk *w, struct memo *m, uint64_t cme)
{
	char buf[LABEL_MAX], path[PATH_MAX_];
	unsigned type;

	/* 3.4 location_label: a C method entry names the frame even when an
	   iseq runs (not seen in practice; kept for fidelity). */
	if (cme && !cme_name(w, cme, &type, buf, sizeof(buf)) &&
	    type == VM_METHOD_TYPE_CFUNC) {
		cfunc_labels(w, m, cme);
	} else {
		uint64_t owner = cme ? cme_owner(w, cme) : 0;
		char own[LABEL_MAX];
		bool own_ok;

		m->label = dup_or_null(buf, !rbi_iseq_label34(w->t, w->vm, &m->is,
							      owner, buf, sizeof(buf)));
		if (w->vm->k.label_qualified)
			m->own_label = m->label ? strdup(m->label) : NULL;
		else {
			own_ok = !rbi_vm_string(w->t, w->vm, m->is.label, own,
						sizeof(own), NULL);
			m->own_label = dup_or_null(own, own_ok);
		}
		m->base_label = dup_or_null(buf, !rbi_vm_string(w->t, w->vm,
				m->is.base_label, buf, sizeof(buf), NULL));
	}
	m->path = dup_or_null(path, !rbi_iseq_path(w->t, w->vm, &m->is, path,
						   sizeof(path)));
}

/* Frame environment: flags and the method-entry/cref slot. */
static int read_env(struct fwalk *w, const struct cfp *c, uint64_t *flags,
		    uint64_t *me_cref)
{
	uint64_t env[3];
	int rc;

	if (!c->ep || (c->ep & 7))
		return rbi_fail(RBI_CORRUPT, "control frame 0x%" PRIx64 " has no "
				"environment", c->addr);
	if ((rc = rbi_read(w->t, c->ep - 16, env, sizeof(env))))
		return rbi_fail_context(rc, "control frame 0x%" PRIx64 ": ", c->addr);
	*me_cref = env[0];
	*flags = env[2];
	if (frame_type(*flags) == RBI_FRAME_TYPE_UNKNOWN)
		return rbi_fail(RBI_CORRUPT, "control frame 0x%" PRIx64 " has no "
				"frame magic (flags 0x%" PRIx64 "): the stack changed "
				"or is corrupt", c->addr, *flags);
	return RBI_OK;
}

/* The memo (iseq, labels, path) of the Ruby frame C, and its line. */
static int ruby_frame(struct fwalk *w, const struct cfp *c, uint64_t flags,
		      uint64_t me_cref, struct memo **out, uint64_t *cme, int *line)
{
	struct memo *m;
	bool hit;
	int rc;

	if ((rc = frame_method_entry(w, c->ep, flags, me_cref, cme)))
		return rbi_fail_context(rc, "control frame 0x%" PRIx64 ": ", c->addr);
	m = memo_slot(w, c->iseq, *cme, &hit);
	if (!hit) {
		uint64_t runs;

		/* A method frame runs its method entry's iseq; one that does
		   not was read half pushed (its iseq new, its environment
		   still the last frame's in that slot), never a real frame. */
		if (frame_type(flags) == RBI_FRAME_TYPE_METHOD && *cme &&
		    !rbi_vm_cme_iseq(w->t, w->vm, *cme, &runs) && runs != c->iseq)
			return rbi_fail(RBI_CORRUPT, "control frame 0x%" PRIx64 " runs "
					"another iseq than its method's: the stack moved",
					c->addr);
		if ((rc = rbi_iseq_read(w->t, w->vm, c->iseq, &m->is)))
			return rbi_fail_context(rc, "control frame 0x%" PRIx64 ": ",
						c->addr);
		m->used = true;
		iseq_labels(w, m, *cme);
		m->last_pc = 0;
	}
	if (m->last_pc != c->pc || !m->last_pc) {
		if ((rc = rbi_iseq_frame_line(w->t, w->vm, &m->is, c->pc, c->jit_return,
					      &m->last_line)))
			return rbi_fail_context(rc, "control frame 0x%" PRIx64 ": ",
						c->addr);
		m->last_pc = c->pc;
	}
	*line = m->last_line;
	*out = m;
	return RBI_OK;
}

/* Where the C frame at index I reports itself: the nearest Ruby frame
   below it (cached until the walk passes that frame). */
static int cfunc_caller(struct fwalk *w, size_t i)
{
	struct cfp c;
	int rc;

	if (w->caller_valid && w->caller_idx > i)
		return RBI_OK;
	w->caller_valid = true;
	w->caller_none = true;
	w->caller_path[0] = '\0';
	w->caller_line = 0;
	for (size_t j = i + 1; j < w->n; j++) {
		uint64_t flags, me_cref, cme;
		struct memo *m;
		int line;

		if ((rc = get_cfp(w, j, &c)))
			return rc;
		if (!c.iseq || !c.pc)
			continue;
		if ((rc = read_env(w, &c, &flags, &me_cref)) ||
		    (rc = ruby_frame(w, &c, flags, me_cref, &m, &cme, &line)))
			return rc;
		if (rbi_iseq_c_trace(&m->is))
			continue;       /* reports itself as a C method does */
		w->caller_idx = j;
		w->caller_none = !m->path;
		snprintf(w->caller_path, sizeof(w->caller_path), "%s",
			 m->path ? m->path : "");
		w->caller_line = line;
		return RBI_OK;
	}
	w->caller_idx = w->n;
	return RBI_OK;
}

static int walk(struct fwalk *w, size_t max_frames, rbi_frame_fn fn, void *arg,
		size_t *emitted_out)
{
	bool skip_next = false;
	size_t emitted = 0;
	int rc;

	*emitted_out = 0;

	for (size_t i = 0; i < w->n && (!max_frames || emitted < max_frames); i++) {
		struct rbi_frame f = { .index = emitted };
		uint64_t flags, me_cref, cme;
		struct memo *m;
		struct cfp c;
		bool hit;

		if ((rc = get_cfp(w, i, &c)))
			return rc;
		if (c.iseq && !c.pc)
			continue;       /* IFUNC, dummy and finished frames */
		if ((rc = read_env(w, &c, &flags, &me_cref)))
			return rc;
		f.cfp = c.addr;
		f.self = c.self;
		f.type = frame_type(flags);
		if (c.iseq) {
			bool skip = skip_next;

			if ((rc = ruby_frame(w, &c, flags, me_cref, &m, &cme, &f.line)))
				return rc;
			if (rbi_iseq_c_trace(&m->is)) {
				/* A builtin that backtraces show as a C method,
				   at its caller's line.  The caller first: finding
				   it may reuse memo slots. */
				if ((rc = cfunc_caller(w, i)) ||
				    (rc = ruby_frame(w, &c, flags, me_cref, &m, &cme, &f.line)))
					return rc;
				skip_next = false;
				if (skip)
					continue;
				f.kind = RBI_FRAME_CFUNC;
				f.path = w->caller_none ? NULL : w->caller_path;
				f.line = w->caller_line;
				goto emit;
			}
			skip_next = w->vm->k.label_skips_rescue_caller &&
				    (m->is.type == RBI_ISEQ_RESCUE ||
				     m->is.type == RBI_ISEQ_ENSURE);
			if (skip)
				continue;
			f.kind = RBI_FRAME_RUBY;
			f.vm_entry = (flags & VM_FRAME_FLAG_FINISH) != 0;
			f.iseq = c.iseq;
			f.pc = c.pc;
			f.path = m->path;
		} else {
			if (f.type != RBI_FRAME_TYPE_CFUNC)
				continue;       /* not a frame Ruby reports */
			/* The caller first: finding it may reuse memo slots. */
			if ((rc = cfunc_caller(w, i)))
				return rc;
			if ((rc = frame_method_entry(w, c.ep, flags, me_cref, &cme)))
				return rbi_fail_context(rc, "control frame 0x%" PRIx64
							": ", c.addr);
			m = memo_slot(w, 0, cme, &hit);
			if (!hit) {
				m->used = true;
				cfunc_labels(w, m, cme);
			}
			f.kind = RBI_FRAME_CFUNC;
			f.cfunc = m->cfunc;
			f.path = w->caller_none ? NULL : w->caller_path;
			f.line = w->caller_line;
		}
emit:
		f.cme = cme;
		f.label = m->label;
		f.own_label = m->own_label;
		f.base_label = m->base_label;
		emitted++;
		*emitted_out = emitted;
		if ((rc = fn(&f, arg)))
			return rc;
	}
	return RBI_OK;
}

/* Check TH's execution context and set W's frame range; *EMPTY if the
   thread has no frames (starting, finished). */
static int setup(struct fwalk *w, const struct rbi_thread *th, bool *empty)
{
	const struct rbi_layout *l = w->l;
	uint64_t ec[4];         /* vm_stack, vm_stack_size, cfp, thread_ptr */
	uint64_t end, last;
	int rc;

	*empty = true;
	if (!th->ec)
		return RBI_OK;
	if (l->ec_vm_stack == RBI_ABSENT || l->ec_vm_stack_size == RBI_ABSENT ||
	    l->ec_cfp == RBI_ABSENT || l->cfp_size == RBI_ABSENT || l->cfp_size < 40 ||
	    l->cfp_size > 256)
		return rbi_fail(RBI_LAYOUT, "no execution context layout");
	if ((rc = rbi_read_u64(w->t, th->ec + l->ec_vm_stack, &ec[0])) ||
	    (rc = rbi_read_u64(w->t, th->ec + l->ec_vm_stack_size, &ec[1])) ||
	    (rc = rbi_read_u64(w->t, th->ec + l->ec_cfp, &ec[2])))
		return rbi_fail_context(rc, "reading execution context 0x%" PRIx64 ": ",
					th->ec);
	if (l->ec_thread_ptr != RBI_ABSENT) {
		if ((rc = rbi_read_u64(w->t, th->ec + l->ec_thread_ptr, &ec[3])))
			return rc;
		if (ec[3] != th->thread)
			return rbi_fail(RBI_CORRUPT, "execution context 0x%" PRIx64
					" belongs to thread 0x%" PRIx64 ", not 0x%"
					PRIx64, th->ec, ec[3], th->thread);
	}
	if (!ec[0] || !ec[2])
		return RBI_OK;  /* vm_stack or cfp not set up (yet / any more) */
	if ((ec[0] & 7) || ec[1] == 0 || ec[1] > VM_STACK_MAX ||
	    ec[0] + ec[1] * 8 < ec[0])
		return rbi_fail(RBI_CORRUPT, "execution context 0x%" PRIx64 " has a "
				"VM stack of %" PRIu64 " values at 0x%" PRIx64,
				th->ec, ec[1], ec[0]);
	end = ec[0] + ec[1] * 8;
	last = end - l->cfp_size;       /* the dummy frame Ruby never reports */
	if (ec[2] < ec[0] || ec[2] > end || (end - ec[2]) % l->cfp_size)
		return rbi_fail(RBI_CORRUPT, "control frame 0x%" PRIx64 " is not in "
				"the VM stack 0x%" PRIx64 "-0x%" PRIx64, ec[2], ec[0], end);
	if (ec[2] >= last)
		return RBI_OK;
	w->first = ec[2];
	w->n = (last - ec[2]) / l->cfp_size;
	*empty = false;
	return RBI_OK;
}

RBI_EXPORT int rbi_frame_foreach(rbi_target *t, const struct rbi_thread *th,
				 size_t max_frames, rbi_frame_fn fn, void *arg)
{
	struct fwalk w = { .t = t };
	struct rbi_vm *vm = NULL;
	bool empty;
	int rc;

	if (!t || !th || !fn)
		return rbi_fail(RBI_INVAL, "no target, thread or callback");
	if ((rc = rbi_vm_get(t, &vm)))
		return rc;
	w.vm = vm;
	w.l = vm->layout;
	/* Ruby has no backtrace for a killed thread (thread_backtrace_to_ary):
	   its stack may be half torn down or freed. */
	if (th->status == RBI_THREAD_KILLED)
		return RBI_OK;
	w.chunk = malloc((size_t)CHUNK_FRAMES * w.l->cfp_size);
	w.memo = calloc(MEMO_SLOTS, sizeof(*w.memo));
	if (!w.chunk || !w.memo) {
		rc = rbi_fail(RBI_NOMEM, "out of memory");
		goto out;
	}
	for (int attempt = 1;; attempt++) {
		size_t emitted;

		if ((rc = setup(&w, th, &empty)) || empty)
			break;
		rc = walk(&w, max_frames, fn, arg, &emitted);
		/* A live thread that runs moves its stack under the walk.  If
		   nothing was delivered yet, read it again, afresh. */
		if (rc >= 0 || emitted || !t->live || attempt == LIVE_RETRIES ||
		    (rc != RBI_CORRUPT && rc != RBI_UNMAPPED && rc != RBI_PARTIAL))
			break;
		rbi_cache_clear(&t->cache);
		for (size_t i = 0; i < MEMO_SLOTS; i++)
			memo_clear(&w.memo[i]);
		w.chunk_n = 0;
		w.caller_valid = false;
	}
out:
	if (w.memo)
		for (size_t i = 0; i < MEMO_SLOTS; i++)
			memo_clear(&w.memo[i]);
	free(w.memo);
	free(w.chunk);
	return rc;
}

/* ---- One frame at a time, for the sampler (vm/sample.c) ----------------- */

rbi_frame_type rbi_vm_frame_type(uint64_t ep_flags)
{
	return frame_type(ep_flags);
}

uint64_t rbi_vm_check_method_entry(struct rbi_target *t, struct rbi_vm *vm,
				   uint64_t v, bool can_be_svar)
{
	struct fwalk w = { .t = t, .vm = vm, .l = vm->layout };

	return check_method_entry(&w, v, can_be_svar);
}

int rbi_vm_cme_iseq(struct rbi_target *t, const struct rbi_vm *vm, uint64_t cme,
		    uint64_t *iseq)
{
	return cme_body_word(t, vm->layout, cme, VM_METHOD_TYPE_ISEQ, iseq);
}

int rbi_vm_frame_names(struct rbi_target *t, struct rbi_vm *vm,
		       const struct rbi_iseq *is, uint64_t cme,
		       char **label, char **path)
{
	struct fwalk w = { .t = t, .vm = vm, .l = vm->layout };
	struct memo m = { .iseq = is ? is->addr : 0, .cme = cme };

	if (is) {
		m.is = *is;
		iseq_labels(&w, &m, cme);
	} else {
		cfunc_labels(&w, &m, cme);
	}
	*label = m.label;
	*path = m.path;
	m.label = m.path = NULL;
	memo_clear(&m);
	return RBI_OK;
}
