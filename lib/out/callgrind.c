/* callgrind.c: the callgrind format (valgrind.org/docs/manual/
 * cl-format.html), for callgrind_annotate and KCachegrind.
 *
 * Two events: the time the samples stand for in nanoseconds (cpu_ns or
 * wall_ns, as the profile's mode; first, so annotate sorts by it), and
 * Samples.  A function is a (label, path) pair; its self cost
 * is put on the line each sample was at, and each call it made on the line
 * of the call, with the callee's inclusive cost (counted once per stack,
 * so recursion does not count a sample twice).  C methods have no file:
 * they are in "(cfunc)"; GC and made-up frames in "(rbinspect)". */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "out/render.h"

struct cost {
	uint32_t fn, callee;            /* callee: index + 1, 0 for self cost */
	int line;
	uint64_t n, ns;                 /* samples, time */
};

struct cg {
	struct rbi_functions fns;
	struct rbi_map idx, seen;       /* (fn + 1, line + 1, callee + 1 or 0) -> cost */
	struct cost *costs;
	size_t ncosts, costs_cap;
	uint64_t total, total_ns, serial;
	int rc;
};

/* Add COUNT samples and NS to the cost (FN, LINE, CALLEE). */
static int add_cost(struct cg *c, long fn, int line, long callee, uint64_t count, uint64_t ns)
{
	uint64_t a = (uint64_t)fn + 1, b = (uint64_t)(uint32_t)line + 1,
		 k = callee < 0 ? 0 : (uint64_t)callee + 1, i;

	if (!rbi_map_get(&c->idx, a, b, k, &i)) {
		if (!RBI_GROW(c->costs, c->costs_cap, c->ncosts + 1, 256))
			return -1;
		i = c->ncosts++;
		c->costs[i] = (struct cost){ (uint32_t)fn, (uint32_t)k, line, 0, 0 };
		if (rbi_map_put(&c->idx, a, b, k, i))
			return -1;
	}
	c->costs[i].n += count;
	c->costs[i].ns += ns;
	return 0;
}

static int add_stack(const struct rbi_sample_frame *const *frames, size_t n,
		     uint64_t count, uint64_t weight_ns, void *arg)
{
	struct cg *c = arg;
	long fn, caller = -1;
	uint64_t have;

	if (!n)
		return 0;
	c->total += count;
	c->total_ns += weight_ns;
	c->serial++;
	for (size_t i = 0; i < n; i++) {
		if ((fn = rbi_functions_get(&c->fns, frames[i])) < 0)
			goto oom;
		if (caller >= 0) {
			uint64_t a = (uint64_t)caller + 1, b = (uint64_t)(uint32_t)frames[i - 1]->line + 1,
				 k = (uint64_t)fn + 1;

			if (!rbi_map_get(&c->seen, a, b, k, &have) || have != c->serial) {
				if (rbi_map_put(&c->seen, a, b, k, c->serial) ||
				    add_cost(c, caller, frames[i - 1]->line, fn, count, weight_ns))
					goto oom;
			}
		}
		caller = fn;
	}
	if (add_cost(c, caller, frames[n - 1]->line, -1, count, weight_ns))
		goto oom;
	return 0;
oom:
	c->rc = rbi_fail(RBI_NOMEM, "out of memory");
	return 1;
}

static int by_fn(const void *x, const void *y)
{
	const struct cost *a = x, *b = y;

	if (a->fn != b->fn)
		return a->fn < b->fn ? -1 : 1;
	if (a->callee != b->callee)
		return a->callee < b->callee ? -1 : 1;
	return a->line < b->line ? -1 : a->line > b->line;
}

static const char *file_of(const struct rbi_sample_frame *f)
{
	if (f->path)
		return f->path;
	return f->kind == RBI_FRAME_CFUNC ? "(cfunc)" : "(rbinspect)";
}

/* "(ID) NAME" the first time, "(ID)" after. */
static void compressed(FILE *f, const char *key, uint32_t id, bool *seen, const char *name)
{
	fprintf(f, "%s=(%u)", key, id + 1);
	if (!*seen) {
		fputc(' ', f);
		rbi_out_text_cstr(f, name);
		*seen = true;
	}
	fputc('\n', f);
}

int rbi_render_callgrind(rbi_profile *p, const struct rbi_profile_view *v, FILE *f)
{
	struct cg c = { 0 };
	const char *event = !strcmp(rbi_profile_mode(p), "cpu") ? "cpu_ns" : "wall_ns";
	bool *fn_seen = NULL, *file_seen = NULL;
	uint32_t *file_id = NULL;
	const char *pid = rbi_profile_meta(p, "pid"), *cmd = rbi_profile_meta(p, "command");
	int rc;

	rc = rbi_profile_foreach_stack(p, v, add_stack, &c);
	if (rc >= 0)
		rc = c.rc;
	if (rc)
		goto out;
	rbi_map_free(&c.seen);
	fn_seen = calloc(c.fns.n + 1, sizeof(*fn_seen));
	file_seen = calloc(c.fns.n + 1, sizeof(*file_seen));
	file_id = calloc(c.fns.n + 1, sizeof(*file_id));
	if (!fn_seen || !file_seen || !file_id) {
		rc = rbi_fail(RBI_NOMEM, "out of memory");
		goto out;
	}
	if (c.ncosts)
		qsort(c.costs, c.ncosts, sizeof(*c.costs), by_fn);
	/* Files get their own compression ids, one per path (paths are
	   interned: one pointer each). */
	for (size_t i = 0; i < c.fns.n; i++) {
		uint64_t id;

		if (!rbi_map_get(&c.seen, (uintptr_t)file_of(c.fns.v[i]), 0, 0, &id)) {
			id = i;
			if (rbi_map_put(&c.seen, (uintptr_t)file_of(c.fns.v[i]), 0, 0, id)) {
				rc = rbi_fail(RBI_NOMEM, "out of memory");
				goto out;
			}
		}
		file_id[i] = (uint32_t)id;
	}

	fputs("# callgrind format\nversion: 1\ncreator: rbinspect\n", f);
	if (pid)
		fprintf(f, "pid: %s\n", pid);
	if (cmd) {
		fputs("cmd: ", f);
		rbi_out_text_cstr(f, cmd);
		fputc('\n', f);
	}
	fprintf(f, "positions: line\nevents: %s Samples\nsummary: %" PRIu64 " %" PRIu64 "\n",
		event, c.total_ns, c.total);
	for (size_t i = 0; i < c.ncosts; i++) {
		const struct cost *k = &c.costs[i];
		const struct rbi_sample_frame *fr = c.fns.v[k->fn];

		if (!i || c.costs[i - 1].fn != k->fn) {
			fputc('\n', f);
			compressed(f, "fl", file_id[k->fn], &file_seen[file_id[k->fn]], file_of(fr));
			compressed(f, "fn", k->fn, &fn_seen[k->fn], fr->label);
		}
		if (!k->callee) {
			fprintf(f, "%d %" PRIu64 " %" PRIu64 "\n", k->line, k->ns, k->n);
			continue;
		}
		const struct rbi_sample_frame *ce = c.fns.v[k->callee - 1];

		compressed(f, "cfl", file_id[k->callee - 1], &file_seen[file_id[k->callee - 1]],
			   file_of(ce));
		compressed(f, "cfn", k->callee - 1, &fn_seen[k->callee - 1], ce->label);
		fprintf(f, "calls=%" PRIu64 " %d\n%d %" PRIu64 " %" PRIu64 "\n", k->n,
			ce->first_line > 0 ? ce->first_line : 0, k->line, k->ns, k->n);
	}
	fprintf(f, "\ntotals: %" PRIu64 " %" PRIu64 "\n", c.total_ns, c.total);
out:
	free(c.costs);
	free(fn_seen);
	free(file_seen);
	free(file_id);
	rbi_functions_free(&c.fns);
	rbi_map_free(&c.idx);
	rbi_map_free(&c.seen);
	return rc;
}
