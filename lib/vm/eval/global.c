/* global.c: a global variable's value (variable.c): rb_global_tbl, an
 * rb_id_table of ID to struct rb_global_entry { var, id, ... }, whose var
 * (struct rb_global_variable) holds data and a getter.  A variable Ruby
 * code assigned has rb_gvar_val_getter (the value is data itself), one
 * bound to a C variable rb_gvar_var_getter (*data), one never assigned
 * rb_gvar_undef_getter (nil); any other getter computes the value ($~,
 * $0, $stdout...): a virtual variable, not read.
 *
 * rb_global_tbl is a static of variable.c: found by its name in .symtab,
 * else in the code of an exported function that reads it (its first
 * RIP-relative loads), each candidate checked by finding "$stdout" (io.c
 * defines it at boot) in the table it points to. */
#include <inttypes.h>
#include <string.h>

#include "vm/eval/eval.h"

#define ANCHOR_INSNS 48
#define ANCHOR_REFS 16

/* Exported functions of variable.c that read rb_global_tbl early. */
static const char *const anchors[] = {
	"rb_f_global_variables", "rb_gvar_defined", "rb_gv_get",
};

/* Whether the variable at VAR points to the global table. */
static bool global_table_at(struct rbi_target *t, const struct rbi_vm *vm, uint64_t var,
			    uint64_t *tbl)
{
	uint64_t entry;

	return !rbi_read_u64(t, var, tbl) && *tbl && !(*tbl & 7) &&
	       rbi_vm_id_table_find(t, vm, *tbl, "$stdout", &entry, NULL, 0) == RBI_OK;
}

int rbi_vm_global_table(struct rbi_target *t, const struct rbi_vm *vm, uint64_t *tbl)
{
	struct rbi_rip_ref refs[ANCHOR_REFS];
	uint64_t addr, size;
	size_t n;
	bool tls;

	if (!rbi_image_symbol(vm->image, "rb_global_tbl", &addr, &size, &tls) && !tls)
		return global_table_at(t, vm, addr, tbl) ? RBI_OK
		       : rbi_fail(RBI_CORRUPT, "rb_global_tbl holds no global table");
	for (size_t a = 0; a < sizeof(anchors) / sizeof(anchors[0]); a++) {
		n = 0;
		if (rbi_image_symbol(vm->image, anchors[a], &addr, &size, &tls) || tls ||
		    rbi_code_rip_refs(t, addr, ANCHOR_INSNS, refs, ANCHOR_REFS, &n))
			continue;
		for (size_t i = 0; i < n; i++)
			if (refs[i].load && global_table_at(t, vm, refs[i].target, tbl))
				return RBI_OK;
	}
	return rbi_fail(RBI_UNSUPPORTED, "rb_global_tbl was not found (no symbol, and not "
			"in the code of rb_f_global_variables): globals need this Ruby's "
			"symbols (its debug file in /usr/lib/debug, or debuginfod)");
}

/* Whether GETTER is the function NAME of Ruby's image. */
static bool getter_is(const struct rbi_vm *vm, uint64_t getter, const char *name)
{
	uint64_t addr, size;
	bool tls;

	return !rbi_image_symbol(vm->image, name, &addr, &size, &tls) && !tls &&
	       addr == getter;
}

int rbi_vm_global(struct rbi_target *t, struct rbi_vm *vm, const char *name,
		  uint64_t *value)
{
	const struct rbi_layout *l = vm->layout;
	uint64_t tbl, entry, var, data, getter;
	int rc;

	if (l->global_entry_var == RBI_ABSENT || l->global_var_data == RBI_ABSENT ||
	    l->global_var_getter == RBI_ABSENT)
		return rbi_fail(RBI_UNSUPPORTED, "this Ruby's layout has no global entries");
	if ((rc = rbi_vm_global_table(t, vm, &tbl)))
		return rc;
	rc = rbi_vm_id_table_find(t, vm, tbl, name, &entry, NULL, 0);
	if (rc == RBI_ITER_END)
		return rbi_fail(RBI_INVAL, "no global variable %s", name);
	if (rc || (rc = rbi_read_u64(t, entry + l->global_entry_var, &var)) ||
	    (rc = rbi_read_u64(t, var + l->global_var_data, &data)) ||
	    (rc = rbi_read_u64(t, var + l->global_var_getter, &getter)))
		return rbi_fail_context(rc, "reading %s: ", name);
	if (getter_is(vm, getter, "rb_gvar_val_getter")) {
		*value = data;
		return RBI_OK;
	}
	if (getter_is(vm, getter, "rb_gvar_undef_getter")) {
		*value = vm->k.qnil;
		return RBI_OK;
	}
	if (getter_is(vm, getter, "rb_gvar_var_getter")) {
		if (!data) {
			*value = vm->k.qnil;    /* as the getter answers */
			return RBI_OK;
		}
		return rbi_read_u64(t, data, value);
	}
	return rbi_fail(RBI_UNSUPPORTED, "%s is a virtual variable: a function of Ruby "
			"(at 0x%" PRIx64 ") computes its value when read", name, getter);
}
