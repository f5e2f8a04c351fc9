/* heapdiff.h: heap dumps compared (heapdiff.c): what appeared and what died
 * between two ObjectSpace.dump_all files (rbinspect heap-dump's or the
 * target's own), or what was made between the first two of three and is
 * still alive in the third.  Not installed. */
#ifndef RBI_HEAPFILE_HEAPDIFF_H
#define RBI_HEAPFILE_HEAPDIFF_H

#include <stddef.h>
#include <stdint.h>

/* Objects of one type and class. */
struct heapdiff_row {
	const char *type;       /* "STRING" */
	const char *class_name; /* the class's "name" in the dump that has the
				   objects; NULL: none there (anonymous,
				   hidden objects, a class not dumped) */
	uint64_t klass;         /* 0: none */
	uint64_t count;
	uint64_t bytes;         /* "memsize" where the dump has it, else
				   "slot_size", else 40 */
};

struct heapdiff {
	/* Two dumps: in B and not in A (NEW), in A and not in B (DIED).
	   Three: in B, not in A, still in C (NEW); DIED empty. */
	struct heapdiff_row *added, *died;
	size_t nadded, ndied;
	uint64_t objects[3];    /* objects in each dump */
	struct heapdiff_state *state;   /* what the rows' strings live in */
};

/* Compare the dumps at PATHS[0..N) (N 2 or 3; gzip or plain), rows sorted
   by count, then bytes.  Errors (RBI_*, message set): a file that cannot
   be read, a line that is not a JSON object with an "address",
   RBI_NOMEM. */
int rbi_heapdiff_run(const char *const *paths, size_t n, struct heapdiff *out);
void rbi_heapdiff_free(struct heapdiff *d);

#endif
