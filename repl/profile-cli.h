/* profile-cli.h: what `record`, `report` and `top` share (cmd-record.c). */
#ifndef RBINSPECT_PROFILE_CLI_H
#define RBINSPECT_PROFILE_CLI_H

#include <signal.h>
#include <stdbool.h>

#include "ruby-introspect.h"

struct profile_opts {
	pid_t pid;
	double rate, duration, interval;
	size_t max_frames, top;
	uint32_t record_flags;          /* RBI_RECORD_*, RBI_SAMPLER_* */
	uint32_t view_flags;            /* RBI_VIEW_* */
	rbi_profile_format format;
	bool quiet;
	bool sort_total;                /* top --sort total */
	const char *output, *raw;
};

/* The commands profile-options.c's table serves. */
enum profile_cmd { PROFILE_RECORD = 1, PROFILE_TOP = 2, PROFILE_REPORT = 4 };

/* Parse the option of command CMD at ARGV[*I] (and its value, advancing
   *I): 1 if it was one, 0 if it is no option of these commands, -1 after
   printing why it is wrong (an option of another of them included). */
int profile_option(struct profile_opts *o, unsigned cmd, int argc, char **argv, int *i);
/* The PROFILE_* command named NAME ("record", "top", "report"). */
unsigned profile_cmd_of(const char *name);
/* CMD's options for tab completion and help (struct command's words). */
const char *const *profile_completions(unsigned cmd);
/* "usage: rbinspect CMD HEAD" and CMD's options, wrapped. */
void profile_usage(FILE *f, unsigned cmd, const char *head);
/* Write P in FORMAT through O's view to PATH ("-": stdout); an exit code. */
int profile_write_file(rbi_profile *p, const struct profile_opts *o,
		       rbi_profile_format format, const char *path);
/* The same to a name rbinspect made up: created new, never over a file or
   through a link; PATH (CAP bytes) then says where it went
   (outfile_create_new). */
int profile_write_new(rbi_profile *p, const struct profile_opts *o,
		      rbi_profile_format format, char *path, size_t cap);
/* Samples, errors, torn (and kept in part), late, time per sample. */
void profile_print_stats(FILE *f, rbi_profile *p);
/* A line when the sampling loop could not run real-time (lib/profile/wakeup.c). */
void profile_print_wakeup(FILE *f, rbi_profile *p);

#endif
