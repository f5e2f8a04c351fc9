/* retained.c: retained bytes per type and class of a heap dump (see
 * retained.h).
 *
 * An object B is retained by A when every path from the start points to B
 * passes through A: A dominates B, and freeing A would free B.  The
 * dominator tree is computed by Cooper, Harvey and Kennedy's iterative
 * algorithm ("A Simple, Fast Dominance Algorithm", 2001) over a depth-first
 * postorder from a virtual root whose successors are the start points
 * (rbi_heapgraph_start_points()); heap graphs converge in a few passes.  Each
 * object's retained bytes are its own plus its dominator-tree children's,
 * summed in postorder (a dominator is always later in postorder than what
 * it dominates).  A class's row sums the objects of that class that no
 * other object of the same class dominates, so a linked list's nodes are
 * counted once, not once per node above them.  Every walk is iterative:
 * a heap's lists can be millions long. */
#define _GNU_SOURCE     /* qsort_r */
#include <stdlib.h>
#include <string.h>

#include "heapfile/heapgraph.h"
#include "heapfile/retained.h"
#include "internal.h"
#include "util/table.h"

#define NONE HEAPGRAPH_NONE
/* Passes of the dominator iteration before giving up; heap graphs take a
   handful. */
#define PASSES_MAX 1000

struct retained_state {
	struct heapgraph g;
	uint32_t root;          /* the virtual root: node number nnodes */
	uint32_t *po;           /* postorder number of each node; NONE: not
				   reached */
	uint32_t *order;        /* nodes by postorder number */
	uint32_t nreached;      /* of order, the virtual root last */
	uint32_t *pfirst, *pred;        /* predecessors (CSR), reached only */
	uint32_t *idom;
	uint64_t *ret;          /* retained bytes */
	uint32_t *key;          /* each node's row */
	struct rbi_map rows;    /* (type, class, 1) -> row */
};

/* The successors of N: the virtual root's are the start points. */
struct succ {
	const uint32_t *v;
	uint32_t n;
};

/* ---- postorder ----------------------------------------------------------- */

/* Depth first from the virtual root, without recursion (heaps hold lists
   millions long): each stack entry is a node and the index of its next
   successor. */
static int postorder(struct retained_state *st, const uint32_t *starts, uint32_t nstarts)
{
	const struct heapgraph *g = &st->g;
	struct frame { uint32_t node, next; } *stack;
	bool *seen;
	size_t depth = 0;

	stack = malloc((g->nnodes + 2) * sizeof(*stack));
	seen = calloc(g->nnodes + 1, sizeof(*seen));
	if (!stack || !seen) {
		free(stack);
		free(seen);
		return rbi_fail(RBI_NOMEM, "out of memory");
	}
	stack[depth++] = (struct frame){ st->root, 0 };
	seen[st->root] = true;
	while (depth) {
		struct frame *f = &stack[depth - 1];
		struct succ s = f->node == st->root ?
			(struct succ){ starts, nstarts } :
			(struct succ){ g->adj + g->first[f->node],
				       g->first[f->node + 1] - g->first[f->node] };

		if (f->next < s.n) {
			uint32_t d = s.v[f->next++];

			if (!seen[d]) {
				seen[d] = true;
				stack[depth++] = (struct frame){ d, 0 };
			}
			continue;
		}
		st->po[f->node] = st->nreached;
		st->order[st->nreached++] = f->node;
		depth--;
	}
	free(stack);
	free(seen);
	return RBI_OK;
}

/* Predecessors of the reached nodes (the virtual root for start points). */
static int predecessors(struct retained_state *st, const uint32_t *starts, uint32_t nstarts)
{
	const struct heapgraph *g = &st->g;
	uint32_t *fill;

	if (!(st->pfirst = calloc((size_t)g->nnodes + 2, sizeof(*st->pfirst))))
		return rbi_fail(RBI_NOMEM, "out of memory");
	for (uint32_t i = 0; i < nstarts; i++)
		st->pfirst[starts[i] + 1]++;
	for (size_t n = 0; n < g->nnodes; n++)
		if (st->po[n] != NONE)
			for (uint32_t e = g->first[n]; e < g->first[n + 1]; e++)
				st->pfirst[g->adj[e] + 1]++;
	for (size_t n = 0; n <= g->nnodes; n++)
		st->pfirst[n + 1] += st->pfirst[n];
	if (!(st->pred = malloc(((size_t)st->pfirst[g->nnodes + 1] + 1) * sizeof(*st->pred))) ||
	    !(fill = malloc(((size_t)g->nnodes + 1) * sizeof(*fill))))
		return rbi_fail(RBI_NOMEM, "out of memory");
	memcpy(fill, st->pfirst, ((size_t)g->nnodes + 1) * sizeof(*fill));
	for (uint32_t i = 0; i < nstarts; i++)
		st->pred[fill[starts[i]]++] = st->root;
	for (size_t n = 0; n < g->nnodes; n++)
		if (st->po[n] != NONE)
			for (uint32_t e = g->first[n]; e < g->first[n + 1]; e++)
				st->pred[fill[g->adj[e]]++] = (uint32_t)n;
	free(fill);
	return RBI_OK;
}

/* ---- dominators ---------------------------------------------------------- */

static uint32_t intersect(const struct retained_state *st, uint32_t a, uint32_t b)
{
	while (a != b) {
		while (st->po[a] < st->po[b])
			a = st->idom[a];
		while (st->po[b] < st->po[a])
			b = st->idom[b];
	}
	return a;
}

static int dominators(struct retained_state *st)
{
	bool changed = true;

	for (size_t n = 0; n <= st->g.nnodes; n++)
		st->idom[n] = NONE;
	st->idom[st->root] = st->root;
	for (int pass = 0; changed; pass++) {
		if (pass == PASSES_MAX)
			return rbi_fail(RBI_CORRUPT, "the dominator tree did not settle in %d passes",
					PASSES_MAX);
		changed = false;
		/* Reverse postorder, the virtual root (last) aside. */
		for (uint32_t i = st->nreached - 1; i-- > 0;) {
			uint32_t n = st->order[i], best = NONE;

			for (uint32_t e = st->pfirst[n]; e < st->pfirst[n + 1]; e++) {
				uint32_t p = st->pred[e];

				if (st->idom[p] == NONE)
					continue;
				best = best == NONE ? p : intersect(st, p, best);
			}
			if (best != NONE && st->idom[n] != best) {
				st->idom[n] = best;
				changed = true;
			}
		}
	}
	return RBI_OK;
}

/* ---- rows ---------------------------------------------------------------- */

/* Whether a node is a class or module: its row is its own (its class word
   is its singleton class, or Module for every plain module). */
static bool is_class(const struct heapgraph_node *node)
{
	return !strcmp(node->type, "CLASS") || !strcmp(node->type, "MODULE");
}

/* Each reached object's row, counted and its own bytes summed. */
static int assign_rows(struct retained_state *st, struct retained *out)
{
	const struct heapgraph *g = &st->g;
	size_t cap = 0;

	st->key[st->root] = NONE;
	for (size_t n = 0; n < g->nnodes; n++) {
		const struct heapgraph_node *node = &g->nodes[n];
		uint64_t row, klass;

		st->key[n] = NONE;
		if (!node->addr)
			continue;
		out->bytes += node->bytes;
		if (st->po[n] == NONE) {
			out->unreached++;
			out->unreached_bytes += node->bytes;
			continue;
		}
		klass = is_class(node) ? node->addr : node->klass;
		if (!rbi_map_get(&st->rows, (uint64_t)(uintptr_t)node->type, klass, 1, &row)) {
			row = out->nrows;
			if (!RBI_GROW(out->rows, cap, out->nrows + 1, 256) ||
			    rbi_map_put(&st->rows, (uint64_t)(uintptr_t)node->type, klass, 1, row))
				return rbi_fail(RBI_NOMEM, "out of memory");
			out->rows[out->nrows++] = (struct retained_row){
				.type = node->type, .klass = klass, .itself = is_class(node),
				.class_name = rbi_heapgraph_class_name(g, (uint32_t)n) };
		}
		st->key[n] = (uint32_t)row;
		out->rows[row].count++;
		out->rows[row].shallow += node->bytes;
	}
	return RBI_OK;
}

/* Rows by the column asked for, then by count, then by type. */
static int cmp_rows(const void *a, const void *b, void *arg)
{
	const struct retained_row *x = a, *y = b;
	enum rbi_retained_sort by = *(const enum rbi_retained_sort *)arg;
	uint64_t kx = by == RETAINED_BY_SHALLOW ? x->shallow : by == RETAINED_BY_COUNT ? x->count : x->retained;
	uint64_t ky = by == RETAINED_BY_SHALLOW ? y->shallow : by == RETAINED_BY_COUNT ? y->count : y->retained;

	if (kx != ky)
		return kx > ky ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->type, y->type);
}

void rbi_retained_sort(struct retained *r, enum rbi_retained_sort by)
{
	if (r->nrows)
		qsort_r(r->rows, r->nrows, sizeof(*r->rows), cmp_rows, &by);
}

/* Add to each row the retained bytes of its objects that no other object
   of the row dominates: depth first down the dominator tree (children
   laid out per node from idom), with a count per row of the objects of
   that row on the way down.  Iterative: the tree can be millions deep. */
static int sum_rows(struct retained_state *st, struct retained *out)
{
	size_t n = st->g.nnodes + 1;
	uint32_t *cfirst = calloc(n + 1, sizeof(*cfirst)), *child = NULL, *fill = NULL;
	uint32_t *above = calloc(out->nrows + 1, sizeof(*above));
	struct frame { uint32_t node, next; } *stack = NULL;
	size_t depth = 0;
	int rc = RBI_OK;

	if (!cfirst || !above || !(child = malloc(n * sizeof(*child))) ||
	    !(fill = malloc(n * sizeof(*fill))) || !(stack = malloc((n + 1) * sizeof(*stack)))) {
		rc = rbi_fail(RBI_NOMEM, "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i + 1 < st->nreached; i++)
		cfirst[st->idom[st->order[i]] + 1]++;
	for (size_t i = 0; i < n; i++)
		cfirst[i + 1] += cfirst[i];
	memcpy(fill, cfirst, n * sizeof(*fill));
	for (uint32_t i = 0; i + 1 < st->nreached; i++)
		child[fill[st->idom[st->order[i]]]++] = st->order[i];
	stack[depth++] = (struct frame){ st->root, cfirst[st->root] };
	while (depth) {
		struct frame *f = &stack[depth - 1];
		uint32_t c, key;

		if (f->next == cfirst[f->node + 1]) {   /* done with its subtree */
			if (f->node != st->root && st->key[f->node] != NONE)
				above[st->key[f->node]]--;
			depth--;
			continue;
		}
		c = child[f->next++];
		if ((key = st->key[c]) != NONE) {
			if (!above[key])
				out->rows[key].retained += st->ret[c];
			above[key]++;
		}
		stack[depth++] = (struct frame){ c, cfirst[c] };
	}
out:
	free(cfirst);
	free(child);
	free(fill);
	free(above);
	free(stack);
	return rc;
}

static int compute(struct retained_state *st, struct retained *out)
{
	size_t n = st->g.nnodes + 1;
	bool *start = rbi_heapgraph_start_points(&st->g);
	uint32_t *starts = NULL, nstarts = 0;
	int rc;

	if (!start || !(starts = malloc(n * sizeof(*starts))) ||
	    !(st->po = malloc(n * sizeof(*st->po))) || !(st->order = malloc(n * sizeof(*st->order))) ||
	    !(st->idom = malloc(n * sizeof(*st->idom))) || !(st->ret = calloc(n, sizeof(*st->ret))) ||
	    !(st->key = malloc(n * sizeof(*st->key)))) {
		rc = rbi_fail(RBI_NOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < st->g.nnodes; i++)
		if (start[i])
			starts[nstarts++] = (uint32_t)i;
	for (size_t i = 0; i < n; i++)
		st->po[i] = NONE;
	if ((rc = postorder(st, starts, nstarts)) || (rc = predecessors(st, starts, nstarts)) ||
	    (rc = dominators(st)) || (rc = assign_rows(st, out)))
		goto out;
	/* Retained bytes of every object: what a node dominates comes before
	   it in postorder. */
	for (uint32_t i = 0; i + 1 < st->nreached; i++) {
		uint32_t v = st->order[i];

		st->ret[v] += st->g.nodes[v].bytes;
		st->ret[st->idom[v]] += st->ret[v];
	}
	if ((rc = sum_rows(st, out)))
		goto out;
	rbi_retained_sort(out, RETAINED_BY_RETAINED);
out:
	free(start);
	free(starts);
	return rc;
}

int rbi_retained_compute(const char *path, struct retained *out)
{
	struct retained_state *st;
	int rc;

	*out = (struct retained){ 0 };
	if (!(st = calloc(1, sizeof(*st))))
		return rbi_fail(RBI_NOMEM, "out of memory");
	out->state = st;
	if ((rc = rbi_heapgraph_read(path, &st->g)))
		return rc;
	st->root = (uint32_t)st->g.nnodes;
	out->has_roots = st->g.has_roots;
	out->partial_roots = st->g.partial_roots;
	out->objects = st->g.objects;
	return compute(st, out);
}

void rbi_retained_free(struct retained *r)
{
	struct retained_state *st = r->state;

	if (st) {
		rbi_heapgraph_free(&st->g);
		free(st->po);
		free(st->order);
		free(st->pfirst);
		free(st->pred);
		free(st->idom);
		free(st->ret);
		free(st->key);
		rbi_map_free(&st->rows);
		free(st);
	}
	free(r->rows);
	*r = (struct retained){ 0 };
}
