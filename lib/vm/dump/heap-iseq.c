/* heap-iseq.c: an instruction sequence's references (IMEMO iseq) as
 * dump_all lists them: what iseq.c rb_iseq_mark_and_move marks (3.3,
 * 3.4), in its order:
 *   the wrapper (its RubyVM::InstructionSequence, once made)
 *   the inline caches (body->is_entries; the instance variable caches
 *     come first and mark nothing): a class variable cache's class, a
 *     `once` value, a constant cache's entry
 *   the instruction operands that are VALUEs: those body->mark_bits
 *     flags (the word itself for up to 64 instruction words, else a list
 *     of words)
 *   coverage, pc2branchindex, script_lines, label, base_label, pathobj,
 *     local_iseq, parent_iseq, mandatory_only_iseq
 *   per call site: its call info (a packed one is a Fixnum) and, in 3.3,
 *     its call cache while it is markable, not invalidated and its method
 *     entry valid (cc_is_active; 3.4's version of it tests
 *     `cc == rb_vm_empty_cc() || rb_vm_empty_cc_for_super()`, true for
 *     every cache, so 3.4 marks none)
 *   the default values of the keyword parameters
 *   the iseqs of the catch table
 * each only if it is a heap object.  An iseq still being compiled or
 * loaded (ISEQ_USE_COMPILE_DATA, ISEQ_NOT_LOADED_YET) marks its compile
 * data or loader, one with local hooks (a TracePoint on it) its hooks, and
 * where a JIT runs (YJIT, RJIT) an iseq may mark its JIT code's objects:
 * their references stay unknown, as do those of the Rubies whose marking
 * was not read.
 *
 * 2.7 and 3.1 (rb_iseq_mark), in its order:
 *   the wrapper
 *   with ISEQ_MARKABLE_ISEQ, the instruction operands that are VALUEs and
 *     (3.1) inline caches', found by decoding the instructions
 *     (heap-iseq-insns.c); one that does not decode leaves the iseq unknown
 *   coverage, pc2branchindex, (3.1) script_lines, label, base_label,
 *     pathobj, (3.1) mandatory_only_iseq, parent_iseq
 *   (3.1) per call site: its call info if vm_ci_markable, its call cache
 *     if markable and not invalidated
 *   the default values of the keyword parameters
 *   the iseqs of the catch table
 * each only if it is a heap object; then what 3.1's MJIT and YJIT mark
 * through jit_unit and yjit_blocks: an iseq with either stays unknown, as
 * do the loading, compiling and hooked ones (as above). */
#include <inttypes.h>
#include <string.h>

#include "vm/dump/heap-object.h"

/* iseq.h: IMEMO_FL_USER1 and IMEMO_FL_USER2. */
#define ISEQ_NOT_LOADED_YET (1ull << (RBI_FL_USHIFT + 5))
#define ISEQ_USE_COMPILE_DATA (1ull << (RBI_FL_USHIFT + 6))
/* iseq.h: IMEMO_FL_USER3 and IMEMO_FL_USER4. */
#define ISEQ_TRANSLATED (1ull << (RBI_FL_USHIFT + 7))
#define ISEQ_MARKABLE_ISEQ (1ull << (RBI_FL_USHIFT + 8))
/* vm_callinfo.h (3.1): IMEMO_FL_USER0. */
#define VM_CALLINFO_NOT_UNDER_GC (1ull << (RBI_FL_USHIFT + 4))
/* ISEQ_MBITS_BITLENGTH: instruction words per mark bit word. */
#define MBITS_WORD 64u

/* Bounds on what an iseq claims; real ones are far smaller. */
#define ISEQ_WORDS_MAX (1u << 24)
#define ISEQ_ENTRIES_MAX (1u << 20)
#define BODY_MAX 512u

/* heap_object_scratch.jit, once looked at. */
enum { JIT_NONE = 1, JIT_RUNS };

struct iseq_walk {
	struct rbi_heap_iter *it;
	struct rbi_target *t;
	const struct rbi_vm *vm;
	const struct rbi_layout *l;
	const struct rbi_heap_slot *s;
	struct rbi_heap_object *out;
	uint8_t body[BODY_MAX];         /* rb_iseq_constant_body as read */
};

/* The body's words and unsigned ints read, and the end of them. */
#define BODY_WORDS(l) { \
	(l)->body_iseq_encoded, (l)->body_pathobj, (l)->body_base_label, (l)->body_label, \
	(l)->body_parent_iseq, (l)->body_local_iseq, (l)->body_coverage, \
	(l)->body_pc2branchindex, (l)->body_script_lines, (l)->body_mandatory_only_iseq, \
	(l)->body_call_data, (l)->body_keyword, (l)->body_catch_table, (l)->body_is_entries, \
	(l)->body_mark_bits }
#define BODY_UINTS(l) { \
	(l)->body_iseq_size, (l)->body_ci_size, (l)->body_ivc_size, (l)->body_icvarc_size, \
	(l)->body_ise_size, (l)->body_ic_size }

/* How far into the body the fields read reach: the words WORDS (each
   needed), OPTIONAL (read where the layout has them) and unsigned ints
   UINTS (needed), and has_kw's bit; 0 when one needed is absent, or
   they reach past BODY_MAX. */
static uint32_t fields_end(const struct rbi_layout *l, const uint32_t *words, size_t nwords,
			   const uint32_t *optional, size_t noptional, const uint32_t *uints,
			   size_t nuints)
{
	uint32_t end;

	if (l->body_has_kw == RBI_ABSENT)
		return 0;
	end = l->body_has_kw / 8 + 1;
	for (size_t i = 0; i < nwords; i++) {
		if (words[i] == RBI_ABSENT)
			return 0;
		end = words[i] + 8 > end ? words[i] + 8 : end;
	}
	for (size_t i = 0; i < noptional; i++)
		if (optional[i] != RBI_ABSENT)
			end = optional[i] + 8 > end ? optional[i] + 8 : end;
	for (size_t i = 0; i < nuints; i++) {
		if (uints[i] == RBI_ABSENT)
			return 0;
		end = uints[i] + 4 > end ? uints[i] + 4 : end;
	}
	return end > BODY_MAX ? 0 : end;
}

/* The bytes of the body read: as far as its last field read reaches; 0
   when the layout lacks one of them. */
static uint32_t body_end(const struct rbi_layout *l)
{
	const uint32_t words[] = BODY_WORDS(l), uints[] = BODY_UINTS(l);

	return fields_end(l, words, RBI_ARRAY_SIZE(words), NULL, 0, uints, RBI_ARRAY_SIZE(uints));
}

/* Whether the layout has every offset of OFFS, and every word of SLOT in
   slot S. */
static bool fields_known(const uint32_t *offs, size_t noffs, const uint32_t *slot,
			 size_t nslot, const struct rbi_heap_slot *s)
{
	for (size_t i = 0; i < noffs; i++)
		if (offs[i] == RBI_ABSENT)
			return false;
	for (size_t i = 0; i < nslot; i++)
		if (slot[i] == RBI_ABSENT || slot[i] + 8 > s->size)
			return false;
	return true;
}

/* Whether the layout has the rest of what marking an iseq reads. */
static bool layout_complete(const struct rbi_layout *l, const struct rbi_heap_slot *s)
{
	const uint32_t offs[] = {
		l->keyword_num, l->keyword_required_num, l->keyword_default_values,
		l->catch_table_entries, l->catch_entry_size, l->catch_entry_iseq,
		l->call_data_size, l->call_data_ci, l->call_data_cc, l->callcache_klass,
		l->callcache_cme, l->is_entry_size, l->is_entry_once_value, l->ic_entry,
		l->icvarc_entry, l->cvar_entry_class_value,
	};
	const uint32_t slot[] = { l->iseq_wrapper, l->iseq_body, l->iseq_local_hooks };

	if (!fields_known(offs, RBI_ARRAY_SIZE(offs), slot, RBI_ARRAY_SIZE(slot), s))
		return false;
	return l->call_data_size % 8 == 0 && l->call_data_size >= 8 &&
	       l->is_entry_size % 8 == 0 && l->is_entry_size >= 8 &&
	       l->catch_entry_size % 8 == 0 && l->catch_entry_size >= 8 &&
	       l->keyword_default_values <= 64 - 8 && l->keyword_num <= 64 - 4 &&
	       l->keyword_required_num <= 64 - 4 && body_end(l) != 0;
}

static uint64_t body_word(const struct iseq_walk *w, uint32_t off)
{
	return off == RBI_ABSENT ? 0 : rbi_get_u64(w->body, off);
}

static int mark(struct iseq_walk *w, uint64_t v)
{
	return rbi_heap_add_refs(w->it, w->s, w->out, &v, 1);
}

/* Words WHAT of N entries, ENTRY_SIZE bytes each, at ADDR. */
static int read_entries(struct iseq_walk *w, const char *what, uint64_t addr, uint64_t n,
			uint32_t entry_size, const uint64_t **words)
{
	if (n > ISEQ_ENTRIES_MAX)
		return rbi_fail(RBI_CORRUPT, "iseq 0x%" PRIx64 " claims %" PRIu64 " %s",
				w->s->addr, n, what);
	return rbi_heap_read_words(w->it, w->s, what, addr, n * entry_size / 8, words);
}

/* The word at byte OFF of entry I (ENTRY_SIZE bytes) of WORDS. */
static uint64_t entry_word(const uint64_t *words, uint64_t i, uint32_t entry_size, uint32_t off)
{
	uint64_t v;

	memcpy(&v, (const uint8_t *)words + i * entry_size + off, sizeof(v));
	return v;
}

/* The inline caches: class variable caches (their entry's class), `once`
   values, constant caches (their entry), after the ivar caches. */
static int inline_caches(struct iseq_walk *w)
{
	const struct rbi_layout *l = w->l;
	uint64_t ivc = rbi_get_u32(w->body, l->body_ivc_size),
		 icvarc = rbi_get_u32(w->body, l->body_icvarc_size),
		 ise = rbi_get_u32(w->body, l->body_ise_size),
		 ic = rbi_get_u32(w->body, l->body_ic_size),
		 addr = body_word(w, l->body_is_entries), i, v;
	const uint64_t *e;
	int rc;

	if (!addr)
		return RBI_OK;
	if ((rc = read_entries(w, "inline caches", addr, ivc + icvarc + ise + ic,
			       l->is_entry_size, &e)))
		return rc;
	for (i = ivc; i < ivc + icvarc; i++) {
		uint64_t entry = entry_word(e, i, l->is_entry_size, l->icvarc_entry);

		if (entry &&
		    ((rc = rbi_read_u64(w->t, entry + l->cvar_entry_class_value, &v)) ||
		     (rc = mark(w, v))))
			return rc;
	}
	for (; i < ivc + icvarc + ise; i++)
		if ((rc = mark(w, entry_word(e, i, l->is_entry_size, l->is_entry_once_value))))
			return rc;
	for (; i < ivc + icvarc + ise + ic; i++)
		if ((rc = mark(w, entry_word(e, i, l->is_entry_size, l->ic_entry))))
			return rc;
	return RBI_OK;
}

/* The operands the mark bits flag, 64 instruction words at a time. */
static int operands(struct iseq_walk *w)
{
	uint32_t size = rbi_get_u32(w->body, w->l->body_iseq_size);
	uint64_t code = body_word(w, w->l->body_iseq_encoded),
		 bits0 = body_word(w, w->l->body_mark_bits);
	uint32_t pages = (size + MBITS_WORD - 1) / MBITS_WORD;
	int rc;

	if (!bits0)
		return RBI_OK;
	if (size > ISEQ_WORDS_MAX)
		return rbi_fail(RBI_CORRUPT, "iseq 0x%" PRIx64 " claims %u instruction words",
				w->s->addr, size);
	for (uint32_t page = 0; page < pages; page++) {
		uint32_t n = size - page * MBITS_WORD < MBITS_WORD ? size - page * MBITS_WORD :
			     MBITS_WORD;
		uint64_t bits = bits0, words[MBITS_WORD];

		if (pages > 1 && (rc = rbi_read_u64(w->t, bits0 + 8ull * page, &bits)))
			return rbi_fail_context(rc, "reading the mark bits of iseq 0x%" PRIx64 ": ",
						w->s->addr);
		if (!bits)
			continue;
		if ((rc = rbi_read(w->t, code + 8ull * page * MBITS_WORD, words, 8ull * n)))
			return rbi_fail_context(rc, "reading the instructions of iseq 0x%"
						PRIx64 ": ", w->s->addr);
		for (; bits; bits &= bits - 1) {
			unsigned bit = (unsigned)__builtin_ctzll(bits);

			if (bit >= n)
				return rbi_fail(RBI_CORRUPT, "iseq 0x%" PRIx64 " marks an operand "
						"past its %u instruction words", w->s->addr, size);
			if ((rc = mark(w, words[bit])))
				return rc;
		}
	}
	return RBI_OK;
}

/* cc_is_active (3.3), vm_cc_markable and !vm_cc_invalidated_p (3.1): a
   markable cache, not invalidated (klass set), whose method entry is
   valid. */
static int cc_active(struct iseq_walk *w, uint64_t cc, bool *active)
{
	uint64_t flags, klass, cme, cme_flags;
	int rc;

	*active = false;
	if (!cc)
		return RBI_OK;
	if ((rc = rbi_read_u64(w->t, cc, &flags)) ||
	    (rc = rbi_read_u64(w->t, cc + w->l->callcache_klass, &klass)) ||
	    (rc = rbi_read_u64(w->t, cc + w->l->callcache_cme, &cme)))
		return rbi_fail_context(rc, "reading a call cache of iseq 0x%" PRIx64 ": ",
					w->s->addr);
	if ((flags & w->vm->k.callcache_unmarkable) || !klass)
		return RBI_OK;
	if ((rc = rbi_read_u64(w->t, cme, &cme_flags)))
		return rbi_fail_context(rc, "reading the method entry of a call cache of "
					"iseq 0x%" PRIx64 ": ", w->s->addr);
	*active = !(cme_flags & RBI_METHOD_ENTRY_INVALIDATED);
	return RBI_OK;
}

/* A call info CI, where marked: in 3.1 only as vm_ci_markable takes it (not
   NULL; a packed one, a Fixnum, is passed on; else one not flagged
   VM_CALLINFO_NOT_UNDER_GC). */
static int call_info(struct iseq_walk *w, uint64_t ci)
{
	uint64_t flags;
	int rc;

	if (!w->vm->k.iseq_ci_markable || !ci || (ci & 1))
		return mark(w, ci);
	if ((rc = rbi_read_u64(w->t, ci, &flags)))
		return rbi_fail_context(rc, "reading a call info of iseq 0x%" PRIx64 ": ",
					w->s->addr);
	return flags & VM_CALLINFO_NOT_UNDER_GC ? RBI_OK : mark(w, ci);
}

/* Each call site's call info, then its call cache where this Ruby marks
   it. */
static int call_data(struct iseq_walk *w)
{
	const struct rbi_layout *l = w->l;
	uint64_t addr = body_word(w, l->body_call_data),
		 n = rbi_get_u32(w->body, l->body_ci_size);
	const uint64_t *cds;
	int rc;

	if (!addr)
		return RBI_OK;
	if ((rc = read_entries(w, "call sites", addr, n, l->call_data_size, &cds)))
		return rc;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t cc = entry_word(cds, i, l->call_data_size, l->call_data_cc);
		bool active = false;

		if ((rc = call_info(w, entry_word(cds, i, l->call_data_size, l->call_data_ci))) ||
		    (w->vm->k.iseq_marks_cc && (rc = cc_active(w, cc, &active))) ||
		    (active && (rc = mark(w, cc))))
			return rc;
	}
	return RBI_OK;
}

/* The default values of the optional keyword parameters: the last
   num - required_num of them. */
static int keyword_defaults(struct iseq_walk *w)
{
	const struct rbi_layout *l = w->l;
	uint64_t addr = body_word(w, l->body_keyword), values;
	uint32_t bit = l->body_has_kw, num, required;
	const uint64_t *v;
	uint8_t kw[64];
	int rc;

	if (!((w->body[bit / 8] >> (bit % 8)) & 1) || !addr)
		return RBI_OK;
	if ((rc = rbi_read(w->t, addr, kw, l->keyword_default_values + 8)))
		return rbi_fail_context(rc, "reading the keywords of iseq 0x%" PRIx64 ": ",
					w->s->addr);
	num = rbi_get_u32(kw, l->keyword_num);
	required = rbi_get_u32(kw, l->keyword_required_num);
	values = rbi_get_u64(kw, l->keyword_default_values);
	if (!values || (int32_t)num <= (int32_t)required)
		return RBI_OK;
	if ((rc = read_entries(w, "keyword defaults", values, num - required, 8, &v)))
		return rc;
	return rbi_heap_add_refs(w->it, w->s, w->out, v, num - required);
}

/* The iseqs of the catch table's entries (rescue, ensure, ...). */
static int catch_table(struct iseq_walk *w)
{
	const struct rbi_layout *l = w->l;
	uint64_t addr = body_word(w, l->body_catch_table), n;
	const uint64_t *entries;
	uint32_t size;
	int rc;

	if (!addr)
		return RBI_OK;
	if ((rc = rbi_read(w->t, addr, &size, sizeof(size))))
		return rbi_fail_context(rc, "reading the catch table of iseq 0x%" PRIx64 ": ",
					w->s->addr);
	n = size;
	if ((rc = read_entries(w, "catch table entries", addr + l->catch_table_entries, n,
			       l->catch_entry_size, &entries)))
		return rc;
	for (uint64_t i = 0; i < n; i++)
		if ((rc = mark(w, entry_word(entries, i, l->catch_entry_size, l->catch_entry_iseq))))
			return rc;
	return RBI_OK;
}

/* Whether a JIT compiler runs in the target: then iseqs may hold JIT code
   (yjit_payload, rjit_blocks) whose objects the GC marks too.  Its flag
   (YJIT's rb_yjit_enabled_p; RJIT's rb_rjit_enabled, or where only
   exported symbols are left rb_rjit_call_p) is set; a Ruby without the
   symbols was built without that JIT.  Looked at once a walk. */
static bool jit_runs(struct iseq_walk *w)
{
	static const char *const flags[] = {
		"rb_yjit_enabled_p", "rb_rjit_enabled", "rb_rjit_call_p",
	};
	struct heap_object_scratch *sc = rbi_heap_iter_scratch(w->it);

	if (!sc->jit) {
		sc->jit = JIT_NONE;
		for (size_t i = 0; i < RBI_ARRAY_SIZE(flags); i++) {
			uint64_t addr, size;
			uint8_t on = 1;
			bool tls;

			if (rbi_image_symbol(w->vm->image, flags[i], &addr, &size, &tls))
				continue;
			/* A flag that cannot be read counts as set. */
			if (tls || rbi_read(w->t, addr, &on, 1) || on)
				sc->jit = JIT_RUNS;
		}
	}
	return sc->jit == JIT_RUNS;
}

/* What the body marks, in rb_iseq_mark_and_move's order. */
static int body_refs(struct iseq_walk *w)
{
	const struct rbi_layout *l = w->l;
	const uint32_t values[] = {
		l->body_coverage, l->body_pc2branchindex, l->body_script_lines, l->body_label,
		l->body_base_label, l->body_pathobj, l->body_local_iseq, l->body_parent_iseq,
		l->body_mandatory_only_iseq,
	};
	int rc;

	if ((rc = inline_caches(w)) || (rc = operands(w)))
		return rc;
	for (size_t i = 0; i < RBI_ARRAY_SIZE(values); i++)
		if ((rc = mark(w, body_word(w, values[i]))))
			return rc;
	if ((rc = call_data(w)) || (rc = keyword_defaults(w)))
		return rc;
	return catch_table(w);
}

/* ---- 2.7 and 3.1: rb_iseq_mark ---------------------------------------- */

/* The bytes of the body rb_iseq_mark reads: as far as its last field
   reaches; 0 when the layout lacks one it needs.  script_lines and
   mandatory_only_iseq (3.1) may be absent: then the body has none. */
static uint32_t decoded_body_end(const struct rbi_vm *vm)
{
	const struct rbi_layout *l = vm->layout;
	const uint32_t words[] = {
		l->body_iseq_encoded, l->body_pathobj, l->body_base_label, l->body_label,
		l->body_parent_iseq, l->body_coverage, l->body_pc2branchindex,
		l->body_keyword, l->body_catch_table,
		vm->k.iseq_marks_ci ? l->body_call_data : 0,
		vm->k.iseq_marks_jit_body ? l->body_jit_unit : 0,
		vm->k.iseq_marks_jit_body ? l->body_yjit_blocks : 0,
	}, optional[] = { l->body_script_lines, l->body_mandatory_only_iseq },
	   uints[] = { l->body_iseq_size, vm->k.iseq_marks_ci ? l->body_ci_size : 0 };

	return fields_end(l, words, RBI_ARRAY_SIZE(words), optional, RBI_ARRAY_SIZE(optional),
			  uints, RBI_ARRAY_SIZE(uints));
}

/* Whether the layout has the rest of what rb_iseq_mark reads. */
static bool decoded_layout_complete(const struct rbi_vm *vm, const struct rbi_heap_slot *s)
{
	const struct rbi_layout *l = vm->layout;
	const uint32_t offs[] = {
		l->keyword_num, l->keyword_required_num, l->keyword_default_values,
		l->catch_table_entries, l->catch_entry_size, l->catch_entry_iseq,
		vm->k.iseq_marks_ci ? l->call_data_size : 8,
		vm->k.iseq_marks_ci ? l->call_data_ci : 0,
		vm->k.iseq_marks_ci ? l->call_data_cc : 0,
		vm->k.iseq_marks_cc ? l->callcache_klass : 0,
		vm->k.iseq_marks_cc ? l->callcache_cme : 0,
	};
	const uint32_t slot[] = { l->iseq_wrapper, l->iseq_body, l->iseq_local_hooks };

	if (!fields_known(offs, RBI_ARRAY_SIZE(offs), slot, RBI_ARRAY_SIZE(slot), s))
		return false;
	return (!vm->k.iseq_marks_ci || (l->call_data_size % 8 == 0 && l->call_data_size >= 8)) &&
	       l->catch_entry_size % 8 == 0 && l->catch_entry_size >= 8 &&
	       l->keyword_default_values <= 64 - 8 && l->keyword_num <= 64 - 4 &&
	       l->keyword_required_num <= 64 - 4 && decoded_body_end(vm) != 0;
}

/* What rb_iseq_mark marks of the body, in its order; *KNOWN false when
   the operands do not decode or JIT code may mark objects too. */
static int decoded_body_refs(struct iseq_walk *w, bool *known)
{
	const struct rbi_layout *l = w->l;
	const uint32_t values[] = {
		l->body_coverage, l->body_pc2branchindex, l->body_script_lines, l->body_label,
		l->body_base_label, l->body_pathobj, l->body_mandatory_only_iseq,
		l->body_parent_iseq,
	};
	int rc;

	*known = false;
	/* 3.1's mjit_mark_cc_entries and rb_yjit_iseq_mark mark through
	   these only. */
	if (w->vm->k.iseq_marks_jit_body &&
	    (body_word(w, l->body_jit_unit) || body_word(w, l->body_yjit_blocks)))
		return RBI_OK;
	if (w->s->flags & ISEQ_MARKABLE_ISEQ) {
		if ((rc = rbi_heap_iseq_operands(w->it, w->s, w->out,
						 body_word(w, l->body_iseq_encoded),
						 rbi_get_u32(w->body, l->body_iseq_size),
						 w->s->flags & ISEQ_TRANSLATED, known)) || !*known)
			return rc;
	}
	for (size_t i = 0; i < RBI_ARRAY_SIZE(values); i++)
		if ((rc = mark(w, body_word(w, values[i]))))
			return rc;
	if ((w->vm->k.iseq_marks_ci && (rc = call_data(w))) || (rc = keyword_defaults(w)) ||
	    (rc = catch_table(w)))
		return rc;
	*known = true;
	return RBI_OK;
}

/* An iseq's references in 2.7 and 3.1. */
static int decoded_refs(struct iseq_walk *w)
{
	uint64_t body;
	bool known = true;
	int rc;

	if (!decoded_layout_complete(w->vm, w->s) ||
	    (w->s->flags & (ISEQ_NOT_LOADED_YET | ISEQ_USE_COMPILE_DATA)) ||
	    rbi_get_u64(w->s->bytes, w->l->iseq_local_hooks))
		return RBI_OK;
	body = rbi_get_u64(w->s->bytes, w->l->iseq_body);
	if (body && (rc = rbi_read(w->t, body, w->body, decoded_body_end(w->vm))))
		return rbi_fail_context(rc, "reading iseq 0x%" PRIx64 " body: ", w->s->addr);
	if ((rc = mark(w, rbi_get_u64(w->s->bytes, w->l->iseq_wrapper))) ||
	    (body && (rc = decoded_body_refs(w, &known))) || !known) {
		w->out->nrefs = 0;
		return rc;
	}
	w->out->refs = rbi_heap_iter_scratch(w->it)->refs;
	w->out->refs_known = true;
	return RBI_OK;
}

int rbi_heap_iseq_refs(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
		       struct rbi_heap_object *out)
{
	struct iseq_walk w = {
		.it = it, .t = rbi_heap_iter_target(it), .vm = rbi_heap_iter_vm(it), .s = s,
		.out = out,
	};
	uint64_t body;
	int rc;

	w.l = w.vm->layout;
	if (w.vm->k.iseq_marks_decoded)
		return decoded_refs(&w);
	if (!w.vm->k.iseq_marks_read || !layout_complete(w.l, s) || jit_runs(&w) ||
	    (s->flags & (ISEQ_NOT_LOADED_YET | ISEQ_USE_COMPILE_DATA)) ||
	    rbi_get_u64(s->bytes, w.l->iseq_local_hooks))
		return RBI_OK;
	body = rbi_get_u64(s->bytes, w.l->iseq_body);
	if (body) {
		if ((rc = rbi_read(w.t, body, w.body, body_end(w.l))))
			return rbi_fail_context(rc, "reading iseq 0x%" PRIx64 " body: ", s->addr);
	}
	if ((rc = mark(&w, rbi_get_u64(s->bytes, w.l->iseq_wrapper))) ||
	    (body && (rc = body_refs(&w))))
		return rc;
	out->refs = rbi_heap_iter_scratch(it)->refs;
	out->refs_known = true;
	return RBI_OK;
}
