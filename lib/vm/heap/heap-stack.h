/* heap-stack.h: what the GC marks of an execution context's stacks, shared
 * by the roots (heap-roots.c: vm_stack, machine_context) and the objects
 * that hold an execution context (heap-thread.c: a Thread, a Fiber).
 * Not installed. */
#ifndef RBI_HEAP_STACK_H
#define RBI_HEAP_STACK_H

#include "vm/vm/find.h"

/* Called with each word marked, in marking order; a non-zero return
   stops the walk and is returned. */
typedef int (*rbi_heap_word_fn)(uint64_t v, void *arg);

/* The words of [FROM, TO) in the target, a chunk at a time (bounded by
   the caller), each passed to FN. */
int rbi_heap_stack_words(struct rbi_target *t, uint64_t from, uint64_t to,
			 rbi_heap_word_fn fn, void *arg);

/* The VM stack of the execution context at EC as rb_execution_context_mark
   marks it (vm.c, 2.7-3.4): the values from the stack's bottom to the top
   frame's sp, then per frame from the top its self, iseq and block_code,
   the environment of the frame before it when that escaped to the heap,
   and (3.1+) its own environment and method entry or cref when it
   escaped.  Special constants are passed too, as Ruby passes them to
   gc_mark.  RBI_NO_LAYOUT when the layout lacks a member, RBI_CORRUPT for
   a stack whose bounds lie (a thread that moved it while read). */
int rbi_heap_ec_vm_stack(struct rbi_target *t, const struct rbi_vm *vm, uint64_t ec,
			 rbi_heap_word_fn fn, void *arg);

#endif
