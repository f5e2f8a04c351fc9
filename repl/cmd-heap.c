/* cmd-heap.c: `heap dump ...` (cmd-heap-dump.c) and `heap diff A B [C]`:
 * heap dumps compared by type and class (dump/heapdiff.c): with two, the
 * objects that appeared and those that died between them; with three,
 * the classic leak view: what was made between the first two and is still
 * there in the third. */
#include <limits.h>
#include <inttypes.h>
#include <string.h>

#include "dump/heapdiff.h"
#include "internal.h"
#include "out/out.h"
#include "rbinspect.h"

#define DIFF_USAGE "heap diff A.json B.json [C.json] [--top N]"
#define TOP_DEFAULT 20

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

static void diff_text(struct session *s, const struct heapdiff *d, char **paths, int n,
		      unsigned long top)
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

static int cmd_heap_diff(struct session *s, int argc, char **argv)
{
	unsigned long top = TOP_DEFAULT;
	char *paths[3];
	struct heapdiff d;
	int n = 0, rc;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val;

		if (!strcmp(a, "--top") || !strncmp(a, "--top=", 6)) {
			val = a[5] == '=' ? a + 6 : (i + 1 < argc ? argv[++i] : NULL);
			if (!val || parse_count(val, ULONG_MAX, &top)) {
				fputs("rbinspect: heap diff: --top needs a number\n", stderr);
				return EXIT_USAGE;
			}
		} else if (a[0] == '-' && a[1]) {
			fputs("rbinspect: heap diff: unknown option \"", stderr);
			rbi_out_text_cstr(stderr, a);
			fputs("\" (usage: " DIFF_USAGE ")\n", stderr);
			return EXIT_USAGE;
		} else if (n == 3) {
			fputs("rbinspect: heap diff: at most three dumps (usage: " DIFF_USAGE ")\n",
			      stderr);
			return EXIT_USAGE;
		} else {
			paths[n++] = argv[i];
		}
	}
	if (n < 2) {
		fputs("rbinspect: heap diff: two or three dumps (usage: " DIFF_USAGE ")\n", stderr);
		return EXIT_USAGE;
	}
	if ((rc = heapdiff_run((const char *const *)paths, (size_t)n, &d))) {
		fprintf(stderr, "rbinspect: heap diff: %s\n", rbi_errmsg());
		heapdiff_free(&d);
		return EXIT_ERROR;
	}
	if (s->json)
		diff_json(s, &d, n, top);
	else
		diff_text(s, &d, paths, n, top);
	heapdiff_free(&d);
	return EXIT_OK;
}

int cmd_heap(struct session *s, int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "diff"))
		return cmd_heap_diff(s, argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "dump"))
		return cmd_heap_dump(s, argc - 1, argv + 1);
	fputs("rbinspect: heap: diff or dump (usage: heap dump [-o FILE] [--pause] "
	      "[--strings[=N]], " DIFF_USAGE ")\n", stderr);
	return EXIT_USAGE;
}
