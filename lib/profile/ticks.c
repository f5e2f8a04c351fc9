/* ticks.c: when a recording's ticks are due, which came late, and what
 * the samples of a late one weigh.
 *
 * Ticks are due at random intervals of 0.5 to 1.5 periods (the mean is the
 * period), so work in the target that repeats at the sampling rate cannot
 * hide between samples.  A tick taken more than a period after it was due
 * is late (a loaded machine, a slow read): the whole periods it came late
 * are ticks missed, counted, not made up for.
 *
 * Weights.  A sample stands for the time since the previous tick of its
 * process (wall time) or the CPU time its thread used meanwhile.  Given
 * whole, a tick taken 300 ms late on a 1 ms period would make one stack
 * weigh 300 samples' worth: on a loaded machine a few samples would hold
 * much of the profile (a heavy tail), each a single stack standing for an
 * interval nobody looked at.  So, as profilers that count a late sample
 * once (py-spy, the Firefox profiler's call tree of vernier's output), a
 * late tick stands only for the time it would have had on time: its
 * interval less its missed ticks' periods (at most about 2.5 periods are
 * left), a CPU-time sample the same share of its CPU time.  The missed
 * periods are in no sample: every format's total is the time recorded
 * less the missed ticks times the period (wall mode, per thread), and the
 * summary says how much that is. */
#include "profile/ticks.h"

void rbi_ticks_start(struct rbi_ticks *t, uint64_t period, uint64_t now)
{
	*t = (struct rbi_ticks){ .period = period ? period : 1, .due = now, .last = now };
}

uint64_t rbi_ticks_take(struct rbi_ticks *t, uint64_t now)
{
	uint64_t k = 0, since = now - t->last;

	if (now > t->due && now - t->due > t->period) {
		k = (now - t->due) / t->period;
		/* A tick due before the previous one was taken (catching up
		   after one slightly late) missed no more than the time since. */
		if (k > since / t->period)
			k = since / t->period;
		t->late++;
		t->missed += k;
		t->due = now;
	}
	t->last = now;
	return k * t->period;
}

void rbi_ticks_next(struct rbi_ticks *t, double jitter)
{
	t->due += (uint64_t)((double)t->period * (0.5 + jitter));
}

uint64_t rbi_ticks_weight(uint64_t stands, uint64_t interval, uint64_t skip)
{
	if (!skip)
		return stands;
	if (skip >= interval)
		return 0;
	if (stands == interval)
		return interval - skip;
	return (uint64_t)((double)stands * (double)(interval - skip) / (double)interval);
}
