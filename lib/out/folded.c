/* folded.c: Brendan Gregg's collapsed stacks, one line per distinct stack:
 * "outer;middle;inner MICROSECONDS", the time the stack's samples stand
 * for (wall or CPU time, as the profile's mode), as Austin's collapsed
 * stacks carry it: a count of samples would not weigh late ticks right.  The readers (flamegraph.pl, inferno,
 * speedscope) split frames at ';' and the count at the last space, so a
 * name's ';', newlines and anything not printable are written as escapes
 * (\x3b, \n, \xNN); spaces are fine.  Lines are sorted, as
 * stackcollapse tools write them. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "out/render.h"

struct folded {
	struct rbi_names names;
	char **lines;
	size_t n, cap;
	int rc;
};

static int stack_line(const struct rbi_sample_frame *const *frames, size_t n,
		      uint64_t count, uint64_t weight_ns, void *arg)
{
	struct folded *c = arg;
	char *buf = NULL;
	size_t len = 0;
	FILE *m;

	if (!n)
		return 0;
	if (!(m = open_memstream(&buf, &len)))
		goto oom;
	for (size_t i = 0; i < n; i++) {
		const char *name = rbi_names_get(&c->names, frames[i]);

		if (!name) {
			fclose(m);
			free(buf);
			goto oom;
		}
		if (i)
			fputc(';', m);
		rbi_out_text_also(m, name, strlen(name), ";");
	}
	fprintf(m, " %" PRIu64 "\n", (weight_ns + 500) / 1000);
	if (fclose(m)) {
		free(buf);
		goto oom;
	}
	if (!RBI_GROW(c->lines, c->cap, c->n + 1, 256)) {
		free(buf);
		goto oom;
	}
	c->lines[c->n++] = buf;
	return 0;
oom:
	c->rc = rbi_fail(RBI_NOMEM, "out of memory");
	return 1;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int rbi_render_folded(rbi_profile *p, const struct rbi_profile_view *v, FILE *f)
{
	struct folded c = { 0 };
	int rc = rbi_profile_foreach_stack(p, v, stack_line, &c);

	if (rc >= 0)
		rc = c.rc;
	if (!rc) {
		if (c.n)        /* qsort of NULL is undefined, even of none */
			qsort(c.lines, c.n, sizeof(*c.lines), cmp);
		for (size_t i = 0; i < c.n; i++)
			fputs(c.lines[i], f);
	}
	for (size_t i = 0; i < c.n; i++)
		free(c.lines[i]);
	free(c.lines);
	rbi_names_free(&c.names);
	return rc;
}
