/* speedscope.c: speedscope's file format (https://www.speedscope.app/
 * file-format-schema.json): the frames once, then one "sampled" profile
 * per thread with its samples in the order they were taken (speedscope's
 * time-order view), each weighing the time it stands for, in nanoseconds.
 * The format has no word for what the time is: the profiles' names end in
 * "(CPU time)" or "(wall time)", as the profile's mode.  Thread root
 * frames are left out (each thread is its own profile); process roots
 * stay when there are several processes. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "out/render.h"

struct ssample {
	uint32_t thread;
	uint32_t first, n;              /* into the frame-id pool */
	uint64_t weight_ns;
};

struct ss {
	struct ssample *s;
	size_t n, cap;
	uint32_t *ids;
	size_t nids, ids_cap;
	int rc;
};

static int collect(const struct rbi_profile_sample *s, const struct rbi_sample_frame *const *frames,
		   size_t n, void *arg)
{
	struct ss *c = arg;

	if (!RBI_GROW(c->s, c->cap, c->n + 1, 1024) ||
	    !RBI_GROW(c->ids, c->ids_cap, c->nids + n, 4096))
		goto oom;
	c->s[c->n++] = (struct ssample){ s->thread, (uint32_t)c->nids, (uint32_t)n, s->weight_ns };
	for (size_t i = 0; i < n; i++)
		c->ids[c->nids++] = frames[i]->id;
	return 0;
oom:
	c->rc = rbi_fail(RBI_NOMEM, "out of memory");
	return 1;
}

static void profile_name(FILE *m, const struct rbi_profile_thread *th, bool pid,
			 const char *mode)
{
	if (pid)
		fprintf(m, "process %d ", (int)th->pid);
	fprintf(m, "thread %u", th->number);
	if (th->name)
		fprintf(m, " \"%s\"", th->name);
	if (th->main)
		fputs(" (main)", m);
	if (th->tid)
		fprintf(m, " tid %d", (int)th->tid);
	fprintf(m, " (%s time)", !strcmp(mode, "cpu") ? "CPU" : "wall");
}

int rbi_render_speedscope(rbi_profile *p, const struct rbi_profile_view *v, FILE *f)
{
	struct rbi_profile_view view = { .size = sizeof(view) };
	bool pids = rbi_profile_nprocesses(p) > 1;
	struct rbi_json j;
	struct ss c = { 0 };
	const char *cmd = rbi_profile_meta(p, "command");
	int rc;

	RBI_COPY_IN(&view, v);
	view.flags &= ~RBI_VIEW_THREADS;
	rc = rbi_profile_foreach_sample(p, &view, collect, &c);
	if (rc >= 0)
		rc = c.rc;
	if (rc)
		goto out;
	rbi_json_init(&j, f);
	rbi_json_object(&j);
	rbi_json_key(&j, "$schema");
	rbi_json_cstr(&j, "https://www.speedscope.app/file-format-schema.json");
	rbi_json_key(&j, "shared");
	rbi_json_object(&j);
	rbi_json_key(&j, "frames");
	rbi_json_array(&j);
	for (size_t i = 0; i < rbi_profile_nframes(p); i++) {
		const struct rbi_sample_frame *fr = rbi_profile_frame_at(p, i);

		rbi_json_object(&j);
		rbi_json_key(&j, "name");
		rbi_json_cstr(&j, fr->label);
		if (fr->path) {
			rbi_json_key(&j, "file");
			rbi_json_cstr(&j, fr->path);
		}
		if (fr->line) {
			rbi_json_key(&j, "line");
			rbi_json_int(&j, fr->line);
		}
		rbi_json_end_object(&j);
	}
	rbi_json_end_array(&j);
	rbi_json_end_object(&j);
	rbi_json_key(&j, "profiles");
	rbi_json_array(&j);
	for (size_t t = 0; t < rbi_profile_nthreads(p); t++) {
		const struct rbi_profile_thread *th = rbi_profile_thread_at(p, t);
		size_t count = 0;
		uint64_t total = 0;
		char *name = NULL;
		size_t len = 0;
		FILE *m;

		for (size_t i = 0; i < c.n; i++) {
			if (c.s[i].thread != t)
				continue;
			count++;
			total += c.s[i].weight_ns;
		}
		if (!count)
			continue;
		rbi_json_object(&j);
		rbi_json_key(&j, "type");
		rbi_json_cstr(&j, "sampled");
		rbi_json_key(&j, "name");
		if ((m = open_memstream(&name, &len))) {
			profile_name(m, th, pids, rbi_profile_mode(p));
			fclose(m);
		}
		rbi_json_cstr(&j, name ? name : "thread");
		free(name);
		rbi_json_key(&j, "unit");
		rbi_json_cstr(&j, "nanoseconds");
		rbi_json_key(&j, "startValue");
		rbi_json_int(&j, 0);
		rbi_json_key(&j, "endValue");
		rbi_json_int(&j, (int64_t)total);
		rbi_json_key(&j, "samples");
		rbi_json_array(&j);
		for (size_t i = 0; i < c.n; i++) {
			if (c.s[i].thread != t)
				continue;
			rbi_json_array(&j);
			for (uint32_t k = 0; k < c.s[i].n; k++)
				rbi_json_int(&j, c.ids[c.s[i].first + k]);
			rbi_json_end_array(&j);
		}
		rbi_json_end_array(&j);
		rbi_json_key(&j, "weights");
		rbi_json_array(&j);
		for (size_t i = 0; i < c.n; i++)
			if (c.s[i].thread == t)
				rbi_json_int(&j, (int64_t)c.s[i].weight_ns);
		rbi_json_end_array(&j);
		rbi_json_end_object(&j);
	}
	rbi_json_end_array(&j);
	rbi_json_key(&j, "name");
	rbi_json_cstr(&j, cmd ? cmd : "rbinspect profile");
	rbi_json_key(&j, "activeProfileIndex");
	rbi_json_int(&j, 0);
	rbi_json_key(&j, "exporter");
	rbi_json_cstr(&j, "rbinspect");
	rbi_json_end_object(&j);
out:
	free(c.s);
	free(c.ids);
	return rc;
}
