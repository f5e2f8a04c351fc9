/* constant.c: a constant path's value, as Ruby resolves "Foo::BAR" in a
 * frame (vm_insnhelper.c vm_get_ev_const, variable.c rb_const_get_0 /
 * rb_const_lookup).  The first name as the frame's code reads it: in the
 * own constants of each class or module of its lexical scope (cref.c),
 * innermost first, the top level's left out; then in the ancestors of the
 * innermost (of self's class where there is none), and Object's.  A path
 * from "::" starts at Object.  Each later name in the constant table
 * (RCLASS_CONST_TBL: the classext's const_tbl, an rb_id_table of
 * rb_const_entry_t) of the class or module before it, or of its
 * ancestors, Object's own excluded as Ruby excludes them ("String::Array"
 * is no constant).  An autoload not yet loaded (the entry's value is
 * Qundef) is said so, never loaded. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "vm/eval/eval.h"

#define CONST_NAME_MAX 256
/* Ancestors searched: superclasses and included modules. */
#define ANCESTORS_MAX 256
/* Lexical scopes searched: nesting deeper than this is a cycle. */
#define SCOPES_MAX 256
/* Names listed in a "no constant" message. */
#define NAMES_SHOWN 200

/* RCLASS_CONST_TBL(KLASS) into *TBL. */
static int const_table(struct rbi_target *t, const struct rbi_vm *vm, uint64_t klass,
		       uint64_t *tbl)
{
	uint64_t ext;
	int rc;

	if (vm->layout->classext_const_tbl == RBI_ABSENT)
		return rbi_fail(RBI_UNSUPPORTED, "this Ruby's layout has no constant tables");
	if ((rc = rbi_vm_classext(t, vm, klass, &ext)))
		return rc;
	return rbi_read_u64(t, ext + vm->layout->classext_const_tbl, tbl);
}

static bool class_or_module(struct rbi_target *t, const struct rbi_vm *vm, uint64_t v)
{
	uint64_t flags;

	return rbi_vm_heap_p(vm, v) && !rbi_vm_obj_flags(t, vm, v, &flags) &&
	       ((flags & RBI_T_MASK) == RBI_T_CLASS || (flags & RBI_T_MASK) == RBI_T_MODULE);
}

/* FN(TABLE, ARG) for the constant table of KLASS and of each of its
   ancestors, up to STOP (left out; 0: to the end), until FN returns
   non-zero, which is returned. */
typedef int (*table_fn)(struct rbi_target *t, const struct rbi_vm *vm, uint64_t table,
			void *arg);
static int ancestors_tables(struct rbi_target *t, const struct rbi_vm *vm, uint64_t klass,
			    uint64_t stop, table_fn fn, void *arg)
{
	uint64_t tbl, k = klass;
	int rc;

	for (int i = 0; i < ANCESTORS_MAX && k && k != stop; i++) {
		if ((rc = const_table(t, vm, k, &tbl)) || (rc = fn(t, vm, tbl, arg)))
			return rc;
		if (!rbi_vm_class_super(t, vm, k, &k))
			return rbi_fail(RBI_CORRUPT, "the ancestors of 0x%" PRIx64 " cannot be read",
					klass);
	}
	return 0;
}

/* FN(TABLE, ARG) for each constant table the first name of a path is
   looked up in by code whose lexical scope is CREF and whose self is SELF,
   in Ruby's order (vm_get_ev_const): each enclosing class or module
   body's own table, innermost first, the top level's (the last scope,
   Object) left to the next step; then the innermost's ancestors (self's
   class's where there is none), and Object's after a module's. */
static int scope_tables(struct rbi_target *t, struct rbi_vm *vm, uint64_t object,
			uint64_t cref, uint64_t self, table_fn fn, void *arg)
{
	struct rbi_cref root = { 0 }, c;
	uint64_t tbl, at = cref, klass = 0, flags;
	int rc;

	/* Scopes eval pushed are not the code's own. */
	for (int i = 0; i < SCOPES_MAX && rbi_vm_cref_read(t, vm, at, &root) &&
			root.pushed_by_eval; i++)
		at = root.next;
	c = root;
	for (int i = 0; i < SCOPES_MAX && c.next; i++) {
		uint64_t k = c.pushed_by_eval ? 0 : c.klass;

		if (!rbi_vm_cref_read(t, vm, c.next, &c))
			return rbi_fail(RBI_CORRUPT, "the lexical scope 0x%" PRIx64 " cannot be "
					"read", at);
		if (class_or_module(t, vm, k) &&
		    ((rc = const_table(t, vm, k, &tbl)) || (rc = fn(t, vm, tbl, arg))))
			return rc;
	}
	if (root.klass && class_or_module(t, vm, root.klass))
		klass = root.klass;
	else if (!rbi_vm_heap_p(vm, self) || rbi_read_u64(t, self + RBI_RBASIC_KLASS, &klass) ||
		 !class_or_module(t, vm, klass))
		klass = object;
	if ((rc = ancestors_tables(t, vm, klass, 0, fn, arg)))
		return rc;
	/* rb_const_get_0: a module's ancestors end before Object. */
	if (!rbi_vm_obj_flags(t, vm, klass, &flags) && (flags & RBI_T_MASK) == RBI_T_MODULE)
		return ancestors_tables(t, vm, object, 0, fn, arg);
	return 0;
}

/* Looking for a constant's entry in tables: the first table's names kept
   for a message. */
struct entry_find {
	const char *name;
	uint64_t entry;
	char names[NAMES_SHOWN];
	size_t names_cap;       /* 0 once the first table was read */
};

static int find_in_table(struct rbi_target *t, const struct rbi_vm *vm, uint64_t table,
			 void *arg)
{
	struct entry_find *f = arg;
	int rc = rbi_vm_id_table_find(t, vm, table, f->name, &f->entry,
				      f->names_cap ? f->names : NULL, f->names_cap);

	f->names_cap = 0;
	if (rc == RBI_ITER_END)
		return 0;
	return rc ? rc : 1;
}

/* The constant NAME of KLASS or its ancestors (Object's own left out but
   for Object itself) into *ENTRY (an rb_const_entry_t); PATH, the path up
   to it, for messages. */
static int const_entry(struct rbi_target *t, const struct rbi_vm *vm, uint64_t object,
		       uint64_t klass, const char *name, const char *path, uint64_t *entry)
{
	struct entry_find f = { .name = name, .names_cap = klass == object ? 0 : NAMES_SHOWN };
	int rc = ancestors_tables(t, vm, klass, klass == object ? 0 : object, find_in_table, &f);

	if (rc < 0)
		return rbi_fail_context(rc, "reading the constants of %s: ", path);
	if (rc) {
		*entry = f.entry;
		return RBI_OK;
	}
	if (klass == object)
		return rbi_fail(RBI_INVAL, "no constant %s", name);
	return rbi_fail(RBI_INVAL, "no constant %s::%s (%s%s)", path, name,
			f.names[0] ? "its own: " : "it has no constants of its own", f.names);
}

/* The first NAME of a path as the code of a frame reads it (its lexical
   scope CREF, its SELF) into *ENTRY. */
static int lexical_entry(struct rbi_target *t, struct rbi_vm *vm, uint64_t object,
			 uint64_t cref, uint64_t self, const char *name, uint64_t *entry)
{
	struct entry_find f = { .name = name };
	int rc = scope_tables(t, vm, object, cref, self, find_in_table, &f);

	if (rc < 0)
		return rbi_fail_context(rc, "reading the constants of the frame's scope: ");
	if (!rc)
		return rbi_fail(RBI_INVAL, "no constant %s", name);
	*entry = f.entry;
	return RBI_OK;
}

/* rb_cObject, checked. */
static int object_class(struct rbi_target *t, struct rbi_vm *vm, uint64_t *object)
{
	uint64_t addr, size;
	bool tls;

	if (rbi_image_symbol(vm->image, "rb_cObject", &addr, &size, &tls) || tls ||
	    rbi_read_u64(t, addr, object) || !class_or_module(t, vm, *object))
		return rbi_fail(RBI_NO_VM, "rb_cObject was not found: constants cannot be read");
	return RBI_OK;
}

struct names_walk {
	rbi_vm_id_table_fn fn;
	void *arg;
};

static int table_names(struct rbi_target *t, const struct rbi_vm *vm, uint64_t table,
		       void *arg)
{
	const struct names_walk *w = arg;

	return rbi_vm_id_table_foreach(t, vm, table, w->fn, w->arg);
}

int rbi_vm_constant_names(struct rbi_target *t, struct rbi_vm *vm, uint64_t cref,
			  uint64_t self, rbi_vm_id_table_fn fn, void *arg)
{
	struct names_walk w = { fn, arg };
	uint64_t object;
	int rc;

	if ((rc = object_class(t, vm, &object)))
		return rc;
	return scope_tables(t, vm, object, cref, self, table_names, &w);
}

int rbi_vm_constant(struct rbi_target *t, struct rbi_vm *vm, const char *path,
		    uint64_t cref, uint64_t self, uint64_t *value)
{
	char name[CONST_NAME_MAX], done[CONST_NAME_MAX] = "Object";
	const char *p = path, *end;
	uint64_t object, cur, entry = 0;
	bool lexical = cref != 0;
	int rc;

	if (vm->layout->const_entry_value == RBI_ABSENT)
		return rbi_fail(RBI_UNSUPPORTED, "this Ruby's layout has no constant entries");
	if ((rc = object_class(t, vm, &object)))
		return rc;
	if (p[0] == ':' && p[1] == ':') {
		p += 2;
		lexical = false;
	}
	cur = object;
	for (;;) {
		end = strstr(p, "::");
		if (!end)
			end = p + strlen(p);
		if (end == p || (size_t)(end - p) >= sizeof(name) || !(*p >= 'A' && *p <= 'Z'))
			return rbi_fail(RBI_INVAL, "\"%s\" is no constant path (Foo, Foo::BAR)",
					path);
		memcpy(name, p, (size_t)(end - p));
		name[end - p] = '\0';
		if (!class_or_module(t, vm, cur))
			return rbi_fail(RBI_INVAL, "%s is no class or module: %s::%s is no "
					"constant", done, done, name);
		rc = lexical ? lexical_entry(t, vm, object, cref, self, name, &entry) :
			       const_entry(t, vm, object, cur, name, done, &entry);
		if (rc || (rc = rbi_read_u64(t, entry + vm->layout->const_entry_value, &cur)))
			return rc;
		lexical = false;
		snprintf(done, sizeof(done), "%.*s", (int)(end - path), path);
		if (cur == vm->k.qundef)
			return rbi_fail(RBI_INVAL, "%s is to be autoloaded and is not loaded yet",
					done);
		if (!*end)
			break;
		p = end + 2;
	}
	*value = cur;
	return RBI_OK;
}
