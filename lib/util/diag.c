/* diag.c: warnings kept with a target (rbi_target_warning()).
 * Adding never fails the caller: on allocation failure the warning is
 * dropped, since a warning is never worth failing an otherwise good open. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

/* A flood of warnings (a corrupt core) helps no one; keep the first ones. */
#define RBI_DIAG_MAX 256

void rbi_diag_add(struct rbi_diag *d, const char *fmt, ...)
{
	char **msgs;
	char *msg;
	va_list ap;
	int n;

	if (!d || d->n >= RBI_DIAG_MAX)
		return;
	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	msg = malloc((size_t)n + 1);
	if (!msg)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, (size_t)n + 1, fmt, ap);
	va_end(ap);
	msgs = realloc(d->msgs, (d->n + 1) * sizeof(*msgs));
	if (!msgs) {
		free(msg);
		return;
	}
	msgs[d->n++] = msg;
	d->msgs = msgs;
}

void rbi_diag_free(struct rbi_diag *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++)
		free(d->msgs[i]);
	free(d->msgs);
	d->msgs = NULL;
	d->n = 0;
}
