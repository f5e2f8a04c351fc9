/* dumpfile.c: an ObjectSpace.dump_all file read as it streams (see
 * dumpfile.h).  zlib reads a plain file as it is, so one reader serves
 * both; each line is parsed by json-c. */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "heapfile/dumpfile.h"
#include "internal.h"

/* A longer line is no heap dump's (a 10M-element Array's is ~200 MB). */
#define LINE_MAX_BYTES (1ull << 30)
#define LINE_CHUNK 65536
/* Bytes of an object whose dump gives neither memsize nor slot_size. */
#define SLOT_BYTES_OLD 40

uint64_t rbi_dumpfile_hex(struct json_object *o, const char *key)
{
	const char *s = rbi_dumpfile_str(o, key);

	return s ? strtoull(s, NULL, 16) : 0;
}

uint64_t rbi_dumpfile_bytes(struct json_object *o)
{
	struct json_object *v;

	if (json_object_object_get_ex(o, "memsize", &v) ||
	    json_object_object_get_ex(o, "slot_size", &v))
		return (uint64_t)json_object_get_int64(v);
	return SLOT_BYTES_OLD;
}

const char *rbi_dumpfile_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* Read one whole line, however long, into *BUF; its length, 0 at the end
   of the file, or a negative status (a NUL byte: no text file's). */
static long long read_line(gzFile gz, const char *path, uint64_t lineno, char **buf,
			   size_t *cap)
{
	size_t len = 0, piece;

	do {
		if (*cap - len < LINE_CHUNK && (len + LINE_CHUNK > LINE_MAX_BYTES ||
		    !RBI_GROW(*buf, *cap, len + LINE_CHUNK, LINE_CHUNK)))
			return rbi_fail(RBI_NOMEM, "%s: a line longer than we read", path);
		if (!gzgets(gz, *buf + len, (int)(*cap - len)))
			break;
		piece = strlen(*buf + len);
		/* gzgets stops at a newline, the end, or a full buffer: short of
		   all three, or with nothing read, a NUL byte ended the string. */
		if (!piece || (piece < *cap - len - 1 && (*buf)[len + piece - 1] != '\n' &&
			       !gzeof(gz)))
			return rbi_fail(RBI_CORRUPT, "%s:%" PRIu64 ": a NUL byte: not a heap dump",
					path, lineno);
		len += piece;
	} while (len && (*buf)[len - 1] != '\n');
	return (long long)len;
}

static int parse_line(const char *path, uint64_t lineno, const char *text,
		      dumpfile_line_fn fn, void *arg)
{
	struct json_object *o = json_tokener_parse(text);
	int rc;

	if (!o || !json_object_is_type(o, json_type_object))
		rc = rbi_fail(RBI_CORRUPT, "%s:%" PRIu64 ": not a JSON object: not a heap dump",
			      path, lineno);
	else
		rc = fn(o, lineno, arg);
	json_object_put(o);
	return rc;
}

int rbi_dumpfile_each(const char *path, dumpfile_line_fn fn, void *arg)
{
	gzFile gz = gzopen(path, "rbe");
	char *buf = NULL;
	size_t cap = 0;
	uint64_t lineno = 0, parsed = 0;
	long long len = 0;
	int rc = RBI_OK;

	if (!gz)
		return rbi_fail(RBI_SYSTEM, "%s: %s", path, strerror(errno ? errno : ENOMEM));
	while (rc == RBI_OK && (len = read_line(gz, path, lineno + 1, &buf, &cap)) > 0) {
		lineno++;
		if (len > 1) {  /* not an empty line */
			rc = parse_line(path, lineno, buf, fn, arg);
			parsed++;
		}
	}
	if (rc == RBI_OK && len < 0)
		rc = (int)len;
	if (rc == RBI_OK && !gzeof(gz)) {
		int zerr;
		const char *msg = gzerror(gz, &zerr);

		rc = rbi_fail(RBI_CORRUPT, "%s: %s", path,
			      zerr == Z_ERRNO ? strerror(errno) :
			      msg && *msg ? msg : "the data ends early: not a heap dump");
	}
	/* Ruby's heap always has objects: a file without a line is none's. */
	if (rc == RBI_OK && !parsed)
		rc = rbi_fail(RBI_CORRUPT, "%s: empty: not a heap dump", path);
	free(buf);
	gzclose(gz);
	return rc;
}
