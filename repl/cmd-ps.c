/* cmd-ps.c: `ps`: the Ruby processes this user may inspect, one line each
 * (rbi_process_foreach: nothing is attached). */
#include <inttypes.h>

#include "out/out.h"
#include "rbinspect.h"

struct ps_ctx {
	struct session *s;
	struct rbi_json j;
	size_t n;
};

/* 3d04h, 2h03m, 5m12s, 40s. */
static void duration_text(FILE *f, uint64_t ms)
{
	uint64_t s = ms / 1000;
	char buf[32];

	if (!ms)
		snprintf(buf, sizeof(buf), "-");
	else if (s >= 86400)
		snprintf(buf, sizeof(buf), "%" PRIu64 "d%02" PRIu64 "h", s / 86400, s % 86400 / 3600);
	else if (s >= 3600)
		snprintf(buf, sizeof(buf), "%" PRIu64 "h%02" PRIu64 "m", s / 3600, s % 3600 / 60);
	else if (s >= 60)
		snprintf(buf, sizeof(buf), "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
	else
		snprintf(buf, sizeof(buf), "%" PRIu64 "s", s);
	fprintf(f, "%-8s ", buf);
}

/* 512K, 45.2M, 1.3G. */
static void size_text(FILE *f, uint64_t bytes)
{
	char buf[32];

	if (!bytes)
		snprintf(buf, sizeof(buf), "-");
	else if (bytes < 1024 * 1024)
		snprintf(buf, sizeof(buf), "%" PRIu64 "K", bytes / 1024);
	else if (bytes < 1024ull * 1024 * 1024)
		snprintf(buf, sizeof(buf), "%.1fM", (double)bytes / (1024 * 1024));
	else
		snprintf(buf, sizeof(buf), "%.1fG", (double)bytes / (1024.0 * 1024 * 1024));
	fprintf(f, "%-7s ", buf);
}

static int ps_line(const struct rbi_process *p, void *arg)
{
	struct ps_ctx *c = arg;
	FILE *f = c->s->out;

	if (interrupted())
		return 1;
	c->n++;
	if (c->s->json) {
		struct rbi_json *j = &c->j;

		rbi_json_object(j);
		rbi_json_key(j, "pid"); rbi_json_int(j, p->pid);
		rbi_json_key(j, "ns_pid"); rbi_json_int(j, p->ns_pid);
		rbi_json_key(j, "container"); rbi_json_bool(j, p->container);
		rbi_json_key(j, "version"); rbi_json_cstr(j, p->version[0] ? p->version : NULL);
		rbi_json_key(j, "image"); rbi_json_cstr(j, p->image);
		rbi_json_key(j, "uptime_ms"); rbi_json_int(j, (int64_t)p->uptime_ms);
		rbi_json_key(j, "rss_bytes"); rbi_json_int(j, (int64_t)p->rss_bytes);
		rbi_json_key(j, "threads"); rbi_json_int(j, p->threads);
		rbi_json_key(j, "cmdline"); rbi_json_str(j, p->cmdline, p->cmdline_len);
		rbi_json_end_object(j);
		return 0;
	}
	fprintf(f, "%7d  ", (int)p->pid);
	/* The library formats VERSION from numbers: nothing to escape. */
	fprintf(f, "%-8s ", p->version[0] ? p->version : "?");
	duration_text(f, p->uptime_ms);
	size_text(f, p->rss_bytes);
	fprintf(f, "%7u  ", p->threads);
	rbi_out_text(f, p->cmdline, p->cmdline_len);
	if (p->container)
		fprintf(f, "  [container: pid %d there]", (int)p->ns_pid);
	fputc('\n', f);
	return 0;
}

int cmd_ps(struct session *s, int argc, char **argv)
{
	struct ps_ctx c = { .s = s };
	int rc;

	if (argc > 1) {
		fputs("rbinspect: ps: unknown argument \"", stderr);
		rbi_out_text_cstr(stderr, argv[1]);
		fputs("\" (usage: ps [--json])\n", stderr);
		return EXIT_USAGE;
	}
	if (s->json) {
		rbi_json_init(&c.j, s->out);
		rbi_json_object(&c.j);
		rbi_json_key(&c.j, "processes");
		rbi_json_array(&c.j);
	} else {
		style_begin(s, STYLE_HEADER);
		fprintf(s->out, "%7s  %-8s %-8s %-7s %7s  %s", "PID", "RUBY", "UPTIME", "RSS",
			"THREADS", "COMMAND");
		style_end(s);
		fputc('\n', s->out);
	}
	rc = rbi_process_foreach(ps_line, &c);
	if (s->json) {
		rbi_json_end_array(&c.j);
		rbi_json_end_object(&c.j);
	}
	if (interrupted()) {
		fflush(s->out);
		fputs("rbinspect: ps: interrupted\n", stderr);
		return EXIT_INTERRUPTED;
	}
	return rc ? report_failure(rc) : EXIT_OK;
}
