/* cmd-frame.c: `thread [N]` selects a thread, `frame [N]` shows one frame
 * of it: label, path, line, self and local variables. */
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "out/out.h"
#include "rbinspect.h"

#define NAME_CAP 256
#define VALUE_BUF 4096
/* String values shown in full up to this many bytes, unless told. */
#define STRING_SHOWN 200

/* ---- Finding the selected thread --------------------------------------- */

struct pick {
	unsigned want;          /* 0: the main thread */
	bool found;
	struct rbi_thread th;
	char name[NAME_CAP], error[NAME_CAP];
};

static int pick_thread(const struct rbi_thread *th, void *arg)
{
	struct pick *p = arg;

	if (p->want ? th->number != p->want : !th->main)
		return 0;
	p->found = true;
	p->th = *th;
	if (th->name) {
		snprintf(p->name, sizeof(p->name), "%s", th->name);
		p->th.name = p->name;
	}
	snprintf(p->error, sizeof(p->error), "%s", th->error_msg ? th->error_msg : "");
	p->th.error_msg = p->error;
	return 1;
}

/* Thread WANT (0: the main thread) into P; an exit code on failure. */
static int find_thread(struct session *s, unsigned want, struct pick *p,
		       const char *cmd)
{
	int rc;

	memset(p, 0, sizeof(*p));
	p->want = want;
	rc = rbi_thread_foreach(s->target, pick_thread, p);
	if (rc < 0)
		return session_failure(s, rc);
	if (!p->found) {
		if (want)
			fprintf(stderr, "rbinspect: %s: no thread %u; see \"threads\"\n",
				cmd, want);
		else
			fprintf(stderr, "rbinspect: %s: no main thread\n", cmd);
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

int cmd_thread(struct session *s, int argc, char **argv)
{
	unsigned long v = s->thread;
	struct pick p;
	int rc;

	if ((rc = target_gone(s, "thread")))
		return rc;
	if (argc > 2 || (argc == 2 && (parse_count(argv[1], UINT_MAX, &v) || !v))) {
		fprintf(stderr, "rbinspect: thread: usage: thread [N] (N as \"threads\" "
			"numbers them)\n");
		return EXIT_USAGE;
	}
	if ((rc = find_thread(s, (unsigned)v, &p, "thread")))
		return rc;
	if (argc == 2) {
		s->thread = (unsigned)v;
		s->frame = 0;
		s->fiber = 0;
	}
	if (s->json) {
		struct rbi_json j;

		rbi_json_init(&j, s->out);
		rbi_json_object(&j);
		thread_json_fields(s, &j, &p.th);
		rbi_json_end_object(&j);
		return EXIT_OK;
	}
	fputs(argc == 2 ? "Selected " : "Current: ", s->out);
	style_begin(s, STYLE_HEADER);
	thread_header_text(s, s->out, &p.th);
	style_end(s);
	fputc('\n', s->out);
	return EXIT_OK;
}

/* ---- Values ------------------------------------------------------------- */

/* A Ruby-like string literal: quotes and backslashes escaped, the rest
   terminal-safe (rbi_out_text). */
static void quoted(FILE *f, char q, const char *b, size_t len)
{
	size_t start = 0;

	fputc(q, f);
	for (size_t i = 0; i < len; i++) {
		if (b[i] != q)
			continue;
		rbi_out_text(f, b + start, i - start);
		fputc('\\', f);
		fputc(q, f);
		start = i + 1;
	}
	rbi_out_text(f, b + start, len - start);
	fputc(q, f);
}

/* %.17g can print more digits than needed: the shortest that reads back. */
static void print_double(FILE *f, double d)
{
	char buf[64];

	if (d != d) {
		fputs("NaN", f);
		return;
	}
	if (d - d != 0) {
		fputs(d > 0 ? "Infinity" : "-Infinity", f);
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*g", prec, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	/* As Ruby prints them: 1.0, 1.0e+300. */
	char *e = strchr(buf, 'e');

	if (strchr(buf, '.') || strchr(buf, 'n')) {
		fputs(buf, f);
	} else if (e) {
		fprintf(f, "%.*s.0%s", (int)(e - buf), buf, e);
	} else {
		fputs(buf, f);
		fputs(".0", f);
	}
}

/* V as Ruby's inspect would show it, a String cut to MAX bytes. */
static void value_text(struct session *s, const struct rbi_value *v, size_t max)
{
	FILE *f = s->out;
	const char *type;

	switch (v->kind) {
	case RBI_VALUE_NIL: fputs("nil", f); break;
	case RBI_VALUE_TRUE: fputs("true", f); break;
	case RBI_VALUE_FALSE: fputs("false", f); break;
	case RBI_VALUE_UNDEF: fputs("(undef)", f); break;
	case RBI_VALUE_INTEGER: fprintf(f, "%" PRId64, v->integer); break;
	case RBI_VALUE_FLOAT: print_double(f, v->real); break;
	case RBI_VALUE_SYMBOL:
		fputc(':', f);
		rbi_out_text(f, v->bytes, v->len);
		break;
	case RBI_VALUE_STRING:
		quoted(f, '"', v->bytes ? v->bytes : "",
		       v->len > max ? max : v->len);
		if (v->truncated || v->len > max)
			fprintf(f, "... (%" PRIu64 " bytes)", v->full_len);
		break;
	case RBI_VALUE_OBJECT:
		if (v->bytes) {         /* a class or module: its name */
			rbi_out_text(f, v->bytes, v->len);
			fputs(" (", f);
			rbi_out_text_cstr(f, v->class_name ? v->class_name : "?");
			fputc(')', f);
			break;
		}
		fputs("#<", f);
		type = rbi_value_type_name(v->type);
		rbi_out_text_cstr(f, v->class_name ? v->class_name : type ? type : "?");
		fprintf(f, " 0x%016" PRIx64 ">", v->raw);
		break;
	default:
		style_begin(s, STYLE_ERROR);
		fprintf(f, "(unreadable 0x%" PRIx64 ": ", v->raw);
		rbi_out_text_cstr(f, v->error_msg ? v->error_msg : "");
		fputc(')', f);
		style_end(s);
		break;
	}
}

static void value_json(struct rbi_json *j, const struct rbi_value *v)
{
	rbi_json_object(j);
	rbi_json_key(j, "kind"); rbi_json_cstr(j, rbi_value_kind_name(v->kind));
	rbi_json_key(j, "class"); rbi_json_cstr(j, v->class_name);
	rbi_json_key(j, "raw"); rbi_json_addr(j, v->raw);
	if (v->type) {
		rbi_json_key(j, "type");
		rbi_json_cstr(j, rbi_value_type_name(v->type));
	}
	rbi_json_key(j, "value");
	switch (v->kind) {
	case RBI_VALUE_TRUE: rbi_json_bool(j, true); break;
	case RBI_VALUE_FALSE: rbi_json_bool(j, false); break;
	case RBI_VALUE_INTEGER: rbi_json_int(j, v->integer); break;
	case RBI_VALUE_FLOAT: rbi_json_double(j, v->real); break;
	case RBI_VALUE_SYMBOL:
	case RBI_VALUE_STRING:
	case RBI_VALUE_OBJECT:
		if (v->bytes)
			rbi_json_str(j, v->bytes, v->len);
		else
			rbi_json_null(j);
		break;
	default: rbi_json_null(j); break;
	}
	if (v->kind == RBI_VALUE_STRING) {
		rbi_json_key(j, "length"); rbi_json_int(j, (int64_t)v->full_len);
		rbi_json_key(j, "truncated"); rbi_json_bool(j, v->truncated);
	}
	if (v->kind == RBI_VALUE_UNREADABLE) {
		rbi_json_key(j, "error"); rbi_json_cstr(j, v->error_msg);
	}
	rbi_json_end_object(j);
}

/* ---- Self and locals: frame, bt --locals ------------------------------- */

struct vars_ctx {
	struct session *s;
	struct rbi_json *j;     /* NULL: text */
	size_t max;             /* String bytes shown */
	unsigned level;         /* text: the scope being listed */
	size_t shown;           /* text: locals listed */
};

static int local_json(const struct rbi_local *l, void *arg)
{
	struct vars_ctx *c = arg;
	struct rbi_json *j = c->j;

	if (interrupted())
		return 1;
	rbi_json_object(j);
	rbi_json_key(j, "name"); rbi_json_cstr(j, l->name);
	rbi_json_key(j, "level"); rbi_json_int(j, l->level);
	rbi_json_key(j, "index"); rbi_json_int(j, (int64_t)l->index);
	rbi_json_key(j, "internal"); rbi_json_bool(j, l->internal);
	rbi_json_key(j, "argument");
	if (l->argument < 0)
		rbi_json_null(j);
	else
		rbi_json_bool(j, l->argument);
	rbi_json_key(j, "value"); value_json(j, &l->value);
	rbi_json_end_object(j);
	return 0;
}

static int local_text(const struct rbi_local *l, void *arg)
{
	struct vars_ctx *c = arg;
	FILE *f = c->s->out;

	if (interrupted())
		return 1;
	if (l->internal)        /* as Ruby's local_variables: not shown */
		return 0;
	if (!c->shown || l->level != c->level) {
		if (l->level == 0)
			fputs("  locals:\n", f);
		else if (l->level == 1)
			fputs("  locals of the enclosing scope:\n", f);
		else
			fprintf(f, "  locals of enclosing scope %u:\n", l->level);
		c->level = l->level;
	}
	c->shown++;
	fputs("    ", f);
	style_begin(c->s, STYLE_NAME);
	rbi_out_text_cstr(f, l->name ? l->name : "?");
	style_end(c->s);
	fputs(" = ", f);
	value_text(c->s, &l->value, c->max);
	fputc('\n', f);
	return 0;
}

int frame_vars(struct session *s, struct rbi_json *j, const struct rbi_frame *fr, size_t max)
{
	struct vars_ctx c = { .s = s, .j = j, .max = max ? max : STRING_SHOWN };
	char buf[VALUE_BUF];
	struct rbi_value self;
	int rc;

	rbi_value_read(s->target, fr->self, buf, sizeof(buf), &self);
	if (j) {
		rbi_json_key(j, "self"); value_json(j, &self);
		rbi_json_key(j, "locals"); rbi_json_array(j);
		rc = rbi_local_foreach(s->target, fr, c.max, local_json, &c);
		rbi_json_end_array(j);
		return rc;
	}
	fputs("  self: ", s->out);
	value_text(s, &self, c.max);
	fputc('\n', s->out);
	if (fr->kind != RBI_FRAME_RUBY)
		return RBI_OK;
	rc = rbi_local_foreach(s->target, fr, c.max, local_text, &c);
	if (rc == 0 && c.shown == 0)
		fputs("  no local variables\n", s->out);
	return rc;
}

int frame_locals(struct session *s, struct rbi_json *j, const struct rbi_frame *fr,
		 size_t max)
{
	int rc = frame_vars(s, j, fr, max);

	if (rc > 0)
		return 1;
	if (j) {
		rbi_json_key(j, "locals_error");
		rbi_json_cstr(j, rc < 0 ? rbi_errmsg() : NULL);
	} else if (rc < 0) {
		style_begin(s, STYLE_ERROR);
		fputs("  locals: ", s->out);
		rbi_out_text_cstr(s->out, rbi_errmsg());
		style_end(s);
		fputc('\n', s->out);
	}
	return 0;
}

/* ---- frame N ------------------------------------------------------------ */

struct frame_ctx {
	struct session *s;
	struct rbi_json j;
	const struct rbi_thread *th;
	size_t want;
	int locals_rc;          /* rbi_local_foreach's */
	const struct expr *expr; /* p: what to print */
	int eval_rc;            /* p: the library's status */
};

static void frame_text(struct frame_ctx *c, const struct rbi_frame *fr)
{
	struct session *s = c->s;
	FILE *f = s->out;

	style_begin(s, STYLE_HEADER);
	fprintf(f, "#%zu", fr->index);
	style_end(s);
	fputs("  ", f);
	style_begin(s, STYLE_LABEL);
	rbi_out_text_cstr(f, fr->label ? fr->label : "(unknown method)");
	style_end(s);
	fprintf(f, " (%s%s)\n", fr->kind == RBI_FRAME_CFUNC ? "C method, " : "",
		rbi_frame_type_name(fr->type));
	fputs("  at ", f);
	rbi_out_text_cstr(f, fr->path ? fr->path : "(unknown)");
	if (fr->line)
		fprintf(f, ":%d", fr->line);
	fputc('\n', f);
	c->locals_rc = frame_vars(s, NULL, fr, 0);
	if (fr->kind != RBI_FRAME_RUBY)
		fputs("  (a method written in C: no local variables)\n", f);
}

static void frame_json(struct frame_ctx *c, const struct rbi_frame *fr)
{
	struct rbi_json *j = &c->j;

	rbi_json_object(j);
	rbi_json_key(j, "thread"); rbi_json_object(j);
	thread_json_fields(c->s, j, c->th);
	rbi_json_end_object(j);
	rbi_json_key(j, "frame"); rbi_json_object(j);
	frame_json_fields(c->s, j, fr);
	rbi_json_end_object(j);
	c->locals_rc = frame_vars(c->s, j, fr, 0);
	rbi_json_key(j, "error");
	rbi_json_cstr(j, c->locals_rc < 0 ? rbi_errmsg() : NULL);
	rbi_json_end_object(j);
}

static void frame_found(struct frame_ctx *c, const struct rbi_frame *fr)
{
	if (c->s->json)
		frame_json(c, fr);
	else
		frame_text(c, fr);
}

/* Frame C->want of the selected thread (or fiber) to FN, with C->th set;
   an exit code (its message printed) if there is no such frame. */
static int selected_frame(struct session *s, const char *cmd, struct frame_ctx *c,
			  void (*fn)(struct frame_ctx *c, const struct rbi_frame *fr))
{
	rbi_frame_cursor *cur = NULL;
	const struct rbi_frame *fr = NULL;
	struct pick p;
	int rc;

	if (s->fiber) {
		memset(&p, 0, sizeof(p));
		if ((rc = session_fiber(s, &p.th)))
			return rc;
	} else if ((rc = find_thread(s, s->thread, &p, cmd))) {
		return rc;
	}
	if (p.th.error) {
		fprintf(stderr, "rbinspect: %s: thread %u cannot be read: ", cmd, p.th.number);
		rbi_out_text_cstr(stderr, p.th.error_msg);
		fputc('\n', stderr);
		return EXIT_NO_VM;
	}
	rc = rbi_thread_frames_open(s->target, &p.th, 0, c->want + 1, &cur);
	while (rc == RBI_OK && !interrupted() &&
	       (rc = rbi_frame_cursor_next(cur, &fr)) == RBI_OK && fr->index != c->want)
		;
	if (interrupted()) {
		rc = EXIT_INTERRUPTED;
		fflush(s->out);
		fprintf(stderr, "rbinspect: %s: interrupted\n", cmd);
	} else if (rc == RBI_ITER_END) {
		rc = EXIT_USAGE;
		fprintf(stderr, "rbinspect: %s: thread %u has no frame %zu; see \"bt %u\"\n",
			cmd, p.th.number, c->want, p.th.number);
	} else if (rc < 0) {
		rc = session_failure(s, rc);
	} else {
		c->th = &p.th;
		fn(c, fr);
		c->th = NULL;
		rc = EXIT_OK;
	}
	rbi_frame_cursor_free(cur);
	return rc;
}

int cmd_frame(struct session *s, int argc, char **argv)
{
	struct frame_ctx c = { .s = s, .want = s->frame };
	unsigned long v;
	int rc;

	if ((rc = target_gone(s, "frame")))
		return rc;
	for (int i = 1; i < argc; i++) {
		if (!parse_count(argv[i], SIZE_MAX / 2, &v)) {
			c.want = v;
		} else {
			fprintf(stderr, "rbinspect: frame: usage: frame [N] [--json] (N as "
				"\"bt\" counts frames, from 0)\n");
			return EXIT_USAGE;
		}
	}
	rbi_json_init(&c.j, s->out);
	if ((rc = selected_frame(s, "frame", &c, frame_found)))
		return rc;
	s->frame = c.want;
	if (c.locals_rc < 0) {
		if (!s->json) {
			style_begin(s, STYLE_ERROR);
			fputs("  locals: ", s->out);
			rbi_out_text_cstr(s->out, rbi_errmsg());
			style_end(s);
			fputc('\n', s->out);
		}
		return exit_code_for(c.locals_rc);
	}
	return EXIT_OK;
}

/* ---- p EXPR ------------------------------------------------------------- */

/* Steps into a value a p expression takes at most (post.@attributes.@values
   is two). */
#define EXPR_STEPS_MAX 16

/* One step into a value: [INDEX], or .MEMBER (.class, .length, .@ivar...). */
struct expr_step {
	bool index;
	long long at;           /* [AT] */
	char member[NAME_CAP];  /* .MEMBER */
};

/* p's expression, parsed: NAME, then steps into its value. */
struct expr {
	const char *text;       /* as typed */
	char name[NAME_CAP];    /* self, a local, @ivar, $global, Const::PATH */
	struct expr_step steps[EXPR_STEPS_MAX];
	size_t nsteps;
};

/* The punctuation globals (parse.y parser_peek_variable_name's list). */
#define SPECIAL_GLOBALS "~*$?!@/\\;,.=:<>\"&`'+0"

static bool word_char(char ch)
{
	return ch == '_' || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	       (ch >= '0' && ch <= '9') || (unsigned char)ch >= 0x80;
}

/* The step at *P into ST: [I], .WORD or .@WORD; *P moves past it.  False
   if there is none. */
static bool step_parse(const char **p, struct expr_step *st)
{
	const char *q = *p, *start;
	char *end;

	if (*q == '[') {
		st->index = true;
		st->at = strtoll(q + 1, &end, 10);
		if (end == q + 1 || *end != ']')
			return false;
		*p = end + 1;
		return true;
	}
	if (*q != '.')
		return false;
	start = ++q;
	if (*q == '@')
		q++;
	while (word_char(*q))
		q++;
	if (q == start || q[-1] == '@' || (size_t)(q - start) >= sizeof(st->member))
		return false;
	memcpy(st->member, start, (size_t)(q - start));
	*p = q;
	return true;
}

/* TEXT into E: NAME then up to EXPR_STEPS_MAX steps; false if it is not
   one. */
static bool expr_parse(const char *text, struct expr *e)
{
	const char *p = text, *start;

	memset(e, 0, sizeof(*e));
	e->text = text;
	start = p;
	if (p[0] == '$' && p[1] && strchr(SPECIAL_GLOBALS, p[1]))
		p += 2;         /* $~, $, ...: one punctuation character */
	else if (p[0] == '$' && p[1] == '-' && word_char(p[2]))
		p += 3;         /* $-w, $-0 */
	else if (*p == '@' || *p == '$')
		p++;
	while (word_char(*p) || (p[0] == ':' && p[1] == ':' && word_char(p[2])))
		p += *p == ':' ? 2 : 1;
	if (p == start || (size_t)(p - start) >= sizeof(e->name))
		return false;
	memcpy(e->name, start, (size_t)(p - start));
	while (*p) {
		if (e->nsteps == EXPR_STEPS_MAX || !step_parse(&p, &e->steps[e->nsteps]))
			return false;
		e->nsteps++;
	}
	return true;
}

/* What E denotes in frame FR, into *V: the library's status. */
static int expr_eval(struct session *s, const struct expr *e, const struct rbi_frame *fr,
		     uint64_t *v)
{
	int rc = rbi_frame_lookup(s->target, fr, e->name, v);

	for (size_t i = 0; i < e->nsteps && !rc; i++)
		rc = e->steps[i].index ? rbi_value_at(s->target, *v, e->steps[i].at, v)
				       : rbi_value_member(s->target, *v, e->steps[i].member, v);
	return rc;
}

static void print_found(struct frame_ctx *c, const struct rbi_frame *fr)
{
	char buf[VALUE_BUF];
	struct rbi_value val;
	uint64_t v;

	if ((c->eval_rc = expr_eval(c->s, c->expr, fr, &v)))
		return;
	rbi_value_read(c->s->target, v, buf, sizeof(buf), &val);
	if (c->s->json) {
		rbi_json_object(&c->j);
		rbi_json_key(&c->j, "expression"); rbi_json_cstr(&c->j, c->expr->text);
		rbi_json_key(&c->j, "thread"); rbi_json_int(&c->j, c->th->number);
		rbi_json_key(&c->j, "frame"); rbi_json_int(&c->j, (int64_t)fr->index);
		rbi_json_key(&c->j, "value"); value_json(&c->j, &val);
		rbi_json_end_object(&c->j);
	} else {
		value_text(c->s, &val, STRING_SHOWN);
		fputc('\n', c->s->out);
	}
}

int cmd_print(struct session *s, int argc, char **argv)
{
	struct frame_ctx c = { .s = s, .want = s->frame };
	struct expr e;
	int rc;

	if ((rc = target_gone(s, argv[0])))
		return rc;
	if (argc != 2 || !expr_parse(argv[1], &e)) {
		fprintf(stderr, "rbinspect: %s: usage: %s NAME[.MEMBER|.@IVAR|[I]]... (NAME: self, "
			"a local variable of the selected frame, @ivar, $global, Foo::BAR)\n",
			argv[0], argv[0]);
		return EXIT_USAGE;
	}
	c.expr = &e;
	rbi_json_init(&c.j, s->out);
	if ((rc = selected_frame(s, argv[0], &c, print_found)))
		return rc;
	if (c.eval_rc) {
		fprintf(stderr, "rbinspect: %s: ", argv[0]);
		rbi_out_text_cstr(stderr, rbi_errmsg());
		fputc('\n', stderr);
		return exit_code_for(c.eval_rc);
	}
	return EXIT_OK;
}

/* ---- info args --------------------------------------------------------- */

struct args_ctx {
	struct frame_ctx f;
	size_t shown;
	bool unknown;           /* the layout cannot tell parameters */
};

static int arg_found(const struct rbi_local *l, void *arg)
{
	struct args_ctx *c = arg;
	FILE *f = c->f.s->out;

	if (interrupted())
		return 1;
	if (l->argument < 0) {
		c->unknown = true;
		return 1;
	}
	/* gdb's info args: the frame's own method or block, not the scopes
	   around a block. */
	if (l->level > 0)
		return 1;
	if (!l->argument || l->internal)
		return 0;
	c->shown++;
	if (c->f.s->json) {
		rbi_json_object(&c->f.j);
		rbi_json_key(&c->f.j, "name"); rbi_json_cstr(&c->f.j, l->name);
		rbi_json_key(&c->f.j, "index"); rbi_json_int(&c->f.j, (int64_t)l->index);
		rbi_json_key(&c->f.j, "value"); value_json(&c->f.j, &l->value);
		rbi_json_end_object(&c->f.j);
		return 0;
	}
	style_begin(c->f.s, STYLE_NAME);
	rbi_out_text_cstr(f, l->name ? l->name : "?");
	style_end(c->f.s);
	fputs(" = ", f);
	value_text(c->f.s, &l->value, STRING_SHOWN);
	fputc('\n', f);
	return 0;
}

static void args_frame(struct frame_ctx *fc, const struct rbi_frame *fr)
{
	struct args_ctx *c = (struct args_ctx *)fc;      /* its first member */
	struct rbi_json *j = &c->f.j;
	int rc;

	if (c->f.s->json) {
		rbi_json_object(j);
		rbi_json_key(j, "thread"); rbi_json_int(j, c->f.th->number);
		rbi_json_key(j, "frame"); rbi_json_int(j, (int64_t)fr->index);
		rbi_json_key(j, "arguments"); rbi_json_array(j);
	}
	rc = rbi_local_foreach(c->f.s->target, fr, STRING_SHOWN, arg_found, c);
	c->f.locals_rc = rc < 0 ? rc : RBI_OK;
	if (c->f.s->json) {
		rbi_json_end_array(j);
		rbi_json_key(j, "error");
		rbi_json_cstr(j, rc < 0 ? rbi_errmsg() : c->unknown ?
			      "this Ruby's layout does not say which locals are parameters" :
			      NULL);
		rbi_json_end_object(j);
	} else if (rc >= 0 && !c->unknown && !c->shown) {
		fputs("No arguments.\n", c->f.s->out);
	}
}

int frame_args(struct session *s)
{
	struct args_ctx c = { .f = { .s = s, .want = s->frame } };
	int rc;

	if ((rc = target_gone(s, "info args")))
		return rc;
	rbi_json_init(&c.f.j, s->out);
	if ((rc = selected_frame(s, "info args", &c.f, args_frame)))
		return rc;
	if (c.f.locals_rc < 0)
		return report_failure(c.f.locals_rc);
	if (c.unknown) {
		fputs("rbinspect: info args: this Ruby's built-in layout does not say which "
		      "locals are parameters (no iseq parameter size): install its debug "
		      "info, or see \"info locals\"\n", stderr);
		return EXIT_NO_LAYOUT;
	}
	return EXIT_OK;
}

/* up [N] / down [N]: frame s->frame + DIR * N, as gdb's up and down. */
static int frame_step(struct session *s, int argc, char **argv, int dir)
{
	unsigned long n = 1;
	char buf[32], *fargv[] = { "frame", buf };

	if (argc > 2 || (argc == 2 && parse_count(argv[1], SIZE_MAX / 4, &n))) {
		fprintf(stderr, "rbinspect: %s: usage: %s [N] (N frames, 1 if not given)\n",
			argv[0], argv[0]);
		return EXIT_USAGE;
	}
	if (dir < 0 && n > s->frame) {
		fprintf(stderr, "rbinspect: down: frame %zu is selected: no frame further in "
			"than frame 0\n", s->frame);
		return EXIT_USAGE;
	}
	snprintf(buf, sizeof(buf), "%zu", dir < 0 ? s->frame - n : s->frame + n);
	return cmd_frame(s, 2, fargv);
}

int cmd_up(struct session *s, int argc, char **argv)
{
	return frame_step(s, argc, argv, 1);
}

int cmd_down(struct session *s, int argc, char **argv)
{
	return frame_step(s, argc, argv, -1);
}
