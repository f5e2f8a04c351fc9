/* heap-object.h: what heap-object.c keeps in a heap walk, and how it gets
 * at the walk (heap.c).  Not installed. */
#ifndef RBI_HEAP_OBJECT_H
#define RBI_HEAP_OBJECT_H

#include "vm/vm.h"

/* Class names are read as far as objects --by-class reads them. */
#define HEAP_OBJECT_NAME_MAX RBI_NAME_MAX

/* Buffers rbi_heap_object_read hands out, valid until its next call. */
struct heap_object_scratch {
	uint64_t *refs;
	size_t refs_cap;
	uint64_t *elems;        /* a heap Array's elements as read */
	size_t elems_cap;
	char *value;
	size_t value_cap;
	struct rbi_shapes shapes;       /* read at the walk's first Object */
	bool shapes_read;
	int shapes_rc;                  /* non-zero: none to read */
	char name[HEAP_OBJECT_NAME_MAX];
	char real_name[HEAP_OBJECT_NAME_MAX];
	uint64_t name_cut, real_name_cut;       /* bytes of each left out */
};

void rbi_heap_object_scratch_free(struct heap_object_scratch *sc);

/* heap.c */
struct heap_object_scratch *rbi_heap_iter_scratch(struct rbi_heap_iter *it);
struct rbi_target *rbi_heap_iter_target(struct rbi_heap_iter *it);
const struct rbi_vm *rbi_heap_iter_vm(struct rbi_heap_iter *it);
/* rb_class_real(KLASS), the walk's cached answer. */
int rbi_heap_iter_class_real(struct rbi_heap_iter *it, uint64_t klass, uint64_t *real);

#endif
