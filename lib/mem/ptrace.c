/* ptrace.c: stopping the threads of a live process, with ptrace: all of
 * them around each sample (record --pause) and for a whole walk
 * (rbi_target_pause), or one while its native stack is read.
 *
 * Every task is attached with PTRACE_SEIZE, which leaves it running; a
 * stop interrupts each one with PTRACE_INTERRUPT and waits for that stop,
 * and PTRACE_CONT lets it go.  Nothing is sent to the process (no SIGSTOP
 * its parent or shell would see), and should the caller die, the kernel
 * detaches and the process runs on.  A signal that arrives meanwhile is passed on at
 * once.  Tasks that appear are attached at the next stop; tasks that exit
 * are forgotten.  The requests must all come from the one thread that
 * attached (ptrace's rule). */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <elf.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "arch/arch.h"
#include "internal.h"

#define TASKS_MAX 100000
/* How long a task may take to stop once interrupted: one that takes
   longer (its process is exiting, the machine is swapping) is left. */
#define WAIT_STOP_NS 10000000000ull

struct task {
	pid_t tid;
	bool seen;              /* in /proc/PID/task at the last listing */
	bool stopped;           /* in our interrupt stop */
	bool gone;              /* its end was taken */
};

struct rbi_pause {
	pid_t pid;
	struct task *t;
	size_t n, cap;
};

/* Task TID of PID is exiting or gone: no /proc/PID/task/TID/stat, a zombie
   or dead state, or the kernel's PF_EXITING flag (0x4, the stat's ninth
   field), for which PTRACE_SEIZE fails with EPERM as for a traced task. */
static bool task_exiting(pid_t pid, pid_t tid)
{
	char path[64], buf[512], state;
	unsigned long flags;
	const char *rp;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	if (!(f = fopen(path, "re")))
		return true;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	/* The name, in parentheses, may hold anything: the fields follow the
	   last ')'. */
	if (!(rp = strrchr(buf, ')')) ||
	    sscanf(rp + 1, " %c %*d %*d %*d %*d %*d %lu", &state, &flags) != 2)
		return n == 0;
	return state == 'Z' || state == 'X' || (flags & 0x4);
}

/* The process tracing task TID of PID (TracerPid), 0 if none or unknown. */
static pid_t task_tracer(pid_t pid, pid_t tid)
{
	char path[96], line[128];
	pid_t tracer = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	if (!(f = fopen(path, "re")))
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "TracerPid:", 10)) {
			tracer = (pid_t)strtol(line + 10, NULL, 10);
			break;
		}
	fclose(f);
	return tracer;
}

/* PTRACE_SEIZE task TID of PID, for PURPOSE ("to pause it (--pause)").
   RBI_GONE if it is gone already, or exiting. */
static int task_seize(pid_t pid, pid_t tid, const char *purpose)
{
	pid_t tracer;
	int err;

	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) == 0)
		return RBI_OK;
	err = errno;
	if (err == ESRCH || (err == EPERM && task_exiting(pid, tid)))
		return RBI_GONE;
	if (err == EPERM && (tracer = task_tracer(pid, tid)) > 0)
		return rbi_fail(RBI_BUSY, "cannot attach to task %d of process %d %s: it is "
				"traced already, by process %d (a debugger?): detach it, or read "
				"it from there (gdb's rb-bt) or from a core (gcore)", (int)tid,
				(int)pid, purpose, (int)tracer);
	if (err == EPERM)
		return rbi_fail(RBI_PERM, "cannot attach to task %d of process %d %s: "
				"ptrace is not allowed (run as root or with CAP_SYS_PTRACE; "
				"kernel.yama.ptrace_scope)", (int)tid, (int)pid, purpose);
	return rbi_fail(RBI_SYSTEM, "PTRACE_SEIZE %d: %s", (int)tid, strerror(err));
}

static int seize(struct rbi_pause *p, pid_t tid)
{
	int rc;

	if (!RBI_GROW(p->t, p->cap, p->n + 1, 16))
		return rbi_fail(RBI_NOMEM, "out of memory");
	rc = task_seize(p->pid, tid, "to pause it (--pause)");
	if (rc == RBI_GONE)
		return RBI_OK;
	if (rc)
		return rc;
	p->t[p->n++] = (struct task){ .tid = tid, .seen = true };
	return RBI_OK;
}

/* Attach tasks not attached yet; forget those that are gone. */
static int list_tasks(struct rbi_pause *p)
{
	struct rbi_proc_tasks dir;
	int rc = RBI_OK, tid;

	if (rbi_proc_tasks_open(&dir, (int)p->pid))
		return rbi_fail(RBI_GONE, "process %d has exited", (int)p->pid);
	for (size_t i = 0; i < p->n; i++)
		p->t[i].seen = false;
	while (!rc && (tid = rbi_proc_tasks_next(&dir))) {
		size_t i;

		for (i = 0; i < p->n && p->t[i].tid != tid; i++)
			;
		if (i < p->n)
			p->t[i].seen = true;
		else if (p->n < TASKS_MAX)
			rc = seize(p, (pid_t)tid);
	}
	rbi_proc_tasks_close(&dir);
	for (size_t i = 0; i < p->n;)
		if (!p->t[i].seen)
			p->t[i] = p->t[--p->n];
		else
			i++;
	return rc;
}

int rbi_pause_new(pid_t pid, struct rbi_pause **out)
{
	struct rbi_pause *p = calloc(1, sizeof(*p));
	int rc;

	if (!p)
		return rbi_fail(RBI_NOMEM, "out of memory");
	p->pid = pid;
	if ((rc = list_tasks(p))) {
		rbi_pause_free(p);
		return rc;
	}
	*out = p;
	return RBI_OK;
}

/* Take TASK's pending wait status, if any, without blocking: its
   interrupt stop (TASK->stopped), its end (TASK->gone), or a signal on its
   way to it, which is delivered at once (the pending interrupt stops the
   task right after).  False when there was nothing to take. */
static bool take_status(struct task *task)
{
	int st;
	pid_t r = waitpid(task->tid, &st, __WALL | WNOHANG);

	if (r < 0 && errno != EINTR) {
		task->gone = true;      /* ECHILD: not ours any more */
		return true;
	}
	if (r <= 0)
		return false;
	if (WIFEXITED(st) || WIFSIGNALED(st))
		task->gone = true;
	else if (WIFSTOPPED(st) && (st >> 16) == PTRACE_EVENT_STOP)
		task->stopped = true;
	else if (WIFSTOPPED(st))
		ptrace(PTRACE_CONT, task->tid, NULL, (void *)(long)WSTOPSIG(st));
	return true;
}

/* Wait for TASK's interrupt stop, at most WAIT_STOP_NS; false if it is
   gone or did not stop.  Meanwhile the statuses of OTHERS (N tasks of the
   same process, TASK may be among them) are taken too: when a process
   exits, the kernel reports its main thread's end only after the tracer
   has taken the end of every other thread it traces, so waiting on one
   task alone can wait for ever. */
static bool wait_stop(struct task *task, struct task *others, size_t n)
{
	uint64_t deadline = rbi_now_ns() + WAIT_STOP_NS;
	const struct timespec pause = { 0, 50000 };

	while (!task->stopped && !task->gone) {
		if (take_status(task))
			continue;
		for (size_t i = 0; i < n; i++)
			if (&others[i] != task && !others[i].gone)
				while (take_status(&others[i]) && !others[i].gone)
					;
		if (rbi_now_ns() > deadline)
			break;
		nanosleep(&pause, NULL);
	}
	return task->stopped;
}

int rbi_pause_stop(struct rbi_pause *p)
{
	int rc;

	if ((rc = list_tasks(p)))
		return rc;
	for (size_t i = 0; i < p->n; i++) {
		p->t[i].stopped = false;
		ptrace(PTRACE_INTERRUPT, p->t[i].tid, NULL, NULL);
	}
	for (size_t i = 0; i < p->n; i++)
		if (!wait_stop(&p->t[i], p->t, p->n))
			p->t[i].seen = false;
	return RBI_OK;
}

void rbi_pause_resume(struct rbi_pause *p)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->t[i].stopped) {
			ptrace(PTRACE_CONT, p->t[i].tid, NULL, NULL);
			p->t[i].stopped = false;
		}
}

void rbi_pause_free(struct rbi_pause *p)
{
	if (!p)
		return;
	/* PTRACE_DETACH needs a stopped task. */
	for (size_t i = 0; i < p->n; i++) {
		if (p->t[i].gone)
			continue;
		if (!p->t[i].stopped) {
			ptrace(PTRACE_INTERRUPT, p->t[i].tid, NULL, NULL);
			if (!wait_stop(&p->t[i], p->t, p->n))
				continue;
		}
		ptrace(PTRACE_DETACH, p->t[i].tid, NULL, NULL);
	}
	free(p->t);
	free(p);
}

/* ---- one task, held still while its stack is read ------------------------ */

/* Task TID of PID is gone: RBI_THREAD_GONE while the process lives on,
   RBI_GONE once it has exited. */
static int task_gone(pid_t pid, pid_t tid)
{
	char path[32];

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (access(path, F_OK) != 0)
		return rbi_fail(RBI_GONE, "process %d has exited", (int)pid);
	return rbi_fail(RBI_THREAD_GONE, "thread %d of process %d has exited", (int)tid,
			(int)pid);
}

int rbi_task_hold(pid_t pid, pid_t tid)
{
	struct task task = { .tid = tid };
	char path[64];
	int rc;

	/* Never another process's thread, whatever a caller was told: TID must
	   be PID's before the seize and still after it (not a tid that exited
	   and was given to another process in between). */
	snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)pid, (int)tid);
	if (tid <= 0 || access(path, F_OK) != 0)
		return task_gone(pid, tid);
	rc = task_seize(pid, tid, "to read its native stack (--native)");
	if (rc == RBI_GONE)
		return task_gone(pid, tid);
	if (rc)
		return rc;
	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) != 0 || !wait_stop(&task, &task, 1) ||
	    access(path, F_OK) != 0) {
		ptrace(PTRACE_DETACH, tid, NULL, NULL);
		return task_gone(pid, tid);
	}
	return RBI_OK;
}

void rbi_task_release(pid_t tid)
{
	ptrace(PTRACE_DETACH, tid, NULL, NULL);
}

int rbi_task_registers(pid_t tid, struct rbi_registers *out)
{
	const struct rbi_arch *a = rbi_arch_host();
	uint64_t user[RBI_ARCH_USER_WORDS_MAX];
	struct iovec iov = { .iov_base = user, .iov_len = sizeof(user) };

	/* The regset a core's NT_PRSTATUS holds, in the same layout. */
	if (ptrace(PTRACE_GETREGSET, tid, (void *)(uintptr_t)NT_PRSTATUS, &iov) != 0)
		return rbi_fail(errno == ESRCH ? RBI_UNSUPPORTED : RBI_SYSTEM,
				"cannot read the registers of thread %d: %s", (int)tid,
				errno == ESRCH ? "it is not stopped by us (a debugger "
				"holds it? read a core of it: gcore)" : strerror(errno));
	if (iov.iov_len < a->user_words * 8)
		return rbi_fail(RBI_SYSTEM, "the registers of thread %d: %zu bytes, not the "
				"%u of %s", (int)tid, iov.iov_len, a->user_words * 8, a->name);
	rbi_arch_regs_from_user(a, (const unsigned char *)user, out);
	return RBI_OK;
}
