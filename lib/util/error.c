/* error.c: status texts and the per-thread explanation of the last failure.
 *
 * Every fallible call returns a status; the one that first detects a
 * failure also records a sentence for rbi_errmsg().  Callers further up may
 * prefix it with context ("opening core x: ...") via rbi_fail_context(). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* Per thread, so concurrent targets on different threads don't clobber
   each other's explanations. */
static _Thread_local char errmsg[RBI_ERRMSG_MAX];
static _Thread_local unsigned fail_count;

RBI_EXPORT const char *rbi_strerror(int status)
{
	switch (status) {
#define RBI_STATUS_CASE_(name, num, msg) case (num): return (msg);
	RBI_STATUS_LIST(RBI_STATUS_CASE_)
#undef RBI_STATUS_CASE_
	}
	return "unknown error";
}

RBI_EXPORT const char *rbi_errmsg(void)
{
	return errmsg;
}

int rbi_fail(int status, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(errmsg, sizeof(errmsg), fmt, ap);
	va_end(ap);
	fail_count++;
	errno = saved;
	return status;
}

unsigned rbi_fail_count(void)
{
	return fail_count;
}

int rbi_fail_unexplained(unsigned before, int rc, const char *what)
{
	if (rc == RBI_OK || rc == RBI_PARTIAL || rc == RBI_UNMAPPED || rc == RBI_ITER_END ||
	    fail_count != before)
		return rc;
	return rbi_fail(rc, "%s: %s", what, rbi_strerror(rc));
}

int rbi_fail_context(int status, const char *fmt, ...)
{
	char prefix[RBI_ERRMSG_MAX];
	char old[RBI_ERRMSG_MAX];
	size_t plen, olen;
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(old, errmsg, sizeof(old));
	old[sizeof(old) - 1] = '\0';
	if (!old[0])
		snprintf(old, sizeof(old), "%s", rbi_strerror(status));
	/* PREFIX then OLD, cut to fit. */
	plen = strlen(prefix);
	olen = strlen(old);
	if (olen > sizeof(errmsg) - 1 - plen)
		olen = sizeof(errmsg) - 1 - plen;
	memcpy(errmsg, prefix, plen);
	memcpy(errmsg + plen, old, olen);
	errmsg[plen + olen] = '\0';
	errno = saved;
	return status;
}
