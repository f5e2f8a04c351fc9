/* open.c: opening a file that a core or a process's maps name.  Those
 * names are untrusted input: a core can name a device node (a mapping of
 * /dev/zero, or a crafted core naming /dev/watchdog), and opening a device
 * can act (a tape rewinds, a watchdog arms).  So the name is first opened
 * as a path only (O_PATH, which opens nothing), checked to be a regular
 * file, and only then opened for reading, through that same inode. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

/* PATH inside ROOT as O_PATH: resolved as if ROOT were "/", so neither
   ".." nor an absolute symlink inside ROOT leads out of it. */
static int open_path_in(const char *root, const char *path)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int dfd, fd, err;

	if ((dfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -errno;
	fd = (int)syscall(SYS_openat2, dfd, path, &how, sizeof(how));
	err = errno;
	if (fd < 0 && err == ENOSYS) {
		/* Linux before 5.6: the joined path, symlinks as they lead. */
		size_t n = strlen(root) + strlen(path) + 2;
		char *p = malloc(n);

		if (!p) {
			close(dfd);
			return -ENOMEM;
		}
		snprintf(p, n, "%s/%s", root, path);
		fd = open(p, O_PATH | O_CLOEXEC);
		err = errno;
		free(p);
	}
	close(dfd);
	return fd < 0 ? -err : fd;
}

bool rbi_make_dirs(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(path, 0700);
		*p = '/';
	}
	return mkdir(path, 0700) == 0 || errno == EEXIST;
}

int rbi_open_regular(const char *root, const char *path)
{
	char proc[64];
	struct stat st;
	int pfd, fd;

	pfd = root ? open_path_in(root, path) : open(path, O_PATH | O_CLOEXEC);
	if (pfd < 0)
		return root ? pfd : -errno;
	if (fstat(pfd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(pfd);
		return -EINVAL;
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
	fd = open(proc, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 && errno == ENOENT)  /* no /proc: the file itself, checked again */
		fd = root ? -1 : open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	fd = fd < 0 ? -errno : fd;
	close(pfd);
	if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}
