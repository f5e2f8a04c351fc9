/* test-heap.c: the heap walk's public API on the bundled example core
 * (testdata/cores, Debian's Ruby 3.1): the two ways to count agree,
 * slot by slot (rbi_heap_iter_next) and by batch (rbi_heap_iter_count),
 * also when a walk switches from the first to the second, and agree with
 * the counts the core's Ruby recorded; so do the tallies by class, slot by
 * slot (rbi_heap_object_class) and by batch (rbi_heap_iter_count_classes);
 * a walk that counts refuses to go on slot by slot or to count the other
 * way; a Ruby before object shapes has none to list and no shape ids; a
 * Ruby without objspace gives no object an allocation site; objects with
 * generic instance variables get their references (their table found in
 * the stripped libruby's data), and a slot given FL_EXIVAR that is not in
 * the table leaves its references unknown, or, seen first, the table not
 * found and every such object's references unknown, never a wrong table.
 * st_memsize as st.c's table of features has it, without a core.
 * TAP output. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "ruby-introspect.h"
#include "vm/vm.h"
#include "example-core.h"
#include "tap.h"

/* The "count TYPE N" records of the truth file the core's Ruby wrote. */
static bool truth_count(const char *type, uint64_t *n)
{
	char path[4096], line[512], key[64];
	unsigned long long v;
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "%s/testdata/cores/ruby-3.1-threads.truth", RBI_SRCDIR);
	if (!(f = fopen(path, "r")))
		return false;
	while (!found && fgets(line, sizeof(line), f))
		if (sscanf(line, "count\t%63s\t%llu", key, &v) == 2 && !strcmp(key, type)) {
			*n = v;
			found = true;
		}
	fclose(f);
	return found;
}

/* Walk T's heap: the first NEXT slots one by one, then the rest by batch
   (NEXT < 0: all one by one).  Counts by type into C, free slots into
   C[RBI_TYPE_COUNT]; *ST: the walk's stats. */
static int walk(rbi_target *t, long next, uint64_t c[RBI_TYPE_COUNT + 1],
		struct rbi_heap_stats *st)
{
	const struct rbi_heap_slot *s;
	rbi_heap_iter *it;
	int rc;

	memset(c, 0, (RBI_TYPE_COUNT + 1) * sizeof(*c));
	if ((rc = rbi_heap_iter_init(t, RBI_HEAP_FREE_SLOTS, &it)))
		return rc;
	for (long i = 0; next < 0 || i < next; i++) {
		if ((rc = rbi_heap_iter_next(it, &s)))
			break;
		c[s->flags ? s->type : RBI_TYPE_COUNT]++;
	}
	if (next >= 0 && !rc)
		while ((rc = rbi_heap_iter_count(it, c)) == RBI_OK)
			;
	rbi_heap_iter_stats(it, st);
	rbi_heap_iter_free(it);
	if (rc != RBI_ITER_END)
		return rc;
	if (next >= 0)  /* rbi_heap_iter_count keeps free slots in the stats */
		c[RBI_TYPE_COUNT] = st->free;
	return RBI_OK;
}

static bool same(const uint64_t *a, const uint64_t *b)
{
	return memcmp(a, b, (RBI_TYPE_COUNT + 1) * sizeof(*a)) == 0;
}

static void check_counts(rbi_target *t)
{
	uint64_t by_slot[RBI_TYPE_COUNT + 1], by_batch[RBI_TYPE_COUNT + 1];
	uint64_t mixed[RBI_TYPE_COUNT + 1], want;
	struct rbi_heap_stats st;
	static const struct { const char *name; unsigned type; } types[] = {
		{ "T_OBJECT", 0x01 }, { "T_CLASS", 0x02 }, { "T_MODULE", 0x03 },
		{ "T_FLOAT", 0x04 }, { "T_REGEXP", 0x06 }, { "T_SYMBOL", 0x14 },
	};

	if (!check(walk(t, -1, by_slot, &st) == RBI_OK, "walk slot by slot"))
		return;
	ok(st.slots > 10000 && !st.moved && st.pages_done == st.pages,
	   "the whole heap of a core, unmoved (%llu slots, %llu pages)",
	   (unsigned long long)st.slots, (unsigned long long)st.pages);
	if (truth_count("TOTAL", &want))
		ok(st.slots == want, "TOTAL %llu as the core's Ruby counted (%llu)",
		   (unsigned long long)st.slots, (unsigned long long)want);
	/* Types the truth writer does not allocate (example-core.sh says why
	   the others move a little). */
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (truth_count(types[i].name, &want))
			ok(by_slot[types[i].type] == want, "%s %llu as the core's Ruby counted (%llu)",
			   types[i].name, (unsigned long long)by_slot[types[i].type],
			   (unsigned long long)want);
	if (check(walk(t, 0, by_batch, &st) == RBI_OK, "walk by batch"))
		ok(same(by_slot, by_batch), "counted by batch as slot by slot");
	/* Switching inside the first batch (of 16 pages of 408 slots), and
	   inside later ones. */
	static const long switch_at[] = { 7, 9000, 15000 };

	for (size_t i = 0; i < sizeof(switch_at) / sizeof(switch_at[0]); i++)
		if (check(walk(t, switch_at[i], mixed, &st) == RBI_OK,
			  "%ld slots one by one, then by batch", switch_at[i]))
			ok(same(by_slot, mixed), "%ld slots one by one, then by batch: same counts",
			   switch_at[i]);
}

/* A tally by class: rows sorted by class, and the internal and unknown
   ones. */
struct tally {
	struct rbi_heap_class *v;
	size_t n;
	struct rbi_heap_class internal, unknown;
	uint64_t types[RBI_TYPE_COUNT];
};

static int cmp_klass(const void *a, const void *b)
{
	const struct rbi_heap_class *x = a, *y = b;

	return x->klass < y->klass ? -1 : x->klass > y->klass;
}

static void tally_add(struct rbi_heap_class *c, uint64_t klass, const struct rbi_heap_slot *s)
{
	c->klass = klass;
	c->count++;
	c->slot_bytes += s->size;
	c->owned_bytes += s->owned;
}

/* Slot by slot for the first NEXT slots (all if NEXT < 0), then by batch. */
static int tally_walk(rbi_target *t, long next, struct tally *out)
{
	const struct rbi_heap_slot *s;
	const struct rbi_heap_class *v;
	struct tally slots = { 0 };
	rbi_heap_iter *it;
	size_t n;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = rbi_heap_iter_init(t, 0, &it)))
		return rc;
	for (long i = 0; next < 0 || i < next; i++) {
		uint64_t klass = 0;
		int r;

		if ((rc = rbi_heap_iter_next(it, &s)))
			break;
		out->types[s->type]++;
		r = rbi_heap_object_class(it, s, &klass);
		if (r == RBI_OK) {
			size_t j = 0;

			while (j < slots.n && slots.v[j].klass != klass)
				j++;
			if (j == slots.n) {
				slots.v = realloc(slots.v, ++slots.n * sizeof(*slots.v));
				memset(&slots.v[j], 0, sizeof(*slots.v));
			}
			tally_add(&slots.v[j], klass, s);
		} else {
			tally_add(r == RBI_ITER_END ? &slots.internal : &slots.unknown, 0, s);
		}
	}
	if (next >= 0 && !rc)
		while ((rc = rbi_heap_iter_count_classes(it, out->types)) == RBI_OK)
			;
	/* The batches' tally plus what was walked slot by slot. */
	rbi_heap_iter_classes(it, &v, &n, &out->internal, &out->unknown);
	out->v = calloc(n + slots.n + 1, sizeof(*out->v));
	if (n)
		memcpy(out->v, v, n * sizeof(*v));
	for (size_t i = 0; i < slots.n; i++) {
		size_t j = 0;

		while (j < n && out->v[j].klass != slots.v[i].klass)
			j++;
		if (j == n)
			out->v[n++].klass = slots.v[i].klass;
		out->v[j].count += slots.v[i].count;
		out->v[j].slot_bytes += slots.v[i].slot_bytes;
		out->v[j].owned_bytes += slots.v[i].owned_bytes;
	}
	out->n = n;
	qsort(out->v, n, sizeof(*out->v), cmp_klass);
	out->internal.count += slots.internal.count;
	out->internal.slot_bytes += slots.internal.slot_bytes;
	out->internal.owned_bytes += slots.internal.owned_bytes;
	out->unknown.count += slots.unknown.count;
	free(slots.v);
	rbi_heap_iter_free(it);
	return rc == RBI_ITER_END ? RBI_OK : rc;
}

static bool same_tally(const struct tally *a, const struct tally *b)
{
	return a->n == b->n && !memcmp(a->v, b->v, a->n * sizeof(*a->v)) &&
	       !memcmp(&a->internal, &b->internal, sizeof(a->internal)) &&
	       !memcmp(&a->unknown, &b->unknown, sizeof(a->unknown)) &&
	       !memcmp(a->types, b->types, sizeof(a->types));
}

static void check_classes(rbi_target *t)
{
	struct tally by_slot, by_batch;
	static const long switch_at[] = { 0, 7, 9000, 15000 };
	uint64_t strings = 0;

	if (!check(tally_walk(t, -1, &by_slot) == RBI_OK, "tally by class, slot by slot"))
		return;
	for (size_t i = 0; i < by_slot.n; i++)
		strings += by_slot.v[i].owned_bytes;
	ok(by_slot.n > 20 && by_slot.internal.count > 1000 && by_slot.unknown.count == 0 &&
	   strings > 0, "%zu classes, %llu internal objects, none unknown, owned bytes seen",
	   by_slot.n, (unsigned long long)by_slot.internal.count);
	for (size_t i = 0; i < sizeof(switch_at) / sizeof(switch_at[0]); i++) {
		if (!check(tally_walk(t, switch_at[i], &by_batch) == RBI_OK,
			   "%ld slots one by one, then tallied by batch", switch_at[i]))
			continue;
		ok(same_tally(&by_slot, &by_batch),
		   "%ld slots one by one, then by batch: every class's count, slot and "
		   "owned bytes as slot by slot", switch_at[i]);
		free(by_batch.v);
	}
	free(by_slot.v);
}

typedef int count_fn(rbi_heap_iter *it, uint64_t counts[RBI_TYPE_COUNT]);

/* A walk that counted one way (FIRST) refuses to count the other
   (SECOND). */
static void check_no_switch(rbi_target *t, count_fn *first, const char *first_name,
			    count_fn *second, const char *second_name)
{
	uint64_t c[RBI_TYPE_COUNT] = { 0 };
	rbi_heap_iter *it;

	if (!check(rbi_heap_iter_init(t, 0, &it) == RBI_OK, "start a walk"))
		return;
	check(first(it, c) == RBI_OK, "%s: a batch", first_name);
	ok(second(it, c) == RBI_INVAL, "%s after %s: RBI_INVAL (%s)", second_name, first_name,
	   rbi_errmsg());
	rbi_heap_iter_free(it);
}

/* A walk counts one way: by type or by class. */
static void check_one_way(rbi_target *t)
{
	check_no_switch(t, rbi_heap_iter_count_classes, "rbi_heap_iter_count_classes",
			rbi_heap_iter_count, "rbi_heap_iter_count");
	check_no_switch(t, rbi_heap_iter_count, "rbi_heap_iter_count",
			rbi_heap_iter_count_classes, "rbi_heap_iter_count_classes");
}

/* Once a walk counts, its batches keep no slots: next must refuse. */
static void check_next_after_count(rbi_target *t)
{
	uint64_t c[RBI_TYPE_COUNT] = { 0 };
	const struct rbi_heap_slot *s;
	rbi_heap_iter *it;

	if (!check(rbi_heap_iter_init(t, 0, &it) == RBI_OK, "start a walk"))
		return;
	check(rbi_heap_iter_count(it, c) == RBI_OK, "count a batch");
	ok(rbi_heap_iter_next(it, &s) == RBI_INVAL && strstr(rbi_errmsg(), "counting"),
	   "rbi_heap_iter_next after rbi_heap_iter_count: RBI_INVAL (%s)", rbi_errmsg());
	rbi_heap_iter_free(it);
}

/* ---- A dying process ---------------------------------------------------- */

/* The core served as a live process would be: reads from two threads at
   once (so a walk reads ahead on a second thread), and gone after
   READS_LEFT batched reads (-1: never); once gone, every read fails. */
struct dying {
	const struct rbi_mem_ops *ops;
	void *be;
	pthread_mutex_t mu;     /* the core's backend is read from one thread */
	int reads_left;
	int reads;              /* batched reads served */
};

static int dying_read(void *be, uint64_t addr, void *buf, size_t len, size_t *nread)
{
	struct dying *d = be;
	int rc;

	pthread_mutex_lock(&d->mu);
	if (d->reads_left == 0) {
		*nread = 0;
		rc = rbi_fail(RBI_GONE, "process 1 has exited (the test's doing)");
	} else {
		rc = d->ops->read(d->be, addr, buf, len, nread);
	}
	pthread_mutex_unlock(&d->mu);
	return rc;
}

static int dying_read_batch(void *be, struct rbi_iov *iov, size_t n)
{
	struct dying *d = be;
	int rc = RBI_OK;

	pthread_mutex_lock(&d->mu);
	if (d->reads_left == 0) {
		rc = rbi_fail(RBI_GONE, "process 1 has exited (the test's doing)");
	} else {
		d->reads_left -= d->reads_left > 0;
		d->reads++;
		for (size_t i = 0; i < n; i++) {
			iov[i].status = d->ops->read(d->be, iov[i].addr, iov[i].buf, iov[i].len,
						     &iov[i].nread);
			if (iov[i].status != RBI_OK && iov[i].status != RBI_PARTIAL &&
			    iov[i].status != RBI_UNMAPPED) {
				rc = iov[i].status;
				break;
			}
		}
	}
	pthread_mutex_unlock(&d->mu);
	return rc;
}

static int dying_region(void *be, size_t index, struct rbi_region *out)
{
	struct dying *d = be;

	return d->ops->region(d->be, index, out);
}

static int dying_open_file(void *be, const char *path)
{
	struct dying *d = be;

	return d->ops->open_file ? d->ops->open_file(d->be, path) : open(path, O_RDONLY | O_CLOEXEC);
}

static void dying_close(void *be)
{
	struct dying *d = be;

	d->ops->close(d->be);
	pthread_mutex_destroy(&d->mu);
	free(d);
}

static const struct rbi_mem_ops dying_ops = {
	.size = sizeof(struct rbi_mem_ops),
	.flags = RBI_MEM_CONCURRENT,
	.read = dying_read,
	.read_batch = dying_read_batch,
	.region = dying_region,
	.open_file = dying_open_file,
	.close = dying_close,
};

static rbi_target *open_dying(const char *core, int reads_left, struct dying **out)
{
	struct dying *d = calloc(1, sizeof(*d));
	struct rbi_diag diag_ = { 0 };
	rbi_target *t = NULL;
	pid_t pid;

	if (!d)
		return NULL;
	if (rbi_mem_core_open(core, NULL, &diag_, &pid, &d->ops, &d->be)) {
		rbi_diag_free(&diag_);
		free(d);
		return NULL;
	}
	rbi_diag_free(&diag_);
	pthread_mutex_init(&d->mu, NULL);
	d->reads_left = reads_left;
	if (rbi_target_open_ops(&dying_ops, d, NULL, &t)) {
		dying_close(d);
		return NULL;
	}
	*out = d;
	return t;
}

/* Counted with a second reading thread: as from the core itself.  A
   process that dies at any point of a walk ends it with RBI_GONE (not a
   hang, not counts), whichever thread's read finds it gone. */
static void check_dying(const char *core, rbi_target *plain)
{
	uint64_t want[RBI_TYPE_COUNT + 1], got[RBI_TYPE_COUNT + 1];
	struct rbi_heap_stats st;
	struct dying *d;
	rbi_target *t;
	int rc, reads, bad = 0, tried = 0;

	if (!check(walk(plain, 0, want, &st) == RBI_OK, "walk the core by batch") ||
	    !check((t = open_dying(core, -1, &d)) != NULL, "the core as a live process"))
		return;
	rc = walk(t, 0, got, &st);
	reads = d->reads;
	ok(rc == RBI_OK && same(want, got) && !st.moved,
	   "read on two threads (%d batched reads): the core's counts", reads);
	rbi_target_free(t);
	for (int left = 0; left < reads; left++, tried++) {
		if (!(t = open_dying(core, left, &d))) {
			bad++;
			continue;
		}
		rc = walk(t, 0, got, &st);
		if (rc != RBI_GONE || !strstr(rbi_errmsg(), "has exited")) {
			diag("gone after %d batched reads: %s (%s)", left, rbi_strerror(rc),
			     rc ? rbi_errmsg() : st.moved_why);
			bad++;
		}
		rbi_target_free(t);
	}
	ok(bad == 0 && tried > 0, "gone after 0 to %d of them: every walk ends with RBI_GONE",
	   reads - 1);
}

/* A process that dies after a walk by class, before its classes are
   named: each name is the one the core gives (read before it died) or
   RBI_GONE; never an anonymous "#<Class:0x...>" for a class that has a
   name. */
static void check_names_after_death(const char *core, rbi_target *plain)
{
	struct tally tal;
	struct dying *d;
	rbi_target *t;
	char want[512], got[512];
	size_t gone = 0, named = 0, bad = 0;

	if (!check((t = open_dying(core, -1, &d)) != NULL, "the core as a live process"))
		return;
	if (!check(tally_walk(t, 0, &tal) == RBI_OK, "tally by class")) {
		rbi_target_free(t);
		return;
	}
	pthread_mutex_lock(&d->mu);
	d->reads_left = 0;
	pthread_mutex_unlock(&d->mu);
	for (size_t i = 0; i < tal.n; i++) {
		int rc = rbi_class_name(t, tal.v[i].klass, got, sizeof(got));

		if (rbi_class_name(plain, tal.v[i].klass, want, sizeof(want)) != RBI_OK) {
			bad++;
			continue;
		}
		if (rc == RBI_GONE && strstr(rbi_errmsg(), "has exited")) {
			gone++;
		} else if (rc == RBI_OK && !strcmp(got, want)) {
			named++;
		} else {
			diag("class 0x%llx: %s \"%s\" (the core: \"%s\")",
			     (unsigned long long)tal.v[i].klass, rbi_strerror(rc), got, want);
			bad++;
		}
	}
	ok(bad == 0 && gone > 0, "%zu classes named after the process died: %zu RBI_GONE, "
	   "%zu from bytes read before, none anonymous", tal.n, gone, named);
	free(tal.v);
	rbi_target_free(t);
}

/* The first used T_OBJECT slot of T's heap, its address and flags. */
static bool first_object(rbi_target *t, uint64_t *addr, uint64_t *flags)
{
	const struct rbi_heap_slot *s;
	rbi_heap_iter *it;
	bool found = false;

	if (rbi_heap_iter_init(t, 0, &it))
		return false;
	while (!found && rbi_heap_iter_next(it, &s) == RBI_OK)
		if (s->type == RBI_T_OBJECT) {
			*addr = s->addr;
			*flags = s->flags;
			found = true;
		}
	rbi_heap_iter_free(it);
	return found;
}

/* A core whose heap holds a used slot of type T_NONE (its flags' type
   bits cleared, the others kept): counted under T_NONE, so the counts
   still add up to TOTAL, and the walk says they are approximate, and why;
   `rbinspect CORE objects` shows T_NONE and the note.  A value the VM
   cannot have is no success: objects, objects --by-class and heap-dump
   exit 8 and say so on standard error. */
static void check_impossible_type(const char *core, rbi_target *plain)
{
	static const char copy_tmpl[] = "/tmp/rbi-test-heap-none.XXXXXX";
	char copy[sizeof(copy_tmpl)];
	uint64_t want[RBI_TYPE_COUNT + 1], got[RBI_TYPE_COUNT + 1], addr = 0, flags = 0, sum = 0;
	static char out[65536], err[65536];
	struct rbi_heap_stats st;
	rbi_target *t;
	int fd, rc;

	memcpy(copy, copy_tmpl, sizeof(copy));
	if (!check(walk(plain, 0, want, &st) == RBI_OK && !st.moved, "the core's counts, exact") ||
	    !check(first_object(plain, &addr, &flags), "a T_OBJECT slot") ||
	    (fd = mkstemp(copy)) < 0)
		return;
	close(fd);
	flags &= ~(uint64_t)RBI_T_MASK;
	if (!check(flags && copy_core(core, copy) && patch_core(copy, addr, &flags, sizeof(flags)),
		   "a copy of the core with that slot's type T_NONE") ||
	    !check(rbi_target_open_core(copy, NULL, &t) == RBI_OK, "open the copy")) {
		unlink(copy);
		return;
	}
	rc = walk(t, 0, got, &st);
	for (unsigned i = 0; i < RBI_TYPE_COUNT; i++)
		sum += got[i];
	ok(rc == RBI_OK && got[0] == 1 && got[RBI_T_OBJECT] + 1 == want[RBI_T_OBJECT] &&
	   st.slots == st.free + sum, "counted under T_NONE: TOTAL %llu = FREE + the types",
	   (unsigned long long)st.slots);
	ok(st.moved && strstr(st.moved_why, "no heap object has"),
	   "the counts say they are approximate: %s", st.moved_why);
	ok(rbi_heap_iter_impossible(NULL) == 0, "rbi_heap_iter_impossible(NULL): 0");
	rbi_target_free(t);
	rc = run_cli(copy, "objects", out, err, sizeof(out));
	ok(rc == 8 && strstr(out, "\nT_NONE                  1\n") &&
	   strstr(out, "note: counts are approximate: used slots have a type no heap object has"),
	   "rbinspect CORE objects: T_NONE 1 and the note, exit 8 (got %d)", rc);
	ok(strstr(err, "rbinspect: objects: 1 value the VM cannot have (corrupt memory), "
		  "marked in the output\n") != NULL, "a line on standard error says so");
	rc = run_cli(copy, "--json objects", out, err, sizeof(out));
	ok(rc == 8 && strstr(out, "\"approximate\":true,\"approximate_reason\":\"used slots") &&
	   strstr(out, "\"T_NONE\":1"), "--json: approximate, with the reason, and T_NONE, exit 8");
	rc = run_cli(copy, "objects --by-class", out, err, sizeof(out));
	ok(rc == 8 && strstr(out, "note: counts are approximate: used slots") &&
	   strstr(err, "value the VM cannot have"), "objects --by-class: the note, exit 8 (got %d)",
	   rc);
	rc = run_cli(copy, "heap-dump -o /dev/null", out, err, sizeof(out));
	ok(rc == 8 && strstr(err, "approximate: used slots have a type no heap object has") &&
	   strstr(err, "rbinspect: heap-dump: 1 value the VM cannot have"),
	   "heap-dump: approximate on standard error, exit 8 (got %d)", rc);
	rc = run_cli(core, "--json objects", out, err, sizeof(out));
	ok(rc == 0 && strstr(out, "\"approximate\":false") && !strstr(out, "T_NONE"),
	   "the intact core: exact, no T_NONE, exit 0");
	rc = run_cli(core, "heap-dump -o /dev/null", out, err, sizeof(out));
	ok(rc == 0 && !strstr(err, "approximate"), "the intact core: heap-dump exact, exit 0");
	unlink(copy);
}

/* A walk's objects with FL_EXIVAR (EXIVAR), those whose generic ivars
   were read (READ; KNOWN: their references known, where their type's
   are), and those whose were not, their references unknown
   (UNKNOWN_REFS), the first reason why (WHY).  *FIRST: the first one's address; *BEFORE,
   *AFTER: a String without FL_EXIVAR before it and one after it, with
   their flags. */
struct genivar_walk {
	unsigned exivar, read, known, unknown_refs;
	char why[256];
	uint64_t first, before, before_flags, after, after_flags;
};

static int genivar_walk(rbi_target *t, struct genivar_walk *w)
{
	const struct rbi_heap_slot *s;
	struct rbi_heap_object o;
	rbi_heap_iter *it;
	uint64_t n;
	int rc;

	memset(w, 0, sizeof(*w));
	if ((rc = rbi_heap_iter_init(t, 0, &it)))
		return rc;
	while ((rc = rbi_heap_iter_next(it, &s)) == RBI_OK) {
		if ((rc = rbi_heap_object_read(it, s, 0, &o)))
			break;
		if (s->type == RBI_T_STRING && !(s->flags & RBI_FL_EXIVAR)) {
			if (!w->first && !w->before) {
				w->before = s->addr;
				w->before_flags = s->flags;
			} else if (w->first && !w->after) {
				w->after = s->addr;
				w->after_flags = s->flags;
			}
		}
		rc = rbi_heap_object_generic_ivars(it, &n);
		if (!(s->flags & RBI_FL_EXIVAR)) {
			if (rc != RBI_ITER_END)
				snprintf(w->why, sizeof(w->why), "generic ivars without FL_EXIVAR");
			continue;
		}
		w->exivar++;
		w->first = w->first ? w->first : s->addr;
		if (rc == RBI_OK) {
			w->read++;
			w->known += o.refs_known != 0;
		} else {
			w->unknown_refs += !o.refs_known && !o.nrefs;
			if (!w->why[0])
				snprintf(w->why, sizeof(w->why), "%s", rbi_errmsg());
		}
	}
	rbi_heap_iter_free(it);
	return rc == RBI_ITER_END ? RBI_OK : rc;
}

/* The core with FL_EXIVAR set on the String at ADDR (flags FLAGS): its
   generic ivars, walked. */
static bool genivar_patched(const char *core, uint64_t addr, uint64_t flags,
			    struct genivar_walk *w, char *copy, size_t cap)
{
	static const char tmpl[] = "/tmp/rbi-test-heap-exivar.XXXXXX";
	rbi_target *t;
	int fd;

	snprintf(copy, cap, "%s", tmpl);
	if ((fd = mkstemp(copy)) < 0)
		return false;
	close(fd);
	flags |= RBI_FL_EXIVAR;
	if (!copy_core(core, copy) || !patch_core(copy, addr, &flags, sizeof(flags)) ||
	    rbi_target_open_core(copy, NULL, &t) != RBI_OK) {
		unlink(copy);
		return false;
	}
	fd = genivar_walk(t, w);
	rbi_target_free(t);
	return fd == RBI_OK;
}

static void check_generic_ivars(const char *core, rbi_target *plain)
{
	struct genivar_walk w, p;
	static char out[65536], err[65536];
	char copy[64];
	int rc;

	if (!check(genivar_walk(plain, &w) == RBI_OK, "walk the core reading every object"))
		return;
	ok(w.exivar > 0 && w.read == w.exivar && w.known > 0 && !w.why[0],
	   "every object with FL_EXIVAR (%u) has its generic ivars read (%u), the references "
	   "of %u known (the others' types' are not read)%s%s", w.exivar, w.read, w.known,
	   w.why[0] ? ": " : "", w.why);
	rc = run_cli(core, "heap-dump -o /dev/null", out, err, sizeof(out));
	ok(rc == 0 && strstr(err, "objects with generic instance variables read (listed first "
			     "among their references)\n") && !strstr(err, "written without references"),
	   "heap-dump says how many were read, none left out (exit %d)", rc);
	if (!check(w.before && w.after, "Strings without FL_EXIVAR before and after the first"))
		return;
	if (check(genivar_patched(core, w.after, w.after_flags, &p, copy, sizeof(copy)),
		  "a copy with FL_EXIVAR on a later String not in the table")) {
		ok(p.exivar == w.exivar + 1 && p.read == w.exivar && p.known == w.known &&
		   p.unknown_refs == 1 &&
		   strstr(p.why, "is not in the table of generic instance variables"),
		   "that String's references unknown, the others' read (%u of %u): %s", p.read,
		   p.exivar, p.why);
		rc = run_cli(copy, "heap-dump -o /dev/null", out, err, sizeof(out));
		ok(rc == 0 && strstr(err, "note: 1 objects with generic instance variables written "
				     "without references: "),
		   "heap-dump: exit 0, the one left out said on standard error (exit %d)", rc);
		unlink(copy);
	}
	if (check(genivar_patched(core, w.before, w.before_flags, &p, copy, sizeof(copy)),
		  "a copy with FL_EXIVAR on a String not in the table, seen first")) {
		ok(p.exivar == w.exivar + 1 && p.read == 0 && p.known == 0 &&
		   p.unknown_refs == p.exivar &&
		   strstr(p.why, "was not found"),
		   "no table holds it: not guessed, every one's references unknown (%u): %s",
		   p.unknown_refs, p.why);
		unlink(copy);
	}
}

static int count_shape(const struct rbi_heap_shape *shape, void *arg)
{
	(*(unsigned *)arg)++;
	return 0;
}

/* Ruby 3.1 has no object shapes: none listed (no error: its dump_all has
   no SHAPE lines either), and no object has a shape id. */
static void check_no_shapes(rbi_target *t)
{
	unsigned shapes = 0;
	const struct rbi_heap_slot *s;
	rbi_heap_iter *it;
	uint32_t id;

	ok(rbi_heap_shapes_foreach(t, count_shape, &shapes) == RBI_OK && shapes == 0,
	   "3.1: rbi_heap_shapes_foreach lists no shape, without error (%u)", shapes);
	if (!check(rbi_heap_iter_init(t, 0, &it) == RBI_OK, "a heap walk"))
		return;
	ok(rbi_heap_iter_next(it, &s) == RBI_OK &&
	   rbi_heap_object_shape_id(it, s, &id) == RBI_UNSUPPORTED,
	   "3.1: rbi_heap_object_shape_id is RBI_UNSUPPORTED");
	rbi_heap_iter_free(it);
}

/* The example core's Ruby never loaded objspace: no object has an
   allocation site (RBI_ITER_END for every one, no error), and the call
   checks its arguments. */
static void check_no_alloc(rbi_target *t)
{
	const struct rbi_heap_slot *s;
	struct rbi_heap_alloc a;
	uint64_t objects = 0, none = 0;
	rbi_heap_iter *it;
	int rc;

	if (!check(rbi_heap_iter_init(t, 0, &it) == RBI_OK, "a heap walk"))
		return;
	while ((rc = rbi_heap_iter_next(it, &s)) == RBI_OK) {
		objects++;
		none += rbi_heap_object_alloc(it, s, &a) == RBI_ITER_END && !a.file &&
			!a.method && !a.line && !a.generation;
	}
	ok(rc == RBI_ITER_END && objects > 1000 && none == objects,
	   "no objspace: rbi_heap_object_alloc is RBI_ITER_END for all %llu objects (%llu)",
	   (unsigned long long)objects, (unsigned long long)none);
	ok(rbi_heap_object_alloc(it, NULL, &a) == RBI_INVAL &&
	   rbi_heap_object_alloc(NULL, NULL, &a) == RBI_INVAL,
	   "rbi_heap_object_alloc without a walk or slot: RBI_INVAL");
	rbi_heap_iter_free(it);
}

/* rbi_vm_st_memsize against rows of st.c's features[] (64-bit, the same
   2.6-3.4): { entry_power, bins_words }, the table's header 56 bytes and
   an entry 24 (3.4.5's layout). */
static void check_st_memsize(void)
{
	static const struct { unsigned power; uint64_t bins_words; } rows[] = {
		{ 0, 0x0 }, { 1, 0x1 }, { 2, 0x1 }, { 3, 0x2 }, { 7, 0x20 }, { 8, 0x80 },
		{ 15, 0x4000 }, { 16, 0x10000 }, { 31, 0x80000000 }, { 32, 0x200000000 },
	};
	const struct rbi_layout *l = rbi_layout_table(3, 4, 5);
	uint8_t hdr[256] = { 0 };
	uint64_t got, bins = 0x1000;
	int rc;

	if (!check(l && RBI_ST_HEADER_SIZE(l) <= sizeof(hdr) && l->st_table_size == 56 &&
		   l->st_entry_size == 24, "3.4.5's st_table layout"))
		return;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		hdr[l->st_table_entry_power] = (uint8_t)rows[i].power;
		memcpy(hdr + l->st_table_bins, &bins, sizeof(bins));
		rc = rbi_vm_st_memsize(l, hdr, &got);
		ok(rc == RBI_OK && got == 56 + (24ull << rows[i].power) + 8 * rows[i].bins_words,
		   "st_memsize of 2^%u entries with bins: %llu", rows[i].power,
		   (unsigned long long)got);
	}
	memset(hdr + l->st_table_bins, 0, 8);
	hdr[l->st_table_entry_power] = 3;
	ok(rbi_vm_st_memsize(l, hdr, &got) == RBI_OK && got == 56 + 24 * 8,
	   "st_memsize without bins: the table and its entries");
	hdr[l->st_table_entry_power] = 63;
	ok(rbi_vm_st_memsize(l, hdr, &got) == RBI_CORRUPT, "2^63 entries: RBI_CORRUPT");
}

int main(void)
{
	char *core = unpack_core();
	rbi_target *t;

	check_st_memsize();
	if (!core) {
		skip("xz cannot unpack testdata/cores/ruby-3.1-threads.core.xz", "the heap API");
		return tap_plan();
	}
	if (check(rbi_target_open_core(core, NULL, &t) == RBI_OK, "open the example core")) {
		check_counts(t);
		check_classes(t);
		check_next_after_count(t);
		check_one_way(t);
		check_dying(core, t);
		check_names_after_death(core, t);
		check_impossible_type(core, t);
		check_no_shapes(t);
		check_no_alloc(t);
		check_generic_ivars(core, t);
		rbi_target_free(t);
	}
	unlink(core);
	return tap_plan();
}
