/* heap.c: walking the object heap from outside (ruby-internals.md §5).
 *
 * ObjectSpace.count_objects visits every slot of every page in the
 * objspace's sorted page list; so does this walker, reading the same
 * structures per layout:
 *
 *   objspace   vm->objspace (<= 3.3), vm->gc.objspace (3.4+: the default
 *              GC behind the modular-GC interface)
 *   page list  heap_pages.sorted: a struct heap_page *[allocated_pages]
 *              (<= 3.3), an rb_darray { size, capa, data[] } (3.4+, where
 *              pages of the empty pool have no slots)
 *   page       struct heap_page { total_slots, slot_size (3.1+; 40 =
 *              sizeof(RVALUE) before), start, ... }; its body is aligned
 *              to HEAP_PAGE_ALIGN (16 KiB, 64 KiB from 3.3) and begins
 *              with a pointer back to the page
 *   slot       total_slots of slot_size bytes from start; RBasic.flags 0
 *              is a free slot, else flags & 0x1f is the type
 *
 * Nothing here trusts the target: the page count is bounded, every page
 * must point back at itself from its body and fit in it, and a page that
 * fails is skipped and reported (a live heap moves under the walk).  Pages
 * are read a batch at a time (heap-pages.c), so memory stays bounded by a
 * few batches. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/table.h"
#include "vm/heap/heap-iter.h"
#include "vm/heap/heap-pages.h"

/* More pages than this (256 GiB of 16 KiB pages) is a corrupt count. */
#define HEAP_PAGES_MAX (1ull << 24)
/* Pages whose struct must be readable and point back for the layout to
   be believed at the start. */
#define HEAP_CHECK_PAGES 8
/* Class chains (singletons, inclusions, ancestors) longer than this are
   corrupt. */
#define CLASS_CHAIN_MAX 4096
/* rb_darray header: size_t size, capa. */
#define DARRAY_HEADER 16

static const char *const type_names[RBI_TYPE_COUNT] = {
	[0x00] = "T_NONE", [0x01] = "T_OBJECT", [0x02] = "T_CLASS",
	[0x03] = "T_MODULE", [0x04] = "T_FLOAT", [0x05] = "T_STRING",
	[0x06] = "T_REGEXP", [0x07] = "T_ARRAY", [0x08] = "T_HASH",
	[0x09] = "T_STRUCT", [0x0a] = "T_BIGNUM", [0x0b] = "T_FILE",
	[0x0c] = "T_DATA", [0x0d] = "T_MATCH", [0x0e] = "T_COMPLEX",
	[0x0f] = "T_RATIONAL", [0x11] = "T_NIL", [0x12] = "T_TRUE",
	[0x13] = "T_FALSE", [0x14] = "T_SYMBOL", [0x15] = "T_FIXNUM",
	[0x16] = "T_UNDEF", [0x1a] = "T_IMEMO", [0x1b] = "T_NODE",
	[0x1c] = "T_ICLASS", [0x1d] = "T_ZOMBIE", [0x1e] = "T_MOVED",
};

/* Types no heap slot in use can have: T_NONE (a free slot's flags are 0),
   the special constants' (T_NIL, T_TRUE, T_FALSE, T_FIXNUM, T_UNDEF), and
   numbers no Ruby uses. */
#define IMPOSSIBLE_TYPES (1u << 0x00 | 1u << 0x10 | 1u << 0x11 | 1u << 0x12 | 1u << 0x13 | \
			  1u << 0x15 | 1u << 0x16 | 1u << 0x17 | 1u << 0x18 | 1u << 0x19 | \
			  1u << 0x1f)

static bool impossible_type(unsigned type)
{
	return (IMPOSSIBLE_TYPES >> type) & 1u;
}

RBI_EXPORT const char *rbi_value_type_name(unsigned type)
{
	return type < RBI_TYPE_COUNT ? type_names[type] : NULL;
}

/* What rbi_heap_object_class learned about one RBasic.klass value. */
struct class_entry {
	uint64_t klass;
	uint64_t real;          /* rb_class_real(klass) */
	int status;             /* RBI_OK: instances are visible to
				   each_object(Object); RBI_ITER_END: not
				   (BasicObject); else the error */
};

struct rbi_heap_iter {
	struct rbi_target *t;
	struct rbi_vm *vm;
	const struct rbi_layout *l;
	unsigned flags;
	uint64_t objspace;
	uint64_t sorted;        /* heap_pages.sorted as read at the start */
	uint64_t list;          /* address of the page pointer array */
	uint64_t npages;
	struct heap_reader *reader;
	uint64_t nbatches;
	uint64_t k;             /* the batch being walked */
	struct heap_batch *b;   /* it, once taken; NULL before */
	size_t nwalk, cur;      /* pages of B to walk, the one being walked */
	uint32_t slot;          /* next slot of B's pages[cur] */
	struct rbi_heap_slot out;
	struct rbi_heap_stats st;
	uint64_t impossible;    /* used slots of a type no heap object has */
	uint64_t garbage;       /* used slots the lazy sweep will free */
	bool ended;
	int end_rc;             /* the end's reads failed: why */
	char end_err[RBI_ERRMSG_MAX];
	enum heap_count_mode mode;      /* how batches are counted as read
				   (rbi_heap_iter_count, _count_classes):
				   then they are counts only */
	/* by class (rbi_heap_iter_count_classes) */
	struct rbi_heap_class *totals;  /* per class, in order of first sight */
	size_t ntotals, captotals;
	struct rbi_map totals_index;    /* class -> its index in TOTALS */
	struct rbi_heap_class internal, unknown;
	/* classes (rbi_heap_object_class) */
	bool have_c_object;
	uint64_t c_object;
	struct class_entry *cls;        /* in order of first sight */
	size_t ncls, capcls;
	struct rbi_map cls_index;       /* klass -> its index in CLS */
	size_t last;                    /* the entry found last: neighbouring
					   objects mostly share a class */
	/* What the readers of single objects keep for a walk (heap-object.c
	   makes it at its first call), and how it goes with the walk. */
	void *ext;
	void (*ext_free)(void *ext);
	struct heap_tally_ruby rb;      /* for rbi_heap_owned_bytes */
};

void *rbi_heap_iter_ext(struct rbi_heap_iter *it)
{
	return it->ext;
}

void rbi_heap_iter_set_ext(struct rbi_heap_iter *it, void *ext, void (*ext_free)(void *ext))
{
	it->ext = ext;
	it->ext_free = ext_free;
}

struct rbi_target *rbi_heap_iter_target(struct rbi_heap_iter *it)
{
	return it->t;
}

const struct heap_page *rbi_heap_iter_page(struct rbi_heap_iter *it)
{
	return it->b && it->cur < it->nwalk ? &it->b->pages[it->cur] : NULL;
}

const struct rbi_vm *rbi_heap_iter_vm(struct rbi_heap_iter *it)
{
	return it->vm;
}

static void moved(struct rbi_heap_iter *it, const char *why)
{
	if (!it->st.moved) {
		it->st.moved = 1;
		it->st.moved_why = why;
	}
}

/* The page list: its address, the array of page pointers and the count. */
/* Words of a heap page's mark bitmap (gc.c HEAP_PAGE_BITMAP_LIMIT: a bit
   per RVALUE-sized unit of a page of ALIGN bytes), or 0 when the layout
   cannot tell garbage from objects: no flags.before_sweep or mark_bits,
   or a bitmap past what a batch keeps. */
static uint32_t mark_words(const struct rbi_layout *l, uint32_t align)
{
	uint64_t bits, words;

	if (l->heap_page_before_sweep == RBI_ABSENT || l->heap_page_mark_bits == RBI_ABSENT ||
	    l->rvalue_size == RBI_ABSENT || l->rvalue_size < 16 || !align)
		return 0;
	bits = (align + l->rvalue_size - 1) / l->rvalue_size;
	words = (bits + 63) / 64;
	return words <= HEAP_MARK_WORDS ? (uint32_t)words : 0;
}

static int read_list(struct rbi_heap_iter *it, uint64_t *sorted, uint64_t *list,
		     uint64_t *npages)
{
	const struct rbi_layout *l = it->l;
	uint64_t hdr[2];
	int rc;

	if ((rc = rbi_read_fresh(it->t, it->objspace + l->objspace_sorted, sorted, 8)))
		return rc;
	if (it->vm->k.heap_sorted_darray) {
		if (!*sorted) {         /* not allocated yet: no pages */
			*list = 0;
			*npages = 0;
			return RBI_OK;
		}
		if ((*sorted & 7) || (rc = rbi_read_fresh(it->t, *sorted, hdr, sizeof(hdr))))
			return rc ? rc : rbi_fail(RBI_CORRUPT, "heap page list 0x%"
						  PRIx64 " is not aligned", *sorted);
		if (hdr[0] > hdr[1])
			return rbi_fail(RBI_CORRUPT, "heap page list 0x%" PRIx64 " holds "
					"%" PRIu64 " pages in room for %" PRIu64,
					*sorted, hdr[0], hdr[1]);
		*list = *sorted + DARRAY_HEADER;
		*npages = hdr[0];
	} else {
		if ((rc = rbi_read_fresh(it->t, it->objspace + l->objspace_allocated_pages,
				     npages, 8)))
			return rc;
		*list = *sorted;
		if (*npages && (!*sorted || (*sorted & 7)))
			return rbi_fail(RBI_CORRUPT, "heap page list 0x%" PRIx64
					" is not a pointer", *sorted);
	}
	if (*npages > HEAP_PAGES_MAX)
		return rbi_fail(RBI_CORRUPT, "the heap claims %" PRIu64 " pages",
				*npages);
	return RBI_OK;
}

/* GC.count and whether a GC is running now (false if unknown). */
static int read_gc_state(struct rbi_heap_iter *it, uint64_t *count, bool *running)
{
	const struct rbi_layout *l = it->l;
	uint8_t byte;
	int rc = RBI_OK;

	*count = 0;
	*running = false;
	if (l->objspace_gc_count != RBI_ABSENT)
		rc = rbi_read_fresh(it->t, it->objspace + l->objspace_gc_count, count, 8);
	if (!heap_read_fatal(rc) && l->objspace_during_gc != RBI_ABSENT &&
	    !(rc = rbi_read_fresh(it->t, it->objspace + l->objspace_during_gc / 8, &byte, 1)))
		*running = byte & (1u << (l->objspace_during_gc % 8));
	/* Fields that cannot be read make the counts approximate (a GC count
	   of 0 differs from the one before), a process that cannot be read
	   ends the walk. */
	return heap_read_fatal(rc) ? rc : RBI_OK;
}

/* The entry of page P's slot size in the stats' sizes (kept sorted by
   size; -1 if all are taken by other sizes: Ruby has at most 5).  A new
   entry moves the larger ones up: so do the batch's pages that use them. */
static void size_entry(struct rbi_heap_iter *it, struct heap_page *p)
{
	struct rbi_heap_size *v = it->st.sizes;
	int i;

	for (i = 0; i < RBI_HEAP_SIZES && v[i].slot_size; i++) {
		if (v[i].slot_size == p->slot_size) {
			p->size = i;
			return;
		}
	}
	if (i == RBI_HEAP_SIZES) {
		p->size = -1;
		return;
	}
	while (i > 0 && v[i - 1].slot_size > p->slot_size) {
		v[i] = v[i - 1];
		i--;
	}
	v[i] = (struct rbi_heap_size){ .slot_size = p->slot_size };
	for (struct heap_page *q = it->b->pages; q < p; q++)
		if (q->size >= i)
			q->size++;
	p->size = i;
}

/* What batch B adds to the stats, now that it is walked (in page order:
   the sizes keep the order Ruby's pages have). */
static void take_batch(struct rbi_heap_iter *it, struct heap_batch *b)
{
	it->st.bytes_read += b->bytes_read;
	it->st.pages_skipped += b->pages_skipped;
	if (b->moved_why)
		moved(it, b->moved_why);
	if (b->list_gone) {
		moved(it, "the heap's page list changed during the walk");
		it->st.pages_skipped += it->npages - b->first;
		it->st.pages_done = it->npages;
		it->nwalk = 0;
		return;
	}
	for (size_t i = 0; i < b->n; i++) {
		struct heap_page *p = &b->pages[i];

		if (!p->ok)
			continue;
		it->st.slots += p->total;
		it->st.slot_bytes += (uint64_t)p->total * p->slot_size;
		size_entry(it, p);
		if (p->size >= 0)
			it->st.sizes[p->size].slots += p->total;
	}
	it->st.pages_done = b->first + b->n;
	it->nwalk = b->n;
}

/* The end of the walk: did the heap change meanwhile?  An error if the
   process could no longer be read (asked again, the same error). */
static int finish(struct rbi_heap_iter *it)
{
	uint64_t sorted, list, npages, count;
	bool running;
	int rc;

	if (it->ended)
		return it->end_rc ? rbi_fail(it->end_rc, "%s", it->end_err) : RBI_OK;
	it->ended = true;
	/* Counts that hold what no heap has do not add up to Ruby's. */
	if (it->impossible)
		moved(it, "used slots have a type no heap object has (T_NONE, T_NIL...): "
		      "corrupt memory, or read as it changed");
	if (!(rc = read_gc_state(it, &count, &running))) {
		if (count != it->st.gc_count)
			moved(it, "a GC ran during the walk");
		else if (running)
			moved(it, "a GC was running at the end of the walk");
		rc = read_list(it, &sorted, &list, &npages);
		if (!heap_read_fatal(rc) && (rc || sorted != it->sorted || npages != it->npages))
			moved(it, "the heap's page list changed during the walk");
	}
	if (!heap_read_fatal(rc))
		return RBI_OK;
	it->end_rc = rc;
	snprintf(it->end_err, sizeof(it->end_err), "%s", rbi_errmsg());
	return rc;
}

/* Does the layout name everything the walk reads? */
static int heap_layout(const struct rbi_vm *vm)
{
	const struct rbi_layout *l = vm->layout;
	uint32_t vm_off = l->vm_gc_objspace != RBI_ABSENT ? l->vm_gc_objspace : l->vm_objspace;

	if (vm_off == RBI_ABSENT || l->objspace_sorted == RBI_ABSENT ||
	    (!vm->k.heap_sorted_darray && l->objspace_allocated_pages == RBI_ABSENT) ||
	    l->heap_page_total_slots == RBI_ABSENT || l->heap_page_start == RBI_ABSENT ||
	    (l->heap_page_slot_size == RBI_ABSENT && l->rvalue_size == RBI_ABSENT))
		return rbi_fail(RBI_NO_LAYOUT, "the struct layout of Ruby %s (%s) does not "
				"describe its heap (rb_objspace, heap_page): install "
				"libruby's debug info or set DEBUGINFOD_URLS",
				vm->info.version, vm->layout_desc);
	return RBI_OK;
}

/* Done with the batch being walked (if any): take the next, or
   RBI_ITER_END (the walk finished) after the last.  A batch that failed
   is not released: asked again, it fails again. */
static int next_batch(struct rbi_heap_iter *it)
{
	struct heap_batch *b;
	int rc;

	if (it->b) {
		rbi_heap_reader_release(it->reader, it->k);
		it->k = it->b->list_gone ? it->nbatches : it->k + 1;
		it->b = NULL;
		it->nwalk = 0;
	}
	if (it->k >= it->nbatches)
		return (rc = finish(it)) ? rc : RBI_ITER_END;
	b = rbi_heap_reader_get(it->reader, it->k);
	if (b->rc)
		return rbi_fail(b->rc, "%s", b->err);
	it->b = b;
	it->cur = 0;
	it->slot = 0;
	take_batch(it, b);
	return RBI_OK;
}

/* The first pages must be pages: a table that is wrong for this Ruby
   fails here, not with counts made up from garbage. */
static int check_first_pages(struct rbi_heap_iter *it)
{
	size_t checked = 0, good = 0;

	for (size_t i = 0; i < it->nwalk && checked < HEAP_CHECK_PAGES; i++) {
		const struct heap_page *p = &it->b->pages[i];

		if (p->empty)
			continue;       /* 3.4's empty pool: nothing to check */
		checked++;
		good += p->ok;
	}
	if (checked && !good)
		return rbi_fail(RBI_LAYOUT, "Ruby %s: the heap pages do not match the "
				"struct layout (%s): their bodies do not point back at "
				"them.  Install libruby's debug info (DWARF) so the "
				"layout comes from this very build", it->vm->info.version,
				it->vm->layout_desc);
	return RBI_OK;
}

RBI_EXPORT int rbi_heap_iter_init(rbi_target *t, unsigned flags, rbi_heap_iter **out)
{
	struct rbi_heap_iter *it;
	struct rbi_vm *vm;
	uint32_t vm_off;
	bool running;
	int rc;

	if (!t || !out)
		return rbi_fail(RBI_INVAL, "no target");
	*out = NULL;
	if ((rc = rbi_vm_get(t, &vm)) || (rc = heap_layout(vm)))
		return rc;
	if (!(it = calloc(1, sizeof(*it))))
		return rbi_fail(RBI_NOMEM, "out of memory");
	it->t = t;
	it->vm = vm;
	it->l = vm->layout;
	it->rb = (struct heap_tally_ruby){ .l = it->l, .fl_singleton = vm->k.fl_singleton,
					   .elts_shared = vm->k.elts_shared,
					   .ary_shared_root = vm->k.ary_shared_root };
	it->flags = flags;
	it->st.moved_why = "";
	/* Objspace fields are read fresh; drop what the cache holds of a
	   live target's earlier state. */
	rbi_target_forget(t);
	vm_off = it->l->vm_gc_objspace != RBI_ABSENT ? it->l->vm_gc_objspace
						     : it->l->vm_objspace;
	rc = rbi_read_fresh(t, vm->info.vm + vm_off, &it->objspace, 8);
	if (!rc && (!it->objspace || (it->objspace & 7)))
		rc = rbi_fail(vm->k.heap_sorted_darray ? RBI_UNSUPPORTED : RBI_CORRUPT,
			      "the VM's objspace pointer is 0x%" PRIx64, it->objspace);
	if (!rc)
		rc = read_list(it, &it->sorted, &it->list, &it->npages);
	if (!rc) {
		struct heap_geometry g = { .l = it->l, .list = it->list,
			.npages = it->npages, .align = vm->k.heap_page_align,
			.fl_singleton = vm->k.fl_singleton, .elts_shared = vm->k.elts_shared,
			.ary_shared_root = vm->k.ary_shared_root,
			.mark_words = mark_words(it->l, vm->k.heap_page_align) };

		rc = rbi_heap_reader_open(t, &g, &it->reader);
		it->nbatches = it->reader ? rbi_heap_reader_batches(it->reader) : 0;
	}
	if (rc) {
		rbi_heap_iter_free(it);
		return rbi_fail_context(rc, "locating the heap: ");
	}
	it->st.pages = it->npages;
	if ((rc = read_gc_state(it, &it->st.gc_count, &running))) {
		rbi_heap_iter_free(it);
		return rc;
	}
	if (running)
		moved(it, "a GC was running when the walk started");
	if (it->npages && (rc = next_batch(it))) {
		rbi_heap_iter_free(it);
		return rc;
	}
	if (it->npages && (rc = check_first_pages(it))) {
		uint64_t count;
		int gone = read_gc_state(it, &count, &running);

		/* Pages change while a GC runs (and a live heap may have had
		   one since the start): then they are skipped and the walk is
		   approximate.  Only a heap that held still is proof of a
		   wrong layout. */
		if (gone) {
			rbi_heap_iter_free(it);
			return gone;
		}
		if (it->st.moved || running || count != it->st.gc_count) {
			moved(it, "a GC ran during the walk");
		} else {
			/* A modular GC (3.4+) puts another struct behind gc.objspace. */
			if (vm->k.heap_sorted_darray)
				rbi_fail_context(rc, "(or a GC library other than the "
						 "default is loaded) ");
			rbi_heap_iter_free(it);
			return rc;
		}
	}
	rbi_heap_reader_read_ahead(it->reader);
	*out = it;
	return RBI_OK;
}

/* The next slot of the batch being walked into *OUT (used ones, and free
   ones with RBI_HEAP_FREE_SLOTS); false at the batch's end.  *GARBAGE:
   a used slot the lazy sweep will free (counted in IT's garbage). */
static bool next_in_batch(struct rbi_heap_iter *it, struct rbi_heap_slot *out, bool *garbage)
{
	while (it->cur < it->nwalk) {
		const struct heap_page *p = &it->b->pages[it->cur];

		if (!p->ok || it->slot >= p->total) {
			it->cur++;
			it->slot = 0;
			continue;
		}
		uint64_t off = p->start - p->body + (uint64_t)it->slot * p->slot_size;
		const uint8_t *b = p->buf + off;
		uint64_t flags = rbi_get_u64(b, 0);
		unsigned type = (unsigned)(flags & RBI_T_MASK);

		/* The other thread may have read this batch: its bytes are in
		   that CPU's cache.  (A prefetch never faults, past the
		   buffer's end included.) */
		__builtin_prefetch(b + 8 * p->slot_size);
		*garbage = flags && heap_slot_garbage(p, it->slot);
		it->garbage += *garbage;
		it->slot++;
		if (!flags) {
			it->st.free++;
			if (p->size >= 0)
				it->st.sizes[p->size].free++;
			if (!(it->flags & RBI_HEAP_FREE_SLOTS))
				continue;
		}
		it->impossible += flags && impossible_type(type);
		*out = (struct rbi_heap_slot){
			.addr = p->body + off, .flags = flags, .klass = rbi_get_u64(b, 8),
			.type = type, .size = p->slot_size, .bytes = b,
			.owned = rbi_heap_owned_bytes(&it->rb, flags, type, b, p->slot_size),
		};
		return true;
	}
	return false;
}

RBI_EXPORT int rbi_heap_iter_next(rbi_heap_iter *it, const struct rbi_heap_slot **out)
{
	int rc;

	if (!it || !out)
		return rbi_fail(RBI_INVAL, "no heap walk");
	if (it->mode != HEAP_COUNT_NONE)
		return rbi_fail(RBI_INVAL, "the heap walk is counting: "
				"rbi_heap_iter_next cannot follow a count by type or class");
	/* Garbage is no object: each_object and dump_all never see it. */
	for (;;) {
		bool garbage;

		while (!next_in_batch(it, &it->out, &garbage))
			if ((rc = next_batch(it)))
				return rc;
		if (!garbage)
			break;
	}
	*out = &it->out;
	return RBI_OK;
}

/* Counts by type C (RBI_TYPE_COUNT of them) added to a caller's: the
   impossible ones noted. */
static void add_counts(struct rbi_heap_iter *it, uint64_t counts[RBI_TYPE_COUNT],
		       const uint64_t *c)
{
	for (unsigned t = 0; t < RBI_TYPE_COUNT; t++) {
		counts[t] += c[t];
		if (impossible_type(t))
			it->impossible += c[t];
	}
}

/* Page P's free slots from FROM counted into C: into the stats. */
static void take_free(struct rbi_heap_iter *it, const struct heap_page *p, uint64_t nfree)
{
	it->st.free += nfree;
	if (p->size >= 0)
		it->st.sizes[p->size].free += nfree;
}

/* Switch the walk to batches counted as read, in MODE: once, and never
   back to slots or to the other mode (the batches read ahead already are
   counted that way, their slots gone). */
static int count_mode(struct rbi_heap_iter *it, enum heap_count_mode mode)
{
	if (it->mode != HEAP_COUNT_NONE && it->mode != mode)
		return rbi_fail(RBI_INVAL, "the heap walk counts by %s: it cannot switch",
				it->mode == HEAP_COUNT_TYPES ? "type" : "class");
	it->mode = mode;
	rbi_heap_reader_count(it->reader, mode);
	return RBI_OK;
}

/* The start of a count in MODE (rbi_heap_iter_count, _count_classes):
   the next batch if the walk is at a batch's end; then, if the batch was
   counted as read and nothing of it was walked, its counts into COUNTS
   and *DONE: the caller has only the rest of it (a tally) to take. */
static int count_begin(struct rbi_heap_iter *it, enum heap_count_mode mode,
		       uint64_t counts[RBI_TYPE_COUNT], bool *done)
{
	int rc;

	*done = false;
	if (!it || !counts)
		return rbi_fail(RBI_INVAL, "no heap walk");
	if ((rc = count_mode(it, mode)))
		return rc;
	while (it->cur >= it->nwalk)
		if ((rc = next_batch(it)))
			return rc;
	if (!it->b->counted || it->cur != 0 || it->slot != 0)
		return RBI_OK;
	add_counts(it, counts, it->b->counts);
	it->garbage += it->b->garbage;
	for (size_t i = 0; i < it->nwalk; i++)
		if (it->b->pages[i].ok)
			take_free(it, &it->b->pages[i], it->b->pages[i].free);
	it->cur = it->nwalk;
	*done = true;
	return RBI_OK;
}

RBI_EXPORT int rbi_heap_iter_count(rbi_heap_iter *it, uint64_t counts[RBI_TYPE_COUNT])
{
	uint64_t c[RBI_TYPE_COUNT + 1] = { 0 };
	bool done;
	int rc;

	if ((rc = count_begin(it, HEAP_COUNT_TYPES, counts, &done)) || done)
		return rc;
	/* Read before the walk counted, or walked in part: its pages. */
	for (; it->cur < it->nwalk; it->cur++, it->slot = 0) {
		const struct heap_page *p = &it->b->pages[it->cur];
		uint64_t before = c[RBI_TYPE_COUNT];

		if (!p->ok || it->slot >= p->total)
			continue;
		rbi_heap_page_count(p, it->slot, c);
		it->garbage += rbi_heap_page_garbage(p, it->slot);
		take_free(it, p, c[RBI_TYPE_COUNT] - before);
	}
	add_counts(it, counts, c);
	return RBI_OK;
}

RBI_EXPORT void rbi_heap_iter_stats(rbi_heap_iter *it, struct rbi_heap_stats *out)
{
	if (!it || !out)
		return;
	*out = it->st;
}

RBI_EXPORT uint64_t rbi_heap_iter_impossible(const rbi_heap_iter *it)
{
	return it ? it->impossible : 0;
}

RBI_EXPORT uint64_t rbi_heap_iter_garbage(const rbi_heap_iter *it)
{
	return it ? it->garbage : 0;
}

RBI_EXPORT void rbi_heap_iter_free(rbi_heap_iter *it)
{
	if (!it)
		return;
	rbi_heap_reader_close(it->reader);
	free(it->cls);
	rbi_map_free(&it->cls_index);
	free(it->totals);
	rbi_map_free(&it->totals_index);
	if (it->ext_free)
		it->ext_free(it->ext);
	free(it);
}

/* The name 0.1-0.7 gave it, still exported in LIBRUBY_INTROSPECT_0.1 so
   that programs linked then keep working. */
RBI_EXPORT void rbi_heap_iter_fini(rbi_heap_iter *it) __attribute__((alias("rbi_heap_iter_free")));

/* ---- Classes ------------------------------------------------------------ */

/* Is the class or module K (an object's klass) a kind of Object, and
   what is rb_class_real(K)? */
static void class_lookup(struct rbi_heap_iter *it, struct class_entry *e)
{
	struct rbi_target *t = it->t;
	struct rbi_vm *vm = it->vm;
	uint64_t k = e->klass, flags;
	bool found_real = false, kind_of = !it->c_object;

	e->status = RBI_CORRUPT;
	for (int i = 0; i < CLASS_CHAIN_MAX; i++) {
		if (!rbi_vm_heap_p(vm, k))
			break;          /* the end of the chain */
		if (rbi_vm_obj_flags(t, vm, k, &flags))
			return;
		unsigned type = (unsigned)(flags & RBI_T_MASK);
		if (type != RBI_T_CLASS && type != RBI_T_MODULE && type != RBI_T_ICLASS) {
			rbi_fail(RBI_CORRUPT, "0x%" PRIx64 " in a class chain is no "
				 "class (type 0x%02x)", k, type);
			return;
		}
		if (!found_real && type == RBI_T_CLASS && !(flags & vm->k.fl_singleton)) {
			e->real = k;
			found_real = true;
		}
		if (k == it->c_object)
			kind_of = true;
		if (found_real && kind_of)
			break;
		if (!rbi_vm_class_super(t, vm, k, &k)) {
			rbi_fail(RBI_CORRUPT, "cannot read the superclass of 0x%" PRIx64, k);
			return;
		}
	}
	if (!found_real) {
		rbi_fail(RBI_CORRUPT, "class 0x%" PRIx64 " has no real class", e->klass);
		return;
	}
	e->status = kind_of ? RBI_OK : RBI_ITER_END;
}

/* The table's entry for KLASS, made on first sight. */
static int class_entry_of(struct rbi_heap_iter *it, uint64_t klass, struct class_entry **out)
{
	uint64_t i;

	if (it->last < it->ncls && it->cls[it->last].klass == klass) {
		*out = &it->cls[it->last];
		return RBI_OK;
	}
	if (!it->have_c_object) {
		uint64_t addr, size;
		bool tls;

		it->have_c_object = true;
		if (rbi_image_symbol(it->vm->image, "rb_cObject", &addr, &size, &tls) ||
		    tls || rbi_read_u64(it->t, addr, &it->c_object))
			it->c_object = 0;       /* then everything is a kind of Object */
	}
	if (!rbi_map_get(&it->cls_index, klass, 0, 0, &i)) {
		i = it->ncls;
		if (!RBI_GROW(it->cls, it->capcls, i + 1, 256) ||
		    rbi_map_put(&it->cls_index, klass, 0, 0, i))
			return rbi_fail(RBI_NOMEM, "out of memory");
		it->cls[it->ncls++] = (struct class_entry){ .klass = klass };
		class_lookup(it, &it->cls[i]);
	}
	it->last = i;
	*out = &it->cls[i];
	return RBI_OK;
}

int rbi_heap_iter_class_real(struct rbi_heap_iter *it, uint64_t klass, uint64_t *real)
{
	struct class_entry *e;
	int rc = class_entry_of(it, klass, &e);

	if (rc)
		return rc;
	if (e->status == RBI_CORRUPT)
		return rbi_fail(RBI_CORRUPT, "class 0x%" PRIx64 " has no real class", klass);
	*real = e->real;
	return RBI_OK;
}

/* rb_singleton_class_internal_p: a metaclass (singleton of a class)
   without a metaclass of its own is Ruby's business, not the program's. */
static bool singleton_internal(struct rbi_heap_iter *it, const struct rbi_heap_slot *s)
{
	uint64_t attached, flags, meta_attached;

	if (!rbi_vm_class_attached(it->t, it->vm, s->addr, &attached))
		return true;
	if (!rbi_vm_heap_p(it->vm, attached) ||
	    rbi_vm_obj_flags(it->t, it->vm, attached, &flags) ||
	    (flags & RBI_T_MASK) != RBI_T_CLASS)
		return false;
	/* rb_singleton_class_has_metaclass_p: METACLASS_OF(s)'s attached
	   object is s. */
	return !(rbi_vm_heap_p(it->vm, s->klass) &&
		 rbi_vm_class_attached(it->t, it->vm, s->klass, &meta_attached) &&
		 meta_attached == s->addr);
}

RBI_EXPORT int rbi_heap_object_class(rbi_heap_iter *it, const struct rbi_heap_slot *s,
				     uint64_t *klass)
{
	struct class_entry *e = NULL;
	int rc;

	if (!it || !s || !klass)
		return rbi_fail(RBI_INVAL, "no heap slot");
	/* gc.c internal_object_p */
	if (!s->flags || !s->klass || rbi_heap_type_internal(s->type))
		return RBI_ITER_END;
	if (s->type == RBI_T_CLASS && (s->flags & it->vm->k.fl_singleton) &&
	    singleton_internal(it, s))
		return RBI_ITER_END;
	if ((rc = class_entry_of(it, s->klass, &e)))
		return rc;
	if (e->status == RBI_OK)
		*klass = e->real;
	return e->status;
}

/* ---- By class ----------------------------------------------------------- */

static void class_count_add(struct rbi_heap_class *c, uint64_t count,
			    uint64_t slot_bytes, uint64_t owned)
{
	c->count += count;
	c->slot_bytes += slot_bytes;
	c->owned_bytes += owned;
}

/* COUNT objects of one klass value, of which rbi_heap_object_class said
   STATUS (and REAL), into the totals. */
static int totals_add(struct rbi_heap_iter *it, int status, uint64_t real,
		      uint64_t count, uint64_t slot_bytes, uint64_t owned)
{
	uint64_t i;

	if (status == RBI_NOMEM)
		return status;
	if (status != RBI_OK) {
		class_count_add(status == RBI_ITER_END ? &it->internal : &it->unknown,
				count, slot_bytes, owned);
		return RBI_OK;
	}
	if (!rbi_map_get(&it->totals_index, real, 0, 0, &i)) {
		i = it->ntotals;
		if (!RBI_GROW(it->totals, it->captotals, i + 1, 256) ||
		    rbi_map_put(&it->totals_index, real, 0, 0, i))
			return rbi_fail(RBI_NOMEM, "out of memory");
		it->totals[it->ntotals++] = (struct rbi_heap_class){ .klass = real };
	}
	class_count_add(&it->totals[i], count, slot_bytes, owned);
	return RBI_OK;
}

static int tally_slot(struct rbi_heap_iter *it, const struct rbi_heap_slot *s)
{
	uint64_t real = 0;
	int status = rbi_heap_object_class(it, s, &real);

	return totals_add(it, status, real, 1, s->size, s->owned);
}

/* What the thread that read B tallied, into the totals: each klass value
   decided once, singleton classes one by one. */
static int take_tally(struct rbi_heap_iter *it, const struct heap_tally *t)
{
	int rc = RBI_OK;

	class_count_add(&it->internal, t->internal.count, t->internal.slot_bytes,
			t->internal.owned);
	for (size_t i = 0; i < t->nrows && !rc; i++) {
		const struct heap_tally_row *r = &t->rows[i];
		struct class_entry *e;

		if ((rc = class_entry_of(it, r->klass, &e)))
			break;
		rc = totals_add(it, e->status, e->real, r->count, r->slot_bytes, r->owned);
	}
	for (size_t i = 0; i < t->nspecial && !rc; i++) {
		const struct heap_tally_special *sp = &t->special[i];
		const struct rbi_heap_slot s = {
			.addr = sp->addr, .flags = sp->flags, .klass = sp->klass,
			.type = RBI_T_CLASS, .size = sp->size, .owned = sp->owned,
		};

		rc = tally_slot(it, &s);
	}
	return rc;
}

RBI_EXPORT int rbi_heap_iter_count_classes(rbi_heap_iter *it, uint64_t counts[RBI_TYPE_COUNT])
{
	struct rbi_heap_slot s;
	bool done, garbage;
	int rc;

	if ((rc = count_begin(it, HEAP_COUNT_CLASSES, counts, &done)))
		return rc;
	if (done) {
		if (it->b->tally_rc)
			return rbi_fail(it->b->tally_rc, "out of memory");
		return take_tally(it, &it->b->tally);
	}
	/* Read before the walk counted, or walked in part: slot by slot. */
	while (next_in_batch(it, &s, &garbage)) {
		if (!s.flags)
			continue;
		counts[s.type]++;
		if (!garbage && (rc = tally_slot(it, &s)))
			return rc;
	}
	return RBI_OK;
}

RBI_EXPORT void rbi_heap_iter_classes(rbi_heap_iter *it, const struct rbi_heap_class **v,
				      size_t *n, struct rbi_heap_class *internal,
				      struct rbi_heap_class *unknown)
{
	if (!it)
		return;
	if (v)
		*v = it->totals;
	if (n)
		*n = it->ntotals;
	if (internal)
		*internal = it->internal;
	if (unknown)
		*unknown = it->unknown;
}

RBI_EXPORT int rbi_class_name(rbi_target *t, uint64_t klass, char *buf, size_t cap)
{
	uint64_t cut;

	return rbi_class_name_cut(t, klass, buf, cap, &cut);
}

RBI_EXPORT int rbi_class_name_cut(rbi_target *t, uint64_t klass, char *buf, size_t cap,
				  uint64_t *cut)
{
	struct rbi_vm *vm;
	uint64_t flags;
	unsigned type;
	int rc;

	if (!t || !buf || !cap || !cut)
		return rbi_fail(RBI_INVAL, "no buffer");
	buf[0] = '\0';
	*cut = 0;
	if ((rc = rbi_vm_get(t, &vm)) || (rc = rbi_vm_obj_flags(t, vm, klass, &flags)))
		return rc;
	type = (unsigned)(flags & RBI_T_MASK);
	if (type != RBI_T_CLASS && type != RBI_T_MODULE)
		return rbi_fail(RBI_CORRUPT, "0x%" PRIx64 " is not a class or module "
				"(type 0x%02x)", klass, type);
	if (rbi_vm_class_path(t, vm, klass, buf, cap, cut))
		return RBI_OK;
	/* No path read: anonymous, unless the process died under the read. */
	if (rbi_target_gone_seen(t))
		return rbi_fail_gone(t);
	/* rb_class_path of an anonymous class: "#<Class:%p>". */
	snprintf(buf, cap, "#<%s:0x%016" PRIx64 ">",
		 type == RBI_T_CLASS ? "Class" : "Module", klass);
	return RBI_OK;
}
