/* heap-pages.h: the heap's pages read a batch at a time, in page-list
 * order, for the heap walker (heap.c). */
#ifndef RBI_HEAP_PAGES_H
#define RBI_HEAP_PAGES_H

#include "vm/vm/find.h"
#include "vm/heap/heap-tally.h"

/* Page bodies read per batch: 16 pages of 16 KiB or 4 of 64 KiB (small
   enough to stay in the CPU cache between the copy and the count). */
#define HEAP_BATCH_BYTES (1u << 18)
#define HEAP_BATCH_MAX 64
/* Words of a page's mark bitmap we keep: one bit per 40-byte unit of a
   64 KiB page takes 26 (HEAP_PAGE_BITMAP_LIMIT). */
#define HEAP_MARK_WORDS 32

/* One page of a batch. */
struct heap_page {
	uint64_t page;          /* the struct heap_page */
	uint64_t body;          /* its body: start aligned down */
	uint64_t start;         /* first slot */
	uint32_t slot_size, total;
	uint8_t *buf;           /* bytes from BODY to the last slot's end */
	bool empty;             /* a page without slots (3.4's empty pool) */
	int size;               /* the walker's: its entry in the stats'
				   sizes, -1 if none */
	bool ok;                /* checked and read: walk its slots */
	uint32_t free;          /* its free slots, if the batch is counted */
	/* The GC's lazy sweep has not reached it yet (flags.before_sweep):
	   a used slot that is not marked is garbage, which the GC will free
	   and ObjectSpace never yields (gc.c is_garbage_object). */
	bool unswept;
	uint32_t mark_unit;     /* bytes a mark bit stands for (RVALUE) */
	uint64_t marks[HEAP_MARK_WORDS];        /* its mark_bits, if UNSWEPT */
};

/* Is used slot I of page P garbage the lazy sweep has not freed yet? */
static inline bool heap_slot_garbage(const struct heap_page *p, uint32_t i)
{
	uint64_t n;

	if (!p->unswept)
		return false;
	n = (p->start - p->body + (uint64_t)i * p->slot_size) / p->mark_unit;
	return !((p->marks[n / 64] >> (n % 64)) & 1);
}

/* The garbage among page P's used slots from slot FROM on. */
uint32_t rbi_heap_page_garbage(const struct heap_page *p, uint32_t from);

/* A batch as read.  What went wrong is kept with it, not in the thread's
   rbi_errmsg(): it may have been read on another thread. */
struct heap_batch {
	uint64_t first;         /* index in the page list of pages[0] */
	size_t n;
	int rc;                 /* RBI_OK, or the error that ended the read */
	char err[RBI_ERRMSG_MAX];       /* its explanation */
	bool list_gone;         /* the page list itself could not be read (it
				   was freed: grown and moved): the rest of
				   the walk is lost */
	const char *moved_why;  /* NULL, or why pages were skipped */
	uint64_t pages_skipped, bytes_read;
	/* Counted by the thread that read it (rbi_heap_reader_count): the
	   batch's slots by type, free ones (flags 0) in [RBI_TYPE_COUNT],
	   and each page's free slots. */
	bool counted;
	uint64_t counts[RBI_TYPE_COUNT + 1];
	uint64_t garbage;       /* of the used slots counted: garbage */
	/* Counted in HEAP_COUNT_CLASSES: also tallied by class, unless
	   TALLY_RC says why not (RBI_NOMEM). */
	int tally_rc;
	struct heap_tally tally;
	struct heap_page pages[HEAP_BATCH_MAX];
	/* scratch of the read */
	uint64_t ptrs[HEAP_BATCH_MAX];
	struct rbi_iov iov[HEAP_BATCH_MAX];
	uint8_t *bodies;        /* the pages' bytes (P.buf); a batch counted
				   as read had them in a scratch buffer that
				   is reused: walk its counts only */
};

/* Where the pages are and how to read them. */
struct heap_geometry {
	const struct rbi_layout *l;
	uint64_t list;          /* address of the page pointer array */
	uint64_t npages;
	uint32_t align;         /* HEAP_PAGE_ALIGN */
	uint64_t fl_singleton;  /* for tallies by class */
	uint64_t elts_shared;   /* for bytes owned */
	uint64_t ary_shared_root;
	uint32_t mark_words;    /* words of a page's mark bitmap; 0 when the
				   layout cannot tell garbage (no
				   flags.before_sweep or mark_bits) */
};

/* A read error that ends a walk: the process is gone, may not be read,
   or we are out of memory (not a page that moved). */
static inline bool heap_read_fatal(int rc)
{
	return rc == RBI_GONE || rc == RBI_PERM || rc == RBI_NOMEM;
}

/* How batches read from now on are counted on the thread that reads
   them (rbi_heap_reader_count). */
enum heap_count_mode { HEAP_COUNT_NONE, HEAP_COUNT_TYPES, HEAP_COUNT_CLASSES };

struct heap_reader;

/* Check page P's struct as read into HDR (from P.page: up to the last of
   its start, total_slots and slot_size fields); fill P.  False if it
   cannot be a page of this heap.  An empty page (3.4's pool) is fine with
   no slots. */
bool rbi_heap_page_parse(const struct heap_geometry *g, struct heap_page *p,
			 const uint8_t *hdr);

int rbi_heap_reader_open(struct rbi_target *t, const struct heap_geometry *g,
			 struct heap_reader **out);
/* Batches in the walk. */
uint64_t rbi_heap_reader_batches(const struct heap_reader *r);
/* Batch K: read now, or waited for if the read-ahead thread has it.
   Batches are taken in order, one at a time: K is the first one not yet
   released.  Asking again for K (after an error, say) returns it as it
   was read. */
struct heap_batch *rbi_heap_reader_get(struct heap_reader *r, uint64_t k);
/* The walker is done with batch K. */
void rbi_heap_reader_release(struct heap_reader *r, uint64_t k);
/* Count the types of the slots of every batch read from now on, on the
   thread that read it, while its bytes are in that CPU's cache; with
   HEAP_COUNT_CLASSES also tally them by class.  Such a batch keeps its
   counts, not its bodies, so the ring takes many more of them. */
void rbi_heap_reader_count(struct heap_reader *r, enum heap_count_mode mode);
/* Count page P's slots from FROM by type into C (free ones in
   C[RBI_TYPE_COUNT]). */
void rbi_heap_page_count(const struct heap_page *p, uint32_t from,
			 uint64_t c[RBI_TYPE_COUNT + 1]);
/* Read the next batches ahead on a second thread while batch K is walked,
   if the target's memory can be read by two threads at once and there is
   a CPU for it.  Call once; the reader works without it. */
void rbi_heap_reader_read_ahead(struct heap_reader *r);
/* Stops and joins the read-ahead thread. */
void rbi_heap_reader_close(struct heap_reader *r);

/* heap-maybe.c: gc_mark_maybe's test.  RBI_NO_LAYOUT when the layout does
   not describe the heap's pages. */
struct heap_maybe;
int rbi_heap_maybe_open(struct rbi_target *t, const struct rbi_vm *vm, struct heap_maybe **out);
/* Would gc_mark_maybe mark V: a used slot of the heap?  Pages are
   remembered: one handle serves one moment of the heap. */
bool rbi_heap_maybe_slot(struct heap_maybe *m, uint64_t v);
void rbi_heap_maybe_close(struct heap_maybe *m);

#endif
