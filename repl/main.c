/* main.c: rbinspect's command line: open a target, run one command or a
 * session of them, and map failures to documented exit codes. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rbinspect.h"
#include "repl.h"

static void usage(FILE *f)
{
	fputs("usage: rbinspect [OPTIONS] -p PID [COMMAND [ARGS...]]\n"
	      "       rbinspect [OPTIONS] CORE [EXE] [COMMAND [ARGS...]]\n"
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
	      "8 Ruby VM not found or inconsistent, 9 process exited, 10 interrupted.\n", f);
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

/* -ex and -x in order, at most one per argument (file scope: reachable
   whichever way main returns). */
static struct batch_item *batch;

int main(int argc, char **argv)
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
	struct rbi_open_opts opts = { .size = sizeof(opts) };
	struct session s = { .out = stdout };
	size_t nbatch = 0;
	char what[PATH_MAX + 32];
	pid_t pid = 0;
	bool gdb = false;
	int c, rc;

	/* At most one batch item per argument. */
	if (!(batch = calloc((size_t)argc + 1, sizeof(*batch))))
		return EXIT_ERROR;
	/* "+": stop at the first non-option so command arguments are left
	   alone (rbinspect core bt --max-frames 5).  getopt_long_only, as
	   gdb: -ex is the long option "ex" with one dash. */
	while ((c = getopt_long_only(argc, argv, "+p:hVx:", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (parse_pid(optarg, &pid)) {
				fprintf(stderr, "rbinspect: invalid process id \"%s\"\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'j': s.json = true; break;
		case 's': opts.sysroot = optarg; break;
		case 'R': opts.ruby_version = optarg; break;
		case 'c':
			if (parse_color(optarg, &s.color_mode)) {
				fprintf(stderr, "rbinspect: --color takes auto, always or never\n");
				return EXIT_USAGE;
			}
			break;
		case 'e': batch[nbatch++] = (struct batch_item){ optarg, false }; break;
		case 'x': batch[nbatch++] = (struct batch_item){ optarg, true }; break;
		case 'h': usage(stdout); return EXIT_OK;
		case 'V': puts("rbinspect " RBINSPECT_VERSION); return EXIT_OK;
		case 'G': gdb = true; break;
		default: usage(stderr); return EXIT_USAGE;
		}
	}
	argc -= optind;
	argv += optind;
	style_resolve(&s);
	if (gdb)
		return gdb_main(&s, &opts, argc, argv);

	/* record, report and top find their own process (-p, -- COMMAND) or
	   file when no target was given first. */
	if (!pid && !nbatch && argc > 0 && (!strcmp(argv[0], "record") ||
	    !strcmp(argv[0], "report") || !strcmp(argv[0], "top"))) {
		free(batch);
		return run_command(&s, argc, argv);
	}
	if (pid) {
		snprintf(what, sizeof(what), "process %d", (int)pid);
		s.live = true;
		rc = rbi_target_open_pid(pid, &opts, &s.target);
	} else {
		if (argc < 1) {
			usage(stderr);
			return EXIT_USAGE;
		}
		const char *core = argv[0];
		argc--;
		argv++;
		/* An argument that is not a command is the core's executable. */
		if (argc > 0 && !command_find(argv[0])) {
			opts.exe = argv[0];
			argc--;
			argv++;
		}
		snprintf(what, sizeof(what), "%s", core);
		rc = rbi_target_open_core(core, &opts, &s.target);
	}
	if (rc)
		return report_failure(rc);
	s.what = what;

	if (nbatch && argc) {
		fprintf(stderr, "rbinspect: a COMMAND and -ex/-x: give one or the other\n");
		rc = EXIT_USAGE;
	} else if (nbatch) {
		rc = run_batch(&s, batch, nbatch);
	} else if (argc == 0) {
		rc = repl_run(&s);
	} else {
		rc = run_command(&s, argc, argv);
	}
	rbi_target_close(s.target);
	free(batch);
	return rc;
}
