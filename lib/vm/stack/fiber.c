/* fiber.c: every fiber of the VM (rbi_fiber_foreach).
 *
 * Ruby keeps no list of fibers.  A thread knows its root fiber
 * (th->root_fiber) and, through its execution context, the fiber it runs
 * now (th->ec->fiber_ptr), which knows the fiber that resumed it and waits
 * for it (prev), and so on: the thread's chain.  Every other fiber (one
 * parked in Fiber.yield, an external enumerator's, one never resumed) is
 * reachable only as an object: a T_DATA whose rb_data_type_t is cont.c's
 * fiber type, named "fiber", found by walking the heap.
 *
 * A fiber embeds its own execution context (cont.saved_ec), which points
 * back at the fiber (fiber_ptr) and at the thread the fiber belongs to
 * (thread_ptr): that back-pointer is the check every candidate must pass,
 * and the context is what its frames are read from, as a thread's are
 * from th->ec.
 *
 * The members after the embedded rb_context_t (prev, status) sit after
 * its rb_jmpbuf_t, whose size is the build's choice: 40 bytes with
 * __builtin_setjmp, 200 with glibc's jmp_buf (Debian's 3.3 and 3.4 build
 * with the latter where a plain build of the same source has the former).
 * A built-in table cannot know which, so the offset is checked on the
 * threads' current fibers, which must be RESUMED (and a root fiber that
 * runs has resumed no one), and moved by that difference if it must. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "util/table.h"
#include "vm/stack/stack.h"

/* Resumes nested deeper than this are a loop in a torn chain. */
#define CHAIN_MAX 100000u
/* Fibers kept for delivery (found beyond it are only counted). */
#define FIBERS_KEPT_MAX (1u << 22)
/* Fresh looks at a live process's running fibers (see choose_shift). */
#define LIVE_ATTEMPTS 20
/* Bytes of an rb_fiber_t read at once. */
#define FIBER_BYTES_MAX 2048u
/* sizeof(jmp_buf) - 5 words of __builtin_setjmp (x86-64 glibc). */
#define JMPBUF_DIFFERENCE 160

/* An rb_data_type_t, as far as the search knows it. */
enum { TYPE_FIBER = 1, TYPE_OTHER = 2 };

struct fthread {
	uint64_t thread, root_fiber;
	unsigned number;
};

struct fsearch {
	struct rbi_target *t;
	const struct rbi_layout *l;
	struct fthread *th;
	size_t nth, capth;
	struct rbi_fiber *v;
	size_t n, cap;
	size_t found;
	struct rbi_map seen;            /* rb_fiber_t -> 1 */
	struct rbi_map types;           /* rb_data_type_t -> TYPE_* */
	char **labels;                  /* enumerator labels made, to free */
	size_t nlabels, caplabels;
	int32_t shift;                  /* added to the offsets after the
					   rb_context_t (see the top) */
};

RBI_EXPORT const char *rbi_fiber_status_name(rbi_fiber_status s)
{
	switch (s) {
	case RBI_FIBER_CREATED: return "created";
	case RBI_FIBER_RESUMED: return "resumed";
	case RBI_FIBER_SUSPENDED: return "suspended";
	case RBI_FIBER_TERMINATED: return "terminated";
	default: return "unknown";
	}
}

static bool has_fiber_layout(const struct rbi_layout *l)
{
	return l->fiber_size != RBI_ABSENT && l->fiber_size <= FIBER_BYTES_MAX &&
	       l->fiber_saved_ec != RBI_ABSENT && l->fiber_prev != RBI_ABSENT &&
	       l->fiber_status != RBI_ABSENT && l->fiber_self != RBI_ABSENT &&
	       l->ec_fiber_ptr != RBI_ABSENT && l->ec_thread_ptr != RBI_ABSENT &&
	       l->thread_root_fiber != RBI_ABSENT && l->rtypeddata_type != RBI_ABSENT &&
	       l->rtypeddata_typed_flag != RBI_ABSENT && l->rtypeddata_data != RBI_ABSENT;
}

static uint64_t word_at(const uint8_t *b, uint32_t off)
{
	uint64_t v;

	memcpy(&v, b + off, 8);
	return v;
}

/* The fiber at ADDR into *F (its own fields only), if it is one: its
   execution context points back at it. */
static bool read_fiber(struct fsearch *s, uint64_t addr, struct rbi_fiber *f)
{
	const struct rbi_layout *l = s->l;
	uint8_t b[FIBER_BYTES_MAX + JMPBUF_DIFFERENCE];
	uint32_t unit, status = l->fiber_status + (uint32_t)(s->shift * 8);

	if (!addr || (addr & 7) ||
	    rbi_read(s->t, addr, b, (size_t)((int64_t)l->fiber_size + s->shift)))
		return false;
	if (l->fiber_saved_ec + l->ec_fiber_ptr + 8 > l->fiber_size ||
	    l->fiber_saved_ec + l->ec_thread_ptr + 8 > l->fiber_size ||
	    word_at(b, l->fiber_saved_ec + l->ec_fiber_ptr) != addr)
		return false;
	memcpy(&unit, b + status / 8, 4);
	*f = (struct rbi_fiber){
		.fiber = addr,
		.self = word_at(b, l->fiber_self),
		.ec = addr + l->fiber_saved_ec,
		.thread = word_at(b, l->fiber_saved_ec + l->ec_thread_ptr),
		.status = (rbi_fiber_status)((unit >> (status % 8)) & 3),
		.resumed_by = word_at(b, (uint32_t)((int64_t)l->fiber_prev + s->shift)),
		.chain = -1,
	};
	/* A root fiber gets its Fiber object only when Ruby code asks for it
	   (Fiber.current): until then its self is nil or 0. */
	if ((f->self & 7) || f->self < 4096)
		f->self = 0;
	return true;
}

static const struct fthread *thread_of(const struct fsearch *s, uint64_t thread)
{
	for (size_t i = 0; i < s->nth; i++)
		if (s->th[i].thread == thread)
			return &s->th[i];
	return NULL;
}

/* Keep F, seen for the first time. */
static int add(struct fsearch *s, struct rbi_fiber *f)
{
	const struct fthread *th = thread_of(s, f->thread);
	int rc;

	if ((rc = rbi_map_put(&s->seen, f->fiber, 0, 1, 1)))
		return rc;
	s->found++;
	if (s->n >= FIBERS_KEPT_MAX)
		return RBI_OK;
	if (!RBI_GROW(s->v, s->cap, s->n + 1, 64))
		return rbi_fail(RBI_NOMEM, "out of memory");
	f->thread_number = th ? th->number : 0;
	f->root = th && th->root_fiber == f->fiber;
	s->v[s->n++] = *f;
	return RBI_OK;
}

static bool seen(const struct fsearch *s, uint64_t fiber)
{
	uint64_t v;

	return rbi_map_get(&s->seen, fiber, 0, 1, &v);
}

static int thread_cb(const struct rbi_thread *th, void *arg)
{
	struct fsearch *s = arg;
	uint64_t root = 0;

	if (th->error || !th->thread)
		return RBI_OK;
	if (!RBI_GROW(s->th, s->capth, s->nth + 1, 16))
		return rbi_fail(RBI_NOMEM, "out of memory");
	rbi_read_u64(s->t, th->thread + s->l->thread_root_fiber, &root);
	s->th[s->nth++] = (struct fthread){
		.thread = th->thread, .root_fiber = root, .number = th->number,
	};
	return RBI_OK;
}

/* The fiber TH runs now into *AT (0 if none), read afresh: a thread that
   switches fibers has moved th->ec since the threads were listed. */
static void current_fiber(struct fsearch *s, const struct fthread *th, uint64_t *at)
{
	uint64_t ec = 0;

	*at = 0;
	if (!rbi_read_u64(s->t, th->thread + s->l->thread_ec, &ec) && ec && !(ec & 7))
		rbi_read_u64(s->t, ec + s->l->ec_fiber_ptr, at);
}

/* Whether the fibers the threads run now read as running (RESUMED) with
   the offsets shifted by S->shift; a root fiber among them resumed by
   no one.  False when no thread has a fiber to check. */
static bool shift_fits(struct fsearch *s)
{
	size_t checked = 0;

	for (size_t i = 0; i < s->nth; i++) {
		const struct fthread *th = &s->th[i];
		struct rbi_fiber f;
		uint64_t at;

		current_fiber(s, th, &at);
		if (!at)
			continue;
		if (!read_fiber(s, at, &f) || f.status != RBI_FIBER_RESUMED ||
		    (at == th->root_fiber && f.resumed_by))
			return false;
		checked++;
	}
	return checked > 0;
}

/* A live thread that switches fibers can be caught between reading which
   fiber it runs and reading that fiber, which has yielded meanwhile: the
   check is made again on fresh reads, this many times. */
static int choose_shift(struct fsearch *s)
{
	static const int32_t shifts[] = { 0, JMPBUF_DIFFERENCE, -JMPBUF_DIFFERENCE };

	for (unsigned attempt = 0; attempt < (rbi_target_is_live(s->t) ? LIVE_ATTEMPTS : 1); attempt++) {
		rbi_target_forget(s->t);
		for (size_t i = 0; i < RBI_ARRAY_SIZE(shifts); i++) {
			s->shift = shifts[i];
			if ((int64_t)s->l->fiber_prev + s->shift > 0 && shift_fits(s))
				return RBI_OK;
		}
	}
	return rbi_fail(RBI_LAYOUT, "fibers: no thread's current fiber reads as running with "
			"the layout's offsets (%s): give this Ruby's DWARF",
			s->l->source ? s->l->source : "table");
}

/* TH's chain: the fiber it runs now, the one that resumed it, ...; then
   its root fiber if the chain did not reach it.  th->root_fiber is set
   only once Ruby code asked for the root's Fiber object (Fiber.current in
   it, a fiber made): until then the thread runs in a root fiber it knows
   only through its execution context, the end of its chain. */
static int add_chain(struct fsearch *s, const struct fthread *th)
{
	struct rbi_fiber f;
	uint64_t at = 0;
	size_t first = s->n;
	int rc;

	current_fiber(s, th, &at);
	for (unsigned depth = 0; at && depth < CHAIN_MAX && !seen(s, at); depth++) {
		if (!read_fiber(s, at, &f) || f.thread != th->thread)
			break;
		f.chain = (int)depth;
		f.current = depth == 0;
		if ((rc = add(s, &f)))
			return rc;
		at = f.resumed_by;
	}
	if (!th->root_fiber) {
		if (s->n > first && !s->v[s->n - 1].resumed_by)
			s->v[s->n - 1].root = 1;
		return RBI_OK;
	}
	if (!seen(s, th->root_fiber) && read_fiber(s, th->root_fiber, &f) &&
	    f.thread == th->thread)
		return add(s, &f);
	return RBI_OK;
}

/* Whether TYPE is the fiber's rb_data_type_t: its wrap_struct_name. */
static bool fiber_type(struct fsearch *s, uint64_t type)
{
	char name[8];
	uint64_t v;

	if (rbi_map_get(&s->types, type, 0, 1, &v))
		return v == TYPE_FIBER;
	v = !rbi_vm_data_type_name(s->t, type, name, sizeof(name)) && !strcmp(name, "fiber") ?
	    TYPE_FIBER : TYPE_OTHER;
	rbi_map_put(&s->types, type, 0, 1, v);
	return v == TYPE_FIBER;
}

/* A heap slot that is a Fiber object: its fiber, if not seen yet. */
static int add_object(struct fsearch *s, const struct rbi_heap_slot *slot)
{
	uint64_t type, fiber;
	struct rbi_fiber f;
	bool embedded;

	if (!rbi_vm_typed_data(s->l, slot, &type, &fiber, &embedded) || embedded ||
	    !fiber_type(s, type))
		return RBI_OK;
	if (seen(s, fiber) || !read_fiber(s, fiber, &f) || f.self != slot->addr)
		return RBI_OK;
	return add(s, &f);
}

static int add_heap(struct fsearch *s, int *approximate)
{
	const struct rbi_heap_slot *slot;
	struct rbi_heap_stats hs;
	rbi_heap_iter *it;
	int rc = rbi_heap_iter_init(s->t, 0, &it);

	while (rc == RBI_OK && (rc = rbi_heap_iter_next(it, &slot)) == RBI_OK)
		rc = add_object(s, slot);
	if (rc == RBI_ITER_END)
		rc = RBI_OK;
	if (it) {
		rbi_heap_iter_stats(it, &hs);
		*approximate = hs.moved;
		rbi_heap_iter_free(it);
	}
	return rc;
}

/* Fibers found in the heap: by their thread's place (thread numbers
   follow rbi_thread_foreach's order), threads gone last, then in heap
   order (kept in INDEX meanwhile). */
static int by_thread(const void *a, const void *b)
{
	const struct rbi_fiber *x = a, *y = b;
	unsigned ox = x->thread_number ? x->thread_number : UINT_MAX;
	unsigned oy = y->thread_number ? y->thread_number : UINT_MAX;

	if (ox != oy)
		return ox < oy ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* ---- external enumerators ------------------------------------------------ */

/* The two outermost frames' labels of a walk (innermost first). */
struct outer2 {
	char *outer, *inner;    /* the outermost, the one inside it */
	int outer_kind;
	int rc;
};

static int outer_cb(const struct rbi_frame *f, void *arg)
{
	struct outer2 *o = arg;

	free(o->inner);
	o->inner = o->outer;
	o->outer = f->label ? strdup(f->label) : NULL;
	o->outer_kind = f->kind;
	return RBI_OK;
}

/* F->enumerator, if F's outermost frame is the C method Enumerator#each
   (what Enumerator#next's fiber starts in: enumerator.c, next_i). */
static int label_enumerator(struct fsearch *s, struct rbi_fiber *f)
{
	struct outer2 o = { 0 };
	int rc = RBI_OK;

	if (rbi_fiber_frame_foreach(s->t, f, 0, outer_cb, &o) == RBI_OK &&
	    o.outer_kind == RBI_FRAME_CFUNC && o.outer && o.inner &&
	    !strcmp(o.outer, "Enumerator#each")) {
		if (!RBI_GROW(s->labels, s->caplabels, s->nlabels + 1, 16)) {
			rc = rbi_fail(RBI_NOMEM, "out of memory");
		} else {
			s->labels[s->nlabels++] = o.inner;
			f->enumerator = o.inner;
			o.inner = NULL;
		}
	}
	free(o.outer);
	free(o.inner);
	return rc;
}

static void free_search(struct fsearch *s)
{
	for (size_t i = 0; i < s->nlabels; i++)
		free(s->labels[i]);
	free(s->labels);
	free(s->th);
	free(s->v);
	rbi_map_free(&s->seen);
	rbi_map_free(&s->types);
}

RBI_EXPORT int rbi_fiber_foreach(rbi_target *t, size_t max_fibers, rbi_fiber_fn fn, void *arg,
				 struct rbi_fiber_stats *stats)
{
	struct fsearch s = { .t = t };
	struct rbi_fiber_stats st = { .size = sizeof(st) };
	struct rbi_vm *vm;
	size_t chains;
	int rc;

	if (!t || !fn)
		return rbi_fail(RBI_INVAL, "no target or callback");
	if ((rc = rbi_vm_get(t, &vm)))
		return rc;
	s.l = vm->layout;
	if (!has_fiber_layout(s.l))
		return rbi_fail(RBI_NO_LAYOUT, "fibers: the layout of Ruby %s (%s) does not "
				"describe them: give its DWARF (install its debug symbols, "
				"or --debug-dir)", vm->info.version, vm->layout_desc);
	rc = rbi_thread_foreach(t, thread_cb, &s);
	if (rc == RBI_OK)
		rc = choose_shift(&s);
	for (size_t i = 0; rc == RBI_OK && i < s.nth; i++)
		rc = add_chain(&s, &s.th[i]);
	chains = s.n;
	if (rc == RBI_OK)
		rc = add_heap(&s, &st.approximate);
	if (rc == RBI_OK) {
		for (size_t i = chains; i < s.n; i++)
			s.v[i].index = i;
		qsort(s.v + chains, s.n - chains, sizeof(*s.v), by_thread);
	}
	st.found = s.found;
	for (size_t i = 0; rc == RBI_OK && i < s.n && (!max_fibers || i < max_fibers); i++) {
		s.v[i].index = i;
		if (s.v[i].chain < 0 && s.v[i].status == RBI_FIBER_SUSPENDED)
			rc = label_enumerator(&s, &s.v[i]);
		if (rc)
			break;
		st.delivered++;
		rc = fn(&s.v[i], arg);
	}
	if (stats)
		RBI_COPY_OUT(stats, &st);
	free_search(&s);
	return rc;
}

int rbi_vm_fiber_shift(struct rbi_target *t, int32_t *shift)
{
	struct fsearch s = { .t = t };
	struct rbi_vm *vm;
	int rc;

	*shift = 0;
	if ((rc = rbi_vm_get(t, &vm)))
		return rc;
	s.l = vm->layout;
	if (!has_fiber_layout(s.l))
		return rbi_fail(RBI_NO_LAYOUT, "fibers: the layout does not describe them");
	if (!(rc = rbi_thread_foreach(t, thread_cb, &s)) && !(rc = choose_shift(&s)))
		*shift = s.shift;
	free_search(&s);
	return rc;
}

RBI_EXPORT void rbi_fiber_as_thread(const struct rbi_fiber *f, struct rbi_thread *out)
{
	*out = (struct rbi_thread){
		.number = f->thread_number, .thread = f->thread, .ec = f->ec,
		.status = RBI_THREAD_RUNNABLE, .error_msg = "",
	};
}

RBI_EXPORT int rbi_fiber_frame_foreach(rbi_target *t, const struct rbi_fiber *f,
				       size_t max_frames, rbi_frame_fn fn, void *arg)
{
	struct rbi_thread th;

	if (!f)
		return rbi_fail(RBI_INVAL, "no fiber");
	rbi_fiber_as_thread(f, &th);
	return rbi_frame_foreach(t, &th, max_frames, fn, arg);
}
