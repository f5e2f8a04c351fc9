/* procstat.c: the state and parent of a process or task, and which
 * program it runs, from its /proc stat line ("pid (comm) S ppid ..."). */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
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
