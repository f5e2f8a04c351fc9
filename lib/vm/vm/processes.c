/* processes.c: the Ruby processes on this machine that we may inspect,
 * told cheaply, without attaching: /proc/PID/maps names libruby (or a
 * static ruby executable), whose file name tells the version (libruby's
 * ".so.X.Y.Z", else a "/ruby/X.Y.0/" directory of an extension: the
 * family), and /proc/PID/stat, status and cmdline the rest.  A process
 * whose maps we may not read (another user's, without CAP_SYS_PTRACE) is
 * one we may not inspect either: it is not listed.  Nothing is read from
 * any process's memory. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vm/vm/find.h"

/* Lines of one maps file read at most (a process maps a few thousand). */
#define MAPS_LINES_MAX (1u << 20)
#define MAPS_LINE_MAX 4096
#define CMDLINE_MAX 4096

struct scan {
	struct rbi_process p;
	char image[MAPS_LINE_MAX];
	char cmdline[CMDLINE_MAX];
	int major, minor, teeny;        /* teeny -1: the family only */
	bool named;                     /* version from libruby's name */
};

/* The path of a maps LINE ("start-end perms offset dev inode   PATH"), or
   NULL; a deleted file's " (deleted)" is cut. */
static char *maps_path(char *line)
{
	char *p = strchr(line, '/');
	size_t n;

	if (!p)
		return NULL;
	p[strcspn(p, "\n")] = '\0';
	n = strlen(p);
	if (n > 10 && !strcmp(p + n - 10, " (deleted)"))
		p[n - 10] = '\0';
	return p;
}

/* Whether maps LINE maps its file executable ("start-end r-xp ..."): code
   the process runs, not a file it only reads (a debugger, or rbinspect
   itself, maps a Ruby's libruby to read its symbols). */
static bool maps_exec(const char *line)
{
	const char *perms = strchr(line, ' ');

	return perms && strlen(perms) > 3 && perms[3] == 'x';
}

/* Read PID's maps into S: its Ruby image and version.  False if it is not
   Ruby or its maps cannot be read. */
static bool scan_maps(pid_t pid, struct scan *s)
{
	char path[64], line[MAPS_LINE_MAX], exe[MAPS_LINE_MAX] = "";
	size_t prefix;
	bool lib = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	if (!(f = fopen(path, "re")))
		return false;
	s->teeny = -1;
	s->major = 0;
	for (unsigned n = 0; n < MAPS_LINES_MAX && fgets(line, sizeof(line), f); n++) {
		char *p;

		if (!strchr(line, '\n')) {      /* too long: skip the rest */
			int ch;

			while ((ch = fgetc(f)) != EOF && ch != '\n')
				;
			continue;
		}
		if (!maps_exec(line) || !(p = maps_path(line)))
			continue;
		if (!lib && rbi_vm_ruby_image_name(p, false)) {
			lib = true;
			snprintf(s->image, sizeof(s->image), "%s", p);
			s->named = rbi_vm_libruby_version(p, &s->major, &s->minor, &s->teeny);
		} else if (!exe[0] && rbi_vm_ruby_image_name(p, true)) {
			snprintf(exe, sizeof(exe), "%s", p);
		}
		if (!s->named && !s->major)
			rbi_vm_path_family(p, &s->major, &s->minor, &prefix);
	}
	fclose(f);
	if (!lib && !exe[0])
		return false;
	if (!lib)
		snprintf(s->image, sizeof(s->image), "%s", exe);
	return true;
}

/* Threads, VmRSS and NSpid from /proc/PID/status (left 0 if absent). */
static void read_status(pid_t pid, struct rbi_process *p)
{
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "re")))
		return;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "Threads:", 8)) {
			p->threads = (unsigned)strtoul(line + 8, NULL, 10);
		} else if (!strncmp(line, "VmRSS:", 6)) {
			p->rss_bytes = strtoull(line + 6, NULL, 10) * 1024;
		} else if (!strncmp(line, "NSpid:", 6)) {
			char *last = strrchr(line, '\t'), *sp = strrchr(line, ' ');

			if (sp > last)
				last = sp;
			if (last)
				p->ns_pid = (pid_t)strtol(last + 1, NULL, 10);
		}
	}
	fclose(f);
}

/* Milliseconds since PID started: /proc/uptime less its stat's starttime
   (field 22, in clock ticks since boot); 0 if unknown. */
static uint64_t uptime_ms(pid_t pid)
{
	char path[64], buf[1024];
	unsigned long long start = 0;
	double up = 0;
	long hz = sysconf(_SC_CLK_TCK);
	const char *p;
	FILE *f;
	size_t n;

	if ((f = fopen("/proc/uptime", "re"))) {
		if (fscanf(f, "%lf", &up) != 1)
			up = 0;
		fclose(f);
	}
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "re")))
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* After the command name (which may hold ')'), field 3 on. */
	if (hz <= 0 || !(p = strrchr(buf, ')')) ||
	    sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d "
		   "%*d %*d %*d %*d %llu", &start) != 1)
		return 0;
	if (up * 1000 < (double)start * 1000 / (double)hz)
		return 0;
	return (uint64_t)(up * 1000 - (double)start * 1000 / (double)hz);
}

/* The command line, its arguments joined by spaces. */
static void read_cmdline(pid_t pid, struct scan *s)
{
	char path[64];
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	if ((f = fopen(path, "re"))) {
		n = fread(s->cmdline, 1, sizeof(s->cmdline) - 1, f);
		fclose(f);
	}
	while (n && s->cmdline[n - 1] == '\0')
		n--;
	for (size_t i = 0; i < n; i++)
		if (s->cmdline[i] == '\0')
			s->cmdline[i] = ' ';
	s->cmdline[n] = '\0';
	s->p.cmdline = s->cmdline;
	s->p.cmdline_len = n;
}

RBI_EXPORT int rbi_process_foreach(rbi_process_fn fn, void *arg)
{
	struct scan *s;
	struct dirent *d;
	DIR *dir;
	int rc = RBI_OK;

	if (!fn)
		return rbi_fail(RBI_INVAL, "no callback");
	if (!(dir = opendir("/proc")))
		return rbi_fail(RBI_SYSTEM, "/proc cannot be read: is it mounted?");
	if (!(s = malloc(sizeof(*s)))) {
		closedir(dir);
		return rbi_fail(RBI_NOMEM, "out of memory");
	}
	while (!rc && (d = readdir(dir))) {
		char *end;
		long pid = strtol(d->d_name, &end, 10);

		if (*end || pid <= 0 || pid > INT32_MAX || pid == getpid())
			continue;
		memset(s, 0, sizeof(*s));
		if (!scan_maps((pid_t)pid, s))
			continue;
		s->p.pid = (pid_t)pid;
		s->p.ns_pid = (pid_t)pid;
		s->p.container = !rbi_proc_same_pidns((pid_t)pid);
		read_status((pid_t)pid, &s->p);
		s->p.uptime_ms = uptime_ms((pid_t)pid);
		read_cmdline((pid_t)pid, s);
		s->p.image = s->image;
		if (s->major && s->teeny >= 0)
			snprintf(s->p.version, sizeof(s->p.version), "%d.%d.%d", s->major,
				 s->minor, s->teeny);
		else if (s->major)
			snprintf(s->p.version, sizeof(s->p.version), "%d.%d", s->major, s->minor);
		rc = fn(&s->p, arg);
	}
	free(s);
	closedir(dir);
	return rc;
}
