/* heap-refs.c: the references dump_all lists for the types whose marking
 * (gc.c gc_mark_children, 2.7-3.3; rb_gc_mark_children, 3.4) is a fixed
 * set of words in the object's slot, or nothing at all:
 *   T_FLOAT, T_BIGNUM, T_SYMBOL  return before the class is marked: none
 *                                (a Symbol's fstr is not marked, 2.6-3.4)
 *   T_RATIONAL                   num, den
 *   T_COMPLEX                    real, imag
 *   T_REGEXP                     src
 *   T_MATCH                      regexp, then str (when set)
 * in that order, each only if it is a heap object and not the object's
 * class (objspace_dump.c reachable_object_i leaves the class out wherever
 * it appears).  A layout without one of these words leaves the object's
 * references unknown. */
#include "vm/heap-object.h"

/* The words each type marks, as layout offsets, in marking order. */
static int marked_words(const struct rbi_layout *l, unsigned type, uint32_t offs[2], size_t *n)
{
	switch (type) {
	case RBI_T_FLOAT: case RBI_T_BIGNUM: case RBI_T_SYMBOL:
		*n = 0;
		return RBI_OK;
	case RBI_T_RATIONAL:
		offs[0] = l->rrational_num;
		offs[1] = l->rrational_den;
		*n = 2;
		return RBI_OK;
	case RBI_T_COMPLEX:
		offs[0] = l->rcomplex_real;
		offs[1] = l->rcomplex_imag;
		*n = 2;
		return RBI_OK;
	case RBI_T_REGEXP:
		offs[0] = l->rregexp_src;
		*n = 1;
		return RBI_OK;
	case RBI_T_MATCH:
		offs[0] = l->rmatch_regexp;
		offs[1] = l->rmatch_str;
		*n = 2;
		return RBI_OK;
	default:
		return RBI_UNSUPPORTED;
	}
}

int rbi_heap_slot_refs(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
		       struct rbi_heap_object *out)
{
	const struct rbi_layout *l = rbi_heap_iter_vm(it)->layout;
	uint32_t offs[2];
	size_t n;
	int rc;

	if (marked_words(l, s->type, offs, &n))
		return RBI_OK;
	for (size_t i = 0; i < n; i++)
		if (offs[i] == RBI_ABSENT || (uint64_t)offs[i] + 8 > s->size)
			return RBI_OK;  /* not this layout's: unknown */
	for (size_t i = 0; i < n; i++)
		if ((rc = rbi_heap_add_refs(it, s, out,
						   (const uint8_t *)s->bytes + offs[i], 1)))
			return rc;
	out->refs = rbi_heap_iter_scratch(it)->refs;
	out->refs_known = true;
	return RBI_OK;
}
