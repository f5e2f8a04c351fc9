/* repl.h: running commands, one at a time or interactively. */
#ifndef RBINSPECT_REPL_H
#define RBINSPECT_REPL_H

#include "rbinspect.h"

/* Run ARGV[0] with its arguments; unknown commands are a usage error. */
int run_command(struct session *s, int argc, char **argv);
/* The interactive session (readline on a terminal, plain lines otherwise);
   returns the exit code of the last command. */
int repl_run(struct session *s);

#endif
