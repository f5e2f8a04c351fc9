/* constant.c: a constant path's value, as Ruby resolves "Foo::BAR" from
 * the top level (variable.c rb_const_get_0 / rb_const_lookup): each name
 * in the constant table (RCLASS_CONST_TBL: the classext's const_tbl, an
 * rb_id_table of rb_const_entry_t) of the class or module before it, or
 * of its ancestors, Object's own excluded after the first name as Ruby
 * excludes them ("String::Array" is no constant).  The first name is
 * looked up in Object, not in the frame's lexical scope (cref): p reads
 * top-level paths.  An autoload not yet loaded (the entry's value is
 * Qundef) is said so, never loaded. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "vm/vm.h"

#define CONST_NAME_MAX 256
/* Ancestors searched: superclasses and included modules. */
#define ANCESTORS_MAX 256
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

/* The constant NAME of KLASS or its ancestors into *ENTRY (an
   rb_const_entry_t); PATH, the path up to it, for messages. */
static int const_entry(struct rbi_target *t, const struct rbi_vm *vm, uint64_t object,
		       uint64_t klass, const char *name, const char *path, uint64_t *entry)
{
	char names[NAMES_SHOWN];
	uint64_t tbl, k = klass;
	int rc;

	names[0] = '\0';
	for (int i = 0; i < ANCESTORS_MAX && k; i++) {
		if (i && k == object && klass != object)
			break;
		if ((rc = const_table(t, vm, k, &tbl)))
			return rbi_fail_context(rc, "reading the constants of %s: ", path);
		rc = rbi_vm_id_table_find(t, vm, tbl, name, entry, i ? NULL : names,
					  klass == object ? 0 : sizeof(names));
		if (rc != RBI_ITER_END)
			return rc ? rbi_fail_context(rc, "reading the constants of %s: ", path) : rc;
		if (!rbi_vm_class_super(t, vm, k, &k))
			return rbi_fail(RBI_CORRUPT, "the ancestors of %s cannot be read", path);
	}
	if (klass == object)
		return rbi_fail(RBI_INVAL, "no constant %s", name);
	return rbi_fail(RBI_INVAL, "no constant %s::%s (%s%s)", path, name,
			names[0] ? "its own: " : "it has no constants of its own", names);
}

int rbi_vm_constant(struct rbi_target *t, struct rbi_vm *vm, const char *path,
		    uint64_t *value)
{
	char name[CONST_NAME_MAX], done[CONST_NAME_MAX] = "Object";
	const char *p = path, *end;
	uint64_t object, addr, size, cur, entry;
	bool tls;
	int rc;

	if (vm->layout->const_entry_value == RBI_ABSENT)
		return rbi_fail(RBI_UNSUPPORTED, "this Ruby's layout has no constant entries");
	if (rbi_image_symbol(vm->image, "rb_cObject", &addr, &size, &tls) || tls ||
	    rbi_read_u64(t, addr, &object) || !class_or_module(t, vm, object))
		return rbi_fail(RBI_NO_VM, "rb_cObject was not found: constants cannot be read");
	if (p[0] == ':' && p[1] == ':')
		p += 2;
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
		if ((rc = const_entry(t, vm, object, cur, name, done, &entry)) ||
		    (rc = rbi_read_u64(t, entry + vm->layout->const_entry_value, &cur)))
			return rc;
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
