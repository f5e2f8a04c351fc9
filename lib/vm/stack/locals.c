/* locals.c: a frame's local variables and the values they hold.
 *
 * Names: the iseq's local table (body->local_table, local_table_size IDs).
 * Values: the frame's environment.  compile.c addresses local I of a table
 * of SIZE as getlocal (SIZE - I) + VM_ENV_DATA_SIZE - 1, and vm_getlocal
 * reads ep[-that], so the locals are the SIZE slots just below the three
 * environment words (me_cref, specval, flags at ep[0]):
 *
 *     ep - (SIZE + 2) ... ep - 3  =  local 0 ... local SIZE-1
 *
 * (rb_vmdebug_env_dump and misc/gdb.py's `cfp` print the same slots.)  An
 * escaped environment (captured by a Proc or a Binding) lives on the heap
 * with the same shape, and cfp->ep points there, so one read serves both.
 * A block reaches the scopes around it through VM_ENV_PREV_EP (ep[-1]
 * without its low two bits) and its iseq's parent_iseq, until an
 * environment flagged VM_ENV_FLAG_LOCAL (the method's, or <main>'s).
 *
 * Values (special_consts.h): false 0, true 0x14, nil and undef per version
 * (vm->k), Fixnum ...1, flonum ...10, static Symbol (ID << 8) | 0x0c, and
 * heap objects by their T_xxx type. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm/stack/stack.h"

#define VM_ENV_DATA_SIZE 3
/* Scopes from a block out to its method: deeper is a cycle. */
#define LEVELS_MAX 256
/* A local table longer than this is garbage (Ruby's own limit is the
   VM stack, far smaller in practice). */
#define LOCALS_MAX 65536
#define STRING_DEFAULT 256
#define CLASS_NAME_MAX 512
#define ID_NAME_MAX 512

/* id.h */
#define ID_SCOPE_SHIFT 4
#define ID_SCOPE_MASK 0x0e
#define ID_LOCAL 0x00
/* special_consts.h */
#define QFALSE 0x00
#define QTRUE 0x14
#define FIXNUM_FLAG 0x01
#define FLONUM_MASK 0x03
#define FLONUM_FLAG 0x02
#define FLONUM_ZERO 0x8000000000000002ull
#define SYMBOL_FLAG 0x0c
#define SPECIAL_SHIFT 8
/* ruby_value_type */
#define T_NONE 0x00
#define T_FLOAT 0x04
#define T_SYMBOL 0x14
#define T_MOVED 0x1e
#define T_ZOMBIE 0x1d

RBI_EXPORT const char *rbi_value_kind_name(rbi_value_kind kind)
{
	static const char *const names[] = {
		[RBI_VALUE_UNREADABLE] = "unreadable", [RBI_VALUE_NIL] = "nil",
		[RBI_VALUE_TRUE] = "true", [RBI_VALUE_FALSE] = "false",
		[RBI_VALUE_INTEGER] = "integer", [RBI_VALUE_FLOAT] = "float",
		[RBI_VALUE_SYMBOL] = "symbol", [RBI_VALUE_STRING] = "string",
		[RBI_VALUE_OBJECT] = "object", [RBI_VALUE_UNDEF] = "undef",
	};

	if ((unsigned)kind < RBI_ARRAY_SIZE(names) && names[kind])
		return names[kind];
	return "unknown";
}

/* rb_float_flonum_value (internal/numeric.h). */
static double flonum_value(uint64_t v)
{
	uint64_t b63 = v >> 63, bits;
	double d;

	if (v == FLONUM_ZERO)
		return 0.0;
	bits = (2 - b63) | (v & ~(uint64_t)FLONUM_MASK);
	bits = bits >> 3 | bits << 61;
	memcpy(&d, &bits, sizeof(d));
	return d;
}

/* Where decoded strings go: the class name first, then the bytes. */
struct sbuf {
	char *p;
	size_t cap, used;
};

static char *sbuf_take(struct sbuf *b, size_t *room)
{
	*room = b->cap - b->used;
	return *room ? b->p + b->used : NULL;
}

static const char *sbuf_put(struct sbuf *b, const char *s, size_t len)
{
	size_t room;
	char *dst = sbuf_take(b, &room);

	if (!dst)
		return NULL;
	if (len > room - 1)
		len = room - 1;
	memcpy(dst, s, len);
	dst[len] = '\0';
	b->used += len + 1;
	return dst;
}

static void set_class(struct rbi_value *out, struct sbuf *b, const char *name)
{
	out->class_name = sbuf_put(b, name, strlen(name));
}

static int unreadable(struct rbi_value *out, int rc)
{
	out->kind = RBI_VALUE_UNREADABLE;
	out->error = rc;
	out->error_msg = rbi_errmsg();
	return rc;
}

/* BYTES from the String STR, cut to MAX bytes and to what B holds. */
static int put_string(struct rbi_target *t, struct rbi_vm *vm, uint64_t str,
		      size_t max, struct sbuf *b, struct rbi_value *out)
{
	size_t room, len;
	char *dst = sbuf_take(b, &room);
	int rc;

	if (!dst)
		return RBI_OK;
	if (room > max + 1)
		room = max + 1;
	if ((rc = rbi_vm_string_full(t, vm, str, dst, room, &len, &out->full_len)))
		return rc;
	out->bytes = dst;
	out->len = len;
	out->truncated = len < out->full_len;
	b->used += len + 1;
	return RBI_OK;
}

static int heap_value(struct rbi_target *t, struct rbi_vm *vm, uint64_t v,
		      size_t max, struct sbuf *b, struct rbi_value *out)
{
	const struct rbi_layout *l = vm->layout;
	char name[CLASS_NAME_MAX];
	uint64_t flags, klass, fstr;
	int rc;

	if ((rc = rbi_vm_obj_flags(t, vm, v, &flags)))
		return rc;
	out->type = flags & RBI_T_MASK;
	if (out->type == T_NONE || out->type == T_MOVED || out->type == T_ZOMBIE)
		return rbi_fail(RBI_CORRUPT, "0x%" PRIx64 " is a free or moved heap "
				"slot (type 0x%02x)", v, out->type);
	if ((rc = rbi_read_u64(t, v + RBI_RBASIC_KLASS, &klass)))
		return rc;
	if (rbi_vm_class_name(t, vm, klass, name, sizeof(name)))
		set_class(out, b, name);
	switch (out->type) {
	case RBI_T_STRING:
		out->kind = RBI_VALUE_STRING;
		return put_string(t, vm, v, max, b, out);
	case T_FLOAT:
		if (l->rfloat_value == RBI_ABSENT)
			return rbi_fail(RBI_LAYOUT, "no RFloat layout");
		if ((rc = rbi_read(t, v + l->rfloat_value, &out->real, sizeof(out->real))))
			return rc;
		out->kind = RBI_VALUE_FLOAT;
		return RBI_OK;
	case T_SYMBOL:
		if (l->rsymbol_fstr == RBI_ABSENT)
			break;          /* an object of class Symbol */
		if ((rc = rbi_read_u64(t, v + l->rsymbol_fstr, &fstr)) ||
		    (rc = put_string(t, vm, fstr, CLASS_NAME_MAX, b, out)))
			return rc;
		out->kind = RBI_VALUE_SYMBOL;
		out->full_len = 0;
		return RBI_OK;
	case RBI_T_CLASS:
	case RBI_T_MODULE:
		if (rbi_vm_class_path(t, vm, v, name, sizeof(name), NULL)) {
			out->bytes = sbuf_put(b, name, strlen(name));
			out->len = out->bytes ? strlen(out->bytes) : 0;
		}
		break;
	default:
		break;
	}
	out->kind = RBI_VALUE_OBJECT;
	return RBI_OK;
}

/* Decode V with strings in B (String bytes cut to MAX). */
static int value_decode(struct rbi_target *t, struct rbi_vm *vm, uint64_t v,
			size_t max, struct sbuf *b, struct rbi_value *out)
{
	char name[ID_NAME_MAX];
	int rc;

	memset(out, 0, sizeof(*out));
	out->raw = v;
	out->error_msg = "";
	if (v == QFALSE) {
		out->kind = RBI_VALUE_FALSE;
		set_class(out, b, "FalseClass");
	} else if (v == QTRUE) {
		out->kind = RBI_VALUE_TRUE;
		set_class(out, b, "TrueClass");
	} else if (v == vm->k.qnil) {
		out->kind = RBI_VALUE_NIL;
		set_class(out, b, "NilClass");
	} else if (v == vm->k.qundef) {
		out->kind = RBI_VALUE_UNDEF;
	} else if (v & FIXNUM_FLAG) {
		out->kind = RBI_VALUE_INTEGER;
		out->integer = (int64_t)v >> 1;
		set_class(out, b, "Integer");
	} else if ((v & FLONUM_MASK) == FLONUM_FLAG) {
		out->kind = RBI_VALUE_FLOAT;
		out->real = flonum_value(v);
		set_class(out, b, "Float");
	} else if ((v & 0xff) == SYMBOL_FLAG) {
		set_class(out, b, "Symbol");
		if ((rc = rbi_vm_id_name(t, vm, v >> SPECIAL_SHIFT, name, sizeof(name), NULL)))
			return unreadable(out, rc);
		out->kind = RBI_VALUE_SYMBOL;
		out->bytes = sbuf_put(b, name, strlen(name));
		out->len = out->bytes ? strlen(out->bytes) : 0;
	} else if (rbi_vm_heap_p(vm, v)) {
		if ((rc = heap_value(t, vm, v, max, b, out)))
			return unreadable(out, rc);
	} else {
		return unreadable(out, rbi_fail(RBI_CORRUPT, "0x%" PRIx64 " is no "
						"Ruby value", v));
	}
	return RBI_OK;
}

RBI_EXPORT int rbi_value_read(rbi_target *t, uint64_t value, char *buf,
			      size_t cap, struct rbi_value *out)
{
	struct sbuf b = { .p = buf, .cap = buf ? cap : 0 };
	struct rbi_vm *vm;
	int rc;

	if (!t || !out || (!buf && cap))
		return rbi_fail(RBI_INVAL, "no target or result");
	memset(out, 0, sizeof(*out));
	out->raw = value;
	out->error_msg = "";
	if ((rc = rbi_vm_get(t, &vm)))
		return unreadable(out, rc);
	return value_decode(t, vm, value, cap, &b, out);
}

/* ---- Locals ------------------------------------------------------------- */

struct lwalk {
	struct rbi_target *t;
	struct rbi_vm *vm;
	size_t max_string;
	char *buf;              /* strings of one local */
	size_t cap;
	char errmsg[512];
	uint64_t *ids, *vals;
	char name[ID_NAME_MAX];
};

/* is_local_id (symbol.h): a non-operator ID of local scope. */
static bool local_id(const struct rbi_vm *vm, uint64_t id)
{
	return id > vm->k.tlast_op_id && (id & ID_SCOPE_MASK) == ID_LOCAL;
}

/* The locals of one scope: IS's table over the environment at EP. */
static int scope_locals(struct lwalk *w, const struct rbi_iseq *is, uint64_t ep,
			unsigned level, rbi_local_fn fn, void *arg)
{
	const struct rbi_layout *l = w->vm->layout;
	uint64_t table, base;
	uint32_t size, params = 0;
	bool params_known = l->body_param_size != RBI_ABSENT;
	int rc;

	if (l->body_local_table == RBI_ABSENT || l->body_local_table_size == RBI_ABSENT)
		return rbi_fail(RBI_LAYOUT, "this Ruby's iseq layout has no local "
				"table (Ruby %s without DWARF): install its debug "
				"info to see local variables", w->vm->info.version);
	if ((rc = rbi_read_u64(w->t, is->body + l->body_local_table, &table)) ||
	    (rc = rbi_read_u32(w->t, is->body + l->body_local_table_size, &size)))
		return rbi_fail_context(rc, "iseq 0x%" PRIx64 " local table: ", is->addr);
	if (size == 0)
		return RBI_OK;
	if (params_known &&
	    (rc = rbi_read_u32(w->t, is->body + l->body_param_size, &params)))
		return rbi_fail_context(rc, "iseq 0x%" PRIx64 " parameters: ", is->addr);
	if (size > LOCALS_MAX || params > size || !table || (table & 7) ||
	    ep < (uint64_t)(size + VM_ENV_DATA_SIZE) * 8)
		return rbi_fail(RBI_CORRUPT, "iseq 0x%" PRIx64 " has a local table "
				"of %u at 0x%" PRIx64, is->addr, size, table);
	free(w->ids);
	free(w->vals);
	w->ids = malloc((size_t)size * 8);
	w->vals = malloc((size_t)size * 8);
	if (!w->ids || !w->vals)
		return rbi_fail(RBI_NOMEM, "out of memory");
	base = ep - (uint64_t)(size + VM_ENV_DATA_SIZE - 1) * 8;
	if ((rc = rbi_read(w->t, table, w->ids, (size_t)size * 8)))
		return rbi_fail_context(rc, "iseq 0x%" PRIx64 " local table: ", is->addr);
	if ((rc = rbi_read(w->t, base, w->vals, (size_t)size * 8)))
		return rbi_fail_context(rc, "environment 0x%" PRIx64 ": ", ep);
	for (uint32_t i = 0; i < size; i++) {
		struct rbi_local loc = { .level = level, .index = i,
					 .argument = params_known ? i < params : -1 };
		struct sbuf b = { .p = w->buf, .cap = w->cap };

		loc.internal = !local_id(w->vm, w->ids[i]);
		if (!rbi_vm_id_name(w->t, w->vm, w->ids[i], w->name, sizeof(w->name), NULL))
			loc.name = w->name;
		else
			loc.internal = 1;
		if (value_decode(w->t, w->vm, w->vals[i], w->max_string, &b, &loc.value)) {
			/* Keep the explanation: naming the next local may fail too. */
			snprintf(w->errmsg, sizeof(w->errmsg), "%s", rbi_errmsg());
			loc.value.error_msg = w->errmsg;
		}
		if ((rc = fn(&loc, arg)))
			return rc;
	}
	return RBI_OK;
}

static int walk_scopes(struct lwalk *w, const struct rbi_frame *f,
		       rbi_local_fn fn, void *arg)
{
	const struct rbi_layout *l = w->vm->layout;
	uint64_t iseq_addr, ep, env[2];  /* ep[-1] (specval), ep[0] (flags) */
	struct rbi_iseq is;
	int rc;

	if (l->cfp_iseq == RBI_ABSENT || l->cfp_ep == RBI_ABSENT)
		return rbi_fail(RBI_LAYOUT, "no control frame layout");
	if ((rc = rbi_read_u64(w->t, f->cfp + l->cfp_iseq, &iseq_addr)) ||
	    (rc = rbi_read_u64(w->t, f->cfp + l->cfp_ep, &ep)))
		return rbi_fail_context(rc, "control frame 0x%" PRIx64 ": ", f->cfp);
	if (iseq_addr != f->iseq)
		return rbi_fail(RBI_CORRUPT, "control frame 0x%" PRIx64 " runs iseq 0x%"
				PRIx64 ", not 0x%" PRIx64 ": the thread moved on; "
				"read its frames again", f->cfp, iseq_addr, f->iseq);
	for (unsigned level = 0; level < LEVELS_MAX; level++) {
		if (!ep || (ep & 7))
			return rbi_fail(RBI_CORRUPT, "environment 0x%" PRIx64 " of frame "
					"0x%" PRIx64 " is not aligned", ep, f->cfp);
		if ((rc = rbi_iseq_read(w->t, w->vm, iseq_addr, &is)) ||
		    (rc = rbi_read(w->t, ep - 8, env, sizeof(env))) ||
		    (rc = scope_locals(w, &is, ep, level, fn, arg)))
			return rc;
		if (env[1] & RBI_VM_ENV_FLAG_LOCAL)
			return RBI_OK;
		ep = env[0] & ~(uint64_t)3;     /* VM_ENV_PREV_EP */
		iseq_addr = is.parent_iseq;
		if (!ep || !iseq_addr)
			return RBI_OK;  /* a block of a C method (ifunc): no scope */
	}
	return rbi_fail(RBI_CORRUPT, "frame 0x%" PRIx64 ": more than %d nested "
			"scopes", f->cfp, LEVELS_MAX);
}

RBI_EXPORT int rbi_local_foreach(rbi_target *t, const struct rbi_frame *frame,
				 size_t max_string, rbi_local_fn fn, void *arg)
{
	struct lwalk w = { .t = t };
	int rc;

	if (!t || !frame || !fn)
		return rbi_fail(RBI_INVAL, "no target, frame or callback");
	if (frame->kind != RBI_FRAME_RUBY || !frame->iseq)
		return RBI_OK;
	if ((rc = rbi_vm_get(t, &w.vm)))
		return rc;
	w.max_string = max_string ? max_string : STRING_DEFAULT;
	if (w.max_string > RBI_STRING_MAX)
		w.max_string = RBI_STRING_MAX;
	w.cap = w.max_string + CLASS_NAME_MAX + 2;
	if (!(w.buf = malloc(w.cap)))
		return rbi_fail(RBI_NOMEM, "out of memory");
	rc = walk_scopes(&w, frame, fn, arg);
	free(w.buf);
	free(w.ids);
	free(w.vals);
	return rc;
}
