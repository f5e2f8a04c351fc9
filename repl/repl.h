/* repl.h: running commands, one at a time, from a script or interactively. */
#ifndef RBINSPECT_REPL_H
#define RBINSPECT_REPL_H

#include <stddef.h>

#include "out/out.h"
#include "rbinspect.h"

/* Run ARGV[0] with its arguments; unknown commands are a usage error. */
int run_command(struct session *s, int argc, char **argv);

/* One -ex CMD (FILE false: TEXT is the command) or -x FILE (TEXT is the
   path of a file of commands, one a line, '#' starting a comment). */
struct batch_item {
	const char *text;
	bool file;
};
/* Run the items in order; the first command that fails ends the run, and
   its exit code is returned (EXIT_OK if none failed). */
int run_batch(struct session *s, const struct batch_item *items, size_t n);

/* The interactive session (readline on a terminal, plain lines otherwise);
   returns the exit code of the last command. */
int repl_run(struct session *s);

#endif
