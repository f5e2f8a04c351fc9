/* insn-addr.c: the VM's instruction address table, which turns the words
 * of a translated iseq back into instruction numbers (iseq.c
 * rb_vm_insn_addr2insn, built by rb_vm_encoded_insn_data_table_init from
 * rb_vm_get_insns_address_table()): vm_exec_core's static local
 * insns_address_table (vmtc.inc), VM_INSTRUCTION_SIZE label addresses in
 * its code, plain instructions then traced ones, in .data.rel.ro.
 *
 * Found through the symbol table where the build keeps it (GCC's
 * insns_address_table.N, N words: the cheap way), else DWARF (the
 * variable's DW_OP_addr in vm.c's vm_exec_core, its array type's size
 * checked; reading DWARF costs a compressed build 0.2 s), else in a
 * stripped libruby by
 * a scan of .data.rel.ro for its shape: a run of exactly
 * VM_INSTRUCTION_SIZE code addresses that all lie in one function
 * (by the call frame information, which stripped libraries keep), taken
 * only when it is the one such run.  No other table of libruby is
 * made of that many labels of one function: a function pointer table
 * points at many functions, a switch's jump table (relative offsets in
 * .rodata) is no code addresses at all.  Either way the table found must
 * pass that shape test; if not, the table is unknown and with it every
 * translated iseq's operands.  RBI_INSN_TABLE=symtab, dwarf or scan in
 * the environment takes that way only (tests/integration/heap-dump.sh
 * checks that each finds the same table where all can run). */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "vm/vm/insn-addr.h"

/* Bounds: DIEs looked at in vm.c, and .data.rel.ro bytes scanned. */
#define DIES_MAX 2000000u
#define RELRO_MAX (16u << 20)
#define CHUNK 65536u

struct die_walk {
	uint64_t addr;
	uint64_t size;
	unsigned dies;
};

/* DIE's DW_OP_addr location, if that is all it is. */
static bool die_addr(Dwarf_Die *die, uint64_t *addr)
{
	Dwarf_Attribute at;
	Dwarf_Op *ops;
	size_t nops;

	if (!dwarf_attr(die, DW_AT_location, &at) ||
	    dwarf_getlocation(&at, &ops, &nops) != 0 || nops != 1 || ops[0].atom != DW_OP_addr)
		return false;
	*addr = ops[0].number;
	return true;
}

/* Is some DIE under DIE (through lexical blocks) a TAG named NAME that
   MATCH takes?  Bounded by W's count of DIEs and a depth. */
static bool find_die(Dwarf_Die *die, int tag, const char *name,
		     bool (*match)(Dwarf_Die *, struct die_walk *), struct die_walk *w, int depth)
{
	Dwarf_Die child;

	if (depth > 16 || dwarf_child(die, &child) != 0)
		return false;
	do {
		const char *n;
		int t = dwarf_tag(&child);

		if (++w->dies > DIES_MAX)
			return false;
		if (t == tag && (n = dwarf_diename(&child)) && !strcmp(n, name) && match(&child, w))
			return true;
		if (t == DW_TAG_lexical_block && find_die(&child, tag, name, match, w, depth + 1))
			return true;
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

/* VAR, the table, if it has an address: it and its type's size into W. */
static bool table_var(Dwarf_Die *var, struct die_walk *w)
{
	Dwarf_Attribute at;
	Dwarf_Die type;
	Dwarf_Word size;

	if (!die_addr(var, &w->addr))
		return false;
	w->size = 0;
	if (dwarf_attr_integrate(var, DW_AT_type, &at) && dwarf_formref_die(&at, &type) &&
	    dwarf_aggregate_size(&type, &size) == 0)
		w->size = size;
	return true;
}

/* A vm_exec_core (its abstract instance, or an out-of-line one) holding
   the table. */
static bool exec_core(Dwarf_Die *fn, struct die_walk *w)
{
	return find_die(fn, DW_TAG_variable, "insns_address_table", table_var, w, 0);
}

/* The table under vm.c's CU. */
static bool find_in_cu(Dwarf_Die *cu, struct die_walk *w)
{
	return find_die(cu, DW_TAG_subprogram, "vm_exec_core", exec_core, w, 0);
}

static bool is_vm_c(Dwarf_Die *cu)
{
	const char *name = dwarf_diename(cu);
	size_t len = name ? strlen(name) : 0;

	return len >= 4 && !strcmp(name + len - 4, "vm.c") && (len == 4 || name[len - 5] == '/');
}

/* Through DWARF: the table's address, if vm.c's DWARF says it and that
   it is N words.  vm.c's CU is the one of rb_vm_exec's code (found by
   address, not by reading every CU), else looked for by name. */
static bool from_dwarf(const struct rbi_image *img, uint32_t n, uint64_t *addr)
{
	Dwarf_Addr bias;
	Dwarf *dw = rbi_image_dwarf(img, &bias);
	Dwarf_Off off = 0, next;
	Dwarf_Die cu;
	struct die_walk w = { 0 };
	uint64_t fn;
	size_t hsize;
	bool found = false;

	if (!dw)
		return false;
	if (!rbi_image_symbol(img, "rb_vm_exec", &fn, NULL, NULL) &&
	    dwarf_addrdie(dw, fn - bias, &cu) && is_vm_c(&cu))
		found = find_in_cu(&cu, &w);
	while (!found && dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		if (dwarf_offdie(dw, off + hsize, &cu) && is_vm_c(&cu))
			found = find_in_cu(&cu, &w);
		off = next;
	}
	if (!found)
		return false;
	*addr = w.addr + bias;
	return w.size == 8ull * n;
}

/* Through the symbol table: the static local's own symbol, which GCC
   names insns_address_table.N (.symtab, kept by unstripped builds), N
   words; false unless exactly one. */
static bool from_symtab(const struct rbi_image *img, uint32_t n, uint64_t *addr)
{
	static const char name[] = "insns_address_table";
	int nsyms = img->mod ? dwfl_module_getsymtab(img->mod) : -1, found = 0;

	for (int i = 0; i < nsyms; i++) {
		GElf_Sym sym;
		GElf_Addr a;
		GElf_Word shndx;
		const char *s = dwfl_module_getsym_info(img->mod, i, &sym, &a, &shndx, NULL, NULL);
		size_t k = sizeof(name) - 1;

		if (!s || strncmp(s, name, k) || GELF_ST_TYPE(sym.st_info) != STT_OBJECT ||
		    sym.st_size != 8ull * n || shndx == SHN_UNDEF)
			continue;
		if (s[k] == '.')
			for (k++; s[k] >= '0' && s[k] <= '9'; k++)
				;
		if (s[k] == '\0') {
			*addr = a;
			found++;
		}
	}
	return found == 1;
}

/* The shape test: N code addresses in IMG, all in one function.  Not
   all distinct: GCC may give two traced instructions one label (3.1.2's
   trace_opt_not and trace_opt_regexpmatch2 share their code). */
static bool table_shape(struct rbi_image *img, const uint64_t *v, uint32_t n)
{
	uint64_t fn0, fn;

	if (!n || rbi_image_function_start(img, v[0], &fn0) != RBI_OK)
		return false;
	for (uint32_t i = 0; i < n; i++)
		if (!(v[i] > fn0 && v[i] < img->end &&
		      rbi_image_function_start(img, v[i], &fn) == RBI_OK && fn == fn0))
			return false;
	return true;
}

/* IMG's .data.rel.ro: its runtime address and size; false if none. */
static bool relro_section(const struct rbi_image *img, uint64_t *addr, uint64_t *size)
{
	GElf_Addr bias;
	Elf *elf = img->mod ? dwfl_module_getelf(img->mod, &bias) : NULL;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0)
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (gelf_getshdr(scn, &sh) && (name = elf_strptr(elf, shstrndx, sh.sh_name)) &&
		    !strcmp(name, ".data.rel.ro") && sh.sh_type == SHT_PROGBITS) {
			*addr = sh.sh_addr + bias;
			*size = sh.sh_size;
			return true;
		}
	}
	return false;
}

/* The scan of .data.rel.ro: the one run of exactly N words that are code
   addresses of one function.  RBI_ITER_END if there is not exactly one. */
static int from_scan(struct rbi_target *t, struct rbi_image *img, uint32_t n, uint64_t *at)
{
	uint64_t start, size, run_at = 0, run_fn = 0, run_len = 0, found = 0, nfound = 0;
	uint64_t *buf;
	int rc = RBI_OK;

	if (!relro_section(img, &start, &size) || size > RELRO_MAX || start % 8)
		return RBI_ITER_END;
	if (!(buf = malloc(CHUNK)))
		return rbi_fail(RBI_NOMEM, "out of memory");
	for (uint64_t off = 0; off < size && rc == RBI_OK; off += CHUNK) {
		uint64_t len = size - off < CHUNK ? (size - off) & ~7ull : CHUNK;

		if ((rc = rbi_read(t, start + off, buf, len)))
			break;
		for (uint64_t i = 0; i < len / 8; i++) {
			uint64_t w = buf[i], fn = 0;
			bool code = w >= img->start && w < img->end &&
				    rbi_image_function_start(img, w, &fn) == RBI_OK && fn != w;

			if (code && run_len && fn == run_fn) {
				run_len++;
				continue;
			}
			if (run_len == n) {
				found = run_at;
				nfound++;
			}
			run_len = code;
			run_fn = fn;
			run_at = start + off + 8 * i;
		}
	}
	if (run_len == n) {
		found = run_at;
		nfound++;
	}
	free(buf);
	if (rc)
		return rbi_fail_context(rc, "scanning .data.rel.ro for the instruction "
					"address table: ");
	if (nfound != 1)
		return RBI_ITER_END;
	*at = found;
	return RBI_OK;
}

int rbi_insn_address_table(struct rbi_target *t, const struct rbi_vm *vm, uint32_t n,
			   uint64_t *addrs, const char **via)
{
	struct rbi_image *img = (struct rbi_image *)vm->image;
	uint64_t at = 0;
	int rc = RBI_ITER_END;

	/* RBI_INSN_TABLE=symtab, dwarf or scan: that way only (for the tests:
	   each must find the same table). */
	const char *only = getenv("RBI_INSN_TABLE");

	if (only && !*only)
		only = NULL;

	if ((!only || !strcmp(only, "symtab")) && from_symtab(img, n, &at)) {
		*via = "the symbol table (insns_address_table of vm_exec_core)";
	} else if ((!only || !strcmp(only, "dwarf")) && from_dwarf(img, n, &at)) {
		*via = "DWARF (insns_address_table of vm_exec_core)";
	} else if ((!only || !strcmp(only, "scan")) &&
		   (rc = from_scan(t, img, n, &at)) == RBI_OK) {
		*via = "the scan of .data.rel.ro";
	} else {
		return rc == RBI_ITER_END || rc == RBI_OK ?
		       rbi_fail(RBI_UNSUPPORTED, "the instruction address table (%u "
				"entries) was not found", n) : rc;
	}
	if ((rc = rbi_read(t, at, addrs, 8ull * n)))
		return rbi_fail_context(rc, "reading the instruction address table: ");
	if (!table_shape(img, addrs, n))
		return rbi_fail(RBI_CORRUPT, "the instruction address table at 0x%" PRIx64
				" (from %s) is not %u labels of one function",
				at, *via, n);
	return RBI_OK;
}
