/* lookup.c: what a name means in a frame, and steps into a value: the
 * evaluation behind a debugger's `p EXPR`.
 *
 * A name is looked up as Ruby reads it there: `self` is the frame's
 * receiver, a bare word a local variable of the frame or of a scope around
 * it (the innermost scope first: a block's variable shadows its method's).
 * "@name" is an instance variable of self (ivar.c reads an Object's, a
 * Class's or a Module's),
 * "$name" a global variable (global.c), and a capitalized word or path a
 * constant resolved as the frame's code would: through its lexical scope
 * (cref.c, constant.c).  A name that is not
 * there is RBI_INVAL with what is there; what this Ruby does not let us
 * read is RBI_UNSUPPORTED, never a guess.
 *
 * A step into a value: Array#[] (rbi_vm_array_at), and the members that
 * need no method call: length and size of an Array, bytesize of a String,
 * class of a heap object (rb_class_real of its RBasic.klass), an instance
 * variable of an Object, a Class or a Module (instance_variable_get). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "vm/eval/eval.h"

/* The local names listed in a "no such variable" message. */
#define NAMES_SHOWN 160
/* The bytes of an Object read for its ivars: an RVALUE (40 bytes in
   2.6-3.4; the ivars embedded past them are read apart). */
#define RVALUE_READ 64
#define IVAR_NAME_MAX 256
/* Fixnums: what length and size give back, as the target would. */
#define FIXNUM(n) (((uint64_t)(n) << 1) | 1)

struct find {
	const char *name;
	bool found;
	uint64_t value;
	char names[NAMES_SHOWN];
	size_t used;
};

static int find_local(const struct rbi_local *l, void *arg)
{
	struct find *f = arg;
	int n;

	if (l->internal || !l->name)
		return 0;
	if (!strcmp(l->name, f->name)) {
		f->found = true;
		f->value = l->value.raw;
		return 1;
	}
	if (f->used < sizeof(f->names)) {
		n = snprintf(f->names + f->used, sizeof(f->names) - f->used, "%s%s",
			     f->used ? ", " : "", l->name);
		f->used += n > 0 ? (size_t)n : 0;
	}
	return 0;
}

/* FN(NAME, VALUE, ARG) for each set instance variable of SELF (an Object,
   a Class or a Module; hidden ones, whose names have no "@", left out),
   until FN returns non-zero, which is returned.  WHAT starts messages,
   WHOSE names SELF in them ("self", "the value"). */
typedef int (*ivar_fn)(const char *name, uint64_t value, void *arg);
static int ivars_foreach(rbi_target *t, struct rbi_vm *vm, uint64_t self, const char *what,
			 const char *whose, ivar_fn fn, void *arg)
{
	const struct rbi_layout *l = vm->layout;
	uint8_t bytes[RVALUE_READ];
	struct rbi_obj_bytes obj = { .addr = self, .bytes = bytes };
	struct rbi_ivars iv = { 0 };
	char ivar[IVAR_NAME_MAX];
	uint64_t klass;
	unsigned type;
	int rc;

	if (!rbi_vm_heap_p(vm, self) || rbi_vm_obj_flags(t, vm, self, &obj.flags))
		return rbi_fail(RBI_UNSUPPORTED, "%s: %s is no heap object: no instance "
				"variables", what, whose);
	type = obj.flags & RBI_T_MASK;
	if (type != RBI_T_OBJECT && type != RBI_T_CLASS && type != RBI_T_MODULE)
		return rbi_fail(RBI_UNSUPPORTED, "%s: instance variables are read of an Object, "
				"a Class or a Module, and %s is a %s", what, whose,
				rbi_value_type_name(type) ? rbi_value_type_name(type) : "T_NONE");
	if (l->rvalue_size == RBI_ABSENT || l->rvalue_size > sizeof(bytes))
		return rbi_fail(RBI_UNSUPPORTED, "this Ruby's layout has no RVALUE size");
	obj.size = l->rvalue_size;
	if ((rc = rbi_read(t, self, bytes, obj.size)))
		return rc;
	klass = rbi_get_u64(bytes, RBI_RBASIC_KLASS);
	if (!rbi_vm_class_real(t, vm, klass, &klass))
		return rbi_fail(RBI_CORRUPT, "the class of %s (0x%" PRIx64 ") cannot be read",
				whose, self);
	if ((rc = rbi_vm_object_ivars(t, vm, &obj, &iv)) ||
	    (rc = rbi_vm_object_ivar_ids(t, vm, &obj, klass, &iv))) {
		rbi_ivars_free(&iv);
		if (rc == RBI_UNSUPPORTED)
			return rbi_fail_context(rc, "%s: instance variables cannot be read on "
						"this Ruby: ", what);
		return rbi_fail_context(rc, "%s: ", what);
	}
	rc = 0;
	for (uint64_t i = 0; i < iv.n && !rc; i++) {
		if (!iv.ids[i] || iv.values[i] == vm->k.qundef)
			continue;       /* unset */
		if ((rc = rbi_vm_id_name(t, vm, iv.ids[i], ivar, sizeof(ivar), NULL)))
			break;
		/* Hidden ones (a class's __classpath__ up to 3.1) are no names. */
		if (ivar[0] == '@')
			rc = fn(ivar, iv.values[i], arg);
	}
	rbi_ivars_free(&iv);
	return rc;
}

struct ivar_find {
	const char *name;
	uint64_t value;
	char names[NAMES_SHOWN];
	size_t used;
};

static int ivar_match(const char *ivar, uint64_t value, void *arg)
{
	struct ivar_find *f = arg;
	int n;

	if (!strcmp(ivar, f->name)) {
		f->value = value;
		return 1;
	}
	if (f->used < sizeof(f->names)) {
		n = snprintf(f->names + f->used, sizeof(f->names) - f->used, "%s%s",
			     f->used ? ", " : "", ivar);
		f->used += n > 0 ? (size_t)n : 0;
	}
	return 0;
}

/* The instance variable NAME ("@x") of SELF (named WHOSE in messages) into
   *VALUE. */
static int ivar_lookup(rbi_target *t, struct rbi_vm *vm, uint64_t self, const char *whose,
		       const char *name, uint64_t *value)
{
	struct ivar_find f = { .name = name };
	int rc = ivars_foreach(t, vm, self, name, whose, ivar_match, &f);

	if (rc < 0)
		return rc;
	if (!rc)
		return rbi_fail(RBI_INVAL, "%s has no instance variable %s (%s%s)", whose, name,
				f.used ? "it has: " : "it has none", f.names);
	*value = f.value;
	return RBI_OK;
}

/* The constant path NAME as FRAME's code reads it: through its lexical
   scope, where the frame still runs what it ran when it was walked (a C
   frame's from the top level). */
static int frame_constant(rbi_target *t, struct rbi_vm *vm, const struct rbi_frame *frame,
			  const char *name, uint64_t *value)
{
	uint64_t cref = 0;
	int rc;

	if (frame->kind == RBI_FRAME_RUBY && frame->cfp && name[0] != ':' &&
	    (rc = rbi_vm_frame_cref(t, vm, frame->cfp, frame->iseq, &cref)))
		return rbi_fail_context(rc, "%s: the frame's lexical scope: ", name);
	return rbi_vm_constant(t, vm, name, cref, frame->self, value);
}

RBI_EXPORT int rbi_frame_lookup(rbi_target *t, const struct rbi_frame *frame,
				const char *name, uint64_t *value)
{
	struct find f = { .name = name };
	struct rbi_vm *vm;
	int rc;

	if (!t || !frame || !name || !value)
		return rbi_fail(RBI_INVAL, "no target, frame, name or result");
	if (!strcmp(name, "self")) {
		*value = frame->self;
		return RBI_OK;
	}
	if (name[0] == '@' || name[0] == '$' || (name[0] >= 'A' && name[0] <= 'Z') ||
	    name[0] == ':') {
		if ((rc = rbi_vm_get(t, &vm)))
			return rc;
		if (name[0] == '@')
			return ivar_lookup(t, vm, frame->self, "self", name, value);
		if (name[0] == '$')
			return rbi_vm_global(t, vm, name, value);
		return frame_constant(t, vm, frame, name, value);
	}
	rc = rbi_local_foreach(t, frame, 1, find_local, &f);
	if (rc < 0)
		return rc;
	if (!f.found)
		return rbi_fail(RBI_INVAL, "no local variable \"%s\" in frame %zu (%s%s)",
				name, frame->index, f.used ? "locals: " : "it has no locals",
				f.names);
	*value = f.value;
	return RBI_OK;
}

/* Names for rbi_frame_names: each passed to the caller's FN. */
struct name_walk {
	struct rbi_target *t;
	const struct rbi_vm *vm;
	rbi_name_fn fn;
	void *arg;
};

static int ivar_name(const char *ivar, uint64_t value, void *arg)
{
	const struct name_walk *w = arg;

	(void)value;
	return w->fn(ivar, w->arg);
}

/* An rb_id_table key's name (one that cannot be read is left out). */
static int table_name(uint32_t serial, uint64_t value, void *arg)
{
	const struct name_walk *w = arg;
	char name[IVAR_NAME_MAX];

	(void)value;
	if (rbi_vm_serial_name(w->t, w->vm, serial, name, sizeof(name), NULL))
		return 0;
	return w->fn(name, w->arg);
}

RBI_EXPORT int rbi_frame_names(rbi_target *t, const struct rbi_frame *frame, char kind,
			       rbi_name_fn fn, void *arg)
{
	struct name_walk w = { .t = t, .fn = fn, .arg = arg };
	struct rbi_vm *vm;
	uint64_t tbl, cref = 0;
	int rc;

	if (!t || !frame || !fn)
		return rbi_fail(RBI_INVAL, "no target, frame or callback");
	if ((rc = rbi_vm_get(t, &vm)))
		return rc;
	w.vm = vm;
	switch (kind) {
	case '@':
		return ivars_foreach(t, vm, frame->self, "@", "self", ivar_name, &w);
	case '$':
		if ((rc = rbi_vm_global_table(t, vm, &tbl)))
			return rc;
		return rbi_vm_id_table_foreach(t, vm, tbl, table_name, &w);
	case 'A':
		if (frame->kind == RBI_FRAME_RUBY && frame->cfp &&
		    (rc = rbi_vm_frame_cref(t, vm, frame->cfp, frame->iseq, &cref)))
			return rc;
		return rbi_vm_constant_names(t, vm, cref, frame->self, table_name, &w);
	default:
		return rbi_fail(RBI_INVAL, "names of kind '%c': '@', '$' or 'A'", kind);
	}
}

RBI_EXPORT int rbi_value_at(rbi_target *t, uint64_t value, int64_t index, uint64_t *out)
{
	struct rbi_vm *vm;
	uint64_t len, elems, flags;
	int rc;

	if (!t || !out)
		return rbi_fail(RBI_INVAL, "no target or result");
	if ((rc = rbi_vm_get(t, &vm)))
		return rc;
	if (!rbi_vm_heap_p(vm, value) || rbi_vm_obj_flags(t, vm, value, &flags) ||
	    (flags & RBI_T_MASK) != RBI_T_ARRAY)
		return rbi_fail(RBI_INVAL, "[i] reads an Array's element; 0x%" PRIx64
				" is no Array", value);
	if ((rc = rbi_vm_array(t, vm, value, &len, &elems)))
		return rc;
	if (index < 0)
		index += (int64_t)len;
	if (index < 0 || (uint64_t)index >= len) {
		*out = vm->k.qnil;      /* as Array#[] past either end */
		return RBI_OK;
	}
	return rbi_read_u64(t, elems + 8 * (uint64_t)index, out);
}

RBI_EXPORT int rbi_value_member(rbi_target *t, uint64_t value, const char *member,
				uint64_t *out)
{
	struct rbi_vm *vm;
	uint64_t flags = 0, len, elems, full;
	unsigned type;
	char byte;
	int rc;

	if (!t || !member || !out)
		return rbi_fail(RBI_INVAL, "no target, member or result");
	if ((rc = rbi_vm_get(t, &vm)))
		return rc;
	if (rbi_vm_heap_p(vm, value) && (rc = rbi_vm_obj_flags(t, vm, value, &flags)))
		return rc;
	type = flags & RBI_T_MASK;
	if (member[0] == '@')
		return ivar_lookup(t, vm, value, "the value", member, out);
	if (!strcmp(member, "class")) {
		if (!flags)
			return rbi_fail(RBI_INVAL, ".class of nil, true, false, an Integer, a "
					"Float or a Symbol: p shows it with the value");
		if ((rc = rbi_read_u64(t, value + RBI_RBASIC_KLASS, out)))
			return rc;
		if (!rbi_vm_class_real(t, vm, *out, out))
			return rbi_fail(RBI_CORRUPT, "the class of 0x%" PRIx64 " cannot be "
					"read", value);
		return RBI_OK;
	}
	if ((!strcmp(member, "length") || !strcmp(member, "size")) && type == RBI_T_ARRAY) {
		if ((rc = rbi_vm_array(t, vm, value, &len, &elems)))
			return rc;
		*out = FIXNUM(len);
		return RBI_OK;
	}
	if (!strcmp(member, "bytesize") && type == RBI_T_STRING) {
		if ((rc = rbi_vm_string_full(t, vm, value, &byte, 1, NULL, &full)))
			return rc;
		*out = FIXNUM(full);
		return RBI_OK;
	}
	return rbi_fail(RBI_INVAL, "no member \"%s\" here: rbi reads .class, .@ivar, an "
			"Array's .length and .size, a String's .bytesize", member);
}
