/* pause.c: stopping a live target for a consistent snapshot.
 *
 * Every thread is stopped with ptrace (ptrace.c), not SIGSTOP: nothing is
 * sent that the process's parent or shell would see, the stop is known
 * when it happened (no polling), and if we die while it is stopped (a
 * crash, SIGKILL, the OOM killer) the kernel lets it go, where a SIGSTOP
 * would leave it stopped for good.  A process that is stopped already
 * (job control, a debugger) is left as it is. */
#define _GNU_SOURCE
#include <stdio.h>

#include "internal.h"
#include "mem/target.h"

#define TASKS_MAX 100000

/* Is every task of PID stopped?  -1 if the process is gone. */
static int all_stopped(pid_t pid)
{
	struct rbi_proc_tasks d;
	int stopped = 1, seen = 0, tid;

	if (rbi_proc_tasks_open(&d, (int)pid))
		return -1;
	while (seen < TASKS_MAX && (tid = rbi_proc_tasks_next(&d))) {
		char stat[64], state;

		snprintf(stat, sizeof(stat), "/proc/%d/task/%d/stat", (int)pid, tid);
		if (rbi_proc_stat(stat, &state, NULL))
			continue;       /* the thread exited */
		seen++;
		switch (state) {
		case 'T': case 't':     /* stopped, tracing stop */
		case 'Z': case 'X':     /* exited threads do not run */
			break;
		default:
			stopped = 0;
		}
	}
	rbi_proc_tasks_close(&d);
	return seen ? stopped : -1;
}

RBI_EXPORT int rbi_target_pause(rbi_target *t, int *stopped)
{
	int st, rc;

	if (stopped)
		*stopped = 0;
	if (!t)
		return rbi_fail(RBI_INVAL, "no target");
	if (!t->live || t->pid <= 0)
		return rbi_fail(RBI_UNSUPPORTED, "only a live process can be paused");
	if (t->paused)
		return RBI_OK;
	st = all_stopped(t->pid);
	if (st < 0)
		return rbi_fail(RBI_GONE, "process %d has exited", (int)t->pid);
	if (st == 0) {
		if ((rc = rbi_pause_new(t->pid, &t->pause)))
			return rc;
		if ((rc = rbi_pause_stop(t->pause))) {
			rbi_pause_free(t->pause);
			t->pause = NULL;
			return rc;
		}
	}
	t->paused = st ? RBI_PAUSED_ALREADY : RBI_PAUSED_BY_US;
	if (stopped)
		*stopped = !st;
	rbi_cache_clear(&t->cache);
	return RBI_OK;
}

RBI_EXPORT int rbi_target_resume(rbi_target *t)
{
	if (!t || !t->paused)
		return RBI_OK;
	t->paused = RBI_NOT_PAUSED;
	rbi_cache_clear(&t->cache);
	/* Detaching lets every stopped thread run. */
	rbi_pause_free(t->pause);
	t->pause = NULL;
	return RBI_OK;
}
