/* heap-tally.h: a batch's used slots tallied by RBasic.klass on the thread
 * that read it (heap-tally.c), for objects --by-class.  What needs target
 * memory to decide (whether a class's instances are visible, a singleton
 * class's status) is left to the walker, once per class (heap.c). */
#ifndef RBI_HEAP_TALLY_H
#define RBI_HEAP_TALLY_H

#include <stdbool.h>
#include <stdint.h>

struct rbi_layout;
struct heap_page;

/* Used slots of one RBasic.klass. */
struct heap_tally_row {
	uint64_t klass;
	uint64_t count, slot_bytes, owned;
};

/* A singleton class's slot: whether Ruby keeps it to itself takes reads
   of target memory (heap.c: singleton_internal). */
struct heap_tally_special {
	uint64_t addr, flags, klass, owned;
	uint32_t size;
};

struct heap_tally {
	struct heap_tally_row *rows;
	size_t nrows, caprows;
	struct heap_tally_special *special;
	size_t nspecial, capspecial;
	struct heap_tally_row internal; /* internal types, hidden objects
					   (klass 0) */
};

/* A reading thread's scratch index (klass -> row), reused batch after
   batch. */
struct heap_tally_index {
	uint32_t *slots;        /* row + 1, 0 empty; HEAP_TALLY_SLOTS */
};

/* What the tally needs to know of Ruby. */
struct heap_tally_ruby {
	const struct rbi_layout *l;
	uint64_t fl_singleton;
	uint64_t elts_shared;
	uint64_t ary_shared_root;
};

/* Is a used slot of TYPE internal to Ruby: never yielded by
   ObjectSpace.each_object (gc.c internal_object_p, for its type)? */
bool rbi_heap_type_internal(unsigned type);
/* The bytes a String's or Array's slot says it owns outside the heap
   (its capacity), 0 for other objects. */
uint64_t rbi_heap_owned_bytes(const struct heap_tally_ruby *rb, uint64_t flags, unsigned type,
			      const uint8_t *bytes, uint32_t size);

int rbi_heap_tally_index_init(struct heap_tally_index *ix);
void rbi_heap_tally_index_free(struct heap_tally_index *ix);
/* Start T afresh for a batch. */
void rbi_heap_tally_reset(struct heap_tally *t);
/* Tally the used slots of page P (checked and read) into T, and count
   all its slots by type into COUNTS, free ones (flags 0) in
   [RBI_TYPE_COUNT], as rbi_heap_page_count does: one pass for both.
   RBI_NOMEM (COUNTS then incomplete). */
int rbi_heap_tally_page(struct heap_tally *t, struct heap_tally_index *ix,
			const struct heap_tally_ruby *rb, const struct heap_page *p,
			uint64_t counts[RBI_TYPE_COUNT + 1]);
/* Empty IX for the next batch (T's rows say which of its slots are
   taken). */
void rbi_heap_tally_index_clear(struct heap_tally_index *ix, const struct heap_tally *t);
void rbi_heap_tally_free(struct heap_tally *t);

#endif
