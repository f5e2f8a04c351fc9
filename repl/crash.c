/* crash.c: how a core's process died, as `info`, `threads`, `bt` and
 * `thread` show it: the same words everywhere (rbi_crash_describe). */
#include "out/out.h"
#include "rbinspect.h"

const struct rbi_crash *session_crash(struct session *s)
{
	const struct rbi_crash *c;

	if (s->live || !s->target || rbi_target_crash(s->target, &c) != RBI_OK)
		return NULL;
	return c;
}

bool thread_crashed(struct session *s, const struct rbi_thread *th)
{
	const struct rbi_crash *c = session_crash(s);

	return c && !th->error && th->tid && th->tid == c->signal.tid;
}

void crash_text(FILE *f, const struct rbi_crash *c)
{
	char buf[512];

	rbi_out_text_cstr(f, rbi_crash_describe(c, buf, sizeof(buf)));
}

static void signal_json(struct rbi_json *j, const struct rbi_signal *sig)
{
	rbi_json_object(j);
	rbi_json_key(j, "signo"); rbi_json_int(j, sig->signo);
	rbi_json_key(j, "name"); rbi_json_cstr(j, rbi_signal_name(sig->signo));
	rbi_json_key(j, "code"); rbi_json_int(j, sig->code);
	rbi_json_key(j, "code_name");
	rbi_json_cstr(j, rbi_signal_code_name(sig->signo, sig->code));
	rbi_json_key(j, "addr");
	if (sig->has_addr)
		rbi_json_addr(j, sig->addr);
	else
		rbi_json_null(j);
	rbi_json_key(j, "sender_pid");
	if (sig->sender_pid)
		rbi_json_int(j, sig->sender_pid);
	else
		rbi_json_null(j);
	rbi_json_end_object(j);
}

void crash_json(struct session *s, struct rbi_json *j)
{
	const struct rbi_crash *c = session_crash(s);
	char buf[512];

	rbi_json_key(j, "crash");
	if (!c) {
		rbi_json_null(j);
		return;
	}
	rbi_json_object(j);
	rbi_json_key(j, "tid"); rbi_json_int(j, c->signal.tid);
	rbi_json_key(j, "signal"); signal_json(j, &c->signal);
	rbi_json_key(j, "handled");
	if (c->handled.signo)
		signal_json(j, &c->handled);
	else
		rbi_json_null(j);
	rbi_json_key(j, "handled_frame");
	if (c->handled.signo)
		rbi_json_addr(j, c->handled_frame);
	else
		rbi_json_null(j);
	rbi_json_key(j, "handler_ended_it"); rbi_json_bool(j, c->handler_ended_it);
	rbi_json_key(j, "description");
	rbi_json_cstr(j, rbi_crash_describe(c, buf, sizeof(buf)));
	rbi_json_end_object(j);
}
