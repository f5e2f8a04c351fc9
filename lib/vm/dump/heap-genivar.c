/* heap-genivar.c: the references an object's generic instance variables
 * give it.  An object other than an Object, class or module that has
 * instance variables (a String of the load path, an Array or Hash given
 * an @ivar) has FL_EXIVAR set and keeps them in variable.c's static
 * table, generic_iv_tbl (2.7) or generic_iv_tbl_ (3.0-3.4): an st_table
 * of object -> struct gen_ivtbl *.  gc.c gc_mark_children (2.7-3.3;
 * rb_gc_mark_children, 3.4) marks them first,
 *
 *   if (FL_TEST(obj, FL_EXIVAR)) rb_mark_generic_ivar(obj);
 *
 * before the type's own references, so dump_all lists them first too.
 * rb_mark_generic_ivar (variable.c) marks
 *   2.7, 3.1   ivtbl->ivptr[0 .. numiv)
 *   3.3, 3.4   a "too complex" shape's (rb_shape_obj_too_complex):
 *                the values of the st_table ivtbl->as.complex.table,
 *                in st_foreach's order (rb_mark_tbl_no_pin);
 *              else ivtbl->as.shape.ivptr[0 .. numiv)
 * numiv being the capacity, its unused words Qundef (gen_ivtbl_resize).
 * struct gen_ivtbl is { uint32_t numiv; VALUE ivptr[]; } in 2.7 and 3.1
 * and, with SHAPE_IN_BASIC_FLAGS (every 64-bit build), { union {
 * { uint32_t numiv; VALUE ivptr[]; } shape; { st_table *table; } complex;
 * } as; } in 3.3 and 3.4 (variable.h): numiv at 0 and ivptr at 8, or the
 * table's pointer at 0, in all four.  These offsets are constants here
 * (the layout tables do not carry gen_ivtbl), checked by what the words
 * must hold: a count within bounds, a readable st_table.
 *
 * Finding the table: by its local symbol where libruby (or a static
 * Ruby) has a .symtab.  Debian strips libruby of it: then every word of
 * libruby's writable segment (.data, .bss) is tried as a pointer to it.
 * It is the table only if it is an st_table that holds the object being
 * asked about (an FL_EXIVAR object seen in the walk, so not empty) and
 * whose every key is a heap object with FL_EXIVAR set: no other static
 * table of libruby keys on such objects only (the finalizer table keys on
 * FL_FINALIZE objects, object-id tables on any, the 2.7 compat table on
 * IDs).  Two tables passing would be refused, never guessed between; none
 * leaves these objects' references unknown.  The table is read once a
 * walk into a map (object -> gen_ivtbl), as heap-alloc.c reads the
 * allocation tracer's.
 *
 * Their memsize: rb_obj_memsize_of adds rb_generic_ivar_memsize (before
 * the type's own): gen_ivtbl_bytes(numiv), 8 + 8 * numiv; a too complex
 * shape's sizeof(struct gen_ivtbl), 16, and st_memsize of its table. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "vm/dump/heap-object.h"
#include "vm/heap/heap-pages.h"

/* struct gen_ivtbl (see above). */
#define GENIV_NUMIV 0
#define GENIV_IVPTR 8
#define GENIV_TABLE 0
#define GENIV_SIZE 16
/* Bounds: objects in the table past this are a torn table; more
   instance variables than this are no object's; a writable segment of
   more than this is no libruby's. */
#define GENIV_POWER_MAX 24
#define GENIV_OBJECTS_MAX (1ull << GENIV_POWER_MAX)
#define GENIV_NUMIV_MAX (1u << 16)
#define SCAN_MAX (1u << 24)

struct heap_genivar {
	int rc;                 /* RBI_OK: INDEX holds the table; else why not */
	char err[RBI_ERRMSG_MAX];
	uint64_t table;         /* the st_table */
	struct rbi_map index;   /* (object, 0, 0) -> its struct gen_ivtbl */
};

void rbi_heap_genivar_free(struct heap_genivar *g)
{
	if (!g)
		return;
	rbi_map_free(&g->index);
	free(g);
}

/* Is V a used slot of the heap (M: NULL when its pages cannot be told)?
   */
static bool heap_object(struct heap_maybe *m, const struct rbi_vm *vm, uint64_t v)
{
	return m ? rbi_heap_maybe_slot(m, v) : rbi_vm_heap_p(vm, v);
}

/* Is V a heap object with FL_EXIVAR? */
static bool exivar_object(struct rbi_target *t, const struct rbi_vm *vm, uint64_t v)
{
	uint64_t flags;

	return !rbi_read_u64(t, v, &flags) &&
	       (flags & RBI_FL_EXIVAR) && (flags & RBI_T_MASK) != RBI_T_OBJECT;
}

/* The entries of the st_table at TABLE into E; false unless it is one of
   heap objects that all have FL_EXIVAR, WITNESS (if not 0) among them. */
static bool genivar_table_at(struct rbi_target *t, const struct rbi_vm *vm,
			     struct heap_maybe *m, uint64_t table, uint64_t witness,
			     struct rbi_st_entries *e)
{
	const struct rbi_layout *l = vm->layout;
	uint8_t hdr[RBI_HASH_TABLE_MAX];
	uint64_t key, rec;
	bool seen = !witness;

	if (!table || (table & 7) || rbi_read(t, table, hdr, RBI_ST_HEADER_SIZE(l)))
		return false;
	/* Any struct's words may pass for an st_table's: its entries are
	   allocated 2^entry_power (st.c), bound within them, before they
	   are read. */
	if (l->st_table_entry_power != RBI_ABSENT &&
	    l->st_table_entry_power < RBI_ST_HEADER_SIZE(l) &&
	    (hdr[l->st_table_entry_power] > GENIV_POWER_MAX ||
	     rbi_get_u64(hdr, l->st_table_entries_bound) >
	     (1ull << hdr[l->st_table_entry_power])))
		return false;
	if (rbi_vm_st_entries(t, l, hdr, GENIV_OBJECTS_MAX, e) || !e->size)
		return false;
	/* Cheap first: the witness among the keys, every key a heap object. */
	for (uint64_t i = 0; i < e->count; i++) {
		if (!rbi_vm_st_entry(l, e, i, &key, &rec))
			continue;
		if (!rbi_vm_heap_p(vm, key) || !rec || (rec & 7))
			return false;
		seen |= key == witness;
	}
	if (!seen)
		return false;
	for (uint64_t i = 0; i < e->count; i++)
		if (rbi_vm_st_entry(l, e, i, &key, &rec) && !heap_object(m, vm, key))
			return false;
	for (uint64_t i = 0; i < e->count; i++)
		if (rbi_vm_st_entry(l, e, i, &key, &rec) && !exivar_object(t, vm, key))
			return false;
	return true;
}

/* The table by its symbol into *TABLE: RBI_ITER_END without one. */
static int by_symbol(struct rbi_target *t, const struct rbi_vm *vm, uint64_t *table)
{
	static const char *const names[] = { "generic_iv_tbl_", "generic_iv_tbl" };
	uint64_t addr, size;
	bool tls;

	for (size_t i = 0; i < RBI_ARRAY_SIZE(names); i++)
		if (!rbi_image_symbol(vm->image, names[i], &addr, &size, &tls) && !tls &&
		    size == 8)
			return rbi_read_u64(t, addr, table);
	return RBI_ITER_END;
}

/* The table among the words of libruby's writable segment (see the
   top) into *TABLE; RBI_UNSUPPORTED when none or two pass. */
static int by_scan(struct rbi_target *t, const struct rbi_vm *vm, struct heap_maybe *m,
		   uint64_t witness, struct rbi_st_entries *e, uint64_t *table)
{
	const struct rbi_image *img = vm->image;
	uint64_t *words;
	size_t n;
	int rc;

	*table = 0;
	if (!m)
		return rbi_fail(RBI_UNSUPPORTED, "the table of generic instance variables is "
				"looked for by its keys, heap objects, and this Ruby's heap "
				"pages cannot be told");
	if ((rc = rbi_vm_image_words(t, img, SCAN_MAX, &words, &n)))
		return rc == RBI_ITER_END ?
		       rbi_fail(RBI_UNSUPPORTED, "%s has no writable segment", img->name) : rc;
	for (size_t i = 0; i < n; i++) {
		uint64_t w = words[i];

		/* Pointers into the image itself or at heap objects are
		   no malloc'd st_table. */
		if (!w || (w & 7) || w == *table || (w >= img->start && w < img->end) ||
		    rbi_heap_maybe_slot(m, w) || !genivar_table_at(t, vm, m, w, witness, e))
			continue;
		if (*table) {
			free(words);
			return rbi_fail(RBI_UNSUPPORTED, "two tables of generic instance "
					"variables in %s's data (0x%" PRIx64 ", 0x%" PRIx64
					"): not guessing", img->name, *table, w);
		}
		*table = w;
	}
	free(words);
	if (!*table)
		return rbi_fail(RBI_UNSUPPORTED, "the table of generic instance variables "
				"was not found in %s's data (no symbol generic_iv_tbl_)",
				img->name);
	return RBI_OK;
}

/* Find the table (S: an object of the walk with FL_EXIVAR) and index it. */
static int load(struct rbi_heap_iter *it, const struct rbi_heap_slot *s, struct heap_genivar *g)
{
	struct rbi_target *t = rbi_heap_iter_target(it);
	const struct rbi_vm *vm = rbi_heap_iter_vm(it);
	const struct rbi_layout *l = vm->layout;
	struct heap_maybe *m = rbi_heap_object_maybe(it);
	struct rbi_st_entries e = { 0 };
	uint64_t key, rec;
	int rc;

	if (!rbi_vm_st_layout(l) || RBI_ST_HEADER_SIZE(l) > RBI_HASH_TABLE_MAX)
		return rbi_fail(RBI_UNSUPPORTED, "this Ruby's layout lacks st_table");
	rc = by_symbol(t, vm, &g->table);
	if (rc == RBI_ITER_END)
		rc = by_scan(t, vm, m, s->addr, &e, &g->table);
	/* Read again: the scan went on past it. */
	if (!rc && !genivar_table_at(t, vm, m, g->table, 0, &e)) {
		free(e.words);
		return rbi_fail(RBI_CORRUPT, "the table of generic instance variables of %s "
				"(0x%" PRIx64 ") is no table of objects that have them",
				vm->image->name, g->table);
	}
	for (uint64_t i = 0; !rc && i < e.count; i++)
		if (rbi_vm_st_entry(l, &e, i, &key, &rec))
			rc = rbi_map_put(&g->index, key, 0, 0, rec);
	free(e.words);
	return rc;
}

/* The walk's table, looked for at its first object with FL_EXIVAR. */
static struct heap_genivar *walk_genivar(struct rbi_heap_iter *it, const struct rbi_heap_slot *s)
{
	struct heap_object_scratch *sc = rbi_heap_iter_scratch(it);
	struct heap_genivar *g;

	if (sc->genivar)
		return sc->genivar;
	if (!(g = calloc(1, sizeof(*g))))
		return NULL;
	if ((g->rc = load(it, s, g)))
		snprintf(g->err, sizeof(g->err), "%s", rbi_errmsg());
	sc->genivar = g;
	return g;
}

/* Whether the Ruby's shape of S is "too complex" (3.3+): *COMPLEX. */
static int too_complex(struct rbi_heap_iter *it, const struct rbi_heap_slot *s, bool *complex)
{
	const struct rbi_layout *l = rbi_heap_iter_vm(it)->layout;
	const uint8_t *shape;
	int rc;

	*complex = false;
	if (l->shape_type == RBI_ABSENT || l->shape_type_obj_too_complex == RBI_ABSENT)
		return RBI_OK;  /* no shapes (2.7, 3.1), or none too complex (3.2) */
	if ((rc = rbi_heap_object_shape(it, s, &shape)))
		return rc;
	if (!shape)
		return rbi_fail(RBI_UNSUPPORTED, "this Ruby's object shapes were not found");
	*complex = shape[l->shape_type] == l->shape_type_obj_too_complex;
	return RBI_OK;
}

/* S's struct gen_ivtbl into *IVTBL; *COMPLEX: its shape is too
   complex. */
static int genivar_of(struct rbi_heap_iter *it, const struct rbi_heap_slot *s, uint64_t *ivtbl,
		      bool *complex)
{
	struct heap_genivar *g;

	if (!(g = walk_genivar(it, s)))
		return rbi_fail(RBI_NOMEM, "out of memory");
	if (g->rc)
		return rbi_fail(g->rc, "%s", g->err);
	if (!rbi_map_get(&g->index, s->addr, 0, 0, ivtbl))
		return rbi_fail(RBI_CORRUPT, "0x%" PRIx64 " has FL_EXIVAR but is not in the "
				"table of generic instance variables (set after it was read?)",
				s->addr);
	return too_complex(it, s, complex);
}

/* The header of a too complex S's table (IVTBL's) into HDR. */
static int complex_table(struct rbi_heap_iter *it, const struct rbi_heap_slot *s, uint64_t ivtbl,
			 uint8_t hdr[RBI_HASH_TABLE_MAX])
{
	struct rbi_target *t = rbi_heap_iter_target(it);
	uint64_t table;
	int rc;

	if ((rc = rbi_read_u64(t, ivtbl + GENIV_TABLE, &table)) ||
	    (rc = rbi_read(t, table, hdr, RBI_ST_HEADER_SIZE(rbi_heap_iter_vm(it)->layout))))
		return rbi_fail_context(rc, "reading the generic ivar table of 0x%" PRIx64 ": ",
					s->addr);
	return RBI_OK;
}

/* S's numiv (bounded). */
static int numiv_of(struct rbi_heap_iter *it, const struct rbi_heap_slot *s, uint64_t ivtbl,
		    uint32_t *numiv)
{
	int rc;

	if ((rc = rbi_read(rbi_heap_iter_target(it), ivtbl + GENIV_NUMIV, numiv, sizeof(*numiv))))
		return rbi_fail_context(rc, "reading the generic ivars of 0x%" PRIx64 ": ",
					s->addr);
	if (*numiv > GENIV_NUMIV_MAX)
		return rbi_fail(RBI_CORRUPT, "0x%" PRIx64 " claims %" PRIu32 " generic ivars",
				s->addr, *numiv);
	return RBI_OK;
}

/* An object's generic ivars as memsize and refs both read them. */
struct genivars {
	uint64_t ivtbl;                 /* its struct gen_ivtbl */
	bool complex;                   /* a too complex shape's: HDR, else NUMIV */
	uint8_t hdr[RBI_HASH_TABLE_MAX];
	uint32_t numiv;
};

static int genivars_read(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
			 struct genivars *gv)
{
	int rc;

	if ((rc = genivar_of(it, s, &gv->ivtbl, &gv->complex)))
		return rc;
	return gv->complex ? complex_table(it, s, gv->ivtbl, gv->hdr) :
			     numiv_of(it, s, gv->ivtbl, &gv->numiv);
}

int rbi_heap_genivar_memsize(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
			     uint64_t *size)
{
	struct genivars gv;
	int rc;

	*size = 0;
	if ((rc = genivars_read(it, s, &gv)))
		return rc;
	if (!gv.complex) {
		*size = GENIV_IVPTR + 8ull * gv.numiv;
		return RBI_OK;
	}
	if ((rc = rbi_vm_st_memsize(rbi_heap_iter_vm(it)->layout, gv.hdr, size)))
		return rc;
	*size += GENIV_SIZE;
	return RBI_OK;
}

int rbi_heap_genivar_refs(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
			  struct rbi_heap_object *out, uint64_t *n)
{
	const uint64_t *words;
	struct genivars gv;
	int64_t size;
	int rc;

	*n = 0;
	if ((rc = genivars_read(it, s, &gv)))
		return rc;
	if (gv.complex) {
		if ((rc = rbi_heap_st_refs(it, s, out, gv.hdr, false, &size)))
			return rc;
		*n = (uint64_t)size;
		return RBI_OK;
	}
	if ((rc = rbi_heap_read_words(it, s, "generic ivars of", gv.ivtbl + GENIV_IVPTR,
				      gv.numiv, &words)))
		return rc;
	for (uint32_t i = 0; i < gv.numiv; i++)
		*n += words[i] != rbi_heap_iter_vm(it)->k.qundef;
	return rbi_heap_add_refs(it, s, out, words, gv.numiv);
}
