/* heap-class.c: what the GC marks of a class, a module or an include
 * wrapper (T_CLASS, singleton classes among them, T_MODULE, T_ICLASS), in
 * its order: the words heap-object.c makes dump_all's references of
 * (rb_objspace_reachable_objects_from runs gc_mark_children with a
 * callback; 3.4: rb_gc_mark_children).  RBasic.klass, marked first for
 * every type, is dump_all's "class", not a reference: left out.
 *
 * gc.c of 2.7.4, 3.1.2, 3.3.8 and 3.4.5:
 *   T_CLASS, T_MODULE
 *     2.7   super; with a classext: m_tbl, iv_tbl, const_tbl
 *     3.1   super; with a classext: m_tbl, cc_tbl, iv_tbl, const_tbl
 *     3.3+  a singleton's attached object, super, m_tbl, cvc_tbl, cc_tbl,
 *           ivars, const_tbl, classpath
 *   T_ICLASS
 *     2.7   m_tbl if RICLASS_IS_ORIGIN, super; with a classext:
 *           callable_m_tbl
 *     3.1   m_tbl if it owns it, super; with a classext: callable_m_tbl,
 *           cc_tbl
 *     3.3+  m_tbl if it owns it, super, includer, callable_m_tbl, cc_tbl
 * m_tbl and callable_m_tbl mark their values (method entries: T_IMEMO);
 * iv_tbl (an st_table of ID to value, hidden __classpath__ and the like
 * among them) its values, and 3.3's ivars the values the shape counts, or
 * a "too complex" table's (ivar.c reads both); const_tbl each
 * rb_const_entry_t's value, then its file; cvc_tbl each
 * rb_cvar_class_tbl_entry's cref; cc_tbl, for each rb_class_cc_entries
 * whose method entry is not invalidated (gc.c frees those instead), the
 * entry, then each call cache's ci (up to 3.3) and cc.  Tables in Ruby's
 * own order: rb_id_table items by index, st_table entries from
 * entries_start.  None of them marks origin_, refined_class or the
 * subclass lists.  Only a class without a classext (RClass.ptr NULL,
 * 2.7-3.1: never seen) ends after its super.  The marking of other
 * families was not read: their classes' references stay unknown.
 * Debian's 3.4.11 (no source or DWARF to be had) gives dump_all's
 * references with 3.4.5's marking; only its call cache entries are laid
 * out otherwise, { cc, argc, flag } (tools/layout-tables.py OBSERVED):
 * where a layout does not say where cc is (3.4.6-3.4.10), the classes'
 * references are unknown. */
#include <inttypes.h>
#include <string.h>

#include "vm/dump/heap-object.h"

/* Call caches of one method in one class: a corrupt length must not make
   us read megabytes. */
#define CC_ENTRIES_MAX (1u << 16)

struct class_walk {
	struct rbi_target *t;
	const struct rbi_vm *vm;
	const struct rbi_layout *l;
	const struct rbi_heap_slot *s;
	struct heap_object_scratch *sc;
	size_t n;               /* words in sc->marks */
};

static int mark(struct class_walk *w, uint64_t v)
{
	if (!RBI_GROW(w->sc->marks, w->sc->marks_cap, w->n + 1, 64))
		return rbi_fail(RBI_NOMEM, "out of memory");
	w->sc->marks[w->n++] = v;
	return RBI_OK;
}

static int absent(const struct class_walk *w, const char *field)
{
	return rbi_fail(RBI_UNSUPPORTED, "this Ruby's layout has no %s: the references of "
			"class 0x%" PRIx64 " are not read", field, w->s->addr);
}

/* The word at OFF (FIELD) of the classext EXT: from the slot's bytes
   where the classext is in the slot (3.3+). */
static int ext_word(struct class_walk *w, uint64_t ext, uint32_t off, const char *field,
		    uint64_t *v)
{
	const struct rbi_heap_slot *s = w->s;

	if (off == RBI_ABSENT)
		return absent(w, field);
	if (ext >= s->addr && ext - s->addr < s->size && ext - s->addr + off + 8 <= s->size) {
		*v = rbi_get_u64(s->bytes, (uint32_t)(ext - s->addr) + off);
		return RBI_OK;
	}
	return rbi_read_u64(w->t, ext + off, v);
}

static int mark_ext_word(struct class_walk *w, uint64_t ext, uint32_t off, const char *field)
{
	uint64_t v = 0;
	int rc = ext_word(w, ext, off, field, &v);

	return rc ? rc : mark(w, v);
}

/* A word of the slot (RClass.super, 3.3's RClass.m_tbl). */
static int slot_word(struct class_walk *w, uint32_t off, const char *field, uint64_t *v)
{
	if (off == RBI_ABSENT || off + 8 > w->s->size)
		return absent(w, field);
	*v = rbi_get_u64(w->s->bytes, off);
	return RBI_OK;
}

static int method_entry(uint32_t serial, uint64_t me, void *arg)
{
	(void)serial;
	return mark(arg, me);
}

static int const_entry(uint32_t serial, uint64_t ce, void *arg)
{
	struct class_walk *w = arg;
	uint64_t value, file;
	int rc;

	(void)serial;
	if ((rc = rbi_read_u64(w->t, ce + w->l->const_entry_value, &value)) ||
	    (rc = rbi_read_u64(w->t, ce + w->l->const_entry_file, &file)) ||
	    (rc = mark(w, value)))
		return rc;
	return mark(w, file);
}

static int cvar_entry(uint32_t serial, uint64_t entry, void *arg)
{
	struct class_walk *w = arg;
	uint64_t cref = 0;
	int rc = rbi_read_u64(w->t, entry + w->l->cvar_entry_cref, &cref);

	(void)serial;
	return rc ? rc : mark(w, cref);
}

/* Whether CC is a call cache (an imemo_callcache): where a table's
   layout of the entries is wrong, a word there is something else.
   Moved, freed or unreadable: not one either. */
static bool callcache(struct class_walk *w, uint64_t cc)
{
	uint64_t flags;

	return rbi_vm_heap_p(w->vm, cc) && !rbi_vm_obj_flags(w->t, w->vm, cc, &flags) &&
	       (flags & RBI_T_MASK) == RBI_T_IMEMO &&
	       RBI_IMEMO_TYPE(flags) == w->l->imemo_type_callcache;
}

/* One rb_class_cc_entries CCS: its method entry, then each entry's ci
   (where the entry has one) and cc. */
static int cc_entries(uint32_t serial, uint64_t ccs, void *arg)
{
	struct class_walk *w = arg;
	const struct rbi_layout *l = w->l;
	uint64_t cme, entries, flags, esize = l->cc_entry_size;
	int32_t len;
	int rc;

	(void)serial;
	if ((rc = rbi_read(w->t, ccs + l->cc_entries_len, &len, sizeof(len))) ||
	    (rc = rbi_read_u64(w->t, ccs + l->cc_entries_cme, &cme)) ||
	    (rc = rbi_read_u64(w->t, ccs + l->cc_entries_entries, &entries)) ||
	    (rc = rbi_vm_obj_flags(w->t, w->vm, cme, &flags)))
		return rbi_fail_context(rc, "reading the call caches of class 0x%" PRIx64 ": ",
					w->s->addr);
	if (flags & RBI_METHOD_ENTRY_INVALIDATED)
		return RBI_OK;
	if (len < 0 || (uint32_t)len > CC_ENTRIES_MAX)
		return rbi_fail(RBI_CORRUPT, "class 0x%" PRIx64 " claims %" PRId32
				" call caches of one method", w->s->addr, len);
	if (!RBI_GROW(w->sc->ccs, w->sc->ccs_cap, (size_t)len * esize, 256))
		return rbi_fail(RBI_NOMEM, "out of memory");
	if (len && (rc = rbi_read(w->t, entries, w->sc->ccs, (size_t)len * esize)))
		return rbi_fail_context(rc, "reading the call caches of class 0x%" PRIx64 ": ",
					w->s->addr);
	if ((rc = mark(w, cme)))
		return rc;
	for (int32_t i = 0; i < len; i++) {
		const uint8_t *e = w->sc->ccs + (size_t)i * esize;
		uint64_t cc = rbi_get_u64(e, l->cc_entry_cc);

		if (!callcache(w, cc))
			return rbi_fail(RBI_UNSUPPORTED, "class 0x%" PRIx64 " has call caches "
					"this Ruby's layout does not describe", w->s->addr);
		if ((l->cc_entry_ci != RBI_ABSENT && (rc = mark(w, rbi_get_u64(e, l->cc_entry_ci)))) ||
		    (rc = mark(w, cc)))
			return rc;
	}
	return RBI_OK;
}

/* FN for each value of the rb_id_table TABLE. */
static int mark_table(struct class_walk *w, uint64_t table, rbi_vm_id_table_fn fn)
{
	return rbi_vm_id_table_foreach(w->t, w->vm, table, fn, w);
}

/* FN for each value of the rb_id_table at OFF (FIELD) of the classext. */
static int mark_ext_table(struct class_walk *w, uint64_t ext, uint32_t off, const char *field,
			  rbi_vm_id_table_fn fn)
{
	uint64_t table = 0;
	int rc = ext_word(w, ext, off, field, &table);

	return rc ? rc : mark_table(w, table, fn);
}

/* RCLASS_M_TBL: in RClass (3.3+), else in the classext. */
static int mark_m_tbl(struct class_walk *w, uint64_t ext)
{
	uint64_t table = 0;
	int rc;

	if (w->l->rclass_m_tbl == RBI_ABSENT)
		return mark_ext_table(w, ext, w->l->classext_m_tbl, "m_tbl", method_entry);
	rc = slot_word(w, w->l->rclass_m_tbl, "m_tbl", &table);
	return rc ? rc : mark_table(w, table, method_entry);
}

static int mark_cc_tbl(struct class_walk *w, uint64_t ext)
{
	const struct rbi_layout *l = w->l;

	if (!w->vm->k.class_marks_cc_tbl)
		return RBI_OK;
	if (l->cc_entries_len == RBI_ABSENT || l->cc_entries_cme == RBI_ABSENT ||
	    l->cc_entries_entries == RBI_ABSENT || l->cc_entry_size == RBI_ABSENT ||
	    l->cc_entry_cc == RBI_ABSENT || l->cc_entry_cc + 8 > l->cc_entry_size ||
	    l->imemo_type_callcache == RBI_ABSENT ||
	    (l->cc_entry_ci != RBI_ABSENT && l->cc_entry_ci + 8 > l->cc_entry_size))
		return absent(w, "rb_class_cc_entries");
	return mark_ext_table(w, ext, l->classext_cc_tbl, "cc_tbl", cc_entries);
}

static int mark_ivars(struct class_walk *w)
{
	const struct rbi_heap_slot *s = w->s;
	struct rbi_obj_bytes obj = { s->addr, s->flags, s->bytes, s->size, true };
	struct rbi_ivars *iv = &w->sc->ivars;
	int rc;

	if ((rc = rbi_vm_object_ivars(w->t, w->vm, &obj, iv)))
		return rc;
	for (uint64_t i = 0; i < iv->n; i++)
		if ((rc = mark(w, iv->values[i])))
			return rc;
	return RBI_OK;
}

static int class_or_module(struct class_walk *w, uint64_t ext)
{
	const struct rbi_layout *l = w->l;
	bool ext_values = w->vm->k.class_marks_ext_values;
	int rc;

	if (l->const_entry_value == RBI_ABSENT || l->const_entry_file == RBI_ABSENT)
		return absent(w, "rb_const_entry_t");
	if (ext_values && l->cvar_entry_cref == RBI_ABSENT)
		return absent(w, "rb_cvar_class_tbl_entry");
	if ((rc = mark_m_tbl(w, ext)) ||
	    (ext_values && (rc = mark_ext_table(w, ext, l->classext_cvc_tbl, "cvc_tbl",
						cvar_entry))) ||
	    (rc = mark_cc_tbl(w, ext)) ||
	    (rc = mark_ivars(w)) ||
	    (rc = mark_ext_table(w, ext, l->classext_const_tbl, "const_tbl", const_entry)))
		return rc;
	return ext_values ? mark_ext_word(w, ext, l->classext_classpath, "classpath") : RBI_OK;
}

/* RICLASS_OWNS_M_TBL_P (2.7: RICLASS_IS_ORIGIN alone). */
static bool iclass_owns_m_tbl(const struct class_walk *w)
{
	const struct rbi_vm_consts *k = &w->vm->k;

	return (w->s->flags & (k->riclass_is_origin | k->riclass_shared_mtbl)) ==
	       k->riclass_is_origin;
}

static int iclass(struct class_walk *w, uint64_t ext)
{
	const struct rbi_layout *l = w->l;
	int rc;

	if ((w->vm->k.class_marks_ext_values &&
	     (rc = mark_ext_word(w, ext, l->classext_includer, "includer"))) ||
	    (rc = mark_ext_table(w, ext, l->classext_callable_m_tbl, "callable_m_tbl",
				 method_entry)))
		return rc;
	return mark_cc_tbl(w, ext);
}

/* What is marked before the superclass: an include wrapper's own m_tbl,
   a singleton class's attached object (3.3+). */
static int before_super(struct class_walk *w, uint64_t ext)
{
	const struct rbi_vm_consts *k = &w->vm->k;

	if (w->s->type == RBI_T_ICLASS)
		return iclass_owns_m_tbl(w) ? mark_m_tbl(w, ext) : RBI_OK;
	if (w->s->type == RBI_T_CLASS && (w->s->flags & k->fl_singleton) &&
	    k->class_marks_ext_values)
		return mark_ext_word(w, ext, w->l->classext_attached_object, "attached_object");
	return RBI_OK;
}

int rbi_heap_class_marks(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
			 const uint64_t **marks, size_t *n)
{
	const struct rbi_vm *vm = rbi_heap_iter_vm(it);
	const struct rbi_layout *l = vm->layout;
	struct class_walk w = {
		.t = rbi_heap_iter_target(it), .vm = vm, .l = l, .s = s,
		.sc = rbi_heap_iter_scratch(it),
	};
	uint64_t super = 0, ext = 0;
	int rc;

	*marks = NULL;
	*n = 0;
	if (!vm->k.class_marks_read)
		return rbi_fail(RBI_UNSUPPORTED, "how this Ruby's GC marks classes is not known");
	/* RCLASS_EXT: in the slot after RClass (3.3+), else RClass.ptr. */
	if (l->rclass_classext != RBI_ABSENT)
		ext = s->addr + l->rclass_classext;
	else if ((rc = slot_word(&w, l->rclass_ptr, "RClass.ptr", &ext)))
		return rc;
	if (ext && (rc = before_super(&w, ext)))
		return rc;
	if ((rc = slot_word(&w, l->rclass_super, "RClass.super", &super)) ||
	    (super && (rc = mark(&w, super))))
		return rc;
	if (ext) {
		rc = s->type == RBI_T_ICLASS ? iclass(&w, ext) : class_or_module(&w, ext);
		if (rc)
			return rc;
	}
	*marks = w.sc->marks;
	*n = w.n;
	return RBI_OK;
}
