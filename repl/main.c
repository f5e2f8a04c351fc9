/* main.c: rbinspect's command line: open a target, run one command or a
 * session of them, and map failures to documented exit codes. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rbinspect.h"
#include "repl.h"

static void usage(FILE *f)
{
	fputs("usage: rbinspect [OPTIONS] -p PID [COMMAND [ARGS...]]\n"
	      "       rbinspect [OPTIONS] CORE [EXE] [COMMAND [ARGS...]]\n"
	      "       rbinspect [--json] ps\n"
	      "\n"
	      "Inspect a running Ruby process or a core file without stopping it.\n"
	      "With no COMMAND (and no -ex or -x), start an interactive session.\n"
	      "\n"
	      "Options:\n"
	      "  -p, --pid PID       inspect the live process PID\n"
	      "      --json          machine-readable output\n"
	      "      --sysroot DIR   find the target's files under DIR (cores from\n"
	      "                      another machine or a chroot)\n"
	      "      --ruby-version X.Y.Z\n"
	      "                      the target's Ruby version, for a core whose\n"
	      "                      libruby is not at hand and whose file names do\n"
	      "                      not tell it\n"
	      "      --color[=WHEN]  color the output: auto (the default: on a\n"
	      "                      terminal, unless NO_COLOR is set), always, never\n"
	      "  -ex, --ex CMD       run the command CMD (repeatable, in order), then exit\n"
	      "  -x FILE             run the commands in FILE, one a line, then exit\n"
	      "      --gdb           read the target gdb holds from its description on\n"
	      "                      stdin (the rb-* commands of rbinspect.gdb)\n"
	      "  -h, --help          show this help\n"
	      "  -V, --version       show the version\n"
	      "\n"
	      "Commands:\n", f);
	for (const struct command *c = commands; c->name; c++)
		fprintf(f, "  %-8s %-24s %s\n", c->name, c->args, c->help);
	fputs("\nExit status: 0 ok, 1 error, 2 usage, 3 no such process, 4 permission\n"
	      "denied, 5 not a Ruby process, 6 bad core file, 7 unknown Ruby version,\n"
	      "8 Ruby VM not found or inconsistent, 9 process exited, 10 interrupted,\n"
	      "11 process busy (held by a debugger).\n", f);
}

static int parse_color(const char *s, int *out)
{
	if (!s || !strcmp(s, "always") || !strcmp(s, "yes") || !strcmp(s, "force"))
		*out = COLOR_ALWAYS;
	else if (!strcmp(s, "never") || !strcmp(s, "no") || !strcmp(s, "none"))
		*out = COLOR_NEVER;
	else if (!strcmp(s, "auto") || !strcmp(s, "tty") || !strcmp(s, "if-tty"))
		*out = COLOR_AUTO;
	else
		return -1;
	return 0;
}

static int parse_pid(const char *s, pid_t *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || end == s || v <= 0 || v > INT_MAX)
		return -1;
	*out = (pid_t)v;
	return 0;
}

/* What the options before the command say. */
struct cli {
	struct rbi_open_opts opts;
	struct session s;
	pid_t pid;
	bool gdb;
	/* -ex and -x in order, at most one per argument. */
	struct batch_item *batch;
	size_t nbatch;
};

/* An option's value refused: "rbinspect: BEFORE<VALUE, escaped>AFTER", and
   parse_options' usage exit. */
static int bad_value(const char *before, const char *value, const char *after)
{
	fprintf(stderr, "rbinspect: %s", before);
	rbi_out_text_cstr(stderr, value);
	fprintf(stderr, "%s\n", after);
	return EXIT_USAGE + 1;
}

static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Whether V is a Ruby version as --ruby-version takes it: X.Y or X.Y.Z. */
static bool version_ok(const char *v)
{
	unsigned x, y, z;
	int n = 0;

	return (sscanf(v, "%3u.%3u.%3u%n", &x, &y, &z, &n) == 3 ||
		sscanf(v, "%3u.%3u%n", &x, &y, &n) == 2) && n > 0 && v[n] == '\0' &&
	       v[0] >= '0' && v[0] <= '9';
}

/* Parse the options of ARGV from ARGV[*I] (ARGV[*I - 1] is what precedes
   them: the program or the core) up to the first word that is not one;
   *I is then that word's index.  0 to go on, or an exit code (+1, so
   EXIT_OK is told from "go on"). */
static int parse_options(struct cli *c, int argc, char **argv, int *i)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "json", no_argument, NULL, 'j' },
		{ "sysroot", required_argument, NULL, 's' },
		{ "ruby-version", required_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "gdb", no_argument, NULL, 'G' },
		{ "color", optional_argument, NULL, 'c' },
		{ "colour", optional_argument, NULL, 'c' },
		{ "ex", required_argument, NULL, 'e' },
		{ NULL, 0, NULL, 0 },
	};
	int o;

	/* "+": stop at the first non-option so command arguments are left
	   alone (rbinspect core bt --max-frames 5).  getopt_long_only, as
	   gdb: -ex is the long option "ex" with one dash. */
	optind = 0;             /* glibc: start afresh */
	opterr = 0;             /* our own message, not getopt's */
	argc -= *i - 1;
	argv += *i - 1;
	while ((o = getopt_long_only(argc, argv, "+p:hVx:", longopts, NULL)) != -1) {
		switch (o) {
		case 'p':
			if (parse_pid(optarg, &c->pid)) {
				fprintf(stderr, "rbinspect: invalid process id \"%s\"\n", optarg);
				return EXIT_USAGE + 1;
			}
			break;
		case 'j': c->s.json = true; break;
		case 's':
			if (!is_dir(optarg))
				return bad_value("--sysroot \"", optarg, "\" is no directory");
			c->opts.sysroot = optarg;
			break;
		case 'R':
			if (!version_ok(optarg))
				return bad_value("--ruby-version takes X.Y.Z (3.4.11) or X.Y, not \"",
						 optarg, "\"");
			c->opts.ruby_version = optarg;
			break;
		case 'c':
			if (parse_color(optarg, &c->s.color_mode)) {
				fprintf(stderr, "rbinspect: --color takes auto, always or never\n");
				return EXIT_USAGE + 1;
			}
			break;
		case 'e': c->batch[c->nbatch++] = (struct batch_item){ optarg, false }; break;
		case 'x': c->batch[c->nbatch++] = (struct batch_item){ optarg, true }; break;
		case 'h': usage(stdout); return EXIT_OK + 1;
		case 'V': puts("rbinspect " RBINSPECT_VERSION); return EXIT_OK + 1;
		case 'G': c->gdb = true; break;
		default:
			fputs("rbinspect: unknown option, or one without its value: \"", stderr);
			rbi_out_text_cstr(stderr, argv[optind - 1]);
			fputs("\" (see rbinspect --help)\n", stderr);
			return EXIT_USAGE + 1;
		}
	}
	*i += optind - 1;
	return 0;
}

/* Whether WORD, after a core and not a command, may be its executable: an
   existing regular file.  Anything else is a mistyped command or option,
   never an executable to look for. */
static bool is_exe_arg(const char *word)
{
	struct stat st;

	return word[0] != '-' && stat(word, &st) == 0 && S_ISREG(st.st_mode);
}

/* Whether ARGV[I], if any, is a command; if not, says so. */
static bool command_ok(int argc, char **argv, int i)
{
	if (i >= argc || command_find(argv[i]))
		return true;
	fputs("rbinspect: unknown command \"", stderr);
	rbi_out_text_cstr(stderr, argv[i]);
	fputs("\" (see rbinspect --help)\n", stderr);
	return false;
}

/* While a compressed core is decompressed (seconds for gigabytes), a
   progress line on a terminal, wiped once the core is open. */
struct unpack_line {
	const char *core;
	bool shown;
};

static void unpack_progress(uint64_t done, uint64_t total, void *arg)
{
	struct unpack_line *l = arg;

	fprintf(stderr, "\rrbinspect: decompressing %s: %" PRIu64, l->core, done >> 20);
	if (total)
		fprintf(stderr, " of %" PRIu64 " MiB (%d%%)", total >> 20,
			(int)(100 * done / total));
	else
		fputs(" MiB", stderr);
	fflush(stderr);
	l->shown = true;
}

static int open_core(struct cli *c, const char *core)
{
	struct unpack_line line = { .core = core };
	int rc;

	if (isatty(STDERR_FILENO)) {
		c->opts.progress = unpack_progress;
		c->opts.progress_arg = &line;
	}
	rc = rbi_target_open_core(core, &c->opts, &c->s.target);
	c->opts.progress = NULL;
	c->opts.progress_arg = NULL;
	if (line.shown)
		fputs("\r\033[K", stderr);
	return rc;
}

/* Open the target the arguments name from ARGV[*I]: -p PID, or CORE
   [EXE], with options anywhere before the command, which must be one:
   nothing is opened for a mistyped command. */
static int open_target(struct cli *c, int argc, char **argv, int *i, char *what, size_t cap)
{
	const char *core;
	int rc;

	if (c->pid) {
		if (!command_ok(argc, argv, *i))
			return EXIT_USAGE + 1;
		snprintf(what, cap, "process %d", (int)c->pid);
		c->s.live = true;
		return rbi_target_open_pid(c->pid, &c->opts, &c->s.target);
	}
	if (*i >= argc) {
		usage(stderr);
		return EXIT_USAGE + 1;
	}
	core = argv[(*i)++];
	if (command_find(core) && access(core, F_OK) != 0) {
		fprintf(stderr, "rbinspect: %s is a command: name the target first (rbinspect "
			"-p PID %s, or rbinspect CORE %s)\n", core, core, core);
		return EXIT_USAGE + 1;
	}
	if ((rc = parse_options(c, argc, argv, i)))
		return rc;
	if (*i < argc && !command_find(argv[*i])) {
		if (!is_exe_arg(argv[*i])) {
			fputs("rbinspect: \"", stderr);
			rbi_out_text_cstr(stderr, argv[*i]);
			fputs("\" is neither a command (see rbinspect --help) nor the core's "
			      "executable (no such file)\n", stderr);
			return EXIT_USAGE + 1;
		}
		c->opts.exe = argv[(*i)++];
		if ((rc = parse_options(c, argc, argv, i)))
			return rc;
		if (!command_ok(argc, argv, *i))
			return EXIT_USAGE + 1;
	}
	if (c->pid) {
		fprintf(stderr, "rbinspect: a process (-p) and a core: give one or the other\n");
		return EXIT_USAGE + 1;
	}
	snprintf(what, cap, "%s", core);
	return open_core(c, core);
}

/* Commands that need no target when none is given first. */
static bool targetless(int argc, char **argv)
{
	const char *name = argv[0];

	return !strcmp(name, "record") || !strcmp(name, "report") || !strcmp(name, "top") ||
	       !strcmp(name, "help") || !strcmp(name, "ps") ||
	       (!strcmp(name, "heap") && argc > 1 &&
		(!strcmp(argv[1], "diff") || !strcmp(argv[1], "retainers") ||
		 !strcmp(argv[1], "top")));
}

static struct cli cli;

int main(int argc, char **argv)
{
	char what[PATH_MAX + 32];
	int i = 1, rc;

	cli.opts = (struct rbi_open_opts){ .size = sizeof(cli.opts) };
	cli.s = (struct session){ .out = stdout };
	/* At most one batch item per argument. */
	if (!(cli.batch = calloc((size_t)argc + 1, sizeof(*cli.batch))))
		return EXIT_ERROR;
	if ((rc = parse_options(&cli, argc, argv, &i)))
		return rc - 1;
	style_resolve(&cli.s);
	if (cli.gdb)
		return gdb_main(&cli.s, &cli.opts, argc - i, argv + i);
	/* record, report, top, heap diff/retainers/top, ps and help find their own process
	   (-p, -- COMMAND) or files, or need none, when no target was given
	   first. */
	if (!cli.pid && !cli.nbatch && i < argc && targetless(argc - i, argv + i)) {
		rc = run_command(&cli.s, argc - i, argv + i);
		free(cli.batch);
		return rc;
	}
	if ((rc = open_target(&cli, argc, argv, &i, what, sizeof(what)))) {
		free(cli.batch);
		return rc > 0 ? rc - 1 : report_failure(rc);
	}
	cli.s.what = what;
	style_resolve(&cli.s);

	if (cli.nbatch && i < argc) {
		fprintf(stderr, "rbinspect: a COMMAND and -ex/-x: give one or the other\n");
		rc = EXIT_USAGE;
	} else if (cli.nbatch) {
		rc = run_batch(&cli.s, cli.batch, cli.nbatch);
	} else if (i == argc) {
		rc = repl_run(&cli.s);
	} else {
		rc = run_command(&cli.s, argc - i, argv + i);
	}
	rbi_target_free(cli.s.target);
	free(cli.batch);
	return rc;
}
