/* code.c: what small functions of the target's machine code refer to.
 *
 * Stripped Rubies (3.3+) hide ruby_current_vm_ptr and friends, but tiny
 * exported functions such as rb_sym_immortal_count or rb_gc_count load
 * them with RIP-relative instructions.  We decode those functions from
 * target memory with capstone (a real x86-64 decoder: prefixes, REX, VEX,
 * operand sizes are its business, not ours) and report each RIP-relative
 * operand and each direct call.  The bytes are untrusted: we read at most
 * CODE_BYTES_MAX of them and decode at most CODE_INSNS_MAX instructions. */
#include <capstone/capstone.h>
#include <inttypes.h>
#include <string.h>

#include "internal.h"

#define CODE_INSNS_MAX 1024u
#define CODE_BYTES_MAX 8192u
#define X86_INSN_MAX   15u      /* longest x86 instruction */

typedef int (*code_visit_fn)(struct rbi_target *t, csh cs, const cs_insn *insn,
			     void *arg);

/* Instructions after which the function does not fall through. */
static bool code_ends(const cs_insn *insn)
{
	switch (insn->id) {
	case X86_INS_RET: case X86_INS_RETF: case X86_INS_RETFQ:
	case X86_INS_JMP: case X86_INS_LJMP:
	case X86_INS_UD2: case X86_INS_UD2B: case X86_INS_HLT:
	case X86_INS_INT3:
		return true;
	default:
		return false;
	}
}

static int code_open(csh *cs)
{
	if (cs_open(CS_ARCH_X86, CS_MODE_64, cs) != CS_ERR_OK)
		return rbi_fail(RBI_NOMEM, "capstone: cannot open an x86-64 decoder");
	if (cs_option(*cs, CS_OPT_DETAIL, CS_OPT_ON) != CS_ERR_OK) {
		cs_close(cs);
		return rbi_fail(RBI_NOMEM, "capstone: cannot turn on details");
	}
	return RBI_OK;
}

/* Decode from FUNC until MAX_INSNS instructions, the end of the readable
   bytes, a byte sequence that is no instruction, or an instruction after
   which control does not fall through (visited too). */
static int code_walk(struct rbi_target *t, uint64_t func, size_t max_insns,
		     code_visit_fn visit, void *arg)
{
	uint8_t bytes[CODE_BYTES_MAX];
	size_t len, got = 0, ninsn = 0;
	const uint8_t *code = bytes;
	uint64_t pc = func;
	cs_insn *insn;
	csh cs;
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
	if ((rc = code_open(&cs)) != RBI_OK)
		return rc;
	insn = cs_malloc(cs);
	if (!insn) {
		cs_close(&cs);
		return rbi_fail(RBI_NOMEM, "out of memory");
	}
	len = got;
	rc = RBI_OK;
	while (ninsn < max_insns && cs_disasm_iter(cs, &code, &len, &pc, insn)) {
		ninsn++;
		if ((rc = visit(t, cs, insn, arg)) != RBI_OK)
			break;
		if (code_ends(insn))
			break;
	}
	cs_free(insn, 1);
	cs_close(&cs);
	return rc;
}

/* ---- RIP-relative operands ---------------------------------------------- */

struct rip_refs_arg {
	struct rbi_rip_ref *out;
	size_t max, n;
};

static int rip_refs_visit(struct rbi_target *t, csh cs, const cs_insn *insn,
			  void *arg)
{
	struct rip_refs_arg *a = arg;
	const cs_x86 *x = &insn->detail->x86;

	(void)t; (void)cs;
	for (uint8_t i = 0; i < x->op_count && i < RBI_ARRAY_SIZE(x->operands); i++) {
		const cs_x86_op *op = &x->operands[i];

		if (op->type != X86_OP_MEM || op->mem.base != X86_REG_RIP ||
		    op->mem.index != X86_REG_INVALID)
			continue;
		if (a->n < a->max)
			a->out[a->n++] = (struct rbi_rip_ref){
				.insn = insn->address,
				.target = insn->address + insn->size +
					  (uint64_t)(int64_t)op->mem.disp,
				.load = insn->id != X86_INS_LEA,
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
static int plt_resolve_visit(struct rbi_target *t, csh cs, const cs_insn *insn,
			     void *arg)
{
	uint64_t *dest = arg;
	const cs_x86 *x = &insn->detail->x86;

	(void)cs;
	if (insn->id == X86_INS_ENDBR64 || insn->id == X86_INS_NOP)
		return RBI_OK;
	if (insn->id == X86_INS_JMP && x->op_count == 1 &&
	    x->operands[0].type == X86_OP_MEM &&
	    x->operands[0].mem.base == X86_REG_RIP &&
	    x->operands[0].mem.index == X86_REG_INVALID) {
		uint64_t slot = insn->address + insn->size +
				(uint64_t)(int64_t)x->operands[0].mem.disp;
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

static int calls_visit(struct rbi_target *t, csh cs, const cs_insn *insn,
		       void *arg)
{
	struct calls_arg *a = arg;
	const cs_x86 *x = &insn->detail->x86;

	(void)cs;
	if ((insn->id != X86_INS_CALL && insn->id != X86_INS_JMP) ||
	    x->op_count != 1 || x->operands[0].type != X86_OP_IMM)
		return RBI_OK;
	uint64_t target = (uint64_t)x->operands[0].imm;
	uint64_t resolved = target;

	/* Up to 3 instructions: [endbr64] [nop] jmp *slot(%rip). */
	code_walk(t, target, 3, plt_resolve_visit, &resolved);
	if (a->n < a->max)
		a->out[a->n++] = (struct rbi_call_ref){
			.insn = insn->address,
			.target = target,
			.resolved = resolved,
			.tail = insn->id == X86_INS_JMP,
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
