/* heap-iseq-insns.c: the VALUE operands of an iseq's instructions as the
 * GC of 2.7 to 3.2 finds them: iseq.c rb_iseq_each_value walks the
 * instructions (iseq_extract_values), each word of a translated iseq
 * (ISEQ_TRANSLATED) turned back into its instruction number by
 * rb_vm_insn_addr2insn (a traced instruction's label gives the plain
 * instruction), and each_insn_value marks, in instruction order:
 *   TS_CDHASH, TS_ISEQ, TS_VALUE operands that are no special constant
 *   TS_IC (3.1): the constant cache's entry, when set
 *   TS_IVC (3.1): the class_value of the instance variable cache's
 *     entry, when set
 *   TS_ISE: a `once` value, when set
 * The instruction lengths and operand types are this exact release's
 * (insn-tables.c, from its insns_info.inc), checked against the target's
 * own where libruby exports them (3.0+); the label addresses are the
 * target's own (insn-addr.c).  A word that is no instruction, or an
 * instruction running past the iseq, leaves the iseq's references
 * unknown, as does a release without tables or a VM whose table is not
 * found. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "vm/dump/heap-object.h"
#include "vm/vm/insn-addr.h"
#include "vm/vm/insn-tables.h"

/* Bound on an iseq's instruction words; real ones are far smaller. */
#define ISEQ_WORDS_MAX (1u << 24)

enum { INSNS_KNOWN = 1, INSNS_UNKNOWN };
#define NO_INSN UINT32_MAX      /* a label of instructions that decode apart */

struct heap_insn_addr {
	uint64_t addr;
	uint32_t insn;          /* the plain instruction */
};

static int by_addr(const void *a, const void *b)
{
	const struct heap_insn_addr *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Whether TAB is the target's own: from 3.0 on libruby exports its
   instruction lengths and operand types "for debuggers"
   (rb_vm_insn_len_info, rb_vm_insn_op_offset, rb_vm_insn_op_base); where
   they are, they must be TAB's.  2.7 has none to compare. */
static bool tables_agree(struct rbi_target *t, const struct rbi_image *img,
			 const struct rbi_insn_table *tab)
{
	uint64_t len_at, len_size, off_at, off_size, base_at, base_size;
	uint8_t *buf;
	bool tls, ok;

	if (rbi_image_symbol(img, "rb_vm_insn_len_info", &len_at, &len_size, &tls))
		return true;
	if (tls || len_size != tab->n ||
	    rbi_image_symbol(img, "rb_vm_insn_op_offset", &off_at, &off_size, &tls) || tls ||
	    off_size != 2ull * tab->n ||
	    rbi_image_symbol(img, "rb_vm_insn_op_base", &base_at, &base_size, &tls) || tls ||
	    !base_size || base_size > 65536 ||
	    !(buf = malloc(len_size + off_size + base_size)))
		return false;
	ok = !rbi_read(t, len_at, buf, len_size) &&
	     !rbi_read(t, off_at, buf + len_size, off_size) &&
	     !rbi_read(t, base_at, buf + len_size + off_size, base_size);
	for (uint32_t i = 0; ok && i < tab->n; i++) {
		const char *base = (const char *)buf + len_size + off_size;
		uint16_t off;
		size_t n = strlen(tab->insns[i].raw);

		memcpy(&off, buf + len_size + 2ull * i, 2);
		ok = buf[i] == tab->insns[i].len && off + n < base_size &&
		     !memcmp(base + off, tab->insns[i].raw, n + 1);
	}
	free(buf);
	return ok;
}

/* This Ruby's instruction table and its VM's label addresses, once a
   walk; false when either is not known. */
static bool insns_known(struct rbi_heap_iter *it)
{
	struct heap_object_scratch *sc = rbi_heap_iter_scratch(it);
	const struct rbi_vm *vm = rbi_heap_iter_vm(it);
	const struct rbi_insn_table *tab = NULL;
	uint64_t *addrs;
	const char *via;

	if (sc->insns_state)
		return sc->insns_state == INSNS_KNOWN;
	sc->insns_state = INSNS_UNKNOWN;
	for (size_t i = 0; i < rbi_insn_tables_n; i++)
		if (rbi_insn_tables[i].major == vm->info.major &&
		    rbi_insn_tables[i].minor == vm->info.minor &&
		    rbi_insn_tables[i].teeny == vm->info.teeny)
			tab = &rbi_insn_tables[i];
	if (!tab || !tables_agree(rbi_heap_iter_target(it), vm->image, tab) ||
	    !(addrs = malloc(8ull * tab->n)))
		return false;
	if (rbi_insn_address_table(rbi_heap_iter_target(it), vm, tab->n, addrs, &via) ||
	    !(sc->insn_addrs = malloc(sizeof(*sc->insn_addrs) * tab->n))) {
		free(addrs);
		return false;
	}
	for (uint32_t i = 0; i < tab->n; i++)
		sc->insn_addrs[i] = (struct heap_insn_addr){
			.addr = addrs[i], .insn = i < tab->n / 2 ? i : i - tab->n / 2,
		};
	free(addrs);
	qsort(sc->insn_addrs, tab->n, sizeof(*sc->insn_addrs), by_addr);
	/* Instructions that share a label (insn-addr.c) decode alike, or the
	   label does not decode: which of them rb_vm_insn_addr2insn gives is
	   its hash table's business. */
	for (uint32_t i = 1; i < tab->n; i++) {
		struct heap_insn_addr *a = &sc->insn_addrs[i - 1], *b = &sc->insn_addrs[i];

		if (a->addr == b->addr && a->insn != NO_INSN && b->insn != NO_INSN &&
		    (tab->insns[a->insn].len != tab->insns[b->insn].len ||
		     strcmp(tab->insns[a->insn].ops, tab->insns[b->insn].ops)))
			a->insn = b->insn = NO_INSN;
		else if (a->addr == b->addr)
			a->insn = b->insn = a->insn == NO_INSN ? NO_INSN : b->insn;
	}
	sc->insn_naddrs = tab->n;
	sc->insns = tab;
	sc->insns_state = INSNS_KNOWN;
	return true;
}

/* The instruction of WORD, or NULL if it is none. */
static const struct rbi_insn *insn_of(const struct heap_object_scratch *sc, uint64_t word,
				      bool translated)
{
	const struct heap_insn_addr key = { .addr = word }, *e;

	if (!translated)
		return word < sc->insns->n ? &sc->insns->insns[word] : NULL;
	e = bsearch(&key, sc->insn_addrs, sc->insn_naddrs, sizeof(key), by_addr);
	return e && e->insn != NO_INSN ? &sc->insns->insns[e->insn] : NULL;
}

static int mark(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
		struct rbi_heap_object *out, uint64_t v)
{
	return rbi_heap_add_refs(it, s, out, &v, 1);
}

/* What operand OP of type TYPE marks. */
static int operand(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
		   struct rbi_heap_object *out, char type, uint64_t op)
{
	const struct rbi_vm *vm = rbi_heap_iter_vm(it);
	const struct rbi_layout *l = vm->layout;
	struct rbi_target *t = rbi_heap_iter_target(it);
	uint64_t v = 0, entry;
	int rc = RBI_OK;

	switch (type) {
	case 'H': case 'S': case 'V':
		return mark(it, s, out, op);
	case 'T':
		rc = rbi_read_u64(t, op + l->is_entry_once_value, &v);
		break;
	case 'K':
		if (vm->k.iseq_marks_ic_ivc)
			rc = rbi_read_u64(t, op + l->ic_entry, &v);
		break;
	case 'A':
		if (vm->k.iseq_marks_ic_ivc &&
		    !(rc = rbi_read_u64(t, op + l->ivc_entry, &entry)) && entry)
			rc = rbi_read_u64(t, entry + l->iv_entry_class_value, &v);
		break;
	default:
		return RBI_OK;
	}
	if (rc)
		return rbi_fail_context(rc, "reading an inline cache of iseq 0x%" PRIx64 ": ",
					s->addr);
	return mark(it, s, out, v);
}

int rbi_heap_iseq_operands(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
			   struct rbi_heap_object *out, uint64_t code, uint32_t size,
			   bool translated, bool *known)
{
	const struct rbi_layout *l = rbi_heap_iter_vm(it)->layout;
	struct heap_object_scratch *sc = rbi_heap_iter_scratch(it);
	const uint64_t *words;
	uint64_t *copy;
	int rc = RBI_OK;

	*known = false;
	if (l->is_entry_once_value == RBI_ABSENT ||
	    (rbi_heap_iter_vm(it)->k.iseq_marks_ic_ivc &&
	     (l->ic_entry == RBI_ABSENT || l->ivc_entry == RBI_ABSENT ||
	      l->iv_entry_class_value == RBI_ABSENT)) ||
	    !insns_known(it))
		return RBI_OK;
	if (size > ISEQ_WORDS_MAX)
		return rbi_fail(RBI_CORRUPT, "iseq 0x%" PRIx64 " claims %u instruction words",
				s->addr, size);
	if (!size) {
		*known = true;
		return RBI_OK;
	}
	if ((rc = rbi_heap_read_words(it, s, "instructions", code, size, &words)))
		return rc;
	/* A copy: marking reads into the scratch buffers. */
	if (!(copy = malloc(8ull * size)))
		return rbi_fail(RBI_NOMEM, "out of memory");
	memcpy(copy, words, 8ull * size);
	for (uint32_t pos = 0; pos < size && rc == RBI_OK;) {
		const struct rbi_insn *in = insn_of(sc, copy[pos], translated);

		if (!in || !in->len || in->len > size - pos)
			goto unknown;
		for (uint32_t op = 0; in->ops[op] && rc == RBI_OK; op++)
			rc = operand(it, s, out, in->ops[op], copy[pos + 1 + op]);
		pos += in->len;
	}
	free(copy);
	*known = rc == RBI_OK;
	return rc;
unknown:
	free(copy);
	return RBI_OK;
}
