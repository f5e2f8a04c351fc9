/* cmd-record.c: `record` (sample a process into a profile file) and
 * `report` (render a saved raw profile).  The sampling, the profile and
 * the formats are the library's (rbi_profile_record, rbi_profile_write);
 * this parses options, starts the command to profile, catches Ctrl-C and
 * prints the figures. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "out/out.h"
#include "profile-cli.h"
#include "rbinspect.h"

/* "NAME-PID-YYYYmmdd-HHMMSS.EXT", NAME from /proc/PID/comm, sanitized. */
static void default_output(pid_t pid, rbi_profile_format format, char *buf, size_t cap)
{
	char comm[64] = "ruby", path[64], stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if ((f = fopen(path, "re"))) {
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
	}
	for (char *c = comm; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || *c == '.' || *c == '_' || *c == '-'))
			*c = '_';
	if (!comm[0] || comm[0] == '.' || comm[0] == '-')
		snprintf(comm, sizeof(comm), "ruby");
	localtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	snprintf(buf, cap, "%s-%d-%s.%s", comm, (int)pid, stamp,
		 rbi_profile_format_extension(format));
}

/* P in FORMAT through O's view into F (PATH, for messages), closed unless
   it is standard output; an exit code. */
static int write_to(rbi_profile *p, const struct profile_opts *o, rbi_profile_format format,
		    FILE *f, const char *path)
{
	struct rbi_profile_view view = { .size = sizeof(view), .flags = o->view_flags };
	int rc;

	if (!f) {
		fprintf(stderr, "rbinspect: cannot write %s: %s\n", path, strerror(errno));
		return EXIT_ERROR;
	}
	rc = rbi_profile_write(p, format, &view, f);
	if (rc)
		fprintf(stderr, "rbinspect: %s: %s\n", path, rbi_errmsg());
	if (f != stdout && fclose(f) && !rc) {
		fprintf(stderr, "rbinspect: writing %s: %s\n", path, strerror(errno));
		rc = RBI_SYSTEM;
	}
	return rc ? EXIT_ERROR : EXIT_OK;
}

int profile_write_file(rbi_profile *p, const struct profile_opts *o, rbi_profile_format format,
		       const char *path)
{
	return write_to(p, o, format, !strcmp(path, "-") ? stdout : fopen(path, "we"), path);
}

int profile_write_new(rbi_profile *p, const struct profile_opts *o, rbi_profile_format format,
		      char *path, size_t cap)
{
	return write_to(p, o, format, outfile_create_new(path, cap), path);
}

/* P, whose output could not be written: kept in its format under a
   made-up name in $TMPDIR (or /tmp), and said where, so that a recording
   is not lost to a mistyped -o. */
static void keep_profile(rbi_profile *p, const struct profile_opts *o)
{
	const char *tmp = getenv("TMPDIR");
	char name[PATH_MAX - 256], path[PATH_MAX];

	default_output(o->pid, o->format, name, sizeof(name));
	snprintf(path, sizeof(path), "%s/%s", tmp && tmp[0] == '/' ? tmp : "/tmp", name);
	if (profile_write_new(p, o, o->format, path, sizeof(path)) == EXIT_OK)
		fprintf(stderr, "rbinspect: record: the recording is kept in %s\n", path);
}

/* How the stacks of a --native recording were read. */
static void profile_print_native(FILE *f, rbi_profile *p)
{
	const char *merged = rbi_profile_meta(p, "native_merged");
	const char *ruby = rbi_profile_meta(p, "native_ruby_only");
	const char *why = rbi_profile_meta(p, "native_ruby_only_why");
	const char *mean = rbi_profile_meta(p, "native_stop_mean_ms");
	const char *max = rbi_profile_meta(p, "native_stop_max_ms");

	if (!rbi_profile_meta(p, "native"))
		return;
	fprintf(f, "native: %s stacks with native frames, %s with Ruby frames only; "
		"threads held %s ms a stack (max %s ms)\n", merged ? merged : "?",
		ruby ? ruby : "?", mean ? mean : "?", max ? max : "?");
	if (why) {
		fputs("native: first stack with Ruby frames only: ", f);
		rbi_out_text_cstr(f, why);
		fputc('\n', f);
	}
}

/* How the sampling loop was scheduled, when not as a real-time thread
   (lib/profile/wakeup.c): what that does to the profile. */
void profile_print_wakeup(FILE *f, rbi_profile *p)
{
	const char *w = rbi_profile_meta(p, "wakeup");

	if (!w || !strcmp(w, "realtime"))
		return;
	fputs("sampler: ran as a ", f);
	rbi_out_text_cstr(f, w);
	fputs(": where it shared a CPU with a sampled thread, that thread's samples lean "
	      "toward its system calls (root or CAP_SYS_NICE, or ulimit -r 1, lets it "
	      "wake on time)\n", f);
}

/* The recording's own warning (most stacks lost): shown even with
   --quiet, which leaves out figures, not what makes them wrong. */
static void profile_print_warning(FILE *f, rbi_profile *p)
{
	const char *w = rbi_profile_meta(p, "warning");

	if (!w)
		return;
	fputs("rbinspect: warning: ", f);
	rbi_out_text_cstr(f, w);
	fputc('\n', f);
}

/* Counts into *ARG the samples of stacks of which only the outer part
   held still while they were read: under the sampler's "(moving)" leaf
   (beneath a view's state frame, when it adds one). */
static int count_moving(const struct rbi_sample_frame *const *frames, size_t n, uint64_t count,
			uint64_t weight_ns, void *arg)
{
	(void)weight_ns;
	for (size_t i = n > 2 ? n - 2 : 0; i < n; i++)
		if (frames[i]->kind == RBI_FRAME_OTHER && !strcmp(frames[i]->label, "(moving)")) {
			*(uint64_t *)arg += count;
			break;
		}
	return 0;
}

void profile_print_stats(FILE *f, rbi_profile *p)
{
	struct rbi_sample_stats st;
	const char *dur = rbi_profile_meta(p, "duration"), *rate = rbi_profile_meta(p, "rate");
	const char *mode = rbi_profile_meta(p, "mode");
	struct rbi_profile_view all = { .size = sizeof(all), .flags = RBI_VIEW_IDLE };
	uint64_t moving = 0;

	rbi_profile_stats(p, &st);
	rbi_profile_foreach_stack(p, &all, count_moving, &moving);
	fprintf(f, "samples: %" PRIu64 " in %s s at %s Hz: %" PRIu64 " stacks, %" PRIu64
		" %s threads skipped (%s time)\n", st.samples, dur ? dur : "?", rate ? rate : "?",
		st.stacks, st.idle, mode && !strcmp(mode, "cpu") ? "off-CPU" : "idle",
		mode && !strcmp(mode, "cpu") ? "CPU" : "wall");
	/* A late tick's missed periods are in no sample's weight (ticks.c). */
	fprintf(f, "errors: %" PRIu64 ", torn: %" PRIu64 " (stacks re-read: %" PRIu64
		", kept in part: %" PRIu64 "), late: %" PRIu64 " (ticks missed: %" PRIu64
		", %.1f ms in no sample)\n", st.errors, st.torn, st.retries, moving, st.late,
		st.missed, rate && atof(rate) > 0 ? (double)st.missed * 1e3 / atof(rate) : 0.0);
	fprintf(f, "time per sample: mean %.1f us, max %.1f us\n",
		st.samples ? (double)st.total_ns / (double)st.samples / 1000.0 : 0.0,
		(double)st.max_ns / 1000.0);
	profile_print_native(f, p);
	profile_print_wakeup(f, p);
	if (st.torn * 10 > st.stacks + st.torn)
		fprintf(f, "rbinspect: warning: %.0f%% of the stacks moved while they were read "
			"(torn, left out): code that calls and returns faster than a stack can "
			"be read is under-represented; --pause reads consistent stacks\n",
			100.0 * (double)st.torn / (double)(st.stacks + st.torn));
}

/* Start ARGV[0] with its arguments; its pid, or 0. */
static pid_t spawn(char **argv)
{
	pid_t pid = fork();

	if (pid < 0) {
		fprintf(stderr, "rbinspect: fork: %s\n", strerror(errno));
		return 0;
	}
	if (pid == 0) {
		execvp(argv[0], argv);
		fprintf(stderr, "rbinspect: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	return pid;
}

/* Where the profile goes (-o, --raw; the default name is made in the
   current directory) takes a file: found now, not after a long recording. */
static bool outputs_writable(const struct profile_opts *o)
{
	int err = o->output ? outfile_writable(o->output) : outfile_dir_writable(".");

	if (err) {
		fprintf(stderr, "rbinspect: record: cannot write %s: %s\n",
			o->output ? o->output : "a profile in the current directory",
			strerror(err));
		return false;
	}
	if (o->raw && (err = outfile_writable(o->raw))) {
		fprintf(stderr, "rbinspect: record: cannot write %s: %s\n", o->raw,
			strerror(err));
		return false;
	}
	return true;
}

static int record_usage(void)
{
	profile_usage(stderr, PROFILE_RECORD, "(-p PID | -- COMMAND [ARGS...])");
	fputs("--pause and --native do not go together\n"
	      "memory: flamegraph, folded, pprof and callgrind sum samples by distinct stack\n"
	      "(flat over time); speedscope, raw and --raw keep 32 bytes a sample\n",
	      stderr);
	return EXIT_USAGE;
}

int cmd_record(struct session *s, int argc, char **argv)
{
	struct profile_opts o = { .format = RBI_FORMAT_FLAMEGRAPH };
	struct rbi_record_opts ro = { .size = sizeof(ro) };
	char out[PATH_MAX], **cmd = NULL;
	struct stop_guard guard;
	rbi_profile *p = NULL;
	pid_t child = 0;
	int rc, ec;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			cmd = argv + i + 1;
			if (!*cmd)
				return record_usage();
			break;
		}
		rc = profile_option(&o, PROFILE_RECORD, argc, argv, &i);
		if (rc < 0)
			return EXIT_USAGE;
		if (rc == 0) {
			fprintf(stderr, "rbinspect: record: unknown argument \"%s\"\n", argv[i]);
			return record_usage();
		}
	}
	if ((o.record_flags & RBI_SAMPLER_PAUSE) && (o.record_flags & RBI_SAMPLER_NATIVE)) {
		fprintf(stderr, "rbinspect: record: --native holds each thread on its own "
			"while it is read; it does not go with --pause\n");
		return EXIT_USAGE;
	}
	if (s->target) {
		if (!s->live) {
			fprintf(stderr, "rbinspect: record samples a live process, not a core\n");
			return EXIT_USAGE;
		}
		if (o.pid || cmd) {
			fprintf(stderr, "rbinspect: record: the session's process is recorded; "
				"no -p or -- COMMAND here\n");
			return EXIT_USAGE;
		}
		o.pid = rbi_target_pid(s->target);
	}
	if (!o.pid == !cmd) {
		fprintf(stderr, "rbinspect: record: give -p PID or -- COMMAND\n");
		return record_usage();
	}
	if (!outputs_writable(&o))
		return EXIT_ERROR;
	if (cmd) {
		if (!(child = spawn(cmd)))
			return EXIT_ERROR;
		o.pid = child;
		o.record_flags |= RBI_RECORD_WAIT;
	}
	if (!o.output)
		default_output(o.pid, o.format, out, sizeof(out));
	/* Only the raw form and speedscope need every sample in order: for
	   the rest, memory that does not grow with the recording. */
	if ((rc = rbi_profile_new(&p)) ||
	    (!o.raw && !rbi_profile_format_in_order(o.format) && (rc = rbi_profile_aggregate(p)))) {
		rbi_profile_free(p);
		return report_failure(rc);
	}
	ro.flags = o.record_flags;
	ro.rate = o.rate;
	ro.duration = o.duration;
	ro.max_frames = o.max_frames;
	ro.stop = &stop_requested;
	if (!o.quiet)
		fprintf(stderr, "rbinspect: recording process %d at %g Hz%s; Ctrl-C to stop\n",
			(int)o.pid, o.rate > 0 ? o.rate : 100.0,
			o.record_flags & RBI_RECORD_SUBPROCESSES ? " with its subprocesses" : "");
	stop_guard_begin(&guard, STOP_ON_INT_TERM);
	rc = rbi_profile_record(p, o.pid, &ro);
	stop_guard_end(&guard);
	if (child) {
		int st;

		/* Ctrl-C went to the command too; otherwise it ran to its end,
		   or is left running when --duration ended the recording. */
		if (waitpid(child, &st, stop_requested || !o.duration ? 0 : WNOHANG) == 0 && !o.quiet)
			fprintf(stderr, "rbinspect: process %d goes on running\n", (int)child);
	}
	if (rc) {
		ec = report_failure(rc);
		rbi_profile_free(p);
		return ec;
	}
	if (!o.quiet)
		profile_print_stats(stderr, p);
	profile_print_warning(stderr, p);
	ec = o.output ? profile_write_file(p, &o, o.format, o.output)
		      : profile_write_new(p, &o, o.format, out, sizeof(out));
	if (o.raw) {
		int raw_ec = profile_write_file(p, &o, RBI_FORMAT_RAW, o.raw);

		if (ec && !raw_ec)
			fprintf(stderr, "rbinspect: record: the raw profile %s keeps the "
				"recording (rbinspect report %s -o FILE)\n", o.raw, o.raw);
		else if (!ec)
			ec = raw_ec;
		else
			keep_profile(p, &o);
	} else if (ec) {
		keep_profile(p, &o);
	}
	if (!ec && !o.quiet) {
		fprintf(stderr, "rbinspect: wrote %s to %s", rbi_profile_format_name(o.format),
			o.output ? o.output : out);
		if (o.raw)
			fprintf(stderr, " and the raw profile to %s", o.raw);
		fputc('\n', stderr);
	}
	if (!ec && rbi_profile_sample_count(p) == 0 && !o.quiet)
		fprintf(stderr, "rbinspect: warning: no samples (%s)\n",
			o.record_flags & RBI_SAMPLER_CPU ? "no thread used a CPU?" :
			"every thread idle? try --idle");
	rbi_profile_free(p);
	return ec;
}

int cmd_report(struct session *s, int argc, char **argv)
{
	struct profile_opts o = { .format = RBI_FORMAT_FLAMEGRAPH };
	const char *in = NULL, *incomplete;
	char out[PATH_MAX];
	rbi_profile *p;
	FILE *f;
	int rc;

	(void)s;
	for (int i = 1; i < argc; i++) {
		rc = profile_option(&o, PROFILE_REPORT, argc, argv, &i);
		if (rc < 0)
			return EXIT_USAGE;
		if (rc == 0 && (argv[i][0] != '-' || !strcmp(argv[i], "-")) && !in) {
			in = argv[i];
		} else if (rc == 0) {
			fprintf(stderr, "rbinspect: report: unexpected argument \"%s\"\n", argv[i]);
			goto usage;
		}
	}
	if (!in)
		goto usage;
	if (!(f = !strcmp(in, "-") ? stdin : fopen(in, "re"))) {
		fprintf(stderr, "rbinspect: cannot read %s: %s\n", in, strerror(errno));
		return EXIT_ERROR;
	}
	rc = rbi_profile_format_in_order(o.format) ? rbi_profile_load(f, &p) :
	     rbi_profile_load_aggregated(f, &p);
	if (f != stdin)
		fclose(f);
	if (rc) {
		fprintf(stderr, "rbinspect: %s: %s\n", in, rbi_errmsg());
		return EXIT_ERROR;
	}
	incomplete = rbi_profile_meta(p, "incomplete");
	if (!o.output) {
		const char *dot = strrchr(in, '.'), *slash = strrchr(in, '/');
		int stem = dot && (!slash || dot > slash) ? (int)(dot - in) : (int)strlen(in);

		if (!strcmp(in, "-"))
			snprintf(out, sizeof(out), "-");
		else
			snprintf(out, sizeof(out), "%.*s.%s", stem, in,
				 rbi_profile_format_extension(o.format));
	}
	if (!o.quiet) {
		profile_print_native(stderr, p);
		profile_print_wakeup(stderr, p);
	}
	profile_print_warning(stderr, p);
	if (o.output || !strcmp(out, "-"))
		rc = profile_write_file(p, &o, o.format, o.output ? o.output : out);
	else
		rc = profile_write_new(p, &o, o.format, out, sizeof(out));
	if (!rc && !o.quiet && strcmp(o.output ? o.output : out, "-"))
		fprintf(stderr, "rbinspect: wrote %s to %s\n", rbi_profile_format_name(o.format),
			o.output ? o.output : out);
	/* What was rendered is only part of the recording: say so, and let
	   the exit status say it too. */
	if (!rc && incomplete) {
		fprintf(stderr, "rbinspect: %s: the raw profile is incomplete (%s): only the "
			"samples before that were rendered\n", in, incomplete);
		rc = EXIT_ERROR;
	}
	rbi_profile_free(p);
	return rc;
usage:
	profile_usage(stderr, PROFILE_REPORT, "FILE|-");
	return EXIT_USAGE;
}
