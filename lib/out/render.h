/* render.h: the profile renderers (lib/out), behind rbi_profile_write(). */
#ifndef RBI_OUT_RENDER_H
#define RBI_OUT_RENDER_H

#include "out/out.h"
#include "profile/profile.h"

int rbi_render_folded(rbi_profile *p, const struct rbi_profile_view *v, FILE *f);
int rbi_render_flamegraph(rbi_profile *p, const struct rbi_profile_view *v, FILE *f);
int rbi_render_speedscope(rbi_profile *p, const struct rbi_profile_view *v, FILE *f);
int rbi_render_pprof(rbi_profile *p, const struct rbi_profile_view *v, FILE *f);
int rbi_render_callgrind(rbi_profile *p, const struct rbi_profile_view *v, FILE *f);

/* A frame's name as folded stacks and flame graphs show it, raw (the
   caller escapes): "Foo#bar (app.rb:12)", "Foo#bar (app.rb)" without a
   line, "Kernel#sleep", "(garbage collection)".  Malloc'd; NULL when out
   of memory. */
char *rbi_render_frame_name(const struct rbi_sample_frame *f);

/* Names by frame id, made once per rendering. */
struct rbi_names {
	char **v;
	size_t n;
};
/* The name of F (NULL when out of memory). */
const char *rbi_names_get(struct rbi_names *names, const struct rbi_sample_frame *f);
void rbi_names_free(struct rbi_names *names);

/* A function for formats that separate functions from lines (pprof,
   callgrind): frames with the same kind, label and path. */
struct rbi_functions {
	struct rbi_map idx;             /* (label, path, kind) -> index */
	const struct rbi_sample_frame **v;      /* a frame of each */
	size_t n, cap;
	uint32_t *by_frame;             /* frame id -> index + 1 */
	size_t by_frame_cap;
};
/* The function index of F (< 0 when out of memory). */
long rbi_functions_get(struct rbi_functions *fs, const struct rbi_sample_frame *f);
void rbi_functions_free(struct rbi_functions *fs);

#endif
