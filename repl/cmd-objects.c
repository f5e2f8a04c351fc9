/* cmd-objects.c: `objects [--by-class] [--top N] [--pause]`: the target's
 * object heap counted by type, with ObjectSpace.count_objects' keys and
 * meaning (TOTAL slots, FREE slots, T_xxx live objects), or by class as
 * ObjectSpace.each_object(Object) sees them (obj.class, full name, slot
 * bytes).
 *
 * A live target keeps running during the walk unless --pause stops it
 * (rbi_target_pause: resumed on every way out, and by the kernel should
 * rbinspect die).  Counts of a running target are marked
 * approximate when the library saw the heap change. */
#include <limits.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "out/out.h"
#include "rbinspect.h"

#define USAGE "objects [--by-class] [--top N] [--pause]"
/* Default classes listed by --by-class. */
#define TOP_DEFAULT 20
/* Longer names are cut, and marked. */
#define CLASS_NAME_MAX 4096

struct class_count {
	struct rbi_heap_class c;
	char *name;
	uint64_t name_cut;      /* bytes of the name left out */
};

struct objects {
	struct session *s;
	bool by_class;
	struct heap_walk w;
	unsigned long top;      /* classes listed, 0: all */
	uint64_t types[RBI_TYPE_COUNT];
	struct rbi_heap_stats st;
	uint64_t garbage;       /* used slots the lazy sweep will free */
	struct class_count *cls;        /* sorted by count once named */
	size_t ncls;
	struct rbi_heap_class internal;
	struct rbi_heap_class unknown;  /* class chain unreadable */
	double secs;
};

/* ---- Counting ------------------------------------------------------------ */

/* The walk's tally by class into O (before the walk ends: borrowed). */
static int take_classes(struct objects *o, rbi_heap_iter *it)
{
	const struct rbi_heap_class *v;
	size_t n;

	rbi_heap_iter_classes(it, &v, &n, &o->internal, &o->unknown);
	if (n && !(o->cls = calloc(n, sizeof(*o->cls))))
		return RBI_NOMEM;
	for (size_t i = 0; i < n; i++)
		o->cls[i].c = v[i];
	o->ncls = n;
	return RBI_OK;
}

/* One walk of the heap into O, a batch of pages at a time, never slot by
   slot: the library counts on the threads that read. */
static int walk(struct objects *o)
{
	int (*count_batch)(rbi_heap_iter *, uint64_t *) =
		o->by_class ? rbi_heap_iter_count_classes : rbi_heap_iter_count;
	rbi_heap_iter *it = o->w.it;
	int rc;

	while ((rc = count_batch(it, o->types)) == RBI_OK) {
		if (stop_requested || interrupted())
			return EXIT_INTERRUPTED;
		heap_walk_progress(&o->w);
	}
	if (rc != RBI_ITER_END)
		return rc;
	if (o->by_class && (rc = take_classes(o, it)))
		return rc;
	rbi_heap_iter_stats(it, &o->st);
	o->garbage = rbi_heap_iter_garbage(it);
	o->secs = (double)(rbi_now_ns() - o->w.start_ns) / 1e9;
	return RBI_OK;
}

static int cmp_class(const void *a, const void *b)
{
	const struct class_count *x = a, *y = b;

	if (x->c.count != y->c.count)
		return x->c.count > y->c.count ? -1 : 1;
	return strcmp(x->name ? x->name : "", y->name ? y->name : "");
}

/* Name every class (while a paused target is still stopped) and sort them
   by count, then name: the order of the truth files' class records. */
static int name_classes(struct objects *o)
{
	char buf[CLASS_NAME_MAX];

	for (size_t i = 0; i < o->ncls; i++) {
		struct class_count *c = &o->cls[i];
		int rc = rbi_class_name_cut(o->s->target, c->c.klass, buf, sizeof(buf),
					    &c->name_cut);

		/* A class that cannot be read is marked; a process gone is not
		   a fact about its classes. */
		if (rc == RBI_GONE)
			return rc;
		if (rc)
			snprintf(buf, sizeof(buf), "#<unreadable class 0x%" PRIx64 ">", c->c.klass);
		if (!(c->name = strdup(buf)))
			return RBI_NOMEM;
	}
	qsort(o->cls, o->ncls, sizeof(*o->cls), cmp_class);
	return RBI_OK;
}

/* Walk the heap (stopped with --pause) and name the classes while a
   paused target is still stopped. */
static int count(struct objects *o)
{
	int rc = heap_walk_begin(&o->w);

	if (rc)
		return rc;
	rc = walk(o);
	if (!rc && o->by_class)
		rc = name_classes(o);
	return heap_walk_end(&o->w, rc);
}

/* ---- Output -------------------------------------------------------------- */

static const char *snapshot(const struct objects *o, bool paused)
{
	return !o->s->live ? "core" : paused ? "paused" : "running";
}

static void objects_json(struct objects *o, const struct rbi_ruby_info *ri, bool paused)
{
	struct rbi_json j;

	rbi_json_init(&j, o->s->out);
	rbi_json_object(&j);
	rbi_json_key(&j, "pid"); rbi_json_int(&j, rbi_target_pid(o->s->target));
	rbi_json_key(&j, "ruby"); rbi_json_cstr(&j, ri ? ri->version : NULL);
	rbi_json_key(&j, "snapshot"); rbi_json_cstr(&j, snapshot(o, paused));
	rbi_json_key(&j, "approximate"); rbi_json_bool(&j, o->st.moved);
	rbi_json_key(&j, "approximate_reason");
	rbi_json_cstr(&j, o->st.moved ? o->st.moved_why : NULL);
	rbi_json_key(&j, "pages"); rbi_json_int(&j, (int64_t)o->st.pages);
	rbi_json_key(&j, "pages_skipped"); rbi_json_int(&j, (int64_t)o->st.pages_skipped);
	rbi_json_key(&j, "slot_bytes"); rbi_json_int(&j, (int64_t)o->st.slot_bytes);
	rbi_json_key(&j, "bytes_read"); rbi_json_int(&j, (int64_t)o->st.bytes_read);
	rbi_json_key(&j, "gc_count"); rbi_json_int(&j, (int64_t)o->st.gc_count);
	/* Used slots the lazy sweep will free: in COUNTS (count_objects
	   counts them), in no class. */
	rbi_json_key(&j, "garbage"); rbi_json_int(&j, (int64_t)o->garbage);
	rbi_json_key(&j, "walk_us"); rbi_json_int(&j, (int64_t)(o->secs * 1e6));
	/* ObjectSpace.count_objects' keys, in its order. */
	rbi_json_key(&j, "counts");
	rbi_json_object(&j);
	rbi_json_key(&j, "TOTAL"); rbi_json_int(&j, (int64_t)o->st.slots);
	rbi_json_key(&j, "FREE"); rbi_json_int(&j, (int64_t)o->st.free);
	/* T_NONE too: a used slot of no type is counted, so that the
	   counts add up to TOTAL (and the walk says it is approximate). */
	for (unsigned t = 0; t < RBI_TYPE_COUNT; t++) {
		char num[16];

		if (!o->types[t])
			continue;
		snprintf(num, sizeof(num), "%u", t);
		rbi_json_key(&j, rbi_value_type_name(t) ? rbi_value_type_name(t) : num);
		rbi_json_int(&j, (int64_t)o->types[t]);
	}
	rbi_json_end_object(&j);
	rbi_json_key(&j, "sizes");
	rbi_json_array(&j);
	for (size_t i = 0; i < RBI_HEAP_SIZES && o->st.sizes[i].slot_size; i++) {
		const struct rbi_heap_size *z = &o->st.sizes[i];

		rbi_json_object(&j);
		rbi_json_key(&j, "slot_size"); rbi_json_int(&j, z->slot_size);
		rbi_json_key(&j, "slots"); rbi_json_int(&j, (int64_t)z->slots);
		rbi_json_key(&j, "free"); rbi_json_int(&j, (int64_t)z->free);
		rbi_json_key(&j, "bytes"); rbi_json_int(&j, (int64_t)(z->slots * z->slot_size));
		rbi_json_end_object(&j);
	}
	rbi_json_end_array(&j);
	if (o->by_class) {
		size_t n = o->top && o->top < o->ncls ? o->top : o->ncls;

		rbi_json_key(&j, "classes_total"); rbi_json_int(&j, (int64_t)o->ncls);
		rbi_json_key(&j, "classes");
		rbi_json_array(&j);
		for (size_t i = 0; i < n; i++) {
			rbi_json_object(&j);
			rbi_json_key(&j, "name"); rbi_json_cstr(&j, o->cls[i].name);
			rbi_json_key(&j, "name_cut"); rbi_json_int(&j, (int64_t)o->cls[i].name_cut);
			rbi_json_key(&j, "count"); rbi_json_int(&j, (int64_t)o->cls[i].c.count);
			rbi_json_key(&j, "bytes"); rbi_json_int(&j, (int64_t)o->cls[i].c.slot_bytes);
			rbi_json_key(&j, "heap_bytes"); rbi_json_int(&j, (int64_t)o->cls[i].c.owned_bytes);
			rbi_json_key(&j, "class"); rbi_json_addr(&j, o->cls[i].c.klass);
			rbi_json_end_object(&j);
		}
		rbi_json_end_array(&j);
		rbi_json_key(&j, "internal");
		rbi_json_object(&j);
		rbi_json_key(&j, "count"); rbi_json_int(&j, (int64_t)o->internal.count);
		rbi_json_key(&j, "bytes"); rbi_json_int(&j, (int64_t)o->internal.slot_bytes);
		rbi_json_end_object(&j);
		rbi_json_key(&j, "unreadable_class");
		rbi_json_object(&j);
		rbi_json_key(&j, "count"); rbi_json_int(&j, (int64_t)o->unknown.count);
		rbi_json_key(&j, "bytes"); rbi_json_int(&j, (int64_t)o->unknown.slot_bytes);
		rbi_json_end_object(&j);
	}
	rbi_json_end_object(&j);
	fputc('\n', o->s->out);
}

static void objects_text(struct objects *o, const struct rbi_ruby_info *ri, bool paused)
{
	FILE *f = o->s->out;

	style_begin(o->s, STYLE_HEADER);
	fprintf(f, "Ruby %s, %s%s: %" PRIu64 " heap pages, %" PRIu64 " slots "
		"(%.1f MiB), walked in %.3f s\n", ri ? ri->version : "?", o->s->what,
		paused ? " (paused)" : "", o->st.pages, o->st.slots,
		o->st.slot_bytes / 1048576.0, o->secs);
	style_end(o->s);
	if (!o->by_class) {
		fprintf(f, "%-12s %12" PRIu64 "\n", "TOTAL", o->st.slots);
		fprintf(f, "%-12s %12" PRIu64 "\n", "FREE", o->st.free);
		for (unsigned t = 0; t < RBI_TYPE_COUNT; t++) {
			const char *name = rbi_value_type_name(t);

			if (!o->types[t])
				continue;
			if (name)
				fprintf(f, "%-12s %12" PRIu64 "\n", name, o->types[t]);
			else
				fprintf(f, "%-12u %12" PRIu64 "\n", t, o->types[t]);
		}
		fprintf(f, "\n%-12s %12s %12s %14s\n", "SLOT SIZE", "SLOTS", "FREE", "BYTES");
		for (size_t i = 0; i < RBI_HEAP_SIZES && o->st.sizes[i].slot_size; i++) {
			const struct rbi_heap_size *z = &o->st.sizes[i];

			fprintf(f, "%-12u %12" PRIu64 " %12" PRIu64 " %14" PRIu64 "\n",
				z->slot_size, z->slots, z->free, z->slots * z->slot_size);
		}
	} else {
		size_t n = o->top && o->top < o->ncls ? o->top : o->ncls;

		/* BYTES: slots; HEAP: what Strings and Arrays own outside them. */
		fprintf(f, "%12s %14s %14s  %s\n", "COUNT", "BYTES", "HEAP", "CLASS");
		for (size_t i = 0; i < n; i++) {
			fprintf(f, "%12" PRIu64 " %14" PRIu64 " ", o->cls[i].c.count, o->cls[i].c.slot_bytes);
			if (o->cls[i].c.owned_bytes)
				fprintf(f, "%14" PRIu64 "  ", o->cls[i].c.owned_bytes);
			else
				fprintf(f, "%14s  ", "-");
			style_begin(o->s, STYLE_NAME);
			rbi_out_text_cstr(f, o->cls[i].name);
			style_end(o->s);
			cut_text(f, o->cls[i].name_cut);
			fputc('\n', f);
		}
		if (n < o->ncls)
			fprintf(f, "%12s %14s %14s  (%zu more classes: --top 0 lists all)\n",
				"", "", "", o->ncls - n);
		fprintf(f, "%12" PRIu64 " %14" PRIu64 " %14s  (internal: not in "
			"ObjectSpace.each_object)\n", o->internal.count, o->internal.slot_bytes, "");
		if (o->unknown.count)
			fprintf(f, "%12" PRIu64 " %14" PRIu64 " %14s  (class unreadable)\n",
				o->unknown.count, o->unknown.slot_bytes, "");
		if (o->garbage)
			fprintf(f, "%12" PRIu64 " %14s %14s  (garbage the GC's lazy sweep has not "
				"freed yet: no objects)\n", o->garbage, "", "");
	}
	if (!o->by_class && o->garbage)
		fprintf(f, "note: %" PRIu64 " of the used slots are garbage the GC's lazy sweep "
			"has not freed yet (counted by type, as ObjectSpace.count_objects "
			"does; --by-class leaves them out)\n", o->garbage);
	if (o->st.moved)
		fprintf(f, "note: counts are approximate: %s%s\n", o->st.moved_why,
			o->s->live && !paused ? " (--pause stops the process for exact counts)" : "");
	if (o->st.pages_skipped)
		fprintf(f, "note: %" PRIu64 " heap pages skipped\n", o->st.pages_skipped);
}

int cmd_objects(struct session *s, int argc, char **argv)
{
	struct objects o = { .s = s, .top = TOP_DEFAULT,
			     .w = { .s = s, .command = "objects" } };
	struct stop_guard guard;
	const struct rbi_ruby_info *ri = NULL;
	bool paused;
	int rc;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = NULL;

		if (!strcmp(a, "--by-class")) {
			o.by_class = true;
		} else if (!strcmp(a, "--pause")) {
			o.w.pause = true;
		} else if (!strcmp(a, "--top") || !strncmp(a, "--top=", 6)) {
			val = a[5] == '=' ? a + 6 : (i + 1 < argc ? argv[++i] : NULL);
			if (!val || parse_count(val, ULONG_MAX, &o.top)) {
				fprintf(stderr, "rbinspect: objects: --top needs a number\n");
				return EXIT_USAGE;
			}
			o.by_class = true;
		} else {
			fprintf(stderr, "rbinspect: objects: unknown argument \"%s\" "
				"(usage: " USAGE ")\n", a);
			return EXIT_USAGE;
		}
	}
	if (target_gone(s, "objects"))
		return EXIT_GONE;
	stop_guard_begin(&guard, STOP_ON_ALL);
	rc = count(&o);
	stop_guard_end(&guard);
	paused = o.w.pause;
	if (rc == EXIT_INTERRUPTED || stop_requested) {
		fputs("rbinspect: objects: interrupted\n", stderr);
		rc = EXIT_INTERRUPTED;
	} else if (rc) {
		rc = session_failure(s, rc);
	} else {
		rbi_ruby_info(s->target, &ri);
		if (s->json)
			objects_json(&o, ri, paused);
		else
			objects_text(&o, ri, paused);
		rc = EXIT_OK;
	}
	for (size_t i = 0; i < o.ncls; i++)
		free(o.cls[i].name);
	free(o.cls);
	return rc;
}
