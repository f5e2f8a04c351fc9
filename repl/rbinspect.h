/* rbinspect.h: the CLI's shared pieces.  Commands are thin: they call the
 * library and format what it returns. */
#ifndef RBINSPECT_H
#define RBINSPECT_H

#include <stdbool.h>
#include <stdio.h>

#include "ruby-introspect.h"

/* Exit codes (documented in rbinspect(1); never renumber). */
enum {
	EXIT_OK = 0,
	EXIT_ERROR = 1,         /* anything not listed below */
	EXIT_USAGE = 2,
	EXIT_NO_PROCESS = 3,
	EXIT_PERM = 4,
	EXIT_NOT_RUBY = 5,
	EXIT_BAD_CORE = 6,      /* not ELF, not a core, truncated */
	EXIT_NO_LAYOUT = 7,     /* unknown Ruby version and no DWARF */
	EXIT_NO_VM = 8,         /* VM not found or inconsistent */
	EXIT_GONE = 9,          /* process exited (or is a zombie) */
};

struct session {
	rbi_target *target;
	const char *what;       /* "process 1234" or the core's path */
	bool json;
	FILE *out;
	size_t warnings_shown;  /* rbi_target_warning() index already printed */
};

struct command {
	const char *name;
	const char *args;       /* usage after the name, "" if none */
	const char *help;       /* one line */
	int (*run)(struct session *s, int argc, char **argv);
};

extern const struct command commands[];
const struct command *command_find(const char *name);

/* Print "rbinspect: MSG" for a library failure and map STATUS to an exit
   code. */
int report_failure(int status);
int exit_code_for(int status);

int cmd_info(struct session *s, int argc, char **argv);
int cmd_threads(struct session *s, int argc, char **argv);
int cmd_bt(struct session *s, int argc, char **argv);

struct rbi_json;
/* A thread's number, identity and state as JSON object members, and as the
   one-line text header `bt` prints (cmd-threads.c). */
void thread_json_fields(struct rbi_json *j, const struct rbi_thread *th);
void thread_header_text(FILE *f, const struct rbi_thread *th);
int cmd_help(struct session *s, int argc, char **argv);

#endif
