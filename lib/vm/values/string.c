/* string.c: Ruby Strings and Arrays read out of the target, per layout.
 *
 * Both are embedded (bytes or elements inside the object) or on the heap
 * (FL_USER1 = RSTRING_NOEMBED / !RARRAY_EMBED_FLAG).  Where the length
 * lives moved twice (ruby-internals.md §4.2): a common `len` (3.3+),
 * `as.embed.len` (3.2), flag bits (<= 3.1).  The layout says which fields
 * exist; every length is bounded before anything is copied. */
#include <inttypes.h>
#include <string.h>

#include "vm/values/values.h"

/* <= 3.1: RSTRING_EMBED_LEN_MASK = FL_USER2..FL_USER6. */
#define RSTRING_EMBED_LEN_SHIFT (RBI_FL_USHIFT + 2)
#define RSTRING_EMBED_LEN_MASK 0x1f
/* RARRAY_EMBED_LEN_SHIFT = FL_USHIFT + 3 in every version. */
#define RARRAY_EMBED_LEN_SHIFT (RBI_FL_USHIFT + 3)
/* An array longer than this is garbage (Ruby's own limit is far higher,
   but nothing we walk comes close). */
#define RBI_ARRAY_MAX (1ull << 28)

int rbi_vm_obj_flags(struct rbi_target *t, const struct rbi_vm *vm,
		     uint64_t v, uint64_t *flags)
{
	if (!rbi_vm_heap_p(vm, v))
		return rbi_fail(RBI_CORRUPT, "0x%" PRIx64 " is not a heap object", v);
	return rbi_read_u64(t, v, flags);
}

uint64_t rbi_vm_location(struct rbi_target *t, const struct rbi_vm *vm, uint64_t v)
{
	uint64_t flags, to;

	/* One hop: an object is moved to a free slot, never to another
	   T_MOVED one. */
	if (vm->layout->rmoved_destination == RBI_ABSENT || rbi_vm_obj_flags(t, vm, v, &flags) ||
	    (flags & RBI_T_MASK) != RBI_T_MOVED ||
	    rbi_read_u64(t, v + vm->layout->rmoved_destination, &to) || !rbi_vm_heap_p(vm, to))
		return v;
	return to;
}

bool rbi_vm_typed_data(const struct rbi_layout *l, const struct rbi_heap_slot *s,
		       uint64_t *type, uint64_t *data, bool *embedded)
{
	uint64_t typed_flag;

	if (s->type != RBI_T_DATA || l->rtypeddata_type == RBI_ABSENT ||
	    l->rtypeddata_typed_flag == RBI_ABSENT || l->rtypeddata_data == RBI_ABSENT ||
	    s->size < l->rtypeddata_type + 8 || s->size < l->rtypeddata_typed_flag + 8 ||
	    s->size < l->rtypeddata_data + 8)
		return false;
	typed_flag = rbi_get_u64(s->bytes, l->rtypeddata_typed_flag);
	if (!(typed_flag & 1) || typed_flag > 3)
		return false;
	*type = rbi_get_u64(s->bytes, l->rtypeddata_type);
	*data = rbi_get_u64(s->bytes, l->rtypeddata_data);
	*embedded = (typed_flag & 2) != 0;
	return true;
}

int rbi_vm_data_type_name(struct rbi_target *t, uint64_t type, char *buf, size_t cap)
{
	uint64_t name;
	int rc;

	if (!type || (type & 7))
		return rbi_fail(RBI_CORRUPT, "0x%" PRIx64 " is no rb_data_type_t", type);
	if ((rc = rbi_read_u64(t, type, &name)))
		return rc;
	return rbi_read_cstr(t, name, buf, cap);
}

static int typed_flags(struct rbi_target *t, const struct rbi_vm *vm,
		       uint64_t v, unsigned type, const char *what,
		       uint64_t *flags)
{
	int rc = rbi_vm_obj_flags(t, vm, v, flags);

	if (rc)
		return rbi_fail_context(rc, "reading a %s: ", what);
	if ((*flags & RBI_T_MASK) != type)
		return rbi_fail(RBI_CORRUPT, "object 0x%" PRIx64 " is not a %s "
				"(type 0x%02x)", v, what,
				(unsigned)(*flags & RBI_T_MASK));
	return RBI_OK;
}

/* A String a program holds (a local variable's value) may be large; one
   claiming more than this is garbage. */
#define RBI_VALUE_STRING_MAX (1ull << 40)

/* The first bytes of object V (every slot has at least RBI_OBJ_HEAD), of
   type TYPE. */
static int object_head(struct rbi_target *t, const struct rbi_vm *vm, uint64_t v,
		       unsigned type, const char *what, uint8_t head[RBI_OBJ_HEAD])
{
	uint64_t flags;
	int rc = typed_flags(t, vm, v, type, what, &flags);

	if (rc || (rc = rbi_read(t, v, head, RBI_OBJ_HEAD)))
		return rc;
	/* A slot changing under us: as if read before the flags. */
	if ((rbi_get_u64(head, 0) & RBI_T_MASK) != type)
		return rbi_fail(RBI_CORRUPT, "object 0x%" PRIx64 " changed while read", v);
	return RBI_OK;
}

int rbi_vm_string_contents(const struct rbi_vm *vm, uint64_t v, const uint8_t *slot,
			   size_t size, size_t slot_size, struct rbi_contents *out)
{
	const struct rbi_layout *l = vm->layout;
	uint64_t flags = rbi_get_u64(slot, 0);
	uint32_t len_off, ptr_off;

	/* Up to 3.1 an embedded String's length is in FL_USER2..6. */
	*out = (struct rbi_contents){ .embedded = !(flags & RBI_FL_USER(1)),
				      .shared = (flags & RBI_FL_USER(1)) && (flags & vm->k.elts_shared) };
	if (!out->embedded) {
		len_off = l->rstring_len != RBI_ABSENT ? l->rstring_len : l->rstring_heap_len;
		ptr_off = l->rstring_heap_ptr;
		if (len_off == RBI_ABSENT || ptr_off == RBI_ABSENT ||
		    len_off + 8 > size || ptr_off + 8 > size)
			return rbi_fail(RBI_LAYOUT, "no RString layout");
		out->len = rbi_get_u64(slot, len_off);
		out->ptr = rbi_get_u64(slot, ptr_off);
	} else {
		ptr_off = l->rstring_embed_ary != RBI_ABSENT ? l->rstring_embed_ary
							     : l->rstring_ary;
		if (ptr_off == RBI_ABSENT || ptr_off > size)
			return rbi_fail(RBI_LAYOUT, "no RString layout");
		out->ptr = v + ptr_off;
		len_off = l->rstring_len != RBI_ABSENT ? l->rstring_len : l->rstring_embed_len;
		if (len_off == RBI_ABSENT)
			out->len = (flags >> RSTRING_EMBED_LEN_SHIFT) & RSTRING_EMBED_LEN_MASK;
		else if (len_off + 8 <= size)
			out->len = rbi_get_u64(slot, len_off);
		else
			return rbi_fail(RBI_LAYOUT, "no RString layout");
		/* Embedded bytes end with the slot. */
		if (slot_size && out->len > slot_size - ptr_off)
			return rbi_fail(RBI_CORRUPT, "embedded String 0x%" PRIx64 " claims %"
					PRIu64 " bytes", v, out->len);
	}
	return RBI_OK;
}

static int string_read(struct rbi_target *t, const struct rbi_vm *vm,
		       uint64_t v, char *buf, size_t cap, size_t *len,
		       uint64_t *full, uint64_t max)
{
	uint8_t head[RBI_OBJ_HEAD];
	struct rbi_contents c;
	uint64_t n;
	int rc;

	buf[0] = '\0';
	*full = 0;
	if (len)
		*len = 0;
	v = rbi_vm_location(t, vm, v);
	if ((rc = object_head(t, vm, v, RBI_T_STRING, "String", head)) ||
	    (rc = rbi_vm_string_contents(vm, v, head, sizeof(head), 0, &c)))
		return rc;
	if (c.len > max)
		return rbi_fail(RBI_CORRUPT, "String 0x%" PRIx64 " claims %" PRIu64
				" bytes", v, c.len);
	*full = c.len;
	n = c.len > cap - 1 ? cap - 1 : c.len;
	if (n && (rc = rbi_read(t, c.ptr, buf, n)))
		return rbi_fail_context(rc, "reading String 0x%" PRIx64 ": ", v);
	buf[n] = '\0';
	if (len)
		*len = n;
	return RBI_OK;
}

int rbi_vm_string(struct rbi_target *t, const struct rbi_vm *vm, uint64_t v,
		  char *buf, size_t cap, size_t *len)
{
	uint64_t full;

	return string_read(t, vm, v, buf, cap, len, &full, RBI_STRING_MAX);
}

int rbi_vm_string_full(struct rbi_target *t, const struct rbi_vm *vm,
		       uint64_t v, char *buf, size_t cap, size_t *len,
		       uint64_t *full)
{
	return string_read(t, vm, v, buf, cap, len, full, RBI_VALUE_STRING_MAX);
}

int rbi_vm_string_cut(struct rbi_target *t, const struct rbi_vm *vm, uint64_t v,
		      char *buf, size_t cap, uint64_t *cut)
{
	uint64_t full;
	size_t len;
	int rc = string_read(t, vm, v, buf, cap, &len, &full, RBI_STRING_MAX);

	if (!rc)
		*cut += full - len;
	return rc;
}

int rbi_vm_array_contents(const struct rbi_vm *vm, uint64_t v, const uint8_t *slot,
			  size_t size, size_t slot_size, struct rbi_contents *out)
{
	const struct rbi_layout *l = vm->layout;
	uint64_t flags = rbi_get_u64(slot, 0);

	*out = (struct rbi_contents){ .embedded = (flags & RBI_FL_USER(1)) != 0,
				      .shared = !(flags & RBI_FL_USER(1)) && (flags & vm->k.elts_shared) };
	if (l->rarray_ary == RBI_ABSENT || l->rarray_heap_len == RBI_ABSENT ||
	    l->rarray_heap_ptr == RBI_ABSENT || l->rarray_heap_len + 8 > size ||
	    l->rarray_heap_ptr + 8 > size)
		return rbi_fail(RBI_LAYOUT, "no RArray layout");
	if (out->embedded) {            /* RARRAY_EMBED_FLAG */
		out->len = (flags >> RARRAY_EMBED_LEN_SHIFT) & vm->k.rarray_embed_len_mask;
		out->ptr = v + l->rarray_ary;
		if (slot_size && l->rarray_ary + 8 * out->len > slot_size)
			return rbi_fail(RBI_CORRUPT, "embedded Array 0x%" PRIx64 " claims %"
					PRIu64 " elements", v, out->len);
		return RBI_OK;
	}
	out->len = rbi_get_u64(slot, l->rarray_heap_len);
	out->ptr = rbi_get_u64(slot, l->rarray_heap_ptr);
	if (out->len > RBI_ARRAY_MAX || (out->len && (out->ptr == 0 || (out->ptr & 7))))
		return rbi_fail(RBI_CORRUPT, "Array 0x%" PRIx64 " has length %"
				PRIu64 " at 0x%" PRIx64, v, out->len, out->ptr);
	return RBI_OK;
}

int rbi_vm_array(struct rbi_target *t, const struct rbi_vm *vm, uint64_t v,
		 uint64_t *len, uint64_t *elems)
{
	uint8_t head[RBI_OBJ_HEAD];
	struct rbi_contents c;
	int rc;

	if ((rc = object_head(t, vm, v, RBI_T_ARRAY, "Array", head)) ||
	    (rc = rbi_vm_array_contents(vm, v, head, sizeof(head), 0, &c)))
		return rc;
	*len = c.len;
	*elems = c.ptr;
	return RBI_OK;
}

int rbi_vm_array_at(struct rbi_target *t, const struct rbi_vm *vm, uint64_t v,
		    uint64_t i, uint64_t *out)
{
	uint64_t len, elems;
	int rc = rbi_vm_array(t, vm, v, &len, &elems);

	if (rc)
		return rc;
	if (i >= len)
		return rbi_fail(RBI_CORRUPT, "index %" PRIu64 " past the end of "
				"Array 0x%" PRIx64 " (length %" PRIu64 ")", i, v, len);
	return rbi_read_u64(t, elems + 8 * i, out);
}
