/* bt.c: print the Ruby backtrace of every thread of a live Ruby process
 * or a core file, with libruby-introspect, and how a crashed one died.
 *
 *   cc -o bt bt.c $(pkg-config --cflags --libs libruby-introspect)
 *   ./bt PID            a live process (it keeps running)
 *   ./bt CORE [EXE]     a core file
 *
 * Exit status: 0, or 1 with the library's explanation on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ruby-introspect.h>

/* Strings from the target are untrusted bytes: escaped as rbinspect
   prints them, so nothing in them can drive the terminal. */
static void print_safe(const char *s)
{
	rbi_escape_text(stdout, s, strlen(s));
}

static int print_frame(const struct rbi_frame *f, void *arg)
{
	(void)arg;
	fputs("  ", stdout);
	print_safe(f->path ? f->path : "(unknown)");
	printf(":%d:in '", f->line);
	print_safe(f->label ? f->label : "(unknown method)");
	puts("'");
	return 0;       /* non-zero would stop the walk */
}

static int print_thread(const struct rbi_thread *th, void *arg)
{
	rbi_target *t = arg;
	int rc;

	printf("Thread %u%s", th->number, th->main ? " (main)" : "");
	if (th->error) {
		printf(": %s\n", th->error_msg);
		return 0;
	}
	printf(" %s:\n", rbi_thread_status_name(th->status));
	rc = rbi_frame_foreach(t, th, 0, print_frame, NULL);
	if (rc < 0)
		printf("  error: %s\n", rbi_errmsg());
	return 0;
}

int main(int argc, char **argv)
{
	struct rbi_open_opts opts = { .size = sizeof(opts) };
	const struct rbi_ruby_info *info;
	rbi_target *t;
	char *end;
	long pid;
	int rc;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: %s PID | CORE [EXE]\n", argv[0]);
		return 2;
	}
	pid = strtol(argv[1], &end, 10);
	if (*end == '\0' && pid > 0) {
		rc = rbi_target_open_pid((pid_t)pid, &opts, &t);
	} else {
		opts.exe = argc > 2 ? argv[2] : NULL;
		rc = rbi_target_open_core(argv[1], &opts, &t);
	}
	if (rc) {
		fprintf(stderr, "%s: %s\n", argv[1], rbi_errmsg());
		return 1;
	}
	if ((rc = rbi_ruby_info(t, &info)) == RBI_OK) {
		const struct rbi_crash *crash;
		char how[256];

		printf("Ruby %s, %u thread(s)\n", info->version, info->thread_count);
		if (rbi_target_crash(t, &crash) == RBI_OK) {
			printf("Crashed in tid %d: ", (int)crash->signal.tid);
			print_safe(rbi_crash_describe(crash, how, sizeof(how)));
			putchar('\n');
		}
		rc = rbi_thread_foreach(t, print_thread, t);
	}
	if (rc)
		fprintf(stderr, "%s: %s (%s)\n", argv[1], rbi_errmsg(), rbi_strerror(rc));
	rbi_target_free(t);
	return rc ? 1 : 0;
}
