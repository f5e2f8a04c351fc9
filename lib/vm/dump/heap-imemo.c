/* heap-imemo.c: the references dump_all lists for the IMEMOs whose
 * marking (gc.c gc_mark_imemo, 2.7-3.3; imemo.c rb_imemo_mark_and_move,
 * 3.4) depends on their flags, the Ruby, or tests a word conservatively:
 *   callcache   3.1: cc->cme_ (vm_cc_cme; "should not mark klass here");
 *               3.3: cc->cme_, only for a super or refinement call's cache
 *               (VM_CALLCACHE_SUPER, _REFINEMENT: IMEMO_FL_USER2, _USER3);
 *               3.4: the same cme_, then cc->klass
 *   callinfo    nothing (3.1, 3.3, 3.4)
 *   ifunc       its data, if gc_mark_maybe would mark it (2.7-3.4)
 *   memo        v1, v2, then u3.value if gc_mark_maybe would mark it
 *               (2.7-3.4)
 * each only if it is a heap object and not what dump_all takes for the
 * IMEMO's class (heap-object.c).  The words' offsets come from the
 * layout (struct rb_callcache, vm_ifunc, MEMO); a layout without one
 * leaves the object's references unknown.  So do the call caches of the
 * families whose marking was not read (3.0, 3.2, 3.5+), and an ifunc or
 * memo where the heap's pages cannot be told (the layout lacks struct
 * heap_page). */
#include <stdlib.h>

#include "vm/dump/heap-object.h"
#include "vm/heap/heap-pages.h"

/* vm_callinfo.h 3.3-3.4: VM_CALLCACHE_SUPER, VM_CALLCACHE_REFINEMENT. */
#define CC_SUPER (1ull << (RBI_FL_USHIFT + 6))
#define CC_REFINEMENT (1ull << (RBI_FL_USHIFT + 7))
/* A call cache's marked words into W (*N of them); false when not known. */
static bool callcache_words(const struct rbi_vm *vm, const struct rbi_heap_slot *s,
			    uint64_t w[2], size_t *n)
{
	const struct rbi_layout *l = vm->layout;

	*n = 0;
	if (vm->k.cc_marks == RBI_CC_MARKS_UNKNOWN || l->callcache_cme == RBI_ABSENT ||
	    l->callcache_klass == RBI_ABSENT || l->callcache_cme + 8 > s->size ||
	    l->callcache_klass + 8 > s->size)
		return false;
	if (vm->k.cc_marks != RBI_CC_MARKS_CME && !(s->flags & (CC_SUPER | CC_REFINEMENT)))
		return true;
	w[(*n)++] = rbi_get_u64(s->bytes, l->callcache_cme);
	if (vm->k.cc_marks == RBI_CC_MARKS_SUPER_CME_KLASS)
		w[(*n)++] = rbi_get_u64(s->bytes, l->callcache_klass);
	return true;
}

int rbi_heap_imemo_refs(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
			struct rbi_heap_object *out, bool *mine)
{
	const struct rbi_vm *vm = rbi_heap_iter_vm(it);
	const struct rbi_layout *l = vm->layout;
	unsigned type = (unsigned)RBI_IMEMO_TYPE(s->flags);
	struct heap_maybe *m;
	uint64_t w[3];
	size_t n = 0;
	int rc;

	*mine = true;
	if (l->imemo_type_callcache != RBI_ABSENT && type == l->imemo_type_callcache) {
		if (!callcache_words(vm, s, w, &n))
			return RBI_OK;
	} else if (l->imemo_type_callinfo != RBI_ABSENT && type == l->imemo_type_callinfo) {
		if (vm->k.cc_marks == RBI_CC_MARKS_UNKNOWN)
			return RBI_OK;
	} else if (l->imemo_type_ifunc != RBI_ABSENT && type == l->imemo_type_ifunc) {
		if (l->ifunc_data == RBI_ABSENT || l->ifunc_data + 8 > s->size ||
		    !(m = rbi_heap_object_maybe(it)))
			return RBI_OK;
		if (rbi_heap_maybe_slot(m, (w[0] = rbi_get_u64(s->bytes, l->ifunc_data))))
			n = 1;
	} else if (l->imemo_type_memo != RBI_ABSENT && type == l->imemo_type_memo) {
		if (l->memo_v1 == RBI_ABSENT || l->memo_v2 == RBI_ABSENT ||
		    l->memo_u3 == RBI_ABSENT || l->memo_v1 + 8 > s->size ||
		    l->memo_v2 + 8 > s->size || l->memo_u3 + 8 > s->size || !(m = rbi_heap_object_maybe(it)))
			return RBI_OK;
		w[n++] = rbi_get_u64(s->bytes, l->memo_v1);
		w[n++] = rbi_get_u64(s->bytes, l->memo_v2);
		if (rbi_heap_maybe_slot(m, (w[2] = rbi_get_u64(s->bytes, l->memo_u3))))
			n++;
	} else {
		*mine = false;
		return RBI_OK;
	}
	if ((rc = rbi_heap_add_refs(it, s, out, w, n)))
		return rc;
	out->refs = rbi_heap_iter_scratch(it)->refs;
	out->refs_known = true;
	return RBI_OK;
}
