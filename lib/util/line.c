/* line.c: a line of text read with a bound, from files a user names (a
 * raw profile, -x's commands, gdb's description of its target): /dev/zero
 * or a file without newlines must not grow a buffer until memory runs
 * out, as getline() lets it. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

#include "internal.h"

ssize_t rbi_read_line(char **line, size_t *cap, FILE *f, size_t max)
{
	size_t n = 0;
	int c;

	for (;;) {
		if (n + 2 > *cap) {
			size_t want = *cap ? *cap * 2 : 256;
			char *p;

			if (want > max + 2)
				want = max + 2;
			if (want < n + 2 || !(p = realloc(*line, want)))
				return -2;
			*line = p;
			*cap = want;
		}
		if ((c = getc_unlocked(f)) == EOF)
			break;
		if (n == max)
			return -2;
		(*line)[n++] = (char)c;
		if (c == '\n')
			break;
	}
	if (!n)
		return -1;
	(*line)[n] = '\0';
	return (ssize_t)n;
}
