/* sampler.c: rbi_sampler, one live process sampled again and again.
 *
 * The Ruby side (threads, stacks, caches, torn-read detection) is vm/sample.c;
 * this adds what the VM does not know: whether a runnable thread without the
 * GVL is on a CPU (/proc/PID/task/TID/stat, kept open; in another pid
 * namespace the target's tids are mapped to ours through NSpid), pausing
 * the process when asked, native frames when asked (native-sample.c: a
 * thread whose native stack cannot be had keeps the fast path's Ruby
 * stack), each sample's weight, timing and the sampling-quality figures.
 *
 * Weights.  A sample stands for the time since the previous tick that read
 * the process (wall time), so a changing rate still adds up to the time
 * recorded, less what a recording says its late ticks missed
 * (rbi_sampler_skip, ticks.c: a late tick is not one stack standing for
 * the whole gap).  With RBI_SAMPLER_CPU only the threads on a CPU at the
 * tick are read, each standing for the interval: over many ticks a stack
 * gets the CPU time spent in it, as a profiling timer's signal (ITIMER_PROF,
 * stackprof's cpu mode) delivers it.  On a CPU is the kernel's 'R'
 * (/proc/PID/task/TID/stat), and run time that moved since the last tick
 * (/proc/PID/task/TID/schedstat, first field): 'R' alone is also "waiting
 * on the run queue" of a loaded machine.  A thread queued for the GVL is
 * not on a CPU whatever its letter.  Not the CPU time used since the last
 * tick given to the stack read at its end: a thread that ran Ruby code,
 * then released the GVL for a write and now waits to get it back, would
 * hand its Ruby time to the write (IO#syswrite at 27-52 % of a program
 * that spends 1-3 % in the kernel).  A thread's first tick only sets
 * where its run time count starts.
 *
 * States.  The GVL's holder is read from the VM, and so is its queue where
 * the layout has it: a thread in the queue is RBI_STATE_GVL_WAIT, which a
 * profile of wall time shows under the call it waits in, not as that
 * call's own time. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "profile/native-sample.h"
#include "profile/ticks.h"
#include "vm/stack/sample.h"

/* Reads of a torn stack redone within one sample. */
#define TORN_RETRIES 2

struct ostask {
	int32_t tid;            /* as the target sees it */
	int32_t host;           /* as we see it */
	int fd;                 /* /proc/PID/task/HOST_TID/stat, -1 if none */
	int sched_fd;           /* .../schedstat (RBI_SAMPLER_CPU), -1 if none */
	uint64_t run_ns;        /* its run time at the last tick ... */
	bool run_known;         /* ... once read */
	bool seen;
};

struct rbi_sampler {
	rbi_target *t;
	pid_t pid;
	struct rbi_vm_sampler *vs;
	struct rbi_sampler_opts opts;
	struct rbi_sample_stats st;
	struct rbi_pause *pause;
	struct rbi_native_sampler *native;      /* RBI_SAMPLER_NATIVE */
	const struct rbi_native_sample **native_reads;  /* by thread, this sample */
	bool same_pidns;
	uint64_t rescans_seen;
	struct ostask *tasks;
	size_t ntasks, tasks_cap;
	rbi_sample_state *states;
	bool *wanted;
	uint64_t *weights;      /* by thread, this sample */
	uint64_t last_ns;       /* the previous tick that read the VM */
	uint64_t skip_ns;       /* of the time since, missed (rbi_sampler_skip) */
	size_t scratch_cap;
};

RBI_EXPORT const char *rbi_sample_state_name(rbi_sample_state s)
{
	switch (s) {
	case RBI_STATE_GVL: return "gvl";
	case RBI_STATE_RUNNING: return "running";
	case RBI_STATE_WAITING: return "waiting";
	case RBI_STATE_SLEEPING: return "sleeping";
	case RBI_STATE_GVL_WAIT: return "gvl-wait";
	default: return "unknown";
	}
}

RBI_EXPORT int rbi_sample_state_idle(rbi_sample_state s)
{
	return s == RBI_STATE_WAITING || s == RBI_STATE_SLEEPING;
}

static int open_task_file(pid_t pid, long host, const char *name)
{
	char path[96];

	snprintf(path, sizeof(path), "/proc/%d/task/%ld/%s", (int)pid, host, name);
	return open(path, O_RDONLY | O_CLOEXEC);
}

static void task_close(struct ostask *t)
{
	if (t->fd >= 0)
		close(t->fd);
	if (t->sched_fd >= 0)
		close(t->sched_fd);
}

static void tasks_close(struct rbi_sampler *s)
{
	for (size_t i = 0; i < s->ntasks; i++)
		task_close(&s->tasks[i]);
	s->ntasks = 0;
}

static struct ostask *task_find(struct rbi_sampler *s, int32_t tid)
{
	for (size_t i = 0; i < s->ntasks; i++)
		if (s->tasks[i].tid == tid)
			return &s->tasks[i];
	return NULL;
}

/* Task TID (HOST in our namespace), with its files open; NULL if HOST is
   not a task of the target (a forked child's Ruby may name its parent's
   threads): nothing of another process is read or touched. */
static struct ostask *task_add(struct rbi_sampler *s, int32_t tid, int32_t host)
{
	struct ostask *t;
	int fd = open_task_file(s->pid, host, "stat");

	if (fd < 0 || !RBI_GROW(s->tasks, s->tasks_cap, s->ntasks + 1, 16)) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	t = &s->tasks[s->ntasks++];
	*t = (struct ostask){
		.tid = tid, .host = host, .seen = true, .fd = fd,
		.sched_fd = s->opts.flags & RBI_SAMPLER_CPU ?
			open_task_file(s->pid, host, "schedstat") : -1,
	};
	return t;
}

/* After the thread set changed: open the stat files of new threads, close
   those of gone ones. */
static void tasks_update(struct rbi_sampler *s, struct rbi_vm_sthread *th, size_t n)
{
	bool missing = false;

	for (size_t i = 0; i < s->ntasks; i++)
		s->tasks[i].seen = false;
	for (size_t i = 0; i < n; i++) {
		struct ostask *t;

		if (th[i].tid <= 0)
			continue;
		if ((t = task_find(s, th[i].tid))) {
			t->seen = true;
		} else if (s->same_pidns) {
			task_add(s, th[i].tid, th[i].tid);
		} else {
			missing = true;
		}
	}
	if (missing) {
		/* Map the target's tids to ours through every task's NSpid. */
		struct rbi_proc_tasks dir;

		if (!rbi_proc_tasks_open(&dir, (int)s->pid)) {
			long host;

			while ((host = rbi_proc_tasks_next(&dir))) {
				int32_t tid;
				struct ostask *t;

				if (!(tid = rbi_proc_ns_tid(s->pid, host)))
					continue;
				for (size_t i = 0; i < n; i++)
					if (th[i].tid == tid && !task_find(s, tid) &&
					    (t = task_add(s, tid, (int32_t)host)))
						t->seen = true;
			}
			rbi_proc_tasks_close(&dir);
		}
	}
	for (size_t i = 0; i < s->ntasks;) {
		if (!s->tasks[i].seen) {
			task_close(&s->tasks[i]);
			s->tasks[i] = s->tasks[--s->ntasks];
		} else {
			i++;
		}
	}
}

/* The kernel's state letter of the target's task TID, or 0. */
static char os_state(struct rbi_sampler *s, int32_t tid)
{
	struct ostask *t = tid > 0 ? task_find(s, tid) : NULL;
	char buf[512], state;
	ssize_t n;

	if (!t || t->fd < 0 || (n = pread(t->fd, buf, sizeof(buf) - 1, 0)) <= 0)
		return 0;
	buf[n] = '\0';
	return rbi_proc_stat_parse(buf, &state, NULL) ? state : 0;
}

/* The CPU time task TID used since the previous tick (0 at its first
   tick, or when it cannot be read: then it is not known to be on a CPU). */
static uint64_t cpu_used(struct rbi_sampler *s, int32_t tid)
{
	struct ostask *t = tid > 0 ? task_find(s, tid) : NULL;
	unsigned long long run;
	uint64_t used;
	char buf[128];
	ssize_t n;

	if (!t || t->sched_fd < 0 || (n = pread(t->sched_fd, buf, sizeof(buf) - 1, 0)) <= 0)
		return 0;
	buf[n] = '\0';
	if (sscanf(buf, "%llu", &run) != 1)
		return 0;
	/* The count only grows; a smaller one is a reused tid's. */
	used = t->run_known && run >= t->run_ns ? run - t->run_ns : 0;
	t->run_ns = run;
	t->run_known = true;
	return used;
}

/* TH's state; *OS: the kernel's state letter of its task where the state
   or a CPU profile needs it (a read of /proc a thread a tick), else 0. */
static rbi_sample_state classify(struct rbi_sampler *s, const struct rbi_vm_sthread *th,
				 char *os)
{
	*os = 0;
	if (th->gvl) {
		if (s->opts.flags & RBI_SAMPLER_CPU)
			*os = os_state(s, th->tid);
		return RBI_STATE_GVL;
	}
	/* Queued for the GVL: 'R' too once woken to take it, or spinning
	   for it; not the code it waits to run. */
	if (th->gvl_wait)
		return RBI_STATE_GVL_WAIT;
	/* C code run without the GVL (rb_nogvl: zlib, bcrypt...) leaves the
	   thread "stopped" for Ruby, as a sleep does: only the kernel tells
	   the one on a CPU from the one asleep. */
	*os = os_state(s, th->tid);
	if (*os == 'R')
		return RBI_STATE_RUNNING;
	if (th->status != RBI_THREAD_RUNNABLE)
		return RBI_STATE_SLEEPING;
	return *os ? RBI_STATE_WAITING : RBI_STATE_UNKNOWN;
}

/* Whether a thread in STATE whose task is in state OS and ran USED ns
   since the last tick is on a CPU now: runnable ('R' is also "on the run
   queue": it must have run since the last tick) and not queued for the
   GVL. */
static bool on_cpu(rbi_sample_state state, char os, uint64_t used)
{
	return os == 'R' && used > 0 && state != RBI_STATE_GVL_WAIT;
}

static bool process_gone(pid_t pid)
{
	char path[64], state;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	return rbi_proc_stat(path, &state, NULL) || state == 'Z' || state == 'X';
}

static int schedstat_check(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
	if (access(path, R_OK))
		return rbi_fail(RBI_UNSUPPORTED, "CPU time needs the scheduler's run time of "
				"each thread (%s: %s; a kernel with CONFIG_SCHED_INFO)",
				path, strerror(errno));
	return RBI_OK;
}

static int native_new(struct rbi_sampler *s)
{
	if (s->opts.flags & RBI_SAMPLER_PAUSE)
		return rbi_fail(RBI_INVAL, "native frames are read from each thread held "
				"on its own; they do not go with pausing the process");
	return rbi_native_sampler_new(s->t, &s->native);
}

RBI_EXPORT int rbi_sampler_new(rbi_target *t, const struct rbi_sampler_opts *opts,
			       rbi_sampler **out)
{
	struct rbi_sampler *s;
	int rc;

	if (!t || !out)
		return rbi_fail(RBI_INVAL, "no target");
	if (!rbi_target_is_live(t))
		return rbi_fail(RBI_UNSUPPORTED, "sampling needs a live process, not a core");
	if (!(s = calloc(1, sizeof(*s))))
		return rbi_fail(RBI_NOMEM, "out of memory");
	s->t = t;
	s->pid = rbi_target_pid(t);
	RBI_COPY_IN(&s->opts, opts);    /* defaults: 0 */
	s->same_pidns = rbi_proc_same_pidns(s->pid);
	s->last_ns = rbi_now_ns();
	if (((s->opts.flags & RBI_SAMPLER_CPU) && (rc = schedstat_check(s->pid))) ||
	    (rc = rbi_vm_sampler_new(t, &s->vs)) ||
	    ((s->opts.flags & RBI_SAMPLER_PAUSE) && (rc = rbi_pause_new(s->pid, &s->pause))) ||
	    ((s->opts.flags & RBI_SAMPLER_NATIVE) && (rc = native_new(s)))) {
		rbi_sampler_free(s);
		return rc;
	}
	*out = s;
	return RBI_OK;
}

RBI_EXPORT void rbi_sampler_free(rbi_sampler *s)
{
	if (!s)
		return;
	rbi_pause_free(s->pause);
	rbi_native_sampler_free(s->native);
	free(s->native_reads);
	rbi_vm_sampler_free(s->vs);
	tasks_close(s);
	free(s->tasks);
	free(s->states);
	free(s->wanted);
	free(s->weights);
	free(s);
}

RBI_EXPORT void rbi_sampler_stats(const rbi_sampler *s, struct rbi_sample_stats *out)
{
	if (!out)
		return;
	*out = s ? s->st : (struct rbi_sample_stats){ 0 };
	if (s)
		out->rescans = rbi_vm_sampler_rescans(s->vs);
}

void rbi_sampler_skip(rbi_sampler *s, uint64_t ns)
{
	if (s)
		s->skip_ns += ns;
}

static int scratch(struct rbi_sampler *s, size_t n)
{
	if (n <= s->scratch_cap)
		return RBI_OK;
	rbi_sample_state *st = realloc(s->states, n * sizeof(*st));
	if (!st)
		return rbi_fail(RBI_NOMEM, "out of memory");
	s->states = st;
	bool *w = realloc(s->wanted, n * sizeof(*w));
	if (!w)
		return rbi_fail(RBI_NOMEM, "out of memory");
	s->wanted = w;
	uint64_t *wt = realloc(s->weights, n * sizeof(*wt));
	if (!wt)
		return rbi_fail(RBI_NOMEM, "out of memory");
	s->weights = wt;
	const struct rbi_native_sample **nr = realloc(s->native_reads, n * sizeof(*nr));
	if (!nr)
		return rbi_fail(RBI_NOMEM, "out of memory");
	s->native_reads = nr;
	s->scratch_cap = n;
	return RBI_OK;
}

/* Every wanted thread's merged stack, each thread held while it is read
   (by our tid for it: the target may be in another pid namespace). */
static int native_read(struct rbi_sampler *s, struct rbi_vm_sthread *th, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct rbi_vm_sthread *v = &th[i];
		const struct ostask *task = v->tid > 0 ? task_find(s, v->tid) : NULL;
		struct rbi_thread t = {
			.number = v->number, .thread = v->thread, .ractor = v->ractor,
			.ec = v->ec, .tid = v->tid, .status = v->status,
			.name = v->name, .main = v->main, .gvl = v->gvl,
		};

		s->native_reads[i] = NULL;
		if (!s->wanted[i] || v->poll_rc)
			continue;
		if (!(s->native_reads[i] = rbi_native_sample_read(s->native, &t,
								  task ? task->host : 0, i,
								  s->opts.max_frames)))
			return rbi_fail(RBI_NOMEM, "out of memory");
	}
	return RBI_OK;
}

/* The merged stack in place of the fast path's, when it was read; the
   fast path's Ruby stack, with the reason, when not. */
static void native_pick(struct rbi_sample *smp, const struct rbi_native_sample *r)
{
	if (!r) {
		smp->native_unmerged = "the thread could not be read";
		return;
	}
	smp->stopped_ns = r->stopped_ns;
	smp->native = r->merged;
	if (!r->merged)
		smp->native_unmerged = r->why;
	if (r->rc != RBI_OK)
		return;
	smp->status = RBI_OK;
	smp->truncated = r->truncated;
	smp->nframes = r->n;
	smp->frames = (const struct rbi_sample_frame *const *)r->frames;
}

RBI_EXPORT int rbi_sampler_sample(rbi_sampler *s, rbi_sample_fn fn, void *arg)
{
	struct rbi_vm_sthread *th;
	uint64_t t0, t1, rescans;
	size_t n;
	int rc;

	if (!s || !fn)
		return rbi_fail(RBI_INVAL, "no sampler or callback");
	t0 = rbi_now_ns();
	if (s->pause && (rc = rbi_pause_stop(s->pause)))
		return rc;
	rc = rbi_vm_sampler_poll(s->vs, &th, &n);
	if (!rc && (rescans = rbi_vm_sampler_rescans(s->vs)) != s->rescans_seen) {
		tasks_update(s, th, n);
		s->rescans_seen = rescans;
	}
	if (!rc)
		rc = scratch(s, n);
	if (!rc) {
		for (size_t i = 0; i < n; i++) {
			char os;

			s->states[i] = classify(s, &th[i], &os);
			s->weights[i] = rbi_ticks_weight(t0 - s->last_ns, t0 - s->last_ns,
							 s->skip_ns);
			if (s->opts.flags & RBI_SAMPLER_CPU)
				s->wanted[i] = on_cpu(s->states[i], os,
						      cpu_used(s, th[i].tid));
			else
				s->wanted[i] = !rbi_sample_state_idle(s->states[i]) ||
					       (s->opts.flags & RBI_SAMPLER_IDLE);
			th[i].want = s->wanted[i];
			if (!s->wanted[i])
				s->st.idle++;
		}
		rc = rbi_vm_sampler_read(s->vs, s->opts.max_frames, TORN_RETRIES);
	}
	if (!rc && s->native)
		rc = native_read(s, th, n);
	if (s->pause)
		rbi_pause_resume(s->pause);
	t1 = rbi_now_ns();
	s->st.samples++;
	s->st.total_ns += t1 - t0;
	if (t1 - t0 > s->st.max_ns)
		s->st.max_ns = t1 - t0;
	if (rc) {
		if (rc == RBI_NOMEM || rc == RBI_PERM || rc == RBI_BUSY)
			return rc;
		if (rc == RBI_GONE || process_gone(s->pid))
			return rbi_fail(RBI_GONE, "process %d has exited", (int)s->pid);
		/* The VM's own lists could not be read this time (threads
		   starting or ending): a lost sample, not the end. */
		s->st.errors++;
		return RBI_OK;
	}
	/* Time lost to a tick that failed goes to the next one. */
	s->last_ns = t0;
	s->skip_ns = 0;
	for (size_t i = 0; i < n; i++) {
		struct rbi_vm_sthread *t = &th[i];
		struct rbi_sample smp;

		if (!s->wanted[i])
			continue;
		smp = (struct rbi_sample){
			.pid = s->pid, .time_ns = t0, .thread_number = t->number,
			.thread = t->thread, .tid = t->tid, .thread_name = t->name,
			.main = t->main, .state = s->states[i], .gc = t->gc, .status = t->rc,
			.truncated = t->truncated, .fiber = t->fiber, .root_fiber = t->root_fiber,
			.nframes = t->rc ? 0 : t->nframes,
			.frames = (const struct rbi_sample_frame *const *)t->frames,
			.weight_ns = s->weights[i],
		};
		if (s->native)
			native_pick(&smp, s->native_reads[i]);
		s->st.retries += t->retries;
		if (smp.status == RBI_TORN)
			s->st.torn++;
		else if (smp.status)
			s->st.errors++;
		else
			s->st.stacks++;
		if ((rc = fn(&smp, arg)))
			return rc;
	}
	return RBI_OK;
}
