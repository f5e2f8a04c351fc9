/* iseq.c: instruction sequences: where they come from (path, labels) and
 * which source line a pc is on (ruby-internals.md §4.1, §4.3).
 *
 * Lines: the pc of a frame points past the instruction being run, so the
 * instruction index is (pc - iseq_encoded) / 8 - 1 (vm_backtrace.c
 * calc_pos).  The index maps to an insns_info entry through the succinct
 * bit-vector (iseq.c succ_index_lookup; the default table since 2.6), or,
 * when a build kept them (VM_CHECK_MODE), a binary search of positions[]
 * (get_insn_info_binary_search). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "vm/stack/stack.h"

/* Bounds on iseq data; real ones are far smaller. */
#define ISEQ_SIZE_MAX (1u << 24)        /* instructions (VALUEs) */
#define INSNS_INFO_MAX (1u << 24)
/* Hops from a block to its method (nesting depth) and rescue/ensure
   chains: deeper is a cycle. */
#define ISEQ_CHAIN_MAX 4096
#define LABEL_DEPTH_MAX 8
/* Line-table entries looked back past one without a line (entry_line). */
#define LINELESS_BACK_MAX 16

/* succ_index_table (iseq.c): uint64_t imm_part[54 / 9], then blocks of
   { unsigned rank; uint64_t small_block_ranks; uint64_t bits[8]; }. */
#define IMMEDIATE_TABLE_SIZE 54
#define SUCC_PART 48
#define SUCC_BLOCK_SIZE 80
#define SUCC_BLOCK_RANK 0
#define SUCC_BLOCK_SMALL_RANKS 8
#define SUCC_BLOCK_BITS 16

int rbi_iseq_read(struct rbi_target *t, const struct rbi_vm *vm, uint64_t addr,
		  struct rbi_iseq *out)
{
	const struct rbi_layout *l = vm->layout;
	const uint32_t offs[] = {
		l->body_type, l->body_iseq_size, l->body_iseq_encoded,
		l->body_pathobj, l->body_base_label, l->body_label,
		l->body_first_lineno, l->body_insns_info_body,
		l->body_insns_info_positions, l->body_insns_info_size,
		l->body_succ_index_table, l->body_parent_iseq, l->body_local_iseq,
	};
	uint8_t b[512];
	uint64_t flags, body;
	uint32_t end = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	out->addr = addr;
	if (l->iseq_body == RBI_ABSENT)
		return rbi_fail(RBI_LAYOUT, "no iseq layout");
	for (size_t i = 0; i < RBI_ARRAY_SIZE(offs); i++) {
		if (offs[i] == RBI_ABSENT)
			return rbi_fail(RBI_LAYOUT, "no iseq body layout");
		if (offs[i] + 8 > end)
			end = offs[i] + 8;
	}
	/* builtin_attrs (3.3+) comes with the rest when it is near. */
	if (l->body_builtin_attrs != RBI_ABSENT && l->body_builtin_attrs + 4 <= sizeof(b) &&
	    l->body_builtin_attrs + 4 > end)
		end = l->body_builtin_attrs + 4;
	if (end > sizeof(b))
		return rbi_fail(RBI_LAYOUT, "iseq body layout too large (%u)", end);
	/* Read where it is (out->addr stays the frame's reference to it). */
	addr = rbi_vm_location(t, vm, addr);
	if ((rc = rbi_vm_obj_flags(t, vm, addr, &flags)))
		return rbi_fail_context(rc, "reading iseq: ");
	if ((flags & RBI_T_MASK) != RBI_T_IMEMO || RBI_IMEMO_TYPE(flags) != RBI_IMEMO_ISEQ)
		return rbi_fail(RBI_CORRUPT, "0x%" PRIx64 " is not an iseq (flags 0x%"
				PRIx64 ")", addr, flags);
	if ((rc = rbi_read_u64(t, addr + l->iseq_body, &body)))
		return rc;
	if (body == 0 || (body & 7))
		return rbi_fail(RBI_CORRUPT, "iseq 0x%" PRIx64 " has no body", addr);
	if ((rc = rbi_read(t, body, b, end)))
		return rbi_fail_context(rc, "reading iseq 0x%" PRIx64 " body: ", addr);

	out->type = rbi_get_u32(b, l->body_type);
	out->iseq_size = rbi_get_u32(b, l->body_iseq_size);
	out->iseq_encoded = rbi_get_u64(b, l->body_iseq_encoded);
	out->pathobj = rbi_get_u64(b, l->body_pathobj);
	out->base_label = rbi_get_u64(b, l->body_base_label);
	out->label = rbi_get_u64(b, l->body_label);
	if (vm->k.first_lineno_fixnum)
		out->first_lineno = (int)((int64_t)rbi_get_u64(b, l->body_first_lineno) >> 1);
	else
		out->first_lineno = (int)rbi_get_u32(b, l->body_first_lineno);
	out->insns_info = rbi_get_u64(b, l->body_insns_info_body);
	out->positions = rbi_get_u64(b, l->body_insns_info_positions);
	out->insns_info_size = rbi_get_u32(b, l->body_insns_info_size);
	out->succ_index_table = rbi_get_u64(b, l->body_succ_index_table);
	out->parent_iseq = rbi_get_u64(b, l->body_parent_iseq);
	out->local_iseq = rbi_get_u64(b, l->body_local_iseq);
	out->body = body;
	if (l->body_builtin_attrs != RBI_ABSENT && l->body_builtin_attrs + 4 <= end)
		out->builtin_attrs = rbi_get_u32(b, l->body_builtin_attrs);

	if (out->type > RBI_ISEQ_PLAIN || out->iseq_size > ISEQ_SIZE_MAX ||
	    out->insns_info_size > INSNS_INFO_MAX || (out->iseq_encoded & 7))
		return rbi_fail(RBI_CORRUPT, "iseq 0x%" PRIx64 " has an implausible "
				"body (type %u, size %u, %u line entries)", addr,
				out->type, out->iseq_size, out->insns_info_size);
	return RBI_OK;
}

int rbi_iseq_path(struct rbi_target *t, const struct rbi_vm *vm,
		  const struct rbi_iseq *is, char *buf, size_t cap, uint64_t *cut)
{
	uint64_t flags, path = rbi_vm_location(t, vm, is->pathobj);
	int rc;

	buf[0] = '\0';
	*cut = 0;
	/* pathobj: the path String, or a frozen [path, realpath] Array. */
	if ((rc = rbi_vm_obj_flags(t, vm, path, &flags)))
		return rbi_fail_context(rc, "iseq 0x%" PRIx64 " path: ", is->addr);
	if ((flags & RBI_T_MASK) == RBI_T_ARRAY &&
	    (rc = rbi_vm_array_at(t, vm, path, 0, &path)))
		return rc;
	return rbi_vm_string_cut(t, vm, path, buf, cap, cut);
}

static int succ_index_lookup(struct rbi_target *t, uint64_t table, uint64_t x,
			     uint64_t *out)
{
	uint64_t v, small, bits;
	uint32_t rank;
	int rc;

	if (x < IMMEDIATE_TABLE_SIZE) {
		if ((rc = rbi_read_u64(t, table + (x / 9) * 8, &v)))
			return rc;
		*out = (v >> (7 * (x % 9))) & 0x7f;
		return RBI_OK;
	}
	uint64_t block = table + SUCC_PART + ((x - IMMEDIATE_TABLE_SIZE) / 512) * SUCC_BLOCK_SIZE;
	unsigned bit = (unsigned)((x - IMMEDIATE_TABLE_SIZE) % 512);
	unsigned sb = bit / 64;

	if ((rc = rbi_read_u32(t, block + SUCC_BLOCK_RANK, &rank)) ||
	    (rc = rbi_read_u64(t, block + SUCC_BLOCK_SMALL_RANKS, &small)) ||
	    (rc = rbi_read_u64(t, block + SUCC_BLOCK_BITS + 8 * sb, &bits)))
		return rc;
	*out = rank + (sb ? (small >> (9 * (sb - 1))) & 0x1ff : 0) +
	       (uint64_t)__builtin_popcountll(bits << (63 - bit % 64));
	return RBI_OK;
}

/* get_insn_info_binary_search over positions[] (entry index into *OUT). */
static int positions_lookup(struct rbi_target *t, const struct rbi_iseq *is,
			    uint64_t pos, uint64_t *out)
{
	uint64_t size = is->insns_info_size, l = 1, r = size - 1;
	uint32_t p;
	int rc;

	while (l <= r) {
		uint64_t m = l + (r - l) / 2;

		if ((rc = rbi_read_u32(t, is->positions + 4 * m, &p)))
			return rc;
		if (p == pos) {
			*out = m;
			return RBI_OK;
		}
		if (p < pos)
			l = m + 1;
		else
			r = m - 1;
	}
	if (l >= size) {
		*out = size - 1;
		return RBI_OK;
	}
	if ((rc = rbi_read_u32(t, is->positions + 4 * l, &p)))
		return rc;
	*out = p > pos ? l - 1 : l;
	return RBI_OK;
}

/* Whether PC is an instruction boundary of IS (or its end). */
static bool pc_inside(const struct rbi_iseq *is, uint64_t pc)
{
	return pc >= is->iseq_encoded && (pc - is->iseq_encoded) % 8 == 0 &&
	       (pc - is->iseq_encoded) / 8 <= is->iseq_size;
}

int rbi_iseq_frame_line(struct rbi_target *t, const struct rbi_vm *vm,
			const struct rbi_iseq *is, uint64_t pc, uint64_t jit_return, int *line,
			char *bad, size_t bad_cap)
{
	if (jit_return && !pc_inside(is, pc)) {
		*line = 0;
		bad[0] = '\0';
		return RBI_OK;
	}
	return rbi_iseq_line(t, vm, is, pc, line, bad, bad_cap);
}

/* The first line of the code IS was compiled from: that of its outermost
   iseq (top-level or required code, or eval's, which an eval iseq starts
   inside code of another). */
static int code_first_line(struct rbi_target *t, const struct rbi_vm *vm,
			   const struct rbi_iseq *is, int *first)
{
	struct rbi_iseq cur = *is;
	int rc;

	for (int hops = 0; cur.parent_iseq && cur.type != RBI_ISEQ_TOP &&
	     cur.type != RBI_ISEQ_MAIN && cur.type != RBI_ISEQ_EVAL; hops++)
		if (hops > ISEQ_CHAIN_MAX ||
		    (rc = rbi_iseq_read(t, vm, cur.parent_iseq, &cur)))
			return hops > ISEQ_CHAIN_MAX ? RBI_CORRUPT : rc;
	*first = cur.first_lineno;
	return RBI_OK;
}

/* The line of IS's line-table entry IDX into *LINE_NO.  An entry of line
   0 is an instruction the compiler gave no line: 2.7's nop at a block's
   redo/next label, the last before the block's leave, so a block about to
   leave stands on it (Ruby cannot see that moment: nothing is called from
   there).  It belongs to the code before it, whose line is taken: the
   last entry before it that has one (a few back at most). */
static int entry_line(struct rbi_target *t, const struct rbi_iseq *is, uint32_t esize,
		      uint64_t idx, uint32_t *line_no)
{
	int rc;

	for (unsigned back = 0;; back++, idx--) {
		/* iseq_insn_info_entry starts with int line_no in every version. */
		if ((rc = rbi_read_u32(t, is->insns_info + idx * esize, line_no)))
			return rc;
		if (*line_no || !idx || back == LINELESS_BACK_MAX)
			return RBI_OK;
	}
}

int rbi_iseq_line(struct rbi_target *t, const struct rbi_vm *vm,
		  const struct rbi_iseq *is, uint64_t pc, int *line, char *bad, size_t bad_cap)
{
	uint32_t esize = vm->layout->insn_info_size;
	uint64_t pos, idx;
	uint32_t line_no;
	int rc, first;

	*line = 0;
	bad[0] = '\0';
	if (!pc_inside(is, pc))
		return rbi_fail(RBI_CORRUPT, "pc 0x%" PRIx64 " is outside iseq 0x%"
				PRIx64, pc, is->addr);
	if (esize == RBI_ABSENT || esize < 4)
		return rbi_fail(RBI_LAYOUT, "no iseq_insn_info_entry layout");
	pos = (pc - is->iseq_encoded) / 8;
	if (pos)
		pos--;
	if (is->insns_info_size == 0 || !is->insns_info)
		return RBI_OK;
	if (is->insns_info_size == 1) {
		idx = 0;
	} else if (is->succ_index_table) {
		if ((rc = succ_index_lookup(t, is->succ_index_table, pos, &idx)))
			return rbi_fail_context(rc, "iseq 0x%" PRIx64 " line table: ",
						is->addr);
		if (idx == 0 || idx > is->insns_info_size) {
			snprintf(bad, bad_cap, "iseq 0x%" PRIx64 " line table gives entry "
				 "%" PRIu64 " of %u", is->addr, idx, is->insns_info_size);
			return RBI_OK;
		}
		idx--;
	} else if (is->positions) {
		if ((rc = positions_lookup(t, is, pos, &idx)))
			return rc;
	} else {
		return RBI_OK;
	}
	if ((rc = entry_line(t, is, esize, idx, &line_no)))
		return rc;
	/* The compiler gives an instruction the line of a node of the code
	   it compiles, never one before that code's first line.  Not the
	   iseq's own first line: 3.4.11's compiler gives ensure and rescue
	   clauses lines up to 2 before theirs.  No bound holds at the other
	   end: a heredoc's body, and the interpolations in it, come after
	   the line where the code that holds it ends (its code_location). */
	if ((int)line_no < is->first_lineno &&
	    !code_first_line(t, vm, is, &first) && (int)line_no < first) {
		snprintf(bad, bad_cap, "iseq 0x%" PRIx64 " line table gives line %d "
			 "in code from line %d on", is->addr, (int)line_no, first);
		return RBI_OK;
	}
	*line = (int)line_no;
	return RBI_OK;
}

int rbi_iseq_name(struct rbi_target *t, const struct rbi_vm *vm, const struct rbi_iseq *is,
		  uint64_t str, char *buf, size_t cap, uint64_t *cut)
{
	int rc = rbi_vm_string_cut(t, vm, str, buf, cap, cut);

	/* rb_iseq_new_main names every main iseq with rb_fstring_lit("<main>"),
	   a String over libruby's read-only data: a core without libruby's
	   file lacks its bytes, yet the type says them. */
	if (rc && is->type == RBI_ISEQ_MAIN && cap > sizeof("<main>")) {
		memcpy(buf, "<main>", sizeof("<main>"));
		*cut = 0;
		return RBI_OK;
	}
	return rc;
}

static int label34(struct rbi_target *t, struct rbi_vm *vm,
		   const struct rbi_iseq *start, uint64_t owner, char *buf,
		   size_t cap, int depth, uint64_t *cut)
{
	struct rbi_iseq cur = *start, it;
	char name[RBI_NAME_MAX], inner[RBI_NAME_MAX + 64];
	uint64_t inner_cut = 0;
	bool qualified;
	int level = 0, rc;

	if (depth > LABEL_DEPTH_MAX)
		return rbi_fail(RBI_CORRUPT, "iseq 0x%" PRIx64 ": label nesting too "
				"deep", start->addr);
	for (int hops = 0;; hops++) {
		if (hops > ISEQ_CHAIN_MAX)
			return rbi_fail(RBI_CORRUPT, "iseq 0x%" PRIx64 ": parent chain "
					"does not end", start->addr);
		switch (cur.type) {
		case RBI_ISEQ_METHOD:
			if ((rc = rbi_vm_string_cut(t, vm, cur.label, name, sizeof(name), cut)))
				return rc;
			*cut += rbi_cut_of(rbi_vm_method_name(t, vm, owner, name, buf, cap,
							      &qualified), cap);
			return RBI_OK;
		case RBI_ISEQ_BLOCK:
		case RBI_ISEQ_PLAIN:
			it = cur;
			if (cur.parent_iseq) {
				for (int n = 0; cur.local_iseq != it.addr; n++) {
					if (n > ISEQ_CHAIN_MAX || !it.parent_iseq)
						return rbi_fail(RBI_CORRUPT, "iseq 0x%" PRIx64
								": no way to its method",
								start->addr);
					if (it.type == RBI_ISEQ_BLOCK)
						level++;
					if ((rc = rbi_iseq_read(t, vm, it.parent_iseq, &it)))
						return rc;
				}
			}
			if ((rc = label34(t, vm, &it, owner, inner, sizeof(inner), depth + 1,
					  &inner_cut)))
				return rc;
			*cut += inner_cut;
			if (level <= 1)
				*cut += rbi_cut_of((size_t)snprintf(buf, cap, "block in %s",
								    inner), cap);
			else
				*cut += rbi_cut_of((size_t)snprintf(buf, cap, "block (%d levels) "
								    "in %s", level, inner), cap);
			return RBI_OK;
		case RBI_ISEQ_RESCUE:
		case RBI_ISEQ_ENSURE:
		case RBI_ISEQ_EVAL:
			if (!cur.parent_iseq)
				return rbi_fail(RBI_CORRUPT, "iseq 0x%" PRIx64 " has no "
						"parent", cur.addr);
			if ((rc = rbi_iseq_read(t, vm, cur.parent_iseq, &cur)))
				return rc;
			continue;
		default:        /* TOP, CLASS, MAIN */
			return rbi_iseq_name(t, vm, &cur, cur.label, buf, cap, cut);
		}
	}
}

int rbi_iseq_label34(struct rbi_target *t, struct rbi_vm *vm,
		     const struct rbi_iseq *is, uint64_t owner,
		     char *buf, size_t cap, uint64_t *cut)
{
	buf[0] = '\0';
	*cut = 0;
	return label34(t, vm, is, owner, buf, cap, 0, cut);
}
