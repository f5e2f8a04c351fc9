/* heap-object.c: one heap object decoded as ObjectSpace.dump_all describes
 * it (ext/objspace/objspace_dump.c, dump_object): its type name, the class
 * it writes (RBasic.klass as it is, singleton classes included), and per
 * type what can be read from the object's bytes and what they point at.
 *
 * References are those dump_all lists (rb_objspace_reachable_objects_from:
 * what the GC marks from the object, its class left out, in marking
 * order, repeats kept), for the types whose marking is plain data: an
 * Array marks its elements, or the root it shares them with.  Other types
 * say their references are unknown rather than give part of them.
 *
 * The object's slot bytes come from the walk; only a String's value and a
 * heap Array's elements are read from the target, each bounded. */
#include <inttypes.h>
#include <string.h>

#include "vm/heap-object.h"

#define FL_FREEZE (1ull << 11)
#define FL_USER(n) (1ull << (RBI_FL_USHIFT + (n)))
/* RSTRING_FSTR: an interned String (FL_USER17 in 2.6-3.4). */
#define STR_FSTR FL_USER(17)
/* ENC_CODERANGE_MASK = FL_USER8 | FL_USER9; 7BIT = FL_USER8. */
#define CODERANGE_SHIFT (RBI_FL_USHIFT + 8)
/* ENCODING_SHIFT = FL_USHIFT + 10, 7 bits (encoding.h). */
#define ENCODING_SHIFT (RBI_FL_USHIFT + 10)
#define ENCODING_MASK 0x7fu
/* Elements read of one Array: dump_all lists them all, a corrupt length
   must not make us read gigabytes. */
#define REFS_MAX (1u << 24)

/* Encodings every Ruby numbers the same (encindex.h: ENCINDEX_ASCII_8BIT,
   _UTF_8, _US_ASCII), all three ASCII-compatible. */
static const char *const fixed_encodings[] = { "ASCII-8BIT", "UTF-8", "US-ASCII" };

static const char *const coderanges[] = { "unknown", "7bit", "valid", "broken" };

/* ObjectSpace.dump's name of each T_xxx (objspace_dump.c, obj_type): the
   constant's name without its "T_". */
static const char *dump_type_name(unsigned type)
{
	const char *name = rbi_value_type_name(type);

	return name ? name + 2 : "UNKNOWN";
}

void heap_object_scratch_free(struct heap_object_scratch *sc)
{
	free(sc->refs);
	free(sc->elems);
	free(sc->value);
	*sc = (struct heap_object_scratch){ 0 };
}

/* Only 7-bit Strings show their value (dump_append_string_content); a
   String whose coderange is not yet known is scanned, as Ruby does. */
static bool ascii_only(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)p[i] & 0x80)
			return false;
	return true;
}

static int string_object(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
			 size_t value_max, struct rbi_heap_object *out)
{
	struct heap_object_scratch *sc = heap_iter_scratch(it);
	unsigned enc = (s->flags >> ENCODING_SHIFT) & ENCODING_MASK;
	unsigned cr = (s->flags >> CODERANGE_SHIFT) & 3;
	struct rbi_contents c;
	size_t n;
	int rc;

	if ((rc = rbi_vm_string_contents(heap_iter_vm(it), s->addr, s->bytes, s->size,
					 s->size, &c)))
		return rc;
	out->embedded = c.embedded;
	out->shared = c.shared;
	out->fstring = (s->flags & STR_FSTR) != 0;
	out->coderange = coderanges[cr];
	out->encoding = enc < 3 ? fixed_encodings[enc] : NULL;
	out->encoding_index = (int)enc;
	if (c.shared)
		return RBI_OK;  /* dump_all shows neither length nor value */
	out->length = (int64_t)c.len;
	if (!value_max || !c.len || enc >= 3 || cr > 1)
		return RBI_OK;
	n = c.len < value_max ? c.len : value_max;
	if (!RBI_GROW(sc->value, sc->value_cap, n, 4096))
		return rbi_fail(RBI_NOMEM, "out of memory");
	if (c.embedded && c.ptr - s->addr + n <= s->size)
		memcpy(sc->value, (const uint8_t *)s->bytes + (c.ptr - s->addr), n);
	else if ((rc = rbi_read(heap_iter_target(it), c.ptr, sc->value, n)))
		return rbi_fail_context(rc, "reading String 0x%" PRIx64 ": ", s->addr);
	if (cr == 0 && !ascii_only(sc->value, n))
		return RBI_OK;
	out->value = sc->value;
	out->value_len = n;
	out->value_cut = n < c.len;
	return RBI_OK;
}

static int add_ref(struct heap_object_scratch *sc, struct rbi_heap_object *out, uint64_t v)
{
	if (!RBI_GROW(sc->refs, sc->refs_cap, out->nrefs + 1, 64))
		return rbi_fail(RBI_NOMEM, "out of memory");
	sc->refs[out->nrefs++] = v;
	return RBI_OK;
}

static int array_object(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
			struct rbi_heap_object *out)
{
	struct heap_object_scratch *sc = heap_iter_scratch(it);
	const struct rbi_vm *vm = heap_iter_vm(it);
	const struct rbi_layout *l = vm->layout;
	struct rbi_contents c;
	uint64_t *elems;
	int rc;

	if ((rc = rbi_vm_array_contents(vm, s->addr, s->bytes, s->size, s->size, &c)))
		return rc;
	out->embedded = c.embedded;
	out->shared = c.shared && c.len;
	out->length = (int64_t)c.len;
	if (c.shared) {
		/* as.heap.aux.shared_root, where a capacity would be. */
		uint64_t root;

		if (l->rarray_heap_capa == RBI_ABSENT || l->rarray_heap_capa + 8 > s->size)
			return RBI_OK;
		root = rbi_get_u64(s->bytes, l->rarray_heap_capa);
		if (rbi_vm_heap_p(vm, root) && root != s->klass && (rc = add_ref(sc, out, root)))
			return rc;
		out->refs = sc->refs;
		out->refs_known = true;
		return RBI_OK;
	}
	if (c.len > REFS_MAX)
		return rbi_fail(RBI_CORRUPT, "Array 0x%" PRIx64 " claims %" PRIu64
				" elements", s->addr, c.len);
	if (c.embedded) {
		elems = (uint64_t *)((const uint8_t *)s->bytes + (c.ptr - s->addr));
	} else {
		if (!RBI_GROW(sc->elems, sc->elems_cap, c.len, 64))
			return rbi_fail(RBI_NOMEM, "out of memory");
		if (c.len && (rc = rbi_read(heap_iter_target(it), c.ptr, sc->elems, 8 * c.len)))
			return rbi_fail_context(rc, "reading Array 0x%" PRIx64 ": ", s->addr);
		elems = sc->elems;
	}
	for (uint64_t i = 0; i < c.len; i++) {
		uint64_t v;

		memcpy(&v, &elems[i], sizeof(v));
		if (rbi_vm_heap_p(vm, v) && v != s->klass && (rc = add_ref(sc, out, v)))
			return rc;
	}
	out->refs = sc->refs;
	out->refs_known = true;
	return RBI_OK;
}

/* The permanent name of class or module K into BUF, or NULL ("#<Class:
   0x...>": anonymous, and every class on 3.2; unreadable: the same). */
static const char *permanent_name(struct rbi_heap_iter *it, uint64_t k, char *buf, size_t cap)
{
	if (rbi_class_name(heap_iter_target(it), k, buf, cap) != RBI_OK || buf[0] == '#')
		return NULL;
	return buf;
}

/* A class's or module's name as Module#name gives it, and for a singleton
   class the name of rb_class_real of it. */
static int class_object(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
			struct rbi_heap_object *out)
{
	struct heap_object_scratch *sc = heap_iter_scratch(it);
	const struct rbi_vm *vm = heap_iter_vm(it);

	if (!s->klass)
		return RBI_OK;  /* hidden */
	out->singleton = s->type == RBI_T_CLASS && (s->flags & vm->k.fl_singleton);
	out->name = permanent_name(it, s->addr, sc->name, sizeof(sc->name));
	out->real_class = s->addr;
	if (s->type == RBI_T_CLASS && heap_iter_class_real(it, s->addr, &out->real_class))
		out->real_class = 0;    /* a chain that cannot be read */
	if (out->real_class && out->real_class != s->addr)
		out->real_class_name = permanent_name(it, out->real_class, sc->real_name,
						      sizeof(sc->real_name));
	/* A name left out because the process died is not an anonymous class. */
	if (rbi_target_gone_seen(heap_iter_target(it)))
		return rbi_fail_gone(heap_iter_target(it));
	return RBI_OK;
}

RBI_EXPORT int rbi_heap_object_read(rbi_heap_iter *it, const struct rbi_heap_slot *s,
				    size_t value_max, struct rbi_heap_object *out)
{
	*out = (struct rbi_heap_object){
		.type_name = dump_type_name(s->type),
		.klass = s->type == RBI_T_IMEMO || s->type == RBI_T_NODE ? 0 : s->klass,
		.frozen = (s->flags & FL_FREEZE) != 0,
		.length = -1,
		.encoding_index = -1,
	};
	if (!s->flags)
		return rbi_fail(RBI_INVAL, "slot 0x%" PRIx64 " is free", s->addr);
	switch (s->type) {
	case RBI_T_STRING:
		return string_object(it, s, value_max, out);
	case RBI_T_ARRAY:
		return array_object(it, s, out);
	case RBI_T_CLASS: case RBI_T_MODULE:
		return class_object(it, s, out);
	default:
		return RBI_OK;
	}
}
