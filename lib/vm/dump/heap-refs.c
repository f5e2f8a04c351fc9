/* heap-refs.c: the references dump_all lists for the types whose marking
 * (gc.c gc_mark_children, 2.7-3.3; rb_gc_mark_children, 3.4) is a fixed
 * set of words in the object's slot, or nothing at all:
 *   T_FLOAT, T_BIGNUM, T_SYMBOL  return before the class is marked: none
 *                                (a Symbol's fstr is not marked, 2.6-3.4)
 *   T_RATIONAL                   num, den
 *   T_COMPLEX                    real, imag
 *   T_REGEXP                     src
 *   T_MATCH                      regexp, then str (when set)
 *   T_FILE                       its rb_io_t's (fptr, unless closed) self,
 *                                pathv, tied_io_for_writing,
 *                                writeconv_asciicompat, writeconv_pre_ecopts,
 *                                encs.ecopts, write_lock, timeout
 *   IMEMO cref                   klass_or_self, next, refinements
 *   IMEMO svar                   cref_or_me, lastline, backref, others
 *   IMEMO throw_data             throw_obj
 *   IMEMO constcache             value
 * in that order, each only if it is a heap object and not the object's
 * class (objspace_dump.c reachable_object_i leaves the class out wherever
 * it appears).  A layout without one of these words leaves the object's
 * references unknown.  rb_io_t's self is marked from 3.0, its timeout
 * from 3.2: the Rubies that have these members (2.7 has neither, 3.1 no
 * timeout), so a layout that lacks them, the rest of rb_io_t found,
 * marks the others only. */
#include <inttypes.h>
#include <string.h>

#include "vm/dump/heap-object.h"

/* The words of the IMEMOs above, whose structs kept one shape from 2.6 to
   3.4 (rb_cref_t: RBI_CREF_*; struct vm_svar: flags, cref_or_me, lastline,
   backref, others; struct vm_throw_data: flags, reserved, throw_obj;
   iseq_inline_constant_cache_entry: flags, value), in marking order; which
   IMEMO type each is comes from the layout's enum imemo_type. */
static int imemo_words(const struct rbi_layout *l, unsigned type, uint32_t offs[4], size_t *n)
{
	static const uint32_t cref[] = { RBI_CREF_KLASS_OR_SELF, RBI_CREF_NEXT,
					 RBI_CREF_REFINEMENTS },
			      svar[] = { 8, 16, 24, 32 },
			      throw_data[] = { 16 }, constcache[] = { 8 };
	const struct { uint32_t type; const uint32_t *offs; size_t n; } kinds[] = {
		{ l->imemo_type_cref, cref, RBI_ARRAY_SIZE(cref) },
		{ l->imemo_type_svar, svar, RBI_ARRAY_SIZE(svar) },
		{ l->imemo_type_throw_data, throw_data, RBI_ARRAY_SIZE(throw_data) },
		{ l->imemo_type_constcache, constcache, RBI_ARRAY_SIZE(constcache) },
	};

	for (size_t k = 0; k < RBI_ARRAY_SIZE(kinds); k++)
		if (kinds[k].type != RBI_ABSENT && kinds[k].type == type) {
			memcpy(offs, kinds[k].offs, kinds[k].n * sizeof(*offs));
			*n = kinds[k].n;
			return RBI_OK;
		}
	return RBI_UNSUPPORTED;
}

/* The words each type marks, as layout offsets, in marking order. */
static int marked_words(const struct rbi_layout *l, const struct rbi_heap_slot *s,
			uint32_t offs[4], size_t *n)
{
	switch (s->type) {
	case RBI_T_IMEMO:
		return imemo_words(l, (unsigned)RBI_IMEMO_TYPE(s->flags), offs, n);
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

int rbi_heap_file_io(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
		     uint8_t buf[RBI_IO_MAX], const uint8_t **io)
{
	const struct rbi_layout *l = rbi_heap_iter_vm(it)->layout;
	uint64_t fptr;
	int rc;

	*io = NULL;
	if (l->rfile_fptr == RBI_ABSENT || l->rfile_fptr + 8 > s->size ||
	    l->io_size == RBI_ABSENT || l->io_size > RBI_IO_MAX)
		return rbi_fail(RBI_UNSUPPORTED, "this Ruby's layout has no rb_io_t");
	if (!(fptr = rbi_get_u64(s->bytes, l->rfile_fptr)))
		return RBI_OK;
	if ((rc = rbi_read(rbi_heap_iter_target(it), fptr, buf, l->io_size)))
		return rbi_fail_context(rc, "reading the rb_io_t of 0x%" PRIx64 ": ", s->addr);
	*io = buf;
	return RBI_OK;
}

/* A File's references: those the GC marks of its rb_io_t (above), in
   its order; none when closed. */
static int file_refs(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
		     struct rbi_heap_object *out)
{
	const struct rbi_layout *l = rbi_heap_iter_vm(it)->layout;
	const uint32_t marked[] = { l->io_self, l->io_pathv, l->io_tied_io_for_writing,
				    l->io_writeconv_asciicompat, l->io_writeconv_pre_ecopts,
				    l->io_encs_ecopts, l->io_write_lock, l->io_timeout };
	const size_t n = sizeof(marked) / sizeof(marked[0]);
	uint8_t buf[RBI_IO_MAX];
	const uint8_t *io;
	int rc;

	/* All but the first and the last are in every Ruby's rb_io_t. */
	for (size_t i = 0; i < n; i++) {
		bool optional = i == 0 || i + 1 == n;

		if (marked[i] == RBI_ABSENT ? !optional : (uint64_t)marked[i] + 8 > l->io_size)
			return RBI_OK;  /* not this layout's: unknown */
	}
	if ((rc = rbi_heap_file_io(it, s, buf, &io)))
		return rc == RBI_UNSUPPORTED ? RBI_OK : rc;
	for (size_t i = 0; io && i < n; i++)
		if (marked[i] != RBI_ABSENT &&
		    (rc = rbi_heap_add_refs(it, s, out, io + marked[i], 1)))
			return rc;
	out->refs = rbi_heap_iter_scratch(it)->refs;
	out->refs_known = true;
	return RBI_OK;
}

int rbi_heap_slot_refs(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
		       struct rbi_heap_object *out)
{
	const struct rbi_layout *l = rbi_heap_iter_vm(it)->layout;
	uint32_t offs[4];
	size_t n;
	int rc;

	if (s->type == RBI_T_FILE)
		return file_refs(it, s, out);
	if (marked_words(l, s, offs, &n))
		return RBI_OK;
	for (size_t i = 0; i < n; i++)
		if (offs[i] == RBI_ABSENT || (uint64_t)offs[i] + 8 > s->size)
			return RBI_OK;  /* not this layout's: unknown */
	for (size_t i = 0; i < n; i++)
		if ((rc = rbi_heap_add_refs(it, s, out, (const uint8_t *)s->bytes + offs[i], 1)))
			return rc;
	out->refs = rbi_heap_iter_scratch(it)->refs;
	out->refs_known = true;
	return RBI_OK;
}
