/* profile-options.c: the options of `record`, `top` and `report`, in one
 * table that parses them, says which command takes which, offers them to
 * tab completion and help, and writes the usage lines, so that the four
 * cannot disagree (the man page's OPTIONS are checked against --help by
 * tests/integration/man.sh, and each command's own list against the
 * table by profile.sh). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile-cli.h"

struct optdef {
	const char *name, *alias;       /* "--rate", "-r" (or NULL) */
	const char *value;              /* the value's name in usage, NULL: a flag */
	const char *choices;            /* "wall|cpu": offered after the name */
	unsigned cmds;                  /* PROFILE_RECORD | PROFILE_TOP | ... */
	/* A flag sets these bits; another option calls SET with its value
	   (0, or -1 after saying what is wrong with it). */
	uint32_t record_flags, view_flags;
	int (*set)(struct profile_opts *o, const char *val);
	/* Why a command without it refuses it, when more can be said than
	   that it is not one of its options. */
	const char *refused;
};

enum {
	REC = PROFILE_RECORD, TOP = PROFILE_TOP, REP = PROFILE_REPORT,
	SAMPLING = REC | TOP, ALL = REC | TOP | REP,
};

static int parse_double(const char *s, double min, double max, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || end == s || !(v >= min && v <= max))
		return -1;
	*out = v;
	return 0;
}

/* S as a number from MIN to MAX into *OUT, or -1 after printing WHY. */
static int number_in(const char *s, double min, double max, double *out, const char *why)
{
	if (parse_double(s, min, max, out)) {
		fprintf(stderr, "rbinspect: %s\n", why);
		return -1;
	}
	return 0;
}

static int count_in(const char *s, double max, size_t *out, const char *why)
{
	double n;

	if (number_in(s, 1, max, &n, why))
		return -1;
	*out = (size_t)n;
	return 0;
}

static int set_rate(struct profile_opts *o, const char *v)
{
	return number_in(v, 0.1, 1e5, &o->rate, "--rate takes samples per second, 0.1 to 100000");
}

static int set_duration(struct profile_opts *o, const char *v)
{
	return number_in(v, 0.001, 1e7, &o->duration, "--duration takes seconds");
}

static int set_interval(struct profile_opts *o, const char *v)
{
	return number_in(v, 0.05, 3600, &o->interval, "--interval takes seconds (0.05 or more)");
}

static int set_top(struct profile_opts *o, const char *v)
{
	return count_in(v, 10000, &o->top, "--top takes a number of lines");
}

static int set_max_frames(struct profile_opts *o, const char *v)
{
	return count_in(v, 1e7, &o->max_frames, "--max-frames takes a number");
}

static int set_mode(struct profile_opts *o, const char *v)
{
	if (strcmp(v, "cpu") && strcmp(v, "wall")) {
		fprintf(stderr, "rbinspect: unknown mode \"%s\" (wall or cpu)\n", v);
		return -1;
	}
	o->record_flags &= ~RBI_SAMPLER_CPU;
	if (!strcmp(v, "cpu"))
		o->record_flags |= RBI_SAMPLER_CPU;
	return 0;
}

static int set_sort(struct profile_opts *o, const char *v)
{
	if (strcmp(v, "own") && strcmp(v, "total")) {
		fprintf(stderr, "rbinspect: unknown sort \"%s\" (own or total)\n", v);
		return -1;
	}
	o->sort_total = !strcmp(v, "total");
	return 0;
}

static int set_output(struct profile_opts *o, const char *v)
{
	o->output = v;
	return 0;
}

static int set_raw(struct profile_opts *o, const char *v)
{
	o->raw = v;
	return 0;
}

static int set_format(struct profile_opts *o, const char *v)
{
	if (rbi_profile_format_from_name(v, &o->format)) {
		fprintf(stderr, "rbinspect: %s\n", rbi_errmsg());
		return -1;
	}
	return 0;
}

static int set_pid(struct profile_opts *o, const char *v)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(v, &end, 10);
	if (errno || *end || n <= 0 || n > INT_MAX) {
		fprintf(stderr, "rbinspect: invalid process id \"%s\"\n", v);
		return -1;
	}
	o->pid = (pid_t)n;
	return 0;
}

static int set_quiet(struct profile_opts *o, const char *v)
{
	(void)v;
	o->quiet = true;
	return 0;
}

#define FORMATS "flamegraph|folded|speedscope|pprof|callgrind|raw"

/* In the order usage lists them. */
static const struct optdef options[] = {
	{ "--pid", "-p", "PID", NULL, SAMPLING, 0, 0, set_pid, NULL },
	{ "--rate", "-r", "HZ", NULL, SAMPLING, 0, 0, set_rate, NULL },
	{ "--interval", NULL, "S", NULL, TOP, 0, 0, set_interval, NULL },
	{ "--duration", "-d", "S", NULL, SAMPLING, 0, 0, set_duration, NULL },
	{ "--top", NULL, "N", NULL, TOP, 0, 0, set_top, NULL },
	{ "--output", "-o", "FILE", NULL, REC | REP, 0, 0, set_output, NULL },
	{ "--format", "-f", "F", FORMATS, REC | REP, 0, 0, set_format, NULL },
	{ "--raw", NULL, "FILE", NULL, REC, 0, 0, set_raw, NULL },
	{ "--subprocesses", "-s", NULL, NULL, SAMPLING, RBI_RECORD_SUBPROCESSES, 0, NULL, NULL },
	{ "--threads", "-t", NULL, NULL, ALL, 0, RBI_VIEW_THREADS, NULL, NULL },
	{ "--fibers", NULL, NULL, NULL, ALL, 0, RBI_VIEW_FIBERS, NULL, NULL },
	/* Idle threads are sampled (record, top) and shown (every view). */
	{ "--idle", "-i", NULL, NULL, ALL, RBI_SAMPLER_IDLE, RBI_VIEW_IDLE, NULL, NULL },
	{ "--gvl", "-g", NULL, NULL, ALL, 0, RBI_VIEW_GVL, NULL, NULL },
	{ "--no-lines", NULL, NULL, NULL, ALL, 0, RBI_VIEW_NO_LINES, NULL, NULL },
	{ "--pause", NULL, NULL, NULL, SAMPLING, RBI_SAMPLER_PAUSE, 0, NULL, NULL },
	{ "--native", NULL, NULL, NULL, SAMPLING, RBI_SAMPLER_NATIVE, 0, NULL, NULL },
	{ "--mode", NULL, "M", "wall|cpu", SAMPLING, 0, 0, set_mode,
	  "a profile is rendered in the mode it was recorded in (record --mode wall|cpu)" },
	{ "--sort", NULL, "S", "own|total", TOP, 0, 0, set_sort, NULL },
	{ "--max-frames", NULL, "N", NULL, SAMPLING, 0, 0, set_max_frames, NULL },
	{ "--quiet", "-q", NULL, NULL, REC | REP, 0, 0, set_quiet, NULL },
};

#define N_OPTIONS (sizeof(options) / sizeof(options[0]))

static const char *cmd_name(unsigned cmd)
{
	return cmd == PROFILE_TOP ? "top" : cmd == PROFILE_REPORT ? "report" : "record";
}

unsigned profile_cmd_of(const char *name)
{
	return !strcmp(name, "top") ? PROFILE_TOP : !strcmp(name, "report") ? PROFILE_REPORT :
	       PROFILE_RECORD;
}

/* The option ARG names ("--rate=5" and "--rate" name --rate), or NULL. */
static const struct optdef *find(const char *arg)
{
	size_t len = strcspn(arg, "=");

	for (size_t k = 0; k < N_OPTIONS; k++) {
		const struct optdef *d = &options[k];

		if ((strlen(d->name) == len && !strncmp(arg, d->name, len)) ||
		    (d->alias && strlen(d->alias) == len && !strncmp(arg, d->alias, len)))
			return d;
	}
	return NULL;
}

int profile_option(struct profile_opts *o, unsigned cmd, int argc, char **argv, int *i)
{
	const char *a = argv[*i], *eq = strchr(a, '='), *val = NULL;
	const struct optdef *d = find(a);

	if (!d)
		return 0;
	if (!(d->cmds & cmd)) {
		bool shown = d->value && !eq && *i + 1 < argc;

		fprintf(stderr, "rbinspect: %s: %s%s%s: %s\n", cmd_name(cmd), a,
			shown ? " " : "", shown ? argv[*i + 1] : "",
			d->refused ? d->refused : "not one of its options");
		return -1;
	}
	if (!d->value) {
		if (eq) {
			fprintf(stderr, "rbinspect: %s takes no value\n", d->name);
			return -1;
		}
		o->record_flags |= d->record_flags;
		o->view_flags |= d->view_flags;
		return d->set && d->set(o, NULL) ? -1 : 1;
	}
	if (eq)
		val = eq + 1;
	else if (*i + 1 < argc)
		val = argv[++*i];
	if (!val) {
		fprintf(stderr, "rbinspect: %s needs a value\n", a);
		return -1;
	}
	return d->set(o, val) ? -1 : 1;
}

const char *const *profile_completions(unsigned cmd)
{
	static const char *words[3][N_OPTIONS + 1];
	static char keys[3][N_OPTIONS][64];
	unsigned which = cmd == PROFILE_TOP ? 1 : cmd == PROFILE_REPORT ? 2 : 0;
	size_t n = 0;

	if (words[which][0])
		return words[which];
	for (size_t k = 0; k < N_OPTIONS; k++) {
		const struct optdef *d = &options[k];

		/* -p is how the target is named, not an option to offer. */
		if (!(d->cmds & cmd) || d->set == set_pid)
			continue;
		if (d->value) {
			snprintf(keys[which][n], sizeof(keys[which][n]), "%s=%s", d->name,
				 d->choices ? d->choices : "");
			words[which][n] = keys[which][n];
			n++;
		} else {
			words[which][n++] = d->name;
		}
	}
	words[which][n] = NULL;
	return words[which];
}

void profile_usage(FILE *f, unsigned cmd, const char *head)
{
	size_t col = (size_t)fprintf(f, "usage: rbinspect %s %s", cmd_name(cmd), head);

	for (size_t k = 0; k < N_OPTIONS; k++) {
		const struct optdef *d = &options[k];
		char word[96];
		size_t len;

		if (!(d->cmds & cmd) || d->set == set_pid)
			continue;
		len = (size_t)snprintf(word, sizeof(word), "[%s%s%s]", d->name,
				       d->value ? " " : "",
				       d->value ? (d->choices ? d->choices : d->value) : "");
		if (col + 1 + len > 78) {
			fputs("\n        ", f);
			col = 8;
		}
		col += (size_t)fprintf(f, " %s", word);
	}
	fputc('\n', f);
}
