/* cmd-top.c: `top`, the hottest methods of a live process, refreshed every
 * interval (like top(1)): SELF is the time (wall or CPU, by --mode) a
 * method was running in, TOTAL the time it was on the stack, each also as
 * a share of the time sampled, since the start (or the last reset) or in
 * the last interval.  The library samples (rbi_profile_record with a
 * progress callback); at each refresh this tallies the interval's samples,
 * adds them to the running totals and drops them, so a top left running
 * for days keeps one interval of samples.  On a terminal, keys (read at
 * each refresh) sort by own or total time, pause the display, reset,
 * switch cumulative and interval, and quit. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "out/out.h"
#include "profile-cli.h"
#include "rbinspect.h"

#define TOP_DEFAULT 20

/* What a stretch of samples adds up to: by frame id, the time a frame ran
   in (self) and was on the stack (total), and whether it was a stack's
   root (a thread, with RBI_VIEW_THREADS). */
struct tally {
	uint64_t *self, *total;         /* ns */
	uint8_t *root;
	uint64_t samples, time_ns, gc_ns, gvl_samples, nthreads;
};

struct top {
	struct session *s;
	struct profile_opts o;
	struct tally cum, last;         /* since the start or reset; the last interval */
	struct tally *into;             /* the one being tallied */
	uint64_t *seen;                 /* by frame id: the stack that last counted it */
	const struct rbi_sample_frame **frame;
	size_t cap;
	uint64_t serial;
	uint64_t mark_ticks, start_ticks;       /* rbi_sample_stats.samples */
	double mark_s, start_s;         /* CLOCK_MONOTONIC */
	unsigned rounds;
	bool tty, keys, oom;
	bool quit;                      /* q typed: nothing more to show */
	bool by_total, interval, paused, shown_paused;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Array *ARR, of elements of SIZE bytes and capacity T->cap, grown to hold
   ID (rbi_grow_zero); every array of T grows alike, to *CAP. */
static bool grow_one(const struct top *t, void *arr, size_t size, size_t id, size_t *cap)
{
	*cap = t->cap;
	return rbi_grow_zero(arr, cap, id + 1, size, 256);
}

static bool grow(struct top *t, size_t id)
{
	struct tally *ts[] = { &t->cum, &t->last };
	size_t cap = t->cap;

	if (id < t->cap)
		return true;
	for (size_t i = 0; i < 2; i++)
		if (!grow_one(t, &ts[i]->self, sizeof(uint64_t), id, &cap) ||
		    !grow_one(t, &ts[i]->total, sizeof(uint64_t), id, &cap) ||
		    !grow_one(t, &ts[i]->root, 1, id, &cap))
			return false;
	if (!grow_one(t, &t->seen, sizeof(*t->seen), id, &cap) ||
	    !grow_one(t, &t->frame, sizeof(*t->frame), id, &cap))
		return false;
	t->cap = cap;
	return true;
}

static void tally_clear(struct tally *y, size_t cap)
{
	if (cap) {
		memset(y->self, 0, cap * sizeof(*y->self));
		memset(y->total, 0, cap * sizeof(*y->total));
		memset(y->root, 0, cap);
	}
	y->samples = y->time_ns = y->gc_ns = y->gvl_samples = y->nthreads = 0;
}

/* The last interval's tally into the running one. */
static void tally_add(struct tally *to, const struct tally *from, size_t cap)
{
	to->nthreads = 0;
	for (size_t i = 0; i < cap; i++) {
		to->self[i] += from->self[i];
		to->total[i] += from->total[i];
		to->root[i] |= from->root[i];
		to->nthreads += to->root[i];
	}
	to->samples += from->samples;
	to->time_ns += from->time_ns;
	to->gc_ns += from->gc_ns;
	to->gvl_samples += from->gvl_samples;
}

static void tally_free(struct tally *y)
{
	free(y->self);
	free(y->total);
	free(y->root);
}

static int tally(const struct rbi_sample_frame *const *frames, size_t n, uint64_t count,
		 uint64_t weight_ns, void *arg)
{
	struct top *t = arg;
	struct tally *y = t->into;

	if (!n)
		return 0;
	y->samples += count;
	y->time_ns += weight_ns;
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
			y->total[f->id] += weight_ns;
		}
	}
	y->self[frames[n - 1]->id] += weight_ns;
	/* The GC frame, or what it does above it. */
	if (frames[n - 1]->kind == RBI_FRAME_GC)
		y->gc_ns += weight_ns;
	return 0;
}

/* rbi_stack_fn counting the samples of a view (holding the GVL). */
static int count_gvl(const struct rbi_sample_frame *const *frames, size_t n, uint64_t count,
		     uint64_t weight_ns, void *arg)
{
	(void)frames, (void)n, (void)weight_ns;
	((struct top *)arg)->into->gvl_samples += count;
	return 0;
}

/* rbi_stack_fn marking the roots of a view (with a root per thread: the
   threads). */
static int count_roots(const struct rbi_sample_frame *const *frames, size_t n, uint64_t count,
		       uint64_t weight_ns, void *arg)
{
	struct top *t = arg;
	struct tally *y = t->into;

	(void)count, (void)weight_ns;
	if (!n)
		return 0;
	if (!grow(t, frames[0]->id)) {
		t->oom = true;
		return 1;
	}
	y->nthreads += !y->root[frames[0]->id];
	y->root[frames[0]->id] = 1;
	return 0;
}

static struct top *sort_top;
static const struct tally *sort_tally;

static int by_time(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	const uint64_t *k1 = sort_top->by_total ? sort_tally->total : sort_tally->self;
	const uint64_t *k2 = sort_top->by_total ? sort_tally->self : sort_tally->total;

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

static void show(struct top *t, const struct tally *y, rbi_profile *p,
		 const struct rbi_sample_stats *st, uint64_t ticks, double seconds)
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
		if (t->frame[i] && y->total[i])
			ids[n++] = (uint32_t)i;
	sort_top = t;
	sort_tally = y;
	if (ids)
		qsort(ids, n, sizeof(*ids), by_time);
	if (t->tty)
		fputs("\033[H\033[2J", out);
	else if (t->rounds > 1)
		fputc('\n', out);
	fprintf(out, "process %d, Ruby %s: %" PRIu64 " samples, %.2f s of %s time in %.1f s",
		(int)t->o.pid, ruby ? ruby : "?", y->samples, (double)y->time_ns / 1e9,
		t->o.record_flags & RBI_SAMPLER_CPU ? "CPU" : "wall", seconds);
	if (y->gc_ns && y->time_ns)
		fprintf(out, ", GC %.1f%%", 100.0 * (double)y->gc_ns / (double)y->time_ns);
	fprintf(out, " (%s, by %s time%s)\n", t->interval ? "last interval" : "cumulative",
		t->by_total ? "total" : "own", t->paused ? ", paused" : "");
	/* Threads seen, the GVL holder's share of the samples, the idle
	   threads' share of the threads read, the ticks' pace, what was lost
	   (since the start). */
	fprintf(out, "threads %" PRIu64 ", GVL held %.1f%%, idle %.1f%%, %.0f samples/s; "
		"torn %" PRIu64 ", errors %" PRIu64 ", late %" PRIu64 " (missed %" PRIu64 ")\n",
		y->nthreads, y->samples ? 100.0 * (double)y->gvl_samples / (double)y->samples : 0.0,
		st->stacks + st->idle ? 100.0 * (double)st->idle / (double)(st->stacks + st->idle) : 0.0,
		seconds > 0 ? (double)ticks / seconds : 0.0, st->torn, st->errors, st->late,
		st->missed);
	if (t->keys)
		fputs("keys: s sort own/total, p pause, r reset, c cumulative/interval, q quit\n", out);
	if (!y->samples || !y->time_ns) {
		fputs("(no samples: every thread idle? --idle counts them too)\n", out);
	} else {
		fprintf(out, "%7s %7s %7s %7s  %s\n", "%SELF", "%TOTAL", "SELF s", "TOTAL s",
			"METHOD");
		for (size_t i = 0; i < n && i < rows; i++) {
			fprintf(out, "%6.1f%% %6.1f%% %7.3f %7.3f  ",
				100.0 * (double)y->self[ids[i]] / (double)y->time_ns,
				100.0 * (double)y->total[ids[i]] / (double)y->time_ns,
				(double)y->self[ids[i]] / 1e9, (double)y->total[ids[i]] / 1e9);
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
			tally_clear(&t->cum, t->cap);
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
	int k;

	rbi_profile_stats(p, &st);
	if ((k = read_keys(t, p, &st, now)) < 0) {
		t->quit = true;
		return 1;
	}
	t->rounds++;
	if (k > 0)
		goto mark;      /* reset: nothing to show until the next refresh */
	/* The interval's samples, tallied, added up and dropped. */
	tally_clear(&t->last, t->cap);
	t->into = &t->last;
	if (rbi_profile_foreach_stack(p, &v, tally, t) < 0 || t->oom)
		return 1;
	v.flags |= RBI_VIEW_GVL;
	if (rbi_profile_foreach_stack(p, &v, count_gvl, t) < 0)
		return 1;
	v.flags = (v.flags & ~RBI_VIEW_GVL) | RBI_VIEW_THREADS;
	if (rbi_profile_foreach_stack(p, &v, count_roots, t) < 0 || t->oom)
		return 1;
	rbi_profile_clear_samples(p);
	tally_add(&t->cum, &t->last, t->cap);
	/* Paused: the screen that says so stays. */
	if (t->paused && t->shown_paused)
		goto mark;
	if (t->interval)
		show(t, &t->last, p, &st, st.samples - t->mark_ticks, now - t->mark_s);
	else
		show(t, &t->cum, p, &st, st.samples - t->start_ticks, now - t->start_s);
	t->shown_paused = t->paused;
mark:
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
		rc = profile_option(&t.o, PROFILE_TOP, argc, argv, &i);
		if (rc < 0)
			return EXIT_USAGE;
		if (rc == 0) {
			fprintf(stderr, "rbinspect: top: unexpected argument \"%s\"\n", argv[i]);
			profile_usage(stderr, PROFILE_TOP, "-p PID");
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
	/* What came in after the last refresh (a --duration that ends on a
	   refresh ends before it): one more, as top -b -n N shows N. */
	if (!rc && rbi_profile_sample_count(p) && !t.quit)
		progress(p, &t);
	if (!rc)
		profile_print_wakeup(stderr, p);
	rbi_profile_free(p);
	tally_free(&t.cum);
	tally_free(&t.last);
	free(t.seen);
	free(t.frame);
	return rc ? report_failure(rc) : EXIT_OK;
}
