/* heap-shapes.c: the object shapes as dump_all writes them (3.3-3.4), and
 * an Object's shape id; the shapes themselves are read by shape.c.
 *
 * What dump_all's SHAPE lines say of a shape (ext/objspace/objspace_dump.c,
 * shape.c 3.3-3.4): its depth (rb_shape_depth: the shapes up to one whose
 * parent_id is INVALID_SHAPE_ID, itself included), its edges (children:
 * rb_shape.edges is NULL, a child shape tagged with SINGLE_CHILD_TAG, or
 * an rb_id_table of them) and memsize (rb_shape_memsize: sizeof(rb_shape_t)
 * plus the edge table's rb_id_table_memsize, sizeof(struct rb_id_table) +
 * capa items). */
#include <inttypes.h>
#include <stdlib.h>

#include "vm/heap/heap-iter.h"

/* shape.h: shape_id_t is 32 bits on 64-bit machines; shape.c. */
#define INVALID_SHAPE_ID 0xffffffffu
#define SINGLE_CHILD_TAG 1u
#define EDGE_NAME_MAX 256

RBI_EXPORT int rbi_heap_object_shape_id(rbi_heap_iter *it, const struct rbi_heap_slot *s,
					uint32_t *id)
{
	if (!rbi_vm_shapes_in_layout(rbi_heap_iter_vm(it)->layout))
		return rbi_fail(RBI_UNSUPPORTED, "this Ruby's layout has no object shapes");
	*id = (uint32_t)(s->flags >> RBI_SHAPE_FLAG_SHIFT);
	return RBI_OK;
}

/* dump_all's name of shape type TYPE: the enumerator of that value. */
static const char *shape_type_name(const struct rbi_layout *l, uint8_t type)
{
	const struct { uint32_t value; const char *name; } names[] = {
		{ l->shape_type_root, "ROOT" }, { l->shape_type_ivar, "IVAR" },
		{ l->shape_type_frozen, "FROZEN" }, { l->shape_type_t_object, "T_OBJECT" },
		{ l->shape_type_obj_too_complex, "OBJ_TOO_COMPLEX" },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].value == type)
			return names[i].name;
	return "UNKNOWN";
}

struct shape_walk {
	struct rbi_target *t;
	const struct rbi_vm *vm;
	const struct rbi_layout *l;
	struct rbi_shapes shapes;
	uint64_t *depths;       /* per id, 0 while not known */
	char edge_name[EDGE_NAME_MAX];
};

static uint32_t parent_of(const struct shape_walk *w, uint32_t id)
{
	return rbi_get_u32(w->shapes.list + (size_t)id * w->l->shape_size, w->l->shape_parent_id);
}

/* rb_shape_depth of shape ID: its parent's plus one when that is known
   (parents come first in the list), else counted up the chain, at most
   COUNT steps: a cycle or an id past the list ends it. */
static uint64_t depth_of(struct shape_walk *w, uint32_t id)
{
	uint32_t parent = parent_of(w, id);
	uint64_t depth = 1;

	if (parent == INVALID_SHAPE_ID)
		return 1;
	if (parent < id && w->depths[parent])
		return w->depths[parent] + 1;
	for (uint32_t at = id; depth <= w->shapes.count; depth++) {
		at = parent_of(w, at);
		if (at == INVALID_SHAPE_ID || at >= w->shapes.count)
			break;
	}
	return depth;
}

/* SHAPE's edges and memsize from its edge table, if it has one. */
static int shape_edges(struct shape_walk *w, const uint8_t *bytes, struct rbi_heap_shape *shape)
{
	const struct rbi_layout *l = w->l;
	uint64_t table = rbi_get_u64(bytes, l->shape_edges);
	int32_t capa, num;
	int rc;

	shape->memsize = l->shape_size;
	shape->edges = table ? 1 : 0;
	if (!table || (table & SINGLE_CHILD_TAG))
		return RBI_OK;
	if ((rc = rbi_read(w->t, table + l->id_table_capa, &capa, sizeof(capa))) ||
	    (rc = rbi_read(w->t, table + l->id_table_num, &num, sizeof(num))))
		return rc;
	if (capa < 0 || num < 0 || num > capa)
		return rbi_fail(RBI_CORRUPT, "shape %" PRIu32 "'s edge table claims %" PRId32
				" of %" PRId32 " items", shape->id, num, capa);
	shape->edges = (uint64_t)num;
	shape->memsize += l->id_table_size + (uint64_t)capa * l->id_item_size;
	return RBI_OK;
}

static void shape_at(struct shape_walk *w, uint32_t id, struct rbi_heap_shape *shape)
{
	const struct rbi_layout *l = w->l;
	const uint8_t *bytes = w->shapes.list + (size_t)id * l->shape_size;
	uint8_t type = bytes[l->shape_type];

	*shape = (struct rbi_heap_shape){
		.addr = w->shapes.addr + (uint64_t)id * l->shape_size,
		.id = id,
		.parent_id = parent_of(w, id),
		.root = type == l->shape_type_root,
		.type_name = shape_type_name(l, type),
		.depth = w->depths[id] = depth_of(w, id),
	};
	shape->edges_known = shape_edges(w, bytes, shape) == RBI_OK;
	if (type != l->shape_type_ivar)
		return;
	shape->edge_error = rbi_vm_id_name(w->t, w->vm, rbi_get_u64(bytes, l->shape_edge_name),
					   w->edge_name, sizeof(w->edge_name), NULL);
	shape->edge_name = shape->edge_error ? NULL : w->edge_name;
}

RBI_EXPORT int rbi_heap_shapes_foreach(rbi_target *t, rbi_heap_shape_fn fn, void *arg)
{
	struct shape_walk w = { .t = t };
	struct rbi_vm *vm;
	const struct rbi_layout *l;
	int rc;

	if (!t || !fn)
		return rbi_fail(RBI_INVAL, "no target");
	if ((rc = rbi_vm_get(t, &vm)))
		return rc;
	l = vm->layout;
	if (vm->info.major < 3 || (vm->info.major == 3 && vm->info.minor < 2))
		return RBI_OK;  /* object shapes came with 3.2 */
	if (!rbi_vm_shapes_in_layout(l))
		return rbi_fail(RBI_UNSUPPORTED, "the object shapes of Ruby %d.%d are not read "
				"(3.2 keeps them in the VM)", vm->info.major, vm->info.minor);
	if (l->shape_parent_id == RBI_ABSENT || l->shape_edges == RBI_ABSENT ||
	    l->shape_edge_name == RBI_ABSENT || l->shape_parent_id + 4 > l->shape_size ||
	    l->shape_edges + 8 > l->shape_size || l->shape_edge_name + 8 > l->shape_size ||
	    l->id_table_capa == RBI_ABSENT || l->id_table_num == RBI_ABSENT ||
	    l->id_table_size == RBI_ABSENT || l->id_item_size == RBI_ABSENT ||
	    l->shape_type_root == RBI_ABSENT)
		return rbi_fail(RBI_UNSUPPORTED, "this Ruby's layout lacks the fields of its "
				"object shapes (DWARF of this build gives them)");
	w.vm = vm;
	w.l = l;
	if ((rc = rbi_vm_shapes_read(t, vm, &w.shapes)))
		return rc;
	if (!(w.depths = calloc(w.shapes.count, sizeof(*w.depths)))) {
		rbi_shapes_free(&w.shapes);
		return rbi_fail(RBI_NOMEM, "out of memory");
	}
	for (uint32_t id = 0; id < w.shapes.count && !rc; id++) {
		struct rbi_heap_shape shape;

		shape_at(&w, id, &shape);
		rc = fn(&shape, arg);
	}
	free(w.depths);
	rbi_shapes_free(&w.shapes);
	return rc;
}
