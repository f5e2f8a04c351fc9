/* x86_64-code.c: x86-64 machine code read with Zydis (a real decoder:
 * prefixes, REX, VEX and operand sizes are its business, not ours; unlike
 * capstone it has no relocated tables, which cost every command 0.65 ms of
 * loading), into the few facts lib/image/code.c walks functions by. */
#include <Zydis/Zydis.h>
#include <string.h>

#include "arch/arch.h"

static bool decoder(ZydisDecoder *dec)
{
	return ZYAN_SUCCESS(ZydisDecoderInit(dec, ZYDIS_MACHINE_MODE_LONG_64,
					     ZYDIS_STACK_WIDTH_64));
}

/* Is OP a memory operand [rip + disp] (no index register)? */
static bool rip_relative(const ZydisDecodedOperand *op)
{
	return op->type == ZYDIS_OPERAND_TYPE_MEMORY && op->mem.base == ZYDIS_REGISTER_RIP &&
	       op->mem.index == ZYDIS_REGISTER_NONE;
}

/* The address OP of D (at ADDRESS) refers to: a RIP-relative operand's, a
   relative branch's target; 0 if none. */
static uint64_t operand_address(const ZydisDecodedInstruction *d, const ZydisDecodedOperand *op,
				uint64_t address)
{
	ZyanU64 addr = 0;

	if (!ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(d, op, address, &addr)))
		return 0;
	return addr;
}

/* Instructions after which a function does not fall through (far returns
   and jumps included: Zydis names them as the near ones). */
static bool ends(ZydisMnemonic m)
{
	switch (m) {
	case ZYDIS_MNEMONIC_RET: case ZYDIS_MNEMONIC_JMP:
	case ZYDIS_MNEMONIC_UD1: case ZYDIS_MNEMONIC_UD2:
	case ZYDIS_MNEMONIC_HLT: case ZYDIS_MNEMONIC_INT3:
		return true;
	default:
		return false;
	}
}

static void branch(const ZydisDecodedInstruction *d, const ZydisDecodedOperand *ops,
		   struct rbi_insn *out)
{
	const ZydisDecodedOperand *op = &ops[0];

	if (d->operand_count_visible != 1)
		return;
	if (op->type == ZYDIS_OPERAND_TYPE_IMMEDIATE && op->imm.is_relative)
		out->branch = operand_address(d, op, out->address);
	else if (d->mnemonic == ZYDIS_MNEMONIC_JMP && rip_relative(op))
		out->branch_slot = operand_address(d, op, out->address);
}

static bool x86_64_decode(const uint8_t *bytes, size_t len, uint64_t address,
			  struct rbi_insn *out)
{
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	ZydisDecodedInstruction d;
	ZydisDecoder dec;

	memset(out, 0, sizeof(*out));
	if (!decoder(&dec) || !ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, bytes, len, &d, ops)))
		return false;
	out->address = address;
	out->length = d.length;
	out->ends = ends(d.mnemonic);
	out->call = d.mnemonic == ZYDIS_MNEMONIC_CALL;
	out->jump = d.mnemonic == ZYDIS_MNEMONIC_JMP;
	out->pad = d.mnemonic == ZYDIS_MNEMONIC_ENDBR64 || d.mnemonic == ZYDIS_MNEMONIC_NOP;
	if (out->call || out->jump)
		branch(&d, ops, out);
	for (uint8_t i = 0; i < d.operand_count_visible; i++) {
		if (!rip_relative(&ops[i]) || out->nrefs == RBI_INSN_REFS_MAX)
			continue;
		out->refs[out->nrefs].target = operand_address(&d, &ops[i], address);
		out->refs[out->nrefs++].load = d.mnemonic != ZYDIS_MNEMONIC_LEA;
	}
	return true;
}

/* x86 does not decode backwards: try each length a call can have (2:
   call *%rax; 5: call rel32; up to 7 with a SIB byte and disp32, more with
   prefixes) and ask for exactly one call of that length ending at
   BYTES + LEN. */
static bool x86_64_call_ends_at(const uint8_t *bytes, size_t len)
{
	ZydisDecodedInstruction d;
	ZydisDecoder dec;

	if (!decoder(&dec))
		return false;
	for (size_t n = 2; n <= len; n++) {
		const uint8_t *at = bytes + len - n;

		if (ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&dec, NULL, at, n, &d)) &&
		    d.length == n && d.mnemonic == ZYDIS_MNEMONIC_CALL)
			return true;
	}
	return false;
}

const struct rbi_arch_code rbi_arch_x86_64_code = {
	.insn_max = 15,
	.decode = x86_64_decode,
	.call_ends_at = x86_64_call_ends_at,
};
