/* heap-iter.h: what the walk (heap.c) tells those who read its objects
 * (heap-object.c and its helpers), which it never calls.  Not installed. */
#ifndef RBI_HEAP_ITER_H
#define RBI_HEAP_ITER_H

#include "vm/vm/find.h"

struct heap_page;

struct rbi_target *rbi_heap_iter_target(struct rbi_heap_iter *it);
/* The page of the slot rbi_heap_iter_next returned last. */
const struct heap_page *rbi_heap_iter_page(struct rbi_heap_iter *it);
const struct rbi_vm *rbi_heap_iter_vm(struct rbi_heap_iter *it);
/* rb_class_real(KLASS), the walk's cached answer. */
int rbi_heap_iter_class_real(struct rbi_heap_iter *it, uint64_t klass, uint64_t *real);
/* What a reader keeps for the walk: EXT (NULL until set), freed with the
   walk by EXT_FREE. */
void *rbi_heap_iter_ext(struct rbi_heap_iter *it);
void rbi_heap_iter_set_ext(struct rbi_heap_iter *it, void *ext, void (*ext_free)(void *ext));

#endif
