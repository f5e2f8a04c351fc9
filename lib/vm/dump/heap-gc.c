/* heap-gc.c: what the GC knows of one heap object, as ObjectSpace.dump_all
 * writes it: its "flags" (gc.c rb_obj_gc_flags) and its "memsize"
 * (rb_obj_memsize_of).
 *
 * The flags are bits of the object's page, one per BASE_SLOT_SIZE (the
 * 40-byte RVALUE) of the page's body (NUM_IN_PAGE): wb_unprotected_bits,
 * mark_bits, uncollectible_bits, marking_bits and pinned_bits in struct
 * heap_page.  Its age (old: 3) is two bits of its flags up to 3.2
 * (FL_PROMOTED0/1) and two bits of the page's age_bits from 3.3.  The
 * page's bitmaps are read once per page the walk is on.
 *
 * memsize is the slot's size (sizeof(RVALUE) up to 3.1, the slot size
 * from 3.2) plus what the object owns outside it, for the types where
 * that is plain data: a String's heap buffer (capacity and its
 * terminator, in the encodings whose terminator is one byte), an Array's
 * heap buffer, an Object's instance variables outside its slot, a Hash's
 * ar_table outside its slot (up to 3.2) or its st_table (st_memsize, less
 * the header where that is in the slot: 3.3+), a Struct's members outside
 * its slot, a File's rb_io_t and buffers (unless it converts encodings);
 * Floats, Symbols, Rationals and Complexes own nothing; heap-memsize.c
 * counts Bignums', Regexps' and MatchData's; and first, for an object
 * with generic instance variables (FL_EXIVAR), rb_generic_ivar_memsize
 * (heap-genivar.c).  Others, and one whose generic ivars' table was not
 * found, say RBI_UNSUPPORTED rather than give a part. */
#include <inttypes.h>
#include <string.h>

#include "vm/dump/heap-object.h"
#include "vm/heap/heap-pages.h"

/* FL_PROMOTED0/1 (<= 3.2): the age, RVALUE_AGE_SHIFT 5. */
#define FLAGS_AGE_SHIFT 5
#define AGE_MASK 3u
#define OLD_AGE 3u
/* RSTRING_NOEMBED, RARRAY_EMBED_FLAG, ROBJECT_EMBED: FL_USER1. */
#define NOEMBED RBI_FL_USER(1)
#define EMBED RBI_FL_USER(1)
/* STR_NOFREE (FL_USER18): a buffer the String does not own (a C
   literal's): not counted. */
#define STR_NOFREE RBI_FL_USER(18)
/* RHASH_ST_TABLE_FLAG (internal/hash.h 2.6-3.4). */
#define RHASH_ST_TABLE_FLAG RBI_FL_USER(3)
/* encindex.h: ASCII-8BIT, UTF-8, US-ASCII; their terminator is 1 byte. */
#define ENCODING_SHIFT (RBI_FL_USHIFT + 10)
#define ENCODING_MASK 0x7fu
#define ONE_BYTE_TERM_ENCODINGS 3u
#define SHAPE_OBJ_TOO_COMPLEX 4
/* A capacity beyond this is garbage (a slot changing under the walk). */
#define CAPA_MAX (1ull << 40)

/* Whether the layout has every bitmap rb_obj_gc_flags reads. */
static bool gc_layout(const struct rbi_layout *l)
{
	return l->heap_page_wb_unprotected_bits != RBI_ABSENT &&
	       l->heap_page_mark_bits != RBI_ABSENT &&
	       l->heap_page_uncollectible_bits != RBI_ABSENT &&
	       l->heap_page_marking_bits != RBI_ABSENT && l->heap_page_pinned_bits != RBI_ABSENT &&
	       l->heap_page_size != RBI_ABSENT && l->rvalue_size != RBI_ABSENT &&
	       l->rvalue_size >= 16 && l->heap_page_size <= 8192 &&
	       l->heap_page_wb_unprotected_bits < l->heap_page_size;
}

/* The offset of the first of struct heap_page's bitmaps (ABSENT, one the
   layout lacks, is the largest offset). */
static uint32_t first_bitmap(const struct rbi_layout *l)
{
	const uint32_t offs[] = { l->heap_page_wb_unprotected_bits, l->heap_page_mark_bits,
				  l->heap_page_uncollectible_bits, l->heap_page_marking_bits,
				  l->heap_page_pinned_bits, l->heap_page_age_bits };
	uint32_t from = offs[0];

	for (size_t i = 1; i < sizeof(offs) / sizeof(offs[0]); i++)
		if (offs[i] < from)
			from = offs[i];
	return from;
}

/* The page P's bitmaps (bytes FROM to the end of its struct) in the
   scratch buffer. */
static int page_bits(struct rbi_heap_iter *it, const struct heap_page *p, uint32_t from)
{
	struct heap_object_scratch *sc = rbi_heap_iter_scratch(it);
	const struct rbi_layout *l = rbi_heap_iter_vm(it)->layout;
	size_t len = l->heap_page_size - from;
	int rc;

	if (sc->bits_page == p->page)
		return RBI_OK;
	sc->bits_page = 0;
	if (!RBI_GROW(sc->bits, sc->bits_cap, len, 2048))
		return rbi_fail(RBI_NOMEM, "out of memory");
	if ((rc = rbi_read(rbi_heap_iter_target(it), p->page + from, sc->bits, len)))
		return rbi_fail_context(rc, "reading the bitmaps of heap page 0x%" PRIx64 ": ",
					p->page);
	sc->bits_page = p->page;
	return RBI_OK;
}

/* The 64-bit word WORD of the bitmap at layout offset OFF, FROM being
   where the buffer starts; false past the struct. */
static bool bits_word(struct rbi_heap_iter *it, uint32_t off, uint32_t from, uint64_t word,
		      uint64_t *out)
{
	const struct rbi_layout *l = rbi_heap_iter_vm(it)->layout;
	uint64_t at = (uint64_t)off - from + word * 8;

	if (at + 8 > l->heap_page_size - from)
		return false;
	*out = rbi_get_u64(rbi_heap_iter_scratch(it)->bits, at);
	return true;
}

/* What both readers of one object here check first: a walk, a slot, a
   place for the answer; and the walk's scratch, opened. */
static int object_reader_begin(rbi_heap_iter *it, const struct rbi_heap_slot *s,
			       const void *out)
{
	if (!it || !s || !out)
		return rbi_fail(RBI_INVAL, "no heap walk or slot");
	return rbi_heap_scratch_open(it);
}

RBI_EXPORT int rbi_heap_object_gc_flags(rbi_heap_iter *it, const struct rbi_heap_slot *s,
					unsigned *out)
{
	const struct heap_page *p;
	const struct rbi_layout *l;
	const struct rbi_vm *vm;
	uint64_t n, w[5], age_word;
	uint32_t from;
	unsigned age;
	int rc;

	if ((rc = object_reader_begin(it, s, out)))
		return rc;
	*out = 0;
	vm = rbi_heap_iter_vm(it);
	l = vm->layout;

	if (!gc_layout(l))
		return rbi_fail(RBI_UNSUPPORTED, "this Ruby's layout has no GC bitmaps "
				"(DWARF of this build gives them)");
	p = rbi_heap_iter_page(it);
	if (!p || s->addr < p->start || s->addr >= p->start + (uint64_t)p->total * p->slot_size)
		return rbi_fail(RBI_INVAL, "slot 0x%" PRIx64 " is not the one the walk is on",
				s->addr);
	from = first_bitmap(l);
	if ((rc = page_bits(it, p, from)))
		return rc;
	n = (s->addr & ((uint64_t)vm->k.heap_page_align - 1)) / l->rvalue_size;
	if (!bits_word(it, l->heap_page_wb_unprotected_bits, from, n / 64, &w[0]) ||
	    !bits_word(it, l->heap_page_uncollectible_bits, from, n / 64, &w[1]) ||
	    !bits_word(it, l->heap_page_marking_bits, from, n / 64, &w[2]) ||
	    !bits_word(it, l->heap_page_mark_bits, from, n / 64, &w[3]) ||
	    !bits_word(it, l->heap_page_pinned_bits, from, n / 64, &w[4]))
		return rbi_fail(RBI_CORRUPT, "slot 0x%" PRIx64 " lies past its page's bitmaps",
				s->addr);
	if (l->heap_page_age_bits == RBI_ABSENT)
		age = (unsigned)(s->flags >> FLAGS_AGE_SHIFT) & AGE_MASK;
	else if (bits_word(it, l->heap_page_age_bits, from, n / 32, &age_word))
		age = (unsigned)(age_word >> ((n % 32) * 2)) & AGE_MASK;
	else
		return rbi_fail(RBI_CORRUPT, "slot 0x%" PRIx64 " lies past its page's age bits",
				s->addr);
	n %= 64;
	*out = (((w[0] >> n) & 1) ? 0 : RBI_GC_WB_PROTECTED) |
	       (age == OLD_AGE ? RBI_GC_OLD : 0) |
	       (((w[1] >> n) & 1) ? RBI_GC_UNCOLLECTIBLE : 0) |
	       (((w[2] >> n) & 1) ? RBI_GC_MARKING : 0) |
	       (((w[3] >> n) & 1) ? RBI_GC_MARKED : 0) |
	       (((w[4] >> n) & 1) ? RBI_GC_PINNED : 0);
	return RBI_OK;
}

/* What a Struct owns outside its slot (rb_obj_memsize_of, T_STRUCT): its
   members at as.heap.ptr unless the flags' RSTRUCT_EMBED_LEN_MASK bits
   count them in the slot. */
static int struct_owned(const struct rbi_layout *l, const struct rbi_heap_slot *s,
			uint64_t *owned)
{
	uint64_t mask = l->rstruct_embed_len_mask;

	*owned = 0;
	if (mask == RBI_ABSENT || !mask || l->rstruct_heap_len == RBI_ABSENT ||
	    l->rstruct_heap_ptr == RBI_ABSENT || l->rstruct_heap_len + 8 > s->size ||
	    l->rstruct_heap_ptr + 8 > s->size)
		return rbi_fail(RBI_UNSUPPORTED, "this Ruby's layout has no RStruct");
	if (!(s->flags & mask) && rbi_get_u64(s->bytes, l->rstruct_heap_ptr))
		*owned = 8 * rbi_get_u64(s->bytes, l->rstruct_heap_len);
	return RBI_OK;
}

/* What a File owns outside its slot (rb_io_memsize): its rb_io_t and
   the capacity of its three buffers, unless it converts encodings (an
   rb_econv_t, not read); nothing once closed. */
static int file_owned(struct rbi_heap_iter *it, const struct rbi_heap_slot *s, uint64_t *owned)
{
	const struct rbi_layout *l = rbi_heap_iter_vm(it)->layout;
	const uint32_t capa[] = { l->io_rbuf_capa, l->io_wbuf_capa, l->io_cbuf_capa };
	uint8_t buf[RBI_IO_MAX];
	const uint8_t *io;
	int rc;

	*owned = 0;
	for (size_t i = 0; i < sizeof(capa) / sizeof(capa[0]); i++)
		if (capa[i] == RBI_ABSENT || (uint64_t)capa[i] + 4 > l->io_size)
			return rbi_fail(RBI_UNSUPPORTED, "this Ruby's layout has no rb_io_t");
	if (l->io_readconv == RBI_ABSENT || l->io_writeconv == RBI_ABSENT ||
	    (uint64_t)l->io_readconv + 8 > l->io_size || (uint64_t)l->io_writeconv + 8 > l->io_size)
		return rbi_fail(RBI_UNSUPPORTED, "this Ruby's layout has no rb_io_t");
	if ((rc = rbi_heap_file_io(it, s, buf, &io)) || !io)
		return rc;
	if (rbi_get_u64(io, l->io_readconv) || rbi_get_u64(io, l->io_writeconv))
		return rbi_fail(RBI_UNSUPPORTED, "a File that converts encodings");
	*owned = l->io_size;
	for (size_t i = 0; i < sizeof(capa) / sizeof(capa[0]); i++)
		*owned += rbi_get_u32(io, capa[i]);
	return RBI_OK;
}

/* What a Hash owns outside its slot: its ar_table where that is
   malloc'ed (up to 3.2), or its st_table. */
static int hash_owned(struct rbi_heap_iter *it, const struct rbi_heap_slot *s, uint64_t *owned)
{
	const struct rbi_layout *l = rbi_heap_iter_vm(it)->layout;
	uint8_t buf[RBI_HASH_TABLE_MAX];
	const uint8_t *table;
	int rc;

	*owned = 0;
	if (!(s->flags & RHASH_ST_TABLE_FLAG)) {
		if (l->rhash_table == RBI_ABSENT)
			return RBI_OK;  /* 3.3+: the ar_table is in the slot */
		if (l->ar_table_size == RBI_ABSENT || l->rhash_table + 8 > s->size)
			return rbi_fail(RBI_UNSUPPORTED, "this Ruby's layout has no ar_table");
		if (rbi_get_u64(s->bytes, l->rhash_table))
			*owned = l->ar_table_size;
		return RBI_OK;
	}
	if ((rc = rbi_heap_hash_table(it, s, buf, &table)))
		return rc;
	if (!table)
		return rbi_fail(RBI_UNSUPPORTED, "this Ruby's layout has no st_table");
	if ((rc = rbi_vm_st_memsize(l, table, owned)))
		return rc;
	if (l->rhash_table == RBI_ABSENT)
		*owned -= l->st_table_size;     /* the header is in the slot */
	return RBI_OK;
}

/* What an Object of too complex a shape owns: the st_table of its
   instance variables, at as.heap.ivptr (ROBJECT_IV_HASH). */
static int too_complex_owned(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
			     uint64_t *owned)
{
	const struct rbi_layout *l = rbi_heap_iter_vm(it)->layout;
	uint8_t hdr[RBI_HASH_TABLE_MAX];
	int rc;

	if (l->robject_ivptr == RBI_ABSENT || l->robject_ivptr + 8 > s->size ||
	    !rbi_vm_st_layout(l) || RBI_ST_HEADER_SIZE(l) > sizeof(hdr))
		return rbi_fail(RBI_UNSUPPORTED, "this Ruby's layout has no st_table");
	if ((rc = rbi_read(rbi_heap_iter_target(it), rbi_get_u64(s->bytes, l->robject_ivptr),
			   hdr, RBI_ST_HEADER_SIZE(l))))
		return rbi_fail_context(rc, "reading the ivar table of 0x%" PRIx64 ": ",
					s->addr);
	return rbi_vm_st_memsize(l, hdr, owned);
}

/* What an Object owns outside its slot (rb_obj_memsize_of, T_OBJECT):
   ROBJECT_NUMIV words up to 3.1, its shape's capacity from 3.3, the
   st_table of its instance variables when its shape is too complex. */
static int object_owned(struct rbi_heap_iter *it, const struct rbi_heap_slot *s, uint64_t *owned)
{
	const struct rbi_layout *l = rbi_heap_iter_vm(it)->layout;
	const uint8_t *shape;
	int rc;

	*owned = 0;
	if (l->robject_numiv != RBI_ABSENT && l->robject_ivptr != RBI_ABSENT &&
	    l->robject_numiv + 4 <= s->size && l->robject_ivptr + 8 <= s->size) {
		if (!(s->flags & EMBED) && rbi_get_u64(s->bytes, l->robject_ivptr))
			*owned = 8ull * rbi_get_u32(s->bytes, l->robject_numiv);
		return RBI_OK;
	}
	if (l->shape_capacity == RBI_ABSENT || l->shape_type == RBI_ABSENT ||
	    l->shape_capacity + 4 > l->shape_size)
		return rbi_fail(RBI_UNSUPPORTED, "this Ruby's layout has no shape capacity");
	if ((rc = rbi_heap_object_shape(it, s, &shape)))
		return rc;
	if (!shape)
		return rbi_fail(RBI_UNSUPPORTED, "this Ruby's object shapes were not found");
	if (shape[l->shape_type] == SHAPE_OBJ_TOO_COMPLEX)
		return too_complex_owned(it, s, owned);
	if (!(s->flags & EMBED))
		*owned = 8ull * rbi_get_u32(shape, l->shape_capacity);
	return RBI_OK;
}

RBI_EXPORT int rbi_heap_object_memsize(rbi_heap_iter *it, const struct rbi_heap_slot *s,
				       uint64_t *out)
{
	const struct rbi_vm *vm;
	const struct rbi_layout *l;
	uint64_t owned = 0, generic = 0;
	int rc;

	if ((rc = object_reader_begin(it, s, out)))
		return rc;
	*out = 0;
	vm = rbi_heap_iter_vm(it);
	l = vm->layout;
	if ((s->flags & RBI_FL_EXIVAR) && (rc = rbi_heap_genivar_memsize(it, s, &generic)))
		return rc;
	switch (s->type) {
	case RBI_T_STRING:
		if (((s->flags >> ENCODING_SHIFT) & ENCODING_MASK) >= ONE_BYTE_TERM_ENCODINGS)
			return rbi_fail(RBI_UNSUPPORTED, "a String whose terminator's length "
					"is its encoding's");
		if (!(s->flags & NOEMBED) || (s->flags & (vm->k.elts_shared | STR_NOFREE)))
			break;
		if (l->rstring_heap_capa == RBI_ABSENT || l->rstring_heap_capa + 8 > s->size)
			return rbi_fail(RBI_UNSUPPORTED, "this Ruby's layout has no String capacity");
		owned = rbi_get_u64(s->bytes, l->rstring_heap_capa) + 1;
		break;
	case RBI_T_ARRAY:
		if (l->rarray_heap_capa == RBI_ABSENT)
			return rbi_fail(RBI_UNSUPPORTED, "this Ruby's layout has no Array capacity");
		owned = s->owned;
		break;
	case RBI_T_OBJECT:
		if ((rc = object_owned(it, s, &owned)))
			return rc;
		break;
	case RBI_T_HASH:
		if ((rc = hash_owned(it, s, &owned)))
			return rc;
		break;
	case RBI_T_STRUCT:
		if ((rc = struct_owned(l, s, &owned)))
			return rc;
		break;
	case RBI_T_FILE:
		if ((rc = file_owned(it, s, &owned)))
			return rc;
		break;
	case RBI_T_FLOAT: case RBI_T_SYMBOL: case RBI_T_RATIONAL: case RBI_T_COMPLEX:
		break;
	default:
		if ((rc = rbi_heap_owned(it, s, &owned)))
			return rc;
		break;
	}
	if (owned > CAPA_MAX || generic > CAPA_MAX)
		return rbi_fail(RBI_CORRUPT, "0x%" PRIx64 " claims %" PRIu64 " bytes", s->addr,
				owned > CAPA_MAX ? owned : generic);
	*out = s->size + generic + owned;
	return RBI_OK;
}
