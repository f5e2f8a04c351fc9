/* escape.c: terminal-safe text and a small JSON writer. */
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "internal.h"
#include "out/out.h"

/* Length of the valid UTF-8 sequence at S (max LEN bytes) encoding a
   printable character, its code point in *CP; or 0. */
static size_t utf8_char(const unsigned char *s, size_t len, uint32_t *cp)
{
	size_t n;

	if (s[0] < 0x80) {
		*cp = s[0];
		return s[0] >= 0x20 && s[0] != 0x7f;
	}
	if ((s[0] & 0xe0) == 0xc0) { n = 2; *cp = s[0] & 0x1f; }
	else if ((s[0] & 0xf0) == 0xe0) { n = 3; *cp = s[0] & 0x0f; }
	else if ((s[0] & 0xf8) == 0xf0) { n = 4; *cp = s[0] & 0x07; }
	else
		return 0;
	if (n > len)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		*cp = *cp << 6 | (s[i] & 0x3f);
	}
	/* Overlong forms, surrogates, C1 controls, beyond Unicode. */
	if ((n == 2 && *cp < 0x80) || (n == 3 && *cp < 0x800) || (n == 4 && *cp < 0x10000) ||
	    (*cp >= 0xd800 && *cp < 0xe000) || *cp > 0x10ffff || (*cp >= 0x80 && *cp < 0xa0))
		return 0;
	return n;
}

/* The invisible characters that reorder the text around them (Unicode's
   bidirectional marks, embeddings, overrides and isolates): a name holding
   one can make a line read other than it is ("Trojan Source",
   CVE-2021-42574), so they are written as escapes. */
static bool bidi_control(uint32_t cp)
{
	return cp == 0x061c || cp == 0x200e || cp == 0x200f ||
	       (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

/* Where escaped text goes: the file F, or the buffer of the JSON writer
   J when it has one (rbi_json_buffer). */
struct sink {
	FILE *f;
	struct rbi_json *j;
};

/* Up to 16 bytes from S to D without a call: the keys and numbers of a
   heap dump are that short. */
static inline void copy_short(char *d, const char *s, size_t n)
{
	if (n >= 8) {
		memcpy(d, s, 8);
		memcpy(d + n - 8, s + n - 8, 8);
	} else if (n >= 4) {
		memcpy(d, s, 4);
		memcpy(d + n - 4, s + n - 4, 4);
	} else {
		for (size_t i = 0; i < n; i++)
			d[i] = s[i];
	}
}

void rbi_json_flush(struct rbi_json *j)
{
	if (j->buf && j->len)
		fwrite_unlocked(j->buf, 1, j->len, j->f);
	j->len = 0;
}

/* Where the next N bytes go in the buffer of J (N at most its capacity);
   the caller adds N to its length. */
static inline char *json_room(struct rbi_json *j, size_t n)
{
	if (j->cap - j->len < n)
		rbi_json_flush(j);
	return j->buf + j->len;
}

static inline void json_write(struct rbi_json *j, const char *s, size_t n)
{
	if (j->buf && n <= 16) {
		copy_short(json_room(j, 16), s, n);
		j->len += n;
		return;
	}
	if (j->buf && n <= j->cap) {
		memcpy(json_room(j, n), s, n);
		j->len += n;
		return;
	}
	rbi_json_flush(j);
	fwrite_unlocked(s, 1, n, j->f);
}

static inline void json_putc(struct rbi_json *j, char c)
{
	if (!j->buf) {
		putc_unlocked(c, j->f);
		return;
	}
	if (j->len == j->cap)
		rbi_json_flush(j);
	j->buf[j->len++] = c;
}

static void sink_write(const struct sink *o, const void *p, size_t n)
{
	if (o->j)
		json_write(o->j, p, n);
	else
		fwrite_unlocked(p, 1, n, o->f);
}

static void sink_puts(const struct sink *o, const char *s)
{
	sink_write(o, s, strlen(s));
}

static void sink_printf(const struct sink *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void sink_printf(const struct sink *o, const char *fmt, ...)
{
	char buf[32];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);   /* an escape: a few bytes */
	va_end(ap);
	if (n > 0)
		sink_write(o, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

/* How one byte, or one code point that must not be written as it is, is
   written escaped. */
struct escaper {
	void (*byte)(const struct sink *o, unsigned char c);
	void (*code_point)(const struct sink *o, uint32_t cp);
};

/* PLAIN[c >> 6] bit c & 63 set for the printable ASCII characters but '\\'
   and those in ALSO: the ones written as they are. */
static void ascii_plain(const char *also, uint64_t plain[2])
{
	plain[0] = ~(uint64_t)0 << 0x20;                /* not the controls */
	plain[1] = ~(uint64_t)0 >> 1;                   /* not DEL */
	plain[1] &= ~((uint64_t)1 << ('\\' - 64));
	for (; *also; also++)
		if ((unsigned char)*also < 0x80)
			plain[(unsigned char)*also >> 6] &= ~((uint64_t)1 << (*also & 63));
}

/* S[0..LEN) to O: printable UTF-8 characters as they are, but for '\\',
   the ASCII characters in ALSO and the bidirectional controls; those and
   every other byte (controls, invalid UTF-8) through ESC. */
static void escaped(const struct sink *o, const char *s, size_t len, const char *also,
		    const struct escaper *esc)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t run = 0;         /* where the characters not yet written start */
	uint64_t plain[2];      /* bit c: ASCII c is written as it is */

	ascii_plain(also, plain);
	/* Runs of characters that need no escape go out in one write: this
	   is most of a heap dump's time, and most of it printable ASCII,
	   tested by one bit each. */
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		size_t n;

		if (p[i] < 0x80 && plain[p[i] >> 6] >> (p[i] & 63) & 1) {
			i++;
			continue;
		}
		n = utf8_char(p + i, len - i, &cp);
		if (n > 1 && !bidi_control(cp)) {
			i += n;
			continue;
		}
		sink_write(o, p + run, i - run);
		if (n > 1) {
			esc->code_point(o, cp);
			i += n;
		} else {
			esc->byte(o, p[i]);
			i++;
		}
		run = i;
	}
	sink_write(o, p + run, len - run);
}

/* A code point as Ruby's string escape writes it (text and XML). */
static void escape_text_cp(const struct sink *o, uint32_t cp)
{
	sink_printf(o, "\\u{%" PRIx32 "}", cp);
}

/* A code point as a JSON escape (all those escaped are in the BMP). */
static void escape_json_cp(const struct sink *o, uint32_t cp)
{
	sink_printf(o, "\\u%04" PRIx32, cp);
}

/* Terminal text: Ruby's escapes, else \xNN. */
static void escape_text(const struct sink *o, unsigned char c)
{
	switch (c) {
	case '\\': sink_puts(o, "\\\\"); break;
	case '\n': sink_puts(o, "\\n"); break;
	case '\t': sink_puts(o, "\\t"); break;
	case '\r': sink_puts(o, "\\r"); break;
	case 0x1b: sink_puts(o, "\\e"); break;
	default: sink_printf(o, "\\x%02x", c); break;
	}
}

/* JSON strings: invalid UTF-8 and controls keep the byte value visible. */
static void escape_json(const struct sink *o, unsigned char c)
{
	switch (c) {
	case '"': sink_puts(o, "\\\""); break;
	case '\\': sink_puts(o, "\\\\"); break;
	case '\n': sink_puts(o, "\\n"); break;
	case '\t': sink_puts(o, "\\t"); break;
	case '\r': sink_puts(o, "\\r"); break;
	default: sink_printf(o, "\\u%04x", c); break;
	}
}

/* XML: markup as entities; invalid UTF-8 and controls as in text (visible,
   and legal XML). */
static void escape_xml(const struct sink *o, unsigned char c)
{
	switch (c) {
	case '&': sink_puts(o, "&amp;"); break;
	case '<': sink_puts(o, "&lt;"); break;
	case '>': sink_puts(o, "&gt;"); break;
	case '"': sink_puts(o, "&quot;"); break;
	case '\'': sink_puts(o, "&#39;"); break;
	default: escape_text(o, c); break;
	}
}

static const struct escaper text = { escape_text, escape_text_cp };
static const struct escaper json = { escape_json, escape_json_cp };
static const struct escaper xml = { escape_xml, escape_text_cp };

void rbi_out_text(FILE *f, const char *s, size_t len)
{
	escaped(&(struct sink){ .f = f }, s, len, "", &text);
}

void rbi_out_text_cstr(FILE *f, const char *s)
{
	rbi_out_text(f, s, strlen(s));
}

void rbi_json_init(struct rbi_json *j, FILE *f)
{
	memset(j, 0, sizeof(*j));
	j->f = f;
}

void rbi_json_buffer(struct rbi_json *j, char *buf, size_t cap)
{
	rbi_json_flush(j);
	j->buf = buf;
	j->cap = cap;
	j->len = 0;
}

void rbi_json_restart(struct rbi_json *j)
{
	j->depth = 0;
	j->after_key = false;
	memset(j->need_comma, 0, sizeof(j->need_comma));
}

static inline void json_sep(struct rbi_json *j)
{
	if (j->after_key) {
		j->after_key = false;
		return;
	}
	if (j->need_comma[j->depth])
		json_putc(j, ',');
	j->need_comma[j->depth] = true;
}

static void json_open(struct rbi_json *j, char c)
{
	json_sep(j);
	json_putc(j, c);
	if (j->depth + 1 < RBI_JSON_DEPTH)
		j->depth++;
	j->need_comma[j->depth] = false;
}

static void json_close(struct rbi_json *j, char c)
{
	json_putc(j, c);
	if (j->depth > 0)
		j->depth--;
	if (j->depth == 0)
		json_putc(j, '\n');
}

void rbi_json_object(struct rbi_json *j) { json_open(j, '{'); }
void rbi_json_array(struct rbi_json *j) { json_open(j, '['); }
void rbi_json_end_object(struct rbi_json *j) { json_close(j, '}'); }
void rbi_json_end_array(struct rbi_json *j) { json_close(j, ']'); }

static void json_string(const struct sink *o, const char *s, size_t len)
{
	sink_write(o, "\"", 1);
	escaped(o, s, len, "\"", &json);
	sink_write(o, "\"", 1);
}

void rbi_json_key_n(struct rbi_json *j, const char *key, size_t n)
{
	FILE *f = j->f;

	/* Keys are the program's own names (out.h): no escaping (a heap
	   dump writes 15M keys). */
	json_sep(j);
	j->after_key = true;
	if (j->buf && n <= 13) {
		char *p = json_room(j, 16);

		*p = '"';
		copy_short(p + 1, key, n);
		p[n + 1] = '"';
		p[n + 2] = ':';
		j->len += n + 3;
		return;
	}
	if (j->buf && n + 3 <= j->cap) {
		char *p = json_room(j, n + 3);

		*p = '"';
		memcpy(p + 1, key, n);
		p[n + 1] = '"';
		p[n + 2] = ':';
		j->len += n + 3;
		return;
	}
	rbi_json_flush(j);
	putc_unlocked('"', f);
	fwrite_unlocked(key, 1, n, f);
	putc_unlocked('"', f);
	putc_unlocked(':', f);
}

void rbi_json_str(struct rbi_json *j, const char *s, size_t len)
{
	json_sep(j);
	/* Buffered, a short string needing no escape (a type, an encoding,
	   a coderange: most of a heap dump's) is copied. */
	if (j->buf && len <= 14) {
		size_t i = 0;

		while (i < len && s[i] >= 0x20 && s[i] < 0x7f && s[i] != '"' && s[i] != '\\')
			i++;
		if (i == len) {
			char *p = json_room(j, 16);

			*p = '"';
			copy_short(p + 1, s, len);
			p[len + 1] = '"';
			j->len += len + 2;
			return;
		}
	}
	json_string(&(struct sink){ .f = j->f, .j = j->buf ? j : NULL }, s, len);
}

void rbi_json_cstr(struct rbi_json *j, const char *s)
{
	if (!s) {
		rbi_json_null(j);
		return;
	}
	rbi_json_str(j, s, strlen(s));
}

void rbi_json_int(struct rbi_json *j, int64_t v)
{
	char buf[24], *e = buf + sizeof(buf), *p = e;
	uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;

	json_sep(j);
	do
		*--p = (char)('0' + u % 10);
	while (u /= 10);
	if (v < 0)
		*--p = '-';
	json_write(j, p, (size_t)(e - p));
}

void rbi_json_double(struct rbi_json *j, double v)
{
	char buf[40];
	int n;

	if (v != v || v - v != 0) {     /* NaN, infinities: not JSON numbers */
		rbi_json_cstr(j, v != v ? "NaN" : v > 0 ? "Infinity" : "-Infinity");
		return;
	}
	json_sep(j);
	n = snprintf(buf, sizeof(buf), "%.17g", v);   /* at most 24 */
	if (n > 0 && (size_t)n < sizeof(buf))
		json_write(j, buf, (size_t)n);
}

void rbi_json_addr(struct rbi_json *j, uint64_t v)
{
	static const char hex[] = "0123456789abcdef";
	char buf[sizeof("\"0x\"") + 16], *p = buf;
	unsigned digits = 1;

	json_sep(j);
	for (uint64_t w = v >> 4; w; w >>= 4)
		digits++;
	if (j->buf)
		p = json_room(j, digits + 4);
	/* "0x...": the digits written from the last. */
	p[0] = '"';
	p[1] = '0';
	p[2] = 'x';
	for (unsigned i = digits; i > 0; i--, v >>= 4)
		p[2 + i] = hex[v & 0xf];
	p[digits + 3] = '"';
	if (j->buf)
		j->len += digits + 4;
	else
		fwrite_unlocked(p, 1, digits + 4, j->f);
}

void rbi_json_bool(struct rbi_json *j, bool v)
{
	json_sep(j);
	if (v)
		json_write(j, "true", 4);
	else
		json_write(j, "false", 5);
}

void rbi_json_null(struct rbi_json *j)
{
	json_sep(j);
	json_write(j, "null", 4);
}

void rbi_out_text_also(FILE *f, const char *s, size_t len, const char *also)
{
	escaped(&(struct sink){ .f = f }, s, len, also, &text);
}

void rbi_out_xml(FILE *f, const char *s, size_t len)
{
	escaped(&(struct sink){ .f = f }, s, len, "&<>\"'", &xml);
}

/* The public helpers (ruby-introspect.h): what rbinspect writes, for any
   program printing what a target holds. */
RBI_EXPORT void rbi_escape_text(FILE *f, const char *s, size_t len)
{
	if (f && (s || !len))
		escaped(&(struct sink){ .f = f }, s ? s : "", len, "", &text);
}

RBI_EXPORT void rbi_escape_json(FILE *f, const char *s, size_t len)
{
	if (f && (s || !len))
		json_string(&(struct sink){ .f = f }, s ? s : "", len);
}

RBI_EXPORT void rbi_escape_xml(FILE *f, const char *s, size_t len)
{
	if (f && (s || !len))
		escaped(&(struct sink){ .f = f }, s ? s : "", len, "&<>\"'", &xml);
}
