/* ruby.c: which Ruby a target runs, and where its VM is.
 *
 * The VM is found from ruby_current_vm_ptr when a symbol names it (2.x-3.2
 * export it; DWARF builds keep it in .symtab).  Debian's stripped 3.3+ hide
 * it, so then small exported functions that load it are disassembled
 * (reference: ruby-internals.md §1.3).  Every candidate, however found, must
 * pass the same structural validation: its main thread points back at it
 * and its thread lists close. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm/vm/find.h"

RBI_EXPORT const char *rbi_addr_source_name(rbi_addr_source s)
{
	switch (s) {
	case RBI_ADDR_SYMBOL: return "symbol";
	case RBI_ADDR_DWARF: return "dwarf";
	case RBI_ADDR_CODE: return "code";
	case RBI_ADDR_SCAN: return "scan";
	default: return "none";
	}
}

void rbi_vm_free(struct rbi_vm *vm)
{
	free(vm);
}

static int read_symbol_string(struct rbi_target *t, const struct rbi_image *img,
			      const char *name, char *out, size_t cap)
{
	uint64_t addr, size;
	bool tls;
	int rc = rbi_image_symbol(img, name, &addr, &size, &tls);

	if (rc == RBI_ITER_END)
		return rbi_fail(RBI_NOT_RUBY, "%s has no symbol %s", img->name, name);
	if (rc)
		return rc;
	return rbi_read_cstr(t, addr, out, cap);
}

static int read_version(struct rbi_target *t, struct rbi_vm *vm)
{
	struct rbi_ruby_info *info = &vm->info;
	int rc = read_symbol_string(t, vm->image, "ruby_version", info->version,
				    sizeof(info->version));

	if (rc)
		return rbi_fail_context(rc, "reading the Ruby version: ");
	if (sscanf(info->version, "%d.%d.%d", &info->major, &info->minor,
		   &info->teeny) != 3 || info->major < 1 || info->major > 99)
		return rbi_fail(RBI_CORRUPT, "ruby_version in %s reads \"%.31s\", not "
				"a version", vm->image->name, info->version);
	snprintf(vm->version_via, sizeof(vm->version_via), "ruby_version");
	const char *given = rbi_target_ruby_version(t);

	if (given && strcmp(given, info->version))
		rbi_diag_add(rbi_target_diag(t), "the target says it is Ruby %s: "
			     "--ruby-version %s is not used", info->version, given);
	/* The description is informative only; a core may lack its page. */
	if (read_symbol_string(t, vm->image, "ruby_description", info->description,
			       sizeof(info->description)))
		info->description[0] = '\0';
	return RBI_OK;
}

static bool family(const struct rbi_vm *vm, int major, int minor)
{
	return vm->info.major == major && vm->info.minor == minor;
}

/* The version-dependent values that are not offsets (vm.h).  Sources:
   special_consts.h (Qnil), fl_type.h (FL_SINGLETON), id.h via bindgen and
   otel (tLAST_OP_ID: 164 in 2.6, 168 in 2.7-3.0, 169 in 3.1-3.3, 170 in
   3.4, 171 in 4.0), rarray.h (embedded length bits), vm_core.h
   (first_lineno), vm_backtrace.c (labels), gc.c and gc/default/default.c
   (HEAP_PAGE_ALIGN_LOG 14, 16 from 3.3; the darray page list from 3.4),
   gc.c's gc_mark_children and internal/class.h (how classes are marked,
   the RICLASS_* flags), gc.c gc_mark_imemo and imemo.c (call caches). */
static void set_constants(struct rbi_vm *vm)
{
	struct rbi_vm_consts *k = &vm->k;

	k->qnil = rbi_vm_ge(vm, 3, 2) ? 0x04 : 0x08;
	k->qundef = rbi_vm_ge(vm, 3, 2) ? 0x24 : 0x34;
	k->fl_singleton = 1ull << (rbi_vm_ge(vm, 3, 4) ? 13 : 12);
	k->elts_shared = 1ull << (rbi_vm_ge(vm, 3, 4) ? 12 : 14);
	k->ary_shared_root = 1ull << (RBI_FL_USHIFT + (rbi_vm_ge(vm, 3, 2) ? 12 : 5));
	k->tlast_op_id = rbi_vm_ge(vm, 4, 0) ? 171 : rbi_vm_ge(vm, 3, 4) ? 170 :
			 rbi_vm_ge(vm, 3, 1) ? 169 : rbi_vm_ge(vm, 2, 7) ? 168 : 164;
	k->rarray_embed_len_mask = rbi_vm_ge(vm, 3, 2) ? 0x7f : 0x3;
	k->first_lineno_fixnum = !rbi_vm_ge(vm, 3, 2);
	k->label_skips_rescue_caller = rbi_vm_ge(vm, 3, 4);
	k->label_qualified = rbi_vm_ge(vm, 3, 4);
	k->classpath_in_classext = rbi_vm_ge(vm, 3, 3);
	k->heap_page_align = rbi_vm_ge(vm, 3, 3) ? 1u << 16 : 1u << 14;
	k->heap_sorted_darray = rbi_vm_ge(vm, 3, 4);
	k->class_marks_read = family(vm, 2, 7) || family(vm, 3, 1) || family(vm, 3, 3) ||
			      family(vm, 3, 4);
	k->class_marks_cc_tbl = rbi_vm_ge(vm, 3, 1);
	k->class_marks_ext_values = rbi_vm_ge(vm, 3, 3);
	k->iseq_marks_read = family(vm, 3, 3) || family(vm, 3, 4);
	k->iseq_marks_cc = family(vm, 3, 1) || family(vm, 3, 3);
	k->cc_marks = family(vm, 3, 1) ? RBI_CC_MARKS_CME :
		      family(vm, 3, 3) ? RBI_CC_MARKS_SUPER_CME :
		      family(vm, 3, 4) ? RBI_CC_MARKS_SUPER_CME_KLASS : RBI_CC_MARKS_UNKNOWN;
	k->iseq_marks_decoded = family(vm, 2, 7) || family(vm, 3, 1);
	k->iseq_marks_ic_ivc = family(vm, 3, 1);
	k->iseq_marks_ci = rbi_vm_ge(vm, 3, 0);
	k->iseq_ci_markable = family(vm, 3, 1);
	k->iseq_marks_jit_body = family(vm, 3, 1);
	k->callcache_unmarkable = rbi_vm_ge(vm, 3, 3) ? 1ull << 11 : 1ull << (RBI_FL_USHIFT + 4);
	k->riclass_is_origin = 1ull << (RBI_FL_USHIFT + (rbi_vm_ge(vm, 3, 3) ? 0 : 5));
	k->riclass_shared_mtbl = !rbi_vm_ge(vm, 3, 1) ? 0 :
				 1ull << (RBI_FL_USHIFT + (rbi_vm_ge(vm, 3, 3) ? 3 : 8));
	vm->pthread_tid_off = -2;
}

static int choose_layout(struct rbi_target *t, struct rbi_vm *vm)
{
	const struct rbi_ruby_info *info = &vm->info;
	const struct rbi_layout *table =
		rbi_layout_table(info->major, info->minor, info->teeny);
	const char *file = vm->image->file ? vm->image->file : vm->image->name;
	Dwarf_Addr bias;
	Dwarf *dw;

	/* DWARF describes this very build, so it wins over any table; what
	   it gave before for this build-id is reused: read for another
	   process of this session (a fork's parent), or on disk
	   (layout/cache.c). */
	const struct rbi_layout_seed *seed = rbi_target_seed(t);

	if (seed && vm->image->build_id.len &&
	    rbi_build_id_equal(&seed->build_id, &vm->image->build_id)) {
		vm->dwarf_layout = seed->layout;
		vm->layout = &vm->dwarf_layout;
		snprintf(vm->layout_desc, sizeof(vm->layout_desc),
			 "dwarf of %s (as read for process %d)", file, (int)seed->pid);
		return RBI_OK;
	}
	if (rbi_layout_cache_load(rbi_target_layout_cache(t), &vm->image->build_id,
				  &vm->dwarf_layout)) {
		vm->layout = &vm->dwarf_layout;
		snprintf(vm->layout_desc, sizeof(vm->layout_desc),
			 "dwarf of %s (cached)", file);
		return RBI_OK;
	}
	dw = rbi_image_dwarf(vm->image, &bias);
	if (dw && rbi_layout_from_dwarf(dw, &vm->dwarf_layout) == RBI_OK &&
	    rbi_layout_validate(&vm->dwarf_layout) == RBI_OK) {
		vm->layout = &vm->dwarf_layout;
		snprintf(vm->layout_desc, sizeof(vm->layout_desc), "dwarf of %s", file);
		rbi_layout_cache_store(rbi_target_layout_cache(t), &vm->image->build_id,
				       &vm->dwarf_layout);
		return RBI_OK;
	}
	if (!table) {
		char id[2 * RBI_BUILD_ID_MAX + 1];

		rbi_build_id_hex(&vm->image->build_id, id);
		return rbi_fail(RBI_NO_LAYOUT, "Ruby %s is not known to this rbinspect "
				"and %s has no DWARF: install its debug info (e.g. "
				"/usr/lib/debug/.build-id/%.2s/%s.debug from the "
				"distribution's -dbgsym or -debuginfo package), or set "
				"DEBUGINFOD_URLS", info->version, vm->image->name,
				id, id[0] ? id + 2 : "BUILDID");
	}
	vm->layout = table;
	snprintf(vm->layout_desc, sizeof(vm->layout_desc), "%s", table->source);
	if (!table->checked)
		rbi_diag_add(rbi_target_diag(t), "Ruby %s: the struct offsets this rbinspect has "
			     "for it come from Ruby's headers and were never checked "
			     "against a real %s build; if frames or objects look wrong, "
			     "give it the build's DWARF (its -dbgsym package, --debug-dir "
			     "or DEBUGINFOD_URLS)", info->version, info->version);
	return RBI_OK;
}

struct count {
	uint64_t vm;
	unsigned threads, ractors;
	const struct rbi_layout *l;
};

static int count_thread(struct rbi_target *t, uint64_t th, void *arg)
{
	struct count *c = arg;
	uint64_t thvm;
	int rc = rbi_read_u64(t, th + c->l->thread_vm, &thvm);

	if (rc)
		return rc;
	if (thvm != c->vm)
		return rbi_fail(RBI_CORRUPT, "thread 0x%" PRIx64 " belongs to VM 0x%"
				PRIx64 ", not 0x%" PRIx64, th, thvm, c->vm);
	c->threads++;
	return RBI_OK;
}

static int count_ractor(struct rbi_target *t, uint64_t r, void *arg)
{
	struct count *c = arg;

	c->ractors++;
	return rbi_list_walk(t, r + c->l->ractor_threads_set, c->l->thread_lt_node,
			     RBI_THREADS_MAX, count_thread, c);
}

/* Count the threads and ractors of the VM at VMADDR into *C: validate_vm's
   walk, and rbi_ruby_info's again on a live target. */
static int count_vm(struct rbi_target *t, const struct rbi_layout *l, uint64_t vmaddr,
		    struct count *c)
{
	*c = (struct count){ .vm = vmaddr, .l = l };
	if (l->vm_ractor_main_thread != RBI_ABSENT)
		return rbi_list_walk(t, vmaddr + l->vm_ractor_set, l->ractor_vmlr_node,
				     RBI_RACTORS_MAX, count_ractor, c);
	c->ractors = 1;
	return rbi_list_walk(t, vmaddr + l->vm_living_threads, l->thread_vmlt_node,
			     RBI_THREADS_MAX, count_thread, c);
}

/* Is VMADDR a live rb_vm_t?  Its main thread must point back at it, and
   its ractor and thread lists must close.  Counts threads on the way. */
static int validate_vm(struct rbi_target *t, struct rbi_vm *vm, uint64_t vmaddr)
{
	const struct rbi_layout *l = vm->layout;
	struct count c;
	uint64_t main_th, th_vm, main_r = 0;
	int rc;

	if (vmaddr == 0 || (vmaddr & 7))
		return rbi_fail(RBI_NO_VM, "VM pointer 0x%" PRIx64 " is not aligned", vmaddr);
	bool ractors = l->vm_ractor_main_thread != RBI_ABSENT;
	rc = rbi_read_u64(t, vmaddr + (ractors ? l->vm_ractor_main_thread
						 : l->vm_main_thread), &main_th);
	if (!rc)
		rc = rbi_read_u64(t, main_th + l->thread_vm, &th_vm);
	if (rc)
		return rc;
	if (th_vm != vmaddr)
		return rbi_fail(RBI_NO_VM, "0x%" PRIx64 " is not the VM: its main "
				"thread does not point back", vmaddr);
	if (ractors) {
		uint64_t th_r, r_main;

		if ((rc = rbi_read_u64(t, vmaddr + l->vm_ractor_main_ractor, &main_r)) ||
		    (rc = rbi_read_u64(t, main_th + l->thread_ractor, &th_r)) ||
		    (rc = rbi_read_u64(t, main_r + l->ractor_main_thread, &r_main)))
			return rc;
		if (th_r != main_r || r_main != main_th)
			return rbi_fail(RBI_NO_VM, "VM 0x%" PRIx64 ": main ractor and "
					"main thread disagree", vmaddr);
	}
	rc = count_vm(t, l, vmaddr, &c);
	if (rc)
		return rc;
	if (c.threads == 0)
		return rbi_fail(RBI_NO_VM, "VM 0x%" PRIx64 " has no threads", vmaddr);
	vm->info.vm = vmaddr;
	vm->info.thread_count = c.threads;
	vm->info.ractor_count = c.ractors;
	vm->main_thread = main_th;
	vm->main_ractor = main_r;
	return RBI_OK;
}

/* Candidate pointer variable VAR: the VM is *VAR. */
static int try_vm_var(struct rbi_target *t, struct rbi_vm *vm, uint64_t var)
{
	uint64_t vmaddr;
	int rc = rbi_read_u64(t, var, &vmaddr);

	return rc ? rc : validate_vm(t, vm, vmaddr);
}

static int locate_vm_by_symbol(struct rbi_target *t, struct rbi_vm *vm)
{
	uint64_t addr, size;
	bool tls;

	if (rbi_image_symbol(vm->image, "ruby_current_vm_ptr", &addr, &size, &tls) ||
	    tls || try_vm_var(t, vm, addr))
		return RBI_NO_VM;
	vm->info.vm_source = RBI_ADDR_SYMBOL;
	snprintf(vm->vm_via, sizeof(vm->vm_via), "ruby_current_vm_ptr");
	return RBI_OK;
}

/* Exported functions whose first instructions load ruby_current_vm_ptr,
   directly (lea/mov of the variable) or through the GOT. */
static const char *const vm_anchors[] = {
	"ruby_vm_at_exit", "rb_gc_count", "rb_gc_get_objspace", "rb_gc_stat",
	"ruby_vm_destruct",
};
#define ANCHOR_INSNS 24
#define ANCHOR_REFS 16

static int locate_vm_by_code(struct rbi_target *t, struct rbi_vm *vm)
{
	for (size_t i = 0; i < RBI_ARRAY_SIZE(vm_anchors); i++) {
		struct rbi_rip_ref refs[ANCHOR_REFS];
		uint64_t fn, size, got;
		size_t n = 0;
		bool tls;

		if (rbi_image_symbol(vm->image, vm_anchors[i], &fn, &size, &tls) || tls ||
		    rbi_code_rip_refs(t, fn, ANCHOR_INSNS, refs, ANCHOR_REFS, &n))
			continue;
		for (size_t j = 0; j < n; j++) {
			/* lea: the variable itself.  mov: the variable, or a GOT
			   slot holding its address. */
			bool ok = try_vm_var(t, vm, refs[j].target) == RBI_OK;

			if (!ok && refs[j].load && !rbi_read_u64(t, refs[j].target, &got))
				ok = try_vm_var(t, vm, got) == RBI_OK;
			if (!ok)
				continue;
			vm->info.vm_source = RBI_ADDR_CODE;
			snprintf(vm->vm_via, sizeof(vm->vm_via), "%s+0x%" PRIx64,
				 vm_anchors[i], refs[j].insn - fn);
			return RBI_OK;
		}
	}
	return RBI_NO_VM;
}

/* The global symbol table (IDs to names): { uint32 last_id; st_table *;
   VALUE ids; ... } with ids at +16 in every version.  Plausible if last_id
   is and ids is a T_ARRAY. */
static bool symbols_plausible(struct rbi_target *t, const struct rbi_vm *vm, uint64_t addr)
{
	uint32_t last_id;
	uint64_t ids, flags, n, elems;

	if (rbi_read_u32(t, addr, &last_id) || last_id == 0 || last_id > (1u << 28) ||
	    rbi_read_u64(t, addr + 16, &ids) || (ids & 7) || !ids ||
	    rbi_read_u64(t, ids, &flags) || (flags & 0x1f) != 0x07)
		return false;
	/* ids holds a chunk of 512 IDs for every serial up to last_id; a new
	   chunk is stored a moment after last_id reaches it (set_id_entry: its
	   allocation may run a GC), and a table read in between is one short. */
	return rbi_vm_array(t, vm, ids, &n, &elems) == RBI_OK && n >= 1 &&
	       (n == last_id / 512 + 1 || n == last_id / 512);
}

/* The VM pointer variable is *ADDR for some 8-aligned ADDR in libruby's
   data: try every word that points into writable memory. */
static int scan_vm_ptr(struct rbi_target *t, void *arg, uint64_t addr, uint64_t word)
{
	struct rbi_vm *vm = arg;
	const struct rbi_region_list *rl;
	const struct rbi_region *r;

	(void)addr;
	if (word < 0x10000 || (word & 7) || rbi_regions(t, &rl) ||
	    !(r = rbi_region_find(rl, word)) || !(r->prot & RBI_PROT_WRITE))
		return 0;
	return validate_vm(t, vm, word) == RBI_OK;
}

static int locate_vm_by_scan(struct rbi_target *t, struct rbi_vm *vm)
{
	uint64_t at = 0;

	if (rbi_vm_scan_data(t, vm->image, scan_vm_ptr, vm, &at) != 1)
		return RBI_NO_VM;
	vm->info.vm_source = RBI_ADDR_SCAN;
	snprintf(vm->vm_via, sizeof(vm->vm_via), "%s+0x%" PRIx64, "data",
		 at - vm->image->bias);
	return RBI_OK;
}

static int scan_symbols(struct rbi_target *t, void *arg, uint64_t addr, uint64_t word)
{
	(void)word;
	return symbols_plausible(t, arg, addr);
}

static void locate_symbols(struct rbi_target *t, struct rbi_vm *vm)
{
	static const char *const names[] = { "ruby_global_symbols", "global_symbols" };
	struct rbi_rip_ref refs[ANCHOR_REFS];
	uint64_t addr, size;
	size_t n = 0;
	bool tls;

	for (size_t i = 0; i < RBI_ARRAY_SIZE(names); i++) {
		if (rbi_image_symbol(vm->image, names[i], &addr, &size, &tls) || tls ||
		    !symbols_plausible(t, vm, addr))
			continue;
		vm->info.symbols = addr;
		vm->info.symbols_source = RBI_ADDR_SYMBOL;
		snprintf(vm->symbols_via, sizeof(vm->symbols_via), "%s", names[i]);
		return;
	}
	/* rb_sym_immortal_count() is "return ruby_global_symbols.last_id". */
	if (!rbi_image_symbol(vm->image, "rb_sym_immortal_count", &addr, &size, &tls) &&
	    !rbi_code_rip_refs(t, addr, ANCHOR_INSNS, refs, ANCHOR_REFS, &n)) {
		for (size_t j = 0; j < n; j++) {
			if (!refs[j].load || !symbols_plausible(t, vm, refs[j].target))
				continue;
			vm->info.symbols = refs[j].target;
			vm->info.symbols_source = RBI_ADDR_CODE;
			snprintf(vm->symbols_via, sizeof(vm->symbols_via),
				 "rb_sym_immortal_count+0x%" PRIx64, refs[j].insn - addr);
			return;
		}
	}
	/* No symbol and no code (a core without libruby's files): the table
	   is a variable in libruby's data. */
	if (rbi_vm_scan_data(t, vm->image, scan_symbols, vm, &addr) == 1) {
		vm->info.symbols = addr;
		vm->info.symbols_source = RBI_ADDR_SCAN;
		snprintf(vm->symbols_via, sizeof(vm->symbols_via), "data+0x%" PRIx64,
			 addr - vm->image->bias);
	}
}

/* How often and how long a live process's missing symbol table is looked
   for again: a chunk of IDs is stored within milliseconds (a GC at most). */
#define SYMBOLS_RETRY_NS 50000000ull
#define SYMBOLS_GIVE_UP_NS 5000000000ull

void rbi_vm_symbols_again(struct rbi_target *t, struct rbi_vm *vm)
{
	uint64_t now;

	if (vm->info.symbols || vm->symbols_given_up || !rbi_target_is_live(t))
		return;
	now = rbi_now_ns();
	if (!vm->symbols_missing_since)
		vm->symbols_missing_since = now;
	if (now - vm->symbols_tried_ns < SYMBOLS_RETRY_NS)
		return;
	vm->symbols_tried_ns = now;
	locate_symbols(t, vm);
	vm->symbols_given_up = !vm->info.symbols &&
			       now - vm->symbols_missing_since >= SYMBOLS_GIVE_UP_NS;
}

int rbi_vm_locate(struct rbi_target *t, struct rbi_vm *vm)
{
	int rc = choose_layout(t, vm);

	if (rc)
		return rc;
	set_constants(vm);
	if (locate_vm_by_symbol(t, vm)) {
		/* Why the last candidate failed, before the next one overwrites it. */
		char why[RBI_ERRMSG_MAX];

		snprintf(why, sizeof(why), "%s", rbi_errmsg());
		if (locate_vm_by_code(t, vm) && locate_vm_by_scan(t, vm))
			return rbi_fail(RBI_NO_VM, "Ruby %s found in %s, but no valid VM%s%s%s; %s",
					vm->info.version, vm->image->name, why[0] ? " (" : "",
					why, why[0] ? ")" : "", rbi_target_is_live(t) ?
					"the process may still be starting or be shutting down" :
					"the core may be of a process whose VM was not set up yet, "
					"or lack that memory");
	}
	locate_symbols(t, vm);
	return RBI_OK;
}

static int vm_find(struct rbi_target *t, struct rbi_vm *vm)
{
	struct rbi_image_list *images;
	int rc = rbi_images_load(t, &images);

	if (rc)
		return rc;
	vm->image = rbi_images_find_symbol(images, "ruby_version");
	rc = vm->image ? read_version(t, vm) : RBI_NOT_RUBY;
	/* A core whose libruby is not here has neither its symbols nor its
	   read-only data (the version string). */
	rc = rc ? rbi_vm_find_offline(t, vm, images) : rbi_vm_locate(t, vm);
	if (rc)
		return rc;

	struct rbi_ruby_info *info = &vm->info;
	info->image = vm->image->file ? vm->image->file : vm->image->name;
	rbi_build_id_hex(&vm->image->build_id, info->build_id);
	info->vm_via = vm->vm_via;
	info->version_via = vm->version_via;
	info->symbols_via = vm->symbols_via;
	info->layout = vm->layout_desc;
	return RBI_OK;
}

int rbi_vm_get(struct rbi_target *t, struct rbi_vm **out)
{
	struct rbi_vm *vm;
	int rc;

	if (rbi_target_vm(t)) {
		*out = rbi_target_vm(t);
		return RBI_OK;
	}
	vm = calloc(1, sizeof(*vm));
	if (!vm)
		return rbi_fail(RBI_NOMEM, "out of memory");
	rc = vm_find(t, vm);
	if (rc) {
		free(vm);
		/* Not Ruby, or no VM, may only be what a dead process reads as. */
		return rbi_target_gone_seen(t) ? rbi_fail_gone(t) : rc;
	}
	rbi_target_set_vm(t, vm);
	*out = vm;
	return RBI_OK;
}

RBI_EXPORT int rbi_ruby_info(rbi_target *t, const struct rbi_ruby_info **out)
{
	struct rbi_vm *vm = NULL;
	int rc;

	if (!t || !out)
		return rbi_fail(RBI_INVAL, "no target");
	rc = rbi_vm_get(t, &vm);
	if (rc)
		return rc;
	/* Threads and ractors come and go in a live process: count them at
	   every call, not once at attach.  A list changing too fast to walk
	   (after list.c's retries) leaves the last count, not an error. */
	if (rbi_target_is_live(t) && vm->layout) {
		struct count c;

		if (count_vm(t, vm->layout, vm->info.vm, &c) == RBI_OK && c.threads) {
			vm->info.thread_count = c.threads;
			vm->info.ractor_count = c.ractors;
		}
	}
	*out = &vm->info;
	return RBI_OK;
}
