/* tap.h: TAP output for the unit tests, one copy for all of them:
 * numbered "ok" / "not ok" lines, skips, "# " notes and the plan.  Each
 * line is flushed at once, so a forked child never prints it again. */
#ifndef RBI_TESTS_TAP_H
#define RBI_TESTS_TAP_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include "ruby-introspect.h"

static int tap_n, tap_failed;   /* tests so far, and failed */

static inline bool tap_vok(bool cond, bool errmsg, const char *fmt, va_list ap)
{
	printf("%sok %d - ", cond ? "" : "not ", ++tap_n);
	vprintf(fmt, ap);
	if (!cond && errmsg && *rbi_errmsg())
		printf(" (%s)", rbi_errmsg());
	putchar('\n');
	if (!cond)
		tap_failed++;
	fflush(stdout);
	return cond;
}

/* One test, passed if COND; returns COND. */
static inline bool ok(bool cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline bool ok(bool cond, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cond = tap_vok(cond, false, fmt, ap);
	va_end(ap);
	return cond;
}

/* ok(), and a failure also shows the library's last error (rbi_errmsg). */
static inline bool check(bool cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline bool check(bool cond, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cond = tap_vok(cond, true, fmt, ap);
	va_end(ap);
	return cond;
}

/* A test not run: WHAT, and WHY not. */
static inline void skip(const char *why, const char *what)
{
	printf("ok %d - %s # SKIP %s\n", ++tap_n, what, why);
	fflush(stdout);
}

/* A "# " comment line. */
static inline void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void diag(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* The plan ("1..N"), last; returns the exit status: 1 if a test failed. */
static inline int tap_plan(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

#endif
