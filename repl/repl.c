/* repl.c: running commands: one at a time (the one-shot CLI), from -ex
 * and -x (batch), or interactively.  Every line is split into words and
 * run through the one command table (commands.c).
 *
 * On a terminal the session uses GNU readline's callback interface
 * (loaded then: readline-lib.c), so a SIGINT never lands inside readline:
 * at the prompt Ctrl-C drops the line being typed; during a command it
 * sets interrupt_flag, which long walks check (the command stops and says
 * so), and the session goes on.  History is kept across runs in
 * $XDG_STATE_HOME/rbinspect/history.  On anything else (a pipe, a file),
 * or without readline, lines are read plainly, without a prompt. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "readline-lib.h"
#include "repl.h"

#define REPL_ARGS_MAX 64
#define HISTORY_MAX 1000
#define PROMPT "(rbinspect) "
/* Completion candidates: thread and frame numbers offered at most. */
#define COMPLETE_MAX 256
/* Bytes of one line of an -x file: longer is no command file. */
#define SCRIPT_LINE_MAX (64u << 10)

volatile sig_atomic_t interrupt_flag;

/* ---- Running one command ------------------------------------------------ */

/* Warnings appear as the library learns things (opening the target,
   loading its images), so show the new ones after every command. */
static void print_new_warnings(struct session *s)
{
	const char *w;

	while ((w = rbi_target_warning(s->target, s->warnings_shown))) {
		fputs("rbinspect: warning: ", stderr);
		rbi_out_text_cstr(stderr, w);
		fputc('\n', stderr);
		s->warnings_shown++;
	}
}

int target_gone(struct session *s, const char *command)
{
	if (!s->gone)
		return EXIT_OK;
	fprintf(stderr, "rbinspect: %s: %s has exited; nothing left to read\n",
		command, s->what);
	return EXIT_GONE;
}

int session_failure(struct session *s, int status)
{
	if (s->live && (status == RBI_GONE || status == RBI_ZOMBIE))
		s->gone = true;
	/* What was learnt on the way explains the failure: first. */
	print_new_warnings(s);
	return report_failure(status);
}

int run_command(struct session *s, int argc, char **argv)
{
	const struct command *c = command_find(argv[0]);
	int rc, n = 1;
	bool json, once = false;

	if (!c) {
		fputs("rbinspect: unknown command \"", stderr);
		rbi_out_text_cstr(stderr, argv[0]);
		fputs("\"; try \"help\"\n", stderr);
		return EXIT_USAGE;
	}
	/* "COMMAND --help" and "--json" (JSON for this command only), before
	   any "--": after it come the words of a program to run (record --
	   ruby app.rb --help). */
	json = s->json;
	for (int i = 1, after = 0; i < argc; i++) {
		after = after || !strcmp(argv[i], "--");
		if (!after && !strcmp(argv[i], "--help")) {
			command_help(s->out, c);
			return EXIT_OK;
		}
		if (!after && !strcmp(argv[i], "--json"))
			once = s->json = true;
		else
			argv[n++] = argv[i];
	}
	s->bad_values = s->pages_skipped = 0;
	rc = c->run(s, n, argv);
	if (once)
		s->json = json;
	fflush(s->out);
	print_new_warnings(s);
	/* Output that had to mark something unknown, or could not read all it
	   counts, is no success. */
	if (rc != EXIT_OK)
		return rc;
	if (s->bad_values)
		fprintf(stderr, "rbinspect: %s: %" PRIu64 " value%s the VM cannot have (corrupt "
			"memory), marked in the output\n", c->name, s->bad_values,
			s->bad_values == 1 ? "" : "s");
	if (s->pages_skipped)
		fprintf(stderr, "rbinspect: %s: %" PRIu64 " heap page%s could not be read "
			"(missing from the core, or not heap pages): not counted\n", c->name,
			s->pages_skipped, s->pages_skipped == 1 ? "" : "s");
	if (s->bad_values || s->pages_skipped)
		rc = EXIT_NO_VM;
	return rc;
}

static int split_words(char *line, char **argv, int max)
{
	int argc = 0;

	for (char *tok = strtok(line, " \t\r\n"); tok && argc < max;
	     tok = strtok(NULL, " \t\r\n"))
		argv[argc++] = tok;
	return argc;
}

/* A live process moved on since the last command: read it afresh, and
   notice when it has exited (once). */
static void refresh(struct session *s)
{
	int rc;

	if (!s->live || s->gone)
		return;
	rc = rbi_target_refresh(s->target);
	if (rc == RBI_GONE || rc == RBI_ZOMBIE) {
		s->gone = true;
		fprintf(stderr, "rbinspect: %s has exited\n", s->what);
	}
}

/* Run one line of a session or a script; *RAN: whether a command ran
   before (then the target is refreshed first).  Returns the command's exit
   code, or -1 for a line without a command. */
static int run_line(struct session *s, char *line, bool *ran)
{
	char *argv[REPL_ARGS_MAX];
	int argc = split_words(line, argv, REPL_ARGS_MAX), rc;

	if (argc == 0 || argv[0][0] == '#')
		return -1;
	/* Cleared before the refresh: a Ctrl-C typed after Enter, while the
	   target is read afresh, stops the command it was meant for. */
	interrupt_flag = 0;
	if (*ran)
		refresh(s);
	*ran = true;
	rc = run_command(s, argc, argv);
	interrupt_flag = 0;
	return rc;
}

/* ---- -ex CMD and -x FILE ------------------------------------------------ */

/* -x PATH opened to read: a file, or a pipe (commands fed to a running
   session through a FIFO); a directory would read as nothing, a device
   is no command file.  NULL after saying why. */
static FILE *script_open(const char *path)
{
	struct stat st;
	FILE *f;

	if (stat(path, &st) != 0) {
		fprintf(stderr, "rbinspect: -x %s: %s\n", path, strerror(errno));
		return NULL;
	}
	if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode)) {
		fprintf(stderr, "rbinspect: -x %s: not a file or a pipe (a command file is "
			"one command a line)\n", path);
		return NULL;
	}
	if (!(f = fopen(path, "re")))
		fprintf(stderr, "rbinspect: -x %s: %s\n", path, strerror(errno));
	return f;
}

int run_batch(struct session *s, const struct batch_item *items, size_t n)
{
	bool ran = false;
	int rc = EXIT_OK;

	for (size_t i = 0; i < n && !s->quit; i++) {
		if (items[i].file) {
			FILE *f = script_open(items[i].text);
			char *line = NULL;
			size_t cap = 0;
			ssize_t len;

			if (!f)
				return EXIT_USAGE;
			while (!s->quit && (len = rbi_read_line(&line, &cap, f, SCRIPT_LINE_MAX)) != -1) {
				if (len < 0) {
					fprintf(stderr, "rbinspect: -x %s: a line longer than %u "
						"bytes: not a command file\n", items[i].text,
						SCRIPT_LINE_MAX);
					rc = EXIT_USAGE;
					break;
				}
				if ((rc = run_line(s, line, &ran)) > 0)
					break;
			}
			free(line);
			fclose(f);
		} else {
			char *line = strdup(items[i].text);

			if (!line)
				return EXIT_ERROR;
			rc = run_line(s, line, &ran);
			free(line);
		}
		if (rc > 0)
			return rc;      /* the first failure ends the script */
		rc = EXIT_OK;
	}
	return rc;
}

/* ---- History ------------------------------------------------------------ */

/* readline, once the interactive session loaded it. */
static const struct readline_lib *rl;
static char history_path[PATH_MAX + 16];
static int history_added;

/* mkdir -p DIR (mode 0700 for what it creates). */
static int make_dirs(char *dir)
{
	for (char *p = dir + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;

		*p = '\0';
		if (mkdir(dir, 0700) && errno != EEXIST) {
			*p = c;
			return -1;
		}
		*p = c;
		if (!c)
			return 0;
	}
}

static void history_open(void)
{
	const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	char dir[PATH_MAX];
	int n;

	/* XDG: a relative XDG_STATE_HOME is invalid and ignored. */
	if (state && state[0] == '/')
		n = snprintf(dir, sizeof(dir), "%s/rbinspect", state);
	else if (home && home[0] == '/')
		n = snprintf(dir, sizeof(dir), "%s/.local/state/rbinspect", home);
	else
		return;
	if (n < 0 || (size_t)n >= sizeof(dir) - 8 || make_dirs(dir))
		return;         /* no history, silently: not worth a warning */
	snprintf(history_path, sizeof(history_path), "%s/history", dir);
	rl->using_history();
	rl->stifle_history(HISTORY_MAX);
	rl->read_history(history_path);
}

static void history_add(const char *line)
{
	int len = *rl->history_length;
	HIST_ENTRY *last = len ? rl->history_get(*rl->history_base + len - 1) : NULL;

	if (!*line || (last && !strcmp(last->line, line)))
		return;
	rl->add_history(line);
	history_added++;
}

static void history_close(void)
{
	int n = history_added < *rl->history_length ? history_added : *rl->history_length;

	if (!history_path[0] || n == 0)
		return;
	/* Append, so two sessions at once both keep their lines. */
	if (rl->append_history(n, history_path))
		rl->write_history(history_path);
	rl->history_truncate_file(history_path, HISTORY_MAX);
}

/* ---- Completion --------------------------------------------------------- */

static struct session *comp_session;
static char *comp_words[COMPLETE_MAX];
static size_t comp_n;
static const char *comp_text;   /* the word being completed */

/* W, if it completes the word and is not offered yet: the list is kept to
   what can match, so long lists (constants) are not cut short. */
static void comp_add(const char *w)
{
	char *d;

	if (comp_text && strncmp(w, comp_text, strlen(comp_text)))
		return;
	for (size_t i = 0; i < comp_n; i++)
		if (!strcmp(comp_words[i], w))
			return;
	if (comp_n < COMPLETE_MAX && (d = strdup(w)))
		comp_words[comp_n++] = d;
}

static int comp_thread(const struct rbi_thread *th, void *arg)
{
	char num[16];

	snprintf(num, sizeof(num), "%u", th->number);
	comp_add(num);
	return comp_n >= COMPLETE_MAX;
}

static int comp_frame(const struct rbi_frame *f, void *arg)
{
	char num[24];

	snprintf(num, sizeof(num), "%zu", f->index);
	comp_add(num);
	return 0;
}

static int comp_local(const struct rbi_local *l, void *arg)
{
	if (!l->internal && l->name)
		comp_add(l->name);
	return comp_n >= COMPLETE_MAX;
}

static int comp_name(const char *name, void *arg)
{
	(void)arg;
	comp_add(name);
	return comp_n >= COMPLETE_MAX;
}

/* The names p reads in the selected frame that the word can start: self
   and its locals, or its self's @ivars, the $globals, the Constants its
   code reads. */
static int comp_frame_locals(const struct rbi_frame *f, void *arg)
{
	char c = comp_text ? comp_text[0] : '\0';

	if (f->index != comp_session->frame)
		return 0;
	if (c == '@' || c == '$')
		rbi_frame_names(comp_session->target, f, c, comp_name, NULL);
	else if (c >= 'A' && c <= 'Z')
		rbi_frame_names(comp_session->target, f, 'A', comp_name, NULL);
	else {
		comp_add("self");
		rbi_local_foreach(comp_session->target, f, 1, comp_local, NULL);
	}
	return 1;
}

struct comp_pick {
	unsigned want;
	rbi_frame_fn fn;        /* called for its frames */
	size_t max;
};

static int comp_pick_thread(const struct rbi_thread *th, void *arg)
{
	struct comp_pick *p = arg;

	if (p->want ? th->number != p->want : !th->main)
		return 0;
	/* Walk its frames here: TH is valid only during the callback. */
	if (!th->error)
		rbi_frame_foreach(comp_session->target, th, p->max, p->fn, NULL);
	return 1;
}

/* The words COMMAND takes after the word PREV (NULL: right after the
   command name), from its table entry. */
static void comp_collect(const struct command *c, const char *prev)
{
	struct session *s = comp_session;
	const char *const *words = command_words(c), *const *e;

	if (!words)
		return;
	/* After a KEY of "KEY=a|b": only its values. */
	for (e = words; prev && *e; e++) {
		const char *eq = strchr(*e, '=');

		if (!eq || strlen(prev) != (size_t)(eq - *e) || strncmp(*e, prev, eq - *e))
			continue;
		for (const char *v = eq + 1; *v;) {
			size_t len = strcspn(v, "|");
			char word[64];

			snprintf(word, sizeof(word), "%.*s", (int)len, v);
			comp_add(word);
			v += len + (v[len] == '|');
		}
		return;
	}
	for (e = words; *e; e++) {
		const char *eq = strchr(*e, '=');

		if (!strcmp(*e, "%command")) {
			for (const struct command *k = commands; k->name; k++)
				comp_add(k->name);
		} else if (!strcmp(*e, "%thread")) {
			if (!s->gone)
				rbi_thread_foreach(s->target, comp_thread, NULL);
		} else if (!strcmp(*e, "%frame") || !strcmp(*e, "%local")) {
			struct comp_pick p = { .want = s->thread, .fn = comp_frame,
					       .max = COMPLETE_MAX };

			if (!strcmp(*e, "%local")) {
				p.fn = comp_frame_locals;
				p.max = s->frame + 1;
			}
			/* The selected fiber's frames are not offered. */
			if (!s->gone && !s->fiber)
				rbi_thread_foreach(s->target, comp_pick_thread, &p);
		} else if (eq) {
			char word[64];

			snprintf(word, sizeof(word), "%.*s", (int)(eq - *e), *e);
			comp_add(word);
		} else {
			comp_add(*e);
		}
	}
}

static char *comp_generator(const char *text, int state)
{
	static size_t next;
	size_t len = strlen(text);

	if (!state)
		next = 0;
	while (next < comp_n) {
		const char *w = comp_words[next++];

		if (!strncmp(w, text, len))
			return strdup(w);
	}
	return NULL;
}

static char **complete(const char *text, int start, int end)
{
	char *words[REPL_ARGS_MAX], *line;
	const struct command *c;
	int n;

	*rl->attempted_completion_over = 1;     /* never file names */
	for (size_t i = 0; i < comp_n; i++)
		free(comp_words[i]);
	comp_n = 0;
	if (!(line = strndup(*rl->line_buffer, (size_t)start)))
		return NULL;
	comp_text = text;
	n = split_words(line, words, REPL_ARGS_MAX);
	if (n == 0) {
		for (c = commands; c->name; c++)
			comp_add(c->name);
	} else if ((c = command_find(words[0]))) {
		interrupt_flag = 0;
		comp_collect(c, n > 1 ? words[n - 1] : NULL);
	}
	comp_text = NULL;
	free(line);
	return rl->completion_matches(text, comp_generator);
}

/* ---- The interactive session -------------------------------------------- */

static void on_sigint(int sig)
{
	(void)sig;
	interrupt_flag = 1;
}

static void sigint_install(struct sigaction *old)
{
	struct sigaction sa = { .sa_handler = on_sigint };

	sigemptyset(&sa.sa_mask);
	/* Restart writes and reads a command makes; select() (the prompt)
	   is never restarted, so Ctrl-C there still wakes the loop. */
	sa.sa_flags = SA_RESTART;
	sigaction(SIGINT, &sa, old);
}

static struct session *line_session;
static bool line_eof;
static int line_rc;
static bool line_ran;

static void line_handler(char *line)
{
	struct session *s = line_session;
	int rc;

	if (!line) {
		line_eof = true;
		fputc('\n', *rl->outstream);   /* after the prompt Ctrl-D left */
		return;
	}
	history_add(line);
	if ((rc = run_line(s, line, &line_ran)) >= 0)
		line_rc = rc;
	free(line);
	if (s->quit) {
		/* Do not print a new prompt. */
		rl->callback_handler_remove();
	}
}

static char word_breaks[] = " \t\n\"\\'`><=;|&{(";

static int repl_tty(struct session *s)
{
	line_session = s;
	comp_session = s;
	*rl->readline_name = "rbinspect";
	*rl->outstream = stdout;
	*rl->attempted_completion_function = complete;
	/* readline's default, but for '@' and '$': p completes @ivars and
	   $globals as whole words. */
	*rl->completer_word_break_characters = word_breaks;
	*rl->catch_signals = 0;         /* SIGINT is ours (on_sigint) */
	/* Output redirected: keep the prompt and echo on the terminal. */
	if (!isatty(fileno(s->out)))
		*rl->outstream = stderr;
	history_open();
	rl->callback_handler_install(PROMPT, line_handler);
	while (!line_eof && !s->quit) {
		fd_set fds;

		FD_ZERO(&fds);
		FD_SET(STDIN_FILENO, &fds);
		if (select(STDIN_FILENO + 1, &fds, NULL, NULL, NULL) < 0) {
			if (errno != EINTR)
				break;
			if (interrupt_flag) {
				/* Ctrl-C at the prompt: drop the line, prompt again. */
				interrupt_flag = 0;
				rl->free_line_state();
				rl->callback_sigcleanup();
				rl->cleanup_after_signal();
				rl->callback_handler_remove();
				fputc('\n', *rl->outstream);
				fflush(*rl->outstream);
				rl->callback_handler_install(PROMPT, line_handler);
			}
			continue;
		}
		rl->callback_read_char();
	}
	if (!s->quit)
		rl->callback_handler_remove();
	history_close();
	for (size_t i = 0; i < comp_n; i++)
		free(comp_words[i]);
	comp_n = 0;
	return line_rc;
}

static int repl_lines(struct session *s)
{
	char *line = NULL;
	size_t cap = 0;
	bool ran = false;
	int rc = EXIT_OK, r;

	while (!s->quit && getline(&line, &cap, stdin) >= 0) {
		if ((r = run_line(s, line, &ran)) >= 0)
			rc = r;
	}
	free(line);
	return rc;
}

int repl_run(struct session *s)
{
	struct sigaction old;
	const char *why;
	int rc;

	sigint_install(&old);
	if (isatty(STDIN_FILENO) && !(rl = readline_lib(&why)))
		fprintf(stderr, "rbinspect: no line editing: %s\n", why);
	rc = rl ? repl_tty(s) : repl_lines(s);
	sigaction(SIGINT, &old, NULL);
	return rc;
}
