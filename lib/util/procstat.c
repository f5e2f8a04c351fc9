/* procstat.c: the state and parent of a process or task, and which
 * program it runs, from its /proc stat line ("pid (comm) S ppid ..."); the
 * tasks of a process (/proc/PID/task); how a task in another pid namespace
 * (a container) is numbered there and here (NSpid); the random bytes the
 * kernel gives each program it starts (AT_RANDOM), which tell an exec when
 * nothing else does. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "internal.h"

bool rbi_proc_stat_parse(const char *line, char *state, int *ppid)
{
	/* comm may hold ')' itself: the last one ends it. */
	const char *p = strrchr(line, ')');
	char st;
	int pp;

	if (!p || sscanf(p + 1, " %c %d", &st, &pp) != 2)
		return false;
	if (state)
		*state = st;
	if (ppid)
		*ppid = pp;
	return true;
}

uint64_t rbi_proc_stat_image(const char *line)
{
	const char *open = strchr(line, '('), *close = strrchr(line, ')'), *p;
	uint64_t h = 0xcbf29ce484222325ull, v;
	unsigned field = 3;

	if (!open || !close || close < open)
		return 0;
	for (p = open; p < close; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
	/* Fields 26 (startcode) and 28 (startstack), counting from 1. */
	for (p = close + 1; *p && field <= 28; field++) {
		while (*p == ' ')
			p++;
		if (field == 26 || field == 28) {
			if (sscanf(p, "%" SCNu64, &v) != 1 || !v)
				return 0;
			h = (h ^ v) * 0x100000001b3ull;
		}
		while (*p && *p != ' ')
			p++;
	}
	return field > 28 ? h : 0;
}

uint64_t rbi_proc_at_random(int pid)
{
	char path[64];
	Elf64_auxv_t av[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/auxv", pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	n = read(fd, av, sizeof(av));
	close(fd);
	for (ssize_t i = 0; n > 0 && i < n / (ssize_t)sizeof(*av) && av[i].a_type != AT_NULL; i++)
		if (av[i].a_type == AT_RANDOM)
			return av[i].a_un.a_val;
	return 0;
}

uint64_t rbi_proc_exec_nonce(int pid, uint64_t at_random)
{
	uint64_t b[2];
	struct iovec local = { b, sizeof(b) }, remote = { (void *)(uintptr_t)at_random, sizeof(b) };

	/* Read afresh each time: through a cache it would never change. */
	if (!at_random || process_vm_readv(pid, &local, 1, &remote, 1, 0) != (ssize_t)sizeof(b))
		return 0;
	return (b[0] ^ (b[1] * 0x9e3779b97f4a7c15ull)) | 1;
}

int rbi_proc_stat(const char *path, char *state, int *ppid)
{
	char buf[512];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -ENOENT;        /* read as the task went */
	buf[n] = '\0';
	return rbi_proc_stat_parse(buf, state, ppid) ? 0 : -EINVAL;
}

bool rbi_proc_same_pidns(pid_t pid)
{
	char a[64], b[64], path[64];
	ssize_t n, m;

	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pid);
	n = readlink("/proc/self/ns/pid", a, sizeof(a) - 1);
	m = readlink(path, b, sizeof(b) - 1);
	/* Unknown: assume the same, as without namespaces. */
	return n < 0 || m < 0 || (n == m && !memcmp(a, b, (size_t)n));
}

int32_t rbi_proc_ns_tid(pid_t pid, long host)
{
	char path[96], line[256];
	int32_t tid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%ld/status", (int)pid, host);
	if (!(f = fopen(path, "re")))
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "NSpid:", 6))
			continue;
		char *last = strrchr(line, '\t');
		char *sp = strrchr(line, ' ');

		if (sp > last)
			last = sp;
		if (last)
			tid = (int32_t)strtol(last + 1, NULL, 10);
		break;
	}
	fclose(f);
	return tid;
}

int rbi_proc_tasks_open(struct rbi_proc_tasks *it, int pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	it->dir = opendir(path);
	return it->dir ? 0 : -errno;
}

int rbi_proc_tasks_next(struct rbi_proc_tasks *it)
{
	struct dirent *e;

	while (it->dir && (e = readdir(it->dir))) {
		char *end;
		long tid = strtol(e->d_name, &end, 10);

		if (!*end && tid > 0 && tid <= INT32_MAX)
			return (int)tid;
	}
	return 0;
}

void rbi_proc_tasks_close(struct rbi_proc_tasks *it)
{
	if (it && it->dir) {
		closedir(it->dir);
		it->dir = NULL;
	}
}
