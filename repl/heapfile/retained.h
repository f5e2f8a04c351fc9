/* retained.h: what each class of a heap dump keeps alive (retained.c):
 * the bytes each object retains (its own and those of every object only
 * reachable through it: its subtree of the dominator tree), summed per
 * type and class.  Not installed. */
#ifndef RBI_HEAPFILE_RETAINED_H
#define RBI_HEAPFILE_RETAINED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The objects of one type and class; a class or module has a row of its
   own (ITSELF). */
struct retained_row {
	const char *type;       /* "OBJECT" */
	const char *class_name; /* NULL: none in the dump */
	uint64_t klass;         /* 0: none */
	bool itself;            /* KLASS and CLASS_NAME are the one class or
				   module of the row, not its objects' class */
	uint64_t count;
	uint64_t shallow;       /* their own bytes */
	/* The bytes they retain, those of objects of the same type and class
	   retained by another of them counted once. */
	uint64_t retained;
};

struct retained {
	struct retained_row *rows;      /* by retained bytes, then count
					   (or as rbi_retained_sort() left them) */
	size_t nrows;
	bool has_roots, partial_roots;  /* as in struct heapgraph */
	uint64_t objects, bytes;        /* of the dump */
	uint64_t unreached, unreached_bytes;    /* objects no start point
						   reaches: in no row */
	struct retained_state *state;   /* what the strings live in */
};

/* Read the dump at PATH and compute the rows.  Memory: the graph's
   (heapgraph.h) and about 40 bytes more an object.  Errors (RBI_*, message
   set): as rbi_heapgraph_read(). */
int rbi_retained_compute(const char *path, struct retained *out);
void rbi_retained_free(struct retained *r);

enum rbi_retained_sort { RETAINED_BY_RETAINED, RETAINED_BY_SHALLOW, RETAINED_BY_COUNT };
/* Sort the rows by the column BY (largest first), then count, then type. */
void rbi_retained_sort(struct retained *r, enum rbi_retained_sort by);

#endif
