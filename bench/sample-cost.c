/* sample-cost.c PID [SECONDS] [IDLE]: the cost of rbi_sampler_sample on a live
 * process, back to back (the highest rate one thread of rbinspect reaches):
 * samples per second, and the cost per sample as mean, median, 99th
 * percentile and max in microseconds, plus the frames of the last stack.
 * Built and run by bench/profile.sh; uses only the public API. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ruby-introspect.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static size_t frames;

static int count(const struct rbi_sample *s, void *arg)
{
	(void)arg;
	if (s->status == RBI_OK && s->nframes > frames)
		frames = s->nframes;
	return 0;
}

int main(int argc, char **argv)
{
	struct rbi_sampler_opts so = { .size = sizeof(so) };
	struct rbi_sample_stats st;
	double seconds = argc > 2 ? atof(argv[2]) : 2.0;
	size_t n = 0, cap = 1 << 20;
	uint64_t *cost = malloc(cap * sizeof(*cost)), start, end, sum = 0;
	rbi_sampler *s;
	rbi_target *t;

	if (argc < 2 || !cost) {
		fprintf(stderr, "usage: sample-cost PID [SECONDS] [idle]\n");
		return 2;
	}
	if (argc > 3)
		so.flags |= RBI_SAMPLER_IDLE;
	if (rbi_target_open_pid(atoi(argv[1]), NULL, &t) || rbi_sampler_new(t, &so, &s)) {
		fprintf(stderr, "sample-cost: %s\n", rbi_errmsg());
		return 1;
	}
	/* Warm up: the first samples decode every frame. */
	for (int i = 0; i < 100; i++)
		rbi_sampler_sample(s, count, NULL);
	start = now_ns();
	end = start + (uint64_t)(seconds * 1e9);
	for (uint64_t t0 = start; t0 < end && n < cap;) {
		if (rbi_sampler_sample(s, count, NULL)) {
			fprintf(stderr, "sample-cost: %s\n", rbi_errmsg());
			return 1;
		}
		uint64_t t1 = now_ns();
		cost[n++] = t1 - t0;
		sum += t1 - t0;
		t0 = t1;
	}
	qsort(cost, n, sizeof(*cost), cmp);
	rbi_sampler_stats(s, &st);
	printf("samples_per_s %.0f\nmean_us %.2f\nmedian_us %.2f\np99_us %.2f\nmax_us %.2f\n"
	       "frames %zu\ntorn %llu\nerrors %llu\nrescans %llu\n",
	       (double)n / ((double)sum / 1e9), (double)sum / (double)n / 1e3,
	       (double)cost[n / 2] / 1e3, (double)cost[n * 99 / 100] / 1e3,
	       (double)cost[n - 1] / 1e3, frames, (unsigned long long)st.torn,
	       (unsigned long long)st.errors, (unsigned long long)st.rescans);
	rbi_sampler_free(s);
	rbi_target_free(t);
	return 0;
}
