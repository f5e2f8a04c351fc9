/* repl.c: the interactive session.  Lines are split into words and run
 * through the same command table as the one-shot CLI. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <readline/history.h>
#include <readline/readline.h>

#include "repl.h"

#define REPL_ARGS_MAX 64

/* Warnings appear as the library learns things (opening the target,
   loading its images), so show the new ones after every command. */
static void print_new_warnings(struct session *s)
{
	const char *w;

	while ((w = rbi_target_warning(s->target, s->warnings_shown))) {
		fprintf(stderr, "rbinspect: warning: %s\n", w);
		s->warnings_shown++;
	}
}

int run_command(struct session *s, int argc, char **argv)
{
	const struct command *c = command_find(argv[0]);
	int rc;

	if (!c) {
		fprintf(stderr, "rbinspect: unknown command \"%s\"; try \"help\"\n", argv[0]);
		return EXIT_USAGE;
	}
	rc = c->run(s, argc, argv);
	print_new_warnings(s);
	return rc;
}

static int split_words(char *line, char **argv, int max)
{
	int argc = 0;

	for (char *tok = strtok(line, " \t\n"); tok && argc < max;
	     tok = strtok(NULL, " \t\n"))
		argv[argc++] = tok;
	return argc;
}

static char *command_generator(const char *text, int state)
{
	static size_t next;
	size_t len = strlen(text);

	if (!state)
		next = 0;
	while (commands[next].name) {
		const char *name = commands[next++].name;

		if (!strncmp(name, text, len))
			return strdup(name);
	}
	return NULL;
}

static char **complete(const char *text, int start, int end)
{
	rl_attempted_completion_over = 1;
	return start == 0 ? rl_completion_matches(text, command_generator) : NULL;
}

int repl_run(struct session *s)
{
	bool tty = isatty(STDIN_FILENO);
	char *argv[REPL_ARGS_MAX];
	bool ran = false;
	int rc = EXIT_OK;

	rl_readline_name = "rbinspect";
	rl_attempted_completion_function = complete;
	for (;;) {
		char *line;

		if (tty) {
			line = readline("(rbinspect) ");
		} else {
			size_t cap = 0;
			line = NULL;
			if (getline(&line, &cap, stdin) < 0) {
				free(line);
				line = NULL;
			}
		}
		if (!line)
			break;
		if (tty && *line)
			add_history(line);
		int argc = split_words(line, argv, REPL_ARGS_MAX);
		if (argc > 0 && (!strcmp(argv[0], "quit") || !strcmp(argv[0], "exit"))) {
			free(line);
			break;
		}
		if (argc > 0) {
			/* A live process moved on since the last command: read it
			   afresh (a no-op for cores). */
			if (ran)
				rbi_target_refresh(s->target);
			rc = run_command(s, argc, argv);
			ran = true;
		}
		fflush(s->out);
		free(line);
	}
	return rc;
}
