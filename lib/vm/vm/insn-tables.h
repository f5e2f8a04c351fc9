/* insn-tables.h: the YARV instruction tables of the Rubies whose GC finds
 * an iseq's VALUE operands by decoding its instructions (2.7 to 3.2),
 * generated from each release's own insns_info.inc by
 * tools/insn-tables.py into insn-tables.c. */
#ifndef RBI_VM_INSN_TABLES_H
#define RBI_VM_INSN_TABLES_H

#include <stddef.h>
#include <stdint.h>

/* Operand types, one letter each (Ruby's TS_ names):
 *   'V' VALUE   'S' ISEQ   'H' CDHASH  'K' IC      'A' IVC     'T' ISE
 *   'R' ICVARC  'C' CALLDATA  'I' ID  'O' OFFSET  'L' LINDEX  'N' NUM
 *   'F' FUNCPTR  'B' BUILTIN  'G' GENTRY  '.' VARIABLE */
struct rbi_insn {
	uint8_t len;            /* words: the instruction and its operands */
	const char *ops;        /* len - 1 letters */
	const char *raw;        /* the same in Ruby's letters (TS_* values) */
};

struct rbi_insn_table {
	int major, minor, teeny;
	uint32_t n;             /* VM_INSTRUCTION_SIZE: plain, then traced */
	const struct rbi_insn *insns;
};

extern const struct rbi_insn_table rbi_insn_tables[];
extern const size_t rbi_insn_tables_n;

#endif
