/* test-ticks.c: a recording's clock (lib/profile/ticks.c) on made-up
 * times: which ticks are late, how many they missed, and what their
 * samples weigh.  A loaded machine's schedule (ticks a little late, very
 * late, catching up, failing) must leave no sample standing for more than
 * about 2.5 periods, and the weights plus the missed ticks' periods must
 * be the time recorded, to the nanosecond. */
#include <stdint.h>

#include "profile/ticks.h"
#include "tap.h"

#define P 1000000ull            /* 1 ms */

/* The totals of a run of ticks: the weights' sum and largest, the ticks
   whose samples were delivered, the last of them. */
struct run {
	uint64_t sum, max, taken, end;
	struct rbi_ticks t;
};

/* One tick after another, each taken DELAY[i] after it was due (a
   nanosecond count); FAIL[i]: the tick read nothing, its time goes to the
   next (as rbi_sampler_sample does). */
static void schedule(struct run *r, const uint64_t *delay, const int *fail, size_t n)
{
	uint64_t last = 0, skip = 0;
	uint64_t rng = 42;

	*r = (struct run){ 0 };
	rbi_ticks_start(&r->t, P, 0);
	for (size_t i = 0; i < n; i++) {
		/* Taken once due, and never before the previous one. */
		uint64_t now = (r->t.due > r->t.last ? r->t.due : r->t.last) + delay[i], w;

		skip += rbi_ticks_take(&r->t, now);
		if (!fail || !fail[i]) {
			w = rbi_ticks_weight(now - last, now - last, skip);
			r->sum += w;
			if (w > r->max)
				r->max = w;
			last = now;
			skip = 0;
			r->taken++;
		}
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		rbi_ticks_next(&r->t, (double)(rng >> 11) / 9007199254740992.0);
	}
	r->end = last;
}

static void test_on_time(void)
{
	uint64_t delay[200] = { 0 };
	struct run r;

	for (size_t i = 0; i < 200; i++)
		delay[i] = i % 7 == 3 ? P / 2 : 0;      /* late, but less than a period */
	schedule(&r, delay, NULL, 200);
	ok(r.t.late == 0 && r.t.missed == 0, "on time: nothing late, nothing missed");
	ok(r.sum == r.end, "on time: the weights are the time recorded (%llu of %llu ns)",
	   (unsigned long long)r.sum, (unsigned long long)r.end);
	ok(r.max <= 2 * P, "on time: no sample over 2 periods (%llu ns)", (unsigned long long)r.max);
}

static void test_loaded(void)
{
	/* A loaded machine: most ticks on time, some up to a period late
	   (caught up), some a few periods late, two stalls of 300 and 57.9
	   periods, and reads that fail now and then. */
	uint64_t delay[400];
	int fail[400];
	uint64_t late = 0;
	struct run r;

	for (size_t i = 0; i < 400; i++) {
		delay[i] = i == 100 ? 300 * P : i == 250 ? 579 * P / 10 :
			   i % 13 == 5 ? 3 * P + P / 3 : i % 5 == 1 ? 9 * P / 10 : 0;
		fail[i] = i % 17 == 8 || i == 101;
		late += delay[i] > P;
	}
	schedule(&r, delay, fail, 400);
	ok(r.t.late == late, "loaded: %llu ticks late (want %llu)", (unsigned long long)r.t.late,
	   (unsigned long long)late);
	ok(r.t.missed >= 300 + 57 + 3 * (late - 2), "loaded: %llu ticks missed",
	   (unsigned long long)r.t.missed);
	ok(r.sum + r.t.missed * P == r.end,
	   "loaded: weights + missed periods = the time recorded (%llu + %llu = %llu ns)",
	   (unsigned long long)r.sum, (unsigned long long)(r.t.missed * P),
	   (unsigned long long)r.end);
	/* Two intervals at most (a failed read's goes to the next), each at
	   most 1.5 periods on time and under a period of lateness. */
	ok(r.max < 5 * P, "loaded: the heaviest sample weighs %.2f periods, not 300",
	   (double)r.max / (double)P);
}

static void test_catch_up(void)
{
	/* A tick 0.9 periods late leaves the next due before it was taken;
	   one taken 1.2 periods after that due came only a little after the
	   previous tick: it cannot have missed more than the time since. */
	struct rbi_ticks t;
	uint64_t skip;

	rbi_ticks_start(&t, P, 0);
	rbi_ticks_take(&t, 9 * P / 10);
	rbi_ticks_next(&t, 0.0);                        /* due at 0.5 P */
	skip = rbi_ticks_take(&t, 17 * P / 10);         /* 1.2 P late, 0.8 P after */
	ok(t.late == 1 && t.missed == 0 && skip == 0,
	   "catching up: late, but no tick missed in the 0.8 periods since the last");
	ok(rbi_ticks_weight(8 * P / 10, 8 * P / 10, skip) == 8 * P / 10,
	   "catching up: its sample stands for its whole interval");
}

static void test_weight(void)
{
	ok(rbi_ticks_weight(7 * P, 7 * P, 0) == 7 * P, "weight: on time, the whole interval");
	ok(rbi_ticks_weight(302 * P, 302 * P, 300 * P) == 2 * P,
	   "weight: 300 periods missed of 302, two periods left");
	ok(rbi_ticks_weight(151 * P, 302 * P, 300 * P) == P,
	   "weight: CPU time half the interval, half of what is left");
	ok(rbi_ticks_weight(P, P, 2 * P) == 0, "weight: more missed than the interval: nothing");
}

int main(void)
{
	test_on_time();
	test_loaded();
	test_catch_up();
	test_weight();
	return tap_plan();
}
