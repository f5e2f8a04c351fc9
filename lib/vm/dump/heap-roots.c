/* heap-roots.c: the GC roots ObjectSpace.dump_all writes as ROOT lines,
 * read from outside: what a retainer path starts at.
 *
 * vm (vm.c, rb_vm_mark): what the VM marks of its own; vm_stack
 * (rb_execution_context_mark): each thread's VM stack, which dump_all
 * reaches through the Thread object.  global_list (gc.c, 2.7-3.3): the
 * addresses C code registered; finalizers (up to 3.3) or objspace (3.4):
 * the finalizer table's Arrays (only when there are any, as dump_all).
 *
 * global_tbl (variable.c, rb_gc_mark_global_tbl): every entry of
 * rb_global_tbl, an rb_id_table of ID to rb_global_entry, has its
 * variable's marker called on its data, then each trace's data marked
 * conservatively.  The three markers Ruby defines are exported, so which
 * one a variable has tells what it marks: rb_gvar_val_marker the data
 * itself (the value of a Ruby global), rb_gvar_var_marker the VALUE it
 * points at, conservatively (a C global: $stdout's rb_stdout),
 * rb_gvar_undef_marker nothing.  rb_global_tbl is static: global.c finds
 * it (rbi_vm_global_table), for `p $name` too.
 *
 * machine_context (gc.c, mark_current_machine_context and
 * rb_gc_mark_machine_stack): the words from a thread's stack pointer to
 * ec->machine.stack_start and its registers, each marked if it points at
 * a used heap slot (gc_mark_maybe: is_pointer_to_heap, not T_NONE,
 * T_ZOMBIE or T_MOVED: heap-maybe.c). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "arch/arch.h"
#include "vm/heap/heap-pages.h"
#include "vm/heap/heap-stack.h"
#include "vm/vm.h"

/* Entries of rb_global_tbl read at most (a few hundred in practice); the
   same bound for 3.4's list of registered addresses. */
#define GLOBALS_MAX (1u << 16)
/* Entries of one of the VM's st_tables read at most. */
#define TABLE_MAX (1u << 20)
/* vm->global_cc_cache_table: VM_GLOBAL_CC_CACHE_TABLE_SIZE (3.1-3.4). */
#define GLOBAL_CCS 1023
/* vm->trap_list.cmd: RUBY_NSIG handlers (65 on Linux). */
#define TRAP_SIGNALS 65
/* Traces of one global followed at most. */
#define TRACES_MAX 1024
/* Bytes of one machine stack scanned at most (a thread's is 8 MiB by
   default, 1 MiB in Ruby's own threads). */
#define STACK_MAX (64ull << 20)
/* General registers scanned: rax..r15 in DWARF's numbering. */
#define GP_REGS 16

struct roots;

/* A walk over the threads' stacks. */
struct stacks {
	struct roots *r;
	unsigned threads, saved, skipped;
	int rc;
};

struct roots {
	struct rbi_target *t;
	const struct rbi_vm *vm;
	const struct rbi_layout *l;
	struct heap_maybe *maybe;       /* gc_mark_maybe's test */
	uint64_t *refs;
	size_t nrefs, cap;
	char note[256];
};

static int add(struct roots *r, uint64_t v)
{
	if (!RBI_GROW(r->refs, r->cap, r->nrefs + 1, 256))
		return rbi_fail(RBI_NOMEM, "out of memory");
	r->refs[r->nrefs++] = v;
	return RBI_OK;
}

static int add_maybe(struct roots *r, uint64_t v)
{
	return rbi_heap_maybe_slot(r->maybe, v) ? add(r, v) : RBI_OK;
}

static int add_maybe_fn(uint64_t v, void *arg)
{
	return add_maybe(arg, v);
}

static int emit(struct roots *r, const char *name, int error, rbi_heap_root_fn fn, void *arg)
{
	struct rbi_heap_root root = {
		.name = name, .refs = error ? NULL : r->refs, .nrefs = error ? 0 : r->nrefs,
		.error = error, .error_msg = error ? rbi_errmsg() : "", .note = r->note,
	};
	int rc = fn(&root, arg);

	r->nrefs = 0;
	r->note[0] = 0;
	return rc;
}

/* ---- global_tbl ---------------------------------------------------------- */

enum marker { MARK_VAL, MARK_VAR, MARK_UNDEF, MARKERS };
static const char *const marker_names[MARKERS] = {
	"rb_gvar_val_marker", "rb_gvar_var_marker", "rb_gvar_undef_marker",
};

struct globals {
	uint64_t markers[MARKERS];
	uint64_t unknown;       /* variables with another marker */
};

/* What global variable VAR's marker marks, then its traces' data. */
static int global_refs(struct roots *r, struct globals *gl, uint64_t var)
{
	const struct rbi_layout *l = r->l;
	uint64_t data, marker, trace;
	int rc;

	if ((rc = rbi_read_u64(r->t, var + l->global_var_data, &data)) ||
	    (rc = rbi_read_u64(r->t, var + l->global_var_marker, &marker)) ||
	    (rc = rbi_read_u64(r->t, var + l->global_var_trace, &trace)))
		return rbi_fail_context(rc, "reading global variable 0x%" PRIx64 ": ", var);
	if (marker == gl->markers[MARK_VAL]) {
		if (rbi_vm_heap_p(r->vm, data) && (rc = add(r, data)))
			return rc;
	} else if (marker == gl->markers[MARK_VAR]) {
		uint64_t v;

		if (data && !rbi_read_u64(r->t, data, &v) && (rc = add_maybe(r, v)))
			return rc;
	} else if (marker != gl->markers[MARK_UNDEF]) {
		gl->unknown++;
	}
	for (unsigned i = 0; trace && i < TRACES_MAX; i++) {
		uint64_t tdata;

		if ((rc = rbi_read_u64(r->t, trace + l->trace_var_data, &tdata)) ||
		    (rc = add_maybe(r, tdata)) ||
		    (rc = rbi_read_u64(r->t, trace + l->trace_var_next, &trace)))
			return rc;
	}
	return RBI_OK;
}

struct globals_walk {
	struct roots *r;
	struct globals *gl;
	uint64_t n;
};

static int global_item(uint32_t serial, uint64_t entry, void *arg)
{
	struct globals_walk *w = arg;
	uint64_t gvar;
	int rc;

	(void)serial;
	if (++w->n > GLOBALS_MAX)
		return rbi_fail(RBI_CORRUPT, "the global table holds over %u entries",
				GLOBALS_MAX);
	if ((rc = rbi_read_u64(w->r->t, entry + w->r->l->global_entry_var, &gvar)))
		return rc;
	return global_refs(w->r, w->gl, gvar);
}

static int read_globals(struct roots *r)
{
	const struct rbi_layout *l = r->l;
	struct globals gl = { 0 };
	struct globals_walk w = { r, &gl, 0 };
	uint64_t tbl, size;
	bool tls;
	int rc;

	if (l->global_entry_var == RBI_ABSENT || l->global_var_data == RBI_ABSENT ||
	    l->global_var_marker == RBI_ABSENT || l->global_var_trace == RBI_ABSENT ||
	    l->trace_var_data == RBI_ABSENT || l->trace_var_next == RBI_ABSENT)
		return rbi_fail(RBI_NO_LAYOUT, "this Ruby's layout has no global variable "
				"table (DWARF of this build gives it)");
	for (int i = 0; i < MARKERS; i++)
		if (rbi_image_symbol(r->vm->image, marker_names[i], &gl.markers[i], &size, &tls))
			return rbi_fail(RBI_UNSUPPORTED, "%s not found", marker_names[i]);
	if ((rc = rbi_vm_global_table(r->t, r->vm, &tbl)) ||
	    (rc = rbi_vm_id_table_foreach(r->t, r->vm, tbl, global_item, &w))) {
		r->nrefs = 0;
		return rc;
	}
	if (gl.unknown)
		snprintf(r->note, sizeof(r->note), "%" PRIu64 " global variables have a "
			 "marker of their own: what it marks is left out", gl.unknown);
	return RBI_OK;
}

/* The used slots the words of [FROM, TO) point at. */
static int scan_stack(struct roots *r, uint64_t from, uint64_t to)
{
	return rbi_heap_stack_words(r->t, from, to, add_maybe_fn, r);
}

/* ---- vm ---------------------------------------------------------------- */

/* The values of the st_table at TBL (rb_mark_tbl: each record). */
static int add_table_values(struct roots *r, uint64_t tbl)
{
	const struct rbi_layout *l = r->l;
	struct rbi_st_entries e = { 0 };
	uint8_t hdr[128];
	uint64_t key, value;
	int rc;

	if (!tbl)
		return RBI_OK;
	if (!rbi_vm_st_layout(l) || RBI_ST_HEADER_SIZE(l) > sizeof(hdr))
		return rbi_fail(RBI_NO_LAYOUT, "this Ruby's layout has no st_table");
	if (!(rc = rbi_read(r->t, tbl, hdr, RBI_ST_HEADER_SIZE(l))) &&
	    !(rc = rbi_vm_st_entries(r->t, l, hdr, TABLE_MAX, &e)))
		for (uint64_t i = 0; !rc && i < e.count; i++)
			if (rbi_vm_st_entry(l, &e, i, &key, &value))
				rc = add_maybe(r, value);
	free(e.words);
	return rc;
}

/* rb_vm_mark's first marks: each ractor's object (3.x), or each living
   thread's (2.x). */
static int ractor_self(struct rbi_target *t, uint64_t ractor, void *arg)
{
	struct roots *r = arg;
	uint64_t self;
	int rc;

	if ((rc = rbi_read_u64(t, ractor + r->l->ractor_self, &self)))
		return rc;
	return add_maybe(r, self);
}

static int thread_self(const struct rbi_thread *th, void *arg)
{
	struct stacks *st = arg;

	return th->error ? 0 : (st->rc = add_maybe(st->r, th->self));
}

static int add_owners(struct roots *r)
{
	const struct rbi_layout *l = r->l;
	struct stacks st = { .r = r };
	int rc;

	if (l->vm_ractor_set == RBI_ABSENT) {
		rc = rbi_thread_foreach(r->t, thread_self, &st);
		return st.rc ? st.rc : rc;
	}
	if (l->ractor_self == RBI_ABSENT || l->ractor_vmlr_node == RBI_ABSENT)
		return rbi_fail(RBI_NO_LAYOUT, "no ractor layout");
	return rbi_list_walk(r->t, r->vm->info.vm + l->vm_ractor_set, l->ractor_vmlr_node,
			     RBI_RACTORS_MAX, ractor_self, r);
}

/* A list of registered addresses from node FIRST on, each node's VARPTR
   and NEXT at the given offsets (rb_gc_register_address: 3.4's
   vm->global_object_list, the objspace's global_list before): each
   address's value, conservatively (gc_mark_maybe). */
static int add_address_list(struct roots *r, uint64_t node, uint32_t varptr, uint32_t next)
{
	uint64_t var, value;
	int rc;

	for (unsigned n = 0; node; n++) {
		if (n == GLOBALS_MAX)
			return rbi_fail(RBI_CORRUPT, "a list of registered addresses is "
					"longer than %u", GLOBALS_MAX);
		if ((rc = rbi_read_u64(r->t, node + varptr, &var)) ||
		    (rc = rbi_read_u64(r->t, var, &value)) || (rc = add_maybe(r, value)) ||
		    (rc = rbi_read_u64(r->t, node + next, &node)))
			return rc;
	}
	return RBI_OK;
}

/* The global call cache table (3.1+): each cache rb_vm_mark keeps, one
   not invalidated (vm_cc_invalidated_p: its class set, its method entry
   valid). */
static int add_global_ccs(struct roots *r)
{
	const struct rbi_layout *l = r->l;
	uint64_t *ccs, klass, cme, flags;
	int rc;

	if (l->callcache_klass == RBI_ABSENT || l->callcache_cme == RBI_ABSENT)
		return rbi_fail(RBI_NO_LAYOUT, "no call cache layout");
	if (!(ccs = malloc(GLOBAL_CCS * 8)))
		return rbi_fail(RBI_NOMEM, "out of memory");
	rc = rbi_read(r->t, r->vm->info.vm + l->vm_global_cc_cache_table, ccs, GLOBAL_CCS * 8);
	for (size_t i = 0; !rc && i < GLOBAL_CCS; i++) {
		if (!ccs[i])
			continue;
		if (!(rc = rbi_read_u64(r->t, ccs[i] + l->callcache_klass, &klass)) &&
		    !(rc = rbi_read_u64(r->t, ccs[i] + l->callcache_cme, &cme)) && klass && cme &&
		    !(rc = rbi_read_u64(r->t, cme, &flags)) &&
		    !(flags & RBI_METHOD_ENTRY_INVALIDATED))
			rc = add_maybe(r, ccs[i]);
	}
	free(ccs);
	return rc;
}

/* What rb_vm_mark marks (vm.c, 2.7-3.4), in its order, where the layout
   names it: the ractors' (2.x: threads') objects, 3.4's registered
   addresses, the VM's own VALUE fields, its tables' values (the root
   modules until 3.3, the features being loaded), the trap handlers, the
   global call caches.  A part of dump_all's "vm" root: it also has each
   mark_object_ary element and the method entries of the negative and
   overloaded tables, which are reached through their owners. */
static int read_vm(struct roots *r)
{
	const struct rbi_layout *l = r->l;
	const uint32_t fields[] = {
		l->vm_mark_object_ary, l->vm_load_path, l->vm_load_path_snapshot,
		l->vm_load_path_check_cache, l->vm_expanded_load_path, l->vm_loaded_features,
		l->vm_loaded_features_snapshot, l->vm_loaded_features_realpaths,
		l->vm_loaded_features_realpath_map, l->vm_top_self, l->vm_orig_progname,
		l->vm_coverages, l->vm_me2counter, l->vm_thgroup_default,
	};
	const uint32_t tables[] = { l->vm_defined_module_hash, l->vm_loading_table };
	uint64_t v, trap[TRAP_SIGNALS];
	int rc;

	if (l->vm_mark_object_ary == RBI_ABSENT || l->vm_load_path == RBI_ABSENT ||
	    l->vm_top_self == RBI_ABSENT)
		return rbi_fail(RBI_NO_LAYOUT, "this Ruby's layout has none of the VM's "
				"mark_object_ary, load_path, top_self");
	if ((rc = add_owners(r)))
		return rc;
	if (l->vm_global_object_list != RBI_ABSENT &&
	    ((rc = rbi_read_u64(r->t, r->vm->info.vm + l->vm_global_object_list, &v)) ||
	     (rc = add_address_list(r, v, l->global_object_list_varptr,
				    l->global_object_list_next))))
		return rc;
	for (size_t i = 0; i < RBI_ARRAY_SIZE(fields); i++)
		if (fields[i] != RBI_ABSENT &&
		    ((rc = rbi_read_u64(r->t, r->vm->info.vm + fields[i], &v)) ||
		     (rc = add_maybe(r, v))))
			return rc;
	for (size_t i = 0; i < RBI_ARRAY_SIZE(tables); i++)
		if (tables[i] != RBI_ABSENT &&
		    ((rc = rbi_read_u64(r->t, r->vm->info.vm + tables[i], &v)) ||
		     (rc = add_table_values(r, v))))
			return rc;
	if (l->vm_trap_cmd != RBI_ABSENT) {
		if ((rc = rbi_read(r->t, r->vm->info.vm + l->vm_trap_cmd, trap, sizeof(trap))))
			return rc;
		for (size_t i = 0; i < TRAP_SIGNALS; i++)
			if ((rc = add_maybe(r, trap[i])))
				return rc;
	}
	return l->vm_global_cc_cache_table == RBI_ABSENT ? RBI_OK : add_global_ccs(r);
}

/* ---- vm_stack ------------------------------------------------------------ */

/* Thread TH's VM stack as rb_execution_context_mark marks it
   (heap-stack.c), its heap objects.  dump_all reaches them through the
   Thread object or its Fiber, so they are a root of their own here. */
static int thread_vm_stack(const struct rbi_thread *th, void *arg)
{
	struct stacks *st = arg;
	int rc;

	if (th->error || !th->ec)
		return 0;
	st->threads++;
	rc = rbi_heap_ec_vm_stack(st->r->t, st->r->vm, th->ec, add_maybe_fn, st->r);
	if (rc == RBI_GONE || rc == RBI_NOMEM || rc == RBI_PERM)
		return st->rc = rc;
	if (rc)
		st->skipped++;  /* a stack that moved or lies: that thread only */
	return 0;
}

static int read_vm_stacks(struct roots *r)
{
	struct stacks st = { .r = r };
	int rc;

	rc = rbi_thread_foreach(r->t, thread_vm_stack, &st);
	if (st.rc || rc)
		return st.rc ? st.rc : rc;
	if (st.skipped)
		snprintf(r->note, sizeof(r->note), "%u of %u threads' VM stacks could not be "
			 "read", st.skipped, st.threads);
	return RBI_OK;
}

/* ---- machine_context ----------------------------------------------------- */

/* The thread's stack pointer and registers where they are known (a core;
   a process we stopped) and on its machine stack, else where it saved its
   stack end: a running process's registers cannot be read, and a thread
   that died in a signal handler (Ruby's [BUG] report) has its stack
   pointer on the alternate signal stack. */
static int thread_stack(const struct rbi_thread *th, void *arg)
{
	struct stacks *st = arg;
	struct roots *r = st->r;
	struct rbi_registers regs = { 0 };
	uint64_t start, sp = 0, reg_sp = 0;
	bool have_regs;

	if (th->error || !th->ec)
		return 0;
	st->threads++;
	if (rbi_read_u64(r->t, th->ec + r->l->ec_machine_stack_start, &start)) {
		st->skipped++;
		return 0;
	}
	have_regs = th->tid && rbi_target_regs_ready(r->t) &&
		    rbi_target_registers(r->t, th->tid, &regs) == RBI_OK &&
		    rbi_arch_stack_pointer(&regs, &reg_sp) && reg_sp < start &&
		    start - reg_sp <= STACK_MAX;
	if (have_regs)
		sp = reg_sp;
	else if (rbi_read_u64(r->t, th->ec + r->l->ec_machine_stack_end, &sp))
		sp = 0;
	else
		st->saved++;
	if (!sp || start <= sp || start - sp > STACK_MAX) {
		st->skipped++;
		return 0;
	}
	for (unsigned i = 0; have_regs && i < GP_REGS && i < regs.count; i++)
		if ((st->rc = add_maybe(r, regs.reg[i])))
			return st->rc;
	if ((st->rc = scan_stack(r, sp & ~(uint64_t)7, start & ~(uint64_t)7)) &&
	    (st->rc == RBI_UNMAPPED || st->rc == RBI_PARTIAL || st->rc == RBI_CORRUPT)) {
		st->rc = RBI_OK;        /* a bound that lies: that thread only */
		st->skipped++;
	}
	return st->rc;
}

static int read_stacks(struct roots *r)
{
	struct stacks st = { .r = r };
	size_t len = 0;
	int rc;

	if (r->l->ec_machine_stack_start == RBI_ABSENT || r->l->ec_machine_stack_end == RBI_ABSENT)
		return rbi_fail(RBI_NO_LAYOUT, "this Ruby's layout has no machine stack bounds "
				"(DWARF of this build gives them)");
	rc = rbi_thread_foreach(r->t, thread_stack, &st);
	if (st.rc || rc)
		return st.rc ? st.rc : rc;
	if (st.saved)
		len = (size_t)snprintf(r->note, sizeof(r->note), "%u of %u threads scanned from "
				       "the stack end they saved when they last left Ruby (no "
				       "registers on their stack: a running process, a signal "
				       "handler)", st.saved, st.threads);
	if (st.skipped && len < sizeof(r->note))
		snprintf(r->note + len, sizeof(r->note) - len, "%s%u of %u threads not scanned "
			 "(their stack bounds unreadable or lying)", len ? "; " : "",
			 st.skipped, st.threads);
	return RBI_OK;
}

/* ---- global_list, finalizers --------------------------------------------- */

/* The objspace's address (vm->objspace; 3.4: vm->gc.objspace). */
static int objspace_addr(struct roots *r, uint64_t *out)
{
	uint32_t off = r->l->vm_gc_objspace != RBI_ABSENT ? r->l->vm_gc_objspace
							  : r->l->vm_objspace;

	if (off == RBI_ABSENT)
		return rbi_fail(RBI_NO_LAYOUT, "this Ruby's layout has no objspace");
	return rbi_read_u64(r->t, r->vm->info.vm + off, out);
}

/* gc.c's global_list (2.7-3.3): the addresses C code registered
   (rb_gc_register_address).  3.4 keeps them in the VM (its vm root):
   no such root there. */
static int read_global_list(struct roots *r)
{
	const struct rbi_layout *l = r->l;
	uint64_t objspace, first;
	int rc;

	if (l->vm_global_object_list != RBI_ABSENT)
		return RBI_ITER_END;
	if (l->objspace_global_list == RBI_ABSENT || l->gc_list_varptr == RBI_ABSENT ||
	    l->gc_list_next == RBI_ABSENT)
		return rbi_fail(RBI_NO_LAYOUT, "this Ruby's layout has no global_list");
	if ((rc = objspace_addr(r, &objspace)) ||
	    (rc = rbi_read_u64(r->t, objspace + l->objspace_global_list, &first)))
		return rc;
	return add_address_list(r, first, l->gc_list_varptr, l->gc_list_next);
}

/* The values of the objspace's st_table at OFF. */
static int add_objspace_table(struct roots *r, uint32_t off)
{
	uint64_t objspace, tbl;
	int rc;

	if (off == RBI_ABSENT)
		return rbi_fail(RBI_NO_LAYOUT, "this Ruby's layout lacks a table of its objspace");
	if ((rc = objspace_addr(r, &objspace)) || (rc = rbi_read_u64(r->t, objspace + off, &tbl)))
		return rc;
	return add_table_values(r, tbl);
}

/* Up to 3.3 (mark_finalizer_tbl): the finalizer table's values, each
   object's finalizers, an Array.  None anywhere: no root, as dump_all
   writes none. */
static int read_finalizers(struct roots *r)
{
	int rc;

	if (r->l->vm_gc_objspace != RBI_ABSENT)
		return RBI_ITER_END;    /* 3.4: in the objspace root */
	if ((rc = add_objspace_table(r, r->l->objspace_finalizer_table)))
		return rc;
	return r->nrefs ? RBI_OK : RBI_ITER_END;
}

/* 3.4 (gc/default.c mark_roots, category "objspace"): the finalizer
   table's values, then the object id table's (Integers: on the heap only
   as Bignums).  3.4's dump_all does not write it (it asks gc.c's
   rb_gc_mark_roots only), but the GC keeps these: a retainer path may
   start here. */
static int read_objspace(struct roots *r)
{
	int rc;

	if (r->l->vm_gc_objspace == RBI_ABSENT)
		return RBI_ITER_END;
	if ((rc = add_objspace_table(r, r->l->objspace_finalizer_table)) ||
	    (rc = add_objspace_table(r, r->l->objspace_obj_to_id_tbl)))
		return rc;
	return r->nrefs ? RBI_OK : RBI_ITER_END;
}

/* dump_all's order (3.x: vm first; its vm root holds what vm_stack has),
   vm_stack, a root of this library's own, beside its vm. */
static const struct {
	const char *name;
	int (*read)(struct roots *r);
} readers[] = {
	{ "vm", read_vm }, { "vm_stack", read_vm_stacks },
	{ "global_tbl", read_globals }, { "machine_context", read_stacks },
	{ "global_list", read_global_list }, { "finalizers", read_finalizers },
	{ "objspace", read_objspace },
};

RBI_EXPORT int rbi_heap_roots_foreach(rbi_target *t, rbi_heap_root_fn fn, void *arg)
{
	struct roots *r;
	struct rbi_vm *vm;
	int rc;

	if (!t || !fn)
		return rbi_fail(RBI_INVAL, "no target");
	if ((rc = rbi_vm_get(t, &vm)))
		return rc;
	if (!(r = calloc(1, sizeof(*r))))
		return rbi_fail(RBI_NOMEM, "out of memory");
	*r = (struct roots){ .t = t, .vm = vm, .l = vm->layout };
	if ((rc = rbi_heap_maybe_open(t, vm, &r->maybe))) {
		free(r);
		return rc;
	}
	for (size_t i = 0; i < sizeof(readers) / sizeof(readers[0]); i++) {
		rc = readers[i].read(r);
		if (rc == RBI_ITER_END) {       /* no such root in this Ruby */
			rc = RBI_OK;
			r->nrefs = 0;
			r->note[0] = 0;
			continue;
		}
		if (rc == RBI_GONE || rc == RBI_NOMEM || rc == RBI_PERM ||
		    (rc = emit(r, readers[i].name, rc, fn, arg)))
			break;
	}
	rbi_heap_maybe_close(r->maybe);
	free(r->refs);
	free(r);
	return rc;
}
