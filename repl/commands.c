/* commands.c: the one command table behind the one-shot CLI, the REPL,
 * `help` and completion. */
#include <string.h>

#include "rbinspect.h"

const struct command commands[] = {
	{ "info", "", "Ruby version, libruby, VM address and where each was found", cmd_info },
	{ "threads", "", "one line per Ruby thread: tid, status, GVL, name", cmd_threads },
	{ "bt", "[all|N] [--max-frames N]", "Ruby backtrace of every thread, or of thread N", cmd_bt },
	{ "help", "[COMMAND]", "list commands, or describe one", cmd_help },
	{ NULL, NULL, NULL, NULL },
};

const struct command *command_find(const char *name)
{
	for (const struct command *c = commands; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

int cmd_help(struct session *s, int argc, char **argv)
{
	if (argc > 1) {
		const struct command *c = command_find(argv[1]);

		if (!c) {
			fprintf(stderr, "rbinspect: no command \"%s\"; try \"help\"\n", argv[1]);
			return EXIT_USAGE;
		}
		fprintf(s->out, "%s %s\n    %s\n", c->name, c->args, c->help);
		return EXIT_OK;
	}
	for (const struct command *c = commands; c->name; c++)
		fprintf(s->out, "  %-8s %-12s %s\n", c->name, c->args, c->help);
	return EXIT_OK;
}

int exit_code_for(int status)
{
	switch (status) {
	case RBI_OK: return EXIT_OK;
	case RBI_INVAL: return EXIT_USAGE;
	case RBI_NO_PROCESS: return EXIT_NO_PROCESS;
	case RBI_PERM: return EXIT_PERM;
	case RBI_NOT_RUBY: return EXIT_NOT_RUBY;
	case RBI_NOT_ELF: case RBI_NOT_CORE: case RBI_TRUNCATED: return EXIT_BAD_CORE;
	case RBI_NO_LAYOUT: return EXIT_NO_LAYOUT;
	case RBI_NO_VM: case RBI_CORRUPT: case RBI_LAYOUT: return EXIT_NO_VM;
	case RBI_GONE: case RBI_ZOMBIE: return EXIT_GONE;
	default: return EXIT_ERROR;
	}
}

int report_failure(int status)
{
	const char *msg = rbi_errmsg();

	fprintf(stderr, "rbinspect: %s\n", msg && *msg ? msg : rbi_strerror(status));
	return exit_code_for(status);
}
