/* heap-object.c: one heap object decoded as ObjectSpace.dump_all describes
 * it (ext/objspace/objspace_dump.c, dump_object): its type name, the class
 * it writes (RBasic.klass as it is, singleton classes included), and per
 * type what can be read from the object's bytes and what they point at.
 *
 * References are those dump_all lists (rb_objspace_reachable_objects_from:
 * what the GC marks from the object, its class left out, in marking
 * order, repeats kept), for the types whose marking is plain data: an
 * Array marks its elements, or the root it shares them with; a String
 * the root it shares its bytes with; an Object its instance variables; a
 * Hash its keys and values, then its default; a Struct its members; the
 * types heap-refs.c reads (Floats, Bignums, Symbols, Rationals, Complexes,
 * Regexps, MatchData, Files); a Proc (a T_DATA of proc.c's type) its
 * block's captured self, code and environment, a Binding the same and its
 * path, a Method its receiver, classes and method entry; an environment
 * (IMEMO env) its values, the one before it and its iseq: a closure's hold
 * on its locals; a method entry (IMEMO ment) its owner, defined class and
 * what its definition holds; a class, module or include wrapper what
 * heap-class.c reads of it; an instruction sequence (IMEMO iseq) what
 * heap-iseq.c reads of it; a call cache, call info, ifunc or memo what
 * heap-imemo.c reads of it.
 * Other types, and any object with generic instance variables (the GC
 * marks those first, from a table elsewhere), say their references are
 * unknown rather than give part of them.
 *
 * The object's slot bytes come from the walk; only a String's value, a
 * heap Array's elements, an Object's instance variables and a Struct's
 * members outside its slot, a Hash's table outside its slot, the struct
 * of a Proc, Binding or Method outside its slot, an environment's values
 * and frame words and a method entry's definition are read from the
 * target, each bounded. */
#include <inttypes.h>
#include <string.h>

#include "vm/dump/heap-object.h"
#include "vm/heap/heap-pages.h"

#define FL_FREEZE (1ull << 11)
/* RSTRING_FSTR: an interned String (FL_USER17 in 2.6-3.4). */
#define STR_FSTR RBI_FL_USER(17)
/* ENC_CODERANGE_MASK = FL_USER8 | FL_USER9; 7BIT = FL_USER8. */
#define CODERANGE_SHIFT (RBI_FL_USHIFT + 8)
/* ENCODING_SHIFT = FL_USHIFT + 10, 7 bits (encoding.h). */
#define ENCODING_SHIFT (RBI_FL_USHIFT + 10)
#define ENCODING_MASK 0x7fu
/* Elements read of one Array, Object or Hash: dump_all lists them all, a
   corrupt length must not make us read gigabytes. */
#define REFS_MAX (1u << 24)
/* RHASH_PROC_DEFAULT: ifnone is a default proc; RHASH_ST_TABLE_FLAG: an
   st_table, else an ar_table whose size and bound (the entries in use)
   are 4-bit fields of the flags (internal/hash.h 2.6-3.4). */
#define RHASH_PROC_DEFAULT RBI_FL_USER(2)
#define RHASH_ST_TABLE_FLAG RBI_FL_USER(3)
#define RHASH_AR_SIZE_SHIFT (RBI_FL_USHIFT + 4)
#define RHASH_AR_BOUND_SHIFT (RBI_FL_USHIFT + 8)
#define RHASH_AR_FIELD_MASK 0xfu
/* An ar_table's pair: { key, value }. */
#define AR_PAIR_SIZE 16
/* vm_core.h 2.6-3.4: VM_ENV_DATA_INDEX_SPECVAL and _ENV (ep[-1], ep[1]);
   RBI_VM_ENV_FLAG_LOCAL, the flags' bit of an environment with no previous
   one; enum rb_block_type. */
#define EP_SPECVAL (-1)
#define EP_ENV 1
#define ENV_FLAG_LOCAL 0x2u
enum { BLOCK_TYPE_ISEQ, BLOCK_TYPE_IFUNC, BLOCK_TYPE_SYMBOL, BLOCK_TYPE_PROC };
/* rb_method_type_t (method.h 2.6-3.4) in VM_METHOD_TYPE_MINIMUM_BITS. */
enum { METHOD_ISEQ = 0, METHOD_ATTRSET = 2, METHOD_IVAR = 3, METHOD_BMETHOD = 4,
       METHOD_ALIAS = 6, METHOD_REFINED = 11 };
#define METHOD_TYPE_BITS 4
/* T_DATA types whose references we read (data_kind); DATA_WORDS + K:
   heap-data.c's kind K. */
enum { DATA_OTHER = 1, DATA_PROC, DATA_BINDING, DATA_METHOD, DATA_THREAD, DATA_FIBER,
       DATA_RACTOR, DATA_WORDS };

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

void rbi_heap_object_scratch_free(struct heap_object_scratch *sc)
{
	free(sc->refs);
	free(sc->elems);
	free(sc->value);
	free(sc->bits);
	free(sc->st.words);
	free(sc->marks);
	free(sc->ccs);
	rbi_heap_maybe_close(sc->maybe);
	free(sc->insn_addrs);
	rbi_ivars_free(&sc->ivars);
	rbi_map_free(&sc->data_kinds);
	rbi_heap_alloc_free(sc->alloc);
	rbi_heap_genivar_free(sc->genivar);
	*sc = (struct heap_object_scratch){ 0 };
}

static void scratch_destroy(void *sc)
{
	rbi_heap_object_scratch_free(sc);
	free(sc);
}

int rbi_heap_scratch_open(struct rbi_heap_iter *it)
{
	struct heap_object_scratch *sc;

	if (rbi_heap_iter_ext(it))
		return RBI_OK;
	if (!(sc = calloc(1, sizeof(*sc))))
		return rbi_fail(RBI_NOMEM, "out of memory");
	rbi_heap_iter_set_ext(it, sc, scratch_destroy);
	return RBI_OK;
}

struct heap_object_scratch *rbi_heap_iter_scratch(struct rbi_heap_iter *it)
{
	return rbi_heap_iter_ext(it);
}

static int add_ref(struct heap_object_scratch *sc, struct rbi_heap_object *out, uint64_t v)
{
	if (!RBI_GROW(sc->refs, sc->refs_cap, out->nrefs + 1, 64))
		return rbi_fail(RBI_NOMEM, "out of memory");
	sc->refs[out->nrefs++] = v;
	return RBI_OK;
}

/* What dump_all takes for S's class and leaves out of its references
   (objspace_dump.c, dump_object): RBasic.klass, which for an IMEMO is its
   own first field (an environment's iseq), up to 3.1; 3.2 leaves nothing
   out of an IMEMO's. */
static uint64_t omitted_class(const struct rbi_vm *vm, const struct rbi_heap_slot *s)
{
	return s->type == RBI_T_IMEMO && rbi_vm_ge(vm, 3, 2) ? 0 : s->klass;
}

int rbi_heap_add_refs(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
		      struct rbi_heap_object *out, const void *p, uint64_t n)
{
	const struct rbi_vm *vm = rbi_heap_iter_vm(it);
	uint64_t klass = omitted_class(vm, s);
	int rc;

	for (uint64_t i = 0; i < n; i++) {
		uint64_t v;

		memcpy(&v, (const uint8_t *)p + 8 * i, sizeof(v));
		if (rbi_vm_heap_p(vm, v) && v != klass &&
		    (rc = add_ref(rbi_heap_iter_scratch(it), out, v)))
			return rc;
	}
	return RBI_OK;
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

/* A shared String marks the String it shares its bytes with
   (as.heap.aux.shared, where an owner keeps its capacity); others mark
   nothing but their class. */
static int string_refs(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
		       const struct rbi_contents *c, struct rbi_heap_object *out)
{
	uint32_t shared = rbi_heap_iter_vm(it)->layout->rstring_heap_capa;
	int rc;

	if (c->shared) {
		if (shared == RBI_ABSENT || (uint64_t)shared + 8 > s->size)
			return RBI_OK;
		if ((rc = rbi_heap_add_refs(it, s, out, (const uint8_t *)s->bytes + shared, 1)))
			return rc;
	}
	out->refs = rbi_heap_iter_scratch(it)->refs;
	out->refs_known = true;
	return RBI_OK;
}

static int string_object(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
			 size_t value_max, struct rbi_heap_object *out)
{
	struct heap_object_scratch *sc = rbi_heap_iter_scratch(it);
	unsigned enc = (s->flags >> ENCODING_SHIFT) & ENCODING_MASK;
	unsigned cr = (s->flags >> CODERANGE_SHIFT) & 3;
	struct rbi_contents c;
	size_t n;
	int rc;

	if ((rc = rbi_vm_string_contents(rbi_heap_iter_vm(it), s->addr, s->bytes, s->size,
					 s->size, &c)))
		return rc;
	out->embedded = c.embedded;
	out->shared = c.shared;
	out->fstring = (s->flags & STR_FSTR) != 0;
	out->coderange = coderanges[cr];
	out->encoding = enc < 3 ? fixed_encodings[enc] : NULL;
	out->encoding_index = (int)enc;
	if ((rc = string_refs(it, s, &c, out)))
		return rc;
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
	else if ((rc = rbi_read(rbi_heap_iter_target(it), c.ptr, sc->value, n)))
		return rbi_fail_context(rc, "reading String 0x%" PRIx64 ": ", s->addr);
	if (cr == 0 && !ascii_only(sc->value, n))
		return RBI_OK;
	out->value = sc->value;
	out->value_len = n;
	out->value_cut = n < c.len;
	return RBI_OK;
}

int rbi_heap_read_words(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
			const char *what, uint64_t addr, uint64_t n, const uint64_t **words)
{
	struct heap_object_scratch *sc = rbi_heap_iter_scratch(it);
	int rc;

	if (n > REFS_MAX)
		return rbi_fail(RBI_CORRUPT, "%s 0x%" PRIx64 " claims %" PRIu64
				" elements", what, s->addr, n);
	if (!RBI_GROW(sc->elems, sc->elems_cap, n, 64))
		return rbi_fail(RBI_NOMEM, "out of memory");
	if (n && (rc = rbi_read(rbi_heap_iter_target(it), addr, sc->elems, 8 * n)))
		return rbi_fail_context(rc, "reading %s 0x%" PRIx64 ": ", what, s->addr);
	*words = sc->elems;
	return RBI_OK;
}

static int array_object(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
			struct rbi_heap_object *out)
{
	struct heap_object_scratch *sc = rbi_heap_iter_scratch(it);
	const struct rbi_vm *vm = rbi_heap_iter_vm(it);
	const struct rbi_layout *l = vm->layout;
	struct rbi_contents c;
	const uint64_t *elems;
	int rc;

	if ((rc = rbi_vm_array_contents(vm, s->addr, s->bytes, s->size, s->size, &c)))
		return rc;
	out->embedded = c.embedded;
	out->shared = c.shared && c.len;
	out->length = (int64_t)c.len;
	if (c.shared) {
		/* as.heap.aux.shared_root, where a capacity would be. */
		if (l->rarray_heap_capa == RBI_ABSENT || l->rarray_heap_capa + 8 > s->size)
			return RBI_OK;
		if ((rc = rbi_heap_add_refs(it, s, out,
					     (const uint8_t *)s->bytes + l->rarray_heap_capa, 1)))
			return rc;
		out->refs = sc->refs;
		out->refs_known = true;
		return RBI_OK;
	}
	if (c.embedded) {
		if ((rc = rbi_heap_add_refs(it, s, out,
					     (const uint8_t *)s->bytes + (c.ptr - s->addr), c.len)))
			return rc;
	} else if ((rc = rbi_heap_read_words(it, s, "Array", c.ptr, c.len, &elems)) ||
		   (rc = rbi_heap_add_refs(it, s, out, elems, c.len))) {
		return rc;
	}
	out->refs = sc->refs;
	out->refs_known = true;
	return RBI_OK;
}

/* The pairs of the ar_table TABLE (TABLE_SIZE bytes) up to the bound the
   flags keep (an empty pair's key is Qundef: no heap object). */
static int ar_refs(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
		   struct rbi_heap_object *out, const uint8_t *table, uint32_t table_size)
{
	const struct rbi_layout *l = rbi_heap_iter_vm(it)->layout;
	uint64_t bound = (s->flags >> RHASH_AR_BOUND_SHIFT) & RHASH_AR_FIELD_MASK;

	if (l->ar_table_pairs + bound * AR_PAIR_SIZE > table_size)
		return rbi_fail(RBI_CORRUPT, "Hash 0x%" PRIx64 " claims %" PRIu64
				" pairs", s->addr, bound);
	return rbi_heap_add_refs(it, s, out, table + l->ar_table_pairs, 2 * bound);
}

/* The live entries of the st_table whose header is HDR: their keys (if
   KEYS) and records, in entries order (st_foreach's); its num_entries to
   *SIZE. */
int rbi_heap_st_refs(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
		     struct rbi_heap_object *out, const uint8_t *hdr, bool keys, int64_t *size)
{
	const struct rbi_layout *l = rbi_heap_iter_vm(it)->layout;
	struct rbi_st_entries *e = &rbi_heap_iter_scratch(it)->st;
	uint64_t key, record;
	int rc;

	if ((rc = rbi_vm_st_entries(rbi_heap_iter_target(it), l, hdr, REFS_MAX, e)))
		return rbi_fail_context(rc, "reading the table of 0x%" PRIx64 ": ", s->addr);
	*size = (int64_t)e->size;
	for (uint64_t i = 0; i < e->count; i++) {
		if (!rbi_vm_st_entry(l, e, i, &key, &record))
			continue;
		if ((keys && (rc = rbi_heap_add_refs(it, s, out, &key, 1))) ||
		    (rc = rbi_heap_add_refs(it, s, out, &record, 1)))
			return rc;
	}
	return RBI_OK;
}

/* A Struct's members as the GC marks them (RSTRUCT_LEN words from
   RSTRUCT_CONST_PTR, internal/struct.h 2.6-3.4): embedded in the slot when
   the flags' RSTRUCT_EMBED_LEN_MASK bits (2 of them up to 3.1, 7 with
   variable width slots) hold their count, else as.heap.len at
   as.heap.ptr. */
static int struct_object(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
			 struct rbi_heap_object *out)
{
	const struct rbi_layout *l = rbi_heap_iter_vm(it)->layout;
	uint64_t mask = l->rstruct_embed_len_mask, n;
	const uint64_t *words;
	int rc;

	if (l->rstruct_heap_len == RBI_ABSENT || l->rstruct_heap_ptr == RBI_ABSENT ||
	    l->rstruct_ary == RBI_ABSENT || mask == RBI_ABSENT || !mask ||
	    l->rstruct_ary >= s->size || l->rstruct_heap_len + 8 > s->size ||
	    l->rstruct_heap_ptr + 8 > s->size)
		return RBI_OK;
	if (s->flags & mask) {
		n = (s->flags & mask) >> __builtin_ctzll(mask);
		if (n > (s->size - l->rstruct_ary) / 8)
			return rbi_fail(RBI_CORRUPT, "Struct 0x%" PRIx64 " claims %" PRIu64
					" members in its slot", s->addr, n);
		rc = rbi_heap_add_refs(it, s, out, (const uint8_t *)s->bytes + l->rstruct_ary, n);
	} else {
		n = rbi_get_u64(s->bytes, l->rstruct_heap_len);
		if (!(rc = rbi_heap_read_words(it, s, "Struct", rbi_get_u64(s->bytes, l->rstruct_heap_ptr),
				      n, &words)))
			rc = rbi_heap_add_refs(it, s, out, words, n);
	}
	if (rc)
		return rc;
	out->refs = rbi_heap_iter_scratch(it)->refs;
	out->refs_known = true;
	return RBI_OK;
}

/* SIZE bytes of S's table at P in the target into BUF (zeros if P is 0:
   no table yet). */
static int read_table(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
		      uint64_t p, uint8_t *buf, size_t size)
{
	int rc;

	if (!p)
		memset(buf, 0, size);
	else if ((rc = rbi_read(rbi_heap_iter_target(it), p, buf, size)))
		return rbi_fail_context(rc, "reading the table of 0x%" PRIx64 ": ", s->addr);
	return RBI_OK;
}

int rbi_heap_object_shape(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
			  const uint8_t **shape)
{
	struct rbi_obj_bytes obj = { s->addr, s->flags, s->bytes, s->size, true };
	int rc;

	*shape = NULL;
	rc = rbi_vm_object_shape(rbi_heap_iter_target(it), rbi_heap_iter_vm(it), &obj,
				 &rbi_heap_iter_scratch(it)->ivars, shape);
	return rc == RBI_UNSUPPORTED ? RBI_OK : rc;
}

/* An Object's instance variables as the GC marks them (ivar.c reads
   them), and the count dump_all writes; a Ruby whose objects cannot be
   read leaves their references unknown. */
static int object_object(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
			 struct rbi_heap_object *out)
{
	struct heap_object_scratch *sc = rbi_heap_iter_scratch(it);
	struct rbi_obj_bytes obj = { s->addr, s->flags, s->bytes, s->size, true };
	int rc;

	rc = rbi_vm_object_ivars(rbi_heap_iter_target(it), rbi_heap_iter_vm(it), &obj, &sc->ivars);
	if (rc == RBI_UNSUPPORTED)
		return RBI_OK;
	if (rc || (rc = rbi_heap_add_refs(it, s, out, sc->ivars.values, sc->ivars.n)))
		return rc;
	out->ivars = (int64_t)sc->ivars.n;
	out->embedded = sc->ivars.embedded;
	out->refs = sc->refs;
	out->refs_known = true;
	return RBI_OK;
}

int rbi_heap_hash_table(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
			uint8_t buf[RBI_HASH_TABLE_MAX], const uint8_t **table)
{
	const struct rbi_layout *l = rbi_heap_iter_vm(it)->layout;
	uint32_t table_size = s->flags & RHASH_ST_TABLE_FLAG ? RBI_ST_HEADER_SIZE(l)
							     : l->ar_table_size;
	int rc;

	*table = NULL;
	if (l->rhash_size == RBI_ABSENT || l->ar_table_size == RBI_ABSENT ||
	    !rbi_vm_st_layout(l) || table_size > RBI_HASH_TABLE_MAX)
		return RBI_OK;
	if (l->rhash_table == RBI_ABSENT) {
		if (l->rhash_size + table_size <= s->size)  /* else not this layout */
			*table = (const uint8_t *)s->bytes + l->rhash_size;
		return RBI_OK;
	}
	if (l->rhash_table + 8 > s->size)
		return RBI_OK;
	if ((rc = read_table(it, s, rbi_get_u64(s->bytes, l->rhash_table), buf, table_size)))
		return rc;
	*table = buf;
	return RBI_OK;
}

/* A Hash's size and what the GC marks of it (gc.c mark_hash): the keys
   and values of its ar_table or st_table, then ifnone. */
static int hash_object(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
		       struct rbi_heap_object *out)
{
	const struct rbi_layout *l = rbi_heap_iter_vm(it)->layout;
	uint8_t buf[RBI_HASH_TABLE_MAX];
	const uint8_t *table;
	uint64_t ifnone;
	int rc;

	if (l->rhash_ifnone == RBI_ABSENT || l->ar_table_pairs == RBI_ABSENT ||
	    l->rhash_ifnone + 8 > s->size)
		return RBI_OK;
	if ((rc = rbi_heap_hash_table(it, s, buf, &table)) || !table)
		return rc;
	if (s->flags & RHASH_ST_TABLE_FLAG)
		rc = rbi_heap_st_refs(it, s, out, table, true, &out->entries);
	else if (!(rc = ar_refs(it, s, out, table, l->ar_table_size)))
		out->entries = (s->flags >> RHASH_AR_SIZE_SHIFT) & RHASH_AR_FIELD_MASK;
	ifnone = rbi_get_u64(s->bytes, l->rhash_ifnone);
	if (rc || (rc = rbi_heap_add_refs(it, s, out,
					  (const uint8_t *)s->bytes + l->rhash_ifnone, 1)))
		return rc;
	if (s->flags & RHASH_PROC_DEFAULT)
		out->default_proc = ifnone;
	out->refs = rbi_heap_iter_scratch(it)->refs;
	out->refs_known = true;
	return RBI_OK;
}

/* The environment of the frame whose ep is EP (ep[VM_ENV_DATA_INDEX_ENV],
   vm_core.h 2.6-3.4) into *ENV. */
static int ep_env(struct rbi_heap_iter *it, const struct rbi_heap_slot *s, uint64_t ep,
		  uint64_t *env)
{
	int rc;

	if (ep & 7)
		return rbi_fail(RBI_CORRUPT, "0x%" PRIx64 " has a misaligned ep 0x%" PRIx64,
				s->addr, ep);
	if ((rc = rbi_read_u64(rbi_heap_iter_target(it), ep + 8 * EP_ENV, env)))
		return rbi_fail_context(rc, "reading the environment of 0x%" PRIx64 ": ", s->addr);
	return RBI_OK;
}

/* The environment before the one whose ep is EP (rb_vm_env_prev_env):
   none (0) when its flags say it is local, else the environment of the
   ep its specval points at (GC_GUARDED_PTR_REF). */
static int prev_env(struct rbi_heap_iter *it, const struct rbi_heap_slot *s, uint64_t ep,
		    uint64_t *prev)
{
	uint64_t w[2];  /* ep[-1], ep[0]: specval, flags */
	int rc;

	*prev = 0;
	if (ep & 7)
		return rbi_fail(RBI_CORRUPT, "0x%" PRIx64 " has a misaligned ep 0x%" PRIx64,
				s->addr, ep);
	if ((rc = rbi_read(rbi_heap_iter_target(it), ep + 8 * EP_SPECVAL, w, sizeof(w))))
		return rbi_fail_context(rc, "reading the frame of 0x%" PRIx64 ": ", s->addr);
	if (w[1] & ENV_FLAG_LOCAL)
		return RBI_OK;
	return ep_env(it, s, w[0] & ~(uint64_t)3, prev);
}

/* An environment's references, as the GC marks an imemo_env (gc.c
   gc_mark_imemo; imemo.c in 3.4): its values (env->env, env_size of them,
   the frame's own words among them, so the environment itself), then its
   previous environment and its iseq (3.4: the iseq, then the previous
   environment).  One just allocated (no ep yet) marks nothing. */
static int env_object(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
		      struct rbi_heap_object *out)
{
	const struct rbi_vm *vm = rbi_heap_iter_vm(it);
	const struct rbi_layout *l = vm->layout;
	const uint64_t *values;
	uint64_t ep, prev, iseq, ends[2];
	int rc;

	if (l->env_iseq == RBI_ABSENT || l->env_ep == RBI_ABSENT || l->env_env == RBI_ABSENT ||
	    l->env_env_size == RBI_ABSENT || l->env_iseq + 8 > s->size ||
	    l->env_ep + 8 > s->size || l->env_env + 8 > s->size || l->env_env_size + 4 > s->size)
		return RBI_OK;
	ep = rbi_get_u64(s->bytes, l->env_ep);
	if (ep) {
		uint32_t n = rbi_get_u32(s->bytes, l->env_env_size);

		if ((rc = rbi_heap_read_words(it, s, "environment", rbi_get_u64(s->bytes, l->env_env), n,
				     &values)) ||
		    (rc = rbi_heap_add_refs(it, s, out, values, n)) || (rc = prev_env(it, s, ep, &prev)))
			return rc;
		iseq = rbi_get_u64(s->bytes, l->env_iseq);
		ends[0] = rbi_vm_ge(vm, 3, 4) ? iseq : prev;
		ends[1] = rbi_vm_ge(vm, 3, 4) ? prev : iseq;
		if ((rc = rbi_heap_add_refs(it, s, out, ends, 2)))
			return rc;
	}
	out->refs = rbi_heap_iter_scratch(it)->refs;
	out->refs_known = true;
	return RBI_OK;
}

/* The bytes of the words at OFFS[N] (RBI_ABSENT: left out) past BASE: as
   far as the last one reaches. */
static uint64_t words_end(uint64_t base, const uint32_t *offs, size_t n)
{
	uint64_t end = 0;

	for (size_t i = 0; i < n; i++)
		if (offs[i] != RBI_ABSENT && base + offs[i] + 8 > end)
			end = base + offs[i] + 8;
	return end;
}

/* How far a struct whose rb_block is at OFF is read (0: a layout without
   the block). */
static uint64_t block_end(const struct rbi_layout *l, uint32_t off)
{
	const uint32_t words[] = { l->block_as, l->block_captured_self, l->block_captured_ep,
				   l->block_captured_code, l->block_type };

	for (size_t i = 0; i < RBI_ARRAY_SIZE(words); i++)
		if (words[i] == RBI_ABSENT)
			return 0;
	return off == RBI_ABSENT ? 0 : words_end(off, words, RBI_ARRAY_SIZE(words));
}

/* The bit at BIT (a bit offset) of B, SIZE bytes; VALUE_BITS wide. */
static uint32_t bits_at(const uint8_t *b, uint64_t size, uint32_t bit, unsigned value_bits)
{
	uint32_t word;

	if (bit / 8 + 4 > size)
		return 0;
	memcpy(&word, b + bit / 8, 4);
	return (word >> (bit % 8)) & ((1u << value_bits) - 1);
}

/* What the GC marks of a method definition (gc.c mark_method_entry;
   imemo.c mark_and_move_method_entry in 3.4) whose bytes (SIZE of them)
   are B, of the entry in S whose defined class is DEFINED_CLASS: per its
   type, an iseq method's iseq and cref, and the entry itself when its iseq
   is overloaded (3.1+: pinned, a key of the overloaded_cme table); an
   attribute's location; a bmethod's Proc; an alias's original entry; a
   refinement's original entry and (up to 3.1) owner.  *KNOWN false for a
   bmethod with hooks (a list not read). */
static int method_def_refs(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
			   struct rbi_heap_object *out, const uint8_t *b, uint64_t size,
			   uint64_t defined_class, bool *known)
{
	const struct rbi_layout *l = rbi_heap_iter_vm(it)->layout;
	uint32_t type = bits_at(b, size, l->method_def_type, METHOD_TYPE_BITS);
	int rc;

	*known = true;
	switch (type) {
	case METHOD_ISEQ:
		if ((rc = rbi_heap_add_refs(it, s, out, b + l->method_def_iseqptr, 1)) ||
		    (rc = rbi_heap_add_refs(it, s, out, b + l->method_def_cref, 1)))
			return rc;
		if (l->method_def_iseq_overload != RBI_ABSENT &&
		    bits_at(b, size, l->method_def_iseq_overload, 1) && defined_class)
			return rbi_heap_add_refs(it, s, out, &s->addr, 1);
		return RBI_OK;
	case METHOD_ATTRSET: case METHOD_IVAR:
		return rbi_heap_add_refs(it, s, out, b + l->method_def_attr_location, 1);
	case METHOD_BMETHOD:
		*known = !rbi_get_u64(b, l->method_def_bmethod_hooks);
		return *known ? rbi_heap_add_refs(it, s, out, b + l->method_def_bmethod_proc, 1) : RBI_OK;
	case METHOD_ALIAS:
		return rbi_heap_add_refs(it, s, out, b + l->method_def_original_me, 1);
	case METHOD_REFINED:
		if ((rc = rbi_heap_add_refs(it, s, out, b + l->method_def_refined_orig_me, 1)))
			return rc;
		return l->method_def_refined_owner == RBI_ABSENT ? RBI_OK :
		       rbi_heap_add_refs(it, s, out, b + l->method_def_refined_owner, 1);
	default:
		if (type > METHOD_REFINED)
			return rbi_fail(RBI_CORRUPT, "0x%" PRIx64 " has a method of type %" PRIu32,
					s->addr, type);
		return RBI_OK;  /* a C function, zsuper, undef...: nothing marked */
	}
}

/* How many bytes of a method definition are read (0: a layout without
   what the GC marks of one). */
static uint64_t method_def_size(const struct rbi_layout *l)
{
	/* refined.owner, iseq_overload: not every Ruby has them. */
	const uint32_t words[] = { l->method_def_iseqptr, l->method_def_cref,
				   l->method_def_attr_location, l->method_def_bmethod_proc,
				   l->method_def_bmethod_hooks, l->method_def_original_me,
				   l->method_def_refined_orig_me, l->method_def_refined_owner };
	uint64_t end;

	for (size_t i = 0; i + 1 < RBI_ARRAY_SIZE(words); i++)
		if (words[i] == RBI_ABSENT)
			return 0;
	if (l->method_def_type == RBI_ABSENT)
		return 0;
	end = words_end(0, words, RBI_ARRAY_SIZE(words));
	return end <= RBI_DATA_BYTES_MAX && l->method_def_type / 8 + 4 <= end &&
	       (l->method_def_iseq_overload == RBI_ABSENT ||
		l->method_def_iseq_overload / 8 + 4 <= end) ? end : 0;
}

/* A method entry's references (IMEMO ment): its owner and defined class,
   then what its definition marks (method_def_refs). */
static int ment_object(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
		       struct rbi_heap_object *out)
{
	const struct rbi_layout *l = rbi_heap_iter_vm(it)->layout;
	uint64_t size = method_def_size(l), words[2], def;
	uint8_t b[RBI_DATA_BYTES_MAX];
	bool known = true;
	int rc;

	if (!size || l->cme_owner == RBI_ABSENT || l->cme_defined_class == RBI_ABSENT ||
	    l->cme_def == RBI_ABSENT || l->cme_owner + 8 > s->size ||
	    l->cme_defined_class + 8 > s->size || l->cme_def + 8 > s->size)
		return RBI_OK;
	words[0] = rbi_get_u64(s->bytes, l->cme_owner);
	words[1] = rbi_get_u64(s->bytes, l->cme_defined_class);
	if ((rc = rbi_heap_add_refs(it, s, out, words, 2)))
		return rc;
	if ((def = rbi_get_u64(s->bytes, l->cme_def))) {
		if ((rc = rbi_read(rbi_heap_iter_target(it), def, b, size)))
			return rbi_fail_context(rc, "reading the method of 0x%" PRIx64 ": ",
						s->addr);
		if ((rc = method_def_refs(it, s, out, b, size, words[1], &known)))
			return rc;
	}
	if (!known) {
		out->nrefs = 0;
		return RBI_OK;
	}
	out->refs = rbi_heap_iter_scratch(it)->refs;
	out->refs_known = true;
	return RBI_OK;
}

/* What block_mark marks (proc.c; block_mark_and_move in 3.3+) of the
   rb_block at B: a block of code (an iseq or an ifunc) its captured self,
   its code and the environment of its ep; a Symbol's block the Symbol, a
   Proc's the Proc. */
static int block_refs(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
		      struct rbi_heap_object *out, const uint8_t *b)
{
	const struct rbi_layout *l = rbi_heap_iter_vm(it)->layout;
	uint64_t words[3], ep;
	uint32_t type;
	int rc;

	switch ((type = rbi_get_u32(b, l->block_type))) {
	case BLOCK_TYPE_ISEQ: case BLOCK_TYPE_IFUNC:
		words[0] = rbi_get_u64(b, l->block_captured_self);
		words[1] = rbi_get_u64(b, l->block_captured_code);
		words[2] = 0;
		ep = rbi_get_u64(b, l->block_captured_ep);
		if (ep && (rc = ep_env(it, s, ep, &words[2])))
			return rc;
		return rbi_heap_add_refs(it, s, out, words, 3);
	case BLOCK_TYPE_SYMBOL: case BLOCK_TYPE_PROC:
		return rbi_heap_add_refs(it, s, out, b + l->block_as, 1);
	default:
		return rbi_fail(RBI_CORRUPT, "0x%" PRIx64 " has a block of type %" PRIu32,
				s->addr, type);
	}
}

/* What a Method marks (proc.c bm_mark; bm_mark_and_move in 3.3+): its
   receiver, class, iclass, owner (3.2+: where the layout has it) and
   method entry, of the struct METHOD at B. */
static int method_refs(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
		       struct rbi_heap_object *out, const uint8_t *b)
{
	const struct rbi_layout *l = rbi_heap_iter_vm(it)->layout;
	const uint32_t members[] = { l->method_recv, l->method_klass, l->method_iclass,
				     l->method_owner, l->method_me };
	int rc;

	for (size_t i = 0; i < RBI_ARRAY_SIZE(members); i++)
		if (members[i] != RBI_ABSENT && (rc = rbi_heap_add_refs(it, s, out, b + members[i], 1)))
			return rc;
	return RBI_OK;
}

/* How many bytes of KIND's struct its references are read from; 0 when
   the layout lacks them (or the struct is no known kind). */
static uint64_t data_size(const struct rbi_layout *l, unsigned kind)
{
	const uint32_t method[] = { l->method_recv, l->method_klass, l->method_iclass,
				    l->method_owner, l->method_me };
	uint64_t end;

	switch (kind) {
	case DATA_PROC:
		end = block_end(l, l->proc_block);
		break;
	case DATA_BINDING:
		end = l->binding_pathobj == RBI_ABSENT ? 0 : block_end(l, l->binding_block);
		if (end && l->binding_pathobj + 8ull > end)
			end = l->binding_pathobj + 8ull;
		break;
	case DATA_METHOD:
		/* owner is new in 3.2: the others say whether the struct is known. */
		end = l->method_recv == RBI_ABSENT || l->method_klass == RBI_ABSENT ||
		      l->method_iclass == RBI_ABSENT || l->method_me == RBI_ABSENT ? 0 :
		      words_end(0, method, RBI_ARRAY_SIZE(method));
		break;
	default:
		end = 0;
	}
	return end <= RBI_DATA_BYTES_MAX ? end : 0;
}

/* What the data type TYPE (an rb_data_type_t) is to us, by its
   wrap_struct_name (proc.c's "proc", "binding" and "method", and
   heap-data.c's; one that declares its marking is read as such whatever
   its name), remembered per walk. */
static unsigned data_kind(struct rbi_heap_iter *it, uint64_t type)
{
	static const char *const names[] = { [DATA_PROC] = "proc", [DATA_BINDING] = "binding",
					     [DATA_METHOD] = "method",
					     [DATA_THREAD] = "VM/thread", [DATA_FIBER] = "fiber",
					     [DATA_RACTOR] = "ractor" };
	struct rbi_map *kinds = &rbi_heap_iter_scratch(it)->data_kinds;
	char name[32];  /* longer names are other types' */
	uint64_t kind;

	if (rbi_map_get(kinds, type, 0, 1, &kind))
		return (unsigned)kind;
	kind = DATA_OTHER;
	if (!rbi_heap_data_declared(it, type) &&
	    !rbi_vm_data_type_name(rbi_heap_iter_target(it), type, name, sizeof(name))) {
		unsigned words = rbi_heap_data_kind(name);

		for (unsigned k = DATA_PROC; k < RBI_ARRAY_SIZE(names); k++)
			if (!strcmp(name, names[k]))
				kind = k;
		if (words)
			kind = DATA_WORDS + words;
	}
	/* Not remembered when out of memory: asked again next time. */
	rbi_map_put(kinds, type, 0, 1, kind);
	return (unsigned)kind;
}

/* The walk's gc_mark_maybe test, opened once (NULL: the heap's pages
   cannot be told). */
struct heap_maybe *rbi_heap_object_maybe(struct rbi_heap_iter *it)
{
	struct heap_object_scratch *sc = rbi_heap_iter_scratch(it);

	if (!sc->maybe_tried) {
		sc->maybe_tried = true;
		if (rbi_heap_maybe_open(rbi_heap_iter_target(it), rbi_heap_iter_vm(it), &sc->maybe))
			sc->maybe = NULL;
	}
	return sc->maybe;
}

int rbi_heap_data_struct(struct rbi_heap_iter *it, const struct rbi_heap_slot *s, uint64_t data,
			 bool embedded, uint8_t *b, uint64_t size)
{
	const struct rbi_layout *l = rbi_heap_iter_vm(it)->layout;
	int rc;

	if (embedded) {
		if (l->rtypeddata_data + size > s->size)
			return rbi_fail(RBI_CORRUPT, "0x%" PRIx64 " is too small for its data",
					s->addr);
		memcpy(b, (const uint8_t *)s->bytes + l->rtypeddata_data, size);
	} else if ((rc = rbi_read(rbi_heap_iter_target(it), data, b, size))) {
		return rbi_fail_context(rc, "reading the data of 0x%" PRIx64 ": ", s->addr);
	}
	return RBI_OK;
}

/* A T_DATA's references where its type's mark function is known: a Proc,
   a Binding (its block, then its path), a Method, or one of heap-data.c's
   types (after its generic instance variables: rbi_heap_object_read). */
static int data_object(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
		       struct rbi_heap_object *out)
{
	const struct rbi_layout *l = rbi_heap_iter_vm(it)->layout;
	uint8_t b[RBI_DATA_BYTES_MAX];
	uint64_t type, data, size;
	unsigned kind;
	bool embedded;
	int rc;

	if (!rbi_vm_typed_data(l, s, &type, &data, &embedded))       /* an RData */
		return l->rtypeddata_typed_flag == RBI_ABSENT ? RBI_OK :
		       rbi_heap_data_generic_refs(it, s, out, false, 0, 0, false);
	if ((kind = data_kind(it, type)) > DATA_WORDS)
		return rbi_heap_data_refs(it, s, out, kind - DATA_WORDS, data, embedded);
	if (kind >= DATA_THREAD)        /* heap-thread.c */
		return embedded ? RBI_OK : rbi_heap_thread_refs(it, s, kind == DATA_FIBER ? HEAP_FIBER :
				kind == DATA_RACTOR ? HEAP_RACTOR : HEAP_THREAD, data, out);
	if (kind == DATA_OTHER)
		return rbi_heap_data_generic_refs(it, s, out, true, type, data, embedded);
	if (!(size = data_size(l, kind)))
		return RBI_OK;
	if (!embedded && !data) {
		out->refs_known = true;  /* no data: nothing marked */
		return RBI_OK;
	}
	if ((rc = rbi_heap_data_struct(it, s, data, embedded, b, size)))
		return rc;
	if (kind == DATA_METHOD)
		rc = method_refs(it, s, out, b);
	else if (kind == DATA_PROC)
		rc = block_refs(it, s, out, b + l->proc_block);
	else if (!(rc = block_refs(it, s, out, b + l->binding_block)))
		rc = rbi_heap_add_refs(it, s, out, b + l->binding_pathobj, 1);
	if (rc)
		return rc;
	out->refs = rbi_heap_iter_scratch(it)->refs;
	out->refs_known = true;
	return RBI_OK;
}

/* The permanent name of class or module K into BUF, or NULL ("#<Class:
   0x...>": anonymous, and every class on 3.2; unreadable: the same);
   *CUT: the bytes of it left out. */
static const char *permanent_name(struct rbi_heap_iter *it, uint64_t k, char *buf, size_t cap,
				  uint64_t *cut)
{
	if (rbi_class_name_cut(rbi_heap_iter_target(it), k, buf, cap, cut) != RBI_OK ||
	    buf[0] == '#') {
		*cut = 0;
		return NULL;
	}
	return buf;
}

/* A class's, module's or include wrapper's references: what the GC marks
   of it (heap-class.c); unknown where that cannot be read. */
static int class_refs(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
		      struct rbi_heap_object *out)
{
	const uint64_t *marks;
	size_t n;
	int rc;

	rc = rbi_heap_class_marks(it, s, &marks, &n);
	if (rc == RBI_UNSUPPORTED)
		return RBI_OK;
	if (rc || (rc = rbi_heap_add_refs(it, s, out, marks, n)))
		return rc;
	out->refs = rbi_heap_iter_scratch(it)->refs;
	out->refs_known = true;
	return RBI_OK;
}

/* A class's or module's name as Module#name gives it, and for a singleton
   class the name of rb_class_real of it. */
static int class_object(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
			struct rbi_heap_object *out)
{
	struct heap_object_scratch *sc = rbi_heap_iter_scratch(it);
	const struct rbi_vm *vm = rbi_heap_iter_vm(it);

	if (!s->klass)
		return class_refs(it, s, out);  /* hidden: no name */
	out->singleton = s->type == RBI_T_CLASS && (s->flags & vm->k.fl_singleton);
	out->name = permanent_name(it, s->addr, sc->name, sizeof(sc->name), &sc->name_cut);
	out->real_class = s->addr;
	if (s->type == RBI_T_CLASS && rbi_heap_iter_class_real(it, s->addr, &out->real_class))
		out->real_class = 0;    /* a chain that cannot be read */
	if (out->real_class && out->real_class != s->addr)
		out->real_class_name = permanent_name(it, out->real_class, sc->real_name,
						      sizeof(sc->real_name), &sc->real_name_cut);
	/* A name left out because the process died is not an anonymous class. */
	if (rbi_target_gone_seen(rbi_heap_iter_target(it)))
		return rbi_fail_gone(rbi_heap_iter_target(it));
	return class_refs(it, s, out);
}

RBI_EXPORT void rbi_heap_object_name_cut(rbi_heap_iter *it, uint64_t *name_cut,
					 uint64_t *real_class_name_cut)
{
	struct heap_object_scratch *sc = it ? rbi_heap_iter_scratch(it) : NULL;

	*name_cut = sc ? sc->name_cut : 0;
	*real_class_name_cut = sc ? sc->real_name_cut : 0;
}

/* The type's own fields and references. */
static int object_fields(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
			 size_t value_max, struct rbi_heap_object *out)
{
	switch (s->type) {
	case RBI_T_STRING:
		return string_object(it, s, value_max, out);
	case RBI_T_ARRAY:
		return array_object(it, s, out);
	case RBI_T_OBJECT:
		return object_object(it, s, out);
	case RBI_T_HASH:
		return hash_object(it, s, out);
	case RBI_T_STRUCT:
		return struct_object(it, s, out);
	case RBI_T_CLASS: case RBI_T_MODULE:
		return class_object(it, s, out);
	case RBI_T_ICLASS:
		return class_refs(it, s, out);
	case RBI_T_IMEMO:
		switch (RBI_IMEMO_TYPE(s->flags)) {
		case RBI_IMEMO_ENV:
			return env_object(it, s, out);
		case RBI_IMEMO_MENT:
			return ment_object(it, s, out);
		case RBI_IMEMO_ISEQ:
			return rbi_heap_iseq_refs(it, s, out);
		default: {
			bool mine;
			int rc = rbi_heap_imemo_refs(it, s, out, &mine);

			return rc || mine ? rc : rbi_heap_slot_refs(it, s, out);
		}
		}
	case RBI_T_DATA:
		return data_object(it, s, out);
	default:
		return rbi_heap_slot_refs(it, s, out);
	}
}

RBI_EXPORT int rbi_heap_object_read(rbi_heap_iter *it, const struct rbi_heap_slot *s,
				    size_t value_max, struct rbi_heap_object *out)
{
	struct heap_object_scratch *sc;
	int rc;

	if ((rc = rbi_heap_scratch_open(it)))
		return rc;
	sc = rbi_heap_iter_scratch(it);
	*out = (struct rbi_heap_object){
		.type_name = dump_type_name(s->type),
		.klass = s->type == RBI_T_IMEMO || s->type == RBI_T_NODE ? 0 : s->klass,
		.frozen = (s->flags & FL_FREEZE) != 0,
		.length = -1,
		.encoding_index = -1,
		.ivars = -1,
		.entries = -1,
	};
	sc->name_cut = sc->real_name_cut = 0;
	sc->genivar_has = false;
	if (!s->flags)
		return rbi_fail(RBI_INVAL, "slot 0x%" PRIx64 " is free", s->addr);
	/* gc_mark_children marks generic instance variables first. */
	if (s->flags & RBI_FL_EXIVAR) {
		sc->genivar_has = true;
		rc = rbi_heap_genivar_refs(it, s, out, &sc->genivar_n);
		if (rc == RBI_NOMEM || rc == RBI_GONE)
			return rc;
		if ((sc->genivar_rc = rc))
			snprintf(sc->genivar_err, sizeof(sc->genivar_err), "%s", rbi_errmsg());
		out->nrefs = rc ? 0 : out->nrefs;
	}
	if ((rc = object_fields(it, s, value_max, out)))
		return rc;
	if (sc->genivar_has && (sc->genivar_rc || !out->refs_known)) {
		out->refs_known = false;
		out->nrefs = 0;
	}
	if (out->refs_known)
		out->refs = sc->refs;
	return RBI_OK;
}

RBI_EXPORT int rbi_heap_object_generic_ivars(rbi_heap_iter *it, uint64_t *n)
{
	struct heap_object_scratch *sc = it ? rbi_heap_iter_scratch(it) : NULL;

	if (n)
		*n = 0;
	if (!it || !n)
		return rbi_fail(RBI_INVAL, "no heap walk");
	if (!sc || !sc->genivar_has)
		return RBI_ITER_END;
	if (sc->genivar_rc)
		return rbi_fail(sc->genivar_rc, "%s", sc->genivar_err);
	*n = sc->genivar_n;
	return RBI_OK;
}
