/* out.h: safe rendering of target-controlled text (names, paths) for the
 * terminal and JSON.  Target strings are untrusted: control characters,
 * invalid bytes and the bidirectional controls that reorder text (U+202E
 * ...) are escaped, never passed through. */
#ifndef RBI_OUT_H
#define RBI_OUT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Write LEN bytes of S for a terminal: printable UTF-8 as is, everything
   else as \n, \t, \e, \xNN, bidirectional controls as \u{202e}. */
void rbi_out_text(FILE *f, const char *s, size_t len);
void rbi_out_text_cstr(FILE *f, const char *s);
/* rbi_out_text that also writes the bytes of ALSO as \xNN (the folded
   format's ';'). */
void rbi_out_text_also(FILE *f, const char *s, size_t len, const char *also);
/* Text for XML/SVG content and attribute values: entities for & < > " ',
   and the escapes of rbi_out_text for anything not printable UTF-8. */
void rbi_out_xml(FILE *f, const char *s, size_t len);

/* A streaming JSON writer.  Nesting is bounded by RBI_JSON_DEPTH. */
#define RBI_JSON_DEPTH 32
struct rbi_json {
	FILE *f;
	int depth;
	bool need_comma[RBI_JSON_DEPTH];
	bool after_key;
	/* Set by rbi_json_buffer: the text gathered here, written to F when
	   full and by rbi_json_flush; NULL: every call writes to F. */
	char *buf;
	size_t len, cap;
};
void rbi_json_init(struct rbi_json *j, FILE *f);
/* Gather the text in BUF (CAP bytes, at least 256) and write it to the
   file in that size: a heap dump's millions of small values then cost no
   stdio call each.  Only for a writer that alone writes its file: what
   else is written there must wait for rbi_json_flush. */
void rbi_json_buffer(struct rbi_json *j, char *buf, size_t cap);
void rbi_json_flush(struct rbi_json *j);
/* Start the next value at the top level (the next line of JSON Lines),
   keeping the buffer: as rbi_json_init, without a separator before it. */
void rbi_json_restart(struct rbi_json *j);
void rbi_json_object(struct rbi_json *j);
void rbi_json_array(struct rbi_json *j);
void rbi_json_end_object(struct rbi_json *j);
void rbi_json_end_array(struct rbi_json *j);
/* KEY is a name of the program's (ASCII letters, digits, '_'), never the
   target's data: it is written as it is.  Inline, the length of a literal
   is known when compiled. */
void rbi_json_key_n(struct rbi_json *j, const char *key, size_t len);
static inline void rbi_json_key(struct rbi_json *j, const char *key)
{
	rbi_json_key_n(j, key, strlen(key));
}
void rbi_json_str(struct rbi_json *j, const char *s, size_t len);
void rbi_json_cstr(struct rbi_json *j, const char *s);  /* NULL: null */
void rbi_json_int(struct rbi_json *j, int64_t v);
/* A finite V as a number; NaN and infinities as the strings "NaN",
   "Infinity", "-Infinity". */
void rbi_json_double(struct rbi_json *j, double v);
void rbi_json_addr(struct rbi_json *j, uint64_t v);     /* "0x..." */
void rbi_json_bool(struct rbi_json *j, bool v);
void rbi_json_null(struct rbi_json *j);

#endif
