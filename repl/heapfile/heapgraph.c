/* heapgraph.c: a heap dump read into a graph (see heapgraph.h).
 *
 * Lines are read as they stream (dumpfile.c): each object and each root
 * becomes a node, each reference an edge kept as (source node, address).
 * When the file is read, the objects are indexed by address (a sorted
 * array: a quarter of a hash table's memory), the edges resolved to node
 * numbers and laid out per source node. */
#define _GNU_SOURCE     /* qsort_r */
#include <inttypes.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "heapfile/dumpfile.h"
#include "heapfile/heapgraph.h"
#include "internal.h"

/* Node and edge numbers are 32-bit: a larger dump is refused. */
#define COUNT_MAX (UINT32_MAX - 1)

struct heapgraph_build {
	const char *path;
	struct rbi_strtab strings;      /* types and names */
	struct rbi_map names;           /* (class address, 0, 1) -> name */
	size_t capnodes;
	/* Edges as read: source node, destination address. */
	uint32_t *esrc;
	uint64_t *edst;
	size_t nedges, capsrc, capdst;
	uint32_t *by_addr;              /* object nodes, by address */
};

static const char *intern(struct heapgraph_build *b, const char *s)
{
	return rbi_strtab_intern(&b->strings, s, strlen(s));
}

static int add_node(struct heapgraph *g, const struct heapgraph_node *n)
{
	struct heapgraph_build *b = g->build;

	if (g->nnodes >= COUNT_MAX)
		return rbi_fail(RBI_NOMEM, "%s: more objects than we can index", b->path);
	if (!RBI_GROW(g->nodes, b->capnodes, g->nnodes + 1, 1024))
		return rbi_fail(RBI_NOMEM, "out of memory");
	g->nodes[g->nnodes++] = *n;
	return RBI_OK;
}

/* The references of the line just added as a node. */
static int add_edges(struct heapgraph *g, struct json_object *o)
{
	struct heapgraph_build *b = g->build;
	struct json_object *refs;
	size_t n;

	if (!json_object_object_get_ex(o, "references", &refs) ||
	    !json_object_is_type(refs, json_type_array))
		return RBI_OK;
	n = json_object_array_length(refs);
	if (b->nedges + n >= COUNT_MAX)
		return rbi_fail(RBI_NOMEM, "%s: more references than we can index", b->path);
	if (!RBI_GROW(b->esrc, b->capsrc, b->nedges + n, 4096) ||
	    !RBI_GROW(b->edst, b->capdst, b->nedges + n, 4096))
		return rbi_fail(RBI_NOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const char *s = json_object_get_string(json_object_array_get_idx(refs, i));

		if (!s)
			continue;
		b->esrc[b->nedges] = (uint32_t)(g->nnodes - 1);
		b->edst[b->nedges++] = strtoull(s, NULL, 16);
	}
	return RBI_OK;
}

/* A ROOT line's node; an object line's, and its class's name. */
static int line_node(struct heapgraph *g, struct json_object *o, const char *type,
		     uint64_t lineno, struct heapgraph_node *n)
{
	struct heapgraph_build *b = g->build;
	struct json_object *partial;
	const char *name;

	if (!strcmp(type, "ROOT")) {
		name = rbi_dumpfile_str(o, "root");
		*n = (struct heapgraph_node){ .name = intern(b, name ? name : "(unnamed root)") };
		g->has_roots = true;
		if (json_object_object_get_ex(o, "partial", &partial) &&
		    json_object_get_boolean(partial))
			g->partial_roots = true;
		return n->name ? RBI_OK : rbi_fail(RBI_NOMEM, "out of memory");
	}
	*n = (struct heapgraph_node){ .addr = rbi_dumpfile_hex(o, "address"),
				      .klass = rbi_dumpfile_hex(o, "class"),
				      .bytes = rbi_dumpfile_bytes(o), .type = intern(b, type) };
	if (!n->type)
		return rbi_fail(RBI_NOMEM, "out of memory");
	if (!n->addr)
		return rbi_fail(RBI_CORRUPT, "%s:%" PRIu64 ": an object without an address",
				b->path, lineno);
	g->objects++;
	if ((strcmp(type, "CLASS") && strcmp(type, "MODULE")) ||
	    !(name = rbi_dumpfile_str(o, "name")))
		return RBI_OK;
	if (!(n->name = intern(b, name)))
		return rbi_fail(RBI_NOMEM, "out of memory");
	return rbi_map_put(&b->names, n->addr, 0, 1, (uint64_t)(uintptr_t)n->name);
}

static int read_line(struct json_object *o, uint64_t lineno, void *arg)
{
	struct heapgraph *g = arg;
	const char *type = rbi_dumpfile_str(o, "type");
	struct heapgraph_node n;
	int rc;

	if (!type || !strcmp(type, "SHAPE"))    /* no object of the heap */
		return RBI_OK;
	if ((rc = line_node(g, o, type, lineno, &n)) || (rc = add_node(g, &n)))
		return rc;
	return add_edges(g, o);
}

static int cmp_by_addr(const void *a, const void *b, void *arg)
{
	const struct heapgraph_node *nodes = arg;
	uint64_t x = nodes[*(const uint32_t *)a].addr, y = nodes[*(const uint32_t *)b].addr;

	return x < y ? -1 : x > y;
}

uint32_t rbi_heapgraph_node_at(const struct heapgraph *g, uint64_t addr)
{
	const uint32_t *by_addr = g->build->by_addr;
	size_t lo = 0, hi = g->objects;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t a = g->nodes[by_addr[mid]].addr;

		if (a == addr)
			return by_addr[mid];
		if (a < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return HEAPGRAPH_NONE;
}

/* Resolve the edges' addresses to nodes (in place: edst holds node numbers
   from then on) and count each source's in FIRST[source + 1]. */
static void resolve_edges(struct heapgraph *g)
{
	struct heapgraph_build *b = g->build;

	for (size_t i = 0; i < b->nedges; i++) {
		uint32_t d = rbi_heapgraph_node_at(g, b->edst[i]);

		b->edst[i] = d;
		if (d == HEAPGRAPH_NONE)
			g->dangling++;
		else
			g->first[b->esrc[i] + 1]++;
	}
}

/* Index the objects by address, resolve the edges and lay them out per
   source node; the edges as read are freed. */
static int index_graph(struct heapgraph *g)
{
	struct heapgraph_build *b = g->build;
	uint32_t *fill;
	size_t k = 0;

	if (!(b->by_addr = malloc((g->nnodes + 1) * sizeof(*b->by_addr))) ||
	    !(g->first = calloc(g->nnodes + 1, sizeof(*g->first))))
		return rbi_fail(RBI_NOMEM, "out of memory");
	for (size_t i = 0; i < g->nnodes; i++)
		if (g->nodes[i].addr)
			b->by_addr[k++] = (uint32_t)i;
	qsort_r(b->by_addr, k, sizeof(*b->by_addr), cmp_by_addr, g->nodes);
	g->references = b->nedges;
	resolve_edges(g);
	for (size_t i = 0; i < g->nnodes; i++)
		g->first[i + 1] += g->first[i];
	if (!(g->adj = malloc((g->first[g->nnodes] + 1) * sizeof(*g->adj))) ||
	    !(fill = malloc((g->nnodes + 1) * sizeof(*fill))))
		return rbi_fail(RBI_NOMEM, "out of memory");
	memcpy(fill, g->first, g->nnodes * sizeof(*fill));
	for (size_t i = 0; i < b->nedges; i++)
		if (b->edst[i] != HEAPGRAPH_NONE)
			g->adj[fill[b->esrc[i]]++] = (uint32_t)b->edst[i];
	free(fill);
	free(b->esrc);
	free(b->edst);
	b->esrc = NULL;
	b->edst = NULL;
	return RBI_OK;
}

int rbi_heapgraph_read(const char *path, struct heapgraph *g)
{
	int rc;

	*g = (struct heapgraph){ 0 };
	if (!(g->build = calloc(1, sizeof(*g->build))))
		return rbi_fail(RBI_NOMEM, "out of memory");
	g->build->path = path;
	if ((rc = rbi_dumpfile_each(path, read_line, g)))
		return rc;
	return index_graph(g);
}

const char *rbi_heapgraph_class_name(const struct heapgraph *g, uint32_t n)
{
	const struct heapgraph_node *node = &g->nodes[n];
	uint64_t name;

	if (node->addr && node->name)
		return node->name;
	if (node->klass && rbi_map_get(&g->build->names, node->klass, 0, 1, &name))
		return (const char *)(uintptr_t)name;
	return NULL;
}

/* Mark from each start point what it reaches; then an object still not
   reached is in a cycle nothing outside refers to (a Proc in a local of
   its own environment, a method entry and its iseq...): its first object
   becomes a start point too, and the cycle is marked from it.  False when
   out of memory. */
static bool cycle_starts(const struct heapgraph *g, bool *start)
{
	bool *seen = calloc(g->nnodes + 1, sizeof(*seen));
	uint32_t *queue = malloc((g->nnodes + 1) * sizeof(*queue));

	if (!seen || !queue) {
		free(seen);
		free(queue);
		return false;
	}
	for (size_t pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < g->nnodes; i++) {
			size_t head = 0, tail = 0;

			if (seen[i] || (!pass && !start[i]))
				continue;
			start[i] = true;
			seen[i] = true;
			queue[tail++] = (uint32_t)i;
			while (head < tail) {
				uint32_t n = queue[head++];

				for (size_t e = g->first[n]; e < g->first[n + 1]; e++)
					if (!seen[g->adj[e]]) {
						seen[g->adj[e]] = true;
						queue[tail++] = g->adj[e];
					}
			}
		}
	}
	free(seen);
	free(queue);
	return true;
}

bool *rbi_heapgraph_start_points(const struct heapgraph *g)
{
	bool *start = calloc(g->nnodes + 1, sizeof(*start));

	if (!start)
		return NULL;
	if (g->has_roots && !g->partial_roots) {
		for (size_t i = 0; i < g->nnodes; i++)
			start[i] = !g->nodes[i].addr;
		return start;
	}
	for (size_t i = 0; i < g->nnodes; i++)
		start[i] = true;
	for (size_t i = 0; i < g->first[g->nnodes]; i++)
		start[g->adj[i]] = false;
	if (!cycle_starts(g, start)) {
		free(start);
		return NULL;
	}
	return start;
}

void rbi_heapgraph_free(struct heapgraph *g)
{
	struct heapgraph_build *b = g->build;

	if (b) {
		rbi_strtab_free(&b->strings);
		rbi_map_free(&b->names);
		free(b->esrc);
		free(b->edst);
		free(b->by_addr);
		free(b);
	}
	free(g->nodes);
	free(g->first);
	free(g->adj);
	*g = (struct heapgraph){ 0 };
}
