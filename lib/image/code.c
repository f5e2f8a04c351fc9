/* code.c: what small functions of the target's machine code refer to.
 *
 * Stripped Rubies (3.3+) hide ruby_current_vm_ptr and friends, but tiny
 * exported functions such as rb_sym_immortal_count or rb_gc_count load
 * them with RIP-relative instructions.  We decode those functions from
 * target memory with Zydis (a real x86-64 decoder: prefixes, REX, VEX,
 * operand sizes are its business, not ours; unlike capstone it has no
 * relocated tables, which cost every command 0.65 ms of loading) and
 * report each RIP-relative operand and each direct call.  The bytes are
 * untrusted: we read at most CODE_BYTES_MAX of them and decode at most
 * CODE_INSNS_MAX instructions. */
#include <Zydis/Zydis.h>
#include <inttypes.h>
#include <string.h>

#include "internal.h"

#define CODE_INSNS_MAX 1024u
#define CODE_BYTES_MAX 8192u
#define X86_INSN_MAX   15u      /* longest x86 instruction */

/* One decoded instruction, at ADDRESS, with its visible operands. */
struct insn {
	uint64_t address;
	ZydisDecodedInstruction d;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
};

typedef int (*code_visit_fn)(struct rbi_target *t, const struct insn *insn, void *arg);

/* Instructions after which the function does not fall through (far
   returns and jumps included: Zydis names them as the near ones). */
static bool code_ends(const struct insn *insn)
{
	switch (insn->d.mnemonic) {
	case ZYDIS_MNEMONIC_RET: case ZYDIS_MNEMONIC_JMP:
	case ZYDIS_MNEMONIC_UD1: case ZYDIS_MNEMONIC_UD2:
	case ZYDIS_MNEMONIC_HLT: case ZYDIS_MNEMONIC_INT3:
		return true;
	default:
		return false;
	}
}

/* The one visible operand of INSN if it has exactly one of type TYPE. */
static const ZydisDecodedOperand *sole_operand(const struct insn *insn, ZydisOperandType type)
{
	return insn->d.operand_count_visible == 1 && insn->ops[0].type == type
	       ? &insn->ops[0] : NULL;
}

/* Is OP a memory operand [rip + disp] (no index register)? */
static bool rip_relative(const ZydisDecodedOperand *op)
{
	return op && op->type == ZYDIS_OPERAND_TYPE_MEMORY &&
	       op->mem.base == ZYDIS_REGISTER_RIP && op->mem.index == ZYDIS_REGISTER_NONE;
}

/* The address OP of INSN refers to (a RIP-relative operand, a relative
   branch target). */
static uint64_t operand_address(const struct insn *insn, const ZydisDecodedOperand *op)
{
	ZyanU64 addr = 0;

	if (!ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&insn->d, op, insn->address, &addr)))
		return 0;
	return addr;
}

/* Decode from FUNC until MAX_INSNS instructions, the end of the readable
   bytes, a byte sequence that is no instruction, or an instruction after
   which control does not fall through (visited too). */
static int code_walk(struct rbi_target *t, uint64_t func, size_t max_insns,
		     code_visit_fn visit, void *arg)
{
	uint8_t bytes[CODE_BYTES_MAX];
	size_t len, got = 0, off = 0;
	ZydisDecoder dec;
	struct insn insn;
	int rc;

	if (max_insns > CODE_INSNS_MAX)
		max_insns = CODE_INSNS_MAX;
	if (max_insns == 0)
		return RBI_OK;
	len = max_insns * X86_INSN_MAX;
	if (len > sizeof(bytes))
		len = sizeof(bytes);
	/* A short function may end just before an unmapped page: a prefix
	   is enough. */
	rc = rbi_target_read_fn(t, func, bytes, len, &got);
	if (rc != RBI_OK && rc != RBI_PARTIAL && rc != RBI_UNMAPPED)
		return rc;      /* the backend said why: the process exited... */
	if (rc == RBI_UNMAPPED || got == 0)
		return rbi_fail(RBI_UNMAPPED, "cannot read code at 0x%" PRIx64, func);
	if (!ZYAN_SUCCESS(ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64,
					   ZYDIS_STACK_WIDTH_64)))
		return rbi_fail(RBI_UNSUPPORTED, "Zydis: cannot make an x86-64 decoder");
	rc = RBI_OK;
	for (size_t n = 0; n < max_insns && off < got; n++) {
		if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, bytes + off, got - off,
							 &insn.d, insn.ops)))
			break;
		insn.address = func + off;
		off += insn.d.length;
		if ((rc = visit(t, &insn, arg)) != RBI_OK || code_ends(&insn))
			break;
	}
	return rc;
}

/* ---- RIP-relative operands ---------------------------------------------- */

struct rip_refs_arg {
	struct rbi_rip_ref *out;
	size_t max, n;
};

static int rip_refs_visit(struct rbi_target *t, const struct insn *insn, void *arg)
{
	struct rip_refs_arg *a = arg;

	(void)t;
	for (uint8_t i = 0; i < insn->d.operand_count_visible; i++) {
		const ZydisDecodedOperand *op = &insn->ops[i];

		if (!rip_relative(op))
			continue;
		if (a->n < a->max)
			a->out[a->n++] = (struct rbi_rip_ref){
				.insn = insn->address,
				.target = operand_address(insn, op),
				.load = insn->d.mnemonic != ZYDIS_MNEMONIC_LEA,
			};
	}
	return RBI_OK;
}

int rbi_code_rip_refs(struct rbi_target *t, uint64_t func, size_t max_insns,
		      struct rbi_rip_ref *out, size_t max, size_t *n)
{
	struct rip_refs_arg a = { .out = out, .max = out ? max : 0 };
	int rc;

	*n = 0;
	rc = code_walk(t, func, max_insns, rip_refs_visit, &a);
	*n = a.n;
	return rc;
}

/* ---- Direct calls ------------------------------------------------------- */

/* If the visited code is a PLT entry (optionally endbr64, then
   `jmp *GOT(%rip)`, bnd-prefixed or not), where its GOT slot points. */
static int plt_resolve_visit(struct rbi_target *t, const struct insn *insn, void *arg)
{
	uint64_t *dest = arg;
	const ZydisDecodedOperand *op = sole_operand(insn, ZYDIS_OPERAND_TYPE_MEMORY);

	if (insn->d.mnemonic == ZYDIS_MNEMONIC_ENDBR64 || insn->d.mnemonic == ZYDIS_MNEMONIC_NOP)
		return RBI_OK;
	if (insn->d.mnemonic == ZYDIS_MNEMONIC_JMP && rip_relative(op)) {
		uint64_t slot = operand_address(insn, op);
		uint64_t v = 0;
		size_t got = 0;

		if (rbi_target_read_fn(t, slot, &v, sizeof(v), &got) == RBI_OK && v)
			*dest = v;
	}
	return RBI_ITER_END;    /* anything else: not a PLT entry we know */
}

struct calls_arg {
	struct rbi_call_ref *out;
	size_t max, n;
};

static int calls_visit(struct rbi_target *t, const struct insn *insn, void *arg)
{
	struct calls_arg *a = arg;
	const ZydisDecodedOperand *op = sole_operand(insn, ZYDIS_OPERAND_TYPE_IMMEDIATE);
	bool tail = insn->d.mnemonic == ZYDIS_MNEMONIC_JMP;

	if ((insn->d.mnemonic != ZYDIS_MNEMONIC_CALL && !tail) || !op || !op->imm.is_relative)
		return RBI_OK;
	uint64_t target = operand_address(insn, op);
	uint64_t resolved = target;

	/* Up to 3 instructions: [endbr64] [nop] jmp *slot(%rip). */
	code_walk(t, target, 3, plt_resolve_visit, &resolved);
	if (a->n < a->max)
		a->out[a->n++] = (struct rbi_call_ref){
			.insn = insn->address,
			.target = target,
			.resolved = resolved,
			.tail = tail,
		};
	return RBI_OK;
}

int rbi_code_calls(struct rbi_target *t, uint64_t func, size_t max_insns,
		   struct rbi_call_ref *out, size_t max, size_t *n)
{
	struct calls_arg a = { .out = out, .max = out ? max : 0 };
	int rc;

	*n = 0;
	rc = code_walk(t, func, max_insns, calls_visit, &a);
	*n = a.n;
	return rc;
}

/* ---- Return addresses ---------------------------------------------------- */

bool rbi_code_call_ends_at(struct rbi_target *t, uint64_t ret)
{
	uint8_t bytes[X86_INSN_MAX];
	ZydisDecoder dec;
	ZydisDecodedInstruction d;
	size_t got = 0;
	int rc;

	if (ret < sizeof(bytes))
		return false;
	rc = rbi_target_read_fn(t, ret - sizeof(bytes), bytes, sizeof(bytes), &got);
	if ((rc != RBI_OK && rc != RBI_PARTIAL) || got != sizeof(bytes) ||
	    !ZYAN_SUCCESS(ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64,
					   ZYDIS_STACK_WIDTH_64)))
		return false;
	/* x86 does not decode backwards: try each length a call can have
	   (2: call *%rax; 5: call rel32; up to 7 with a SIB byte and disp32,
	   more with prefixes) and ask for exactly one call of that length. */
	for (size_t len = 2; len <= sizeof(bytes); len++) {
		const uint8_t *at = bytes + sizeof(bytes) - len;

		if (ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&dec, NULL, at, len, &d)) &&
		    d.length == len && d.mnemonic == ZYDIS_MNEMONIC_CALL)
			return true;
	}
	return false;
}
