/* merge.c: one stack out of a thread's native frames and its Ruby frames.
 *
 * The rule comes from how CRuby runs code.  Ruby code runs in the
 * interpreter loop (vm_exec_core): each time C enters Ruby (the program's
 * start, a thread's block, rb_funcall, rb_yield) vm_exec pushes a control
 * frame flagged VM_FRAME_FLAG_FINISH and calls the loop, which then runs
 * that frame and every Ruby frame called from it without leaving, until
 * it returns.  So, innermost first, the Ruby frames fall into runs, each
 * ending at a FINISH frame (rbi_frame.vm_entry), and the runs pair one to
 * one, in order, with the native frames of the loop.  A C method's frame
 * is pushed by the loop (or by rb_funcall) right before its C function is
 * called: it goes on that function's native frame, found by the
 * function's address, which the method entry holds (rbi_frame.cfunc).
 *
 * The loop is a static function, unnamed in a stripped libruby.  The VM
 * itself says where it is: Ruby compiles iseqs to direct-threaded code,
 * whose instruction words are the addresses of the loop's instruction
 * handlers, so the word a Ruby frame's pc points at lies inside the loop;
 * the call frame index (image/functions.c) gives the function it lies in,
 * and every native frame in that function is a loop frame.  (A Ruby built
 * without direct threading falls back on the symbol vm_exec_core.)
 *
 * When the counts do not pair up, or Ruby frames are left over, no
 * interleaving is guessed: the stacks are listed one after the other with
 * the reason. */
#include <stdio.h>

#include "native/native.h"

/* Ruby frames of one thread (rbi_frame_foreach is bounded by the VM
   stack; this bounds the copy). */
#define RUBY_FRAMES_MAX 100000u
/* Distinct functions Ruby frames' instruction words point into. */
#define LOOP_FUNCS_MAX 4
#define REASON_MAX 200

/* Ruby frames kept past their callback (strings owned). */
struct ruby_stack {
	struct rbi_frame *v;
	size_t n, cap;
};

static _Thread_local char unmerged_reason[REASON_MAX];

static void ruby_stack_free(struct ruby_stack *s)
{
	for (size_t i = 0; i < s->n; i++)
		rbi_frame_disown(&s->v[i]);
	free(s->v);
}

static int ruby_copy_fn(const struct rbi_frame *f, void *arg)
{
	struct ruby_stack *s = arg;
	int rc;

	if (s->n >= RUBY_FRAMES_MAX)
		return RBI_ITER_END;
	if (!RBI_GROW(s->v, s->cap, s->n + 1, 64))
		return rbi_fail(RBI_NOMEM, "out of memory");
	if ((rc = rbi_frame_own(&s->v[s->n], f)))
		return rc;
	s->n++;
	return RBI_OK;
}

/* ---- reading both stacks ------------------------------------------------- */

/* The backend's number for TH's kernel thread, 0 if it has none.  Ruby
   keeps the tid its own pid namespace gave the thread; a live target's is
   ours only once checked to be one of its tasks (never another process's:
   a forked child's Ruby may name its parent's), and a core of a process
   in a container names the host's (gdb's gcore, the kernel), so a tid the
   core does not list is looked up by the thread pointer instead (glibc's
   pthread_t: x86-64's fs_base). */
static int32_t backend_tid(struct rbi_target *t, const struct rbi_thread *th)
{
	struct rbi_thread_regs r;
	int32_t by_pointer, host;

	if (rbi_target_is_live(t))
		return rbi_target_task(t, th->tid, &host) == 1 ? host : 0;
	for (size_t i = 0; i < RBI_THREADS_REGS_MAX; i++) {
		int rc = rbi_target_thread_at(t, i, &r);

		if (rc == RBI_UNSUPPORTED)      /* the backend lists none */
			return th->tid;
		if (rc)
			break;
		if (r.tid == th->tid)
			return th->tid;
	}
	by_pointer = rbi_target_tid_by_pointer(t, th->pthread);
	return by_pointer ? by_pointer : th->tid;
}

/* TH's Ruby and native frames, read while its thread holds still: a live
   one is stopped for the time (unless the whole process is, by us). */
static int read_stacks(struct rbi_target *t, const struct rbi_thread *th, int32_t tid,
		       struct ruby_stack *rs, struct rbi_native_stack *ns,
		       uint64_t *stopped_ns)
{
	bool hold = !rbi_target_regs_ready(t);
	uint64_t t0 = 0;
	int rc;

	*stopped_ns = 0;
	if (th->tid <= 0)
		return rbi_fail(RBI_THREAD_GONE, "thread %u has no known kernel thread "
				"id: no native frames", th->number);
	if (tid <= 0 && (tid = backend_tid(t, th)) <= 0)
		return rbi_fail(RBI_THREAD_GONE, "thread %u: its kernel thread %d is not "
				"one of process %d's (it has exited): not touched",
				th->number, (int)th->tid, (int)rbi_target_pid(t));
	if ((rc = rbi_native_prepare(t)))
		return rc;
	if (hold) {
		t0 = rbi_now_ns();
		if ((rc = rbi_task_hold(rbi_target_pid(t), tid)))
			return rc;
		/* What was cached was read while the thread ran. */
		rbi_target_forget(t);
	}
	rc = rbi_frame_foreach(t, th, 0, ruby_copy_fn, rs);
	if (rc == RBI_OK || rc == RBI_ITER_END)
		rc = rbi_native_unwind(t, tid, ns);
	if (hold) {
		rbi_task_release(tid);
		*stopped_ns = rbi_now_ns() - t0;
	}
	return rc ? rc : rbi_native_name(t, ns);
}

/* ---- which native frames are the interpreter loop -------------------------- */

struct loop_funcs {
	uint64_t start[LOOP_FUNCS_MAX];
	size_t n;
};

/* The functions the instruction words at Ruby frames' pcs lie in. */
static void find_loop(struct rbi_target *t, const struct ruby_stack *rs,
		      struct loop_funcs *lf)
{
	struct rbi_image_list *images;

	lf->n = 0;
	if (rbi_images_load(t, &images))
		return;
	for (size_t i = 0; i < rs->n && lf->n < LOOP_FUNCS_MAX; i++) {
		const struct rbi_frame *f = &rs->v[i];
		struct rbi_image *img;
		uint64_t word, start;
		size_t k;

		if (f->kind != RBI_FRAME_RUBY || !f->pc || rbi_read_u64(t, f->pc, &word) ||
		    !(img = rbi_images_at(images, word)) ||
		    rbi_image_function_start(img, word, &start))
			continue;
		for (k = 0; k < lf->n && lf->start[k] != start; k++)
			;
		if (k == lf->n)
			lf->start[lf->n++] = start;
	}
}

static bool is_loop(const struct loop_funcs *lf, const struct native_entry *e)
{
	if (e->f.inlined)
		return false;
	for (size_t k = 0; k < lf->n; k++)
		if (e->fn_start == lf->start[k])
			return true;
	return !lf->n && e->f.function && !strcmp(e->f.function, "vm_exec_core");
}

/* ---- the merge ----------------------------------------------------------- */

/* A line of the merged stack; indices into the two stacks, -1: none. */
struct line {
	long native, ruby;
};

struct merge {
	struct line *v;
	size_t n, cap;
};

static int add_line(struct merge *m, long native, long ruby)
{
	if (!RBI_GROW(m->v, m->cap, m->n + 1, 64))
		return rbi_fail(RBI_NOMEM, "out of memory");
	m->v[m->n++] = (struct line){ native, ruby };
	return RBI_OK;
}

/* If native frame E runs the C function of one of the C frames from R on
   (before any Ruby frame), that frame's index; else -1. */
static long cfunc_at(const struct ruby_stack *rs, size_t r, const struct native_entry *e)
{
	if (e->f.inlined || !e->fn_start)
		return -1;
	for (size_t k = r; k < rs->n && rs->v[k].kind == RBI_FRAME_CFUNC; k++)
		if (rs->v[k].cfunc == e->fn_start)
			return (long)k;
	return -1;
}

/* Why the native stack ended early, if it did (for UNMERGED_REASON). */
static const char *stack_end_why(const struct rbi_native_stack *ns)
{
	if (ns->cut)
		return " (which was cut short)";
	if (!ns->no_cfi)
		return "";
	/* No image maps it: code a JIT compiler wrote (YJIT). */
	if (ns->n && !ns->v[ns->n - 1].f.module)
		return " (which ends in JIT-compiled code: no call frame information "
		       "to unwind it by)";
	return " (which ends in code without call frame information: its file "
	       "missing, or built without it)";
}

/* Interleave; false with UNMERGED_REASON set when they do not fit. */
static int interleave(const struct rbi_native_stack *ns, const struct ruby_stack *rs,
		      const struct loop_funcs *lf, struct merge *m, bool *fits)
{
	size_t r = 0, loops = 0;
	int rc;

	*fits = false;
	for (size_t i = 0; i < ns->n; i++) {
		const struct native_entry *e = &ns->v[i];
		long k = cfunc_at(rs, r, e);

		if (k >= 0) {
			/* C frames whose own native frame was not seen (a tail
			   call) stay in order before it. */
			for (; r < (size_t)k; r++)
				if ((rc = add_line(m, -1, (long)r)))
					return rc;
			if ((rc = add_line(m, (long)i, (long)r++)))
				return rc;
			continue;
		}
		if (is_loop(lf, e)) {
			bool ended = false;

			loops++;
			while (r < rs->n && !ended) {
				ended = rs->v[r].kind == RBI_FRAME_RUBY && rs->v[r].vm_entry;
				if ((rc = add_line(m, -1, (long)r++)))
					return rc;
			}
			if (!ended) {
				snprintf(unmerged_reason, sizeof(unmerged_reason),
					 "interpreter frame %zu of the native stack has no "
					 "Ruby frames left to run", loops);
				return RBI_OK;
			}
		}
		if ((rc = add_line(m, (long)i, -1)))
			return rc;
	}
	if (r < rs->n) {
		snprintf(unmerged_reason, sizeof(unmerged_reason),
			 "%zu Ruby frame%s below the last of the %zu interpreter frames "
			 "found on the native stack%s", rs->n - r, rs->n - r == 1 ? " is" : "s are",
			 loops, stack_end_why(ns));
		return RBI_OK;
	}
	*fits = true;
	return RBI_OK;
}

/* ---- delivering ---------------------------------------------------------- */

static int deliver(const struct rbi_native_stack *ns, const struct ruby_stack *rs,
		   const struct merge *m, size_t max, rbi_mixed_fn fn, void *arg)
{
	for (size_t i = 0; i < m->n && (!max || i < max); i++) {
		struct rbi_mixed_frame f = {
			.index = i,
			.native = m->v[i].native >= 0 ? &ns->v[m->v[i].native].f : NULL,
			.ruby = m->v[i].ruby >= 0 ? &rs->v[m->v[i].ruby] : NULL,
		};
		int rc = fn(&f, arg);

		if (rc)
			return rc;
	}
	return RBI_OK;
}

/* Every native frame, then every Ruby frame. */
static int side_by_side(const struct rbi_native_stack *ns, const struct ruby_stack *rs,
			struct merge *m)
{
	int rc = RBI_OK;

	m->n = 0;
	for (size_t i = 0; i < ns->n && !rc; i++)
		rc = add_line(m, (long)i, -1);
	for (size_t r = 0; r < rs->n && !rc; r++)
		rc = add_line(m, -1, (long)r);
	return rc;
}

RBI_EXPORT int rbi_native_foreach(rbi_target *t, const struct rbi_thread *th,
				  size_t max_frames, rbi_mixed_fn fn, void *arg,
				  struct rbi_native_info *info)
{
	return rbi_native_foreach_tid(t, th, 0, max_frames, fn, arg, info);
}

int rbi_native_foreach_tid(struct rbi_target *t, const struct rbi_thread *th,
			   int32_t host_tid, size_t max_frames, rbi_mixed_fn fn,
			   void *arg, struct rbi_native_info *info)
{
	struct rbi_native_info dummy = { 0 };
	struct ruby_stack rs = { 0 };
	struct rbi_native_stack ns = { 0 };
	struct merge m = { 0 };
	struct loop_funcs lf;
	bool fits = false;
	int rc;

	if (!info)
		info = &dummy;
	*info = (struct rbi_native_info){ 0 };
	if (!t || !th || !fn)
		return rbi_fail(RBI_INVAL, "no target, thread or callback");
	unmerged_reason[0] = '\0';
	rc = read_stacks(t, th, host_tid, &rs, &ns, &info->stopped_ns);
	if (rc == RBI_OK) {
		info->cut = ns.cut;
		find_loop(t, &rs, &lf);
		rc = interleave(&ns, &rs, &lf, &m, &fits);
	}
	if (rc == RBI_OK && !fits) {
		info->unmerged = unmerged_reason;
		rc = side_by_side(&ns, &rs, &m);
	}
	if (rc == RBI_OK)
		rc = deliver(&ns, &rs, &m, max_frames, fn, arg);
	free(m.v);
	ruby_stack_free(&rs);
	rbi_native_stack_free(&ns);
	return rc;
}
