/* profile-out.c: rbi_profile_write and what the renderers share. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "out/render.h"

static const struct {
	const char *name, *ext;
	bool in_order;          /* reads every sample in order: not aggregated */
} formats[] = {
	[RBI_FORMAT_FLAMEGRAPH] = { "flamegraph", "svg", false },
	[RBI_FORMAT_FOLDED] = { "folded", "txt", false },
	[RBI_FORMAT_SPEEDSCOPE] = { "speedscope", "speedscope.json", true },
	[RBI_FORMAT_PPROF] = { "pprof", "pb.gz", false },
	[RBI_FORMAT_CALLGRIND] = { "callgrind", "callgrind", false },
	[RBI_FORMAT_RAW] = { "raw", "rbiprof", true },
};

RBI_EXPORT const char *rbi_profile_format_name(rbi_profile_format f)
{
	return (unsigned)f < RBI_ARRAY_SIZE(formats) ? formats[f].name : NULL;
}

RBI_EXPORT const char *rbi_profile_format_extension(rbi_profile_format f)
{
	return (unsigned)f < RBI_ARRAY_SIZE(formats) ? formats[f].ext : NULL;
}

RBI_EXPORT int rbi_profile_format_in_order(rbi_profile_format f)
{
	return (unsigned)f < RBI_ARRAY_SIZE(formats) && formats[f].in_order;
}

RBI_EXPORT int rbi_profile_format_from_name(const char *name, rbi_profile_format *out)
{
	for (size_t i = 0; name && i < RBI_ARRAY_SIZE(formats); i++)
		if (!strcmp(name, formats[i].name)) {
			*out = (rbi_profile_format)i;
			return RBI_OK;
		}
	return rbi_fail(RBI_INVAL, "unknown format \"%s\" (flamegraph, folded, "
			"speedscope, pprof, callgrind or raw)", name ? name : "");
}

RBI_EXPORT int rbi_profile_write(rbi_profile *p, rbi_profile_format format,
				 const struct rbi_profile_view *view, FILE *f)
{
	int rc;

	if (!p || !f)
		return rbi_fail(RBI_INVAL, "no profile or file");
	switch (format) {
	case RBI_FORMAT_FLAMEGRAPH: rc = rbi_render_flamegraph(p, view, f); break;
	case RBI_FORMAT_FOLDED: rc = rbi_render_folded(p, view, f); break;
	case RBI_FORMAT_SPEEDSCOPE: rc = rbi_render_speedscope(p, view, f); break;
	case RBI_FORMAT_PPROF: rc = rbi_render_pprof(p, view, f); break;
	case RBI_FORMAT_CALLGRIND: rc = rbi_render_callgrind(p, view, f); break;
	case RBI_FORMAT_RAW: rc = rbi_profile_save(p, f); break;
	default: return rbi_fail(RBI_INVAL, "unknown format %d", (int)format);
	}
	if (rc)
		return rc;
	if (fflush(f) || ferror(f))
		return rbi_fail(RBI_SYSTEM, "writing the profile: %s", strerror(errno));
	return RBI_OK;
}

char *rbi_render_frame_name(const struct rbi_sample_frame *f)
{
	char *s = NULL;
	int n;

	if (f->path && f->line)
		n = asprintf(&s, "%s (%s:%d)", f->label, f->path, f->line);
	else if (f->path)
		n = asprintf(&s, "%s (%s)", f->label, f->path);
	else
		n = asprintf(&s, "%s", f->label);
	return n < 0 ? NULL : s;
}

const char *rbi_names_get(struct rbi_names *names, const struct rbi_sample_frame *f)
{
	if (!RBI_GROW_ZERO(names->v, names->n, (size_t)f->id + 1, 64))
		return NULL;
	if (!names->v[f->id])
		names->v[f->id] = rbi_render_frame_name(f);
	return names->v[f->id];
}

void rbi_names_free(struct rbi_names *names)
{
	for (size_t i = 0; i < names->n; i++)
		free(names->v[i]);
	free(names->v);
	memset(names, 0, sizeof(*names));
}

long rbi_functions_get(struct rbi_functions *fs, const struct rbi_sample_frame *f)
{
	uint64_t v;

	if (f->id < fs->by_frame_cap && fs->by_frame[f->id])
		return (long)fs->by_frame[f->id] - 1;
	if (!rbi_map_get(&fs->idx, (uintptr_t)f->label, (uintptr_t)f->path, f->kind + 1ull, &v)) {
		if (!RBI_GROW(fs->v, fs->cap, fs->n + 1, 64))
			return -1;
		v = fs->n;
		if (rbi_map_put(&fs->idx, (uintptr_t)f->label, (uintptr_t)f->path, f->kind + 1ull, v))
			return -1;
		fs->v[fs->n++] = f;
	}
	if (!RBI_GROW_ZERO(fs->by_frame, fs->by_frame_cap, (size_t)f->id + 1, 64))
		return -1;
	fs->by_frame[f->id] = (uint32_t)v + 1;
	return (long)v;
}

void rbi_functions_free(struct rbi_functions *fs)
{
	rbi_map_free(&fs->idx);
	free(fs->v);
	free(fs->by_frame);
	memset(fs, 0, sizeof(*fs));
}
