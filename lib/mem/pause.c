/* pause.c: stopping a live target for a consistent snapshot.
 *
 * SIGSTOP stops every thread of the process without attaching to it (no
 * ptrace: a debugger or profiler may hold that), and SIGCONT resumes it.
 * The signal is asynchronous, so pausing waits until /proc/PID/task/ *
 * all report a stopped state; a thread stuck in the kernel (state D)
 * stops when it leaves, so the wait is bounded and the caller's own
 * checks (a heap walk's GC count) catch what still moved. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* 2000 polls 1 ms apart. */
#define PAUSE_POLLS 2000
#define PAUSE_POLL_NS 1000000L
#define TASKS_MAX 100000

/* Is every task of PID stopped?  -1 if the process is gone. */
static int all_stopped(pid_t pid)
{
	char path[64];
	struct dirent *e;
	DIR *d;
	int stopped = 1, seen = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (!(d = opendir(path)))
		return -1;
	while ((e = readdir(d)) && seen < TASKS_MAX) {
		char stat[320], buf[512], *p;
		FILE *f;
		size_t n;

		if (e->d_name[0] == '.')
			continue;
		snprintf(stat, sizeof(stat), "/proc/%d/task/%s/stat", (int)pid, e->d_name);
		if (!(f = fopen(stat, "re")))
			continue;       /* the thread exited */
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = '\0';
		seen++;
		/* "tid (comm) S ...": comm may hold ')' itself. */
		if (!(p = strrchr(buf, ')')) || p[1] != ' ')
			continue;
		switch (p[2]) {
		case 'T': case 't':     /* stopped, tracing stop */
		case 'Z': case 'X':     /* exited threads do not run */
			break;
		default:
			stopped = 0;
		}
	}
	closedir(d);
	return seen ? stopped : -1;
}

RBI_EXPORT int rbi_target_pause(rbi_target *t, int *stopped)
{
	struct timespec ts = { 0, PAUSE_POLL_NS };
	int st;

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
	if (st > 0) {
		t->paused = 2;
		rbi_cache_clear(&t->cache);
		return RBI_OK;
	}
	if (kill(t->pid, SIGSTOP) != 0)
		return errno == ESRCH ? rbi_fail(RBI_GONE, "process %d has exited", (int)t->pid)
		       : rbi_fail(RBI_PERM, "cannot stop process %d: %s", (int)t->pid,
				  strerror(errno));
	t->paused = 1;
	if (stopped)
		*stopped = 1;
	for (int i = 0; i < PAUSE_POLLS && (st = all_stopped(t->pid)) == 0; i++)
		nanosleep(&ts, NULL);
	rbi_cache_clear(&t->cache);
	if (st < 0) {
		t->paused = 0;
		return rbi_fail(RBI_GONE, "process %d has exited", (int)t->pid);
	}
	if (st == 0)
		rbi_diag_add(&t->diag, "process %d: not every thread stopped within "
			     "2 s of SIGSTOP", (int)t->pid);
	return RBI_OK;
}

RBI_EXPORT int rbi_target_resume(rbi_target *t)
{
	int was;

	if (!t || !t->paused)
		return RBI_OK;
	was = t->paused;
	t->paused = 0;
	rbi_cache_clear(&t->cache);
	if (was == 1 && kill(t->pid, SIGCONT) != 0 && errno != ESRCH)
		return rbi_fail(RBI_PERM, "cannot resume process %d: %s", (int)t->pid,
				strerror(errno));
	return RBI_OK;
}
