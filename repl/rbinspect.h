/* rbinspect.h: the CLI's shared pieces.  Commands are thin: they call the
 * library and format what it returns. */
#ifndef RBINSPECT_H
#define RBINSPECT_H

#include <limits.h>
#include <signal.h>
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
	EXIT_INTERRUPTED = 10,  /* a command was interrupted (Ctrl-C) */
	EXIT_BUSY = 11,         /* a debugger (another tracer) holds the process */
};

/* Color: `--color=WHEN` and `set color`. */
enum { COLOR_AUTO, COLOR_ALWAYS, COLOR_NEVER };

struct session {
	rbi_target *target;
	const char *what;       /* "process 1234" or the core's path */
	bool json;
	FILE *out;
	size_t warnings_shown;  /* rbi_target_warning() index already printed */
	/* Session state (repl.c, cmd-frame.c, cmd-session.c). */
	bool live;              /* a process, not a core */
	bool gone;              /* the live process has exited */
	bool quit;              /* `quit` ran */
	unsigned thread;        /* selected thread number; 0: the main thread */
	size_t frame;           /* selected frame of that thread */
	uint64_t fiber;         /* selected fiber (rb_fiber_t) whose frames
				   `frame` reads; 0: the thread's own */
	size_t max_frames;      /* `set max-frames`: frames per thread, 0: all */
	bool native;            /* `set native`: bt merges native frames */
	uint64_t bad_values;    /* values the VM cannot have that the
				   running command marked (a line shown as
				   unknown, heap counts approximate): it
				   then fails with EXIT_NO_VM (repl.c) */
	uint64_t pages_skipped; /* heap pages a snapshot's walk could not
				   read: the running command's counts miss
				   them, and it fails with EXIT_NO_VM */
	int color_mode;         /* COLOR_* */
	bool color;             /* write escape sequences (resolved from
				   color_mode, the terminal and NO_COLOR) */
};

struct command {
	const char *name;
	const char *args;       /* usage after the name, "" if none */
	const char *help;       /* one line */
	int (*run)(struct session *s, int argc, char **argv);
	/* Words tab completion offers after the name (NULL-terminated,
	   or NULL): literal options, "%thread" (thread numbers), "%frame"
	   (frame numbers of the selected thread), "%local" (self and the
	   local variables of its selected frame), "%command" (command
	   names), "%profile" alone (the options of record, top or report, the
   command's, from profile-options.c's table); "KEY=a|b" offers a or b
   after the word KEY. */
	const char *const *complete;
};

/* The words tab completion offers after C's name (see struct command). */
const char *const *command_words(const struct command *c);

/* Set by SIGINT during an interactive session; long commands stop when
   they see it (interrupted()) and the REPL clears it. */
extern volatile sig_atomic_t interrupt_flag;
static inline bool interrupted(void)
{
	return interrupt_flag != 0;
}

/* A long command ends cleanly on a terminating signal (stop.c): between
   stop_guard_begin and stop_guard_end the first NSIGNALS of SIGINT,
   SIGTERM, SIGHUP, SIGQUIT and SIGPIPE set stop_requested (and end
   sleeps) instead of their default action. */
#define STOP_ON_INT_TERM 2
#define STOP_ON_ALL 5
struct stop_guard {
	size_t n;
	struct sigaction old[STOP_ON_ALL];
};
extern volatile sig_atomic_t stop_requested;
void stop_guard_begin(struct stop_guard *g, size_t nsignals);
void stop_guard_end(const struct stop_guard *g);

extern const struct command commands[];
const struct command *command_find(const char *name);
/* NAME's usage, description and options (what "help NAME" and
   "NAME --help" print) to F. */
void command_help(FILE *f, const struct command *c);

/* Print "rbinspect: MSG" for a library failure and map STATUS to an exit
   code. */
int report_failure(int status);
int exit_code_for(int status);

/* Arguments: S, a whole decimal number of at most MAX, into *OUT; -1 for
   anything else (a sign, other characters, too large) (commands.c). */
int parse_count(const char *s, unsigned long max, unsigned long *out);

int cmd_info(struct session *s, int argc, char **argv);
int cmd_threads(struct session *s, int argc, char **argv);
/* `ps` (cmd-ps.c): needs no target. */
int cmd_ps(struct session *s, int argc, char **argv);
int cmd_bt(struct session *s, int argc, char **argv);
int cmd_objects(struct session *s, int argc, char **argv);
int cmd_heap_dump(struct session *s, int argc, char **argv);
/* `heap dump`, `heap diff`, `heap retainers` and `heap top` (cmd-heap.c):
   all but dump read dumps and need no target. */
int cmd_heap(struct session *s, int argc, char **argv);

/* `heap diff --every` (heap-snapshots.c): N heap dumps of the session's
   process taken EVERY seconds apart (with --pause if PAUSE) into KEEP, or
   into a temporary directory that heap_snapshots_remove() removes. */
#define HEAP_SNAPSHOTS_MAX 3
struct heap_snapshots {
	char dir[PATH_MAX];
	char paths[HEAP_SNAPSHOTS_MAX][PATH_MAX + 32];
	unsigned n;             /* files made (the last in part if a dump failed) */
	bool temporary;
};
int heap_snapshots_take(struct session *s, struct heap_snapshots *hs, unsigned n,
			unsigned long every, bool pause, const char *keep);
void heap_snapshots_remove(const struct heap_snapshots *hs);

/* A heap walk for a command (heap-walk.c).  Set S, COMMAND and PAUSE
   (stop a live target for the walk), then heap_walk_begin: IT is the
   walk; heap_walk_end frees it and resumes the target, returning RC or
   the first error after it; in a core or a paused process it adds the
   used slots of a type no heap object has to the session's bad_values
   (the command then exits 8). */
struct heap_walk {
	struct session *s;
	const char *command;
	bool pause;
	bool paused;            /* stopped by us, to be resumed */
	rbi_heap_iter *it;
	uint64_t start_ns, progress_ns;
	bool progress_shown;
};
int heap_walk_begin(struct heap_walk *w);
/* A progress line on a terminal, now and then. */
void heap_walk_progress(struct heap_walk *w);
int heap_walk_end(struct heap_walk *w, int rc);

/* -o FILE (outfile.c): "-" is standard output; FILE.gz is gzip.  NULL
   with errno set when it cannot be created.  outfile_close: -1 if any
   write or the close failed. */
FILE *outfile_open(const char *path);
int outfile_close(FILE *f);
/* A file with a name rbinspect made up (PATH, CAP bytes), created new and
   never through a symbolic link: on a name taken already (another user's
   file, or a link planted in a shared directory), PATH becomes
   STEM-2.EXT, STEM-3.EXT ...  NULL with errno set. */
FILE *outfile_create_new(char *path, size_t cap);
/* Whether PATH is written compressed (FILE.gz). */
bool outfile_compressed(const char *path);
/* An unnamed temporary file (in $TMPDIR, else /tmp; gone when closed) to
   write a compressed output's bytes to first, so that a paused process is
   let go before they are compressed; NULL with errno set.
   outfile_unstage copies STAGE's bytes into OUT and closes STAGE: -1 if a
   read or write failed. */
FILE *outfile_stage(void);
int outfile_unstage(FILE *stage, FILE *out);
/* Could PATH be written (a file there opened for writing, or made in its
   directory), could a new file be made in DIR?  0, or the errno that says
   why not.  For a check before a long run, not a promise: the file system
   may change meanwhile. */
int outfile_writable(const char *path);
int outfile_dir_writable(const char *dir);
/* Sampling (cmd-record.c, cmd-top.c).  With no session target (run as
   `rbinspect record ...`) they take -p PID or -- COMMAND themselves. */
int cmd_record(struct session *s, int argc, char **argv);
int cmd_report(struct session *s, int argc, char **argv);
int cmd_top(struct session *s, int argc, char **argv);

struct rbi_json;
/* A thread's number, identity and state as JSON object members, and as the
   one-line text header `bt` prints (cmd-threads.c); both say whether the
   thread is the one that crashed. */
void thread_json_fields(struct session *s, struct rbi_json *j, const struct rbi_thread *th);
void thread_header_text(struct session *s, FILE *f, const struct rbi_thread *th);
/* How a core's process died (crash.c): NULL for a live process or a core
   no signal caused. */
const struct rbi_crash *session_crash(struct session *s);
/* Is TH the thread that took the signal that killed the process? */
bool thread_crashed(struct session *s, const struct rbi_thread *th);
/* C in one line of escaped text. */
void crash_text(FILE *f, const struct rbi_crash *c);
/* A "crash" member: the signal, the one being handled, a description;
   null when there is no crash. */
void crash_json(struct session *s, struct rbi_json *j);
/* `bt --native` of thread TH (bt-native.c): as text, or as members
   "frames", "merged"... of the thread's JSON object when J is not NULL.
   At most MAX frames (0: all); *TRUNCATED if there were more; with
   LOCALS each Ruby frame's self and locals (frame_locals, Strings cut to
   MAX_VALUE).  RBI_OK, 2 when interrupted, or a library status. */
int bt_native(struct session *s, struct rbi_json *j, const struct rbi_thread *th,
	      size_t max, bool locals, size_t max_value, bool *truncated);
/* After a name of which CUT bytes were left out: the mark of the cut,
   "…[+CUT bytes]"; nothing when CUT is 0 (cmd-bt.c). */
void cut_text(FILE *out, uint64_t cut);
/* A Ruby frame as Ruby 3.4 prints it, one line: path:line:in 'label';
   a name cut short is followed by "…[+N bytes]"; a line the VM cannot
   have is "path:?:in 'label' (line unknown: why)", counted in
   S->bad_values (cmd-bt.c). */
void frame_line_text(struct session *s, const struct rbi_frame *f);
/* A frame's fields as JSON object members, "label_cut", "path_cut" and
   "line_error" included (counted as frame_line_text does; cmd-bt.c). */
void frame_json_fields(struct session *s, struct rbi_json *j, const struct rbi_frame *f);
int cmd_help(struct session *s, int argc, char **argv);
/* `--gdb COMMAND ARGS`: run a command on the target a gdb session holds,
   described by gdb's output on stdin (gdb.c, for rbinspect.gdb). */
int gdb_main(struct session *s, struct rbi_open_opts *opts, int argc, char **argv);
int cmd_thread(struct session *s, int argc, char **argv);
/* Fibers (cmd-fibers.c).  bt_fibers: `bt --fibers`, at most MAX_FIBERS
   fibers (0: all) of MAX_FRAMES frames each, with LOCALS each frame's
   self and locals (frame_locals, Strings cut to MAX_VALUE); session_fiber: the selected
   fiber (s->fiber) as a thread for rbi_frame_foreach, or an exit code;
   parse_max_fibers: ARGV[*I] as --max-fibers N: 1, 0 if it is not that,
   -1 after a usage message. */
int cmd_fibers(struct session *s, int argc, char **argv);
int cmd_fiber(struct session *s, int argc, char **argv);
int bt_fibers(struct session *s, size_t max_frames, size_t max_fibers, bool locals,
	       size_t max_value);
size_t bt_fibers_default_max(void);
int parse_max_fibers(const char *cmd, int argc, char **argv, int *i, size_t *max);
int session_fiber(struct session *s, struct rbi_thread *th);
int cmd_frame(struct session *s, int argc, char **argv);
int cmd_print(struct session *s, int argc, char **argv);
/* `info args`: the parameters of the selected frame's method or block. */
int frame_args(struct session *s);
/* Frame FR's self and local variables as `frame` shows them, Strings cut
   to MAX bytes (0: 200): as text, or as members "self" and "locals" of J's
   open object when J is not NULL.  rbi_local_foreach's status (1 when
   interrupted). */
int frame_vars(struct session *s, struct rbi_json *j, const struct rbi_frame *fr, size_t max);
/* bt --locals: frame_vars under a frame's line, or in its JSON object
   with "locals_error"; a frame whose locals cannot be read says why on
   its own line.  1 when interrupted, else 0: the walk goes on. */
int frame_locals(struct session *s, struct rbi_json *j, const struct rbi_frame *fr,
		 size_t max);
int cmd_up(struct session *s, int argc, char **argv);
int cmd_down(struct session *s, int argc, char **argv);
int cmd_set(struct session *s, int argc, char **argv);
int cmd_refresh(struct session *s, int argc, char **argv);
int cmd_quit(struct session *s, int argc, char **argv);

/* A live target that exited: print why COMMAND cannot run and return
   EXIT_GONE; 0 if the target is there (repl.c). */
int target_gone(struct session *s, const char *command);
/* Note a failure: a live target gone is remembered (s->gone). */
int session_failure(struct session *s, int status);

/* Terminal styles (style.c): nothing unless s->color. */
enum style { STYLE_HEADER, STYLE_LABEL, STYLE_NAME, STYLE_ERROR, STYLE_DIM };
void style_begin(struct session *s, enum style st);
void style_end(struct session *s);
/* Resolve s->color from s->color_mode, whether s->out is a terminal and
   NO_COLOR. */
void style_resolve(struct session *s);

#endif
