/* pprof.c: Google's profile.proto (github.com/google/pprof/proto/
 * profile.proto), gzipped, as `go tool pprof` and pprof read it.  The
 * protobuf encoding is written by hand: varints, tags and length-prefixed
 * submessages are all it needs.
 *
 * A function is a (label, path) pair; a location is one frame (function and
 * line), so pprof's -lines view works; every location sits in one mapping
 * that says functions, files and lines are all known (no symbolization).
 * Values per sample: the number of samples and the time they stand for in
 * nanoseconds, their summed weights: "cpu" or "wall" as the profile's
 * mode. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "out/render.h"

/* profile.proto field numbers. */
enum {
	PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE = 2, PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4, PROFILE_FUNCTION = 5, PROFILE_STRING_TABLE = 6,
	PROFILE_TIME_NANOS = 9, PROFILE_DURATION_NANOS = 10, PROFILE_PERIOD_TYPE = 11,
	PROFILE_PERIOD = 12, PROFILE_COMMENT = 13,
	VALUE_TYPE_TYPE = 1, VALUE_TYPE_UNIT = 2,
	SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2,
	MAPPING_ID = 1, MAPPING_FILENAME = 5, MAPPING_HAS_FUNCTIONS = 7,
	MAPPING_HAS_FILENAMES = 8, MAPPING_HAS_LINE_NUMBERS = 9,
	LOCATION_ID = 1, LOCATION_MAPPING_ID = 2, LOCATION_LINE = 4,
	LINE_FUNCTION_ID = 1, LINE_LINE = 2,
	FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_FILENAME = 4, FUNCTION_START_LINE = 5,
};

enum { WIRE_VARINT = 0, WIRE_LEN = 2 };

struct pb {
	uint8_t *b;
	size_t n, cap;
	bool oom;
};

static void pb_raw(struct pb *p, const void *d, size_t len)
{
	if (p->oom)
		return;
	if (!RBI_GROW(p->b, p->cap, p->n + len, 256)) {
		p->oom = true;
		return;
	}
	memcpy(p->b + p->n, d, len);
	p->n += len;
}

static void pb_varint(struct pb *p, uint64_t v)
{
	uint8_t buf[10];
	size_t n = 0;

	do {
		buf[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	pb_raw(p, buf, n);
}

static void pb_key(struct pb *p, unsigned field, unsigned wire)
{
	pb_varint(p, (uint64_t)field << 3 | wire);
}

/* An int64/uint64/bool field; zero is the default and not written. */
static void pb_int(struct pb *p, unsigned field, uint64_t v)
{
	if (!v)
		return;
	pb_key(p, field, WIRE_VARINT);
	pb_varint(p, v);
}

static void pb_bytes(struct pb *p, unsigned field, const void *d, size_t len)
{
	pb_key(p, field, WIRE_LEN);
	pb_varint(p, len);
	pb_raw(p, d, len);
}

/* SUB as submessage FIELD; SUB is emptied for reuse. */
static void pb_msg(struct pb *p, unsigned field, struct pb *sub)
{
	if (sub->oom)
		p->oom = true;
	pb_bytes(p, field, sub->b, sub->n);
	sub->n = 0;
}

struct pprof {
	struct pb out, msg, sub, packed;
	struct rbi_strtab strs;
	struct rbi_map str_idx;         /* interned pointer -> index */
	const char **str_v;
	size_t nstr, str_cap;
	struct rbi_functions fns;
	bool *loc_used;
	size_t loc_cap;
	uint64_t period;
	bool oom;
};

/* The string table index of S (0 is ""). */
static uint64_t str(struct pprof *c, const char *s)
{
	const char *in;
	uint64_t v;

	if (!s || !*s)
		return 0;
	if (!(in = rbi_strtab_intern(&c->strs, s, strlen(s)))) {
		c->oom = true;
		return 0;
	}
	if (rbi_map_get(&c->str_idx, (uintptr_t)in, 0, 0, &v))
		return v;
	if (!RBI_GROW(c->str_v, c->str_cap, c->nstr + 1, 256)) {
		c->oom = true;
		return 0;
	}
	if (!c->nstr)
		c->str_v[c->nstr++] = "";
	c->str_v[c->nstr] = in;
	if (rbi_map_put(&c->str_idx, (uintptr_t)in, 0, 0, c->nstr))
		c->oom = true;
	return c->nstr++;
}

/* A name for pprof: valid UTF-8, control bytes escaped. */
static uint64_t text_str(struct pprof *c, const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	uint64_t v;
	FILE *m;

	if (!s || !*s)
		return 0;
	if (!(m = open_memstream(&buf, &len))) {
		c->oom = true;
		return 0;
	}
	rbi_out_text_cstr(m, s);
	fclose(m);
	v = str(c, buf);
	free(buf);
	return v;
}

static void value_type(struct pprof *c, unsigned field, const char *type, const char *unit)
{
	pb_int(&c->sub, VALUE_TYPE_TYPE, str(c, type));
	pb_int(&c->sub, VALUE_TYPE_UNIT, str(c, unit));
	pb_msg(&c->out, field, &c->sub);
}

static int add_sample(const struct rbi_sample_frame *const *frames, size_t n,
		      uint64_t count, uint64_t weight_ns, void *arg)
{
	struct pprof *c = arg;

	/* Locations, leaf first, packed. */
	for (size_t i = n; i-- > 0;) {
		uint32_t id = frames[i]->id;

		pb_varint(&c->packed, id + 1ull);
		if (!RBI_GROW_ZERO(c->loc_used, c->loc_cap, id + 1, 256)) {
			c->oom = true;
			return 1;
		}
		c->loc_used[id] = true;
	}
	pb_bytes(&c->msg, SAMPLE_LOCATION_ID, c->packed.b, c->packed.n);
	c->packed.n = 0;
	pb_varint(&c->packed, count);
	pb_varint(&c->packed, weight_ns);
	pb_bytes(&c->msg, SAMPLE_VALUE, c->packed.b, c->packed.n);
	c->packed.n = 0;
	pb_msg(&c->out, PROFILE_SAMPLE, &c->msg);
	return c->out.oom || c->msg.oom || c->packed.oom ? 1 : 0;
}

static int gzip_write(const uint8_t *data, size_t len, FILE *f)
{
	uint8_t buf[65536];
	z_stream z = { 0 };
	int zrc;

	if (len > UINT32_MAX)
		return rbi_fail(RBI_INVAL, "profile too large for one gzip write");
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return rbi_fail(RBI_NOMEM, "zlib: cannot start compressing");
	z.next_in = (Bytef *)data;
	z.avail_in = (uInt)len;
	do {
		z.next_out = buf;
		z.avail_out = sizeof(buf);
		zrc = deflate(&z, Z_FINISH);
		if (zrc == Z_STREAM_ERROR) {
			deflateEnd(&z);
			return rbi_fail(RBI_SYSTEM, "zlib: compressing failed");
		}
		fwrite(buf, 1, sizeof(buf) - z.avail_out, f);
	} while (zrc != Z_STREAM_END);
	deflateEnd(&z);
	return RBI_OK;
}

int rbi_render_pprof(rbi_profile *p, const struct rbi_profile_view *v, FILE *f)
{
	struct pprof c = { .period = rbi_profile_period_ns(p) };
	const char *kind = rbi_profile_mode(p);
	const char *start = rbi_profile_meta(p, "start_unix_ns");
	const char *duration = rbi_profile_meta(p, "duration");
	const char *cmd = rbi_profile_meta(p, "command");
	int rc;

	value_type(&c, PROFILE_SAMPLE_TYPE, "samples", "count");
	value_type(&c, PROFILE_SAMPLE_TYPE, kind, "nanoseconds");
	rc = rbi_profile_foreach_stack(p, v, add_sample, &c);
	if (rc > 0 || c.oom)
		rc = rbi_fail(RBI_NOMEM, "out of memory");
	if (rc)
		goto out;
	/* One mapping for everything: functions, files and lines are known. */
	pb_int(&c.sub, MAPPING_ID, 1);
	pb_int(&c.sub, MAPPING_FILENAME, str(&c, "ruby"));
	pb_int(&c.sub, MAPPING_HAS_FUNCTIONS, 1);
	pb_int(&c.sub, MAPPING_HAS_FILENAMES, 1);
	pb_int(&c.sub, MAPPING_HAS_LINE_NUMBERS, 1);
	pb_msg(&c.out, PROFILE_MAPPING, &c.sub);
	for (size_t id = 0; id < c.loc_cap; id++) {
		const struct rbi_sample_frame *fr;
		long fn;

		if (!c.loc_used[id] || !(fr = rbi_profile_frame_at(p, id)))
			continue;
		if ((fn = rbi_functions_get(&c.fns, fr)) < 0) {
			rc = rbi_fail(RBI_NOMEM, "out of memory");
			goto out;
		}
		pb_int(&c.sub, LINE_FUNCTION_ID, (uint64_t)fn + 1);
		pb_int(&c.sub, LINE_LINE, (uint64_t)(fr->line > 0 ? fr->line : 0));
		pb_int(&c.msg, LOCATION_ID, id + 1);
		pb_int(&c.msg, LOCATION_MAPPING_ID, 1);
		pb_msg(&c.msg, LOCATION_LINE, &c.sub);
		pb_msg(&c.out, PROFILE_LOCATION, &c.msg);
	}
	for (size_t i = 0; i < c.fns.n; i++) {
		const struct rbi_sample_frame *fr = c.fns.v[i];
		uint64_t name = text_str(&c, fr->label);

		pb_int(&c.msg, FUNCTION_ID, i + 1);
		/* No system_name: pprof would "demangle" it, taking <main> and
		   "(2 levels)" for C++ template and parameter lists. */
		pb_int(&c.msg, FUNCTION_NAME, name);
		pb_int(&c.msg, FUNCTION_FILENAME, text_str(&c, fr->path));
		pb_int(&c.msg, FUNCTION_START_LINE, (uint64_t)(fr->first_line > 0 ? fr->first_line : 0));
		pb_msg(&c.out, PROFILE_FUNCTION, &c.msg);
	}
	if (start)
		pb_int(&c.out, PROFILE_TIME_NANOS, strtoull(start, NULL, 10));
	if (duration)
		pb_int(&c.out, PROFILE_DURATION_NANOS, (uint64_t)(strtod(duration, NULL) * 1e9));
	value_type(&c, PROFILE_PERIOD_TYPE, kind, "nanoseconds");
	pb_int(&c.out, PROFILE_PERIOD, c.period);
	if (cmd)
		pb_int(&c.out, PROFILE_COMMENT, text_str(&c, cmd));
	/* The string table last: everything above has added to it. */
	for (size_t i = 0; i < c.nstr; i++)
		pb_bytes(&c.out, PROFILE_STRING_TABLE, c.str_v[i], strlen(c.str_v[i]));
	if (c.oom || c.out.oom || c.msg.oom || c.sub.oom) {
		rc = rbi_fail(RBI_NOMEM, "out of memory");
		goto out;
	}
	rc = gzip_write(c.out.b, c.out.n, f);
out:
	free(c.out.b);
	free(c.msg.b);
	free(c.sub.b);
	free(c.packed.b);
	free(c.str_v);
	free(c.loc_used);
	rbi_strtab_free(&c.strs);
	rbi_map_free(&c.str_idx);
	rbi_functions_free(&c.fns);
	return rc;
}
