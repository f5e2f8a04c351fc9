/* arch.c: the machines rbinspect knows, by e_machine. */
#include <elf.h>
#include <stdio.h>
#include <string.h>

#include "arch/arch.h"
#include "internal.h"

extern const struct rbi_arch rbi_arch_x86_64, rbi_arch_aarch64;

static const struct rbi_arch *const known[] = { &rbi_arch_x86_64, &rbi_arch_aarch64 };

const struct rbi_arch *rbi_arch_of(unsigned machine)
{
	for (size_t i = 0; i < RBI_ARRAY_SIZE(known); i++)
		if (known[i]->machine == machine)
			return known[i];
	return NULL;
}

const struct rbi_arch *rbi_arch_host(void)
{
#if defined(__x86_64__)
	return &rbi_arch_x86_64;
#elif defined(__aarch64__)
	return &rbi_arch_aarch64;
#else
#error "rbinspect runs on x86-64 and AArch64 machines"
#endif
}

const char *rbi_arch_machine_name(unsigned machine, char *buf, size_t cap)
{
	switch (machine) {
	case EM_X86_64: return "an x86-64 machine";
	case EM_AARCH64: return "an AArch64 machine";
	case EM_386: return "an i386 machine";
	case EM_ARM: return "a 32-bit ARM machine";
	case EM_RISCV: return "a RISC-V machine";
	case EM_PPC64: return "a POWER machine";
	case EM_S390: return "an s390 machine";
	default:
		snprintf(buf, cap, "machine %u (e_machine)", machine);
		return buf;
	}
}

bool rbi_arch_stack_pointer(const struct rbi_registers *r, uint64_t *sp)
{
	const struct rbi_arch *a = rbi_arch_of(r->machine);

	if (!a || !a->dwarf_regs || r->count <= a->dwarf_sp)
		return false;
	*sp = r->reg[a->dwarf_sp];
	return true;
}

uint64_t rbi_arch_user_word(const unsigned char *user, unsigned word)
{
	return word == RBI_ARCH_NONE ? 0 : rbi_get_u64(user, (uint32_t)(word * 8));
}

void rbi_arch_regs_from_user(const struct rbi_arch *a, const unsigned char *user,
			     struct rbi_registers *out)
{
	memset(out, 0, sizeof(*out));
	out->machine = a->machine;
	out->count = (uint16_t)a->dwarf_regs;
	for (unsigned i = 0; i < a->dwarf_regs; i++)
		out->reg[i] = rbi_get_u64(user, (uint32_t)(a->dwarf_from_user[i] * 8));
}
