/* cmd-threads.c: `threads`: one line per Ruby thread.  Also the thread
 * header and JSON fields that `bt` and `frame` share. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "out/out.h"
#include "rbinspect.h"

void thread_json_fields(struct session *s, struct rbi_json *j, const struct rbi_thread *th)
{
	int32_t host;

	rbi_json_key(j, "number"); rbi_json_int(j, th->number);
	rbi_json_key(j, "thread"); rbi_json_addr(j, th->thread);
	if (th->error) {
		rbi_json_key(j, "error"); rbi_json_cstr(j, th->error_msg);
		return;
	}
	rbi_json_key(j, "self"); rbi_json_addr(j, th->self);
	rbi_json_key(j, "name"); rbi_json_cstr(j, th->name);
	rbi_json_key(j, "tid");
	if (th->tid)
		rbi_json_int(j, th->tid);
	else
		rbi_json_null(j);
	rbi_json_key(j, "host_tid");
	if ((host = rbi_target_host_tid(s->target, th->tid)))
		rbi_json_int(j, host);
	else
		rbi_json_null(j);
	rbi_json_key(j, "pthread"); rbi_json_addr(j, th->pthread);
	rbi_json_key(j, "status"); rbi_json_cstr(j, rbi_thread_status_name(th->status));
	rbi_json_key(j, "main"); rbi_json_bool(j, th->main);
	rbi_json_key(j, "gvl"); rbi_json_bool(j, th->gvl);
	rbi_json_key(j, "gvl_wait"); rbi_json_bool(j, th->gvl_wait);
	rbi_json_key(j, "ractor"); rbi_json_addr(j, th->ractor);
	rbi_json_key(j, "ractor_id"); rbi_json_int(j, th->ractor_id);
	rbi_json_key(j, "ec"); rbi_json_addr(j, th->ec);
	rbi_json_key(j, "crashed"); rbi_json_bool(j, thread_crashed(s, th));
}

void thread_header_text(struct session *s, FILE *f, const struct rbi_thread *th)
{
	int32_t host;

	fprintf(f, "Thread %u", th->number);
	if (th->error) {
		fprintf(f, " (0x%" PRIx64 "): ", th->thread);
		rbi_out_text_cstr(f, th->error_msg);
		return;
	}
	if (th->name) {
		fputs(" \"", f);
		rbi_out_text_cstr(f, th->name);
		fputc('"', f);
	}
	if (th->main)
		fputs(" (main)", f);
	if (th->tid)
		fprintf(f, " tid %d", (int)th->tid);
	if (th->tid && (host = rbi_target_host_tid(s->target, th->tid)) && host != th->tid)
		fprintf(f, " (host tid %d)", (int)host);
	fprintf(f, " %s", rbi_thread_status_name(th->status));
	if (th->gvl)
		fputs(", holds the GVL", f);
	else if (th->gvl_wait)
		fputs(", waits for the GVL", f);
	if (th->ractor_id > 1)
		fprintf(f, ", ractor %u", th->ractor_id);
	if (thread_crashed(s, th)) {
		fputs(", crashed here: ", f);
		crash_text(f, session_crash(s));
	}
}

/* rbi_thread_foreach(s->target, FN, ARG); with s->json, inside a JSON
   object on J (initialised here) as {"crash": ..., "threads": [...]}, and
   an "error" member if the walk failed. */
static int threads_foreach(struct session *s, struct rbi_json *j, rbi_thread_fn fn, void *arg)
{
	int rc;

	if (s->json) {
		rbi_json_init(j, s->out);
		rbi_json_object(j);
		crash_json(s, j);
		rbi_json_key(j, "threads");
		rbi_json_array(j);
	}
	rc = rbi_thread_foreach(s->target, fn, arg);
	if (s->json) {
		rbi_json_end_array(j);
		if (rc) {
			rbi_json_key(j, "error");
			rbi_json_cstr(j, rbi_errmsg());
		}
		rbi_json_end_object(j);
	}
	return rc;
}

/* The TID column's width without a namespace: "TID" and most tids. */
#define TID_WIDTH_MIN 8

/* One line of the text listing, kept until every thread is read: the TID
   column is as wide as its widest entry ("12 (host 48213)" in a pid
   namespace), so the columns after it line up. */
struct thread_row {
	char tid[48];           /* "" for an error line */
	char *head, *tail;      /* before and after the TID column */
};

struct threads_ctx {
	struct session *s;
	struct rbi_json j;
	struct thread_row *rows;
	size_t nrows, cap;
	int tid_width;
};

/* What FN writes to a FILE, as a string (NULL when out of memory). */
static char *sprint_row(void (*fn)(FILE *f, const struct rbi_thread *th, struct threads_ctx *c),
			const struct rbi_thread *th, struct threads_ctx *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	fn(f, th, c);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

static void row_head(FILE *f, const struct rbi_thread *th, struct threads_ctx *c)
{
	(void)c;
	fprintf(f, "%4u  0x%-14" PRIx64 " ", th->number, th->thread);
	if (th->error) {
		fputs("error: ", f);
		rbi_out_text_cstr(f, th->error_msg);
	}
}

static void row_tail(FILE *f, const struct rbi_thread *th, struct threads_ctx *c)
{
	fprintf(f, "%-16s %-4s %-4s ", rbi_thread_status_name(th->status),
		th->main ? "main" : "", th->gvl ? "gvl" : th->gvl_wait ? "wait" : "");
	if (th->name)
		rbi_out_text_cstr(f, th->name);
	if (thread_crashed(c->s, th))
		fputs(th->name ? "  (crashed here)" : "(crashed here)", f);
}

static int thread_line(const struct rbi_thread *th, void *arg)
{
	struct threads_ctx *c = arg;
	struct thread_row *r;
	int32_t host;
	int n;

	if (c->s->json) {
		rbi_json_object(&c->j);
		thread_json_fields(c->s, &c->j, th);
		rbi_json_end_object(&c->j);
		return 0;
	}
	if (c->nrows == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 16;

		if (!(r = realloc(c->rows, cap * sizeof(*r))))
			goto nomem;
		c->rows = r;
		c->cap = cap;
	}
	r = &c->rows[c->nrows];
	*r = (struct thread_row){ 0 };
	if (!(r->head = sprint_row(row_head, th, c)) ||
	    (!th->error && !(r->tail = sprint_row(row_tail, th, c)))) {
		free(r->head);
		goto nomem;
	}
	c->nrows++;
	if (th->error)
		return 0;
	host = rbi_target_host_tid(c->s->target, th->tid);
	if (th->tid && host && host != th->tid)
		n = snprintf(r->tid, sizeof(r->tid), "%d (host %d)", (int)th->tid, (int)host);
	else if (th->tid)
		n = snprintf(r->tid, sizeof(r->tid), "%d", (int)th->tid);
	else
		n = snprintf(r->tid, sizeof(r->tid), "-");
	if (n > c->tid_width)
		c->tid_width = n;
	return 0;
nomem:
	fputs("rbinspect: out of memory\n", stderr);
	return RBI_NOMEM;
}

/* The rows kept, then freed. */
static void rows_print(struct threads_ctx *c)
{
	FILE *f = c->s->out;

	for (size_t i = 0; i < c->nrows; i++) {
		struct thread_row *r = &c->rows[i];

		fputs(r->head, f);
		if (r->tail)
			fprintf(f, "%-*s %s", c->tid_width, r->tid, r->tail);
		fputc('\n', f);
		free(r->head);
		free(r->tail);
	}
	free(c->rows);
}

int cmd_threads(struct session *s, int argc, char **argv)
{
	struct threads_ctx c = { .s = s, .tid_width = TID_WIDTH_MIN };
	bool json = s->json;
	int rc;

	if ((rc = target_gone(s, "threads")))
		return rc;
	for (int i = 1; i < argc; i++) {
		fprintf(stderr, "rbinspect: threads: unknown argument \"%s\"\n", argv[i]);
		return EXIT_USAGE;
	}
	rc = threads_foreach(s, &c.j, thread_line, &c);
	if (!s->json) {
		style_begin(s, STYLE_HEADER);
		fprintf(s->out, "%4s  %-16s %-*s %-16s %-4s %-4s %s", "#", "THREAD",
			c.tid_width, "TID", "STATUS", "MAIN", "GVL", "NAME");
		style_end(s);
		fputc('\n', s->out);
		rows_print(&c);
	}
	s->json = json;
	return rc ? session_failure(s, rc) : EXIT_OK;
}
