/* x86_64.c: x86-64 Linux (<sys/user.h> user_regs_struct, the System V
 * psABI's DWARF register numbers, arch/x86/include/asm/sigframe.h). */
#include <elf.h>

#include "arch/arch.h"

extern const struct rbi_arch_code rbi_arch_x86_64_code;

/* user_regs_struct's word of each DWARF register 0-16: rax rdx rcx rbx
   rsi rdi rbp rsp r8-r15 rip. */
static const uint8_t dwarf_from_user[] = {
	10, 12, 11, 5, 13, 14, 4, 19, 9, 8, 7, 6, 3, 2, 1, 0, 16,
};

/* The DWARF number of each of uc_mcontext's first 16 gregs (<sys/ucontext.h>:
   REG_R8 ... REG_R15, REG_RDI, REG_RSI, REG_RBP, REG_RBX, REG_RDX, REG_RAX,
   REG_RCX, REG_RSP). */
static const uint8_t sigframe_greg_dwarf[] = {
	8, 9, 10, 11, 12, 13, 14, 15, 5, 4, 6, 3, 1, 0, 2, 7,
};

/* struct rt_sigframe: { pretcode; ucontext uc; siginfo info; } with
   ucontext { uc_flags; uc_link; stack_t uc_stack; sigcontext uc_mcontext;
   sigset_t uc_sigmask; } (8 + 8 + 24 + 256 + 8 bytes); uc_mcontext starts
   with the 16 gregs, then rip. */
static const struct rbi_arch_sigframe sigframe = {
	.uc_flags = 8,
	.uc_link = 16,
	.gregs = 48,
	.greg_dwarf = sigframe_greg_dwarf,
	.ngregs = sizeof(sigframe_greg_dwarf),
	.sp = 48 + 15 * 8,
	.pc = 48 + 16 * 8,
	.fpstate = 48 + 184,
	.info = 8 + 304,
	.at_trampoline = 8,     /* the handler's return popped pretcode */
	/* UC_FP_XSTATE | UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS */
	.uc_flags_kernel = 0x7,
};

const struct rbi_arch rbi_arch_x86_64 = {
	.machine = EM_X86_64,
	.name = "x86-64",
	.user_words = 27,
	.user_pc = 16,
	.user_sp = 19,
	.user_tp = 21,          /* fs_base: glibc's pthread_t */
	.dwarf_regs = sizeof(dwarf_from_user),
	.dwarf_sp = 7,
	.dwarf_gregs = 16,
	.dwarf_from_user = dwarf_from_user,
	.sigframe = &sigframe,
	.code = &rbi_arch_x86_64_code,
};
