/* insn-addr.h: the VM's instruction address table (insn-addr.c). */
#ifndef RBI_VM_INSN_ADDR_H
#define RBI_VM_INSN_ADDR_H

#include "vm/vm/find.h"

/* The N (VM_INSTRUCTION_SIZE) code addresses of vm_exec_core's
   insns_address_table into ADDRS, instruction number I's at ADDRS[I]; *VIA
   says how the table was found (a static string).  RBI_UNSUPPORTED when it
   cannot be found, RBI_CORRUPT when what was found is not N labels of
   one function (two may be one: insn-addr.c). */
int rbi_insn_address_table(struct rbi_target *t, const struct rbi_vm *vm, uint32_t n,
			   uint64_t *addrs, const char **via);

#endif
