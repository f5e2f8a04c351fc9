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

struct threads_ctx {
	struct session *s;
	struct rbi_json j;
};

static int thread_line(const struct rbi_thread *th, void *arg)
{
	struct threads_ctx *c = arg;
	FILE *f = c->s->out;
	char tid[48];
	int32_t host;

	if (c->s->json) {
		rbi_json_object(&c->j);
		thread_json_fields(c->s, &c->j, th);
		rbi_json_end_object(&c->j);
		return 0;
	}
	if (th->error) {
		fprintf(f, "%4u  0x%-14" PRIx64 " error: ", th->number, th->thread);
		rbi_out_text_cstr(f, th->error_msg);
		fputc('\n', f);
		return 0;
	}
	fprintf(f, "%4u  0x%-14" PRIx64 " ", th->number, th->thread);
	host = rbi_target_host_tid(c->s->target, th->tid);
	if (th->tid && host && host != th->tid)
		snprintf(tid, sizeof(tid), "%d (host %d)", (int)th->tid, (int)host);
	else if (th->tid)
		snprintf(tid, sizeof(tid), "%d", (int)th->tid);
	else
		snprintf(tid, sizeof(tid), "-");
	fprintf(f, "%-8s ", tid);
	fprintf(f, "%-16s %-4s %-3s ", rbi_thread_status_name(th->status),
		th->main ? "main" : "", th->gvl ? "gvl" : "");
	if (th->name)
		rbi_out_text_cstr(f, th->name);
	if (thread_crashed(c->s, th))
		fputs(th->name ? "  (crashed here)" : "(crashed here)", f);
	fputc('\n', f);
	return 0;
}

int cmd_threads(struct session *s, int argc, char **argv)
{
	struct threads_ctx c = { .s = s };
	bool json = s->json;
	int rc;

	if ((rc = target_gone(s, "threads")))
		return rc;
	for (int i = 1; i < argc; i++) {
		fprintf(stderr, "rbinspect: threads: unknown argument \"%s\"\n", argv[i]);
		return EXIT_USAGE;
	}
	if (!s->json) {
		style_begin(s, STYLE_HEADER);
		fprintf(s->out, "%4s  %-16s %-8s %-16s %-4s %-3s %s", "#", "THREAD",
			"TID", "STATUS", "MAIN", "GVL", "NAME");
		style_end(s);
		fputc('\n', s->out);
	}
	rc = threads_foreach(s, &c.j, thread_line, &c);
	s->json = json;
	return rc ? session_failure(s, rc) : EXIT_OK;
}
