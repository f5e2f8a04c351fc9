/* test-escape.c: the public escaping helpers (rbi_escape_text, _json,
 * _xml) on the strings a target can hold: controls, escape sequences,
 * invalid UTF-8, the bidirectional overrides, quotes and markup; and the
 * shared library exports them.  The JSON writer (out.h) writes the same
 * bytes buffered (rbi_json_buffer, as heap-dump) as not, whatever the
 * buffer's size.  TAP output; exit 1 on any failure. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "out/out.h"
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

/* Lines of every kind of JSON value, with strings to escape, longer
   than a small buffer, and keys of every length. */
static void json_lines(struct rbi_json *j, const char *big, size_t big_len)
{
	static const char *const strs[] = {
		"", "STRING", "say \"hi\"\\", "\x01\n\xff", "ab\xe2\x80\xae" "cd", "caf\xc3\xa9",
		"tab\there", "0123456789abcdef", "0123456789abcdefg",
	};
	static const char *const keys[] = {
		"a", "ab", "abc", "abcd", "abcdefg", "abcdefgh", "abcdefghijklm", "abcdefghijklmn",
		"a_key_longer_than_sixteen_bytes",
	};
	static const uint64_t addrs[] = { 0, 1, 0xf, 0x10, 0x7f0123456789, ~(uint64_t)0 };
	static const int64_t ints[] = { 0, -1, 9, 10, 123456789, INT64_MIN, INT64_MAX };
	static const double dbls[] = { 0.0, -0.5, 1e300, 1.0 / 3, 0.0 / 0.0, 1.0 / 0.0 };

	for (int line = 0; line < 40; line++) {
		rbi_json_restart(j);
		rbi_json_object(j);
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			rbi_json_key(j, keys[i]);
			rbi_json_cstr(j, strs[(i + (size_t)line) % (sizeof(strs) / sizeof(strs[0]))]);
		}
		rbi_json_key(j, "addrs");
		rbi_json_array(j);
		for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++)
			rbi_json_addr(j, addrs[i] >> line);
		rbi_json_end_array(j);
		rbi_json_key(j, "numbers");
		rbi_json_array(j);
		for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
			rbi_json_int(j, ints[i]);
		for (size_t i = 0; i < sizeof(dbls) / sizeof(dbls[0]); i++)
			rbi_json_double(j, dbls[i]);
		rbi_json_bool(j, line & 1);
		rbi_json_null(j);
		rbi_json_cstr(j, NULL);
		rbi_json_end_array(j);
		if (line % 7 == 3) {
			rbi_json_key(j, "big");
			rbi_json_str(j, big, big_len - (size_t)line);
		}
		rbi_json_end_object(j);
	}
}

/* What json_lines writes, with a buffer of CAP bytes (0: none). */
static char *json_out(size_t cap, const char *big, size_t big_len)
{
	static char buf[1 << 16];
	char *text = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&text, &n);
	struct rbi_json j;

	if (!f)
		return NULL;
	rbi_json_init(&j, f);
	if (cap)
		rbi_json_buffer(&j, buf, cap);
	json_lines(&j, big, big_len);
	rbi_json_flush(&j);
	fclose(f);
	return text;
}

static void json_buffered(void)
{
	static const size_t caps[] = { 256, 257, 300, 1000, 4096, 1 << 16 };
	char big[3000];
	char *want;

	/* Printable, with an escape every 97 bytes and UTF-8 astride. */
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)(i % 97 == 0 ? '"' : i % 89 == 0 ? 0xc3 : i % 89 == 1 ? 0xa9 :
				' ' + (char)(i % 90));
	want = json_out(0, big, sizeof(big));
	if (!ok(want && strlen(want) > 10000, "JSON writer unbuffered: %zu bytes",
		want ? strlen(want) : 0))
		return;
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		char *got = json_out(caps[i], big, sizeof(big));
		size_t at = 0;

		while (got && got[at] && got[at] == want[at])
			at++;
		if (!ok(got && !strcmp(got, want), "JSON writer buffered in %zu bytes: the same bytes",
			caps[i]))
			diag("first difference at byte %zu", at);
		free(got);
	}
	free(want);
}

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
	json_buffered();

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
