/* test-wakeup.c: the sampling loop's real-time scheduling
 * (lib/profile/wakeup.c) on this thread: raised to SCHED_FIFO with
 * SCHED_RESET_ON_FORK and RLIMIT_RTTIME set where it may be, kept while the
 * ticks' work stays under a quarter of each second, given up for good
 * after a second over it, and everything as it was afterwards; a thread
 * already real-time is left as it is.  Made-up
 * tick times: no Ruby needed.  Without the privilege (CAP_SYS_NICE or
 * RLIMIT_RTPRIO) the state says why and the thread is left as it was. */
#define _GNU_SOURCE
#include <sched.h>
#include <string.h>
#include <sys/resource.h>

#include "profile/wakeup.h"
#include "tap.h"

#define MS 1000000ull

/* One second of ticks every 10 ms, each working WORK_NS, from START_NS. */
static uint64_t second_of_ticks(struct rbi_wakeup *w, uint64_t start_ns, uint64_t work_ns)
{
	uint64_t t = start_ns;

	for (int i = 0; i <= 100; i++, t += 10 * MS)
		rbi_wakeup_tick(w, t, t + work_ns);
	return t;
}

int main(void)
{
	struct rbi_wakeup w;
	struct rlimit before, during;
	char buf[96];
	uint64_t t;
	int policy = sched_getscheduler(0);

	getrlimit(RLIMIT_RTTIME, &before);
	if (rbi_wakeup_raise(&w)) {
		ok(w.mode == RBI_WAKEUP_NORMAL && w.why && !strncmp(rbi_wakeup_state(&w, buf, sizeof(buf)),
			"normal task (SCHED_FIFO: ", 25), "not allowed: the state says why (%s)", buf);
		ok(sched_getscheduler(0) == policy, "not allowed: the policy is as it was");
		skip("no real-time policy here (CAP_SYS_NICE or RLIMIT_RTPRIO)", "raised, kept, dropped");
		return tap_plan();
	}
	getrlimit(RLIMIT_RTTIME, &during);
	ok(sched_getscheduler(0) == (SCHED_FIFO | SCHED_RESET_ON_FORK),
	   "raised: SCHED_FIFO, not passed on to children");
	ok(during.rlim_cur > 0 && during.rlim_cur <= 3000000 && during.rlim_cur <= before.rlim_cur,
	   "raised: RLIMIT_RTTIME bounds a run without sleeping (%llu us)",
	   (unsigned long long)during.rlim_cur);
	t = second_of_ticks(&w, 1000 * MS, 2 * MS);
	ok(w.mode == RBI_WAKEUP_RAISED && !strcmp(rbi_wakeup_state(&w, buf, sizeof(buf)), "realtime"),
	   "ticks working 20 %% of a second: still real-time");
	second_of_ticks(&w, t, 3 * MS);
	ok(w.mode == RBI_WAKEUP_DROPPED && (sched_getscheduler(0) & ~SCHED_RESET_ON_FORK) == policy,
	   "ticks working 30 %% of a second: back to the policy it had, for good");
	ok(!strcmp(rbi_wakeup_state(&w, buf, sizeof(buf)),
		   "normal task after a second whose ticks took over 25 % of a CPU"), "and says so: %s", buf);
	getrlimit(RLIMIT_RTTIME, &during);
	ok(during.rlim_cur == before.rlim_cur && during.rlim_max == before.rlim_max,
	   "RLIMIT_RTTIME as it was");
	rbi_wakeup_lower(&w);
	ok(sched_getscheduler(0) == policy, "lowering again changes nothing");

	/* A thread its program made real-time keeps its priority. */
	struct sched_param own = { .sched_priority = 2 }, now;
	ok(!sched_setscheduler(0, SCHED_RR, &own) && !rbi_wakeup_raise(&w) &&
	   sched_getscheduler(0) == SCHED_RR && !sched_getparam(0, &now) &&
	   now.sched_priority == 2 && w.mode == RBI_WAKEUP_ALREADY &&
	   !strcmp(rbi_wakeup_state(&w, buf, sizeof(buf)), "realtime"),
	   "a thread real-time already: its policy and priority kept, the state realtime");
	rbi_wakeup_lower(&w);
	ok(sched_getscheduler(0) == SCHED_RR, "and kept after the loop");
	sched_setscheduler(0, policy, &(struct sched_param){ 0 });
	return tap_plan();
}
