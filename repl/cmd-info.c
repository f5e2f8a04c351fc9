/* cmd-info.c: `info`: which Ruby, where its VM is, and how we know. */
#include <inttypes.h>
#include <string.h>

#include "out/out.h"
#include "rbinspect.h"

static void info_json(struct session *s, const struct rbi_ruby_info *i)
{
	struct rbi_json j;

	rbi_json_init(&j, s->out);
	rbi_json_object(&j);
	rbi_json_key(&j, "pid"); rbi_json_int(&j, rbi_target_pid(s->target));
	rbi_json_key(&j, "state"); rbi_json_cstr(&j, s->live ? "running" : "core");
	rbi_json_key(&j, "version"); rbi_json_cstr(&j, i->version);
	rbi_json_key(&j, "version_via"); rbi_json_cstr(&j, i->version_via);
	rbi_json_key(&j, "description");
	rbi_json_cstr(&j, i->description[0] ? i->description : NULL);
	rbi_json_key(&j, "libruby"); rbi_json_cstr(&j, i->image);
	rbi_json_key(&j, "build_id"); rbi_json_cstr(&j, i->build_id);
	rbi_json_key(&j, "vm"); rbi_json_addr(&j, i->vm);
	rbi_json_key(&j, "vm_source"); rbi_json_cstr(&j, rbi_addr_source_name(i->vm_source));
	rbi_json_key(&j, "vm_via"); rbi_json_cstr(&j, i->vm_via);
	rbi_json_key(&j, "symbols");
	if (i->symbols)
		rbi_json_addr(&j, i->symbols);
	else
		rbi_json_null(&j);
	rbi_json_key(&j, "symbols_source");
	rbi_json_cstr(&j, rbi_addr_source_name(i->symbols_source));
	rbi_json_key(&j, "symbols_via"); rbi_json_cstr(&j, i->symbols_via);
	rbi_json_key(&j, "layout"); rbi_json_cstr(&j, i->layout);
	rbi_json_key(&j, "threads"); rbi_json_int(&j, i->thread_count);
	rbi_json_key(&j, "ractors"); rbi_json_int(&j, i->ractor_count);
	crash_json(s, &j);
	rbi_json_key(&j, "warnings");
	rbi_json_array(&j);
	for (size_t k = 0; rbi_target_warning(s->target, k); k++)
		rbi_json_cstr(&j, rbi_target_warning(s->target, k));
	rbi_json_end_array(&j);
	rbi_json_end_object(&j);
}

static void field(FILE *f, const char *name, const char *value)
{
	fprintf(f, "%-12s ", name);
	rbi_out_text_cstr(f, value);
	fputc('\n', f);
}

static void info_text(struct session *s, const struct rbi_ruby_info *i)
{
	const struct rbi_crash *crash = session_crash(s);
	FILE *f = s->out;

	fprintf(f, "%-12s %d\n", "pid", (int)rbi_target_pid(s->target));
	field(f, "state", s->live ? "running" : "core");
	fprintf(f, "%-12s ", "ruby");
	rbi_out_text_cstr(f, i->version);
	if (strcmp(i->version_via, "ruby_version")) {
		fputs(" (from ", f);
		rbi_out_text_cstr(f, i->version_via);
		fputc(')', f);
	}
	fputc('\n', f);
	field(f, "description", i->description[0] ? i->description :
	      "(unknown: not in the core)");
	field(f, "libruby", i->image);
	field(f, "build-id", i->build_id[0] ? i->build_id : "(none)");
	fprintf(f, "%-12s 0x%" PRIx64 " (%s: ", "vm", i->vm,
		rbi_addr_source_name(i->vm_source));
	rbi_out_text_cstr(f, i->vm_via);
	fputs(")\n", f);
	if (i->symbols) {
		fprintf(f, "%-12s 0x%" PRIx64 " (%s: ", "symbols", i->symbols,
			rbi_addr_source_name(i->symbols_source));
		rbi_out_text_cstr(f, i->symbols_via);
		fputs(")\n", f);
	} else {
		field(f, "symbols", "(not found)");
	}
	field(f, "layout", i->layout);
	fprintf(f, "%-12s %u in %u ractor%s\n", "threads", i->thread_count,
		i->ractor_count, i->ractor_count == 1 ? "" : "s");
	if (crash) {
		fprintf(f, "%-12s tid %d: ", "crash", (int)crash->signal.tid);
		crash_text(f, crash);
		fputc('\n', f);
	}
}

/* The process is gone: say so (the REPL stays usable). */
static int info_gone(struct session *s)
{
	struct rbi_json j;

	if (s->json) {
		rbi_json_init(&j, s->out);
		rbi_json_object(&j);
		rbi_json_key(&j, "pid"); rbi_json_int(&j, rbi_target_pid(s->target));
		rbi_json_key(&j, "state"); rbi_json_cstr(&j, "exited");
		rbi_json_end_object(&j);
	} else {
		fprintf(s->out, "%-12s %d\n", "pid", (int)rbi_target_pid(s->target));
		field(s->out, "state", "exited: the process is gone (nothing left to "
		      "read; quit, or start rbinspect on another target)");
	}
	return EXIT_GONE;
}

int cmd_info(struct session *s, int argc, char **argv)
{
	const struct rbi_ruby_info *info;
	int rc;

	/* gdb's info locals, info frame, info threads. */
	if (argc == 2 && (!strcmp(argv[1], "locals") || !strcmp(argv[1], "frame")))
		return cmd_frame(s, 1, argv);
	if (argc == 2 && !strcmp(argv[1], "threads"))
		return cmd_threads(s, 1, argv);
	if (argc == 2 && !strcmp(argv[1], "args"))
		return frame_args(s);
	if (argc > 1) {
		fputs("rbinspect: info: takes no arguments, or one of locals, args, frame and "
		      "threads; not \"", stderr);
		rbi_out_text_cstr(stderr, argv[1]);
		fputs("\"\n", stderr);
		return EXIT_USAGE;
	}
	if (s->gone)
		return info_gone(s);
	if ((rc = rbi_ruby_info(s->target, &info))) {
		rc = session_failure(s, rc);
		return s->gone ? info_gone(s) : rc;
	}
	if (s->json)
		info_json(s, info);
	else
		info_text(s, info);
	return EXIT_OK;
}
