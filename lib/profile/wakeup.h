/* wakeup.h: the sampling loop's scheduling (wakeup.c). */
#ifndef RBI_PROFILE_WAKEUP_H
#define RBI_PROFILE_WAKEUP_H

#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>

enum rbi_wakeup_mode {
	RBI_WAKEUP_NORMAL,      /* not allowed real-time: WHY says why */
	RBI_WAKEUP_RAISED,      /* the calling thread is SCHED_FIFO now */
	RBI_WAKEUP_DROPPED,     /* it was, until its ticks took too much */
	RBI_WAKEUP_ALREADY,     /* it was real-time before: left as it is */
};

struct rbi_wakeup {
	enum rbi_wakeup_mode mode;
	int why;                /* errno of the attempt that failed */
	int old_policy;
	struct sched_param old_param;
	struct rlimit old_rttime;
	uint64_t window_ns;     /* the second being measured began here */
	uint64_t busy_ns;       /* the ticks' work in it */
};

/* Make the calling thread a real-time one whose wakeups preempt the threads
   it samples: 0, or -1 with the reason in W->why (it stays as it was). */
int rbi_wakeup_raise(struct rbi_wakeup *w);
/* Back to the policy it had. */
void rbi_wakeup_lower(struct rbi_wakeup *w);
/* A tick worked from START_NS to END_NS: a second of ticks past the bound
   sends the thread back to normal for good. */
void rbi_wakeup_tick(struct rbi_wakeup *w, uint64_t start_ns, uint64_t end_ns);
/* "realtime", or "normal task (why)": the profile's "wakeup" metadata. */
const char *rbi_wakeup_state(const struct rbi_wakeup *w, char *buf, size_t cap);

#endif
