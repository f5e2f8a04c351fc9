/* cref.c: a frame's lexical scope, the chain of rb_cref_t a constant is
 * looked up through (vm_insnhelper.c vm_env_cref, check_cref,
 * method_entry_cref).  A frame's environments hold, in their
 * method-entry/cref slot, either the scope itself (an imemo_cref: blocks,
 * class bodies, the top level), or the method entry whose definition
 * keeps it (an iseq method's rb_method_iseq_t.cref), or an svar holding
 * one of those.
 * rb_cref_t's words: RBI_CREF_* (vm.h). */
#include <inttypes.h>

#include "vm/eval/eval.h"

/* check_cref: the scope V holds (V itself, its method's, or through an
   svar when CAN_BE_SVAR), else 0. */
static uint64_t check_cref(struct rbi_target *t, struct rbi_vm *vm, uint64_t v,
			   bool can_be_svar)
{
	unsigned type;

	if (!(v = rbi_vm_env_slot(t, vm, v, can_be_svar, &type)))
		return 0;
	if (type == RBI_IMEMO_MENT && rbi_vm_cme_cref(t, vm, v, &v))
		return 0;
	return type == RBI_IMEMO_CREF || type == RBI_IMEMO_MENT ? v : 0;
}

int rbi_vm_frame_cref(struct rbi_target *t, struct rbi_vm *vm, uint64_t cfp, uint64_t iseq,
		      uint64_t *cref)
{
	const struct rbi_layout *l = vm->layout;
	uint64_t now, ep, env[3];       /* ep[-2], ep[-1], ep[0] */
	int rc;

	*cref = 0;
	if (l->cfp_iseq == RBI_ABSENT || l->cfp_ep == RBI_ABSENT)
		return rbi_fail(RBI_LAYOUT, "no control frame layout");
	if ((rc = rbi_read_u64(t, cfp + l->cfp_iseq, &now)) ||
	    (rc = rbi_read_u64(t, cfp + l->cfp_ep, &ep)))
		return rc;
	if (now != iseq)
		return rbi_fail(RBI_CORRUPT, "control frame 0x%" PRIx64 " runs other code now: "
				"the thread moved on", cfp);
	if (!ep || (ep & 7) || (rc = rbi_read(t, ep - 16, env, sizeof(env))))
		return rc ? rc : rbi_fail(RBI_CORRUPT, "control frame 0x%" PRIx64 " has no "
					  "environment", cfp);
	return rbi_vm_env_find(t, vm, ep, env[2], env[0], check_cref, cref);
}

bool rbi_vm_cref_read(struct rbi_target *t, struct rbi_vm *vm, uint64_t cref,
		      struct rbi_cref *out)
{
	uint64_t w[4];          /* flags, refinements, klass_or_self, next */

	if (!cref || rbi_read(t, cref, w, sizeof(w)) || (w[0] & RBI_T_MASK) != RBI_T_IMEMO ||
	    RBI_IMEMO_TYPE(w[0]) != RBI_IMEMO_CREF)
		return false;
	out->pushed_by_eval = (w[0] & RBI_CREF_FL_PUSHED_BY_EVAL) != 0;
	out->klass = w[RBI_CREF_KLASS_OR_SELF / 8];
	out->next = w[RBI_CREF_NEXT / 8];
	/* CREF_CLASS: a `class << obj` scope keeps obj, whose class (its
	   singleton class, if it has one yet) holds the constants. */
	if ((w[0] & RBI_CREF_FL_SINGLETON) &&
	    (!rbi_vm_heap_p(vm, out->klass) || rbi_read_u64(t, out->klass + RBI_RBASIC_KLASS,
							     &out->klass)))
		out->klass = 0;
	return true;
}
