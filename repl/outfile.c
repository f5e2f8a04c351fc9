/* outfile.c: where a command writes a file it was asked for (-o FILE):
 * "-" is standard output, a name ending in ".gz" is written through zlib,
 * and closing says whether every byte got there. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
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

static bool gz_name(const char *path)
{
	size_t n = strlen(path);

	return n > 3 && !strcmp(path + n - 3, ".gz");
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
