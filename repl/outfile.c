/* outfile.c: where a command writes a file it was asked for (-o FILE):
 * "-" is standard output, a name ending in ".gz" is written through zlib,
 * and closing says whether every byte got there. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "rbinspect.h"

static ssize_t gz_write(void *cookie, const char *buf, size_t n)
{
	int w = n ? gzwrite(cookie, buf, (unsigned)n) : 0;

	return w > 0 || !n ? w : -1;
}

static int gz_close(void *cookie)
{
	return gzclose(cookie) == Z_OK ? 0 : -1;
}

/* Names made up for a file, tried in turn when one exists already. */
#define OUTFILE_TRIES 100

static bool gz_name(const char *path)
{
	size_t n = strlen(path);

	return n > 3 && !strcmp(path + n - 3, ".gz");
}

FILE *outfile_create_new(char *path, size_t cap)
{
	char base[PATH_MAX];
	const char *dot, *slash;
	size_t stem;
	int fd = -1;

	if (snprintf(base, sizeof(base), "%s", path) >= (int)sizeof(base)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	dot = strrchr(base, '.');
	slash = strrchr(base, '/');
	stem = dot && (!slash || dot > slash) ? (size_t)(dot - base) : strlen(base);
	for (int n = 1; n <= OUTFILE_TRIES; n++) {
		if (n > 1 && snprintf(path, cap, "%.*s-%d%s", (int)stem, base, n,
				      base + stem) >= (int)cap) {
			errno = ENAMETOOLONG;
			return NULL;
		}
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
		if (fd >= 0 || errno != EEXIST)
			break;
	}
	return fd < 0 ? NULL : fdopen(fd, "w");
}

bool outfile_compressed(const char *path)
{
	return gz_name(path);
}

FILE *outfile_stage(void)
{
	const char *dir = getenv("TMPDIR");
	int fd = open(dir && *dir ? dir : "/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	FILE *f;

	if (fd < 0)
		return tmpfile();
	if (!(f = fdopen(fd, "w+")))
		close(fd);
	return f;
}

int outfile_unstage(FILE *stage, FILE *out)
{
	char buf[1 << 16];
	size_t n;
	int bad = fflush(stage) || fseek(stage, 0, SEEK_SET);

	while (!bad && (n = fread(buf, 1, sizeof(buf), stage)) > 0)
		bad = fwrite(buf, 1, n, out) != n;
	bad |= ferror(stage);
	fclose(stage);
	return bad ? -1 : 0;
}

FILE *outfile_open(const char *path)
{
	cookie_io_functions_t io = { .write = gz_write, .close = gz_close };
	gzFile gz;
	FILE *f;

	if (!strcmp(path, "-"))
		return stdout;
	if (!gz_name(path))
		return fopen(path, "we");
	if (!(gz = gzopen(path, "wbe")))
		return NULL;
	if (!(f = fopencookie(gz, "w", io)))
		gzclose(gz);
	return f;
}

int outfile_close(FILE *f)
{
	int bad = ferror(f);

	if (f == stdout)
		return fflush(f) || bad ? -1 : 0;
	return fclose(f) || bad ? -1 : 0;
}

int outfile_dir_writable(const char *dir)
{
	/* A file made there and gone at close (root passes access() checks
	   its file system may still refuse); access() where O_TMPFILE is not
	   supported. */
	int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (errno != EOPNOTSUPP && errno != EISDIR)
		return errno;
	return access(dir, W_OK | X_OK) ? errno : 0;
}

int outfile_writable(const char *path)
{
	char dir[PATH_MAX];
	struct stat st;
	int fd;

	if (!strcmp(path, "-"))
		return 0;
	if (stat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return EISDIR;
		/* Opened as it will be, but neither truncated nor created. */
		if ((fd = open(path, O_WRONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)) < 0)
			return errno;
		close(fd);
		return 0;
	}
	if (errno != ENOENT)
		return errno;
	snprintf(dir, sizeof(dir), "%s", path);
	return outfile_dir_writable(dirname(dir));
}
