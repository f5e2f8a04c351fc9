/* symbol.c: ID to name through Ruby's global symbol table, read from
 * memory (ruby-internals.md §3.5; symbol.c get_id_serial_entry).
 *
 *   serial = id > tLAST_OP_ID ? id >> ID_SCOPE_SHIFT : id
 *   0 < serial <= symbols.last_id
 *   symbols.ids[serial / 512][(serial % 512) * 2 + ID_ENTRY_STR]
 *
 * The table is { uint32 last_id; ...; VALUE ids at +16; ... } in every
 * version 2.6-4.0; vm->info.symbols is its address (ruby.c finds it). */
#include <inttypes.h>
#include <string.h>

#include "vm/values/values.h"

#define ID_SCOPE_SHIFT 4        /* RUBY_ID_SCOPE_SHIFT, id.h */
#define ID_ENTRY_UNIT 512
#define ID_ENTRY_SIZE 2         /* { ID_ENTRY_STR, ID_ENTRY_SYM } */
#define ID_ENTRY_STR 0
#define ID_ENTRY_SYM 1
#define SYMBOLS_LAST_ID 0
#define SYMBOLS_IDS 16

int rbi_vm_serial_name(struct rbi_target *t, const struct rbi_vm *vm, uint64_t serial,
		       char *buf, size_t cap, uint64_t *cut)
{
	uint64_t ids, chunk, str, ignored = 0;
	uint32_t last_id;
	int rc;

	buf[0] = '\0';
	if (!vm->info.symbols)
		return rbi_fail(RBI_NO_VM, "Ruby's symbol table was not found: "
				"cannot name ID serial %" PRIu64, serial);
	if ((rc = rbi_read_u32(t, vm->info.symbols + SYMBOLS_LAST_ID, &last_id)))
		return rc;
	if (serial == 0 || serial > last_id)
		return rbi_fail(RBI_CORRUPT, "ID serial %" PRIu64 " is not in the symbol "
				"table (last %u)", serial, last_id);
	if ((rc = rbi_read_u64(t, vm->info.symbols + SYMBOLS_IDS, &ids)) ||
	    (rc = rbi_vm_array_at(t, vm, ids, serial / ID_ENTRY_UNIT, &chunk)) ||
	    (rc = rbi_vm_array_at(t, vm, chunk, (serial % ID_ENTRY_UNIT) *
				  ID_ENTRY_SIZE + ID_ENTRY_STR, &str)))
		return rbi_fail_context(rc, "naming ID serial %" PRIu64 ": ", serial);
	if (!rbi_vm_heap_p(vm, str))
		return rbi_fail(RBI_CORRUPT, "ID serial %" PRIu64 " has no name", serial);
	rc = rbi_vm_string_cut(t, vm, str, buf, cap, cut ? cut : &ignored);
	return rc ? rbi_fail_context(rc, "naming ID serial %" PRIu64 ": ", serial) : RBI_OK;
}

int rbi_vm_id_name(struct rbi_target *t, const struct rbi_vm *vm, uint64_t id,
		   char *buf, size_t cap, uint64_t *cut)
{
	return rbi_vm_serial_name(t, vm, id > vm->k.tlast_op_id ? id >> ID_SCOPE_SHIFT : id,
				  buf, cap, cut);
}

/* Serials scanned when looking an ID up by name: the IDs we look for are
   interned while Ruby boots, among the first few thousand. */
#define ID_SCAN_MAX 65536
#define NAME_MAX_ 64
/* A static Symbol is the immediate (id << RUBY_SPECIAL_SHIFT) | SYMBOL_FLAG. */
#define RUBY_SPECIAL_SHIFT 8
#define SYMBOL_FLAG 0x0c

int rbi_vm_symbol_name(struct rbi_target *t, const struct rbi_vm *vm, uint64_t sym,
		       char *buf, size_t cap)
{
	uint64_t flags, fstr;
	int rc;

	if ((sym & 0xff) == SYMBOL_FLAG)
		return rbi_vm_id_name(t, vm, sym >> RUBY_SPECIAL_SHIFT, buf, cap, NULL);
	if (vm->layout->rsymbol_fstr == RBI_ABSENT)
		return rbi_fail(RBI_UNSUPPORTED, "this Ruby's layout lacks RSymbol's fstr");
	if ((rc = rbi_vm_obj_flags(t, vm, sym, &flags)))
		return rc;
	if ((flags & RBI_T_MASK) != RBI_T_SYMBOL)
		return rbi_fail(RBI_CORRUPT, "0x%" PRIx64 " is no Symbol", sym);
	if ((rc = rbi_read_u64(t, sym + vm->layout->rsymbol_fstr, &fstr)))
		return rc;
	return rbi_vm_string(t, vm, fstr, buf, cap, NULL);
}

int rbi_vm_id_lookup(struct rbi_target *t, const struct rbi_vm *vm,
		     const char *name, uint64_t *id)
{
	uint64_t ids, nchunks, chunks, chunk = 0, len = 0, elems = 0;
	uint64_t entry[ID_ENTRY_SIZE];
	uint32_t last_id;
	char buf[NAME_MAX_];
	int rc;

	*id = 0;
	if (!vm->info.symbols)
		return rbi_fail(RBI_NO_VM, "Ruby's symbol table was not found");
	if ((rc = rbi_read_u32(t, vm->info.symbols + SYMBOLS_LAST_ID, &last_id)) ||
	    (rc = rbi_read_u64(t, vm->info.symbols + SYMBOLS_IDS, &ids)) ||
	    (rc = rbi_vm_array(t, vm, ids, &nchunks, &chunks)))
		return rc;
	for (uint64_t serial = 1; serial <= last_id && serial < ID_SCAN_MAX; serial++) {
		uint64_t k = serial / ID_ENTRY_UNIT, i = (serial % ID_ENTRY_UNIT) * ID_ENTRY_SIZE;

		if (k >= nchunks)
			break;
		if (serial == 1 || i == 0) {
			if ((rc = rbi_read_u64(t, chunks + 8 * k, &chunk)))
				return rc;
			len = 0;
			if (rbi_vm_heap_p(vm, chunk) &&
			    (rc = rbi_vm_array(t, vm, chunk, &len, &elems)))
				return rc;
		}
		if (i + ID_ENTRY_SIZE > len)
			continue;
		if ((rc = rbi_read(t, elems + 8 * i, entry, sizeof(entry))))
			return rc;
		if (!rbi_vm_heap_p(vm, entry[ID_ENTRY_STR]) ||
		    rbi_vm_string(t, vm, entry[ID_ENTRY_STR], buf, sizeof(buf), NULL) ||
		    strcmp(buf, name))
			continue;
		/* The ID itself (its scope bits) from the entry's static Symbol. */
		if ((entry[ID_ENTRY_SYM] & 0xff) != SYMBOL_FLAG)
			return rbi_fail(RBI_CORRUPT, "ID \"%s\" has no static Symbol", name);
		*id = entry[ID_ENTRY_SYM] >> RUBY_SPECIAL_SHIFT;
		return RBI_OK;
	}
	return rbi_fail(RBI_ITER_END, "no ID named \"%s\"", name);
}
