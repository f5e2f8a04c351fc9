/* gdb.c: `rbinspect --gdb COMMAND`: run COMMAND on the target a gdb session
 * holds.  gdb-plugin/rbinspect.gdb (no Python) pipes gdb's own description
 * of its target into our stdin: `info inferiors`, `info files`,
 * `show sysroot` and a line of its state ("rbinspect-snapshot: FORCE SLOT").
 * All the deciding is here, in C:
 *   - a core gdb opened: read the same file (and executable, and gdb's
 *     sysroot when it names a directory);
 *   - a native process: read it directly (process_vm_readv works while gdb
 *     holds it stopped; it needs no ptrace of our own);
 *   - a process we may not read (Yama ptrace_scope 1 makes gdb's children
 *     siblings of a process gdb launched), a remote target, or when the user
 *     set $rbinspect_snapshot: ask gdb for a snapshot.
 * A snapshot is a gcore into a private directory that we create (mkdir
 * 0700, so it cannot be anybody else's), named by our exit status SLOT, the
 * one number a gdb script without Python can read back ($_shell_exitcode).
 * gdb writes SLOT/core and runs us again with SLOT in its state line; we
 * check the directory is still ours, open the core and remove the directory
 * before reading.  The directory is ~/.cache/rbinspect/gdb.SLOT (gdb's gcore
 * expands the ~ from the same $HOME), where no other user can take the
 * names; /tmp/rbinspect-gdb.SLOT, which any user can squat, only when the
 * home directory cannot hold it. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "rbinspect.h"
#include "repl.h"

#define GDB_TEXT_MAX (16u << 20)        /* bytes of gdb output read */
/* Snapshot slots: exit statuses that mean "gcore into SLOT's directory,
   then run me again": in the home directory up to GDB_SLOT_HOME_MAX, in
   /tmp above.  Above rbinspect's own statuses, below the shell's 126/127
   (cannot execute, not found); rbinspect.gdb knows the ranges. */
#define GDB_SLOT_MIN 100
#define GDB_SLOT_HOME_MAX 112
#define GDB_SLOT_MAX 124
#define SNAP_HOME_PARENT "/.cache/rbinspect"
#define SNAP_HOME_FMT "%s/gdb.%d"       /* under snap_home's directory */
#define SNAP_TMP_FMT "/tmp/rbinspect-gdb.%d"

enum gdb_kind { GDB_NONE, GDB_NATIVE, GDB_CORE, GDB_REMOTE };

struct gdb_target {
	enum gdb_kind kind;
	pid_t pid;
	char exe[PATH_MAX];
	char core[PATH_MAX];
	char sysroot[PATH_MAX];
	char conn[64];          /* the connection's kind: native, core, remote */
	bool force_snapshot;
	int slot;               /* a snapshot gdb wrote for us; 0: none */
};

static char *trim(char *s)
{
	size_t n;

	while (*s == ' ' || *s == '\t')
		s++;
	n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	return s;
}

static void copy(char *dst, size_t cap, const char *src, size_t n)
{
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* gdb's "target:" prefix means "the target's filesystem", which is ours for
   a native process or a core. */
static const char *local_path(const char *p)
{
	return strncmp(p, "target:", 7) ? p : p + 7;
}

/* `info inferiors`, the current one:
     * 1    process 27123     1 (native)                 /usr/bin/ruby3.3
     * 1    process 27123     1 (remote 127.0.0.1:2345)  target:/usr/bin/ruby
     * 1    <null>                                       /usr/bin/ruby
   (gdb before 10 has no Connection column.) */
static void parse_inferior(struct gdb_target *g, char *line)
{
	char *p = line + 1, *end;
	long v;

	strtol(p, &end, 10);            /* the inferior number */
	p = trim(end);
	if (strncmp(p, "process ", 8))
		return;
	v = strtol(p + 8, &end, 10);
	if (end == p + 8 || v <= 0 || v > INT_MAX)
		return;
	g->pid = (pid_t)v;
	p = trim(end);
	/* "1 (native)": the connection number and its description. */
	if (isdigit((unsigned char)*p)) {
		char *q = p;

		while (isdigit((unsigned char)*q))
			q++;
		if (q[0] == ' ' && q[1] == '(' && (end = strchr(q, ')'))) {
			size_t n = strcspn(q + 2, " )");

			copy(g->conn, sizeof(g->conn), q + 2, n);
			p = trim(end + 1);
		}
	}
	snprintf(g->exe, sizeof(g->exe), "%s", local_path(p));
}

/* Read gdb's text from IN into G. */
static void gdb_parse(FILE *in, struct gdb_target *g)
{
	char *line = NULL;
	size_t cap = 0, total = 0;
	bool core_head = false;         /* the line before was the core's head */
	ssize_t n;

	while ((n = rbi_read_line(&line, &cap, in, GDB_TEXT_MAX)) > 0 &&
	       (total += (size_t)n) < GDB_TEXT_MAX) {
		char *l = trim(line);
		bool was_core_head = core_head;

		core_head = false;
		if (l[0] == '*' && (l[1] == ' ' || l[1] == '\t')) {
			parse_inferior(g, l);
		} else if (!strcmp(l, "Local core dump file:")) {
			core_head = true;
		} else if (!strcmp(l, "Native process:")) {
			if (g->kind == GDB_NONE)
				g->kind = GDB_NATIVE;
		} else if (!strncmp(l, "Remote ", 7) || !strncmp(l, "Extended remote ", 16)) {
			/* "Remote target using gdb-specific protocol:",
			   "Extended remote target using ...". */
			g->kind = GDB_REMOTE;
		} else if (was_core_head && l[0] == '`') {
			/* "`PATH', file type elf64-x86-64." after the core's head. */
			const char *p = local_path(l + 1);
			char *e = strstr(p, "', file type ");

			if (e) {
				copy(g->core, sizeof(g->core), p, (size_t)(e - p));
				g->kind = GDB_CORE;
			}
		} else if (!strncmp(l, "The current system root is \"", 28)) {
			char *s = l + 28, *e = strrchr(s, '"');

			if (e && e > s) {
				*e = '\0';
				s = (char *)local_path(s);
				if (g->kind != GDB_REMOTE && s[0] == '/' && strcmp(s, "/"))
					copy(g->sysroot, sizeof(g->sysroot), s, strlen(s));
			}
		} else if (!strncmp(l, "rbinspect-snapshot:", 19)) {
			int force = 0, slot = 0;

			if (sscanf(l + 19, "%d %d", &force, &slot) == 2) {
				g->force_snapshot = force != 0;
				g->slot = slot;
			}
		}
	}
	free(line);
	/* gdb 10+ names the connection in `info inferiors`; it wins. */
	if (!strcmp(g->conn, "core"))
		g->kind = g->core[0] ? GDB_CORE : GDB_NONE;
	else if (!strcmp(g->conn, "native"))
		g->kind = GDB_NATIVE;
	else if (strstr(g->conn, "remote"))
		g->kind = GDB_REMOTE;
	if (g->kind == GDB_NATIVE && g->pid <= 0)
		g->kind = GDB_NONE;
}

/* ---- Snapshot directories -------------------------------------------- */

/* The gdb we serve: the first ancestor that is not a shell (gdb runs
   `pipe` commands through $SHELL -c, which may or may not exec us). */
static pid_t gdb_pid(void)
{
	pid_t p = getppid();

	for (int depth = 0; depth < 4 && p > 1; depth++) {
		char path[64], comm[64] = "";
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/comm", (int)p);
		if ((f = fopen(path, "re"))) {
			if (!fgets(comm, sizeof(comm), f))
				comm[0] = '\0';
			fclose(f);
		}
		comm[strcspn(comm, "\n")] = '\0';
		if (strcmp(comm, "sh") && strcmp(comm, "dash") && strcmp(comm, "bash") &&
		    strcmp(comm, "zsh") && strcmp(comm, "ksh") && strcmp(comm, "mksh") &&
		    strcmp(comm, "busybox"))
			return p;
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)p);
		if (rbi_proc_stat(path, NULL, &p))
			break;
	}
	return getppid();
}

/* DIR is a real directory of ours (no symlink), with none of the mode
   bits DENIED: 077 for a slot's (0700 as we made it), 022 for its parent
   (the layout cache shares ~/.cache/rbinspect: 0755 is fine). */
static bool dir_ours(const char *dir, mode_t denied)
{
	struct stat st;

	return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
	       (st.st_mode & denied) == 0;
}

/* Remove SLOT's directory: only the files we and gdb put there. */
static void snap_remove(const char *dir)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (dfd < 0)
		return;
	unlinkat(dfd, "core", 0);
	unlinkat(dfd, "owner", 0);
	close(dfd);
	rmdir(dir);
}

/* The gdb whose snapshot DIR holds (its "owner" file); 0 if unknown. */
static pid_t snap_owner(const char *dir)
{
	char path[PATH_MAX + 8];
	int owner = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/owner", dir);
	if (!(f = fopen(path, "re")))
		return 0;
	if (fscanf(f, "%d", &owner) != 1)
		owner = 0;
	fclose(f);
	return owner;
}

/* Does the command ask for native frames (bt --native)? */
static bool wants_native(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--native"))
			return true;
	return false;
}

/* The home directory, as gdb's ~ expands it (readline's tilde: $HOME,
   else the password entry); NULL if none. */
static const char *home_dir(void)
{
	const char *h = getenv("HOME");
	struct passwd *pw;

	if (h && h[0] == '/')
		return h;
	pw = getpwuid(getuid());
	return pw && pw->pw_dir && pw->pw_dir[0] == '/' ? pw->pw_dir : NULL;
}

/* ~/.cache/rbinspect into BUF (made 0700 where missing): NULL if there is
   no home directory or that directory is not ours alone to write. */
static const char *snap_home(char *buf, size_t cap)
{
	const char *home = home_dir();
	int n;

	if (!home)
		return NULL;
	n = snprintf(buf, cap, "%s" SNAP_HOME_PARENT, home);
	if (n < 0 || (size_t)n >= cap || !rbi_make_dirs(buf) || !dir_ours(buf, 022))
		return NULL;
	return buf;
}

/* SLOT's directory into DIR, HOME being snap_home's; false for a home slot
   when there is none. */
static bool snap_dir(int slot, const char *home, char *dir, size_t cap)
{
	int n = -1;

	if (slot > GDB_SLOT_HOME_MAX)
		n = snprintf(dir, cap, SNAP_TMP_FMT, slot);
	else if (home)
		n = snprintf(dir, cap, SNAP_HOME_FMT, home, slot);
	return n > 0 && (size_t)n < cap;
}

/* Make a snapshot directory for gdb to gcore into; returns its slot, or
   an exit code after saying why not.  Leftovers of our gdb (a gcore that
   failed) and of gdbs that have exited are removed on the way. */
static int snap_make(void)
{
	pid_t me = gdb_pid();
	char dir[PATH_MAX], home_buf[PATH_MAX];
	const char *home = snap_home(home_buf, sizeof(home_buf));

	for (int slot = GDB_SLOT_MIN; slot <= GDB_SLOT_MAX; slot++) {
		if (!snap_dir(slot, home, dir, sizeof(dir)))
			continue;
		if (dir_ours(dir, 077)) {
			pid_t owner = snap_owner(dir);

			if (owner == me || owner <= 0 || (kill(owner, 0) && errno == ESRCH))
				snap_remove(dir);
		}
	}
	for (int slot = GDB_SLOT_MIN; slot <= GDB_SLOT_MAX; slot++) {
		char path[PATH_MAX + 8];
		FILE *f;

		if (!snap_dir(slot, home, dir, sizeof(dir)))
			continue;
		if (mkdir(dir, 0700)) {
			if (errno == EEXIST)
				continue;
			fprintf(stderr, "rbinspect: cannot make %s for a snapshot: %s\n",
				dir, strerror(errno));
			return EXIT_ERROR;
		}
		snprintf(path, sizeof(path), "%s/owner", dir);
		if (!dir_ours(dir, 077) || !(f = fopen(path, "wx"))) {
			fprintf(stderr, "rbinspect: cannot use %s for a snapshot\n", dir);
			rmdir(dir);
			return EXIT_ERROR;
		}
		fprintf(f, "%d\n", (int)me);
		fclose(f);
		return slot;
	}
	fprintf(stderr, "rbinspect: no free snapshot directory (~" SNAP_HOME_PARENT "/gdb.%d-%d, "
		SNAP_TMP_FMT "-%d)\n", GDB_SLOT_MIN, GDB_SLOT_HOME_MAX, GDB_SLOT_HOME_MAX + 1,
		GDB_SLOT_MAX);
	return EXIT_ERROR;
}

/* Open the core gdb wrote into SLOT, then remove it (the open file stays
   readable). */
static int snap_open(int slot, struct rbi_open_opts *opts, rbi_target **out)
{
	char dir[PATH_MAX], core[PATH_MAX + 8], home[PATH_MAX];
	int rc;

	if (slot < GDB_SLOT_MIN || slot > GDB_SLOT_MAX) {
		fprintf(stderr, "rbinspect: invalid snapshot slot %d\n", slot);
		return EXIT_USAGE;
	}
	if (!snap_dir(slot, snap_home(home, sizeof(home)), dir, sizeof(dir))) {
		fprintf(stderr, "rbinspect: no snapshot directory for slot %d\n", slot);
		return EXIT_ERROR;
	}
	snprintf(core, sizeof(core), "%s/core", dir);
	if (!dir_ours(dir, 077)) {
		fprintf(stderr, "rbinspect: %s is not a snapshot directory of ours\n", dir);
		return EXIT_ERROR;
	}
	rc = rbi_target_open_core(core, opts, out);
	snap_remove(dir);
	return rc ? report_failure(rc) : EXIT_OK;
}

/* ---- The command ----------------------------------------------------- */

static int need_snapshot(const char *why)
{
	int slot = snap_make();

	if (slot < GDB_SLOT_MIN)
		return slot;
	fprintf(stderr, "rbinspect: %s; reading a snapshot (gcore) instead\n", why);
	return slot;
}

int gdb_main(struct session *s, struct rbi_open_opts *opts, int argc, char **argv)
{
	struct gdb_target g = { .kind = GDB_NONE };
	static char what[PATH_MAX + 64];
	char why[512];
	int rc;

	if (argc < 1) {
		fprintf(stderr, "rbinspect: --gdb needs a command (rbinspect.gdb runs it)\n");
		return EXIT_USAGE;
	}
	if (isatty(STDIN_FILENO))
		fprintf(stderr, "rbinspect: --gdb reads gdb's `info inferiors`, `info files` "
			"and `show sysroot` on stdin\n");
	gdb_parse(stdin, &g);
	if (!opts->sysroot && g.sysroot[0])
		opts->sysroot = g.sysroot;
	if (g.exe[0] && access(g.exe, R_OK) == 0)
		opts->exe = g.exe;

	if (g.slot) {
		snprintf(what, sizeof(what), "process %d (gdb snapshot)", (int)g.pid);
		rc = snap_open(g.slot, opts, &s->target);
	} else if (g.kind == GDB_CORE) {
		snprintf(what, sizeof(what), "%s", g.core);
		rc = rbi_target_open_core(g.core, opts, &s->target);
		rc = rc ? report_failure(rc) : EXIT_OK;
	} else if (g.kind == GDB_REMOTE) {
		return need_snapshot("gdb's target is remote");
	} else if (g.kind == GDB_NATIVE && g.force_snapshot) {
		return need_snapshot("$rbinspect_snapshot is set");
	} else if (g.kind == GDB_NATIVE) {
		snprintf(what, sizeof(what), "process %d", (int)g.pid);
		rc = rbi_target_open_pid(g.pid, opts, &s->target);
		if (rc == RBI_PERM) {
			snprintf(why, sizeof(why), "%s", rbi_errmsg());
			return need_snapshot(why);
		}
		if (rc)
			return report_failure(rc);
		if (wants_native(argc, argv)) {
			/* Only the tracer reads a thread's registers: gdb's gcore has
			   them.  The process is read first, so that one which is no
			   Ruby is said so, not gcored whole. */
			const struct rbi_ruby_info *info;

			rc = rbi_ruby_info(s->target, &info);
			rbi_target_free(s->target);
			s->target = NULL;
			return rc ? report_failure(rc) :
			       need_snapshot("native frames need the registers gdb holds");
		}
	} else {
		fprintf(stderr, "rbinspect: gdb has no process or core file (run, attach "
			"or core-file first)\n");
		return EXIT_NO_PROCESS;
	}
	if (rc != EXIT_OK)
		return rc;
	s->what = what;
	s->live = g.kind == GDB_NATIVE && !g.slot;
	rc = run_command(s, argc, argv);
	rbi_target_free(s->target);
	s->target = NULL;
	return rc;
}
