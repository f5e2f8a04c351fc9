/* native.h: what the native unwinder (unwind.c) hands the merge (merge.c).
 * Not installed. */
#ifndef RBI_NATIVE_H
#define RBI_NATIVE_H

#include "internal.h"

/* One native frame and what the merge compares it by. */
struct native_entry {
	struct rbi_native_frame f;      /* strings borrowed from the images */
	uint64_t fn_start;      /* start of the function it runs in (symbol or
				   call frame index), 0 if unknown */
};

struct rbi_native_stack {
	struct native_entry *v;
	size_t n, cap;
	bool cut;               /* ended at the frame bound, not the stack's end */
	char **owned;           /* strings made for it (names without a
				   symbol version) */
	size_t nowned, capowned;
};

/* Unwind native thread TID of T into *OUT (emptied first), innermost
   first, which must hold still meanwhile (a core; a stopped thread). */
int rbi_native_unwind(struct rbi_target *t, int32_t tid, struct rbi_native_stack *out);
void rbi_native_stack_free(struct rbi_native_stack *s);

#endif
