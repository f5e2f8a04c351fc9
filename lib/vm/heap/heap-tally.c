/* heap-tally.c: a batch's used slots by RBasic.klass (heap-tally.h).
 *
 * Runs on the thread that read the batch, while its bytes are in that
 * CPU's cache, and reads nothing but them: a row per klass value (count,
 * slot bytes, bytes owned outside the heap), internal objects apart, and
 * singleton classes listed for the walker, which decides them with reads
 * of target memory. */
#include <stdlib.h>
#include <string.h>

#include "util/table.h"
#include "vm/heap/heap-pages.h"
#include "vm/heap/heap-tally.h"

/* Index slots: twice the most slots a batch can have (16-byte slots). */
#define HEAP_TALLY_SLOTS (2 * HEAP_BATCH_BYTES / 16)

/* FL_USER1: RSTRING_NOEMBED, RARRAY_EMBED_FLAG; FL_USER18: STR_NOFREE (a
   literal's static bytes): the same bits in 2.6-3.4 (string.c,
   internal/string.h, internal/array.h).  STR_SHARED = ELTS_SHARED moved
   (vm->k.elts_shared). */
/* A capacity beyond this is garbage (a slot changing under the walk). */
#define OWNED_MAX (1ull << 40)

bool rbi_heap_type_internal(unsigned type)
{
	switch (type) {
	case RBI_T_NONE: case RBI_T_IMEMO: case RBI_T_NODE:
	case RBI_T_ICLASS: case RBI_T_ZOMBIE: case RBI_T_MOVED:
		return true;
	default:
		return false;
	}
}

uint64_t rbi_heap_owned_bytes(const struct heap_tally_ruby *rb, uint64_t flags, unsigned type,
			      const uint8_t *bytes, uint32_t size)
{
	const struct rbi_layout *l = rb->l;
	uint64_t capa;

	switch (type) {
	case RBI_T_STRING:
		if (l->rstring_heap_capa == RBI_ABSENT || l->rstring_heap_capa + 8 > size ||
		    !(flags & RBI_FL_USER(1)) || (flags & (rb->elts_shared | RBI_FL_USER(18))))
			return 0;
		capa = rbi_get_u64(bytes, l->rstring_heap_capa);
		break;
	case RBI_T_ARRAY:
		if (l->rarray_heap_capa == RBI_ABSENT || l->rarray_heap_capa + 8 > size ||
		    (flags & (RBI_FL_USER(1) | rb->elts_shared)))
			return 0;
		/* A shared root's aux.capa is its reference count: it owns
		   its length (ARY_CAPA of an ARY_SHARED_ROOT_P array). */
		if ((flags & rb->ary_shared_root) && l->rarray_heap_len != RBI_ABSENT &&
		    l->rarray_heap_len + 8 <= size)
			capa = rbi_get_u64(bytes, l->rarray_heap_len) * 8;
		else
			capa = rbi_get_u64(bytes, l->rarray_heap_capa) * 8;
		break;
	default:
		return 0;
	}
	return capa < OWNED_MAX ? capa : 0;
}

int rbi_heap_tally_index_init(struct heap_tally_index *ix)
{
	ix->slots = calloc(HEAP_TALLY_SLOTS, sizeof(*ix->slots));
	return ix->slots ? RBI_OK : RBI_NOMEM;
}

void rbi_heap_tally_index_free(struct heap_tally_index *ix)
{
	free(ix->slots);
	ix->slots = NULL;
}

static size_t slot_of(uint64_t klass)
{
	return rbi_hash3(klass, 0, 0) & (HEAP_TALLY_SLOTS - 1);
}

void rbi_heap_tally_reset(struct heap_tally *t)
{
	t->nrows = t->nspecial = 0;
	t->internal = (struct heap_tally_row){ .klass = 0 };
}

/* T's row for KLASS, made on first sight; NULL if out of memory. */
static struct heap_tally_row *row_of(struct heap_tally *t, struct heap_tally_index *ix,
				     uint64_t klass)
{
	size_t i = slot_of(klass);

	/* A batch has fewer klass values than half the slots: a free slot
	   is always found. */
	for (; ix->slots[i]; i = (i + 1) & (HEAP_TALLY_SLOTS - 1))
		if (t->rows[ix->slots[i] - 1].klass == klass)
			return &t->rows[ix->slots[i] - 1];
	if (!RBI_GROW(t->rows, t->caprows, t->nrows + 1, 64))
		return NULL;
	t->rows[t->nrows] = (struct heap_tally_row){ .klass = klass };
	ix->slots[i] = (uint32_t)++t->nrows;
	return &t->rows[t->nrows - 1];
}

int rbi_heap_tally_page(struct heap_tally *t, struct heap_tally_index *ix,
			const struct heap_tally_ruby *rb, const struct heap_page *p,
			uint64_t counts[RBI_TYPE_COUNT + 1])
{
	const uint8_t *b = p->buf + (p->start - p->body);
	struct heap_tally_row *last = NULL;

	for (uint32_t i = 0; i < p->total; i++, b += p->slot_size) {
		uint64_t flags = rbi_get_u64(b, 0), klass = rbi_get_u64(b, 8);
		unsigned type = (unsigned)(flags & RBI_T_MASK);
		uint64_t owned;

		if (!flags) {
			counts[RBI_TYPE_COUNT]++;
			continue;
		}
		counts[type]++;
		/* Counted by type, as ObjectSpace.count_objects does; no
		   object each_object would yield. */
		if (heap_slot_garbage(p, i))
			continue;
		owned = rbi_heap_owned_bytes(rb, flags, type, b, p->slot_size);
		if (rbi_heap_type_internal(type) || !klass) {
			t->internal.count++;
			t->internal.slot_bytes += p->slot_size;
			t->internal.owned += owned;
			continue;
		}
		if (type == RBI_T_CLASS && (flags & rb->fl_singleton)) {
			if (!RBI_GROW(t->special, t->capspecial, t->nspecial + 1, 16))
				return RBI_NOMEM;
			t->special[t->nspecial++] = (struct heap_tally_special){
				.addr = p->body + (uint64_t)(b - p->buf), .flags = flags,
				.klass = klass, .owned = owned, .size = p->slot_size };
			continue;
		}
		/* Neighbouring objects mostly share a class. */
		if (!last || last->klass != klass)
			if (!(last = row_of(t, ix, klass)))
				return RBI_NOMEM;
		last->count++;
		last->slot_bytes += p->slot_size;
		last->owned += owned;
	}
	return RBI_OK;
}

void rbi_heap_tally_index_clear(struct heap_tally_index *ix, const struct heap_tally *t)
{
	for (size_t r = 0; r < t->nrows; r++)
		for (size_t i = slot_of(t->rows[r].klass); ix->slots[i];
		     i = (i + 1) & (HEAP_TALLY_SLOTS - 1))
			ix->slots[i] = 0;
}

void rbi_heap_tally_free(struct heap_tally *t)
{
	free(t->rows);
	free(t->special);
	memset(t, 0, sizeof(*t));
}
