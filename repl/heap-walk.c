/* heap-walk.c: a heap walk as the heap commands (objects, heap-dump) run
 * it: with --pause, a live target is stopped for it (resumed on every way
 * out, and by the kernel should rbinspect die) and, if it stopped in the
 * middle of a GC, let go and stopped again; on a terminal, a progress
 * line. */
#include <inttypes.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "rbinspect.h"

/* Retries of --pause when the process stopped in the middle of a GC (an
   incremental GC of a busy heap can span many stops: up to about 1 s). */
#define PAUSE_TRIES 200
#define PAUSE_RETRY_NS 5000000L
/* Show a progress line on a terminal after this long, this often. */
#define PROGRESS_AFTER_NS 500000000ull
#define PROGRESS_EVERY_NS 100000000ull

static int pause_target(struct heap_walk *w)
{
	int stopped = 0;
	int rc;

	if (!w->pause)
		return RBI_OK;
	if ((rc = rbi_target_pause(w->s->target, &stopped)))
		return rc;
	w->paused = stopped;
	return RBI_OK;
}

/* Resume (if we paused) and keep the first error. */
static int resume_target(struct heap_walk *w, int rc)
{
	int r = w->paused ? rbi_target_resume(w->s->target) : RBI_OK;

	w->paused = false;
	return rc ? rc : r;
}

int heap_walk_begin(struct heap_walk *w)
{
	struct rbi_heap_stats st;
	int rc = RBI_OK;

	/* A core is a snapshot already. */
	w->pause = w->pause && w->s->live;
	w->start_ns = rbi_now_ns();
	for (int try = 0; try < PAUSE_TRIES; try++) {
		if ((rc = pause_target(w)))
			return rc;
		if (stop_requested)
			return resume_target(w, EXIT_INTERRUPTED);
		if ((rc = rbi_heap_iter_init(w->s->target, 0, &w->it)))
			return resume_target(w, rc);
		rbi_heap_iter_stats(w->it, &st);
		if (!w->paused || !st.moved || try + 1 == PAUSE_TRIES)
			return RBI_OK;
		/* Stopped in the middle of a GC: let it finish. */
		rbi_heap_iter_free(w->it);
		w->it = NULL;
		resume_target(w, RBI_OK);
		nanosleep(&(struct timespec){ 0, PAUSE_RETRY_NS }, NULL);
	}
	return rc;
}

void heap_walk_progress(struct heap_walk *w)
{
	struct rbi_heap_stats st;
	uint64_t t = rbi_now_ns();

	if (!isatty(STDERR_FILENO) || t - w->start_ns < PROGRESS_AFTER_NS ||
	    t - w->progress_ns < PROGRESS_EVERY_NS)
		return;
	w->progress_ns = t;
	rbi_heap_iter_stats(w->it, &st);
	fprintf(stderr, "\rrbinspect: %s: %" PRIu64 " of %" PRIu64 " heap pages (%d%%)",
		w->command, st.pages_done, st.pages,
		st.pages ? (int)(100 * st.pages_done / st.pages) : 0);
	fflush(stderr);
	w->progress_shown = true;
}

int heap_walk_end(struct heap_walk *w, int rc)
{
	if (w->progress_shown) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
		w->progress_shown = false;
	}
	/* Slots of a type no heap object has and pages that could not be
	   read: in a snapshot (a core, a paused process), values the VM cannot
	   have and a heap only partly counted, which the command's output
	   marks approximate.  A running process's heap may have been read as
	   a GC changed it: its output says approximate, no more. */
	if (!w->s->live || w->paused) {
		struct rbi_heap_stats st;

		rbi_heap_iter_stats(w->it, &st);
		w->s->bad_values += rbi_heap_iter_impossible(w->it);
		w->s->pages_skipped += st.pages_skipped;
	}
	rbi_heap_iter_free(w->it);
	w->it = NULL;
	return resume_target(w, rc);
}
