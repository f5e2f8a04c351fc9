/* native.h: what the native unwinder (unwind.c) hands the merge (merge.c).
 * Not installed. */
#ifndef RBI_NATIVE_H
#define RBI_NATIVE_H

#include "internal.h"
#include "vm/vm.h"

/* One native frame and what the merge compares it by. */
struct native_entry {
	struct rbi_native_frame f;      /* strings borrowed from the images */
	uint64_t fn_start;      /* start of the function it runs in (symbol or
				   call frame index), 0 if unknown */
};

/* A frame as the unwinder found it, before it is named. */
struct native_raw {
	uint64_t pc;
	bool exact;             /* PC is the instruction, not a return address */
	bool trampoline;        /* the signal trampoline */
	bool scanned;           /* found by a stack scan (unwind.c) */
};

struct rbi_native_stack {
	struct native_raw *raw; /* rbi_native_unwind */
	size_t nraw, capraw;
	struct native_entry *v; /* rbi_native_name */
	size_t n, cap;
	bool cut;               /* ended at the frame bound, not the stack's end */
	bool no_cfi;            /* ended at a frame in code without call frame
				   information (its file missing, or built
				   without it) */
	char **owned;           /* strings made for it (names without a
				   symbol version) */
	size_t nowned, capowned;
};

/* Make T ready to unwind (images loaded, libdwfl attached): before a live
   thread is stopped, so that it is stopped for the unwinding only. */
int rbi_native_prepare(struct rbi_target *t);
/* Unwind native thread TID of T into OUT->raw (emptied first), innermost
   first, which must hold still meanwhile (a core; a stopped thread). */
int rbi_native_unwind(struct rbi_target *t, int32_t tid, struct rbi_native_stack *out);
/* Name S's raw frames into S->v (symbols, DWARF, inlined calls): the
   thread may run again. */
int rbi_native_name(struct rbi_target *t, struct rbi_native_stack *s);
void rbi_native_stack_free(struct rbi_native_stack *s);
/* rbi_native_foreach for a caller that knows TH's kernel thread already:
   HOST_TID as this process's /proc numbers it (the sampler's task table);
   0 looks it up as rbi_native_foreach does. */
int rbi_native_foreach_tid(struct rbi_target *t, const struct rbi_thread *th,
			   int32_t host_tid, size_t max_frames, rbi_mixed_fn fn,
			   void *arg, struct rbi_native_info *info);

/* Copy SRC into DST with every string its own (owned.c): RBI_NOMEM, DST
   then holds none.  Disown frees DST's strings.  (Ruby frames: vm.h.) */
int rbi_native_frame_own(struct rbi_native_frame *dst, const struct rbi_native_frame *src);
void rbi_native_frame_disown(struct rbi_native_frame *f);

#endif
