/* commands.c: the one command table behind the one-shot CLI, the REPL,
 * `help` and completion. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "out/out.h"
#include "profile-cli.h"
#include "rbinspect.h"

int parse_count(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || end == s || s[0] == '-' || v > max)
		return -1;
	*out = v;
	return 0;
}

/* What tab completion offers after each command's name (rbinspect.h). */
static const char *const c_json[] = { "--json", NULL };
static const char *const c_info[] = { "locals", "args", "frame", "threads", "--json", NULL };
static const char *const c_bt[] = { "all", "%thread", "--max-frames=", "--native", "--fibers",
				     "--max-fibers=", "--locals", "--max-value-bytes=", "--json",
				     NULL };
static const char *const c_fibers[] = { "--max-fibers=", "--json", NULL };
static const char *const c_thread[] = { "%thread", NULL };
static const char *const c_frame[] = { "%frame", "--json", NULL };
static const char *const c_print[] = { "%local", "--json", NULL };
static const char *const c_set[] = { "color=on|off|auto", "max-frames=", "native=on|off",
				      "json=on|off", NULL };
static const char *const c_help[] = { "%command", NULL };
static const char *const c_objects[] = { "--by-class", "--top", "--pause", "--json", NULL };
static const char *const c_heap_dump[] = { "--output=", "--pause", "--strings", "--strings=",
					    NULL };
static const char *const c_heap[] = { "dump", "diff", "retainers", "top", "--top=",
				       "--max-paths=", "--by=", "--every=", "--snapshots=2|3",
				       "--pause", "--keep=", "--json", NULL };

static const char *const c_profile[] = { "%profile", NULL };

const struct command commands[] = {
	{ "info", "[locals|args|frame|threads]", "Ruby version, libruby, VM address and where "
	  "each was found; info locals, args, frame, threads as in gdb", cmd_info, c_info },
	{ "threads", "", "one line per Ruby thread: tid, status, GVL, name", cmd_threads,
	  c_json },
	{ "bt", "[all|N] [--max-frames N] [--native] [--fibers [--max-fibers N]] "
	  "[--locals [--max-value-bytes N]]",
	  "Ruby backtrace of every thread, or of thread N; --native: with C frames; "
	  "--fibers: every fiber; --locals: each frame's self and locals", cmd_bt, c_bt },
	{ "fibers", "[--max-fibers N]", "one line per fiber: thread, status, innermost frame",
	  cmd_fibers, c_fibers },
	{ "objects", "[--by-class] [--top N] [--pause]",
	  "heap objects by type (ObjectSpace.count_objects) or by class", cmd_objects, c_objects },
	{ "heap-dump", "[-o FILE] [--pause] [--strings[=N]]",
	  "the GC roots and every heap object, one JSON line each, in "
	  "ObjectSpace.dump_all's format (FILE.gz: gzip)", cmd_heap_dump, c_heap_dump },
	{ "heap", "dump [...] | diff A.json B.json [C.json] [--top N] | diff --every SECONDS "
	  "[--snapshots 2|3] [--pause] [--keep DIR] [--top N] | retainers DUMP ADDRESS "
	  "[--max-paths N] | top DUMP [--by retained|shallow|count] [--top N]",
	  "heap dump: as heap-dump; heap diff: objects new and gone between two dumps, or "
	  "made between A and B and still in C, by type and class (--every: of snapshots "
	  "of this process taken SECONDS apart); heap retainers: the "
	  "shortest reference paths from the dump's roots to an object; heap top: the bytes "
	  "each type and class keeps alive", cmd_heap, c_heap },
	{ "thread", "[N]", "select thread N for \"frame\" (default: the main thread)", cmd_thread,
	  c_thread },
	{ "fiber", "[N]", "select fiber N (as \"fibers\" numbers them) for \"frame\"",
	  cmd_fiber, NULL },
	{ "frame", "[N] [--json]",
	  "frame N of the selected thread (or fiber): self and local variables", cmd_frame,
	  c_frame },
	{ "print", "EXPR [--json]", "the value of EXPR in the selected frame: self, a local "
	  "variable, @ivar of self, $global, a constant path (Foo::BAR); then steps into it: "
	  "[I] of an Array, .@ivar of an object, .class, .length, .size, .bytesize "
	  "(post.@attributes.@values)", cmd_print,
	  c_print },
	{ "up", "[N]", "select and show the frame N (1) further out: the caller", cmd_up, NULL },
	{ "down", "[N]", "select and show the frame N (1) further in", cmd_down, NULL },
	{ "refresh", "", "re-read a live process now (the session does before each command)",
	  cmd_refresh, NULL },
	{ "set", "[KEY VALUE]", "color on|off|auto, max-frames N, json on|off; alone: show them",
	  cmd_set, c_set },
	{ "help", "[COMMAND]", "list commands, or describe one", cmd_help, c_help },
	{ "record", "[--rate HZ] [--duration S] [-o FILE] [--format F] ...",
	  "sample the process into a profile (flamegraph, folded, pprof, callgrind: memory "
	  "by distinct stack; speedscope, raw: 32 bytes a sample)", cmd_record, c_profile },
	{ "top", "[--rate HZ] [--interval S] [--idle] [--gvl] ...",
	  "live view of the hottest methods, refreshed every second", cmd_top, c_profile },
	{ "report", "FILE [--format F] [-o FILE]", "render a raw profile (record --format raw)",
	  cmd_report, c_profile },
	{ "ps", "", "the Ruby processes this user may inspect: pid, version, uptime, RSS, "
	  "threads, command line", cmd_ps, c_json },
	{ "quit", "", "leave the session (so does end of input, Ctrl-D)", cmd_quit, NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

/* gdb's names for our commands. */
static const struct {
	const char *alias, *name;
} aliases[] = {
	{ "where", "bt" }, { "backtrace", "bt" }, { "f", "frame" }, { "i", "info" },
	{ "p", "print" },
	{ "exit", "quit" },
};

/* Whether A begins B. */
static bool begins(const char *a, const char *b)
{
	return !strncmp(a, b, strlen(a));
}

/* NAME as typed: a command's name, an alias, or a prefix of one command's
   name only; of candidates whose names begin one another the shortest
   (thr: thread, not threads, as in gdb). */
const struct command *command_find(const char *name)
{
	const struct command *found = NULL;

	for (const struct command *c = commands; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
		if (!strcmp(aliases[i].alias, name))
			return command_find(aliases[i].name);
	if (!*name)
		return NULL;
	for (const struct command *c = commands; c->name; c++) {
		if (!begins(name, c->name))
			continue;
		if (!found || begins(c->name, found->name))
			found = c;
		else if (!begins(found->name, c->name))
			return NULL;    /* two candidates, neither begins the other */
	}
	return found;
}

const char *const *command_words(const struct command *c)
{
	return c->complete == c_profile ? profile_completions(profile_cmd_of(c->name)) :
	       c->complete;
}

void command_help(FILE *f, const struct command *c)
{
	const char *const *words = command_words(c);

	fprintf(f, "%s %s\n    %s\n", c->name, c->args, c->help);
	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
		if (!strcmp(aliases[i].name, c->name))
			fprintf(f, "    also: %s\n", aliases[i].alias);
	if (words && words[0]) {
		fputs("    arguments:", f);
		for (const char *const *a = words; *a; a++)
			if (**a != '%')
				fprintf(f, " %s", *a);
		fputc('\n', f);
	}
}

int cmd_help(struct session *s, int argc, char **argv)
{
	if (argc > 1) {
		const struct command *c = command_find(argv[1]);

		if (!c) {
			fputs("rbinspect: no command \"", stderr);
			rbi_out_text_cstr(stderr, argv[1]);
			fputs("\"; try \"help\"\n", stderr);
			return EXIT_USAGE;
		}
		command_help(s->out, c);
		return EXIT_OK;
	}
	for (const struct command *c = commands; c->name; c++)
		fprintf(s->out, "  %-8s %-24s %s\n", c->name, c->args, c->help);
	return EXIT_OK;
}

int exit_code_for(int status)
{
	switch (status) {
	case RBI_OK: return EXIT_OK;
	case RBI_INVAL: return EXIT_USAGE;
	case RBI_NO_PROCESS: return EXIT_NO_PROCESS;
	case RBI_PERM: return EXIT_PERM;
	case RBI_BUSY: return EXIT_BUSY;
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
