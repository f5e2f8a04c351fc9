/* heap-memsize.c: what a Bignum, a Regexp or a MatchData owns outside its
 * slot, as rb_obj_memsize_of counts it (gc.c, the same 2.7-3.4):
 *   T_BIGNUM  its digits, unless embedded (BIGNUM_EMBED_FLAG)
 *   T_REGEXP  onig_memsize of its regex_t (regcomp.c): the struct, its
 *             compiled pattern, exact string, character maps, repeat
 *             ranges and chained regexes
 *   T_MATCH   onig_region_memsize of its registers and its character
 *             offsets; up to 3.2 these are in a struct rmatch counted too,
 *             from 3.3 in the slot after struct RMatch (RMATCH_EXT)
 * Each from the layout; one it lacks says RBI_UNSUPPORTED. */
#include <inttypes.h>

#include "vm/dump/heap-object.h"

/* BIGNUM_EMBED_FLAG (internal/bignum.h 2.6-3.4). */
#define BIGNUM_EMBED RBI_FL_USER(2)
/* sizeof(BDIGIT): unsigned int where two of them fit a long long. */
#define BDIGIT_SIZE 4
/* ONIG_CHAR_TABLE_SIZE ints; OnigRepeatRange { int lower, upper }. */
#define ONIG_INT_MAP_SIZE (256 * 4)
#define ONIG_REPEAT_RANGE_SIZE 8
/* sizeof(*regs->beg) + sizeof(*regs->end): two OnigPositions (ptrdiff_t). */
#define ONIG_REGISTER_SIZE 16
/* Chained regexes followed at most (Ruby makes none). */
#define CHAIN_MAX 16
/* A regex_t read whole. */
#define REGEX_MAX 1024
/* Bytes past which a count is garbage (a torn read). */
#define OWNED_MAX (1ull << 40)

static int unsupported(const char *what)
{
	return rbi_fail(RBI_UNSUPPORTED, "this Ruby's layout has no %s", what);
}

/* A word (SIZE 8) or an int (4) at layout offset OFF lies in N bytes. */
static bool in(uint32_t off, uint32_t size, uint64_t n)
{
	return off != RBI_ABSENT && (uint64_t)off + size <= n;
}

static int bignum_owned(const struct rbi_layout *l, const struct rbi_heap_slot *s,
			uint64_t *owned)
{
	if (!in(l->rbignum_heap_len, 8, s->size) || !in(l->rbignum_heap_digits, 8, s->size))
		return unsupported("RBignum");
	if (!(s->flags & BIGNUM_EMBED) && rbi_get_u64(s->bytes, l->rbignum_heap_digits))
		*owned = BDIGIT_SIZE * rbi_get_u64(s->bytes, l->rbignum_heap_len);
	return RBI_OK;
}

static bool regex_layout(const struct rbi_layout *l)
{
	uint32_t n = l->regex_size;

	return n != RBI_ABSENT && n <= REGEX_MAX && in(l->regex_p, 8, n) &&
	       in(l->regex_alloc, 4, n) && in(l->regex_exact, 8, n) &&
	       in(l->regex_exact_end, 8, n) && in(l->regex_int_map, 8, n) &&
	       in(l->regex_int_map_backward, 8, n) && in(l->regex_repeat_range, 8, n) &&
	       in(l->regex_repeat_range_alloc, 4, n) && in(l->regex_chain, 8, n);
}

/* onig_memsize of the regex_t at REG and those chained to it. */
static int onig_memsize(struct rbi_heap_iter *it, const struct rbi_heap_slot *s, uint64_t reg,
			uint64_t *size)
{
	const struct rbi_layout *l = rbi_heap_iter_vm(it)->layout;
	uint8_t r[REGEX_MAX];
	uint64_t exact, exact_end, ranges;
	int rc;

	for (unsigned depth = 0; reg; depth++) {
		if (depth == CHAIN_MAX)
			return rbi_fail(RBI_CORRUPT, "Regexp 0x%" PRIx64 " chains more than %d "
					"regexes", s->addr, CHAIN_MAX);
		if ((rc = rbi_read(rbi_heap_iter_target(it), reg, r, l->regex_size)))
			return rbi_fail_context(rc, "reading the regex of 0x%" PRIx64 ": ",
						s->addr);
		exact = rbi_get_u64(r, l->regex_exact);
		exact_end = rbi_get_u64(r, l->regex_exact_end);
		if (exact && (exact_end < exact || exact_end - exact > OWNED_MAX))
			return rbi_fail(RBI_CORRUPT, "Regexp 0x%" PRIx64 " has an exact string "
					"of 0x%" PRIx64 "..0x%" PRIx64, s->addr, exact, exact_end);
		ranges = rbi_get_u64(r, l->regex_repeat_range) ?
			 rbi_get_u32(r, l->regex_repeat_range_alloc) : 0;
		*size += l->regex_size + ONIG_REPEAT_RANGE_SIZE * ranges +
			 (rbi_get_u64(r, l->regex_p) ? rbi_get_u32(r, l->regex_alloc) : 0) +
			 (exact ? exact_end - exact : 0) +
			 (rbi_get_u64(r, l->regex_int_map) ? ONIG_INT_MAP_SIZE : 0) +
			 (rbi_get_u64(r, l->regex_int_map_backward) ? ONIG_INT_MAP_SIZE : 0);
		reg = rbi_get_u64(r, l->regex_chain);
	}
	return RBI_OK;
}

static int regexp_owned(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
			uint64_t *owned)
{
	const struct rbi_layout *l = rbi_heap_iter_vm(it)->layout;

	if (!in(l->rregexp_ptr, 8, s->size) || !regex_layout(l))
		return unsupported("regex_t");
	return onig_memsize(it, s, rbi_get_u64(s->bytes, l->rregexp_ptr), owned);
}

/* onig_region_memsize of registers whose ALLOCATED count is given, and
   NOFFSETS character offsets. */
static uint64_t registers_size(const struct rbi_layout *l, uint32_t allocated, uint32_t noffsets)
{
	return l->re_registers_size + (uint64_t)ONIG_REGISTER_SIZE * allocated +
	       (uint64_t)l->rmatch_offset_size * noffsets;
}

static int match_owned(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
		       uint64_t *owned)
{
	const struct rbi_layout *l = rbi_heap_iter_vm(it)->layout;
	uint32_t n = l->match_data_size, ext = l->rmatch_size;
	uint8_t rm[64];
	uint64_t p;
	int rc;

	if (l->re_registers_size == RBI_ABSENT || l->rmatch_offset_size == RBI_ABSENT)
		return unsupported("re_registers");
	if (ext != RBI_ABSENT && ext < s->size &&
	    in(l->matchext_regs_allocated, 4, s->size - ext) &&
	    in(l->matchext_char_offset_num_allocated, 4, s->size - ext)) {
		const uint8_t *e = (const uint8_t *)s->bytes + ext;     /* RMATCH_EXT */

		*owned = registers_size(l, rbi_get_u32(e, l->matchext_regs_allocated),
					rbi_get_u32(e, l->matchext_char_offset_num_allocated));
		return RBI_OK;
	}
	if (!in(l->rmatch_rmatch, 8, s->size) || n == RBI_ABSENT || n > sizeof(rm) ||
	    !in(l->match_data_regs_allocated, 4, n) ||
	    !in(l->match_data_char_offset_num_allocated, 4, n))
		return unsupported("struct rmatch");
	if (!(p = rbi_get_u64(s->bytes, l->rmatch_rmatch)))
		return RBI_OK;
	if ((rc = rbi_read(rbi_heap_iter_target(it), p, rm, n)))
		return rbi_fail_context(rc, "reading the registers of 0x%" PRIx64 ": ", s->addr);
	*owned = n + registers_size(l, rbi_get_u32(rm, l->match_data_regs_allocated),
				    rbi_get_u32(rm, l->match_data_char_offset_num_allocated));
	return RBI_OK;
}

int rbi_heap_owned(struct rbi_heap_iter *it, const struct rbi_heap_slot *s, uint64_t *owned)
{
	*owned = 0;
	switch (s->type) {
	case RBI_T_BIGNUM:
		return bignum_owned(rbi_heap_iter_vm(it)->layout, s, owned);
	case RBI_T_REGEXP:
		return regexp_owned(it, s, owned);
	case RBI_T_MATCH:
		return match_owned(it, s, owned);
	default:
		return rbi_fail(RBI_UNSUPPORTED, "memsize of a %s", rbi_value_type_name(s->type));
	}
}
