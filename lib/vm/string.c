/* string.c: Ruby Strings and Arrays read out of the target, per layout.
 *
 * Both are embedded (bytes or elements inside the object) or on the heap
 * (FL_USER1 = RSTRING_NOEMBED / !RARRAY_EMBED_FLAG).  Where the length
 * lives moved twice (ruby-internals.md §4.2): a common `len` (3.3+),
 * `as.embed.len` (3.2), flag bits (<= 3.1).  The layout says which fields
 * exist; every length is bounded before anything is copied. */
#include <inttypes.h>
#include <string.h>

#include "vm/vm.h"

#define FL_USER1 (1ull << (RBI_FL_USHIFT + 1))
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

static int string_read(struct rbi_target *t, const struct rbi_vm *vm,
		       uint64_t v, char *buf, size_t cap, size_t *len,
		       uint64_t *full, uint64_t max)
{
	const struct rbi_layout *l = vm->layout;
	uint64_t flags, n, ptr;
	int rc;

	buf[0] = '\0';
	*full = 0;
	if (len)
		*len = 0;
	if ((rc = typed_flags(t, vm, v, RBI_T_STRING, "String", &flags)))
		return rc;
	if (flags & FL_USER1) {
		uint32_t len_off = l->rstring_len != RBI_ABSENT ? l->rstring_len
								: l->rstring_heap_len;

		if (len_off == RBI_ABSENT || l->rstring_heap_ptr == RBI_ABSENT)
			return rbi_fail(RBI_LAYOUT, "no RString layout");
		if ((rc = rbi_read_u64(t, v + len_off, &n)) ||
		    (rc = rbi_read_u64(t, v + l->rstring_heap_ptr, &ptr)))
			return rc;
	} else {
		uint32_t ary = l->rstring_embed_ary != RBI_ABSENT ? l->rstring_embed_ary
								  : l->rstring_ary;

		if (ary == RBI_ABSENT)
			return rbi_fail(RBI_LAYOUT, "no RString layout");
		ptr = v + ary;
		if (l->rstring_len != RBI_ABSENT)
			rc = rbi_read_u64(t, v + l->rstring_len, &n);
		else if (l->rstring_embed_len != RBI_ABSENT)
			rc = rbi_read_u64(t, v + l->rstring_embed_len, &n);
		else
			n = (flags >> RSTRING_EMBED_LEN_SHIFT) & RSTRING_EMBED_LEN_MASK;
		if (rc)
			return rc;
	}
	if (n > max)
		return rbi_fail(RBI_CORRUPT, "String 0x%" PRIx64 " claims %" PRIu64
				" bytes", v, n);
	*full = n;
	if (n > cap - 1)
		n = cap - 1;
	if (n && (rc = rbi_read(t, ptr, buf, n)))
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

int rbi_vm_array(struct rbi_target *t, const struct rbi_vm *vm, uint64_t v,
		 uint64_t *len, uint64_t *elems)
{
	const struct rbi_layout *l = vm->layout;
	uint64_t flags;
	int rc;

	if ((rc = typed_flags(t, vm, v, RBI_T_ARRAY, "Array", &flags)))
		return rc;
	if (l->rarray_ary == RBI_ABSENT || l->rarray_heap_len == RBI_ABSENT ||
	    l->rarray_heap_ptr == RBI_ABSENT)
		return rbi_fail(RBI_LAYOUT, "no RArray layout");
	if (flags & FL_USER1) {         /* RARRAY_EMBED_FLAG */
		*len = (flags >> RARRAY_EMBED_LEN_SHIFT) & vm->k.rarray_embed_len_mask;
		*elems = v + l->rarray_ary;
		return RBI_OK;
	}
	if ((rc = rbi_read_u64(t, v + l->rarray_heap_len, len)) ||
	    (rc = rbi_read_u64(t, v + l->rarray_heap_ptr, elems)))
		return rc;
	if (*len > RBI_ARRAY_MAX || (*len && (*elems == 0 || (*elems & 7))))
		return rbi_fail(RBI_CORRUPT, "Array 0x%" PRIx64 " has length %"
				PRIu64 " at 0x%" PRIx64, v, *len, *elems);
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
