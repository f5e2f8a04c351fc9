/* retainers.h: who keeps an object alive (retainers.c): the shortest
 * reference paths from a heap dump's roots to one of its objects, in an
 * ObjectSpace.dump_all file (the target's own: references of every type and
 * the ROOT lines; rbinspect heap-dump's: the references of the types it
 * reads, and partial ROOT lines).  Not installed. */
#ifndef RBI_HEAPFILE_RETAINERS_H
#define RBI_HEAPFILE_RETAINERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One step of a path: a root, or an object of the dump. */
struct retainers_step {
	const char *root;       /* a ROOT line's "root" ("vm", "global_tbl");
				   NULL for an object */
	uint64_t addr;          /* the object's address; 0 for a root */
	uint64_t klass;         /* 0: none */
	const char *type;       /* "HASH"; NULL for a root */
	const char *class_name; /* the class's "name" in the dump, or for a
				   class or module its own; NULL: none */
};

/* A path from its start (a root, or without ROOT lines an object nothing
   in the dump refers to) to the target, which is its last step. */
struct retainers_path {
	struct retainers_step *steps;
	size_t n;
};

struct retainers {
	bool has_roots;         /* the dump has ROOT lines */
	bool partial_roots;     /* as in struct heapgraph */
	uint64_t objects;       /* object lines read */
	uint64_t references;    /* references read, roots' too */
	uint64_t dangling;      /* of them, to addresses with no line */
	size_t retainers;       /* distinct objects and roots referring to
				   the target (itself aside) */
	size_t unreached;       /* of them, not reachable from the start
				   points (garbage when the dump was made) */
	/* One shortest path through each reachable retainer, shortest first,
	   at most the MAX_PATHS asked for. */
	struct retainers_path *paths;
	size_t npaths;
	size_t more;            /* reachable retainers whose paths were not kept */
	struct retainers_step target;
	struct retainers_state *state;  /* what the strings live in */
};

/* Read the dump at PATH (gzip or plain) and find the paths to the object
   at TARGET.  Memory grows with the dump's objects and references (about
   60 bytes an object and 16 a reference), never with its lines.  Errors
   (RBI_*, message set): a file that cannot be read or is no dump,
   RBI_INVAL for a TARGET that is no object of the dump, RBI_NOMEM. */
int rbi_retainers_find(const char *path, uint64_t target, size_t max_paths, struct retainers *out);
void rbi_retainers_free(struct retainers *r);

#endif
