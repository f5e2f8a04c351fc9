/* cli-run.h: the LLDB plugin's way into rbinspect's commands (cli-run.c). */
#ifndef RBINSPECT_LLDB_CLI_RUN_H
#define RBINSPECT_LLDB_CLI_RUN_H

#include <stdio.h>

#include "ruby-introspect.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Run rbinspect's command ARGV[0] with its arguments on T (WHAT names it in
   messages; LIVE: a process, not a core), writing its output to OUT and its
   errors and warnings to ERR.  Returns rbinspect's exit status. */
int rbi_lldb_run(rbi_target *t, const char *what, int live, FILE *out, FILE *err,
		 int argc, char **argv);

#ifdef __cplusplus
}
#endif
#endif
