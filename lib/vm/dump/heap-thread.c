/* heap-thread.c: the references dump_all lists for a Thread (T_DATA of
 * type "VM/thread"), a Fiber ("fiber") and a Ractor ("ractor"): what their
 * mark functions mark, in their order (gc_mark_children calls the type's
 * dmark).
 *
 * thread_mark (vm.c, 2.7-3.4):
 *   rb_fiber_mark_self(th->ec->fiber_ptr)   the fiber's object, or its
 *                                           execution context if it has none
 *   th->invoke_arg.proc.proc, .args         a Thread.new (3.x: or a Ractor's)
 *   th->invoke_arg.func.arg (gc_mark_maybe) a thread of a C function
 *   rb_ractor_self(th->ractor)              3.0+
 *   thgroup, value, pending_interrupt_queue, pending_interrupt_mask_stack,
 *   top_self, top_wrapper
 *   rb_fiber_mark_self(th->root_fiber)      if it has one
 *   rb_execution_context_mark(th->ec)       up to 3.1 (3.3+: not)
 *   stat_insn_usage, last_status, locking_mutex, name, scheduler (3.0+)
 *   rb_threadptr_interrupt_exec_task_mark   3.4: a task list, read only
 *                                           when empty (else unknown)
 * fiber_mark (cont.c): first_proc, rb_fiber_mark_self(fiber->prev), then
 * cont_mark: cont.self, cont.value, rb_execution_context_mark(&saved_ec),
 * the thread's object (cont_thread_value), a saved copy of the VM stack
 * (a continuation's: not read, unknown), then up to 3.3, unless the
 * fiber ended, the words of cont.machine.stack (the fiber's own machine
 * stack as it last left it, stack_size words) each marked if it points at
 * a used slot (3.4 leaves it to rb_execution_context_mark).
 * rb_execution_context_mark (vm.c): the VM stack (heap-stack.c); the
 * machine stack from machine.stack_end to machine.stack_start, then
 * machine.regs, each word marked if it points at a used slot
 * (gc_mark_maybe), unless the context is the one calling dump_all
 * (GET_EC(): here the one holding the GVL, if any); errinfo, root_svar,
 * local_storage's values (2.7: an st_table; 3.x: an rb_id_table),
 * local_storage_recursive_hash, ..._for_trace, private_const_reference,
 * storage (3.2+).
 * ractor_mark (ractor.c, 3.1-3.4): its queues' baskets (read only when
 * empty: else unknown), 3.1's taken and yielded baskets' v and sender,
 * receiving_mutex, loc, name, r_stdin, r_stdout, r_stderr, its hooks
 * (read only when none), each of its threads' object, then its local
 * storage (ractor_local_storage_mark): each entry's value where its key's
 * type marks with rb_ractor_local_storage_value_mark (a type marking
 * otherwise: unknown), the values of idkey_local_storage, 3.4's
 * local_storage_store_lock.
 * A Fiber's members after its rb_context_t (first_proc, prev, status)
 * sit after an rb_jmpbuf_t whose size is the build's choice of setjmp (40
 * bytes in the DWARF builds, 200 in Debian's 3.3.8 and 3.4.11: 3.3.8's
 * first_proc is at 512 in one, 672 in the other), which a built-in table
 * cannot know: they are read moved by the shift fiber.c finds on the
 * threads' running fibers (rbi_vm_fiber_shift), once a walk.
 * The families whose marking was read are 2.7, 3.1, 3.3 and 3.4; others
 * leave these objects' references unknown.
 * A stack moves while its thread runs: of a live process not paused,
 * whatever marks an execution context stays "references unknown". */
#include <inttypes.h>
#include <stdlib.h>

#include "internal.h"
#include "vm/dump/heap-object.h"
#include "vm/heap/heap-pages.h"
#include "vm/heap/heap-stack.h"

/* Entries of an execution context's local storage read at most. */
#define STORAGE_MAX (1u << 16)

struct marks {
	struct rbi_heap_iter *it;
	const struct rbi_heap_slot *s;
	struct rbi_heap_object *out;
	struct heap_object_scratch *sc;
	struct heap_maybe *maybe;       /* gc_mark_maybe's test */
};

static int mark(uint64_t v, void *arg)
{
	struct marks *m = arg;

	return rbi_heap_add_refs(m->it, m->s, m->out, &v, 1);
}

/* gc_mark_maybe */
static int mark_maybe(uint64_t v, void *arg)
{
	struct marks *m = arg;

	return rbi_heap_maybe_slot(m->maybe, v) ? mark(v, arg) : RBI_OK;
}

static int mark_at(struct marks *m, uint64_t addr)
{
	uint64_t v;
	int rc;

	if ((rc = rbi_read_u64(rbi_heap_iter_target(m->it), addr, &v)))
		return rc;
	return mark(v, m);
}

static int storage_item(uint32_t serial, uint64_t value, void *arg)
{
	(void)serial;
	return mark(value, arg);
}

/* rb_mark_tbl of 2.7's local storage: each record. */
static int mark_st_values(struct marks *m, uint64_t tbl)
{
	struct rbi_target *t = rbi_heap_iter_target(m->it);
	const struct rbi_layout *l = rbi_heap_iter_vm(m->it)->layout;
	struct rbi_st_entries e = { 0 };
	uint8_t hdr[128];
	uint64_t key, value;
	int rc;

	if (!rbi_vm_st_layout(l) || RBI_ST_HEADER_SIZE(l) > sizeof(hdr))
		return rbi_fail(RBI_NO_LAYOUT, "this Ruby's layout has no st_table");
	if (!(rc = rbi_read(t, tbl, hdr, RBI_ST_HEADER_SIZE(l))) &&
	    !(rc = rbi_vm_st_entries(t, l, hdr, STORAGE_MAX, &e)))
		for (uint64_t i = 0; !rc && i < e.count; i++)
			if (rbi_vm_st_entry(l, &e, i, &key, &value))
				rc = mark(value, m);
	free(e.words);
	return rc;
}

static int gvl_holder(const struct rbi_thread *th, void *arg)
{
	if (!th->error && th->gvl)
		*(uint64_t *)arg = th->ec;
	return 0;
}

/* The context whose machine stack dump_all would not mark: GET_EC(), the
   one of the thread holding the GVL (none while every thread waits). */
static uint64_t current_ec(struct marks *m)
{
	struct heap_object_scratch *sc = m->sc;

	if (!sc->current_ec_known) {
		sc->current_ec = 0;
		sc->current_ec_known = true;
		rbi_thread_foreach(rbi_heap_iter_target(m->it), gvl_holder, &sc->current_ec);
	}
	return sc->current_ec;
}

/* rb_execution_context_mark of the context at EC. */
static int ec_mark(struct marks *m, uint64_t ec)
{
	struct rbi_target *t = rbi_heap_iter_target(m->it);
	const struct rbi_vm *vm = rbi_heap_iter_vm(m->it);
	const struct rbi_layout *l = vm->layout;
	const uint32_t after[] = { l->ec_local_storage_recursive_hash,
				   l->ec_local_storage_recursive_hash_for_trace,
				   l->ec_private_const_reference, l->ec_storage };
	uint64_t start, end, storage;
	int rc;

	if (l->ec_machine_stack_start == RBI_ABSENT || l->ec_machine_stack_end == RBI_ABSENT ||
	    l->ec_machine_regs == RBI_ABSENT || l->ec_size == RBI_ABSENT ||
	    l->ec_machine_regs >= l->ec_size || l->ec_errinfo == RBI_ABSENT ||
	    l->ec_root_svar == RBI_ABSENT || l->ec_local_storage == RBI_ABSENT ||
	    l->ec_local_storage_recursive_hash == RBI_ABSENT ||
	    l->ec_local_storage_recursive_hash_for_trace == RBI_ABSENT ||
	    l->ec_private_const_reference == RBI_ABSENT ||
	    (rbi_vm_ge(vm, 3, 2) && l->ec_storage == RBI_ABSENT))
		return RBI_UNSUPPORTED;
	if (!rbi_target_regs_ready(t))
		return RBI_UNSUPPORTED;         /* its stacks move */
	if ((rc = rbi_heap_ec_vm_stack(t, vm, ec, mark, m)))
		return rc;
	if ((rc = rbi_read_u64(t, ec + l->ec_machine_stack_start, &start)) ||
	    (rc = rbi_read_u64(t, ec + l->ec_machine_stack_end, &end)))
		return rc;
	if (start && end && ec != current_ec(m)) {
		if (end > start || start - end > (64ull << 20))
			return rbi_fail(RBI_CORRUPT, "a machine stack from 0x%" PRIx64 " to "
					"0x%" PRIx64, end, start);
		if ((rc = rbi_heap_stack_words(t, end & ~7ull, start & ~7ull, mark_maybe, m)) ||
		    (rc = rbi_heap_stack_words(t, ec + l->ec_machine_regs,
					       ec + l->ec_machine_regs +
					       (l->ec_size - l->ec_machine_regs) / 8 * 8,
					       mark_maybe, m)))
			return rc;
	}
	if ((rc = mark_at(m, ec + l->ec_errinfo)) || (rc = mark_at(m, ec + l->ec_root_svar)) ||
	    (rc = rbi_read_u64(t, ec + l->ec_local_storage, &storage)))
		return rc;
	if (storage && (rc = rbi_vm_ge(vm, 3, 0) ?
			rbi_vm_id_table_foreach(t, vm, storage, storage_item, m) :
			mark_st_values(m, storage)))
		return rc;
	for (size_t i = 0; i < RBI_ARRAY_SIZE(after); i++)
		if (after[i] != RBI_ABSENT && (rc = mark_at(m, ec + after[i])))
			return rc;
	return RBI_OK;
}

/* rb_fiber_mark_self of the rb_fiber_t at FIBER. */
static int fiber_mark_self(struct marks *m, uint64_t fiber)
{
	const struct rbi_layout *l = rbi_heap_iter_vm(m->it)->layout;
	uint64_t self;
	int rc;

	if ((rc = rbi_read_u64(rbi_heap_iter_target(m->it), fiber + l->fiber_self, &self)))
		return rc;
	return self ? mark(self, m) : ec_mark(m, fiber + l->fiber_saved_ec);
}

static int thread_marks(struct marks *m, uint64_t th)
{
	struct rbi_target *t = rbi_heap_iter_target(m->it);
	const struct rbi_vm *vm = rbi_heap_iter_vm(m->it);
	const struct rbi_layout *l = vm->layout;
	const uint32_t fields[] = { l->thread_thgroup, l->thread_value,
				    l->thread_pending_interrupt_queue,
				    l->thread_pending_interrupt_mask_stack, l->thread_top_self,
				    l->thread_top_wrapper };
	const uint32_t last[] = { l->thread_stat_insn_usage, l->thread_last_status,
				  l->thread_locking_mutex, l->thread_name, l->thread_scheduler };
	uint64_t ec, fiber, root, v;
	uint32_t type;
	int rc;

	for (size_t i = 0; i < RBI_ARRAY_SIZE(fields); i++)
		if (fields[i] == RBI_ABSENT)
			return RBI_UNSUPPORTED;
	if (l->thread_ec == RBI_ABSENT || l->ec_fiber_ptr == RBI_ABSENT ||
	    l->fiber_self == RBI_ABSENT || l->fiber_saved_ec == RBI_ABSENT ||
	    l->thread_invoke_type == RBI_ABSENT || l->thread_invoke_proc == RBI_ABSENT ||
	    l->thread_invoke_args == RBI_ABSENT || l->thread_invoke_func_arg == RBI_ABSENT ||
	    l->thread_invoke_type_proc == RBI_ABSENT || l->thread_invoke_type_func == RBI_ABSENT ||
	    l->thread_root_fiber == RBI_ABSENT || l->thread_last_status == RBI_ABSENT ||
	    l->thread_locking_mutex == RBI_ABSENT || l->thread_name == RBI_ABSENT ||
	    (rbi_vm_ge(vm, 3, 0) && (l->thread_ractor == RBI_ABSENT ||
				     l->ractor_self == RBI_ABSENT ||
				     l->thread_scheduler == RBI_ABSENT)))
		return RBI_UNSUPPORTED;
	if ((rc = rbi_read_u64(t, th + l->thread_ec, &ec)) ||
	    (rc = rbi_read_u64(t, ec + l->ec_fiber_ptr, &fiber)) ||
	    (rc = fiber_mark_self(m, fiber)) ||
	    (rc = rbi_read_u32(t, th + l->thread_invoke_type, &type)))
		return rc;
	if (type == l->thread_invoke_type_proc ||
	    (l->thread_invoke_type_ractor_proc != RBI_ABSENT &&
	     type == l->thread_invoke_type_ractor_proc)) {
		if ((rc = mark_at(m, th + l->thread_invoke_proc)) ||
		    (rc = mark_at(m, th + l->thread_invoke_args)))
			return rc;
	} else if (type == l->thread_invoke_type_func) {
		if ((rc = rbi_read_u64(t, th + l->thread_invoke_func_arg, &v)) ||
		    (rc = mark_maybe(v, m)))
			return rc;
	}
	if (rbi_vm_ge(vm, 3, 0) &&
	    ((rc = rbi_read_u64(t, th + l->thread_ractor, &v)) ||
	     (rc = mark_at(m, v + l->ractor_self))))
		return rc;
	for (size_t i = 0; i < RBI_ARRAY_SIZE(fields); i++)
		if ((rc = mark_at(m, th + fields[i])))
			return rc;
	if ((rc = rbi_read_u64(t, th + l->thread_root_fiber, &root)) ||
	    (root && (rc = fiber_mark_self(m, root))))
		return rc;
	if (!rbi_vm_ge(vm, 3, 2) && (rc = ec_mark(m, ec)))
		return rc;
	for (size_t i = 0; i < RBI_ARRAY_SIZE(last); i++)
		if (last[i] != RBI_ABSENT && (rc = mark_at(m, th + last[i])))
			return rc;
	if (l->thread_interrupt_exec_tasks != RBI_ABSENT) {
		/* a ccan list head: empty when its next points at itself */
		uint64_t head = th + l->thread_interrupt_exec_tasks;

		if ((rc = rbi_read_u64(t, head, &v)))
			return rc;
		if (v != head)
			return RBI_UNSUPPORTED;
	} else if (rbi_vm_ge(vm, 3, 4)) {
		return RBI_UNSUPPORTED;
	}
	return RBI_OK;
}

/* The walk's fiber shift (see above); RBI_UNSUPPORTED (unknown) when
   none fits. */
static int fiber_shift(struct marks *m, int32_t *shift)
{
	struct heap_object_scratch *sc = m->sc;

	if (!sc->fiber_shift_tried) {
		sc->fiber_shift_tried = true;
		sc->fiber_shift_rc = rbi_vm_fiber_shift(rbi_heap_iter_target(m->it),
							&sc->fiber_shift);
	}
	if (sc->fiber_shift_rc == RBI_GONE || sc->fiber_shift_rc == RBI_NOMEM ||
	    sc->fiber_shift_rc == RBI_PERM)
		return sc->fiber_shift_rc;
	*shift = sc->fiber_shift;
	return sc->fiber_shift_rc ? RBI_UNSUPPORTED : RBI_OK;
}

static int fiber_marks(struct marks *m, uint64_t fiber)
{
	struct rbi_target *t = rbi_heap_iter_target(m->it);
	const struct rbi_layout *l = rbi_heap_iter_vm(m->it)->layout;
	const struct rbi_vm *vm = rbi_heap_iter_vm(m->it);
	uint64_t prev, self, th, saved, machine, words;
	uint32_t status;
	int32_t shift;
	int rc;

	if (l->fiber_first_proc == RBI_ABSENT || l->fiber_prev == RBI_ABSENT ||
	    l->fiber_self == RBI_ABSENT || l->fiber_value == RBI_ABSENT ||
	    l->fiber_saved_ec == RBI_ABSENT || l->ec_thread_ptr == RBI_ABSENT ||
	    l->thread_self == RBI_ABSENT || l->fiber_saved_vm_stack == RBI_ABSENT ||
	    l->fiber_machine_stack == RBI_ABSENT || l->fiber_status == RBI_ABSENT)
		return RBI_UNSUPPORTED;
	if ((rc = fiber_shift(m, &shift)))
		return rc;
	if ((rc = rbi_read_u64(t, fiber + l->fiber_saved_vm_stack, &saved)) ||
	    (rc = rbi_read_u64(t, fiber + l->fiber_machine_stack, &machine)))
		return rc;
	if (saved)
		return RBI_UNSUPPORTED;         /* a copy, not read */
	if ((rc = mark_at(m, fiber + l->fiber_first_proc + shift)) ||
	    (rc = rbi_read_u64(t, fiber + l->fiber_prev + shift, &prev)) ||
	    (prev && (rc = fiber_mark_self(m, prev))) ||
	    (rc = rbi_read_u64(t, fiber + l->fiber_self, &self)) ||
	    (self && (rc = mark(self, m))) ||
	    (rc = mark_at(m, fiber + l->fiber_value)) ||
	    (rc = ec_mark(m, fiber + l->fiber_saved_ec)) ||
	    (rc = rbi_read_u64(t, fiber + l->fiber_saved_ec + l->ec_thread_ptr, &th)))
		return rc;
	if (th && (rc = mark_at(m, th + l->thread_self)))
		return rc;
	if (!machine || rbi_vm_ge(vm, 3, 4))
		return RBI_OK;
	/* enum fiber_status in 2 bits: FIBER_TERMINATED is 3 (2.7-3.3) */
	if ((rc = rbi_read_u32(t, fiber + l->fiber_status / 8 + shift, &status)))
		return rc;
	if (((status >> (l->fiber_status % 8)) & 3) == 3)
		return RBI_OK;
	/* machine: { stack, stack_src, stack_size } */
	if ((rc = rbi_read_u64(t, fiber + l->fiber_machine_stack + 16, &words)))
		return rc;
	if ((machine & 7) || words > (64ull << 20) / 8)
		return rbi_fail(RBI_CORRUPT, "a fiber's machine stack of %" PRIu64 " words "
				"at 0x%" PRIx64, words, machine);
	return rbi_heap_stack_words(t, machine, machine + words * 8, mark_maybe, m);
}

static int thread_self(struct rbi_target *t, uint64_t th, void *arg)
{
	struct marks *m = arg;

	(void)t;
	return mark_at(m, th + rbi_heap_iter_vm(m->it)->layout->thread_self);
}

/* ractor_local_storage_mark_i of each entry of the st_table at TBL:
   RBI_UNSUPPORTED for a key whose type marks with a function of its own. */
static int ractor_storage(struct marks *m, uint64_t tbl)
{
	struct rbi_target *t = rbi_heap_iter_target(m->it);
	const struct rbi_vm *vm = rbi_heap_iter_vm(m->it);
	const struct rbi_layout *l = vm->layout;
	struct rbi_st_entries e = { 0 };
	uint64_t value_mark = 0, size, key, value, type, fn;
	uint8_t hdr[128];
	bool tls;
	int rc;

	if (!rbi_vm_st_layout(l) || RBI_ST_HEADER_SIZE(l) > sizeof(hdr) ||
	    l->ractor_local_key_type == RBI_ABSENT || l->ractor_local_type_mark == RBI_ABSENT)
		return RBI_UNSUPPORTED;
	if (rbi_image_symbol(vm->image, "rb_ractor_local_storage_value_mark", &value_mark,
			     &size, &tls))
		value_mark = 0;
	if (!(rc = rbi_read(t, tbl, hdr, RBI_ST_HEADER_SIZE(l))) &&
	    !(rc = rbi_vm_st_entries(t, l, hdr, STORAGE_MAX, &e)))
		for (uint64_t i = 0; !rc && i < e.count; i++) {
			if (!rbi_vm_st_entry(l, &e, i, &key, &value))
				continue;
			if ((rc = rbi_read_u64(t, key + l->ractor_local_key_type, &type)) ||
			    (rc = rbi_read_u64(t, type + l->ractor_local_type_mark, &fn)))
				break;
			if (fn && (!value_mark || fn != value_mark))
				rc = RBI_UNSUPPORTED;
			else if (fn)
				rc = mark(value, m);
		}
	free(e.words);
	return rc;
}

static int ractor_marks(struct marks *m, uint64_t r)
{
	struct rbi_target *t = rbi_heap_iter_target(m->it);
	const struct rbi_vm *vm = rbi_heap_iter_vm(m->it);
	const struct rbi_layout *l = vm->layout;
	const bool v31 = l->ractor_incoming_cnt != RBI_ABSENT;
	const uint32_t baskets[] = { l->ractor_taken_v, l->ractor_taken_sender,
				     l->ractor_yielded_v, l->ractor_yielded_sender };
	const uint32_t fields[] = { l->ractor_receiving_mutex, l->ractor_loc, l->ractor_name,
				    l->ractor_r_stdin, l->ractor_r_stdout, l->ractor_r_stderr };
	uint32_t queues[2] = { v31 ? l->ractor_incoming_cnt : l->ractor_recv_cnt,
			       v31 ? RBI_ABSENT : l->ractor_takers_cnt };
	uint64_t hooks, cnt, storage;
	int rc;

	if ((v31 ? baskets[0] == RBI_ABSENT || baskets[1] == RBI_ABSENT ||
		   baskets[2] == RBI_ABSENT || baskets[3] == RBI_ABSENT :
		   queues[0] == RBI_ABSENT || queues[1] == RBI_ABSENT) ||
	    l->ractor_hooks == RBI_ABSENT || l->ractor_threads_set == RBI_ABSENT ||
	    l->ractor_threads_cnt == RBI_ABSENT || l->thread_lt_node == RBI_ABSENT ||
	    l->thread_self == RBI_ABSENT || l->ractor_local_storage == RBI_ABSENT ||
	    l->ractor_idkey_local_storage == RBI_ABSENT ||
	    (rbi_vm_ge(vm, 3, 4) && l->ractor_local_storage_store_lock == RBI_ABSENT))
		return RBI_UNSUPPORTED;
	for (size_t i = 0; i < RBI_ARRAY_SIZE(fields); i++)
		if (fields[i] == RBI_ABSENT)
			return RBI_UNSUPPORTED;
	for (size_t i = 0; i < RBI_ARRAY_SIZE(queues); i++) {
		uint32_t n;

		if (queues[i] == RBI_ABSENT)
			continue;
		if ((rc = rbi_read_u32(t, r + queues[i], &n)))
			return rc;
		if (n)
			return RBI_UNSUPPORTED;         /* baskets not read */
	}
	for (size_t i = 0; v31 && i < RBI_ARRAY_SIZE(baskets); i++)
		if ((rc = mark_at(m, r + baskets[i])))
			return rc;
	for (size_t i = 0; i < RBI_ARRAY_SIZE(fields); i++)
		if ((rc = mark_at(m, r + fields[i])))
			return rc;
	if ((rc = rbi_read_u64(t, r + l->ractor_hooks, &hooks)))
		return rc;
	if (hooks)
		return RBI_UNSUPPORTED;         /* event hooks not read */
	if ((rc = rbi_read_u64(t, r + l->ractor_threads_cnt, &cnt)))
		return rc;
	if (cnt && (rc = rbi_list_walk(t, r + l->ractor_threads_set, l->thread_lt_node,
				       RBI_THREADS_MAX, thread_self, m)))
		return rc;
	if ((rc = rbi_read_u64(t, r + l->ractor_local_storage, &storage)) ||
	    (storage && (rc = ractor_storage(m, storage))) ||
	    (rc = rbi_read_u64(t, r + l->ractor_idkey_local_storage, &storage)) ||
	    (storage && (rc = rbi_vm_id_table_foreach(t, vm, storage, storage_item, m))))
		return rc;
	if (rbi_vm_ge(vm, 3, 4) && (rc = mark_at(m, r + l->ractor_local_storage_store_lock)))
		return rc;
	return RBI_OK;
}

/* Whether VM's family is one whose marking of these was read. */
static bool marking_read(const struct rbi_vm *vm)
{
	static const int families[][2] = { { 2, 7 }, { 3, 1 }, { 3, 3 }, { 3, 4 } };

	for (size_t i = 0; i < RBI_ARRAY_SIZE(families); i++)
		if (rbi_vm_ge(vm, families[i][0], families[i][1]) &&
		    !rbi_vm_ge(vm, families[i][0], families[i][1] + 1))
			return true;
	return false;
}

int rbi_heap_thread_refs(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
			 enum heap_thread_kind kind, uint64_t data, struct rbi_heap_object *out)
{
	struct marks m = { it, s, out, rbi_heap_iter_scratch(it), NULL };
	int rc;

	if (!data || (s->flags & RBI_FL_EXIVAR) || !marking_read(rbi_heap_iter_vm(it)))
		return RBI_OK;
	if (!(m.maybe = rbi_heap_object_maybe(it)))
		return RBI_OK;  /* no conservative test: unknown */
	rc = kind == HEAP_FIBER ? fiber_marks(&m, data) :
	     kind == HEAP_RACTOR ? ractor_marks(&m, data) : thread_marks(&m, data);
	if (rc == RBI_GONE || rc == RBI_NOMEM || rc == RBI_PERM)
		return rc;
	if (rc) {       /* unknown: never a part given as all */
		out->nrefs = 0;
		return RBI_OK;
	}
	out->refs = m.sc->refs;
	out->refs_known = true;
	return RBI_OK;
}
