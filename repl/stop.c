/* stop.c: a long command (a heap walk, a recording) ends cleanly on a
 * terminating signal: the signal sets stop_requested instead of killing
 * rbinspect, and the command finishes its work (resumes a paused target,
 * writes the profile). */
#include <signal.h>

#include "rbinspect.h"

volatile sig_atomic_t stop_requested;

/* STOP_ON_INT_TERM takes the first two, STOP_ON_ALL all of them. */
static const int stop_signals[STOP_ON_ALL] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE };

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

void stop_guard_begin(struct stop_guard *g, size_t nsignals)
{
	struct sigaction sa = { .sa_handler = on_stop };

	sigemptyset(&sa.sa_mask);       /* no SA_RESTART: end the sleep */
	stop_requested = 0;
	g->n = nsignals < STOP_ON_ALL ? nsignals : STOP_ON_ALL;
	for (size_t i = 0; i < g->n; i++)
		sigaction(stop_signals[i], &sa, &g->old[i]);
}

void stop_guard_end(const struct stop_guard *g)
{
	for (size_t i = 0; i < g->n; i++)
		sigaction(stop_signals[i], &g->old[i], NULL);
}
