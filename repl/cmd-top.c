/* cmd-top.c: `top`, the hottest methods of a live process, refreshed every
 * interval (like top(1)): SELF is the time (wall or CPU, by --mode) a
 * method was running in, TOTAL the time it was on the stack, each also as
 * a share of the time sampled, since the start (or the last reset) or in
 * the last interval.  The library samples (rbi_profile_record with a
 * progress callback) and keeps the samples; this tabulates the range of
 * them shown.  On a terminal, keys (read at each refresh) sort by own or
 * total time, pause the display, reset, switch cumulative and interval,
 * and quit. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "out/out.h"
#include "profile-cli.h"
#include "rbinspect.h"

#define TOP_DEFAULT 20

struct top {
	struct session *s;
	struct profile_opts o;
	uint64_t *self, *total, *seen;  /* ns, ns, serial */
	const struct rbi_sample_frame **frame;
	size_t cap;
	uint64_t samples, time_ns, gc_ns, serial;
	uint64_t gvl_samples, nthreads;
	size_t mark;                    /* first sample of the last interval */
	uint64_t mark_ticks, start_ticks;       /* rbi_sample_stats.samples */
	double mark_s, start_s;         /* CLOCK_MONOTONIC */
	unsigned rounds;
	bool tty, keys, oom;
	bool by_total, interval, paused, shown_paused;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static bool grow(struct top *t, size_t id)
{
	size_t cap = t->cap ? t->cap : 256;

	if (id < t->cap)
		return true;
	while (cap <= id)
		cap *= 2;
	uint64_t *a = realloc(t->self, cap * sizeof(*a));
	if (!a)
		return false;
	t->self = a;
	if (!(a = realloc(t->total, cap * sizeof(*a))))
		return false;
	t->total = a;
	if (!(a = realloc(t->seen, cap * sizeof(*a))))
		return false;
	t->seen = a;
	const struct rbi_sample_frame **f = realloc(t->frame, cap * sizeof(*f));
	if (!f)
		return false;
	t->frame = f;
	memset(t->self + t->cap, 0, (cap - t->cap) * sizeof(*t->self));
	memset(t->total + t->cap, 0, (cap - t->cap) * sizeof(*t->total));
	memset(t->seen + t->cap, 0, (cap - t->cap) * sizeof(*t->seen));
	memset(t->frame + t->cap, 0, (cap - t->cap) * sizeof(*t->frame));
	t->cap = cap;
	return true;
}

static int tally(const struct rbi_sample_frame *const *frames, size_t n, uint64_t count,
		 uint64_t weight_ns, void *arg)
{
	struct top *t = arg;

	if (!n)
		return 0;
	t->samples += count;
	t->time_ns += weight_ns;
	t->serial++;
	for (size_t i = 0; i < n; i++) {
		const struct rbi_sample_frame *f = frames[i];

		if (!grow(t, f->id)) {
			t->oom = true;
			return 1;
		}
		t->frame[f->id] = f;
		if (t->seen[f->id] != t->serial) {
			t->seen[f->id] = t->serial;
			t->total[f->id] += weight_ns;
		}
	}
	t->self[frames[n - 1]->id] += weight_ns;
	/* The GC frame, or what it does above it. */
	if (frames[n - 1]->kind == RBI_FRAME_GC)
		t->gc_ns += weight_ns;
	return 0;
}

/* rbi_stack_fn counting the samples of a view (holding the GVL). */
static int count_gvl(const struct rbi_sample_frame *const *frames, size_t n, uint64_t count,
		     uint64_t weight_ns, void *arg)
{
	(void)frames, (void)n, (void)weight_ns;
	((struct top *)arg)->gvl_samples += count;
	return 0;
}

/* rbi_stack_fn counting the distinct roots of a view (with a root per
   thread: the threads). */
static int count_roots(const struct rbi_sample_frame *const *frames, size_t n, uint64_t count,
		       uint64_t weight_ns, void *arg)
{
	struct top *t = arg;

	(void)count, (void)weight_ns;
	if (!n)
		return 0;
	if (!grow(t, frames[0]->id)) {
		t->oom = true;
		return 1;
	}
	if (t->seen[frames[0]->id] != t->serial) {
		t->seen[frames[0]->id] = t->serial;
		t->nthreads++;
	}
	return 0;
}

static struct top *sort_top;

static int by_time(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	const uint64_t *k1 = sort_top->by_total ? sort_top->total : sort_top->self;
	const uint64_t *k2 = sort_top->by_total ? sort_top->self : sort_top->total;

	if (k1[x] != k1[y])
		return k1[x] > k1[y] ? -1 : 1;
	if (k2[x] != k2[y])
		return k2[x] > k2[y] ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* A row's method in WIDTH columns: "LABEL (PATH:LINE)", LINE the first line
   of a Ruby method or block, so that blocks Ruby labels alike ("block in
   foo") stay apart, as each is its own row.  Too long, the path loses its
   start (the file and line are what tell rows apart), then the label its
   end. */
static void show_method(FILE *out, const struct rbi_sample_frame *f, size_t width)
{
	char *name = NULL, *where = NULL;
	size_t len = 0, wlen = 0;
	FILE *m;

	if ((m = open_memstream(&name, &len))) {
		rbi_out_text_cstr(m, f->label);
		fclose(m);
	}
	if (f->path && (m = open_memstream(&where, &wlen))) {
		rbi_out_text_cstr(m, f->path);
		if (f->kind == RBI_FRAME_RUBY && f->first_line > 0)
			fprintf(m, ":%d", f->first_line);
		fclose(m);
	}
	if (!name) {
		fputc('\n', out);
	} else if (where && len + wlen + 3 <= width) {
		fprintf(out, "%s (%s)\n", name, where);
	} else if (where && len + 16 <= width) {
		const char *tail = where + wlen - (width - len - 6);

		while (tail < where + wlen && ((unsigned char)*tail & 0xc0) == 0x80)
			tail++;         /* not in the middle of a character */
		fprintf(out, "%s (...%s)\n", name, tail);
	} else if (len <= width) {
		fprintf(out, "%s\n", name);
	} else {
		fprintf(out, "%.*s...\n", (int)(width - 3), name);
	}
	free(name);
	free(where);
}

static void show(struct top *t, rbi_profile *p, const struct rbi_sample_stats *st,
		 uint64_t ticks, double seconds)
{
	FILE *out = t->s->out;
	size_t rows = t->o.top ? t->o.top : TOP_DEFAULT, n = 0;
	const char *ruby = rbi_profile_meta(p, "ruby");
	uint32_t *ids = malloc((t->cap + 1) * sizeof(*ids));
	struct winsize ws;
	int width = 100;

	if (t->tty && !ioctl(fileno(out), TIOCGWINSZ, &ws) && ws.ws_col > 40)
		width = ws.ws_col - 32;
	for (size_t i = 0; ids && i < t->cap; i++)
		if (t->frame[i] && t->total[i])
			ids[n++] = (uint32_t)i;
	sort_top = t;
	if (ids)
		qsort(ids, n, sizeof(*ids), by_time);
	if (t->tty)
		fputs("\033[H\033[2J", out);
	else if (t->rounds > 1)
		fputc('\n', out);
	fprintf(out, "process %d, Ruby %s: %" PRIu64 " samples, %.2f s of %s time in %.1f s",
		(int)t->o.pid, ruby ? ruby : "?", t->samples, (double)t->time_ns / 1e9,
		t->o.record_flags & RBI_SAMPLER_CPU ? "CPU" : "wall", seconds);
	if (t->gc_ns && t->time_ns)
		fprintf(out, ", GC %.1f%%", 100.0 * (double)t->gc_ns / (double)t->time_ns);
	fprintf(out, " (%s, by %s time%s)\n", t->interval ? "last interval" : "cumulative",
		t->by_total ? "total" : "own", t->paused ? ", paused" : "");
	/* Threads seen, the GVL holder's share of the samples, the idle
	   threads' share of the threads read, the ticks' pace, what was lost
	   (since the start). */
	fprintf(out, "threads %" PRIu64 ", GVL held %.1f%%, idle %.1f%%, %.0f samples/s; "
		"torn %" PRIu64 ", errors %" PRIu64 ", late %" PRIu64 " (missed %" PRIu64 ")\n",
		t->nthreads, t->samples ? 100.0 * (double)t->gvl_samples / (double)t->samples : 0.0,
		st->stacks + st->idle ? 100.0 * (double)st->idle / (double)(st->stacks + st->idle) : 0.0,
		seconds > 0 ? (double)ticks / seconds : 0.0, st->torn, st->errors, st->late,
		st->missed);
	if (t->keys)
		fputs("keys: s sort own/total, p pause, r reset, c cumulative/interval, q quit\n", out);
	if (!t->samples || !t->time_ns) {
		fputs("(no samples: every thread idle? --idle counts them too)\n", out);
	} else {
		fprintf(out, "%7s %7s %7s %7s  %s\n", "%SELF", "%TOTAL", "SELF s", "TOTAL s",
			"METHOD");
		for (size_t i = 0; i < n && i < rows; i++) {
			fprintf(out, "%6.1f%% %6.1f%% %7.3f %7.3f  ",
				100.0 * (double)t->self[ids[i]] / (double)t->time_ns,
				100.0 * (double)t->total[ids[i]] / (double)t->time_ns,
				(double)t->self[ids[i]] / 1e9, (double)t->total[ids[i]] / 1e9);
			show_method(out, t->frame[ids[i]], (size_t)width);
		}
	}
	fflush(out);
	free(ids);
}

/* The keys typed since the last refresh.  -1: quit; 1: reset (nothing to
   show until the next refresh). */
static int read_keys(struct top *t, rbi_profile *p, const struct rbi_sample_stats *st,
		     double now)
{
	char c;
	int rc = 0;

	while (t->keys && read(STDIN_FILENO, &c, 1) == 1) {
		switch (c) {
		case 'q':
			return -1;
		case 's':
			t->by_total = !t->by_total;
			break;
		case 'p':
			t->paused = !t->paused;
			break;
		case 'c':
			t->interval = !t->interval;
			break;
		case 'r':
			rbi_profile_clear_samples(p);
			t->start_ticks = st->samples;
			t->start_s = now;
			rc = 1;
			break;
		}
	}
	return rc;
}

static int progress(rbi_profile *p, void *arg)
{
	struct top *t = arg;
	struct rbi_sample_stats st;
	double now = now_s();
	struct rbi_profile_view v = {
		.size = sizeof(v), .flags = t->o.view_flags | RBI_VIEW_NO_LINES,
	};
	size_t end;
	int k;

	rbi_profile_stats(p, &st);
	if ((k = read_keys(t, p, &st, now)) < 0)
		return 1;
	end = rbi_profile_sample_count(p);
	t->rounds++;
	/* Paused: the screen that says so stays. */
	if (k > 0 || (t->paused && t->shown_paused))
		goto mark;
	v.first_sample = t->interval ? t->mark : 0;
	v.end_sample = end;
	t->samples = t->time_ns = t->gc_ns = t->gvl_samples = t->nthreads = 0;
	if (t->cap) {
		memset(t->self, 0, t->cap * sizeof(*t->self));
		memset(t->total, 0, t->cap * sizeof(*t->total));
	}
	if (v.first_sample < end) {
		if (rbi_profile_foreach_stack(p, &v, tally, t) < 0 || t->oom)
			return 1;
		v.flags |= RBI_VIEW_GVL;
		if (rbi_profile_foreach_stack(p, &v, count_gvl, t) < 0)
			return 1;
		v.flags = (v.flags & ~RBI_VIEW_GVL) | RBI_VIEW_THREADS;
		t->serial++;
		if (rbi_profile_foreach_stack(p, &v, count_roots, t) < 0 || t->oom)
			return 1;
	}
	if (t->interval)
		show(t, p, &st, st.samples - t->mark_ticks, now - t->mark_s);
	else
		show(t, p, &st, st.samples - t->start_ticks, now - t->start_s);
	t->shown_paused = t->paused;
mark:
	t->mark = end;
	t->mark_ticks = st.samples;
	t->mark_s = now;
	return 0;
}

int cmd_top(struct session *s, int argc, char **argv)
{
	struct top t = { .s = s, .tty = isatty(fileno(s->out)) };
	struct rbi_record_opts ro = { .size = sizeof(ro) };
	struct stop_guard guard;
	struct termios saved, raw;
	rbi_profile *p;
	int rc;

	for (int i = 1; i < argc; i++) {
		int at = i;

		rc = profile_option(&t.o, argc, argv, &i);
		if (rc < 0)
			return EXIT_USAGE;
		/* --no-lines is what top does anyway (rows are methods). */
		if (rc == 0 || t.o.output || t.o.raw || t.o.format_given) {
			fprintf(stderr, "rbinspect: top: unexpected argument \"%s%s%s\"\n",
				argv[at], i > at ? " " : "", i > at ? argv[i] : "");
			fputs("usage: rbinspect top -p PID [--rate HZ] [--interval S] "
			      "[--duration S] [--top N]\n         [--subprocesses] [--threads] "
			      "[--fibers] [--idle] [--gvl] [--no-lines] [--pause | --native]\n"
			      "         [--mode wall|cpu] [--sort own|total]\n", stderr);
			return EXIT_USAGE;
		}
	}
	if (s->target) {
		if (!s->live || t.o.pid) {
			fprintf(stderr, "rbinspect: top samples the session's live process\n");
			return EXIT_USAGE;
		}
		t.o.pid = rbi_target_pid(s->target);
	}
	if (!t.o.pid) {
		fprintf(stderr, "rbinspect: top: give -p PID\n");
		return EXIT_USAGE;
	}
	if ((rc = rbi_profile_new(&p)))
		return report_failure(rc);
	ro.flags = t.o.record_flags;
	ro.rate = t.o.rate;
	ro.duration = t.o.duration;
	ro.max_frames = t.o.max_frames;
	ro.stop = &stop_requested;
	ro.progress = progress;
	ro.progress_arg = &t;
	ro.progress_interval = t.o.interval;
	t.by_total = t.o.sort_total;
	/* Keys: the terminal's input unbuffered, not echoed, never waited for. */
	if (t.tty && isatty(STDIN_FILENO) && !tcgetattr(STDIN_FILENO, &saved)) {
		raw = saved;
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 0;
		raw.c_cc[VTIME] = 0;
		t.keys = !tcsetattr(STDIN_FILENO, TCSANOW, &raw);
	}
	t.start_s = t.mark_s = now_s();
	stop_guard_begin(&guard, STOP_ON_INT_TERM);
	rc = rbi_profile_record(p, t.o.pid, &ro);
	stop_guard_end(&guard);
	if (t.keys)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved);
	/* What came in after the last refresh. */
	if (!rc && rbi_profile_sample_count(p) && !t.rounds)
		progress(p, &t);
	rbi_profile_free(p);
	free(t.self);
	free(t.total);
	free(t.seen);
	free(t.frame);
	return rc ? report_failure(rc) : EXIT_OK;
}
