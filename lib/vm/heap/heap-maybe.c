/* heap-maybe.c: gc_mark_maybe's test, read from outside: is a word a used
 * slot of the heap (gc.c is_pointer_to_heap, and the slot not T_NONE,
 * T_ZOMBIE or T_MOVED)?  What the GC marks conservatively: the machine
 * stacks and registers (heap-roots.c), an ifunc's data and a memo's third
 * word (heap-imemo.c).  A slot is recognised by its page: the body is
 * aligned to HEAP_PAGE_ALIGN and starts with a pointer to its struct
 * heap_page, whose start and slot size place the slots. */
#include <stdlib.h>

#include "vm/heap/heap-pages.h"

/* Heap pages remembered (direct-mapped). */
#define PAGE_CACHE 256

struct page_entry {
	uint64_t body;          /* 0: empty */
	bool ok;                /* a page of this heap */
	uint64_t start, end;
	uint32_t slot_size;
};

struct heap_maybe {
	struct rbi_target *t;
	const struct rbi_vm *vm;
	struct heap_geometry g;
	uint32_t hdr_len;       /* bytes of a struct heap_page read */
	struct page_entry pages[PAGE_CACHE];
};

int rbi_heap_maybe_open(struct rbi_target *t, const struct rbi_vm *vm, struct heap_maybe **out)
{
	const struct rbi_layout *l = vm->layout;
	struct heap_maybe *m;

	*out = NULL;
	if (!(m = calloc(1, sizeof(*m))))
		return rbi_fail(RBI_NOMEM, "out of memory");
	*m = (struct heap_maybe){ .t = t, .vm = vm,
		.g = { .l = l, .align = vm->k.heap_page_align } };
	m->hdr_len = l->heap_page_start;
	if (l->heap_page_total_slots != RBI_ABSENT && l->heap_page_total_slots > m->hdr_len)
		m->hdr_len = l->heap_page_total_slots;
	if (l->heap_page_slot_size != RBI_ABSENT && l->heap_page_slot_size > m->hdr_len)
		m->hdr_len = l->heap_page_slot_size;
	m->hdr_len += 8;
	if (l->heap_page_start == RBI_ABSENT || l->heap_page_total_slots == RBI_ABSENT ||
	    m->hdr_len > 256 || !m->g.align || (m->g.align & (m->g.align - 1))) {
		free(m);
		return rbi_fail(RBI_NO_LAYOUT, "this Ruby's layout does not describe its heap pages");
	}
	*out = m;
	return RBI_OK;
}

void rbi_heap_maybe_close(struct heap_maybe *m)
{
	free(m);
}

static const struct page_entry *page_of(struct heap_maybe *m, uint64_t body)
{
	struct page_entry *e = &m->pages[(body / m->g.align) % PAGE_CACHE];
	uint8_t hdr[256];
	struct heap_page p = { 0 };

	if (e->body == body)
		return e;
	*e = (struct page_entry){ .body = body };
	if (rbi_read_u64(m->t, body, &p.page) || !p.page || (p.page & 7) ||
	    rbi_read(m->t, p.page, hdr, m->hdr_len) || !rbi_heap_page_parse(&m->g, &p, hdr) ||
	    p.empty || p.body != body)
		return e;
	e->ok = true;
	e->start = p.start;
	e->end = p.start + (uint64_t)p.total * p.slot_size;
	e->slot_size = p.slot_size;
	return e;
}

bool rbi_heap_maybe_slot(struct heap_maybe *m, uint64_t v)
{
	const struct page_entry *e;
	uint64_t flags;
	unsigned type;

	if (!rbi_vm_heap_p(m->vm, v))
		return false;
	e = page_of(m, v & ~(uint64_t)(m->g.align - 1));
	if (!e->ok || v < e->start || v >= e->end || (v - e->start) % e->slot_size)
		return false;
	if (rbi_read_u64(m->t, v, &flags) || !flags)
		return false;
	type = flags & RBI_T_MASK;
	return type != RBI_T_NONE && type != RBI_T_ZOMBIE && type != RBI_T_MOVED;
}
