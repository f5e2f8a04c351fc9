/* procstat.c: the state and parent of a process or task, from its
 * /proc stat line ("pid (comm) S ppid ..."). */
#include <errno.h>
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
