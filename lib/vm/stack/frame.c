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
 * A live thread's stack is read twice, its control frames and their
 * environments, and walked only when the second look has the frames the
 * first had (steady(): the test record's reads make, sample.c); a stack
 * still moving after LIVE_RETRIES reads is RBI_TORN, never frames that
 * were not all there at once.  A live stack's frames are all decoded
 * before the first is delivered (held: copies of them), so that one that
 * cannot be decoded half way (a frame's word read as it changed) reads
 * the stack again whole instead of cutting it after the frames shown.
 * Frames are read in chunks (one read each);
 * labels, paths and iseqs are memoized per walk, so a 10,000-deep
 * recursion costs one label. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm/stack/sample.h"

#define CHUNK_FRAMES 256
#define MEMO_SLOTS 256
/* A label: a name of up to RBI_NAME_MAX bytes in its class's path and
   "block (N levels) in ". */
#define LABEL_MAX (2 * RBI_NAME_MAX)
#define PATH_MAX_ 4096
/* Reads of a live thread's stack: the first, and again while it moves
   between two looks or before any frame was delivered. */
#define LIVE_RETRIES 4
/* Environments between a block and its method: deeper is a cycle. */
#define EP_CHAIN_MAX 4096

/* vm_core.h: frame magic and environment flags (2.6-4.0). */
#define VM_FRAME_MAGIC_MASK 0x7fff0001u
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
	uint64_t label_cut, path_cut;   /* bytes of each left out */
	uint64_t own_label_cut, base_label_cut;
	uint64_t cfunc;                 /* a C method's function */
	uint64_t last_pc;
	int last_line;
	char line_bad[RBI_LINE_WHY_MAX];        /* why LAST_LINE is unknown, or "" */
};

/* One look at a thread's stack: its control frames and the environment
   (ep[-2..0]) of each frame that has one to read. */
struct snap {
	uint64_t first;                 /* ec->cfp */
	uint64_t vm_stack;
	size_t n;                       /* frames read from FIRST (to the dummy,
					   or to the first bad environment) */
	uint8_t *cfps;
	size_t cfps_cap;
	struct env {
		uint64_t w[3];          /* ep[-2], ep[-1], ep[0] */
		int rc;                 /* read_env's error for this frame */
	} *envs;
	size_t envs_cap;
	char err[RBI_ERRMSG_MAX];       /* the last frame's, when its rc is set */
};

struct fwalk {
	struct rbi_target *t;
	struct rbi_vm *vm;
	const struct rbi_layout *l;
	bool moves;                     /* a live process that runs */
	struct snap looks[2];
	struct snap *cur;               /* the look walked */
	struct memo *memo;
	/* The Ruby frame C frames above it report (index into the walk). */
	size_t caller_idx;
	bool caller_valid, caller_none;
	char caller_path[PATH_MAX_];
	uint64_t caller_path_cut;
	int caller_line;
	char caller_line_bad[RBI_LINE_WHY_MAX];
};

static void get_cfp(const struct fwalk *w, size_t i, struct cfp *out)
{
	const struct rbi_layout *l = w->l;
	const uint8_t *b = w->cur->cfps + i * l->cfp_size;

	out->addr = w->cur->first + i * l->cfp_size;
	out->pc = rbi_get_u64(b, l->cfp_pc);
	out->iseq = rbi_get_u64(b, l->cfp_iseq);
	out->self = rbi_get_u64(b, l->cfp_self);
	out->ep = rbi_get_u64(b, l->cfp_ep);
	out->jit_return = l->cfp_jit_return != RBI_ABSENT ? rbi_get_u64(b, l->cfp_jit_return) : 0;
}

uint64_t rbi_vm_env_slot(struct rbi_target *t, struct rbi_vm *vm, uint64_t v,
			 bool can_be_svar, unsigned *type)
{
	uint64_t flags;

	for (int i = 0; i < 2; i++) {
		if (!rbi_vm_heap_p(vm, v))
			return 0;
		v = rbi_vm_location(t, vm, v);
		if (rbi_read_u64(t, v, &flags) || (flags & RBI_T_MASK) != RBI_T_IMEMO)
			return 0;
		*type = RBI_IMEMO_TYPE(flags);
		if (*type != RBI_IMEMO_SVAR)
			return v;
		if (!can_be_svar || vm->layout->svar_cref_or_me == RBI_ABSENT ||
		    rbi_read_u64(t, v + vm->layout->svar_cref_or_me, &v))
			return 0;
		can_be_svar = false;
	}
	return 0;
}

uint64_t rbi_vm_check_method_entry(struct rbi_target *t, struct rbi_vm *vm,
				   uint64_t v, bool can_be_svar)
{
	unsigned type;

	v = rbi_vm_env_slot(t, vm, v, can_be_svar, &type);
	return v && type == RBI_IMEMO_MENT ? v : 0;
}

int rbi_vm_env_find(struct rbi_target *t, struct rbi_vm *vm, uint64_t ep, uint64_t flags,
		    uint64_t me_cref, rbi_vm_env_check check, uint64_t *out)
{
	uint64_t env[3];        /* ep[-2], ep[-1], ep[0] */
	int rc;

	*out = 0;
	for (int i = 0; !(flags & RBI_VM_ENV_FLAG_LOCAL); i++) {
		if (i > EP_CHAIN_MAX)
			return rbi_fail(RBI_CORRUPT, "environment chain from 0x%" PRIx64
					" does not end", ep);
		if ((*out = check(t, vm, me_cref, false)))
			return RBI_OK;
		if ((rc = rbi_read(t, ep - 16, env, sizeof(env))))
			return rc;
		if (!(env[1] & ~(uint64_t)3) || (env[1] & 4))
			return rbi_fail(RBI_CORRUPT, "environment 0x%" PRIx64 " has no "
					"previous environment (0x%" PRIx64 ")", ep, env[1]);
		ep = env[1] & ~(uint64_t)3;     /* VM_ENV_PREV_EP */
		if ((rc = rbi_read(t, ep - 16, env, sizeof(env))))
			return rc;
		me_cref = env[0];
		flags = env[2];
	}
	*out = check(t, vm, me_cref, true);
	return RBI_OK;
}

/* rb_vm_frame_method_entry: the method entry of the frame whose
   environment is EP (flags FLAGS, method-entry/cref slot ME_CREF). */
static int frame_method_entry(struct fwalk *w, uint64_t ep, uint64_t flags,
			      uint64_t me_cref, uint64_t *cme)
{
	return rbi_vm_env_find(w->t, w->vm, ep, flags, me_cref, rbi_vm_check_method_entry, cme);
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

/* The method entry's definition type and name (original_id); the bytes
   of the name that did not fit added to *CUT. */
static int cme_name(struct fwalk *w, uint64_t cme, unsigned *type, char *buf,
		    size_t cap, uint64_t *cut)
{
	uint64_t def, id;
	int rc;

	if (w->l->method_def_original_id == RBI_ABSENT)
		return rbi_fail(RBI_LAYOUT, "no method entry layout");
	if ((rc = cme_def(w->t, w->l, cme, &def, type)) ||
	    (rc = rbi_read_u64(w->t, def + w->l->method_def_original_id, &id)))
		return rc;
	return rbi_vm_id_name(w->t, w->vm, id, buf, cap, cut);
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

/* Word WORD of the body of method entry CME's definition when the
   definition has type TYPE (rb_method_iseq_t's iseqptr and cref,
   rb_method_cfunc_t's func), else 0. */
static int cme_body_word(struct rbi_target *t, const struct rbi_layout *l, uint64_t cme,
			 unsigned want, unsigned word, uint64_t *out)
{
	uint64_t def;
	unsigned type;
	int rc;

	*out = 0;
	if (l->method_def_body == RBI_ABSENT)
		return rbi_fail(RBI_LAYOUT, "no method definition layout");
	if ((rc = cme_def(t, l, cme, &def, &type)))
		return rc;
	return type == want ? rbi_read_u64(t, def + l->method_def_body + 8 * word, out) : RBI_OK;
}

/* Names that could not be read (RC, the read's error): where the process
   runs, read while GC.compact moved them (from a reference the move made
   stale under the read): a torn read, which the caller reads again or
   reports, never a frame printed with no name.  From a core or a stopped
   process they stay unknown (NULL) and the rest is read. */
static int names_unread(const struct fwalk *w, int rc, const char *what, uint64_t addr)
{
	char why[RBI_ERRMSG_MAX];

	if (!rc || !w->moves)
		return RBI_OK;
	snprintf(why, sizeof(why), "%s", rbi_errmsg());
	return rbi_fail(RBI_TORN, "the %s 0x%" PRIx64 " could not be read while the "
			"heap moved (GC.compact?): %s", what, addr, why);
}

/* Labels of a C method entry CME (3.4: location_label's CFUNC case);
   names_unread() of a CME that could not be read. */
static int cfunc_labels(struct fwalk *w, struct memo *m, uint64_t cme)
{
	char name[RBI_NAME_MAX], label[LABEL_MAX];
	uint64_t name_cut = 0;
	bool qualified;
	unsigned type;
	size_t len;
	int rc;

	if (!cme)
		return RBI_OK;  /* Ruby prints "unknown method" */
	if ((rc = cme_name(w, cme, &type, name, sizeof(name), &name_cut)))
		return names_unread(w, rc, "method entry", cme);
	len = rbi_vm_method_name(w->t, w->vm, cme_owner(w, cme), name, label,
				 sizeof(label), &qualified);
	m->label_cut = name_cut + rbi_cut_of(len, sizeof(label));
	m->label = strdup(label);
	m->own_label = strdup(w->vm->k.label_qualified ? label : name);
	m->own_label_cut = w->vm->k.label_qualified ? m->label_cut : name_cut;
	m->base_label = strdup(name);
	m->base_label_cut = name_cut;
	cme_body_word(w->t, w->l, cme, VM_METHOD_TYPE_CFUNC, 0, &m->cfunc);
	return RBI_OK;
}

/* Labels and path of a Ruby frame running IS (method entry CME, or 0);
   names_unread() of the label or path if either could not be read. */
static int iseq_labels(struct fwalk *w, struct memo *m, uint64_t cme)
{
	char buf[LABEL_MAX], path[PATH_MAX_];
	unsigned type;
	int rc;

	/* 3.4 location_label: a C method entry names the frame even when an
	   iseq runs (not seen in practice; kept for fidelity). */
	if (cme && !cme_name(w, cme, &type, buf, sizeof(buf), NULL) &&
	    type == VM_METHOD_TYPE_CFUNC) {
		if ((rc = cfunc_labels(w, m, cme)))
			return rc;
	} else {
		uint64_t owner = cme ? cme_owner(w, cme) : 0;
		int label_rc = rbi_iseq_label34(w->t, w->vm, &m->is, owner, buf,
						sizeof(buf), &m->label_cut);
		char own[RBI_NAME_MAX];
		bool own_ok;

		if ((rc = names_unread(w, label_rc, "label of iseq", m->is.addr)))
			return rc;
		m->label = dup_or_null(buf, !label_rc);
		if (w->vm->k.label_qualified) {
			m->own_label = m->label ? strdup(m->label) : NULL;
			m->own_label_cut = m->label_cut;
		} else {
			own_ok = !rbi_iseq_name(w->t, w->vm, &m->is, m->is.label, own,
						sizeof(own), &m->own_label_cut);
			m->own_label = dup_or_null(own, own_ok);
		}
		/* A name, read up to RBI_NAME_MAX as the label's is. */
		m->base_label = dup_or_null(buf, !rbi_iseq_name(w->t, w->vm, &m->is,
				m->is.base_label, buf, RBI_NAME_MAX, &m->base_label_cut));
	}
	rc = rbi_iseq_path(w->t, w->vm, &m->is, path, sizeof(path), &m->path_cut);
	m->path = dup_or_null(path, !rc);
	return names_unread(w, rc, "path of iseq", m->is.addr);
}

/* Read the environment (ep[-2..0]) of the frame C into E: its error, if
   any, is E->rc (and returned). */
static int env_read(struct fwalk *w, const struct cfp *c, struct env *e)
{
	int rc;

	if (!c->ep || (c->ep & 7))
		return e->rc = rbi_fail(RBI_CORRUPT, "control frame 0x%" PRIx64 " has no "
					"environment", c->addr);
	if ((rc = rbi_read(w->t, c->ep - 16, e->w, sizeof(e->w))))
		return e->rc = rbi_fail_context(rc, "control frame 0x%" PRIx64 ": ", c->addr);
	if (frame_type(e->w[2]) == RBI_FRAME_TYPE_UNKNOWN)
		return e->rc = rbi_fail(RBI_CORRUPT, "control frame 0x%" PRIx64 " has no "
					"frame magic (flags 0x%" PRIx64 "): the stack changed "
					"or is corrupt", c->addr, e->w[2]);
	return e->rc = RBI_OK;
}

/* Frame I's environment as the look read it: flags and the
   method-entry/cref slot, or why it could not be read. */
static int read_env(struct fwalk *w, size_t i, uint64_t *flags,
		    uint64_t *me_cref)
{
	const struct env *e = &w->cur->envs[i];

	*me_cref = *flags = 0;
	if (e->rc)
		return rbi_fail(e->rc, "%s", w->cur->err);
	*me_cref = e->w[0];
	*flags = e->w[2];
	return RBI_OK;
}

/* The memo (iseq, labels, path) of the Ruby frame C, and its line. */
static int ruby_frame(struct fwalk *w, const struct cfp *c, uint64_t flags,
		      uint64_t me_cref, struct memo **out, uint64_t *cme, int *line)
{
	struct memo *m;
	bool hit;
	int rc;

	if (w->moves && rbi_vm_frame_half_pushed(c->iseq, frame_type(flags)))
		return rbi_fail(RBI_TORN, "control frame 0x%" PRIx64 " runs an iseq with "
				"a C function's environment: half pushed", c->addr);
	if ((rc = frame_method_entry(w, c->ep, flags, me_cref, cme)))
		return rbi_fail_context(rc, "control frame 0x%" PRIx64 ": ", c->addr);
	/* A method's frame always has its method entry (it names the method's
	   class: 3.4's labels); one without, in a process that runs, was
	   caught half written, as a C method's can be (walk()). */
	if (!*cme && frame_type(flags) == RBI_FRAME_TYPE_METHOD && w->moves)
		return rbi_fail(RBI_TORN, "control frame 0x%" PRIx64 " is a method's without "
				"its method entry: half written", c->addr);
	m = memo_slot(w, c->iseq, *cme, &hit);
	if (!hit) {
		uint64_t runs;

		/* A method frame runs its method entry's iseq; one that does
		   not was read half pushed (its iseq new, its environment
		   still the last frame's in that slot), never a real frame. */
		if (frame_type(flags) == RBI_FRAME_TYPE_METHOD && *cme &&
		    !rbi_vm_cme_iseq(w->t, w->vm, *cme, &runs) && runs != c->iseq &&
		    rbi_vm_location(w->t, w->vm, runs) != rbi_vm_location(w->t, w->vm, c->iseq))
			return rbi_fail(RBI_CORRUPT, "control frame 0x%" PRIx64 " runs "
					"another iseq than its method's: the stack moved",
					c->addr);
		if ((rc = rbi_iseq_read(w->t, w->vm, c->iseq, &m->is)))
			return rbi_fail_context(rc, "control frame 0x%" PRIx64 ": ",
						c->addr);
		if ((rc = iseq_labels(w, m, *cme))) {
			memo_clear(m);
			return rbi_fail_context(rc, "control frame 0x%" PRIx64 ": ", c->addr);
		}
		m->used = true;
		m->last_pc = 0;
	}
	if (m->last_pc != c->pc || !m->last_pc) {
		if ((rc = rbi_iseq_frame_line(w->t, w->vm, &m->is, c->pc, c->jit_return,
					      &m->last_line, m->line_bad, sizeof(m->line_bad))))
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
	w->caller_path_cut = 0;
	w->caller_line = 0;
	w->caller_line_bad[0] = '\0';
	for (size_t j = i + 1; j < w->cur->n; j++) {
		uint64_t flags, me_cref, cme;
		struct memo *m;
		int line;

		get_cfp(w, j, &c);
		if (!c.iseq || !c.pc)
			continue;
		if ((rc = read_env(w, j, &flags, &me_cref)) ||
		    (rc = ruby_frame(w, &c, flags, me_cref, &m, &cme, &line)))
			return rc;
		if (rbi_iseq_c_trace(&m->is))
			continue;       /* reports itself as a C method does */
		w->caller_idx = j;
		w->caller_none = !m->path;
		snprintf(w->caller_path, sizeof(w->caller_path), "%s",
			 m->path ? m->path : "");
		w->caller_path_cut = m->path_cut;       /* M's path fits: the same size */
		w->caller_line = line;
		snprintf(w->caller_line_bad, sizeof(w->caller_line_bad), "%s", m->line_bad);
		return RBI_OK;
	}
	w->caller_idx = w->cur->n;
	return RBI_OK;
}

/* F is shown where its caller is: the path and line cfunc_caller found (a
   C method's frame, or a builtin that backtraces show as one). */
static void at_caller(const struct fwalk *w, struct rbi_frame *f)
{
	f->kind = RBI_FRAME_CFUNC;
	f->path = w->caller_none ? NULL : w->caller_path;
	f->path_cut = w->caller_path_cut;
	f->line = w->caller_line;
	f->line_error = w->caller_line_bad[0] ? w->caller_line_bad : NULL;
}

/* Control frame I (C, its environment's FLAGS and ME_CREF), running an
   iseq, into F, its memo *M and method entry *CME; *SHOWN false when the
   frame before it hides it (*SKIP_NEXT, which this frame sets for the
   next). */
static int iseq_frame(struct fwalk *w, size_t i, const struct cfp *c, uint64_t flags,
		      uint64_t me_cref, bool *skip_next, struct rbi_frame *f,
		      struct memo **m, uint64_t *cme, bool *shown)
{
	bool hidden = *skip_next;
	int rc;

	*shown = false;
	if ((rc = ruby_frame(w, c, flags, me_cref, m, cme, &f->line)))
		return rc;
	if (rbi_iseq_c_trace(&(*m)->is)) {
		/* A builtin that backtraces show as a C method, at its
		   caller's line.  The caller first: finding it may reuse
		   memo slots. */
		if ((rc = cfunc_caller(w, i)) ||
		    (rc = ruby_frame(w, c, flags, me_cref, m, cme, &f->line)))
			return rc;
		*skip_next = false;
		at_caller(w, f);
		*shown = !hidden;
		return RBI_OK;
	}
	*skip_next = rbi_vm_frame_hides_caller(w->vm, &(*m)->is);
	f->kind = RBI_FRAME_RUBY;
	f->vm_entry = (flags & VM_FRAME_FLAG_FINISH) != 0;
	f->iseq = c->iseq;
	f->pc = c->pc;
	f->path = (*m)->path;
	f->path_cut = (*m)->path_cut;
	f->line_error = (*m)->line_bad[0] ? (*m)->line_bad : NULL;
	*shown = !hidden;
	return RBI_OK;
}

/* Control frame I (C, FLAGS, ME_CREF) running no iseq, into F, *M and
   *CME: a C method's, at its caller's place; *SHOWN false for one Ruby
   does not report. */
static int cfunc_frame(struct fwalk *w, size_t i, const struct cfp *c, uint64_t flags,
		       uint64_t me_cref, struct rbi_frame *f, struct memo **m, uint64_t *cme,
		       bool *shown)
{
	bool hit;
	int rc;

	*shown = false;
	if (rbi_vm_frame_shown(c->iseq, c->pc, f->type) == RBI_VM_SHOWN_NONE)
		return RBI_OK;
	/* The caller first: finding it may reuse memo slots. */
	if ((rc = cfunc_caller(w, i)))
		return rc;
	if ((rc = frame_method_entry(w, c->ep, flags, me_cref, cme)))
		return rbi_fail_context(rc, "control frame 0x%" PRIx64 ": ", c->addr);
	/* A C method's frame always has its method entry; one without, in a
	   process that runs, was caught half written (Ruby 2.7 sets ec->cfp
	   before it fills the frame in), as the sampler finds too. */
	if (!*cme && w->moves)
		return rbi_fail(RBI_TORN, "control frame 0x%" PRIx64 " is a C method's "
				"without its method entry: half written", c->addr);
	*m = memo_slot(w, 0, *cme, &hit);
	if (!hit) {
		if ((rc = cfunc_labels(w, *m, *cme))) {
			memo_clear(*m);
			return rbi_fail_context(rc, "control frame 0x%" PRIx64 ": ", c->addr);
		}
		(*m)->used = true;
	}
	at_caller(w, f);
	f->cfunc = (*m)->cfunc;
	*shown = true;
	return RBI_OK;
}

/* F's names, from its memo M, and its method entry CME. */
static int name_frame(struct fwalk *w, struct rbi_frame *f, const struct memo *m, uint64_t cme)
{
	/* Labels and paths read as unknown because the process died under
	   the read are not this frame's. */
	if (rbi_target_gone_seen(w->t))
		return rbi_fail_gone(w->t);
	f->cme = cme;
	f->label = m->label;
	f->label_cut = m->label_cut;
	f->own_label = m->own_label;
	f->own_label_cut = m->own_label_cut;
	f->base_label = m->base_label;
	f->base_label_cut = m->base_label_cut;
	return RBI_OK;
}

static int walk(struct fwalk *w, size_t max_frames, rbi_frame_fn fn, void *arg,
		size_t *emitted_out)
{
	bool skip_next = false;
	size_t emitted = 0;
	int rc;

	*emitted_out = 0;
	for (size_t i = 0; i < w->cur->n && (!max_frames || emitted < max_frames); i++) {
		struct rbi_frame f = { .index = emitted };
		uint64_t flags, me_cref, cme;
		struct memo *m;
		struct cfp c;
		bool shown;

		get_cfp(w, i, &c);
		if (c.iseq && rbi_vm_frame_shown(c.iseq, c.pc, RBI_FRAME_TYPE_UNKNOWN) ==
			      RBI_VM_SHOWN_NONE)
			continue;       /* IFUNC, dummy and finished frames */
		if ((rc = read_env(w, i, &flags, &me_cref)))
			return rc;
		f.cfp = c.addr;
		f.self = c.self;
		f.type = frame_type(flags);
		rc = c.iseq ? iseq_frame(w, i, &c, flags, me_cref, &skip_next, &f, &m, &cme, &shown) :
			      cfunc_frame(w, i, &c, flags, me_cref, &f, &m, &cme, &shown);
		if (rc)
			return rc;
		if (!shown)
			continue;
		if ((rc = name_frame(w, &f, m, cme)))
			return rc;
		*emitted_out = ++emitted;
		if ((rc = fn(&f, arg)))
			return rc;
	}
	return RBI_OK;
}

/* Read N control frames from S->first into S, with the environment of
   each frame that has one (a frame with an iseq but no pc has none to
   read): up to the first that cannot be read or has no frame magic, whose
   error is kept for walk(). */
static int look(struct fwalk *w, struct snap *s, size_t n)
{
	const struct rbi_layout *l = w->l;
	int rc;

	s->n = 0;
	for (size_t i = 0; i < n; i += CHUNK_FRAMES) {
		size_t k = n - i < CHUNK_FRAMES ? n - i : CHUNK_FRAMES;

		if (!RBI_GROW(s->envs, s->envs_cap, i + k, CHUNK_FRAMES) ||
		    !rbi_grow(&s->cfps, &s->cfps_cap, (i + k) * l->cfp_size, 1,
			      CHUNK_FRAMES * l->cfp_size))
			return rbi_fail(RBI_NOMEM, "out of memory");
		if ((rc = rbi_read(w->t, s->first + i * l->cfp_size,
				   s->cfps + i * l->cfp_size, k * l->cfp_size)))
			return rbi_fail_context(rc, "reading control frames: ");
		for (size_t j = i; j < i + k; j++) {
			struct cfp c;

			s->n = j + 1;
			w->cur = s;
			get_cfp(w, j, &c);
			s->envs[j] = (struct env){ .rc = RBI_OK };
			if (!(c.iseq && !c.pc) && env_read(w, &c, &s->envs[j])) {
				snprintf(s->err, sizeof(s->err), "%s", rbi_errmsg());
				return RBI_OK;
			}
		}
	}
	return RBI_OK;
}

/* Did the stack stay put between looks A and B?  B's top may be higher
   (frames popped in between), never deeper (frames A never saw), and each
   of B's frames must be the one A read there (rbi_vm_cfp_kept, the test
   record's reads make) with the same environment: else a frame of A's
   stack may name a method that another frame's slot held a moment later,
   a stack the thread never had.  A caller that ran on past its callee as B
   was read gets back the pc it called from (rbi_vm_cfp_caller_settle). */
static bool steady(const struct fwalk *w, const struct snap *a, struct snap *b)
{
	const struct rbi_layout *l = w->l;
	size_t skip;

	if (b->vm_stack != a->vm_stack || b->first < a->first)
		return false;
	skip = (b->first - a->first) / l->cfp_size;
	if (skip > a->n || b->n + skip != a->n)
		return false;
	for (size_t k = 0; k < b->n; k++) {
		const struct env *ea = &a->envs[k + skip], *eb = &b->envs[k];
		const uint8_t *fa = a->cfps + (k + skip) * l->cfp_size;
		uint8_t *fb = b->cfps + k * l->cfp_size;

		if (!rbi_vm_cfp_kept(l, fa, fb) ||
		    ea->rc != eb->rc || (!ea->rc && memcmp(ea->w, eb->w, sizeof(ea->w))))
			return false;
		if (k)
			rbi_vm_cfp_caller_settle(l, fa - l->cfp_size, fb - l->cfp_size, fa, fb);
	}
	return true;
}

/* Check TH's execution context and read its stack into S (look()); *EMPTY
   if the thread has no frames (starting, finished). */
static int setup(struct fwalk *w, const struct rbi_thread *th, struct snap *s, bool *empty)
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
	if ((ec[0] & 7) || ec[1] == 0 || ec[1] > RBI_VM_STACK_MAX ||
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
	*empty = false;
	s->first = ec[2];
	s->vm_stack = ec[0];
	return look(w, s, (last - ec[2]) / l->cfp_size);
}

/* A live walk's frames, owned, until all of them were read. */
struct held {
	struct rbi_frame *v;
	size_t n, cap;
};

static int hold_fn(const struct rbi_frame *f, void *arg)
{
	struct held *h = arg;

	if (!RBI_GROW(h->v, h->cap, h->n + 1, 64))
		return rbi_fail(RBI_NOMEM, "out of memory");
	if (rbi_frame_own(&h->v[h->n], f))
		return RBI_NOMEM;
	h->n++;
	return RBI_OK;
}

static void held_clear(struct held *h)
{
	for (size_t i = 0; i < h->n; i++)
		rbi_frame_disown(&h->v[i]);
	h->n = 0;
}

/* H's frames to FN, in order: FN's non-zero return ends it. */
static int held_deliver(const struct held *h, rbi_frame_fn fn, void *arg)
{
	int rc = RBI_OK;

	for (size_t i = 0; i < h->n && !rc; i++)
		rc = fn(&h->v[i], arg);
	return rc;
}

/* A walk's failure worth reading the stack again for: a frame that made
   no sense, or a name that could not be read, as it moved. */
static bool moved_failure(int rc)
{
	return rc == RBI_CORRUPT || rc == RBI_UNMAPPED || rc == RBI_PARTIAL || rc == RBI_TORN;
}

RBI_EXPORT int rbi_frame_foreach(rbi_target *t, const struct rbi_thread *th,
				 size_t max_frames, rbi_frame_fn fn, void *arg)
{
	struct fwalk w = { .t = t };
	struct held held = { 0 };
	struct rbi_vm *vm = NULL;
	/* A live process that runs moves its stacks: each is read twice. */
	bool moves;
	bool empty;
	int rc;

	if (!t || !th || !fn)
		return rbi_fail(RBI_INVAL, "no target, thread or callback");
	if ((rc = rbi_vm_get(t, &vm)))
		return rc;
	w.vm = vm;
	w.l = vm->layout;
	w.moves = moves = rbi_target_moves(t);
	/* Ruby has no backtrace for a killed thread (thread_backtrace_to_ary):
	   its stack may be half torn down or freed. */
	if (th->status == RBI_THREAD_KILLED)
		return RBI_OK;
	w.memo = calloc(MEMO_SLOTS, sizeof(*w.memo));
	if (!w.memo)
		return rbi_fail(RBI_NOMEM, "out of memory");
	for (int attempt = 1;; attempt++) {
		size_t emitted;

		if (moves)
			rbi_target_forget(t);
		w.cur = &w.looks[0];
		if ((rc = setup(&w, th, &w.looks[0], &empty)) || empty)
			break;
		if (moves) {
			/* The second look, from memory read afresh: the stack
			   walked is the second, if the first had it. */
			rbi_target_forget(t);
			w.cur = &w.looks[1];
			if ((rc = setup(&w, th, &w.looks[1], &empty)) || empty)
				break;
			if (!steady(&w, &w.looks[0], &w.looks[1])) {
				if (attempt < LIVE_RETRIES)
					continue;
				rc = rbi_fail(RBI_TORN, "the stack changed while it was "
					      "read, %d times: not shown", attempt);
				break;
			}
		}
		for (size_t i = 0; i < MEMO_SLOTS; i++)
			memo_clear(&w.memo[i]);
		w.caller_valid = false;
		if (!moves) {
			rc = walk(&w, max_frames, fn, arg, &emitted);
			break;
		}
		/* Frames that make no sense: read them again, afresh; none
		   was delivered yet. */
		held_clear(&held);
		rc = walk(&w, max_frames, hold_fn, &held, &emitted);
		if (rc == RBI_OK) {
			rc = held_deliver(&held, fn, arg);
			break;
		}
		if (!moved_failure(rc) || attempt >= LIVE_RETRIES)
			break;
	}
	held_clear(&held);
	free(held.v);
	for (size_t i = 0; i < MEMO_SLOTS; i++)
		memo_clear(&w.memo[i]);
	free(w.memo);
	for (size_t i = 0; i < RBI_ARRAY_SIZE(w.looks); i++) {
		free(w.looks[i].cfps);
		free(w.looks[i].envs);
	}
	return rc;
}

/* ---- One frame at a time, for the sampler (vm/sample.c) ----------------- */

rbi_frame_type rbi_vm_frame_type(uint64_t ep_flags)
{
	return frame_type(ep_flags);
}

rbi_vm_shown rbi_vm_frame_shown(uint64_t iseq, uint64_t pc, rbi_frame_type type)
{
	if (iseq)
		return pc ? RBI_VM_SHOWN_RUBY : RBI_VM_SHOWN_NONE;
	return type == RBI_FRAME_TYPE_CFUNC ? RBI_VM_SHOWN_CFUNC : RBI_VM_SHOWN_NONE;
}

bool rbi_vm_frame_half_pushed(uint64_t iseq, rbi_frame_type type)
{
	return iseq && (type == RBI_FRAME_TYPE_CFUNC || type == RBI_FRAME_TYPE_IFUNC);
}

bool rbi_vm_frame_hides_caller(const struct rbi_vm *vm, const struct rbi_iseq *is)
{
	return vm->k.label_skips_rescue_caller &&
	       (is->type == RBI_ISEQ_RESCUE || is->type == RBI_ISEQ_ENSURE);
}

bool rbi_vm_cfp_kept(const struct rbi_layout *l, const uint8_t *before,
		     const uint8_t *after)
{
	return rbi_get_u64(before, l->cfp_iseq) == rbi_get_u64(after, l->cfp_iseq) &&
	       rbi_get_u64(before, l->cfp_self) == rbi_get_u64(after, l->cfp_self);
}

void rbi_vm_cfp_caller_settle(const struct rbi_layout *l, const uint8_t *callee_before,
			      const uint8_t *callee_after, const uint8_t *caller_before,
			      uint8_t *caller_after)
{
	if (rbi_vm_cfp_kept(l, callee_before, callee_after) &&
	    rbi_get_u64(callee_before, l->cfp_ep) == rbi_get_u64(callee_after, l->cfp_ep))
		memcpy(caller_after + l->cfp_pc, caller_before + l->cfp_pc, 8);
}

int rbi_vm_cme_iseq(struct rbi_target *t, const struct rbi_vm *vm, uint64_t cme,
		    uint64_t *iseq)
{
	return cme_body_word(t, vm->layout, cme, VM_METHOD_TYPE_ISEQ, 0, iseq);
}

int rbi_vm_cme_cref(struct rbi_target *t, const struct rbi_vm *vm, uint64_t cme,
		    uint64_t *cref)
{
	return cme_body_word(t, vm->layout, cme, VM_METHOD_TYPE_ISEQ, 1, cref);
}

int rbi_vm_frame_names(struct rbi_target *t, struct rbi_vm *vm,
		       const struct rbi_iseq *is, uint64_t cme,
		       char **label, char **path)
{
	struct fwalk w = { .t = t, .vm = vm, .l = vm->layout,
			   .moves = rbi_target_moves(t) };
	struct memo m = { .iseq = is ? is->addr : 0, .cme = cme };
	int rc;

	if (is) {
		m.is = *is;
		rc = iseq_labels(&w, &m, cme);
	} else {
		rc = cfunc_labels(&w, &m, cme);
	}
	*label = rc ? NULL : m.label;
	*path = rc ? NULL : m.path;
	if (!rc)
		m.label = m.path = NULL;
	memo_clear(&m);
	return rc;
}
