/* st.c: the entries of an st_table (st.c, 2.6-3.4), read the way
 * st_foreach visits them: entries[entries_start .. entries_bound), an
 * entry { hash, key, record } deleted when its hash is RESERVED_HASH_VAL.
 * The one st_table reader for Hashes, "too complex" objects' ivars and
 * classes' ivar index tables. */
#include <inttypes.h>

#include "vm/values/values.h"

/* An st_table entry deleted: its hash is RESERVED_HASH_VAL (st.c). */
#define ST_DELETED_HASH (~(uint64_t)0)
/* 2^40 entries of 24 bytes would be 24 TiB: a torn header. */
#define ST_POWER_MAX 40

/* A word at layout offset OFF lies in SIZE bytes (OFF may be absent). */
static bool word_in(uint32_t off, uint64_t size)
{
	return off != RBI_ABSENT && (uint64_t)off + 8 <= size;
}

bool rbi_vm_st_layout(const struct rbi_layout *l)
{
	uint64_t hdr = (uint64_t)l->st_table_entries + 8, esize = l->st_entry_size;

	return l->st_table_entries != RBI_ABSENT && word_in(l->st_table_num_entries, hdr) &&
	       word_in(l->st_table_entries_start, hdr) && word_in(l->st_table_entries_bound, hdr) &&
	       esize != RBI_ABSENT && esize % 8 == 0 && word_in(l->st_entry_hash, esize) &&
	       word_in(l->st_entry_key, esize) && word_in(l->st_entry_record, esize);
}

int rbi_vm_st_entries(struct rbi_target *t, const struct rbi_layout *l, const uint8_t *hdr,
		      uint64_t max, struct rbi_st_entries *out)
{
	uint64_t start = rbi_get_u64(hdr, l->st_table_entries_start);
	uint64_t bound = rbi_get_u64(hdr, l->st_table_entries_bound);
	uint64_t esize = l->st_entry_size, words = esize / 8, n;
	int rc;

	out->count = 0;
	out->size = rbi_get_u64(hdr, l->st_table_num_entries);
	if (bound < start || bound - start > max || out->size > bound - start)
		return rbi_fail(RBI_CORRUPT, "an st_table claims entries %" PRIu64 "..%"
				PRIu64 " (%" PRIu64 " live)", start, bound, out->size);
	n = bound - start;
	if (!RBI_GROW(out->words, out->cap, n * words, 64))
		return rbi_fail(RBI_NOMEM, "out of memory");
	if (n && (rc = rbi_read(t, rbi_get_u64(hdr, l->st_table_entries) + start * esize,
				out->words, n * esize)))
		return rc;
	out->count = n;
	return RBI_OK;
}

bool rbi_vm_st_entry(const struct rbi_layout *l, const struct rbi_st_entries *e, uint64_t i,
		     uint64_t *key, uint64_t *record)
{
	const uint8_t *ent = (const uint8_t *)(e->words + i * (l->st_entry_size / 8));

	if (rbi_get_u64(ent, l->st_entry_hash) == ST_DELETED_HASH)
		return false;
	*key = rbi_get_u64(ent, l->st_entry_key);
	*record = rbi_get_u64(ent, l->st_entry_record);
	return true;
}

/* st.c's features[p].bins_words for 64-bit st_index_t, the same 2.6-3.4:
   2^(p+1) bins of 1, 2, 4 or 8 bytes (size_ind 0-3 from p = 8, 16, 32),
   rounded up to words, none for the one-entry table. */
static uint64_t bins_words(unsigned p)
{
	unsigned size_ind = p < 8 ? 0 : p < 16 ? 1 : p < 32 ? 2 : 3;

	return p ? (((uint64_t)2 << p << size_ind) + 7) / 8 : 0;
}

int rbi_vm_st_memsize(const struct rbi_layout *l, const uint8_t *hdr, uint64_t *out)
{
	unsigned p;

	if (l->st_table_size == RBI_ABSENT || l->st_entry_size == RBI_ABSENT ||
	    l->st_table_entry_power >= RBI_ST_HEADER_SIZE(l) || !word_in(l->st_table_bins,
	    RBI_ST_HEADER_SIZE(l)))
		return rbi_fail(RBI_UNSUPPORTED, "this Ruby's layout lacks st_table's size");
	p = hdr[l->st_table_entry_power];
	if (p > ST_POWER_MAX)
		return rbi_fail(RBI_CORRUPT, "an st_table of 2^%u entries", p);
	*out = l->st_table_size + ((uint64_t)l->st_entry_size << p) +
	       (rbi_get_u64(hdr, l->st_table_bins) ? 8 * bins_words(p) : 0);
	return RBI_OK;
}
