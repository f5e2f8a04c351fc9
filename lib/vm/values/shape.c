/* shape.c: the object shapes of Ruby 3.3-3.4, where an Object's count of
 * instance variables lives (shape.h: ROBJECT_IV_COUNT is its shape's
 * next_iv_index; the shape's id is the upper 32 bits of its flags).
 *
 * All shapes are one array, rb_shape_tree_ptr->shape_list, of
 * next_shape_id entries.  rb_shape_tree_ptr is a variable of shape.c that
 * libruby does not export: found by its name in .symtab, else in the code
 * of rb_shape_get_shape_by_id (exported; "return
 * &rb_shape_tree_ptr->shape_list[id]": its first load is of the variable).
 * 3.2 keeps its shapes in the VM instead (vm->shape_list): its layouts have
 * no rb_shape_tree_t, and shapes are then unavailable.  dump_all's SHAPE
 * lines are dump/heap-shapes.c's. */
#include <inttypes.h>
#include <stdlib.h>

#include "vm/values/values.h"

/* Shapes read at most: 3.3's SHAPE_BUFFER_SIZE is 2^19. */
#define SHAPES_MAX (1u << 20)
#define ANCHOR_INSNS 16
#define ANCHOR_REFS 8

/* The shape list the tree at variable VAR holds, into OUT. */
static int shapes_at(struct rbi_target *t, const struct rbi_layout *l, uint64_t var,
		     struct rbi_shapes *out)
{
	uint64_t tree, list;
	uint32_t count;
	size_t bytes;
	int rc;

	if ((rc = rbi_read_u64(t, var, &tree)))
		return rc;
	if (!tree || (tree & 7) || rbi_read_u64(t, tree + l->shape_tree_shape_list, &list) ||
	    !list || (list & 7) || rbi_read_u32(t, tree + l->shape_tree_next_shape_id, &count) ||
	    !count || count > SHAPES_MAX)
		return rbi_fail(RBI_CORRUPT, "no shape tree at 0x%" PRIx64, var);
	bytes = (size_t)count * l->shape_size;
	if (!RBI_GROW(out->list, out->cap, bytes, 4096))
		return rbi_fail(RBI_NOMEM, "out of memory");
	if ((rc = rbi_read(t, list, out->list, bytes)))
		return rbi_fail_context(rc, "reading %" PRIu32 " shapes: ", count);
	/* Shape 0 is the root: no instance variables. */
	if (rbi_get_u32(out->list, l->shape_next_iv_index) != 0)
		return rbi_fail(RBI_CORRUPT, "no shape tree at 0x%" PRIx64, var);
	out->count = count;
	out->addr = list;
	return RBI_OK;
}

int rbi_vm_shapes_read(struct rbi_target *t, const struct rbi_vm *vm, struct rbi_shapes *out)
{
	const struct rbi_layout *l = vm->layout;
	struct rbi_rip_ref refs[ANCHOR_REFS];
	uint64_t addr, size, got;
	size_t n = 0;
	bool tls;

	out->count = 0;
	if (l->shape_tree_shape_list == RBI_ABSENT || l->shape_tree_next_shape_id == RBI_ABSENT ||
	    l->shape_size == RBI_ABSENT || l->shape_next_iv_index == RBI_ABSENT ||
	    l->shape_type == RBI_ABSENT || l->shape_next_iv_index + 4 > l->shape_size ||
	    l->shape_type >= l->shape_size || l->shape_type_ivar == RBI_ABSENT ||
	    l->shape_type_obj_too_complex == RBI_ABSENT)
		return rbi_fail(RBI_UNSUPPORTED, "this Ruby's layout has no object shapes");
	if (!rbi_image_symbol(vm->image, "rb_shape_tree_ptr", &addr, &size, &tls) && !tls)
		return shapes_at(t, l, addr, out);
	if (rbi_image_symbol(vm->image, "rb_shape_get_shape_by_id", &addr, &size, &tls) || tls ||
	    rbi_code_rip_refs(t, addr, ANCHOR_INSNS, refs, ANCHOR_REFS, &n))
		return rbi_fail(RBI_UNSUPPORTED, "rb_shape_tree_ptr not found");
	for (size_t i = 0; i < n; i++) {
		if (!refs[i].load)
			continue;
		if (shapes_at(t, l, refs[i].target, out) == RBI_OK)
			return RBI_OK;
		/* Through a GOT slot holding the variable's address. */
		if (!rbi_read_u64(t, refs[i].target, &got) && shapes_at(t, l, got, out) == RBI_OK)
			return RBI_OK;
	}
	return rbi_fail(RBI_UNSUPPORTED, "rb_shape_tree_ptr not found in rb_shape_get_shape_by_id");
}

void rbi_shapes_free(struct rbi_shapes *s)
{
	free(s->list);
	*s = (struct rbi_shapes){ 0 };
}

bool rbi_vm_shapes_in_layout(const struct rbi_layout *l)
{
	return l->shape_tree_shape_list != RBI_ABSENT;
}
