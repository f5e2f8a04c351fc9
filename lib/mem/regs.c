/* regs.c: a thread's registers as the kernel lays them out (struct
 * user_regs_struct: in a core's NT_PRSTATUS, from PTRACE_GETREGS) into
 * DWARF's numbering, which the unwinder speaks. */
#include "internal.h"

/* user_regs_struct index of each DWARF register 0-16 of x86-64: rax rdx
   rcx rbx rsi rdi rbp rsp r8-r15 rip. */
static const uint8_t x86_64_from_user[RBI_X86_64_DWARF_REGS] = {
	10, 12, 11, 5, 13, 14, 4, 19, 9, 8, 7, 6, 3, 2, 1, 0, 16,
};

void rbi_regs_from_user_x86_64(const unsigned char *user, struct rbi_registers *out)
{
	memset(out, 0, sizeof(*out));
	out->machine = 62;      /* EM_X86_64 */
	out->count = RBI_X86_64_DWARF_REGS;
	for (size_t i = 0; i < RBI_X86_64_DWARF_REGS; i++)
		out->reg[i] = rbi_get_u64(user, (uint32_t)(x86_64_from_user[i] * 8));
}
