/* aarch64.c: AArch64 Linux, as far as rbinspect reads it today: a core's
 * threads' pc and stack pointer (struct user_pt_regs: x0-x30, sp, pc,
 * pstate).  The thread pointer (tpidr_el0) is in a note of its own
 * (NT_ARM_TLS), and unwinding and signal frames are not read yet (#35). */
#include <elf.h>

#include "arch/arch.h"

const struct rbi_arch rbi_arch_aarch64 = {
	.machine = EM_AARCH64,
	.name = "AArch64",
	.user_words = 34,
	.user_pc = 32,
	.user_sp = 31,
	.user_tp = RBI_ARCH_NONE,
};
