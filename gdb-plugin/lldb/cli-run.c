/* cli-run.c: run one of rbinspect's own commands (repl/cli_sources) for the
 * LLDB plugin, so `rb bt` in LLDB prints exactly what `rbinspect bt` does.
 * The commands write to s->out and report problems on stderr; for the
 * length of one command stdout and stderr are the plugin's buffers (glibc's
 * stdout and stderr are plain variables, documented as assignable).
 *
 * Also what the commands take from the interactive session (repl/repl.c),
 * which the plugin does not link (no readline: LLDB brings libedit).  Weak,
 * so a definition that moves into the command sources wins. */
#include <stdio.h>
#include <string.h>

#include "out/out.h"
#include "rbinspect.h"
#include "cli-run.h"

__attribute__((weak)) volatile sig_atomic_t interrupt_flag;

__attribute__((weak)) int target_gone(struct session *s, const char *command)
{
	(void)s;
	(void)command;
	return EXIT_OK;
}

__attribute__((weak)) int session_failure(struct session *s, int status)
{
	if (s->live && (status == RBI_GONE || status == RBI_ZOMBIE))
		s->gone = true;
	return report_failure(status);
}

int rbi_lldb_run(rbi_target *t, const char *what, int live, FILE *out, FILE *err,
		 int argc, char **argv)
{
	struct session s = { .target = t, .what = what, .live = live != 0, .out = out };
	FILE *saved_out = stdout, *saved_err = stderr;
	const struct command *c = argc > 0 ? command_find(argv[0]) : NULL;
	const char *w;
	int rc;

	if (!c) {
		fprintf(err, "rbinspect: unknown command \"%s\"\n", argc > 0 ? argv[0] : "");
		return EXIT_USAGE;
	}
	stdout = out;
	stderr = err;
	rc = c->run(&s, argc, argv);
	fflush(out);
	while ((w = rbi_target_warning(t, s.warnings_shown))) {
		fputs("rbinspect: warning: ", err);
		rbi_out_text_cstr(err, w);
		fputc('\n', err);
		s.warnings_shown++;
	}
	stdout = saved_out;
	stderr = saved_err;
	return rc;
}
