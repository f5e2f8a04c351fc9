/* retainers.c: the shortest reference paths from a heap dump's roots to
 * one object (see retainers.h).
 *
 * The dump is read once into a graph: a node per object line and per root
 * (a ROOT line's name), the references as edges.  Nodes are then indexed
 * by address (a sorted array: a quarter of a hash table's memory), the
 * edges resolved to node numbers and laid out per source node, and one
 * breadth-first search from every start point at once gives each
 * reachable node its parent on a shortest path.  The paths shown are one
 * per retainer of the target (the nodes that refer to it), each that
 * retainer's shortest path plus the last step: two paths through the same
 * retainer would differ only further from the target, and what a user
 * asks is "which references keep it".
 *
 * Start points are the roots; a dump without ROOT lines (rbinspect
 * heap-dump's, today) starts from the objects nothing in it refers to,
 * and says so. */
#define _GNU_SOURCE     /* qsort_r */
#include <inttypes.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "dump/dumpfile.h"
#include "dump/retainers.h"
#include "internal.h"
#include "util/table.h"

#define NONE UINT32_MAX
/* Node numbers are 32-bit; a dump of more objects is refused. */
#define NODES_MAX (UINT32_MAX - 1)

struct node {
	uint64_t addr;          /* 0 for a root */
	uint64_t klass;
	const char *type;       /* interned; NULL for a root */
	const char *name;       /* a class's or module's name, a root's name */
};

struct retainers_state {
	struct rbi_strtab strings;
	struct node *nodes;
	size_t nnodes, capnodes;
	/* Edges as read: source node, destination address. */
	uint32_t *esrc;
	uint64_t *edst;
	size_t nedges, capsrc, capdst;
	/* After reading: nodes by address, edges per source (CSR). */
	uint32_t *by_addr;      /* object nodes, by address */
	size_t nobjects;        /* of by_addr */
	uint32_t *first;        /* nnodes + 1 offsets into adj */
	uint32_t *adj;          /* destination node numbers */
	uint32_t *parent;       /* BFS: the node before, NONE: a start point
				   or not reached */
	uint32_t *depth;        /* BFS: NONE: not reached */
	struct rbi_map names;   /* (class address, 0, 1) -> name */
	const char *path;
};

static const char *intern(struct retainers_state *st, const char *s)
{
	return s ? rbi_strtab_intern(&st->strings, s, strlen(s)) : NULL;
}

static int add_node(struct retainers_state *st, const struct node *n)
{
	if (st->nnodes >= NODES_MAX)
		return rbi_fail(RBI_NOMEM, "%s: more objects than we can index", st->path);
	if (!RBI_GROW(st->nodes, st->capnodes, st->nnodes + 1, 1024))
		return rbi_fail(RBI_NOMEM, "out of memory");
	st->nodes[st->nnodes++] = *n;
	return RBI_OK;
}

/* The references of the line just added as a node. */
static int add_edges(struct retainers_state *st, struct json_object *o)
{
	struct json_object *refs;
	size_t n;

	if (!json_object_object_get_ex(o, "references", &refs) ||
	    !json_object_is_type(refs, json_type_array))
		return RBI_OK;
	n = json_object_array_length(refs);
	if (st->nedges + n >= UINT32_MAX)
		return rbi_fail(RBI_NOMEM, "%s: more references than we can index", st->path);
	if (!RBI_GROW(st->esrc, st->capsrc, st->nedges + n, 4096) ||
	    !RBI_GROW(st->edst, st->capdst, st->nedges + n, 4096))
		return rbi_fail(RBI_NOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const char *s = json_object_get_string(json_object_array_get_idx(refs, i));

		if (!s)
			continue;
		st->esrc[st->nedges] = (uint32_t)(st->nnodes - 1);
		st->edst[st->nedges++] = strtoull(s, NULL, 16);
	}
	return RBI_OK;
}

static int read_line(struct json_object *o, uint64_t lineno, void *arg)
{
	struct retainers_state *st = arg;
	const char *type = dumpfile_str(o, "type"), *name;
	struct node n = { 0 };
	int rc;

	if (!type || !strcmp(type, "SHAPE"))
		return RBI_OK;
	if (!strcmp(type, "ROOT")) {
		name = dumpfile_str(o, "root");
		if (!(n.name = intern(st, name ? name : "(unnamed root)")))
			return rbi_fail(RBI_NOMEM, "out of memory");
		return (rc = add_node(st, &n)) ? rc : add_edges(st, o);
	}
	n = (struct node){ .addr = dumpfile_hex(o, "address"), .klass = dumpfile_hex(o, "class"),
			   .type = intern(st, type) };
	if (!n.type)
		return rbi_fail(RBI_NOMEM, "out of memory");
	if (!n.addr)
		return rbi_fail(RBI_CORRUPT, "%s:%" PRIu64 ": an object without an address",
				st->path, lineno);
	if ((!strcmp(type, "CLASS") || !strcmp(type, "MODULE")) &&
	    (name = dumpfile_str(o, "name"))) {
		if (!(n.name = intern(st, name)))
			return rbi_fail(RBI_NOMEM, "out of memory");
		if ((rc = rbi_map_put(&st->names, n.addr, 0, 1, (uint64_t)(uintptr_t)n.name)))
			return rc;
	}
	return (rc = add_node(st, &n)) ? rc : add_edges(st, o);
}

/* ---- the graph ----------------------------------------------------------- */

static int cmp_by_addr(const void *a, const void *b, void *arg)
{
	const struct node *nodes = arg;
	uint64_t x = nodes[*(const uint32_t *)a].addr, y = nodes[*(const uint32_t *)b].addr;

	return x < y ? -1 : x > y;
}

/* The node of the object at ADDR, NONE if the dump has no such object. */
static uint32_t node_at(const struct retainers_state *st, uint64_t addr)
{
	size_t lo = 0, hi = st->nobjects;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t a = st->nodes[st->by_addr[mid]].addr;

		if (a == addr)
			return st->by_addr[mid];
		if (a < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NONE;
}

/* Resolve the edges' addresses to nodes (in place: edst holds node numbers
   from then on) and count each source's. */
static void resolve_edges(struct retainers_state *st, struct retainers *out)
{
	for (size_t i = 0; i < st->nedges; i++) {
		uint32_t d = node_at(st, st->edst[i]);

		st->edst[i] = d;
		if (d == NONE)
			out->dangling++;
		else
			st->first[st->esrc[i] + 1]++;
	}
}

/* Index the objects by address, resolve the edges and lay them out per
   source node. */
static int build_graph(struct retainers_state *st, struct retainers *out)
{
	uint32_t *fill;

	if (!(st->by_addr = malloc((st->nnodes + 1) * sizeof(*st->by_addr))) ||
	    !(st->first = calloc(st->nnodes + 1, sizeof(*st->first))))
		return rbi_fail(RBI_NOMEM, "out of memory");
	for (size_t i = 0; i < st->nnodes; i++)
		if (st->nodes[i].addr)
			st->by_addr[st->nobjects++] = (uint32_t)i;
	qsort_r(st->by_addr, st->nobjects, sizeof(*st->by_addr), cmp_by_addr, st->nodes);
	out->objects = st->nobjects;
	out->references = st->nedges;
	resolve_edges(st, out);
	for (size_t i = 0; i < st->nnodes; i++)
		st->first[i + 1] += st->first[i];
	if (!(st->adj = malloc((st->first[st->nnodes] + 1) * sizeof(*st->adj))) ||
	    !(fill = malloc((st->nnodes + 1) * sizeof(*fill))))
		return rbi_fail(RBI_NOMEM, "out of memory");
	memcpy(fill, st->first, st->nnodes * sizeof(*fill));
	for (size_t i = 0; i < st->nedges; i++)
		if (st->edst[i] != NONE)
			st->adj[fill[st->esrc[i]]++] = (uint32_t)st->edst[i];
	free(fill);
	return RBI_OK;
}

/* ---- the search ---------------------------------------------------------- */

/* Breadth first from every start point: parent and depth of each node
   reached.  Without roots the start points are the objects nothing
   refers to. */
static int search(struct retainers_state *st, bool has_roots)
{
	uint32_t *queue;
	bool *referenced = NULL;
	size_t head = 0, tail = 0;

	if (!(st->parent = malloc(st->nnodes * sizeof(*st->parent))) ||
	    !(st->depth = malloc(st->nnodes * sizeof(*st->depth))) ||
	    !(queue = malloc((st->nnodes + 1) * sizeof(*queue))))
		return rbi_fail(RBI_NOMEM, "out of memory");
	if (!has_roots) {
		if (!(referenced = calloc(st->nnodes + 1, sizeof(*referenced)))) {
			free(queue);
			return rbi_fail(RBI_NOMEM, "out of memory");
		}
		for (size_t i = 0; i < st->first[st->nnodes]; i++)
			referenced[st->adj[i]] = true;
	}
	for (size_t i = 0; i < st->nnodes; i++) {
		st->parent[i] = NONE;
		st->depth[i] = NONE;
		if (has_roots ? !st->nodes[i].addr : !referenced[i]) {
			st->depth[i] = 0;
			queue[tail++] = (uint32_t)i;
		}
	}
	free(referenced);
	while (head < tail) {
		uint32_t n = queue[head++];

		for (uint32_t e = st->first[n]; e < st->first[n + 1]; e++) {
			uint32_t d = st->adj[e];

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

/* ---- the paths ----------------------------------------------------------- */

static void fill_step(const struct retainers_state *st, uint32_t n, struct retainers_step *s)
{
	const struct node *node = &st->nodes[n];
	uint64_t name;

	*s = (struct retainers_step){ .addr = node->addr, .klass = node->klass, .type = node->type };
	if (!node->addr)
		s->root = node->name;
	else if (node->name)
		s->class_name = node->name;
	else if (node->klass && rbi_map_get(&st->names, node->klass, 0, 1, &name))
		s->class_name = (const char *)(uintptr_t)name;
}

/* The path from a start point through retainer R to the target T. */
static int make_path(const struct retainers_state *st, uint32_t r, uint32_t t,
		     struct retainers_path *p)
{
	size_t n = (size_t)st->depth[r] + 2;

	if (!(p->steps = calloc(n, sizeof(*p->steps))))
		return rbi_fail(RBI_NOMEM, "out of memory");
	p->n = n;
	fill_step(st, t, &p->steps[n - 1]);
	for (size_t i = n - 1; i-- > 0; r = st->parent[r])
		fill_step(st, r, &p->steps[i]);
	return RBI_OK;
}

static int cmp_by_depth(const void *a, const void *b, void *arg)
{
	const uint32_t *depth = arg;
	uint32_t x = depth[*(const uint32_t *)a], y = depth[*(const uint32_t *)b];

	if (x != y)
		return x < y ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/* The target's retainers, each once; the reachable ones first, shortest
   path first. */
static int paths_to(struct retainers_state *st, uint32_t t, size_t max_paths,
		    struct retainers *out)
{
	uint32_t *ret = NULL;
	size_t n = 0, cap = 0, reached = 0;
	bool *seen;
	int rc = RBI_OK;

	if (!(seen = calloc(st->nnodes, sizeof(*seen))))
		return rbi_fail(RBI_NOMEM, "out of memory");
	for (size_t src = 0; src < st->nnodes; src++) {
		for (uint32_t e = st->first[src]; e < st->first[src + 1]; e++) {
			if (st->adj[e] != t || src == t || seen[src])
				continue;
			seen[src] = true;
			if (!RBI_GROW(ret, cap, n + 1, 16)) {
				rc = rbi_fail(RBI_NOMEM, "out of memory");
				goto out;
			}
			ret[n++] = (uint32_t)src;
			reached += st->depth[src] != NONE;
		}
	}
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
	free(seen);
	free(ret);
	return rc;
}

int retainers_find(const char *path, uint64_t target, size_t max_paths, struct retainers *out)
{
	struct retainers_state *st;
	uint32_t t;
	int rc;

	*out = (struct retainers){ 0 };
	if (!(st = calloc(1, sizeof(*st))))
		return rbi_fail(RBI_NOMEM, "out of memory");
	out->state = st;
	st->path = path;
	if ((rc = dumpfile_each(path, read_line, st)) || (rc = build_graph(st, out)))
		return rc;
	for (size_t i = 0; i < st->nnodes && !out->has_roots; i++)
		out->has_roots = !st->nodes[i].addr;
	if ((t = node_at(st, target)) == NONE)
		return rbi_fail(RBI_INVAL, "%s: no object at 0x%" PRIx64 " in this dump",
				path, target);
	fill_step(st, t, &out->target);
	if ((rc = search(st, out->has_roots)))
		return rc;
	return paths_to(st, t, max_paths, out);
}

void retainers_free(struct retainers *r)
{
	struct retainers_state *st = r->state;

	for (size_t i = 0; i < r->npaths; i++)
		free(r->paths[i].steps);
	free(r->paths);
	if (st) {
		rbi_strtab_free(&st->strings);
		rbi_map_free(&st->names);
		free(st->nodes);
		free(st->esrc);
		free(st->edst);
		free(st->by_addr);
		free(st->first);
		free(st->adj);
		free(st->parent);
		free(st->depth);
		free(st);
	}
	*r = (struct retainers){ 0 };
}
