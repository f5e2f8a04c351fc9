/* heap-snapshots.c: `heap diff --every SECONDS` on a running process: two
 * or three heap dumps (cmd-heap-dump.c, as `heap-dump` writes them) taken
 * SECONDS apart into a directory, a temporary one removed afterwards or the
 * user's (--keep), for `heap diff` to compare: the leak view of a live
 * process in one command, with no dump files to name. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "out/out.h"
#include "rbinspect.h"

#define WAIT_STEP_NS 100000000L         /* how soon a wait sees Ctrl-C */

/* Sleep SECONDS, or until a stop is asked for (Ctrl-C, SIGTERM...):
   whether all of them passed. */
static bool wait_seconds(unsigned long seconds)
{
	struct timespec now, end;
	struct stop_guard guard;
	bool stopped;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += (time_t)seconds;
	stop_guard_begin(&guard, STOP_ON_ALL);
	for (;;) {
		if ((stopped = interrupted() || stop_requested))
			break;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > end.tv_sec ||
		    (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec))
			break;
		nanosleep(&(struct timespec){ 0, WAIT_STEP_NS }, NULL);
	}
	stop_guard_end(&guard);
	return !stopped;
}

/* HS->dir: the user's KEEP (made if it is not there), else a new
   temporary directory. */
static int snapshot_dir(struct heap_snapshots *hs, const char *keep)
{
	const char *tmp = getenv("TMPDIR");

	errno = 0;
	if (keep) {
		hs->temporary = false;
		if (snprintf(hs->dir, sizeof(hs->dir), "%s", keep) >= (int)sizeof(hs->dir) ||
		    (mkdir(keep, 0777) && errno != EEXIST))
			goto fail;
		return EXIT_OK;
	}
	hs->temporary = true;
	if (snprintf(hs->dir, sizeof(hs->dir), "%s/rbinspect-heap.XXXXXX",
		     tmp && tmp[0] ? tmp : "/tmp") >= (int)sizeof(hs->dir) || !mkdtemp(hs->dir))
		goto fail;
	return EXIT_OK;
fail:
	fputs("rbinspect: heap diff: cannot make a directory for the snapshots: ", stderr);
	rbi_out_text_cstr(stderr, keep ? keep : hs->dir);
	fprintf(stderr, ": %s\n", strerror(errno ? errno : ENAMETOOLONG));
	return EXIT_ERROR;
}

int heap_snapshots_take(struct session *s, struct heap_snapshots *hs, unsigned n,
			unsigned long every, bool pause, const char *keep)
{
	int rc;

	*hs = (struct heap_snapshots){ 0 };
	if ((rc = snapshot_dir(hs, keep)))
		return rc;
	for (unsigned i = 0; i < n && i < HEAP_SNAPSHOTS_MAX; i++) {
		char dash_o[] = "-o", pause_opt[] = "--pause", name[] = "heap-dump";
		char *argv[] = { name, dash_o, hs->paths[i], pause ? pause_opt : NULL, NULL };

		if (i && !wait_seconds(every)) {
			fputs("rbinspect: heap diff: interrupted between snapshots\n", stderr);
			return EXIT_INTERRUPTED;
		}
		snprintf(hs->paths[i], sizeof(hs->paths[i]), "%s/snapshot-%u.json.gz", hs->dir,
			 i + 1);
		hs->n = i + 1;          /* made, if only in part: removed with the rest */
		if ((rc = cmd_heap_dump(s, pause ? 4 : 3, argv)))
			return rc;
	}
	return EXIT_OK;
}

void heap_snapshots_remove(const struct heap_snapshots *hs)
{
	if (!hs->temporary || !hs->dir[0])
		return;
	for (unsigned i = 0; i < hs->n; i++)
		unlink(hs->paths[i]);
	rmdir(hs->dir);
}
