/* heapgraph.h: a heap dump as a graph (heapgraph.c): a node per object
 * line and per root, its references as edges, for the questions that need
 * the whole heap at once (heap retainers, heap top).  Not installed. */
#ifndef RBI_HEAPFILE_HEAPGRAPH_H
#define RBI_HEAPFILE_HEAPGRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/table.h"

#define HEAPGRAPH_NONE UINT32_MAX

struct heapgraph_node {
	uint64_t addr;          /* 0 for a root */
	uint64_t klass;         /* 0: none */
	uint64_t bytes;         /* memsize, else slot_size, else 40; 0 for a root */
	const char *type;       /* "HASH", interned; NULL for a root */
	const char *name;       /* a class's or module's own name, a root's
				   name ("vm", "global_tbl"); NULL: none */
};

struct heapgraph {
	struct heapgraph_node *nodes;
	size_t nnodes;
	/* References per node (CSR): node N refers to adj[first[N] .. first[N + 1]).
	   References to addresses the dump has no object at are left out. */
	uint32_t *first, *adj;
	bool has_roots;         /* the dump has ROOT lines */
	bool partial_roots;     /* one says "partial": the dump lacks references
				   (rbinspect heap-dump's), so objects nothing
				   in it refers to are start points too */
	uint64_t objects;       /* object lines */
	uint64_t references;    /* references read, roots' too */
	uint64_t dangling;      /* of them, to addresses with no object line */
	struct heapgraph_build *build;  /* the rest: strings, indexes */
};

/* Read the dump at PATH (gzip or plain) into G.  Memory: about 50 bytes an
   object and 16 a reference (12 once read).  Errors (RBI_*, message set): the file cannot
   be read or is no dump, more than 2^32 - 2 objects or references,
   RBI_NOMEM.  rbi_heapgraph_free() afterwards, also after an error. */
int rbi_heapgraph_read(const char *path, struct heapgraph *g);
void rbi_heapgraph_free(struct heapgraph *g);

/* The node of the object at ADDR, HEAPGRAPH_NONE if there is none. */
uint32_t rbi_heapgraph_node_at(const struct heapgraph *g, uint64_t addr);

/* The name of node N's class in the dump (for a class or module, its own
   name); NULL if it has none there. */
const char *rbi_heapgraph_class_name(const struct heapgraph *g, uint32_t n);

/* Whether each node is a start point: the roots, and for a dump without
   ROOT lines or with partial ones, the objects nothing in it refers to and
   one object of each cycle nothing outside it refers to.  A new array of
   nnodes entries (free() it), NULL when out of memory. */
bool *rbi_heapgraph_start_points(const struct heapgraph *g);

#endif
