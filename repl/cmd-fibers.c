/* cmd-fibers.c: fibers.  `fibers` lists every fiber of the VM, one line
 * each; `fiber [N]` selects one, whose frames and locals `frame` then
 * shows; `bt --fibers` (bt_fibers) prints each thread's chain of fibers
 * with their frames, then every other fiber grouped by its thread.  What
 * a fiber is and where it is found is the library's (rbi_fiber_foreach). */
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "out/out.h"
#include "rbinspect.h"

/* Fibers shown unless --max-fibers says otherwise. */
#define BT_FIBERS_DEFAULT 100
#define LIST_FIBERS_DEFAULT 10000

/* A thread kept for its header (names copied). */
struct kept_thread {
	struct rbi_thread th;
	char *name, *error_msg;
};

struct fctx {
	struct session *s;
	struct rbi_json j;
	bool bt;                /* bt --fibers: frames; else one line each */
	size_t max_frames;
	bool locals;            /* bt --fibers --locals */
	size_t max_value;       /* its --max-value-bytes */
	struct kept_thread *th;
	size_t nth, capth;
	unsigned header;        /* the thread whose header was printed last */
	bool others;            /* past the chains: the other fibers */
	size_t terminated;      /* not shown by bt --fibers */
	size_t frames, shown;
	bool truncated;
	int rc;                 /* a frame walk's failure, for the exit code */
};

static int keep_thread(const struct rbi_thread *th, void *arg)
{
	struct fctx *c = arg;
	struct kept_thread *k;

	if (c->nth == c->capth) {
		size_t cap = c->capth ? 2 * c->capth : 16;

		if (!(k = realloc(c->th, cap * sizeof(*k)))) {
			fputs("rbinspect: out of memory\n", stderr);
			return RBI_NOMEM;
		}
		c->th = k;
		c->capth = cap;
	}
	k = &c->th[c->nth++];
	k->th = *th;
	k->name = th->name ? strdup(th->name) : NULL;
	k->error_msg = strdup(th->error_msg ? th->error_msg : "");
	k->th.name = k->name;
	k->th.error_msg = k->error_msg ? k->error_msg : "";
	return RBI_OK;
}

static void free_threads(struct fctx *c)
{
	for (size_t i = 0; i < c->nth; i++) {
		free(c->th[i].name);
		free(c->th[i].error_msg);
	}
	free(c->th);
}

static const struct rbi_thread *kept(const struct fctx *c, unsigned number)
{
	for (size_t i = 0; i < c->nth; i++)
		if (c->th[i].th.number == number)
			return &c->th[i].th;
	return NULL;
}

/* "suspended", "resumed, current, root", ... */
static void roles_text(FILE *f, const struct rbi_fiber *fb)
{
	fputs(rbi_fiber_status_name(fb->status), f);
	if (fb->current)
		fputs(", current", f);
	if (fb->root)
		fputs(", root", f);
	if (fb->resumed_by)
		fprintf(f, ", resumed by fiber 0x%" PRIx64, fb->resumed_by);
	if (fb->enumerator) {
		fputs(", an enumerator's: ", f);
		rbi_out_text_cstr(f, fb->enumerator);
	}
}

static void fiber_json_fields(struct fctx *c, const struct rbi_fiber *f)
{
	const struct rbi_thread *th = kept(c, f->thread_number);
	struct rbi_json *j = &c->j;

	rbi_json_key(j, "index"); rbi_json_int(j, (int64_t)f->index + 1);
	rbi_json_key(j, "fiber"); rbi_json_addr(j, f->fiber);
	rbi_json_key(j, "object"); rbi_json_addr(j, f->self);
	rbi_json_key(j, "thread");
	if (f->thread_number)
		rbi_json_int(j, f->thread_number);
	else
		rbi_json_null(j);
	rbi_json_key(j, "thread_name"); rbi_json_cstr(j, th ? th->name : NULL);
	rbi_json_key(j, "thread_main"); rbi_json_bool(j, th && th->main);
	rbi_json_key(j, "status"); rbi_json_cstr(j, rbi_fiber_status_name(f->status));
	rbi_json_key(j, "current"); rbi_json_bool(j, f->current);
	rbi_json_key(j, "root"); rbi_json_bool(j, f->root);
	rbi_json_key(j, "chain");
	if (f->chain >= 0)
		rbi_json_int(j, f->chain);
	else
		rbi_json_null(j);
	rbi_json_key(j, "resumed_by"); rbi_json_addr(j, f->resumed_by);
	rbi_json_key(j, "enumerator"); rbi_json_cstr(j, f->enumerator);
}

/* ---- bt --fibers --------------------------------------------------------- */

static int frame_cb(const struct rbi_frame *fr, void *arg)
{
	struct fctx *c = arg;
	int stop;

	if (interrupted())
		return 2;
	if (c->max_frames && c->frames == c->max_frames) {
		c->truncated = true;
		return 1;
	}
	c->frames++;
	if (c->s->json) {
		rbi_json_object(&c->j);
		frame_json_fields(c->s, &c->j, fr);
		stop = c->locals && frame_locals(c->s, &c->j, fr, c->max_value) ? 2 : 0;
		rbi_json_end_object(&c->j);
		return stop;
	}
	frame_line_text(c->s, fr);
	return c->locals && frame_locals(c->s, NULL, fr, c->max_value) ? 2 : 0;
}

/* The header above fiber F: its thread's, or "Other fibers of ...". */
static void group_header(struct fctx *c, const struct rbi_fiber *f)
{
	FILE *out = c->s->out;
	const struct rbi_thread *th = kept(c, f->thread_number);
	bool others = f->chain < 0 && !f->root;

	if (c->shown && f->thread_number == c->header && others == c->others)
		return;
	if (c->shown)
		fputc('\n', out);
	style_begin(c->s, STYLE_HEADER);
	if (others)
		fputs("Other fibers of ", out);
	if (th)
		thread_header_text(c->s, out, th);
	else
		fputs("no live thread", out);
	fputc(':', out);
	style_end(c->s);
	fputc('\n', out);
	c->header = f->thread_number;
	c->others = others;
}

static int bt_fiber(const struct rbi_fiber *f, void *arg)
{
	struct fctx *c = arg;
	FILE *out = c->s->out;
	int rc;

	if (interrupted())
		return 2;
	if (f->status == RBI_FIBER_TERMINATED) {
		c->terminated++;
		return 0;
	}
	c->frames = 0;
	c->truncated = false;
	if (c->s->json) {
		rbi_json_object(&c->j);
		fiber_json_fields(c, f);
		rbi_json_key(&c->j, "frames");
		rbi_json_array(&c->j);
		rc = rbi_fiber_frame_foreach(c->s->target, f, c->max_frames ? c->max_frames + 1 : 0,
					     frame_cb, c);
		rbi_json_end_array(&c->j);
		rbi_json_key(&c->j, "truncated"); rbi_json_bool(&c->j, c->truncated);
		rbi_json_key(&c->j, "error"); rbi_json_cstr(&c->j, rc < 0 ? rbi_errmsg() : NULL);
		rbi_json_end_object(&c->j);
	} else {
		group_header(c, f);
		fprintf(out, "Fiber 0x%" PRIx64, f->fiber);
		if (f->self)
			fprintf(out, " (object 0x%" PRIx64 ")", f->self);
		fputs(" ", out);
		roles_text(out, f);
		fputs(":\n", out);
		rc = rbi_fiber_frame_foreach(c->s->target, f, c->max_frames ? c->max_frames + 1 : 0,
					     frame_cb, c);
		if (c->truncated)
			fprintf(out, "... more frames (shown: the first %zu)\n", c->max_frames);
		if (rc < 0) {
			fputs("error: ", out);
			rbi_out_text_cstr(out, rbi_errmsg());
			fputc('\n', out);
		} else if (!c->frames && rc != 2) {
			fputs(f->status == RBI_FIBER_CREATED ? "(not started)\n" : "(no Ruby frames)\n",
			      out);
		}
	}
	c->shown++;
	if (rc < 0 && !c->rc)
		c->rc = rc;
	return rc == 2 ? 2 : 0;
}

/* ---- fibers -------------------------------------------------------------- */

static int top_frame(const struct rbi_frame *fr, void *arg)
{
	struct fctx *c = arg;

	if (c->s->json) {
		rbi_json_key(&c->j, "top");
		rbi_json_object(&c->j);
		frame_json_fields(c->s, &c->j, fr);
		rbi_json_end_object(&c->j);
	} else {
		frame_line_text(c->s, fr);
	}
	c->frames++;
	return 1;
}

static int list_fiber(const struct rbi_fiber *f, void *arg)
{
	struct fctx *c = arg;
	FILE *out = c->s->out;
	int rc;

	if (interrupted())
		return 2;
	c->frames = 0;
	c->shown++;
	if (c->s->json) {
		rbi_json_object(&c->j);
		fiber_json_fields(c, f);
		rc = rbi_fiber_frame_foreach(c->s->target, f, 1, top_frame, c);
		if (!c->frames) {
			rbi_json_key(&c->j, "top");
			rbi_json_null(&c->j);
		}
		rbi_json_end_object(&c->j);
		return 0;
	}
	if (c->shown == 1)
		fputs("   #  FIBER            THREAD STATUS     ROLE      TOP FRAME\n", out);
	fprintf(out, "%4zu  0x%-14" PRIx64 " ", f->index + 1, f->fiber);
	if (f->thread_number)
		fprintf(out, "%-6u ", f->thread_number);
	else
		fputs("-      ", out);
	fprintf(out, "%-10s %-8s  ", rbi_fiber_status_name(f->status),
		f->current ? (f->root ? "cur,root" : "current") : f->root ? "root" :
		f->chain > 0 ? "resumer" : f->enumerator ? "enum" : "");
	rc = rbi_fiber_frame_foreach(c->s->target, f, 1, top_frame, c);
	if (!c->frames)
		fputs(rc < 0 ? "(frames unreadable)\n" : "(no frames)\n", out);
	return 0;
}

/* ---- the commands -------------------------------------------------------- */

/* "N fibers": what was left out and why the list may be off. */
static void summary(struct fctx *c, const struct rbi_fiber_stats *st, size_t max)
{
	FILE *out = c->s->out;

	fputc('\n', out);
	fprintf(out, "%zu fiber%s", st->found, st->found == 1 ? "" : "s");
	if (c->terminated)
		fprintf(out, ", %zu terminated not shown", c->terminated);
	if (st->delivered < st->found)
		fprintf(out, ", %zu not shown (--max-fibers %zu; 0: all)",
			st->found - st->delivered, max);
	fputc('\n', out);
	if (st->approximate)
		fputs("(approximate: the heap changed while it was searched)\n", out);
}

static int run(struct session *s, struct fctx *c, size_t max, rbi_fiber_fn fn)
{
	struct rbi_fiber_stats st = { .size = sizeof(st) };
	int rc;

	if ((rc = rbi_thread_foreach(s->target, keep_thread, c)) < 0) {
		free_threads(c);
		return session_failure(s, rc);
	}
	if (s->json) {
		rbi_json_init(&c->j, s->out);
		rbi_json_object(&c->j);
		rbi_json_key(&c->j, "fibers");
		rbi_json_array(&c->j);
	}
	rc = rbi_fiber_foreach(s->target, max, fn, c, &st);
	if (s->json) {
		rbi_json_end_array(&c->j);
		rbi_json_key(&c->j, "found"); rbi_json_int(&c->j, (int64_t)st.found);
		rbi_json_key(&c->j, "shown"); rbi_json_int(&c->j, (int64_t)st.delivered);
		rbi_json_key(&c->j, "approximate"); rbi_json_bool(&c->j, st.approximate);
		rbi_json_key(&c->j, "error");
		rbi_json_cstr(&c->j, rc < 0 ? rbi_errmsg() : NULL);
		rbi_json_end_object(&c->j);
	} else if (!rc) {
		summary(c, &st, max);
	}
	free_threads(c);
	if (rc == 2) {
		fflush(s->out);
		fputs("rbinspect: interrupted\n", stderr);
		return EXIT_INTERRUPTED;
	}
	if (rc)
		return session_failure(s, rc);
	return c->rc ? exit_code_for(c->rc) : EXIT_OK;
}

int bt_fibers(struct session *s, size_t max_frames, size_t max_fibers, bool locals,
	      size_t max_value)
{
	struct fctx c = { .s = s, .bt = true, .max_frames = max_frames, .locals = locals,
			  .max_value = max_value };

	return run(s, &c, max_fibers, bt_fiber);
}

/* --max-fibers N (or =N) at ARGV[*I] into *MAX: 1 if it was, 0 if it is
   another word, -1 after a usage message. */
int parse_max_fibers(const char *cmd, int argc, char **argv, int *i, size_t *max)
{
	const char *a = argv[*i], *val;
	unsigned long v;

	if (strcmp(a, "--max-fibers") && strncmp(a, "--max-fibers=", 13))
		return 0;
	val = a[12] == '=' ? a + 13 : (*i + 1 < argc ? argv[++*i] : NULL);
	if (!val || parse_count(val, SIZE_MAX / 2, &v)) {
		fprintf(stderr, "rbinspect: %s: --max-fibers needs a number (0: all)\n", cmd);
		return -1;
	}
	*max = v;
	return 1;
}

size_t bt_fibers_default_max(void)
{
	return BT_FIBERS_DEFAULT;
}

int cmd_fibers(struct session *s, int argc, char **argv)
{
	struct fctx c = { .s = s };
	size_t max = LIST_FIBERS_DEFAULT;
	bool json = s->json;
	int rc;

	if ((rc = target_gone(s, "fibers")))
		return rc;
	for (int i = 1; i < argc; i++) {
		rc = parse_max_fibers("fibers", argc, argv, &i, &max);
		if (rc == 1)
			continue;
		if (rc == 0)
			fprintf(stderr, "rbinspect: fibers: unknown argument \"%s\" (usage: "
				"fibers [--max-fibers N] [--json])\n", argv[i]);
		s->json = json;
		return EXIT_USAGE;
	}
	rc = run(s, &c, max, list_fiber);
	s->json = json;
	return rc;
}

/* ---- fiber N: the selection `frame` reads ----------------------------------- */

struct find {
	uint64_t fiber;         /* by address, or ... */
	size_t index;           /* ... by number (1, 2 ...) */
	bool found;
	struct rbi_fiber f;
};

static int find_cb(const struct rbi_fiber *f, void *arg)
{
	struct find *x = arg;

	if (x->fiber ? f->fiber != x->fiber : f->index + 1 != x->index)
		return 0;
	x->found = true;
	x->f = *f;
	return 1;
}

int session_fiber(struct session *s, struct rbi_thread *th)
{
	struct find x = { .fiber = s->fiber };
	int rc = rbi_fiber_foreach(s->target, 0, find_cb, &x, NULL);

	if (rc < 0)
		return session_failure(s, rc);
	if (!x.found) {
		fprintf(stderr, "rbinspect: fiber 0x%" PRIx64 " is gone; see \"fibers\"\n",
			s->fiber);
		s->fiber = 0;
		return EXIT_USAGE;
	}
	rbi_fiber_as_thread(&x.f, th);
	return EXIT_OK;
}

int cmd_fiber(struct session *s, int argc, char **argv)
{
	struct find x = { 0 };
	unsigned long v;
	int rc;

	if ((rc = target_gone(s, "fiber")))
		return rc;
	if (argc > 2 || (argc == 2 && (parse_count(argv[1], SIZE_MAX / 2, &v) || !v))) {
		fprintf(stderr, "rbinspect: fiber: usage: fiber [N] (N as \"fibers\" numbers "
			"them)\n");
		return EXIT_USAGE;
	}
	if (argc == 1) {
		if (s->fiber)
			fprintf(s->out, "Selected fiber 0x%" PRIx64 "\n", s->fiber);
		else
			fputs("No fiber selected: \"frame\" reads the selected thread\n", s->out);
		return EXIT_OK;
	}
	x.index = v;
	rc = rbi_fiber_foreach(s->target, v, find_cb, &x, NULL);
	if (rc < 0)
		return session_failure(s, rc);
	if (!x.found) {
		fprintf(stderr, "rbinspect: fiber: no fiber %lu; see \"fibers\"\n", v);
		return EXIT_USAGE;
	}
	s->fiber = x.f.fiber;
	s->frame = 0;
	fprintf(s->out, "Selected fiber 0x%" PRIx64 " (", x.f.fiber);
	roles_text(s->out, &x.f);
	fputs(")\n", s->out);
	return EXIT_OK;
}
