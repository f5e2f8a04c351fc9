/* thread.c: every Ruby thread of every ractor, and who each one is
 * (ruby-internals.md §2).
 *
 * Lists: 2.x vm->living_threads; 3.0+ vm->ractor.set, then each ractor's
 * threads.set.  The GVL holder: 2.x vm->gvl.owner, 3.0-3.1 the ractor's
 * threads.gvl.owner, 3.2+ its threads.sched.running.  The kernel tid:
 * glibc's struct pthread holds it at an offset glibc itself exports for
 * libthread_db (GLIBC_PRIVATE _thread_db_pthread_tid = {bit size, count,
 * offset}), kept right across fork; Ruby's own copy (3.1 th->tid, 3.2+
 * th->nt->tid; older Rubies keep only the pthread_t) is a hint, checked
 * against the live target's threads. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "vm/stack/stack.h"

#define THREAD_NAME_MAX 256
/* Largest rb_thread_t we read in one go (3.4: 472 bytes). */
#define THREAD_STRUCT_MAX 4096

RBI_EXPORT const char *rbi_thread_status_name(rbi_thread_status s)
{
	switch (s) {
	case RBI_THREAD_RUNNABLE: return "runnable";
	case RBI_THREAD_STOPPED: return "stopped";
	case RBI_THREAD_STOPPED_FOREVER: return "stopped_forever";
	case RBI_THREAD_KILLED: return "killed";
	default: return "unknown";
	}
}

/* Threads in one GVL queue that are told apart. */
#define GVL_QUEUE_MAX 1024

struct walk {
	struct rbi_target *t;
	struct rbi_vm *vm;
	rbi_thread_fn fn;
	void *arg;
	unsigned number;
	uint64_t ractor;
	uint32_t ractor_id;
	uint64_t gvl_owner;
	uint64_t running_ec;    /* the ractor's threads.running_ec (3.0+), 0 if unknown */
	uint64_t queued[GVL_QUEUE_MAX];         /* the threads in its GVL queue */
	size_t nqueued;
	bool stopped;           /* FN returned non-zero ... */
	int fn_rc;              /* ... this */
};

bool rbi_vm_gvl_queue(const struct rbi_layout *l, uint32_t *node, uint32_t *ractor_head,
		      uint32_t *vm_head)
{
	*node = l->thread_readyq_node != RBI_ABSENT ? l->thread_readyq_node : l->thread_gvl_node;
	*ractor_head = l->ractor_sched_readyq != RBI_ABSENT ? l->ractor_sched_readyq
							     : l->ractor_gvl_waitq;
	*vm_head = l->vm_gvl_waitq;
	return *node != RBI_ABSENT && (*ractor_head != RBI_ABSENT || *vm_head != RBI_ABSENT);
}

static int queued_cb(struct rbi_target *t, uint64_t thread, void *arg)
{
	struct walk *w = arg;

	(void)t;
	if (w->nqueued < GVL_QUEUE_MAX)
		w->queued[w->nqueued++] = thread;
	return RBI_OK;
}

/* The threads in the GVL queue of the ractor at R (0: the VM's, 2.x)
   into W->queued; none where the layout lacks it or it cannot be read (a
   live queue that moved under the read: it changes every few
   microseconds, a second read is no likelier to hold). */
static void gvl_queue_read(struct walk *w, uint64_t r)
{
	uint32_t node, ractor_head, vm_head;
	uint64_t head;

	w->nqueued = 0;
	if (!rbi_vm_gvl_queue(w->vm->layout, &node, &ractor_head, &vm_head))
		return;
	if (r && ractor_head != RBI_ABSENT)
		head = r + ractor_head;
	else if (!r && vm_head != RBI_ABSENT)
		head = w->vm->info.vm + vm_head;
	else
		return;
	if (rbi_list_walk_once(w->t, head, node, GVL_QUEUE_MAX, queued_cb, w) != RBI_OK)
		w->nqueued = 0;
}

/* Whether the thread at ADDR (running the context EC) waits for the GVL:
   in the queue, or (3.3+, which hands the GVL to the next thread before it
   wakes) its holder but not yet running. */
static bool gvl_waiting(const struct walk *w, uint64_t addr, uint64_t ec, bool *holds)
{
	if (*holds) {
		if (w->running_ec && rbi_vm_gvl_handed_on(w->running_ec, ec)) {
			*holds = false;
			return true;
		}
		return false;
	}
	for (size_t i = 0; i < w->nqueued; i++)
		if (w->queued[i] == addr)
			return true;
	return false;
}

/* glibc's offset of struct pthread.tid, looked up once per VM. */
static int64_t pthread_tid_offset(struct rbi_target *t, struct rbi_vm *vm)
{
	struct rbi_image_list *images;
	const struct rbi_image *libc;
	uint32_t desc[3];               /* bit size, count, offset */
	uint64_t addr, size;
	bool tls;

	if (vm->pthread_tid_off != -2)
		return vm->pthread_tid_off;
	vm->pthread_tid_off = -1;
	if (rbi_images_load(t, &images) ||
	    !(libc = rbi_images_find_symbol(images, "_thread_db_pthread_tid")) ||
	    rbi_image_symbol(libc, "_thread_db_pthread_tid", &addr, &size, &tls) || tls ||
	    rbi_read(t, addr, desc, sizeof(desc)))
		return -1;
	if (desc[0] == 32 && desc[1] == 1 && desc[2] < 65536)
		vm->pthread_tid_off = desc[2];
	return vm->pthread_tid_off;
}

static uint64_t field_u64(const uint8_t *b, uint32_t size, uint32_t off)
{
	uint64_t v = 0;

	if (off != RBI_ABSENT && off + 8 <= size)
		memcpy(&v, b + off, 8);
	return v;
}

/* glibc's tid of the thread whose pthread_t is PTHREAD, or 0.  glibc's
   fork resets it in the child and the kernel clears it when the thread
   exits (CLONE_CHILD_CLEARTID), so it is the kernel's own answer. */
static int32_t libc_tid(struct walk *w, uint64_t pthread)
{
	int64_t off;
	int32_t tid = 0;

	if (!pthread || (pthread & 7) || (off = pthread_tid_offset(w->t, w->vm)) < 0 ||
	    rbi_read(w->t, pthread + (uint64_t)off, &tid, sizeof(tid)) || tid < 0)
		return 0;
	return tid;
}

/* Ruby's own record of a live target's kernel thread, checked: a forked
   child's Ruby (3.1, before 3.2's reset) keeps the parent's tids, which
   name threads of another process.  The main thread is the child's
   thread-group leader; another thread whose tid is not the target's has
   none we know (0). */
static int32_t ruby_tid_checked(struct walk *w, const struct rbi_thread *th, int32_t tid)
{
	int32_t host;

	if (tid <= 0)
		return 0;
	if (rbi_target_task(w->t, tid, &host) != 0)
		return tid;     /* one of its threads, or a core: its notes judge */
	return th->main ? rbi_target_leader_tid(w->t) : 0;
}

/* TH's pthread_t and kernel thread id.  Ruby keeps both (3.1 th->tid,
   3.2+ th->nt->tid and nt->thread_id; older Rubies only the pthread_t);
   glibc's record of the tid comes first, then a core's thread whose
   thread pointer is the pthread_t, and Ruby's is a hint. */
static void native_identity(struct walk *w, const uint8_t *b, uint32_t size,
			    struct rbi_thread *th)
{
	const struct rbi_layout *l = w->vm->layout;
	int32_t tid = 0;

	if (l->thread_nt != RBI_ABSENT) {                       /* 3.2+ */
		uint64_t nt = field_u64(b, size, l->thread_nt);

		/* M:N threads (3.3+) may have no native thread of their own. */
		if (nt && !(nt & 7)) {
			if (l->native_thread_thread_id != RBI_ABSENT)
				rbi_read_u64(w->t, nt + l->native_thread_thread_id,
					     &th->pthread);
			if (l->native_thread_tid != RBI_ABSENT)
				rbi_read(w->t, nt + l->native_thread_tid, &tid, sizeof(tid));
		}
	} else {
		th->pthread = field_u64(b, size, l->thread_thread_id);
		if (l->thread_tid != RBI_ABSENT && l->thread_tid + 4 <= size)
			memcpy(&tid, b + l->thread_tid, 4);             /* 3.1 */
	}
	th->tid = libc_tid(w, th->pthread);
	if (th->tid <= 0)
		th->tid = rbi_target_tid_by_pointer(w->t, th->pthread);
	if (th->tid <= 0)
		th->tid = ruby_tid_checked(w, th, tid);
}

/* Fill TH from the rb_thread_t at ADDR; on failure TH->error is set. */
static void read_thread(struct walk *w, uint64_t addr, struct rbi_thread *th,
			char *name, size_t name_cap)
{
	const struct rbi_layout *l = w->vm->layout;
	const uint32_t offs[] = {
		l->thread_self, l->thread_vm, l->thread_ec, l->thread_nt,
		l->thread_thread_id, l->thread_tid, l->thread_name,
		l->thread_status / 8,
	};
	uint8_t b[THREAD_STRUCT_MAX];
	uint32_t size = 0, unit;
	uint64_t vm, namev;
	int rc;

	/* Read what we use, not sizeof(rb_thread_t): its tail (root_jmpbuf,
	   name) depends on the build's configuration. */
	for (size_t i = 0; i < RBI_ARRAY_SIZE(offs); i++)
		if (offs[i] != RBI_ABSENT && offs[i] != RBI_ABSENT / 8 && offs[i] + 8 > size)
			size = offs[i] + 8;
	if (size > sizeof(b) || l->thread_ec == RBI_ABSENT || l->thread_vm == RBI_ABSENT ||
	    l->thread_status == RBI_ABSENT) {
		th->error = rbi_fail(RBI_LAYOUT, "no rb_thread_t layout");
		return;
	}
	if ((rc = rbi_read(w->t, addr, b, size))) {
		th->error = rc;
		return;
	}
	vm = field_u64(b, size, l->thread_vm);
	if (vm != w->vm->info.vm) {
		th->error = rbi_fail(RBI_CORRUPT, "thread 0x%" PRIx64 " belongs to VM "
				     "0x%" PRIx64 ", not 0x%" PRIx64, addr, vm,
				     w->vm->info.vm);
		return;
	}
	th->self = field_u64(b, size, l->thread_self);
	th->ec = field_u64(b, size, l->thread_ec);
	th->ractor = w->ractor;
	th->ractor_id = w->ractor_id;
	/* BITFIELD(enum rb_thread_status, status, 2): its bit offset. */
	memcpy(&unit, b + l->thread_status / 8, 4);
	th->status = (rbi_thread_status)((unit >> (l->thread_status % 8)) & 3);
	th->main = addr == w->vm->main_thread;
	{
		bool holds = w->gvl_owner && addr == w->gvl_owner;

		th->gvl_wait = gvl_waiting(w, addr, th->ec, &holds);
		th->gvl = holds;
	}
	native_identity(w, b, size, th);
	namev = field_u64(b, size, l->thread_name);
	if (rbi_vm_heap_p(w->vm, namev) &&
	    rbi_vm_string(w->t, w->vm, namev, name, name_cap, NULL) == RBI_OK)
		th->name = name;
}

static int thread_cb(struct rbi_target *t, uint64_t addr, void *arg)
{
	struct walk *w = arg;
	char name[THREAD_NAME_MAX], err[256];
	struct rbi_thread th = {
		.number = ++w->number,
		.thread = addr,
		.error_msg = "",
	};
	int rc;

	read_thread(w, addr, &th, name, sizeof(name));
	/* Our own copy: FN's failing calls replace rbi_errmsg(). */
	if (th.error) {
		snprintf(err, sizeof(err), "%s", rbi_errmsg());
		th.error_msg = err;
	}
	rc = w->fn(&th, w->arg);
	if (rc) {
		w->stopped = true;
		w->fn_rc = rc;
	}
	return rc ? 1 : RBI_OK;
}

static int ractor_cb(struct rbi_target *t, uint64_t r, void *arg)
{
	struct walk *w = arg;
	const struct rbi_layout *l = w->vm->layout;
	uint32_t owner_off = l->ractor_gvl_owner != RBI_ABSENT ? l->ractor_gvl_owner
							      : l->ractor_sched_running;
	int rc;

	w->ractor = r;
	w->ractor_id = 0;
	w->gvl_owner = w->running_ec = 0;
	if (l->ractor_id != RBI_ABSENT)
		rbi_read_u32(t, r + l->ractor_id, &w->ractor_id);
	if (owner_off != RBI_ABSENT)
		rbi_read_u64(t, r + owner_off, &w->gvl_owner);
	if (l->ractor_running_ec != RBI_ABSENT)
		rbi_read_u64(t, r + l->ractor_running_ec, &w->running_ec);
	gvl_queue_read(w, r);
	rc = rbi_list_walk(t, r + l->ractor_threads_set, l->thread_lt_node,
			   RBI_THREADS_MAX, thread_cb, w);
	return rc;
}

RBI_EXPORT int rbi_thread_foreach(rbi_target *t, rbi_thread_fn fn, void *arg)
{
	struct walk w = { .t = t, .fn = fn, .arg = arg };
	const struct rbi_layout *l;
	int rc;

	if (!t || !fn)
		return rbi_fail(RBI_INVAL, "no target or callback");
	if ((rc = rbi_vm_get(t, &w.vm)))
		return rc;
	l = w.vm->layout;
	if (l->vm_ractor_set != RBI_ABSENT) {
		rc = rbi_list_walk(t, w.vm->info.vm + l->vm_ractor_set, l->ractor_vmlr_node,
				   RBI_RACTORS_MAX, ractor_cb, &w);
	} else {
		if (l->vm_gvl_owner != RBI_ABSENT)
			rbi_read_u64(t, w.vm->info.vm + l->vm_gvl_owner, &w.gvl_owner);
		gvl_queue_read(&w, 0);
		rc = rbi_list_walk(t, w.vm->info.vm + l->vm_living_threads,
				   l->thread_vmlt_node, RBI_THREADS_MAX, thread_cb, &w);
	}
	if (w.stopped)
		return w.fn_rc;
	return rc ? rbi_fail_context(rc, "listing threads: ") : RBI_OK;
}
