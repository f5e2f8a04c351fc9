/* code.c: what small functions of the target's machine code refer to.
 *
 * Stripped Rubies (3.3+) hide ruby_current_vm_ptr and friends, but tiny
 * exported functions such as rb_sym_immortal_count or rb_gc_count load
 * them with pc-relative instructions.  We decode those functions from
 * target memory with this machine's reader (lib/arch)
 * and report each pc-relative operand and each direct call.  The bytes are
 * untrusted: we read at most CODE_BYTES_MAX of them and decode at most
 * CODE_INSNS_MAX instructions. */
#include <inttypes.h>
#include <string.h>

#include "arch/arch.h"
#include "internal.h"

#define CODE_INSNS_MAX 1024u
#define CODE_BYTES_MAX 8192u

typedef int (*code_visit_fn)(struct rbi_target *t, const struct rbi_insn *insn, void *arg);

/* This machine's code reader, or NULL after saying there is none. */
static const struct rbi_arch_code *reader(void)
{
	const struct rbi_arch *a = rbi_arch_host();

	if (!a->code)
		rbi_fail(RBI_UNSUPPORTED, "machine code of %s is not read", a->name);
	return a->code;
}

/* Decode from FUNC until MAX_INSNS instructions, the end of the readable
   bytes, a byte sequence that is no instruction, or an instruction after
   which control does not fall through (visited too). */
static int code_walk(struct rbi_target *t, uint64_t func, size_t max_insns,
		     code_visit_fn visit, void *arg)
{
	const struct rbi_arch_code *code = reader();
	uint8_t bytes[CODE_BYTES_MAX];
	size_t len, got = 0, off = 0;
	struct rbi_insn insn;
	int rc;

	if (!code)
		return RBI_UNSUPPORTED;
	if (max_insns > CODE_INSNS_MAX)
		max_insns = CODE_INSNS_MAX;
	if (max_insns == 0)
		return RBI_OK;
	len = max_insns * code->insn_max;
	if (len > sizeof(bytes))
		len = sizeof(bytes);
	/* A short function may end just before an unmapped page: a prefix
	   is enough. */
	rc = rbi_target_read_fn(t, func, bytes, len, &got);
	if (rc != RBI_OK && rc != RBI_PARTIAL && rc != RBI_UNMAPPED)
		return rc;      /* the backend said why: the process exited... */
	if (rc == RBI_UNMAPPED || got == 0)
		return rbi_fail(RBI_UNMAPPED, "cannot read code at 0x%" PRIx64, func);
	rc = RBI_OK;
	for (size_t n = 0; n < max_insns && off < got; n++) {
		if (!code->decode(bytes + off, got - off, func + off, &insn) || !insn.length)
			break;
		off += insn.length;
		if ((rc = visit(t, &insn, arg)) != RBI_OK || insn.ends)
			break;
	}
	return rc;
}

/* ---- pc-relative operands ------------------------------------------------ */

struct rip_refs_arg {
	struct rbi_rip_ref *out;
	size_t max, n;
};

static int rip_refs_visit(struct rbi_target *t, const struct rbi_insn *insn, void *arg)
{
	struct rip_refs_arg *a = arg;

	(void)t;
	for (unsigned i = 0; i < insn->nrefs; i++)
		if (a->n < a->max)
			a->out[a->n++] = (struct rbi_rip_ref){
				.insn = insn->address,
				.target = insn->refs[i].target,
				.load = insn->refs[i].load,
			};
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

/* If the visited code is a PLT entry (padding, then a jump through a
   pc-relative GOT slot), where its GOT slot points. */
static int plt_resolve_visit(struct rbi_target *t, const struct rbi_insn *insn, void *arg)
{
	uint64_t *dest = arg;

	if (insn->pad)
		return RBI_OK;
	if (insn->jump && insn->branch_slot) {
		uint64_t v = 0;
		size_t got = 0;

		if (rbi_target_read_fn(t, insn->branch_slot, &v, sizeof(v), &got) == RBI_OK && v)
			*dest = v;
	}
	return RBI_ITER_END;    /* anything else: not a PLT entry we know */
}

struct calls_arg {
	struct rbi_call_ref *out;
	size_t max, n;
};

static int calls_visit(struct rbi_target *t, const struct rbi_insn *insn, void *arg)
{
	struct calls_arg *a = arg;
	uint64_t resolved = insn->branch;

	if (!(insn->call || insn->jump) || !insn->branch)
		return RBI_OK;
	/* Up to 3 instructions: [endbr64] [nop] jmp *slot(%rip). */
	code_walk(t, insn->branch, 3, plt_resolve_visit, &resolved);
	if (a->n < a->max)
		a->out[a->n++] = (struct rbi_call_ref){
			.insn = insn->address,
			.target = insn->branch,
			.resolved = resolved,
			.tail = insn->jump,
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
	const struct rbi_arch_code *code = rbi_arch_host()->code;
	uint8_t bytes[64];
	size_t got = 0;
	int rc;

	if (!code || code->insn_max > sizeof(bytes) || ret < code->insn_max)
		return false;
	rc = rbi_target_read_fn(t, ret - code->insn_max, bytes, code->insn_max, &got);
	return (rc == RBI_OK || rc == RBI_PARTIAL) && got == code->insn_max &&
	       code->call_ends_at(bytes, code->insn_max);
}
