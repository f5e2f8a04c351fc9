/* cmd-bt.c: `bt [all|N] [--max-frames N] [--native] [--locals]`: Ruby
 * backtraces, one block per thread, each frame as Ruby 3.4 prints it:
 * path:line:in 'label', with --locals followed by its self and locals;
 * with --native (or `set native on`) merged with native frames
 * (bt-native.c). */
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "out/out.h"
#include "rbinspect.h"

struct bt_ctx {
	struct session *s;
	struct rbi_json j;
	unsigned want;          /* thread number, 0: all */
	size_t max;             /* frames per thread, 0: all */
	bool native;            /* --native */
	bool fibers;            /* --fibers */
	bool locals;            /* --locals */
	size_t max_value;       /* --max-value-bytes: String bytes shown */
	size_t max_fibers;
	size_t count;           /* frames of the current thread */
	bool truncated;
	unsigned shown;
	int32_t crashed_tid;    /* the thread shown first; 0: none */
	bool crashed_pass;      /* showing only that thread now */
	bool crashed_shown;
};

/* --max-value-bytes at most: the library reads no longer Strings. */
#define VALUE_BYTES_MAX (1u << 20)

/* Stop a walk: the interrupt (Ctrl-C) or the frame limit. */
#define STOP_INTERRUPTED 2

/* Before a frame is shown: 0 to show it (counted), else what stops the
   walk (STOP_INTERRUPTED, or 1 at the frame limit). */
static int frame_next(struct bt_ctx *c)
{
	if (interrupted())
		return STOP_INTERRUPTED;
	if (c->max && c->count == c->max) {
		c->truncated = true;
		return 1;
	}
	c->count++;
	return 0;
}

void cut_text(FILE *out, uint64_t cut)
{
	if (cut)
		fprintf(out, "\u2026[+%" PRIu64 " bytes]", cut);
}

void frame_line_text(struct session *s, const struct rbi_frame *f)
{
	FILE *out = s->out;

	rbi_out_text_cstr(out, f->path ? f->path : "(unknown)");
	cut_text(out, f->path_cut);
	if (f->line)
		fprintf(out, ":%d", f->line);
	else if (f->line_error)
		fputs(":?", out);
	if (f->label) {
		fputs(":in '", out);
		style_begin(s, STYLE_LABEL);
		rbi_out_text_cstr(out, f->label);
		style_end(s);
		fputc('\'', out);
		cut_text(out, f->label_cut);
	} else {
		fputs(":in unknown method", out);
	}
	if (f->line_error) {
		fputs(" (line unknown: ", out);
		rbi_out_text_cstr(out, f->line_error);
		fputc(')', out);
		s->bad_values++;
	}
	fputc('\n', out);
}

static int frame_text(const struct rbi_frame *f, void *arg)
{
	struct bt_ctx *c = arg;
	int stop = frame_next(c);

	if (stop)
		return stop;
	frame_line_text(c->s, f);
	if (c->locals && frame_locals(c->s, NULL, f, c->max_value))
		return STOP_INTERRUPTED;
	return 0;
}

void frame_json_fields(struct session *s, struct rbi_json *j, const struct rbi_frame *f)
{
	rbi_json_key(j, "index"); rbi_json_int(j, (int64_t)f->index);
	rbi_json_key(j, "kind"); rbi_json_cstr(j, f->kind == RBI_FRAME_CFUNC ? "cfunc" : "ruby");
	rbi_json_key(j, "type"); rbi_json_cstr(j, rbi_frame_type_name(f->type));
	rbi_json_key(j, "label"); rbi_json_cstr(j, f->label);
	rbi_json_key(j, "own_label"); rbi_json_cstr(j, f->own_label);
	rbi_json_key(j, "base_label"); rbi_json_cstr(j, f->base_label);
	rbi_json_key(j, "label_cut"); rbi_json_int(j, (int64_t)f->label_cut);
	rbi_json_key(j, "own_label_cut"); rbi_json_int(j, (int64_t)f->own_label_cut);
	rbi_json_key(j, "base_label_cut"); rbi_json_int(j, (int64_t)f->base_label_cut);
	rbi_json_key(j, "path"); rbi_json_cstr(j, f->path);
	rbi_json_key(j, "path_cut"); rbi_json_int(j, (int64_t)f->path_cut);
	rbi_json_key(j, "line"); rbi_json_int(j, f->line);
	rbi_json_key(j, "line_error"); rbi_json_cstr(j, f->line_error);
	s->bad_values += f->line_error != NULL;
	rbi_json_key(j, "cfp"); rbi_json_addr(j, f->cfp);
	rbi_json_key(j, "iseq"); rbi_json_addr(j, f->iseq);
	rbi_json_key(j, "pc"); rbi_json_addr(j, f->pc);
	rbi_json_key(j, "cme"); rbi_json_addr(j, f->cme);
	rbi_json_key(j, "self"); rbi_json_addr(j, f->self);
}

static int frame_json(const struct rbi_frame *f, void *arg)
{
	struct bt_ctx *c = arg;
	struct rbi_json *j = &c->j;
	int stop = frame_next(c);

	if (stop)
		return stop;
	rbi_json_object(j);
	frame_json_fields(c->s, j, f);
	stop = c->locals && frame_locals(c->s, j, f, c->max_value) ? STOP_INTERRUPTED : 0;
	rbi_json_end_object(j);
	return stop;
}

/* A failure that no other thread would escape (the process gone; for a
   native walk, no ptrace permission, a backend without registers): it ends
   the command, with its exit status, rather than repeat under every
   thread. */
/* A thread that exited while read (RBI_THREAD_GONE) is that thread's line:
   thread pools grow and shrink. */
static bool whole_target_failure(const struct bt_ctx *c, int rc)
{
	return rc == RBI_GONE ||
	       (c->native && (rc == RBI_PERM || rc == RBI_BUSY || rc == RBI_UNSUPPORTED));
}

static int thread_bt(const struct rbi_thread *th, void *arg)
{
	struct bt_ctx *c = arg;
	FILE *out = c->s->out;
	int rc = 0;

	if (c->want && th->number != c->want)
		return 0;
	/* The thread that crashed first, then the others in Ruby's order. */
	if (c->crashed_tid && !c->want &&
	    (th->tid == c->crashed_tid) != c->crashed_pass)
		return 0;
	if (c->crashed_pass)
		c->crashed_shown = true;
	if (interrupted())
		return STOP_INTERRUPTED;
	c->shown++;
	c->count = 0;
	c->truncated = false;
	if (c->s->json) {
		rbi_json_object(&c->j);
		thread_json_fields(c->s, &c->j, th);
		if (!th->error && c->native) {
			rc = bt_native(c->s, &c->j, th, c->max, c->locals, c->max_value,
				       &c->truncated);
			if (whole_target_failure(c, rc)) {
				rbi_json_end_object(&c->j);
				return rc;
			}
			rbi_json_key(&c->j, "truncated"); rbi_json_bool(&c->j, c->truncated);
			rbi_json_key(&c->j, "error");
			rbi_json_cstr(&c->j, rc < 0 ? rbi_errmsg() : NULL);
		} else if (!th->error) {
			rbi_json_key(&c->j, "frames");
			rbi_json_array(&c->j);
			/* One more than shown, to know whether there are more. */
			rc = rbi_frame_foreach(c->s->target, th, c->max ? c->max + 1 : 0,
					       frame_json, c);
			rbi_json_end_array(&c->j);
			if (whole_target_failure(c, rc)) {
				rbi_json_end_object(&c->j);
				return rc;
			}
			rbi_json_key(&c->j, "truncated"); rbi_json_bool(&c->j, c->truncated);
			rbi_json_key(&c->j, "error");
			rbi_json_cstr(&c->j, rc < 0 ? rbi_errmsg() : NULL);
		}
		rbi_json_end_object(&c->j);
		return rc == STOP_INTERRUPTED ? rc : 0;
	}
	if (c->shown > 1)
		fputc('\n', out);
	style_begin(c->s, STYLE_HEADER);
	thread_header_text(c->s, out, th);
	fputs(th->error ? "" : ":", out);
	style_end(c->s);
	fputc('\n', out);
	if (th->error)
		return 0;
	if (c->native)
		rc = bt_native(c->s, NULL, th, c->max, c->locals, c->max_value, &c->truncated);
	else
		rc = rbi_frame_foreach(c->s->target, th, c->max ? c->max + 1 : 0,
				       frame_text, c);
	if (rc == STOP_INTERRUPTED || whole_target_failure(c, rc))
		return rc;
	if (c->truncated)
		fprintf(out, "... more frames (shown: the first %zu)\n", c->max);
	if (rc < 0) {
		fputs("error: ", out);
		rbi_out_text_cstr(out, rbi_errmsg());
		fputc('\n', out);
	} else if (c->count == 0 && !c->native) {
		fputs("(no Ruby frames)\n", out);
	}
	return 0;
}

/* Every thread (or C->want) through thread_bt, the one that crashed
   first; in JSON, inside {"threads": [...], "crash": ...}. */
static int bt_threads(struct session *s, struct bt_ctx *c)
{
	const struct rbi_crash *crash = session_crash(s);
	int rc;

	if (s->json) {
		rbi_json_init(&c->j, s->out);
		rbi_json_object(&c->j);
		crash_json(s, &c->j);
		rbi_json_key(&c->j, "threads");
		rbi_json_array(&c->j);
	}
	c->crashed_tid = crash ? crash->signal.tid : 0;
	c->crashed_pass = c->crashed_tid != 0;
	rc = c->crashed_pass ? rbi_thread_foreach(s->target, thread_bt, c) : RBI_OK;
	c->crashed_pass = false;
	if (!rc)
		rc = rbi_thread_foreach(s->target, thread_bt, c);
	if (s->json) {
		rbi_json_end_array(&c->j);
		if (rc && rc != STOP_INTERRUPTED) {
			rbi_json_key(&c->j, "error");
			rbi_json_cstr(&c->j, rbi_errmsg());
		}
		rbi_json_end_object(&c->j);
	} else if (!rc && crash && !c->want && !c->crashed_shown) {
		/* The signal hit a thread Ruby does not know (a C library's
		   own thread, or one between Ruby threads' lives). */
		fprintf(s->out, "\nThe process died in tid %d, which is no Ruby thread: ",
			(int)crash->signal.tid);
		crash_text(s->out, crash);
		fputc('\n', s->out);
	}
	return rc;
}

int cmd_bt(struct session *s, int argc, char **argv)
{
	struct bt_ctx c = { .s = s, .max = s->max_frames, .native = s->native,
			    .max_fibers = bt_fibers_default_max() };
	bool json = s->json;
	unsigned long v;
	int rc;

	if ((rc = target_gone(s, "bt")))
		return rc;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = NULL;

		if (!strcmp(a, "all")) {
			c.want = 0;
		} else if (!strcmp(a, "--native")) {
			c.native = true;
		} else if (!strcmp(a, "--fibers")) {
			c.fibers = true;
		} else if (!strcmp(a, "--locals")) {
			c.locals = true;
		} else if (!strcmp(a, "--max-value-bytes") ||
			   !strncmp(a, "--max-value-bytes=", 18)) {
			val = a[17] == '=' ? a + 18 : (i + 1 < argc ? argv[++i] : NULL);
			if (!val || parse_count(val, VALUE_BYTES_MAX, &v) || !v) {
				fprintf(stderr, "rbinspect: bt: --max-value-bytes needs a number "
					"from 1 to %u\n", VALUE_BYTES_MAX);
				s->json = json;
				return EXIT_USAGE;
			}
			c.max_value = v;
		} else if ((rc = parse_max_fibers("bt", argc, argv, &i, &c.max_fibers))) {
			if (rc < 0) {
				s->json = json;
				return EXIT_USAGE;
			}
		} else if (!strcmp(a, "--max-frames") || !strncmp(a, "--max-frames=", 13)) {
			val = a[12] == '=' ? a + 13 : (i + 1 < argc ? argv[++i] : NULL);
			if (!val || parse_count(val, SIZE_MAX / 2, &v)) {
				fprintf(stderr, "rbinspect: bt: --max-frames needs a number\n");
				s->json = json;
				return EXIT_USAGE;
			}
			c.max = v;
		} else if (!parse_count(a, UINT_MAX, &v) && v > 0) {
			c.want = (unsigned)v;
		} else {
			fprintf(stderr, "rbinspect: bt: unknown argument \"%s\" (usage: bt "
				"[all|N] [--max-frames N] [--native] [--fibers [--max-fibers N]] "
				"[--locals [--max-value-bytes N]])\n",
				a);
			s->json = json;
			return EXIT_USAGE;
		}
	}
	if (c.max_value && !c.locals) {
		fprintf(stderr, "rbinspect: bt: --max-value-bytes cuts the values --locals "
			"shows: give --locals too\n");
		s->json = json;
		return EXIT_USAGE;
	}
	if (c.fibers) {
		if (c.native || c.want) {
			fprintf(stderr, "rbinspect: bt: --fibers shows every fiber of every "
				"thread, without native frames\n");
			s->json = json;
			return EXIT_USAGE;
		}
		rc = bt_fibers(s, c.max, c.max_fibers, c.locals, c.max_value);
		s->json = json;
		return rc;
	}
	rc = bt_threads(s, &c);
	s->json = json;
	if (rc == STOP_INTERRUPTED) {
		fflush(s->out);
		fputs("rbinspect: bt: interrupted\n", stderr);
		return EXIT_INTERRUPTED;
	}
	if (rc)
		return session_failure(s, rc);
	if (c.want && !c.shown) {
		fprintf(stderr, "rbinspect: bt: no thread %u; see \"threads\"\n", c.want);
		return EXIT_USAGE;
	}
	return EXIT_OK;
}
