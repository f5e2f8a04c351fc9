/* vm.h: what lib/vm knows about the Ruby inside a target. */
#ifndef RBI_VM_H
#define RBI_VM_H

#include "internal.h"
#include "layout/layout.h"

/* Bounds on structures read from the target: a list longer than these is
   corrupt (or a cycle), not a real VM. */
#define RBI_RACTORS_MAX 4096
#define RBI_THREADS_MAX 65536

struct rbi_vm {
	struct rbi_ruby_info info;
	const struct rbi_image *image;  /* libruby or the static ruby */
	struct rbi_layout dwarf_layout; /* storage when from DWARF */
	const struct rbi_layout *layout;
	char layout_desc[160];
	char vm_via[64], symbols_via[64];
	uint64_t main_ractor;           /* 0 before 3.0 */
	uint64_t main_thread;
};

/* Find Ruby and its VM in T (cached in t->vm).  rbi_ruby_info()'s work. */
int rbi_vm_get(struct rbi_target *t, struct rbi_vm **out);
void rbi_vm_free(struct rbi_vm *vm);

/* Ruby version gate: true if the target's Ruby is at least MAJOR.MINOR. */
static inline bool rbi_vm_ge(const struct rbi_vm *vm, int major, int minor)
{
	return vm->info.major > major ||
	       (vm->info.major == major && vm->info.minor >= minor);
}

/* Callback for each element of a ccan list (struct list_head at HEAD, node
   at NODE_OFF inside the element).  Non-zero stops the walk and is
   returned. */
typedef int (*rbi_list_fn)(struct rbi_target *t, uint64_t elem, void *arg);
/* Walk at most MAX elements; RBI_CORRUPT if the list does not close or a
   node's prev does not point back. */
int rbi_list_walk(struct rbi_target *t, uint64_t head, uint32_t node_off,
		  size_t max, rbi_list_fn fn, void *arg);

#endif
