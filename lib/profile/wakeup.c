/* wakeup.c: a sampling loop that reads the stacks at its ticks, not at the
 * sampled thread's next system call.
 *
 * A normal task woken on the CPU where a sampled thread runs does not take
 * the CPU from it at once: the scheduler (EEVDF, lazy preemption) lets the
 * thread run on to its next entry into the kernel, and the sampler reads its
 * stack there, in a system call.  Samples then land on system calls far
 * beyond their time: marker.rb's Process.clock_gettime(CLOCK_THREAD_CPUTIME_ID),
 * 3 % of its time, was the leaf of 62 % of the samples with rbinspect on its
 * CPU and of 0.8 % with rbinspect on another (bench/marker-share.sh).  A
 * real-time (SCHED_FIFO) task's wakeup preempts a normal one at once, so the
 * stack read is the one the thread had at the tick.
 *
 * Bounded, since the sampled process must not pay for it: the lowest
 * real-time priority, not passed on to threads or commands the loop starts
 * (SCHED_RESET_ON_FORK); given up for good after a second in which the
 * ticks' work took more than DUTY_MAX_PERCENT of it (a sampler that needs
 * most of a CPU would take it from the threads it preempts); and
 * RLIMIT_RTTIME's SIGXCPU ends this process if it ever ran RTTIME_MAX_US
 * without sleeping (a loop gone wrong must not hold a CPU the target
 * needs).  Where the policy is not allowed (no CAP_SYS_NICE, no
 * RLIMIT_RTPRIO, a cgroup without real-time time), the loop runs as a
 * normal task and the profile says why. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "profile/wakeup.h"

#define DUTY_WINDOW_NS 1000000000ull    /* the ticks' work measured over 1 s */
#define DUTY_MAX_PERCENT 25
#define RTTIME_MAX_US 3000000ull        /* 3 s of CPU without sleeping (past a window) */

int rbi_wakeup_raise(struct rbi_wakeup *w)
{
	struct sched_param param = { .sched_priority = sched_get_priority_min(SCHED_FIFO) };
	struct rlimit lim;

	*w = (struct rbi_wakeup){ 0 };
	if (sched_getparam(0, &w->old_param) || (w->old_policy = sched_getscheduler(0)) < 0 ||
	    getrlimit(RLIMIT_RTTIME, &w->old_rttime)) {
		w->why = errno;
		return -1;
	}
	/* A thread its program made real-time already keeps its own priority. */
	if ((w->old_policy & ~SCHED_RESET_ON_FORK) == SCHED_FIFO ||
	    (w->old_policy & ~SCHED_RESET_ON_FORK) == SCHED_RR) {
		w->mode = RBI_WAKEUP_ALREADY;
		return 0;
	}
	/* The soft limit only (SIGXCPU ends this process): a hard limit lowered
	   could not be raised again without CAP_SYS_RESOURCE. */
	lim = w->old_rttime;
	if (lim.rlim_cur > RTTIME_MAX_US)
		lim.rlim_cur = RTTIME_MAX_US;
	if (setrlimit(RLIMIT_RTTIME, &lim)) {
		w->why = errno;
		return -1;
	}
	if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &param)) {
		w->why = errno;
		setrlimit(RLIMIT_RTTIME, &w->old_rttime);
		return -1;
	}
	w->mode = RBI_WAKEUP_RAISED;
	return 0;
}

void rbi_wakeup_lower(struct rbi_wakeup *w)
{
	if (w->mode != RBI_WAKEUP_RAISED)
		return;
	sched_setscheduler(0, w->old_policy, &w->old_param);
	setrlimit(RLIMIT_RTTIME, &w->old_rttime);
	w->mode = RBI_WAKEUP_NORMAL;
}

void rbi_wakeup_tick(struct rbi_wakeup *w, uint64_t start_ns, uint64_t end_ns)
{
	if (w->mode != RBI_WAKEUP_RAISED)
		return;
	if (!w->window_ns)
		w->window_ns = start_ns;
	w->busy_ns += end_ns - start_ns;
	if (end_ns - w->window_ns < DUTY_WINDOW_NS)
		return;
	if (w->busy_ns * 100 > (end_ns - w->window_ns) * DUTY_MAX_PERCENT) {
		rbi_wakeup_lower(w);
		w->mode = RBI_WAKEUP_DROPPED;
	}
	w->window_ns = end_ns;
	w->busy_ns = 0;
}

const char *rbi_wakeup_state(const struct rbi_wakeup *w, char *buf, size_t cap)
{
	switch (w->mode) {
	case RBI_WAKEUP_DROPPED:
		snprintf(buf, cap, "normal task after a second whose ticks took over "
			 "%d %% of a CPU", DUTY_MAX_PERCENT);
		break;
	case RBI_WAKEUP_RAISED:
	case RBI_WAKEUP_ALREADY:
		snprintf(buf, cap, "realtime");
		break;
	default:
		snprintf(buf, cap, "normal task (SCHED_FIFO: %s)", strerror(w->why));
		break;
	}
	return buf;
}
