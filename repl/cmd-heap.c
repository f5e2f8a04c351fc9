/* cmd-heap.c: `heap dump ...` (cmd-heap-dump.c), `heap diff A B [C]`:
 * heap dumps compared by type and class (heapfile/heapdiff.c): with two, the
 * objects that appeared and those that died between them; with three,
 * the classic leak view: what was made between the first two and is still
 * there in the third; of a running process, `heap diff --every SECONDS`
 * takes the dumps itself (heap-snapshots.c); `heap retainers DUMP ADDR`: the references that
 * keep an object alive (heapfile/retainers.c); and `heap top DUMP`: the bytes
 * each type and class keeps alive (heapfile/retained.c). */
#include <limits.h>
#include <inttypes.h>
#include <string.h>

#include "heapfile/heapdiff.h"
#include "heapfile/retained.h"
#include "heapfile/retainers.h"
#include "internal.h"
#include "out/out.h"
#include "rbinspect.h"

#define DIFF_USAGE "heap diff A.json B.json [C.json] [--top N] | heap diff --every SECONDS " \
	"[--snapshots 2|3] [--pause] [--keep DIR] [--top N]"
#define EVERY_MAX 86400ul
#define RETAINERS_USAGE "heap retainers DUMP ADDRESS [--max-paths N]"
#define TOP_USAGE "heap top DUMP [--by retained|shallow|count] [--top N]"
#define TOP_DEFAULT 20
#define PATHS_DEFAULT 5

/* Whether ARGV[*I] is the option NAME ("--top"), as "--top=V" or
   "--top V" (then *I moves past V); its value in *VAL, NULL when none
   follows. */
static bool option(int argc, char **argv, int *i, const char *name, const char **val)
{
	size_t n = strlen(name);
	const char *a = argv[*i];

	if (strncmp(a, name, n) || (a[n] && a[n] != '='))
		return false;
	*val = a[n] == '=' ? a + n + 1 : (*i + 1 < argc ? argv[++*i] : NULL);
	return true;
}

static void row_class(FILE *f, const struct heapdiff_row *r)
{
	if (r->class_name)
		rbi_out_text_cstr(f, r->class_name);
	else if (r->klass)
		fprintf(f, "(class 0x%" PRIx64 ")", r->klass);
	else
		fputs("-", f);
}

static void rows_text(FILE *f, const char *title, const struct heapdiff_row *v, size_t n,
		      unsigned long top)
{
	uint64_t count = 0, bytes = 0;
	size_t shown = top && top < n ? top : n;

	for (size_t i = 0; i < n; i++) {
		count += v[i].count;
		bytes += v[i].bytes;
	}
	fprintf(f, "%s: %" PRIu64 " objects, %" PRIu64 " bytes\n", title, count, bytes);
	if (!n)
		return;
	fprintf(f, "%12s %14s  %-10s %s\n", "COUNT", "BYTES", "TYPE", "CLASS");
	for (size_t i = 0; i < shown; i++) {
		fprintf(f, "%12" PRIu64 " %14" PRIu64 "  %-10s ", v[i].count, v[i].bytes, v[i].type);
		row_class(f, &v[i]);
		fputc('\n', f);
	}
	if (shown < n)
		fprintf(f, "%12s %14s  (%zu more rows: --top 0 lists all)\n", "", "", n - shown);
}

static void rows_json(struct rbi_json *j, const char *key, const struct heapdiff_row *v,
		      size_t n, unsigned long top)
{
	size_t shown = top && top < n ? top : n;

	rbi_json_key(j, key);
	rbi_json_array(j);
	for (size_t i = 0; i < shown; i++) {
		rbi_json_object(j);
		rbi_json_key(j, "type"); rbi_json_cstr(j, v[i].type);
		rbi_json_key(j, "class");
		if (v[i].klass)
			rbi_json_addr(j, v[i].klass);
		else
			rbi_json_null(j);
		rbi_json_key(j, "class_name"); rbi_json_cstr(j, v[i].class_name);
		rbi_json_key(j, "count"); rbi_json_int(j, (int64_t)v[i].count);
		rbi_json_key(j, "bytes"); rbi_json_int(j, (int64_t)v[i].bytes);
		rbi_json_end_object(j);
	}
	rbi_json_end_array(j);
}

static void diff_text(struct session *s, const struct heapdiff *d, const char *const *paths,
		      int n, unsigned long top)
{
	FILE *f = s->out;
	char title[3 * PATH_MAX];

	fprintf(f, "objects: %" PRIu64 " in A, %" PRIu64 " in B", d->objects[0], d->objects[1]);
	if (n == 3)
		fprintf(f, ", %" PRIu64 " in C", d->objects[2]);
	fputs("\n\n", f);
	if (n == 3) {
		snprintf(title, sizeof(title), "Made between %s and %s, still in %s (retained)",
			 paths[0], paths[1], paths[2]);
		rows_text(f, title, d->added, d->nadded, top);
		return;
	}
	snprintf(title, sizeof(title), "In %s, not in %s (new)", paths[1], paths[0]);
	rows_text(f, title, d->added, d->nadded, top);
	fputc('\n', f);
	snprintf(title, sizeof(title), "In %s, not in %s (gone)", paths[0], paths[1]);
	rows_text(f, title, d->died, d->ndied, top);
}

static void diff_json(struct session *s, const struct heapdiff *d, int n, unsigned long top)
{
	struct rbi_json j;

	rbi_json_init(&j, s->out);
	rbi_json_object(&j);
	rbi_json_key(&j, "objects");
	rbi_json_array(&j);
	for (int i = 0; i < n; i++)
		rbi_json_int(&j, (int64_t)d->objects[i]);
	rbi_json_end_array(&j);
	rows_json(&j, n == 3 ? "retained" : "new", d->added, d->nadded, top);
	if (n == 2)
		rows_json(&j, "gone", d->died, d->ndied, top);
	rbi_json_end_object(&j);
}

/* `heap diff`'s arguments: dump files, or how to take snapshots. */
struct diff_args {
	const char *paths[HEAP_SNAPSHOTS_MAX];
	int n;                          /* dump files given */
	unsigned long top;
	unsigned long every;            /* seconds between snapshots; 0: files */
	unsigned long snapshots;
	bool pause;
	const char *keep;
};

/* The snapshot options of ARGV[*I], if it is one: 1 (and *I past it),
   EXIT_USAGE + 1 for a bad value (said), else 0. */
static int snapshot_option(struct diff_args *a, int argc, char **argv, int *i)
{
	const char *val;

	if (!strcmp(argv[*i], "--pause")) {
		a->pause = true;
	} else if (option(argc, argv, i, "--keep", &val)) {
		if (!val || !val[0]) {
			fputs("rbinspect: heap diff: --keep needs a directory\n", stderr);
			return EXIT_USAGE + 1;
		}
		a->keep = val;
	} else if (option(argc, argv, i, "--every", &val)) {
		if (!val || parse_count(val, EVERY_MAX, &a->every) || !a->every) {
			fprintf(stderr, "rbinspect: heap diff: --every needs a number of seconds "
				"from 1 to %lu\n", EVERY_MAX);
			return EXIT_USAGE + 1;
		}
	} else if (option(argc, argv, i, "--snapshots", &val)) {
		if (!val || parse_count(val, HEAP_SNAPSHOTS_MAX, &a->snapshots) ||
		    a->snapshots < 2) {
			fputs("rbinspect: heap diff: --snapshots 2 or 3\n", stderr);
			return EXIT_USAGE + 1;
		}
	} else {
		return 0;
	}
	return 1;
}

/* Whether the arguments make one of heap diff's two forms (else said). */
static bool diff_form_ok(struct session *s, const struct diff_args *a)
{
	const char *why = NULL;

	if (a->every && a->n)
		why = "dump files or --every, not both";
	else if (!a->every && (a->pause || a->keep || a->snapshots))
		why = "--pause, --keep and --snapshots go with --every";
	else if (!a->every && a->n < 2)
		why = "two or three dumps, or --every SECONDS on a process";
	else if (a->every && !s->target)
		why = "--every takes its snapshots of a process: give it with -p PID";
	else if (a->every && !s->live)
		why = "a core is one moment: compare dump files, or --every on a process";
	if (why)
		fprintf(stderr, "rbinspect: heap diff: %s (usage: " DIFF_USAGE ")\n", why);
	return !why;
}

static int parse_diff_args(struct session *s, struct diff_args *a, int argc, char **argv)
{
	*a = (struct diff_args){ .top = TOP_DEFAULT };
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *val;
		int rc = snapshot_option(a, argc, argv, &i);

		if (rc > 1)
			return EXIT_USAGE;
		if (rc)
			continue;
		if (option(argc, argv, &i, "--top", &val)) {
			if (!val || parse_count(val, ULONG_MAX, &a->top)) {
				fputs("rbinspect: heap diff: --top needs a number\n", stderr);
				return EXIT_USAGE;
			}
		} else if (arg[0] == '-' && arg[1]) {
			fputs("rbinspect: heap diff: unknown option \"", stderr);
			rbi_out_text_cstr(stderr, arg);
			fputs("\" (usage: " DIFF_USAGE ")\n", stderr);
			return EXIT_USAGE;
		} else if (a->n == HEAP_SNAPSHOTS_MAX) {
			fputs("rbinspect: heap diff: at most three dumps (usage: " DIFF_USAGE ")\n",
			      stderr);
			return EXIT_USAGE;
		} else {
			a->paths[a->n++] = arg;
		}
	}
	return diff_form_ok(s, a) ? EXIT_OK : EXIT_USAGE;
}

static int diff_files(struct session *s, const char *const *paths, int n,
		      const char *const *titles, unsigned long top)
{
	struct heapdiff d;

	if (rbi_heapdiff_run(paths, (size_t)n, &d)) {
		fprintf(stderr, "rbinspect: heap diff: %s\n", rbi_errmsg());
		rbi_heapdiff_free(&d);
		return EXIT_ERROR;
	}
	if (s->json)
		diff_json(s, &d, n, top);
	else
		diff_text(s, &d, titles, n, top);
	rbi_heapdiff_free(&d);
	return EXIT_OK;
}

/* The snapshots' names in the text titles: their files when kept, else
   when each was taken. */
static void snapshot_titles(const struct diff_args *a, const struct heap_snapshots *hs,
			    char titles[][64], const char **out)
{
	for (unsigned i = 0; i < hs->n; i++) {
		if (a->keep) {
			out[i] = hs->paths[i];
			continue;
		}
		snprintf(titles[i], 64, "snapshot %u (at +%lu s)", i + 1, i * a->every);
		out[i] = titles[i];
	}
}

static int cmd_heap_diff(struct session *s, int argc, char **argv)
{
	char names[HEAP_SNAPSHOTS_MAX][64];
	const char *titles[HEAP_SNAPSHOTS_MAX];
	struct heap_snapshots hs;
	struct diff_args a;
	int rc;

	if ((rc = parse_diff_args(s, &a, argc, argv)))
		return rc;
	if (!a.every)
		return diff_files(s, a.paths, a.n, a.paths, a.top);
	rc = heap_snapshots_take(s, &hs, a.snapshots ? (unsigned)a.snapshots : 2, a.every,
				 a.pause, a.keep);
	if (!rc) {
		const char *paths[HEAP_SNAPSHOTS_MAX];

		for (unsigned i = 0; i < hs.n; i++)
			paths[i] = hs.paths[i];
		snapshot_titles(&a, &hs, names, titles);
		rc = diff_files(s, paths, (int)hs.n, titles, a.top);
	}
	heap_snapshots_remove(&hs);
	return rc;
}

/* ---- heap retainers ------------------------------------------------------ */

static void step_text(FILE *f, const struct retainers_step *st)
{
	if (st->root) {
		fputs("ROOT ", f);
		rbi_out_text_cstr(f, st->root);
		return;
	}
	fprintf(f, "0x%" PRIx64 " ", st->addr);
	rbi_out_text_cstr(f, st->type);
	if (st->class_name) {
		fputc(' ', f);
		rbi_out_text_cstr(f, st->class_name);
	} else if (st->klass) {
		fprintf(f, " (class 0x%" PRIx64 ")", st->klass);
	}
}

static void retainers_text(struct session *s, const struct retainers *r)
{
	FILE *f = s->out;

	step_text(f, &r->target);
	fprintf(f, ": %zu retainer%s", r->retainers, r->retainers == 1 ? "" : "s");
	if (r->unreached)
		fprintf(f, " (%zu of them not reachable from the %s)", r->unreached,
			r->has_roots && !r->partial_roots ? "roots" : "start points");
	fputc('\n', f);
	if (!r->has_roots)
		fputs("This dump has no ROOT lines: paths start at objects nothing in it refers "
		      "to (and at one object of each cycle nothing else refers to).\n", f);
	else if (r->partial_roots)
		fputs("This dump's roots and references are partial (rbinspect heap-dump): paths "
		      "start at a root or at an object nothing in it refers to (or one of a cycle "
		      "nothing else refers to).\n", f);
	if (r->dangling)
		fprintf(f, "%" PRIu64 " of its %" PRIu64 " references name no object of the dump.\n",
			r->dangling, r->references);
	for (size_t i = 0; i < r->npaths; i++) {
		fprintf(f, "\npath %zu (%zu references):\n", i + 1, r->paths[i].n - 1);
		for (size_t k = 0; k < r->paths[i].n; k++) {
			fputs(k ? "  -> " : "     ", f);
			step_text(f, &r->paths[i].steps[k]);
			fputc('\n', f);
		}
	}
	if (r->more)
		fprintf(f, "\n(%zu more retainers: --max-paths 0 shows a path through each)\n",
			r->more);
}

static void step_json(struct rbi_json *j, const struct retainers_step *st)
{
	rbi_json_object(j);
	if (st->root) {
		rbi_json_key(j, "root"); rbi_json_cstr(j, st->root);
	} else {
		rbi_json_key(j, "address"); rbi_json_addr(j, st->addr);
		rbi_json_key(j, "type"); rbi_json_cstr(j, st->type);
		rbi_json_key(j, "class");
		if (st->klass)
			rbi_json_addr(j, st->klass);
		else
			rbi_json_null(j);
		rbi_json_key(j, "class_name"); rbi_json_cstr(j, st->class_name);
	}
	rbi_json_end_object(j);
}

static void retainers_json(struct session *s, const struct retainers *r)
{
	struct rbi_json j;

	rbi_json_init(&j, s->out);
	rbi_json_object(&j);
	rbi_json_key(&j, "target"); step_json(&j, &r->target);
	rbi_json_key(&j, "has_roots"); rbi_json_bool(&j, r->has_roots);
	rbi_json_key(&j, "partial_roots"); rbi_json_bool(&j, r->partial_roots);
	rbi_json_key(&j, "objects"); rbi_json_int(&j, (int64_t)r->objects);
	rbi_json_key(&j, "references"); rbi_json_int(&j, (int64_t)r->references);
	rbi_json_key(&j, "dangling"); rbi_json_int(&j, (int64_t)r->dangling);
	rbi_json_key(&j, "retainers"); rbi_json_int(&j, (int64_t)r->retainers);
	rbi_json_key(&j, "unreached"); rbi_json_int(&j, (int64_t)r->unreached);
	rbi_json_key(&j, "more"); rbi_json_int(&j, (int64_t)r->more);
	rbi_json_key(&j, "paths");
	rbi_json_array(&j);
	for (size_t i = 0; i < r->npaths; i++) {
		rbi_json_array(&j);
		for (size_t k = 0; k < r->paths[i].n; k++)
			step_json(&j, &r->paths[i].steps[k]);
		rbi_json_end_array(&j);
	}
	rbi_json_end_array(&j);
	rbi_json_end_object(&j);
}

/* An address as dump_all writes it (0x...), or plain hex. */
static int parse_address(const char *a, uint64_t *out)
{
	char *end;

	if (a[0] == '0' && (a[1] == 'x' || a[1] == 'X'))
		a += 2;
	if (!*a || strspn(a, "0123456789abcdefABCDEF") != strlen(a) || strlen(a) > 16)
		return -1;
	*out = strtoull(a, &end, 16);
	return *out ? 0 : -1;
}

static int cmd_heap_retainers(struct session *s, int argc, char **argv)
{
	unsigned long max_paths = PATHS_DEFAULT;
	const char *dump = NULL, *addr = NULL, *val;
	struct retainers r;
	uint64_t target;
	int rc;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (option(argc, argv, &i, "--max-paths", &val)) {
			if (!val || parse_count(val, ULONG_MAX, &max_paths)) {
				fputs("rbinspect: heap retainers: --max-paths needs a number\n", stderr);
				return EXIT_USAGE;
			}
		} else if ((a[0] == '-' && a[1]) || (dump && addr)) {
			fputs("rbinspect: heap retainers: unexpected \"", stderr);
			rbi_out_text_cstr(stderr, a);
			fputs("\" (usage: " RETAINERS_USAGE ")\n", stderr);
			return EXIT_USAGE;
		} else if (!dump) {
			dump = a;
		} else {
			addr = a;
		}
	}
	if (!addr) {
		fputs("rbinspect: heap retainers: a dump and an address (usage: " RETAINERS_USAGE
		      ")\n", stderr);
		return EXIT_USAGE;
	}
	if (parse_address(addr, &target)) {
		fputs("rbinspect: heap retainers: \"", stderr);
		rbi_out_text_cstr(stderr, addr);
		fputs("\" is not an address (0x7f...)\n", stderr);
		return EXIT_USAGE;
	}
	if ((rc = rbi_retainers_find(dump, target, max_paths ? max_paths : SIZE_MAX, &r))) {
		fputs("rbinspect: heap retainers: ", stderr);
		rbi_out_text_cstr(stderr, rbi_errmsg());
		fputc('\n', stderr);
		rbi_retainers_free(&r);
		return EXIT_ERROR;
	}
	if (s->json)
		retainers_json(s, &r);
	else
		retainers_text(s, &r);
	rbi_retainers_free(&r);
	return EXIT_OK;
}

/* ---- heap top ------------------------------------------------------------- */

static void retained_text(struct session *s, const struct retained *r, unsigned long top)
{
	FILE *f = s->out;
	size_t shown = top && top < r->nrows ? top : r->nrows;

	fprintf(f, "%" PRIu64 " objects, %" PRIu64 " bytes", r->objects, r->bytes);
	if (r->unreached)
		fprintf(f, "; %" PRIu64 " objects (%" PRIu64 " bytes) no %s reaches, in no row",
			r->unreached, r->unreached_bytes,
			r->has_roots && !r->partial_roots ? "root" : "start point");
	fputc('\n', f);
	if (!r->has_roots)
		fputs("This dump has no ROOT lines: objects nothing in it refers to (and one "
		      "object of each cycle nothing else refers to) stand for the roots.\n", f);
	else if (r->partial_roots)
		fputs("This dump's roots and references are partial (rbinspect heap-dump): objects "
		      "nothing in it refers to (and one object of each cycle nothing else refers "
		      "to) are roots too.\n", f);
	fprintf(f, "%14s %14s %10s  %-10s %s\n", "RETAINED", "SHALLOW", "COUNT", "TYPE", "CLASS");
	for (size_t i = 0; i < shown; i++) {
		const struct retained_row *w = &r->rows[i];

		fprintf(f, "%14" PRIu64 " %14" PRIu64 " %10" PRIu64 "  %-10s ", w->retained, w->shallow,
			w->count, w->type);
		if (w->itself && !w->class_name)
			fprintf(f, "(anonymous 0x%" PRIx64 ")", w->klass);
		else
			row_class(f, &(struct heapdiff_row){ .class_name = w->class_name,
							     .klass = w->klass });
		fputc('\n', f);
	}
	if (shown < r->nrows)
		fprintf(f, "%14s %14s %10s  (%zu more rows: --top 0 lists all)\n", "", "", "",
			r->nrows - shown);
}

static void retained_json(struct session *s, const struct retained *r, unsigned long top)
{
	size_t shown = top && top < r->nrows ? top : r->nrows;
	struct rbi_json j;

	rbi_json_init(&j, s->out);
	rbi_json_object(&j);
	rbi_json_key(&j, "has_roots"); rbi_json_bool(&j, r->has_roots);
	rbi_json_key(&j, "partial_roots"); rbi_json_bool(&j, r->partial_roots);
	rbi_json_key(&j, "objects"); rbi_json_int(&j, (int64_t)r->objects);
	rbi_json_key(&j, "bytes"); rbi_json_int(&j, (int64_t)r->bytes);
	rbi_json_key(&j, "unreached"); rbi_json_int(&j, (int64_t)r->unreached);
	rbi_json_key(&j, "unreached_bytes"); rbi_json_int(&j, (int64_t)r->unreached_bytes);
	rbi_json_key(&j, "rows");
	rbi_json_array(&j);
	for (size_t i = 0; i < shown; i++) {
		const struct retained_row *w = &r->rows[i];

		rbi_json_object(&j);
		rbi_json_key(&j, "type"); rbi_json_cstr(&j, w->type);
		rbi_json_key(&j, "class");
		if (w->klass)
			rbi_json_addr(&j, w->klass);
		else
			rbi_json_null(&j);
		rbi_json_key(&j, "class_name"); rbi_json_cstr(&j, w->class_name);
		rbi_json_key(&j, "itself"); rbi_json_bool(&j, w->itself);
		rbi_json_key(&j, "count"); rbi_json_int(&j, (int64_t)w->count);
		rbi_json_key(&j, "shallow"); rbi_json_int(&j, (int64_t)w->shallow);
		rbi_json_key(&j, "retained"); rbi_json_int(&j, (int64_t)w->retained);
		rbi_json_end_object(&j);
	}
	rbi_json_end_array(&j);
	rbi_json_end_object(&j);
}

static int parse_sort(const char *val, enum rbi_retained_sort *by)
{
	static const char *const names[] = { [RETAINED_BY_RETAINED] = "retained",
					      [RETAINED_BY_SHALLOW] = "shallow",
					      [RETAINED_BY_COUNT] = "count" };

	for (size_t i = 0; val && i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(val, names[i])) {
			*by = (enum rbi_retained_sort)i;
			return 0;
		}
	return -1;
}

static int cmd_heap_top(struct session *s, int argc, char **argv)
{
	unsigned long top = TOP_DEFAULT;
	enum rbi_retained_sort by = RETAINED_BY_RETAINED;
	const char *dump = NULL, *val;
	struct retained r;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (option(argc, argv, &i, "--top", &val)) {
			if (!val || parse_count(val, ULONG_MAX, &top)) {
				fputs("rbinspect: heap top: --top needs a number\n", stderr);
				return EXIT_USAGE;
			}
		} else if (option(argc, argv, &i, "--by", &val)) {
			if (parse_sort(val, &by)) {
				fputs("rbinspect: heap top: --by retained, shallow or count\n", stderr);
				return EXIT_USAGE;
			}
		} else if ((a[0] == '-' && a[1]) || dump) {
			fputs("rbinspect: heap top: unexpected \"", stderr);
			rbi_out_text_cstr(stderr, a);
			fputs("\" (usage: " TOP_USAGE ")\n", stderr);
			return EXIT_USAGE;
		} else {
			dump = a;
		}
	}
	if (!dump) {
		fputs("rbinspect: heap top: a dump (usage: " TOP_USAGE ")\n", stderr);
		return EXIT_USAGE;
	}
	if (rbi_retained_compute(dump, &r)) {
		fputs("rbinspect: heap top: ", stderr);
		rbi_out_text_cstr(stderr, rbi_errmsg());
		fputc('\n', stderr);
		rbi_retained_free(&r);
		return EXIT_ERROR;
	}
	rbi_retained_sort(&r, by);
	if (s->json)
		retained_json(s, &r, top);
	else
		retained_text(s, &r, top);
	rbi_retained_free(&r);
	return EXIT_OK;
}

int cmd_heap(struct session *s, int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "diff"))
		return cmd_heap_diff(s, argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "dump"))
		return cmd_heap_dump(s, argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "retainers"))
		return cmd_heap_retainers(s, argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "top"))
		return cmd_heap_top(s, argc - 1, argv + 1);
	fputs("rbinspect: heap: dump, diff, retainers or top (usage: heap dump [-o FILE] "
	      "[--pause] [--strings[=N]], " DIFF_USAGE ", " RETAINERS_USAGE ", " TOP_USAGE ")\n",
	      stderr);
	return EXIT_USAGE;
}
