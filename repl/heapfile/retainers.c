/* retainers.c: the shortest reference paths from a heap dump's roots to
 * one object (see retainers.h).
 *
 * One breadth-first search from every start point of the graph
 * (heapgraph.c) at once gives each reachable node its parent on a shortest
 * path.  The paths shown are one per retainer of the target (the nodes
 * that refer to it), each that retainer's shortest path plus the last
 * step: two paths through the same retainer would differ only further
 * from the target, and what a user asks is "which references keep it". */
#define _GNU_SOURCE     /* qsort_r */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "heapfile/heapgraph.h"
#include "heapfile/retainers.h"
#include "internal.h"

#define NONE HEAPGRAPH_NONE

struct retainers_state {
	struct heapgraph g;
	uint32_t *parent;       /* the node before on a shortest path; NONE: a
				   start point or not reached */
	uint32_t *depth;        /* references from a start point; NONE: not
				   reached */
};

/* Breadth first from every start point: parent and depth of each node
   reached. */
static int search(struct retainers_state *st)
{
	const struct heapgraph *g = &st->g;
	uint32_t *queue = NULL;
	bool *start;
	size_t head = 0, tail = 0;

	if (!(st->parent = malloc((g->nnodes + 1) * sizeof(*st->parent))) ||
	    !(st->depth = malloc((g->nnodes + 1) * sizeof(*st->depth))) ||
	    !(queue = malloc((g->nnodes + 1) * sizeof(*queue))) ||
	    !(start = rbi_heapgraph_start_points(g))) {
		free(queue);
		return rbi_fail(RBI_NOMEM, "out of memory");
	}
	for (size_t i = 0; i < g->nnodes; i++) {
		st->parent[i] = NONE;
		st->depth[i] = start[i] ? 0 : NONE;
		if (start[i])
			queue[tail++] = (uint32_t)i;
	}
	free(start);
	while (head < tail) {
		uint32_t n = queue[head++];

		for (uint32_t e = g->first[n]; e < g->first[n + 1]; e++) {
			uint32_t d = g->adj[e];

			if (st->depth[d] != NONE)
				continue;
			st->depth[d] = st->depth[n] + 1;
			st->parent[d] = n;
			queue[tail++] = d;
		}
	}
	free(queue);
	return RBI_OK;
}

static void fill_step(const struct heapgraph *g, uint32_t n, struct retainers_step *s)
{
	const struct heapgraph_node *node = &g->nodes[n];

	*s = (struct retainers_step){ .addr = node->addr, .klass = node->klass, .type = node->type };
	if (node->addr)
		s->class_name = rbi_heapgraph_class_name(g, n);
	else
		s->root = node->name;
}

/* The path from a start point through retainer R to the target T. */
static int make_path(const struct retainers_state *st, uint32_t r, uint32_t t,
		     struct retainers_path *p)
{
	size_t n = (size_t)st->depth[r] + 2;

	if (!(p->steps = calloc(n, sizeof(*p->steps))))
		return rbi_fail(RBI_NOMEM, "out of memory");
	p->n = n;
	fill_step(&st->g, t, &p->steps[n - 1]);
	for (size_t i = n - 1; i-- > 0; r = st->parent[r])
		fill_step(&st->g, r, &p->steps[i]);
	return RBI_OK;
}

/* Reached ones first, by depth; then by node number, for a stable order. */
static int cmp_by_depth(const void *a, const void *b, void *arg)
{
	const uint32_t *depth = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	if (depth[x] != depth[y])
		return depth[x] < depth[y] ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* The nodes that refer to T (T aside), each once, into *OUT (*N of them). */
static int retainers_of(const struct heapgraph *g, uint32_t t, uint32_t **out, size_t *n)
{
	size_t cap = 0;

	*out = NULL;
	*n = 0;
	for (size_t src = 0; src < g->nnodes; src++) {
		for (uint32_t e = g->first[src]; e < g->first[src + 1]; e++) {
			if (g->adj[e] != t || src == t)
				continue;
			if (!RBI_GROW(*out, cap, *n + 1, 16))
				return rbi_fail(RBI_NOMEM, "out of memory");
			(*out)[(*n)++] = (uint32_t)src;
			break;  /* once per retainer */
		}
	}
	return RBI_OK;
}

static int paths_to(struct retainers_state *st, uint32_t t, size_t max_paths,
		    struct retainers *out)
{
	uint32_t *ret;
	size_t n, reached = 0;
	int rc;

	if ((rc = retainers_of(&st->g, t, &ret, &n)))
		goto out;
	for (size_t i = 0; i < n; i++)
		reached += st->depth[ret[i]] != NONE;
	out->retainers = n;
	out->unreached = n - reached;
	if (n)
		qsort_r(ret, n, sizeof(*ret), cmp_by_depth, st->depth);
	out->npaths = reached < max_paths ? reached : max_paths;
	out->more = reached - out->npaths;
	if (out->npaths && !(out->paths = calloc(out->npaths, sizeof(*out->paths)))) {
		out->npaths = 0;
		rc = rbi_fail(RBI_NOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < out->npaths && !rc; i++)
		rc = make_path(st, ret[i], t, &out->paths[i]);
out:
	free(ret);
	return rc;
}

int rbi_retainers_find(const char *path, uint64_t target, size_t max_paths, struct retainers *out)
{
	struct retainers_state *st;
	uint32_t t;
	int rc;

	*out = (struct retainers){ 0 };
	if (!(st = calloc(1, sizeof(*st))))
		return rbi_fail(RBI_NOMEM, "out of memory");
	out->state = st;
	if ((rc = rbi_heapgraph_read(path, &st->g)))
		return rc;
	out->has_roots = st->g.has_roots;
	out->partial_roots = st->g.partial_roots;
	out->objects = st->g.objects;
	out->references = st->g.references;
	out->dangling = st->g.dangling;
	if ((t = rbi_heapgraph_node_at(&st->g, target)) == NONE)
		return rbi_fail(RBI_INVAL, "%s: no object at 0x%" PRIx64 " in this dump",
				path, target);
	fill_step(&st->g, t, &out->target);
	if ((rc = search(st)))
		return rc;
	return paths_to(st, t, max_paths, out);
}

void rbi_retainers_free(struct retainers *r)
{
	struct retainers_state *st = r->state;

	for (size_t i = 0; i < r->npaths; i++)
		free(r->paths[i].steps);
	free(r->paths);
	if (st) {
		rbi_heapgraph_free(&st->g);
		free(st->parent);
		free(st->depth);
		free(st);
	}
	*r = (struct retainers){ 0 };
}
