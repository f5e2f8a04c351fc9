/* ivar.c: the instance variables of an Object, a Class or a Module: the
 * one reader behind heap-dump's references (of Objects) and p @name.
 *
 * Values (where ROBJECT_IVPTR points, object.h / shape.h):
 *  - up to 3.1 (RObject has numiv): ROBJECT_NUMIV words from ROBJECT_IVPTR:
 *    embedded, as many as the slot holds after as.ary
 *    (ROBJECT_EMBED_LEN_MAX in a 40-byte slot), else as.heap.numiv at
 *    as.heap.ivptr; the unset ones are Qundef;
 *  - 3.3-3.4: the object's shape's next_iv_index of them, embedded or at
 *    as.heap.ivptr; a "too complex" shape keeps an st_table of ID to value
 *    at as.heap.ivptr instead.
 * Names: up to 3.1 the keys of the class's iv_index_tbl (ID to index in
 * 2.7, ID to a struct rb_iv_index_tbl_entry in 3.0-3.1); with shapes each
 * SHAPE_IVAR shape on the way to the root adds one, edge_name at index
 * next_iv_index - 1.  A class's or module's sit in its classext (see
 * class_ivars).  3.2 (shapes in the VM) and layouts without either are
 * not read. */
#include <inttypes.h>
#include <string.h>

#include "vm/values/values.h"

/* ROBJECT_EMBED: the instance variables are in the slot (2.6-3.4). */
#define ROBJECT_EMBED RBI_FL_USER(1)
/* Instance variables read of one object: a corrupt count must not make us
   read gigabytes. */
#define IVARS_MAX (1u << 24)
/* A class's iv_index_tbl header read at most. */
#define HEADER_MAX 256

void rbi_ivars_free(struct rbi_ivars *iv)
{
	free(iv->values);
	free(iv->ids);
	free(iv->st.words);
	rbi_shapes_free(&iv->shapes);
	*iv = (struct rbi_ivars){ 0 };
}

int rbi_vm_object_shape(struct rbi_target *t, const struct rbi_vm *vm,
			const struct rbi_obj_bytes *obj, struct rbi_ivars *iv,
			const uint8_t **shape)
{
	uint32_t id = (uint32_t)(obj->flags >> RBI_SHAPE_FLAG_SHIFT);

	if (!iv->shapes_read) {
		iv->shapes_read = true;
		iv->shapes_rc = rbi_vm_shapes_read(t, vm, &iv->shapes);
	}
	if (iv->shapes_rc)
		return rbi_fail(RBI_UNSUPPORTED, "the object shapes of this Ruby cannot be "
				"read");
	if (id >= iv->shapes.count)
		return rbi_fail(RBI_CORRUPT, "0x%" PRIx64 " has shape %" PRIu32
				" of %" PRIu32, obj->addr, id, iv->shapes.count);
	*shape = iv->shapes.list + (size_t)id * vm->layout->shape_size;
	return RBI_OK;
}

static int grow(struct rbi_ivars *iv, uint64_t n)
{
	if (!RBI_GROW(iv->values, iv->values_cap, n, 16) || !RBI_GROW(iv->ids, iv->ids_cap, n, 16))
		return rbi_fail(RBI_NOMEM, "out of memory");
	if (n)
		memset(iv->ids, 0, n * sizeof(*iv->ids));
	return RBI_OK;
}

/* A "too complex" object's table at P: its IDs and values both. */
static int complex_ivars(struct rbi_target *t, const struct rbi_layout *l, uint64_t p,
			 struct rbi_ivars *iv)
{
	uint8_t hdr[HEADER_MAX];
	uint64_t key, value;
	int rc;

	iv->complex = true;
	if (!rbi_vm_st_layout(l) || RBI_ST_HEADER_SIZE(l) > sizeof(hdr))
		return rbi_fail(RBI_UNSUPPORTED, "this Ruby's layout has no st_table");
	if (!p)
		return RBI_OK;  /* no table yet */
	if ((rc = rbi_read(t, p, hdr, RBI_ST_HEADER_SIZE(l))) ||
	    (rc = rbi_vm_st_entries(t, l, hdr, IVARS_MAX, &iv->st)) ||
	    (rc = grow(iv, iv->st.count)))
		return rc;
	for (uint64_t i = 0; i < iv->st.count; i++) {
		if (!rbi_vm_st_entry(l, &iv->st, i, &key, &value))
			continue;
		iv->ids[iv->n] = key;
		iv->values[iv->n++] = value;
	}
	return RBI_OK;
}

/* N values into IV: from the slot's bytes when embedded there, else from
   AT in the target. */
static int take_values(struct rbi_target *t, const struct rbi_vm *vm,
		       const struct rbi_obj_bytes *obj, uint64_t n, uint64_t cap, uint64_t at,
		       struct rbi_ivars *iv)
{
	uint64_t off = vm->layout->robject_ary;
	int rc;

	if (n > IVARS_MAX || (iv->embedded && n > cap))
		return rbi_fail(RBI_CORRUPT, "0x%" PRIx64 " claims %" PRIu64
				" instance variables%s", obj->addr, n,
				iv->embedded ? " in its slot" : "");
	if ((rc = grow(iv, n)))
		return rc;
	if (n && iv->embedded && off + 8 * n <= obj->size)
		memcpy(iv->values, obj->bytes + off, 8 * n);
	else if (n && (rc = rbi_read(t, at, iv->values, 8 * n)))
		return rbi_fail_context(rc, "reading the instance variables of 0x%" PRIx64 ": ",
					obj->addr);
	iv->n = n;
	return RBI_OK;
}

/* A class's or module's: RCLASS_IVPTR (classext iv_ptr) and its shape
   (3.3-3.4), or RCLASS_IV_TBL, an st_table of ID to value (up to 3.1,
   hidden ivars such as __classpath__ among them). */
static int class_ivars(struct rbi_target *t, const struct rbi_vm *vm,
		       const struct rbi_obj_bytes *obj, struct rbi_ivars *iv)
{
	const struct rbi_layout *l = vm->layout;
	const uint8_t *shape;
	uint64_t ext, p;
	int rc;

	iv->embedded = false;
	if (l->classext_iv_ptr == RBI_ABSENT && l->classext_iv_tbl == RBI_ABSENT)
		return rbi_fail(RBI_UNSUPPORTED, "this Ruby's layout has no class ivars");
	if ((rc = rbi_vm_classext(t, vm, obj->addr, &ext)) ||
	    (rc = rbi_read_u64(t, ext + (l->classext_iv_ptr != RBI_ABSENT ? l->classext_iv_ptr
					 : l->classext_iv_tbl), &p)))
		return rc;
	if (l->classext_iv_ptr == RBI_ABSENT)
		return complex_ivars(t, l, p, iv);
	if (l->shape_next_iv_index == RBI_ABSENT || l->shape_type == RBI_ABSENT)
		return rbi_fail(RBI_UNSUPPORTED, "this Ruby's layout has no object shapes");
	if ((rc = rbi_vm_object_shape(t, vm, obj, iv, &shape)))
		return rc;
	if (shape[l->shape_type] == l->shape_type_obj_too_complex)
		return complex_ivars(t, l, p, iv);
	return take_values(t, vm, obj, rbi_get_u32(shape, l->shape_next_iv_index), 0, p, iv);
}

int rbi_vm_object_ivars(struct rbi_target *t, const struct rbi_vm *vm,
			const struct rbi_obj_bytes *obj, struct rbi_ivars *iv)
{
	const struct rbi_layout *l = vm->layout;
	unsigned type = obj->flags & RBI_T_MASK;
	uint64_t ivptr, n, cap;
	const uint8_t *shape;
	int rc;

	iv->n = 0;
	iv->complex = false;
	if (type == RBI_T_CLASS || type == RBI_T_MODULE)
		return class_ivars(t, vm, obj, iv);
	iv->embedded = (obj->flags & ROBJECT_EMBED) != 0;
	if (l->robject_ivptr == RBI_ABSENT || l->robject_ary == RBI_ABSENT ||
	    l->robject_ary >= obj->size || l->robject_ivptr + 8 > obj->size ||
	    (l->robject_numiv != RBI_ABSENT && l->robject_numiv + 4 > obj->size))
		return rbi_fail(RBI_UNSUPPORTED, "this Ruby's layout has no RObject");
	cap = (obj->size - l->robject_ary) / 8;
	ivptr = rbi_get_u64(obj->bytes, l->robject_ivptr);
	if (l->robject_numiv != RBI_ABSENT) {
		n = iv->embedded ? cap : rbi_get_u32(obj->bytes, l->robject_numiv);
	} else {
		if (l->shape_next_iv_index == RBI_ABSENT || l->shape_type == RBI_ABSENT)
			return rbi_fail(RBI_UNSUPPORTED, "instance variables of this Ruby's "
					"objects are not read (no numiv nor object shapes)");
		if ((rc = rbi_vm_object_shape(t, vm, obj, iv, &shape)))
			return rc;
		/* ROBJECT_IV_HASH: as.heap.ivptr, ROBJECT_EMBED or not. */
		if (shape[l->shape_type] == l->shape_type_obj_too_complex)
			return complex_ivars(t, l, ivptr, iv);
		n = rbi_get_u32(shape, l->shape_next_iv_index);
		/* Without the slot's size (p reads the object alone) an
		   embedded count is checked only against the bound. */
		if (!obj->slot_size_known)
			cap = IVARS_MAX;
	}
	return take_values(t, vm, obj, n, cap,
			   iv->embedded ? obj->addr + l->robject_ary : ivptr, iv);
}

/* The keys of KLASS's iv_index_tbl (up to 3.1) at their indexes. */
static int index_table_ids(struct rbi_target *t, const struct rbi_vm *vm, uint64_t klass,
			   struct rbi_ivars *iv)
{
	const struct rbi_layout *l = vm->layout;
	uint8_t hdr[HEADER_MAX];
	uint64_t ext, tbl, key, record;
	uint32_t index;
	int rc;

	if (l->rclass_ptr == RBI_ABSENT || l->classext_iv_index_tbl == RBI_ABSENT ||
	    !rbi_vm_st_layout(l) || RBI_ST_HEADER_SIZE(l) > sizeof(hdr))
		return rbi_fail(RBI_UNSUPPORTED, "this Ruby's layout has no iv_index_tbl");
	if ((rc = rbi_read_u64(t, klass + l->rclass_ptr, &ext)) ||
	    (rc = rbi_read_u64(t, ext + l->classext_iv_index_tbl, &tbl)))
		return rbi_fail_context(rc, "reading the ivar names of class 0x%" PRIx64 ": ",
					klass);
	if (!tbl)
		return RBI_OK;
	if ((rc = rbi_read(t, tbl, hdr, RBI_ST_HEADER_SIZE(l))) ||
	    (rc = rbi_vm_st_entries(t, l, hdr, IVARS_MAX, &iv->st)))
		return rbi_fail_context(rc, "reading the ivar names of class 0x%" PRIx64 ": ",
					klass);
	for (uint64_t i = 0; i < iv->st.count; i++) {
		if (!rbi_vm_st_entry(l, &iv->st, i, &key, &record))
			continue;
		if (l->iv_index_entry_index == RBI_ABSENT)
			index = (uint32_t)record;               /* 2.7: the index */
		else if ((rc = rbi_read_u32(t, record + l->iv_index_entry_index, &index)))
			return rc;
		if (index < iv->n)
			iv->ids[index] = key;
	}
	return RBI_OK;
}

int rbi_vm_object_ivar_ids(struct rbi_target *t, const struct rbi_vm *vm,
			   const struct rbi_obj_bytes *obj, uint64_t klass, struct rbi_ivars *iv)
{
	const struct rbi_layout *l = vm->layout;
	const uint8_t *shape;
	uint32_t parent;
	int rc;

	if (iv->complex)
		return RBI_OK;  /* the table's keys, read with the values */
	if (l->robject_numiv != RBI_ABSENT)
		return index_table_ids(t, vm, klass, iv);
	if (l->shape_edge_name == RBI_ABSENT || l->shape_parent_id == RBI_ABSENT ||
	    l->shape_edge_name + 8 > l->shape_size || l->shape_parent_id + 4 > l->shape_size)
		return rbi_fail(RBI_UNSUPPORTED, "this Ruby's shapes have no edge names");
	if ((rc = rbi_vm_object_shape(t, vm, obj, iv, &shape)))
		return rc;
	/* Each step goes to a parent: at most count steps reach the root. */
	for (uint32_t steps = 0; steps < iv->shapes.count; steps++) {
		uint32_t next = rbi_get_u32(shape, l->shape_next_iv_index);

		if (shape[l->shape_type] == l->shape_type_ivar && next >= 1 && next - 1 < iv->n)
			iv->ids[next - 1] = rbi_get_u64(shape, l->shape_edge_name);
		if (next == 0)
			return RBI_OK;  /* the root, or no ivar left above */
		parent = rbi_get_u32(shape, l->shape_parent_id);
		if (parent >= iv->shapes.count)
			return rbi_fail(RBI_CORRUPT, "shape parent %" PRIu32 " of %" PRIu32,
					parent, iv->shapes.count);
		shape = iv->shapes.list + (size_t)parent * l->shape_size;
	}
	return rbi_fail(RBI_CORRUPT, "the shapes of 0x%" PRIx64 " make a cycle", obj->addr);
}
