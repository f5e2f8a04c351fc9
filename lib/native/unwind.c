/* unwind.c: a thread's native stack, unwound by libdwfl from the thread's
 * registers and its images' call frame information (.eh_frame, which
 * Debian's stripped libraries keep, or .debug_frame), and named from
 * symbols and DWARF.
 *
 * libdwfl asks us for what it cannot know itself (dwfl_attach_state): the
 * registers a thread starts from (the backend's registers op: a core's
 * NT_PRSTATUS, a stopped live thread's the same regset, a debugger's) and
 * the stack's bytes (the target's reads), so cores, live processes and
 * debugger plugins unwind alike.  A frame is named only by a symbol that
 * covers its address, or by DWARF: an address no symbol covers (a static
 * function of a stripped library) stays MODULE+OFFSET, never the nearest
 * exported name before it. */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include "arch/arch.h"
#include "native/native.h"

/* Native frames of one thread, inlined ones included: deeper is a loop. */
#define NATIVE_FRAMES_MAX 1024u
/* Calls inlined into one another at one address. */
#define INLINE_DEPTH_MAX 64

/* Stack words searched for a return address above a frame that has no
   call frame information (see scan_resume). */
#define SCAN_WORDS 2048u

/* The Dwfl's state (dwfl_attach_state's argument): the target, and the
   registers of the thread being unwound.  After a stack scan only the
   stack pointer and pc the scan found are known (SCANNED), or all of
   SCAN_REGS where the frame resumed is a call's as it was made (FULL). */
struct unwind_state {
	struct rbi_target *t;
	const struct rbi_arch *arch;    /* the machine of REGS */
	struct rbi_registers regs;
	bool scanned, full;
	Dwarf_Word scan_sp, scan_pc;
	Dwarf_Word scan_regs[RBI_REGS_MAX];   /* the arch's dwarf_gregs */
};

/* One walk: where frames go. */
struct unwind_walk {
	struct rbi_target *t;
	const struct rbi_arch *arch;
	struct rbi_image_list *images;
	struct rbi_native_stack *out;
	bool next_scanned;      /* the next frame was found by a stack scan */
	uint64_t trampoline_sp; /* the stack pointer at the last signal
				   trampoline unwound through, 0 if none */
};

/* ---- libdwfl's view of the target ---------------------------------------- */

/* Threads are looked up by id (get_thread), never listed. */
static pid_t cb_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	(void)dwfl; (void)arg; (void)thread_argp;
	return 0;
}

static bool cb_get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	(void)dwfl; (void)tid;
	*thread_argp = arg;
	return true;
}

/* LEN bytes of a stopped thread's stack: a live one moved since anything
   cached was read. */
static bool stack_read(struct rbi_target *t, uint64_t addr, void *buf, size_t len)
{
	return (rbi_target_is_live(t) ? rbi_read_fresh(t, addr, buf, len)
			: rbi_read(t, addr, buf, len)) == RBI_OK;
}

static bool stack_word(struct rbi_target *t, uint64_t addr, uint64_t *v)
{
	return stack_read(t, addr, v, sizeof(*v));
}

static bool cb_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct unwind_state *st = arg;
	uint64_t v;

	(void)dwfl;
	if (!stack_word(st->t, addr, &v))
		return false;
	*result = v;
	return true;
}

static bool cb_set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
	const struct unwind_state *st = thread_arg;

	/* After a scan the other registers are left undefined: a frame whose
	   CFA needs one of them ends the stack instead of unwinding from a stale
	   value.  A call through a bad pointer resumes with all of them
	   (bad_call_regs). */
	if (st->scanned && st->full)
		return dwfl_thread_state_registers(thread, 0, st->arch->dwarf_gregs,
						   st->scan_regs) &&
		       (dwfl_thread_state_register_pc(thread, st->scan_pc), true);
	if (st->scanned)
		return dwfl_thread_state_registers(thread, st->arch->dwarf_sp, 1,
						   &st->scan_sp) &&
		       (dwfl_thread_state_register_pc(thread, st->scan_pc), true);
	return dwfl_thread_state_registers(thread, 0, st->regs.count, st->regs.reg);
}

static void cb_detach(Dwfl *dwfl, void *arg)
{
	(void)dwfl;
	free(arg);
}

static const Dwfl_Thread_Callbacks unwind_callbacks = {
	.next_thread = cb_next_thread,
	.get_thread = cb_get_thread,
	.memory_read = cb_memory_read,
	.set_initial_registers = cb_set_initial_registers,
	.detach = cb_detach,
};

/* The images' Dwfl, ready to unwind (attached once per Dwfl: it lives as
   long as the image list). */
static int unwind_state(struct rbi_target *t, struct rbi_image_list *l,
			struct unwind_state **out)
{
	struct unwind_state *st;
	pid_t pid;

	if (l->unwind) {
		*out = l->unwind;
		return RBI_OK;
	}
	if (!(st = calloc(1, sizeof(*st))))
		return rbi_fail(RBI_NOMEM, "out of memory");
	st->t = t;
	pid = rbi_target_pid(t);
	if (!dwfl_attach_state(l->dwfl, NULL, pid > 0 ? pid : 1, &unwind_callbacks, st)) {
		free(st);
		/* libdwfl takes the machine from the first image whose ELF it
		   gets: none, when no file is here and no image is whole in a
		   core. */
		return rbi_fail(RBI_UNSUPPORTED, "cannot unwind this target's native "
				"stacks: %s (no image's ELF is on this machine or whole "
				"in the target: --sysroot may help)", dwfl_errmsg(-1));
	}
	l->unwind = st;
	*out = st;
	return RBI_OK;
}

/* The address a frame's code is looked up by: a return address is past
   the call, maybe past the end of the calling function. */
static uint64_t raw_lookup(const struct native_raw *r)
{
	return r->exact || r->trampoline ? r->pc : r->pc - 1;
}

/* ---- naming a frame ---------------------------------------------------- */

/* NAME without a symbol version ("pthread_cond_wait@@GLIBC_2.3.2"), kept
   by S; NAME itself when it has none. */
static const char *unversioned(struct rbi_native_stack *s, const char *name)
{
	size_t len = strcspn(name, "@");
	char *copy;

	if (!name[len] || len == 0 ||
	    !RBI_GROW(s->owned, s->capowned, s->nowned + 1, 16) ||
	    !(copy = strndup(name, len)))
		return name;
	s->owned[s->nowned++] = copy;
	return copy;
}

/* The symbol covering ADDR in MOD, or NULL (one that ends before ADDR, or
   has no size, names some other code). */
static const char *covering_symbol(struct rbi_native_stack *s, Dwfl_Module *mod,
				   uint64_t addr, uint64_t *start)
{
	GElf_Off off = 0;
	GElf_Sym sym;
	const char *name = dwfl_module_addrinfo(mod, addr, &off, &sym, NULL, NULL, NULL);

	if (!name || !*name || sym.st_size == 0 || off >= sym.st_size)
		return NULL;
	*start = addr - off;
	return unversioned(s, name);
}

/* Is the code at ADDR of MOD a signal trampoline (its call frame
   information says so: the 'S' augmentation)?  .eh_frame first: reaching
   for .debug_frame loads the module's DWARF, while a live thread waits. */
static bool signal_trampoline(Dwfl_Module *mod, uint64_t addr)
{
	Dwarf_Addr bias = 0;
	Dwarf_CFI *cfi = dwfl_module_eh_cfi(mod, &bias);
	Dwarf_Frame *frame;
	bool signalp = false;

	if (!cfi)
		cfi = dwfl_module_dwarf_cfi(mod, &bias);
	if (!cfi || dwarf_cfi_addrframe(cfi, addr - bias, &frame) != 0)
		return false;
	dwarf_frame_info(frame, NULL, NULL, &signalp);
	free(frame);
	return signalp;
}

/* A DIE's name as a person reads it (an inlined instance's comes from
   its abstract origin). */
static const char *die_function_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));

	return name ? name : dwarf_diename(die);
}

/* The source file with index IDX of the CU of DIE. */
static const char *cu_file(Dwarf_Die *cudie, Dwarf_Word idx)
{
	Dwarf_Files *files;
	size_t n;

	if (dwarf_getsrcfiles(cudie, &files, &n) != 0 || idx >= n)
		return NULL;
	return dwarf_filesrc(files, idx, NULL, NULL);
}

static int push(struct rbi_native_stack *s, const struct native_entry *e)
{
	if (s->n >= NATIVE_FRAMES_MAX) {
		s->cut = true;
		return RBI_ITER_END;
	}
	if (!RBI_GROW(s->v, s->cap, s->n + 1, 32))
		return rbi_fail(RBI_NOMEM, "out of memory");
	s->v[s->n] = *e;
	s->v[s->n].f.index = s->n;
	s->n++;
	return RBI_OK;
}

/* The first function-like DIE (a subprogram or an inlined call) among
   SCOPES[FROM, N), or NULL. */
static Dwarf_Die *first_function(Dwarf_Die *scopes, int from, int n)
{
	for (int i = from; i < n; i++) {
		int tag = dwarf_tag(&scopes[i]);

		if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine)
			return &scopes[i];
	}
	return NULL;
}

/* E's function, file and line from DWARF, with a frame of its own before
   it for each call inlined at its address, innermost first (as eu-stack
   -i and gdb list them): each inlined call's caller is the next function
   out among the concrete scopes around it (dwarf_getscopes_die), and
   where it was called from is its DW_AT_call_file and DW_AT_call_line. */
static int push_with_inlines(struct rbi_native_stack *s, Dwfl_Module *mod,
			     struct native_entry *e, uint64_t lookup)
{
	Dwarf_Addr bias = 0, low;
	Dwarf_Die *cudie = dwfl_module_addrdie(mod, lookup, &bias);
	Dwarf_Die *scopes = NULL, *fn, cur;
	const char *file = e->f.file, *name;
	int nscopes, rc = RBI_OK, line = e->f.line;

	if (!cudie || (nscopes = dwarf_getscopes(cudie, lookup - bias, &scopes)) <= 0)
		return push(s, e);
	fn = first_function(scopes, 0, nscopes);
	for (int depth = 0; fn && rc == RBI_OK && depth < INLINE_DEPTH_MAX; depth++) {
		Dwarf_Attribute attr;
		Dwarf_Word call_file = 0, call_line = 0;
		struct native_entry inl = *e;

		cur = *fn;
		if (dwarf_tag(&cur) != DW_TAG_inlined_subroutine)
			break;
		inl.f.function = die_function_name(&cur);
		inl.f.function_offset = 0;
		inl.f.inlined = 1;
		inl.f.signal_trampoline = 0;
		inl.f.file = file;
		inl.f.line = line;
		rc = push(s, &inl);
		dwarf_formudata(dwarf_attr(&cur, DW_AT_call_file, &attr), &call_file);
		dwarf_formudata(dwarf_attr(&cur, DW_AT_call_line, &attr), &call_line);
		file = cu_file(cudie, call_file);
		line = (int)call_line;
		free(scopes);
		scopes = NULL;
		nscopes = dwarf_getscopes_die(&cur, &scopes);
		fn = nscopes > 1 ? first_function(scopes, 1, nscopes) : NULL;
	}
	/* The function itself: DWARF names it as its source does (and as gdb
	   does), where a symbol may be an alias. */
	if (rc == RBI_OK && fn && dwarf_tag(fn) == DW_TAG_subprogram &&
	    (name = die_function_name(fn))) {
		e->f.function = name;
		if (dwarf_lowpc(fn, &low) == 0)
			e->f.function_offset = e->f.pc - (low + bias);
	}
	free(scopes);
	e->f.file = file;
	e->f.line = line;
	return rc == RBI_OK ? push(s, e) : rc;
}

/* Name the frame at PC (EXACT: the instruction it runs, not a return
   address after a call; TRAMPOLINE: the signal trampoline) and add it. */
static int name_frame(struct rbi_native_stack *s, struct rbi_image_list *images,
		      const struct native_raw *raw)
{
	uint64_t lookup = raw_lookup(raw);
	Dwfl_Module *mod = dwfl_addrmodule(images->dwfl, lookup);
	struct rbi_image *img = rbi_images_at(images, lookup);
	struct native_entry e = {
		.f = { .pc = raw->pc, .signal_trampoline = raw->trampoline,
		       .found_by_scan = raw->scanned },
	};
	Dwfl_Line *ln;
	uint64_t start = 0;
	int lineno = 0;

	if (!mod || !img)
		return push(s, &e);
	e.f.module = img->name;
	e.f.module_offset = lookup - img->bias;
	if ((e.f.function = covering_symbol(s, mod, lookup, &start)))
		e.f.function_offset = raw->pc - start;
	if (rbi_image_function_start(img, lookup, &e.fn_start) != RBI_OK)
		e.fn_start = start;
	if (e.fn_start)
		e.f.function_start = e.fn_start - img->bias;
	if ((ln = dwfl_module_getsrc(mod, lookup)) &&
	    (e.f.file = dwfl_lineinfo(ln, NULL, &lineno, NULL, NULL, NULL)))
		e.f.line = lineno;
	return push_with_inlines(s, mod, &e, lookup);
}

/* Whether call frame information (.eh_frame, else .debug_frame) covers ADDR. */
static bool has_cfi(Dwfl *dwfl, uint64_t addr)
{
	Dwfl_Module *mod = dwfl_addrmodule(dwfl, addr);
	Dwarf_Frame *frame;
	Dwarf_Addr bias;
	Dwarf_CFI *cfi;

	for (int k = 0; mod && k < 2; k++) {
		cfi = k ? dwfl_module_dwarf_cfi(mod, &bias) : dwfl_module_eh_cfi(mod, &bias);
		if (cfi && dwarf_cfi_addrframe(cfi, addr - bias, &frame) == 0) {
			free(frame);
			return true;
		}
	}
	return false;
}

/* Record the frame at PC: all the walk itself does, so that a live
   thread is held stopped no longer than unwinding takes (naming, with
   its DWARF, comes after).  A signal handler "returns" to the
   trampoline's first instruction, and the frame after the trampoline was
   interrupted: both pcs are exact. */
static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct unwind_walk *w = arg;
	struct rbi_native_stack *s = w->out;
	Dwfl_Module *mod;
	Dwarf_Addr pc;
	bool exact;

	if (!dwfl_frame_pc(state, &pc, NULL))
		return DWARF_CB_ABORT;
	if (s->nraw >= NATIVE_FRAMES_MAX) {
		s->cut = true;
		return DWARF_CB_ABORT;
	}
	/* libdwfl steps out of code without call frame information by the
	   frame pointer, which -O2 code does not keep: a guess, not a frame. */
	if (s->nraw && !w->next_scanned) {
		const struct native_raw *prev = &s->raw[s->nraw - 1];

		if (!has_cfi(w->images->dwfl, raw_lookup(prev)))
			return DWARF_CB_ABORT;
	}
	if (!RBI_GROW(s->raw, s->capraw, s->nraw + 1, 32))
		return DWARF_CB_ABORT;
	exact = s->nraw == 0 || s->raw[s->nraw - 1].trampoline;
	mod = dwfl_addrmodule(w->images->dwfl, exact ? pc : pc - 1);
	s->raw[s->nraw++] = (struct native_raw){
		.pc = pc, .exact = exact,
		.trampoline = !exact && mod && signal_trampoline(mod, pc),
		.scanned = w->next_scanned,
	};
	w->next_scanned = false;
	if (s->raw[s->nraw - 1].trampoline) {
		Dwarf_Word sp;

		w->trampoline_sp = dwfl_frame_reg(state, w->arch->dwarf_sp, &sp) == 0 ? sp : 0;
	}
	return DWARF_CB_OK;
}

/* ---- the walk ------------------------------------------------------------ */

/* Unwind on from SP with PC as a frame the caller knows of otherwise than
   by call frame information (found_by_scan), into W's stack. */
static void resume_at(struct unwind_walk *w, struct unwind_state *st, pid_t tid, uint64_t sp,
		      uint64_t pc)
{
	st->scanned = true;
	st->scan_sp = sp;
	st->scan_pc = pc;
	w->next_scanned = true;
	dwfl_getthread_frames(w->images->dwfl, tid, frame_cb, w);
	st->scanned = st->full = false;
}

/* The innermost frame runs code without call frame information (musl's
   libc has none, so every thread blocked in a system call stops there):
   find the first word up the stack that returns, right after a call, into
   code that has it, and unwind on from there as that frame, flagged as
   found by a scan (Breakpad's stack scanning; the frames of the code
   without CFI in between are not listed).  Only the innermost frame is
   scanned for: deeper down, a frame without CFI more likely means the
   stack ends. */
static void scan_resume(struct unwind_walk *w, struct unwind_state *st, pid_t tid)
{
	Dwfl *dwfl = w->images->dwfl;
	uint64_t sp = st->regs.reg[st->arch->dwarf_sp], v;

	if (w->out->nraw != 1 || w->out->cut || st->regs.count <= st->arch->dwarf_sp ||
	    has_cfi(dwfl, w->out->raw[0].pc))
		return;
	for (unsigned i = 0; i < SCAN_WORDS; i++, sp += 8) {
		if (!stack_word(w->t, sp, &v))
			break;
		if (v < 2 || !has_cfi(dwfl, v - 1) || !rbi_code_call_ends_at(w->t, v))
			continue;
		resume_at(w, st, tid, sp + 8, v);
		break;
	}
}

/* Where the kernel's signal frame F starts, for the last signal trampoline
   the walk went through. */
static uint64_t sigframe_at(const struct unwind_walk *w, const struct rbi_arch_sigframe *f)
{
	return w->trampoline_sp - f->at_trampoline;
}

/* The stack ended at a signal trampoline because the code the signal
   interrupted is none (a call through a NULL or stale function pointer: a
   C extension's callback never set): libdwfl takes pc 0 for the end of the
   stack.  As gdb does, the interrupted pc is a frame of its own, and the
   word at its stack pointer, which the call pushed, is where it was called
   from, if that returns right after a call into code with call frame
   information; unwinding goes on from there.  The code called ran no
   instruction, so every register but the stack pointer is still the
   caller's, as the signal saved them: the caller's frame unwinds by them
   (libffi's ffi_call_unix64 finds its frame by rbp), into the C extension
   and the VM. */
static bool bad_call_regs(struct unwind_walk *w, struct unwind_state *st)
{
	const struct rbi_arch_sigframe *f = st->arch->sigframe;
	uint64_t gregs[RBI_REGS_MAX];

	if (f->ngregs > RBI_REGS_MAX ||
	    !stack_read(w->t, sigframe_at(w, f) + f->gregs, gregs, f->ngregs * 8))
		return false;
	for (unsigned i = 0; i < f->ngregs; i++)
		st->scan_regs[f->greg_dwarf[i]] = gregs[i];
	return true;
}

static void bad_call_resume(struct unwind_walk *w, struct unwind_state *st, pid_t tid)
{
	struct rbi_native_stack *s = w->out;
	uint64_t sp, pc, ret;

	if (!s->nraw || s->cut || !s->raw[s->nraw - 1].trampoline || !w->trampoline_sp ||
	    !stack_word(w->t, sigframe_at(w, st->arch->sigframe) + st->arch->sigframe->sp, &sp) ||
	    !stack_word(w->t, sigframe_at(w, st->arch->sigframe) + st->arch->sigframe->pc, &pc) ||
	    (pc && dwfl_addrmodule(w->images->dwfl, pc)) ||
	    !stack_word(w->t, sp, &ret) || ret < 2 || !has_cfi(w->images->dwfl, ret - 1) ||
	    !rbi_code_call_ends_at(w->t, ret) || !RBI_GROW(s->raw, s->capraw, s->nraw + 1, 32))
		return;
	s->raw[s->nraw++] = (struct native_raw){ .pc = pc, .exact = true };
	st->full = bad_call_regs(w, st);
	st->scan_regs[st->arch->dwarf_sp] = sp + 8;
	resume_at(w, st, tid, sp + 8, ret);
}

/* T's images and libdwfl state, ready to unwind. */
static int unwind_ready(struct rbi_target *t, struct rbi_image_list **images,
			struct unwind_state **st)
{
	int rc;

	if (!rbi_target_has_registers(t))
		return rbi_fail(RBI_UNSUPPORTED, "this target's backend gives no "
				"registers: no native frames");
	rc = rbi_images_load(t, images);
	return rc ? rc : unwind_state(t, *images, st);
}

int rbi_native_prepare(struct rbi_target *t)
{
	struct rbi_image_list *images;
	struct unwind_state *st;

	return unwind_ready(t, &images, &st);
}

int rbi_native_unwind(struct rbi_target *t, int32_t tid, struct rbi_native_stack *out)
{
	struct unwind_walk w = { .t = t, .out = out };
	struct unwind_state *st = NULL;
	int rc;

	rbi_native_stack_free(out);
	if ((rc = unwind_ready(t, &w.images, &st)))
		return rc;
	rc = rbi_target_registers(t, tid, &st->regs);
	if (rc == RBI_ITER_END)
		return rbi_fail(RBI_UNSUPPORTED, "no registers of thread %d", (int)tid);
	if (rc)
		return rc;
	st->arch = rbi_arch_of(st->regs.machine);
	if (!st->arch || !st->arch->dwarf_regs || !st->arch->sigframe)
		return rbi_fail(RBI_UNSUPPORTED, "native frames are read on x86-64 only");
	w.arch = st->arch;
	/* Errors past the first frame end the stack (libdwfl says "no matching
	   address range" past the outermost frame); frames so far stand. */
	if (dwfl_getthread_frames(w.images->dwfl, tid, frame_cb, &w) != 0 && out->nraw == 0)
		return rbi_fail(RBI_CORRUPT, "unwinding thread %d: %s", (int)tid,
				dwfl_errmsg(-1));
	scan_resume(&w, st, tid);
	bad_call_resume(&w, st, tid);
	out->no_cfi = out->nraw && !out->cut &&
		      !has_cfi(w.images->dwfl, raw_lookup(&out->raw[out->nraw - 1]));
	return RBI_OK;
}

int rbi_native_name(struct rbi_target *t, struct rbi_native_stack *s)
{
	struct rbi_image_list *images;
	int rc = rbi_images_load(t, &images);

	for (size_t i = 0; rc == RBI_OK && i < s->nraw; i++)
		rc = name_frame(s, images, &s->raw[i]);
	return rc == RBI_ITER_END ? RBI_OK : rc;
}

void rbi_native_stack_free(struct rbi_native_stack *s)
{
	for (size_t i = 0; i < s->nowned; i++)
		free(s->owned[i]);
	free(s->owned);
	free(s->raw);
	free(s->v);
	*s = (struct rbi_native_stack){ 0 };
}
