/* test-escape.c: the public escaping helpers (rbi_escape_text, _json,
 * _xml) on the strings a target can hold: controls, escape sequences,
 * invalid UTF-8, the bidirectional overrides, quotes and markup; and the
 * shared library exports them.  TAP output; exit 1 on any failure. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"

/* What FN writes for the LEN bytes of S. */
static char *out(void (*fn)(FILE *, const char *, size_t), const char *s, size_t len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	if (!f)
		return NULL;
	fn(f, s, len);
	fclose(f);
	return buf;
}

static void is(void (*fn)(FILE *, const char *, size_t), const char *fname, const char *s,
	       size_t len, const char *want, const char *what)
{
	char *got = out(fn, s, len);

	if (!ok(got && !strcmp(got, want), "%s: %s", fname, what))
		diag("got %s, want %s", got ? got : "(null)", want);
	free(got);
}

#define IS(fn, s, want, what) is(fn, #fn, s, sizeof(s) - 1, want, what)

int main(void)
{
	IS(rbi_escape_text, "Foo#bar", "Foo#bar", "plain ASCII as it is");
	IS(rbi_escape_text, "caf\xc3\xa9 \xe6\x97\xa5", "caf\xc3\xa9 \xe6\x97\xa5",
	   "printable UTF-8 as it is");
	IS(rbi_escape_text, "a\tb\nc\rd\\", "a\\tb\\nc\\rd\\\\", "tab, newline, return, backslash");
	IS(rbi_escape_text, " ~\x7f", " ~\\x7f", "space and tilde as they are, DEL escaped");
	IS(rbi_escape_text, "a\0b", "a\\x00b", "NUL escaped");
	IS(rbi_escape_text, "\x1b[31mred\x07", "\\e[31mred\\x07", "escape sequences cannot color");
	IS(rbi_escape_text, "\xff\xc3(", "\\xff\\xc3(", "invalid UTF-8 byte by byte");
	IS(rbi_escape_text, "ab\xe2\x80\xae" "cd", "ab\\u{202e}cd",
	   "a right-to-left override cannot reorder the line");
	IS(rbi_escape_text, "\xc2\x9b" "1m", "\\xc2\\x9b1m", "a C1 control (CSI) is escaped");
	is(rbi_escape_text, "rbi_escape_text", NULL, 0, "", "NULL with length 0: nothing");
	IS(rbi_escape_json, "say \"hi\"\\", "\"say \\\"hi\\\"\\\\\"", "quotes and backslash");
	IS(rbi_escape_json, "\x01\n\xff", "\"\\u0001\\n\\u00ff\"", "controls and invalid bytes");
	IS(rbi_escape_json, "\xe2\x80\xae", "\"\\u202e\"", "bidirectional control");
	IS(rbi_escape_json, "\xc3\xa9", "\"\xc3\xa9\"", "UTF-8 as it is");
	IS(rbi_escape_xml, "<a href='x'>&\"", "&lt;a href=&#39;x&#39;&gt;&amp;&quot;", "markup");
	IS(rbi_escape_xml, "\x1b]0;t\x07", "\\e]0;t\\x07", "controls as in text");

	void *h = dlopen(RBI_SHLIB_PATH, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		skip(dlerror(), "the shared library exports the helpers");
		return tap_plan();
	}
	static const char *const names[] = { "rbi_escape_text", "rbi_escape_json", "rbi_escape_xml" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		ok(dlvsym(h, names[i], "LIBRUBY_INTROSPECT_0.7") != NULL,
		   "the shared library exports %s@LIBRUBY_INTROSPECT_0.7", names[i]);
	dlclose(h);
	return tap_plan();
}
