/* heap-stack.c: what the GC marks of an execution context's stacks.
 *
 * VM stack (vm.c rb_execution_context_mark, 2.7-3.4): rb_gc_mark_vm_stack_values
 * on the words from ec->vm_stack to ec->cfp->sp, then for each control
 * frame from ec->cfp to the stack's end: cfp->self, cfp->iseq,
 * cfp->block_code; if its ep is not local, the previous ep's
 * ep[VM_ENV_DATA_INDEX_ENV] when that one escaped (VM_ENV_FLAG_ESCAPED),
 * and (3.1+) when its own escaped its ep[VM_ENV_DATA_INDEX_ENV] and
 * ep[VM_ENV_DATA_INDEX_ME_CREF].
 *
 * Machine stack (gc.c rb_gc_mark_machine_stack and 3.4's
 * rb_gc_mark_machine_context): its words, each of which the caller tests
 * as gc_mark_maybe does (heap-maybe.c). */
#include <inttypes.h>
#include <stdlib.h>

#include "vm/heap/heap-stack.h"

/* Stack bytes read at a time. */
#define STACK_CHUNK 65536
/* vm_core.h 2.6-3.4: ep[-2], ep[-1], ep[0], ep[1]; the flags' bits. */
#define EP_ME_CREF (-2)
#define EP_SPECVAL (-1)
#define EP_ENV 1
#define ENV_FLAG_LOCAL 0x2u
#define ENV_FLAG_ESCAPED 0x4u

int rbi_heap_stack_words(struct rbi_target *t, uint64_t from, uint64_t to,
			 rbi_heap_word_fn fn, void *arg)
{
	uint64_t buf[STACK_CHUNK / 8];
	int rc;

	for (uint64_t at = from; at < to; ) {
		size_t len = to - at < STACK_CHUNK ? (size_t)(to - at) : STACK_CHUNK;

		if ((rc = rbi_read(t, at, buf, len)))
			return rc;
		for (size_t i = 0; i < len / 8; i++)
			if ((rc = fn(buf[i], arg)))
				return rc;
		at += len;
	}
	return RBI_OK;
}

/* What a frame whose ep is EP marks of the environments (above). */
static int frame_envs(struct rbi_target *t, const struct rbi_vm *vm, uint64_t ep,
		      rbi_heap_word_fn fn, void *arg)
{
	uint64_t w[3], prev[2];         /* ep[-2..0]; prev_ep[0..1] */
	int rc;

	if (ep & 7)
		return rbi_fail(RBI_CORRUPT, "a frame's ep 0x%" PRIx64 " is misaligned", ep);
	if ((rc = rbi_read(t, ep + 8 * EP_ME_CREF, w, sizeof(w))))
		return rc;
	if (w[2] & ENV_FLAG_LOCAL)
		return RBI_OK;
	if ((rc = rbi_read(t, (w[1] & ~(uint64_t)3), prev, sizeof(prev))))
		return rc;
	if ((prev[0] & ENV_FLAG_ESCAPED) && (rc = fn(prev[EP_ENV], arg)))
		return rc;
	if (rbi_vm_ge(vm, 3, 1) && (w[2] & ENV_FLAG_ESCAPED)) {
		uint64_t env;

		if ((rc = rbi_read_u64(t, ep + 8 * EP_ENV, &env)) || (rc = fn(env, arg)) ||
		    (rc = fn(w[0], arg)))
			return rc;
	}
	return RBI_OK;
}

int rbi_heap_ec_vm_stack(struct rbi_target *t, const struct rbi_vm *vm, uint64_t ec,
			 rbi_heap_word_fn fn, void *arg)
{
	const struct rbi_layout *l = vm->layout;
	uint64_t stack, size, cfp, sp, end;
	int rc;

	if (l->ec_vm_stack == RBI_ABSENT || l->ec_vm_stack_size == RBI_ABSENT ||
	    l->ec_cfp == RBI_ABSENT || l->cfp_size == RBI_ABSENT || l->cfp_size < 48 ||
	    l->cfp_sp == RBI_ABSENT || l->cfp_self == RBI_ABSENT || l->cfp_iseq == RBI_ABSENT ||
	    l->cfp_ep == RBI_ABSENT || l->cfp_block_code == RBI_ABSENT)
		return rbi_fail(RBI_NO_LAYOUT, "no execution context layout");
	if ((rc = rbi_read_u64(t, ec + l->ec_vm_stack, &stack)) ||
	    (rc = rbi_read_u64(t, ec + l->ec_vm_stack_size, &size)) ||
	    (rc = rbi_read_u64(t, ec + l->ec_cfp, &cfp)))
		return rc;
	if (!stack)
		return RBI_OK;  /* none (a thread that ended): nothing marked */
	end = stack + size * 8;
	if ((stack & 7) || !size || size > RBI_VM_STACK_MAX || !cfp || cfp < stack || cfp > end ||
	    (end - cfp) % l->cfp_size)
		return rbi_fail(RBI_CORRUPT, "the VM stack at 0x%" PRIx64 " has a frame "
				"0x%" PRIx64 " outside it", stack, cfp);
	if (cfp == end)
		sp = stack;     /* no frame: Ruby would read past the stack */
	else if ((rc = rbi_read_u64(t, cfp + l->cfp_sp, &sp)))
		return rc;
	if (sp < stack || sp > cfp || (sp & 7))
		return rbi_fail(RBI_CORRUPT, "the VM stack at 0x%" PRIx64 " has its sp "
				"0x%" PRIx64 " outside it", stack, sp);
	if ((rc = rbi_heap_stack_words(t, stack, sp, fn, arg)))
		return rc;
	for (uint64_t f = cfp; f + l->cfp_size <= end; f += l->cfp_size) {
		uint8_t b[256];

		if (l->cfp_size > sizeof(b))
			return rbi_fail(RBI_NO_LAYOUT, "a control frame of %u bytes", l->cfp_size);
		if ((rc = rbi_read(t, f, b, l->cfp_size)) ||
		    (rc = fn(rbi_get_u64(b, l->cfp_self), arg)) ||
		    (rc = fn(rbi_get_u64(b, l->cfp_iseq), arg)) ||
		    (rc = fn(rbi_get_u64(b, l->cfp_block_code), arg)) ||
		    (rc = frame_envs(t, vm, rbi_get_u64(b, l->cfp_ep), fn, arg)))
			return rc;
	}
	return RBI_OK;
}
