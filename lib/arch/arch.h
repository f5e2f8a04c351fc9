/* arch.h: what rbinspect knows of the machines whose processes and cores
 * it reads, one file each (x86_64.c, aarch64.c; elfutils' ebl backends and
 * libunwind's tdep-<arch>/ in small).  Nothing outside lib/arch names a
 * machine's registers, its kernel's signal frame or how a core's
 * NT_PRSTATUS lays out the registers. */
#ifndef RBI_ARCH_ARCH_H
#define RBI_ARCH_ARCH_H

#include <stdbool.h>
#include <stdint.h>

#include "ruby-introspect.h"

#define RBI_ARCH_NONE 0xffffu
/* The most words of user registers any machine has. */
#define RBI_ARCH_USER_WORDS_MAX 64

/* The frame the kernel pushes for a signal handler (struct rt_sigframe),
   at offsets from its start, where the handler's return address is. */
struct rbi_arch_sigframe {
	uint32_t uc_flags, uc_link;     /* the ucontext's */
	uint32_t gregs;                 /* the interrupted general registers */
	const uint8_t *greg_dwarf;      /* DWARF number of each, in the frame's
					   order (ngregs of them) */
	unsigned ngregs;
	uint32_t sp, pc;                /* the interrupted stack pointer and pc */
	uint32_t fpstate;               /* the pointer to the saved FPU state */
	uint32_t info;                  /* the siginfo */
	uint32_t at_trampoline;         /* where the stack pointer is when the
					   handler has returned into the
					   signal trampoline */
	uint64_t uc_flags_kernel;       /* every flag the kernel may set */
};

/* One instruction, as far as rbinspect reads code: to find what a small
   function of a stripped Ruby loads (its pc-relative operands) and whom it
   calls, and whether a stack word is a return address. */
#define RBI_INSN_REFS_MAX 2
struct rbi_insn {
	uint64_t address;
	unsigned length;
	bool ends;                      /* control does not fall through */
	bool call, jump;
	bool pad;                       /* does nothing (nop, endbr64) */
	uint64_t branch;                /* a direct call's or jump's target */
	uint64_t branch_slot;           /* a jump through a pc-relative slot
					   (a PLT entry's): the slot */
	unsigned nrefs;
	struct {
		uint64_t target;        /* the pc-relative address */
		bool load;              /* accessed there (false: its address
					   taken) */
	} refs[RBI_INSN_REFS_MAX];
};

/* Reading a machine's code. */
struct rbi_arch_code {
	unsigned insn_max;              /* bytes of the longest instruction */
	/* The instruction at BYTES (LEN of them, read from ADDRESS) into
	   *OUT; false if they are none. */
	bool (*decode)(const uint8_t *bytes, size_t len, uint64_t address,
		       struct rbi_insn *out);
	/* Does a call instruction end at BYTES + LEN (LEN = insn_max)? */
	bool (*call_ends_at)(const uint8_t *bytes, size_t len);
};

struct rbi_arch {
	uint16_t machine;               /* ELF e_machine */
	const char *name;               /* "x86-64" */
	/* The kernel's user registers (NT_PRSTATUS's pr_reg, the regset
	   PTRACE_GETREGSET reads): words, and the word of the pc, the stack
	   pointer and the thread pointer (RBI_ARCH_NONE: not among them). */
	unsigned user_words, user_pc, user_sp, user_tp;
	/* DWARF's numbering, which the unwinder speaks: how many registers
	   regs_from_user() fills (0: none), the stack pointer's number, and
	   the general registers 0..dwarf_gregs-1 a frame resumed from a
	   stack scan or a signal frame takes all of. */
	unsigned dwarf_regs, dwarf_sp, dwarf_gregs;
	const uint8_t *dwarf_from_user; /* the user word of each DWARF register */
	const struct rbi_arch_sigframe *sigframe;       /* NULL: not read */
	const struct rbi_arch_code *code;               /* NULL: not read */
};

/* A spinning thread's hint to this CPU that it waits (pause, yield). */
static inline void rbi_arch_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

/* The machine with e_machine MACHINE, or NULL when rbinspect knows none. */
const struct rbi_arch *rbi_arch_of(unsigned machine);
/* The machine rbinspect runs on. */
const struct rbi_arch *rbi_arch_host(void);
/* "an x86-64 machine", or a name for any other e_machine. */
const char *rbi_arch_machine_name(unsigned machine, char *buf, size_t cap);

/* The registers in the kernel's user layout USER (A->user_words words)
   in DWARF's numbering. */
void rbi_arch_regs_from_user(const struct rbi_arch *a, const unsigned char *user,
			     struct rbi_registers *out);
/* The stack pointer among R (DWARF's numbering), if R holds it. */
bool rbi_arch_stack_pointer(const struct rbi_registers *r, uint64_t *sp);
/* Word WORD of USER, 0 for RBI_ARCH_NONE. */
uint64_t rbi_arch_user_word(const unsigned char *user, unsigned word);

#endif
