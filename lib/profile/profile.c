/* profile.c: samples kept as a call tree, views over them, and the raw
 * form that `rbinspect report` reads back.
 *
 * A stack is a node of a call tree: node 0 is the root (no frame), every
 * other node is (parent, frame).  A sample is (time, node, thread, fiber,
 * state, weight), 32 bytes whatever its depth.  Frames, threads, fibers and strings
 * are interned in the profile, so a profile outlives the samplers that
 * filled it.
 *
 * Samples are kept one record each, in the order taken (what the raw form
 * and speedscope need), or, once rbi_profile_aggregate is called, one
 * record per distinct (node, thread, fiber, state, gc) with how many
 * samples had it and their summed weight: memory then grows with the
 * distinct stacks, not with the length of the recording.  Views read
 * both alike: a record stands for COUNT samples (1 when not aggregated).
 *
 * Raw form, version 4: text, one record per line, fields separated by one
 * TAB; strings escape backslash, TAB, CR, LF and other control bytes as
 * \\ \t \r \n \xNN, and an empty string field means "none" (NULL).
 *   rbinspect-profile 4
 *   m  KEY  VALUE                                      metadata
 *   f  ID  KIND  LINE  FIRST_LINE  LABEL  PATH         frames, ids 0, 1, ...
 *   t  ID  PID  NUMBER  TID  MAIN  THREAD  NAME        threads, ids 0, 1, ...
 *   u  ID  THREAD_ID  FIBER  ROOT                      fibers, ids 0, 1, ...
 *   n  ID  PARENT  FRAME                               nodes 1, 2, ... (parent < id)
 *   s  TIME_NS  NODE  THREAD_ID  STATE  GC  FIBER_ID  WEIGHT_NS
 *                                                      samples, in order (FIBER_ID
 *                                                      empty: unknown)
 *   x  samples stacks idle errors torn retries rescans total_ns max_ns late
 *      missed
 * Version 3 (no missed), 2 (no WEIGHT_NS either) and 1 (no fibers either: no u records, samples
 * without FIBER_ID) load too, each sample weighing one period of "rate". 
 * Every record ends in a newline and x comes last: a file without it was
 * cut short, and loads with the metadata "incomplete" saying where. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"

#define RAW_MAGIC "rbinspect-profile "       /* and the version */
#define RAW_VERSION 4                           /* written; 1 to it are read */
#define RAW_LINE_MAX (1u << 20)
#define META_MAX 256
#define DEPTH_MAX (1u << 24)
#define WEIGHT_MAX (86400ull * 1000000000u)     /* a sample stands for a day at most */
#define LOST_WARN 5             /* rbi_profile_warn_lost: more than 1/LOST_WARN lost */

struct node {
	uint32_t parent;
	uint32_t frame;
};

struct meta {
	char *key, *value;
};

/* A fiber as a profile knows it: one of a thread's. */
struct fiber {
	uint32_t thread;        /* index into the threads */
	uint64_t fiber;         /* the rb_fiber_t */
	bool root;
};

struct rbi_profile {
	struct rbi_frametab ft;
	struct node *nodes;             /* [0] is the root */
	size_t nnodes, nodes_cap;
	struct rbi_map node_idx;        /* (parent + 1, frame + 1, 1) -> node */
	struct rbi_profile_thread *threads;
	size_t nthreads, threads_cap;
	struct rbi_map thread_idx;      /* (pid + 1, thread, tid + 1) -> index */
	struct fiber *fibers;
	size_t nfibers, fibers_cap;
	struct rbi_map fiber_idx;       /* (thread index + 1, fiber, 1) -> index */
	struct rbi_profile_sample *samples;     /* the records */
	size_t nsamples, samples_cap;
	uint64_t total;                 /* samples added: nsamples unless aggregated */
	bool aggregated;                /* rbi_profile_aggregate */
	uint64_t *counts;               /* aggregated: samples a record stands for */
	size_t counts_cap;
	struct rbi_map sample_idx;      /* aggregated: (node + 1, thread | fiber << 32,
					   state | gc << 8) -> record */
	struct meta meta[META_MAX];
	size_t nmeta;
	bool cpu;                       /* "mode" is "cpu": every sample used CPU */
	struct rbi_sample_stats stats;
	struct rbi_sample_stats live;   /* rbi_profile_set_live_stats */
	/* Views: made-up frames and line-less twins, by frame id. */
	struct rbi_map view_frames;
	uint32_t *path;
	size_t path_cap;
	const struct rbi_sample_frame **vframes;
	size_t vframes_cap;
};

RBI_EXPORT int rbi_profile_new(rbi_profile **out)
{
	rbi_profile *p;

	if (!out)
		return rbi_fail(RBI_INVAL, "no profile");
	if (!(p = calloc(1, sizeof(*p))) ||
	    !RBI_GROW(p->nodes, p->nodes_cap, 1, 64)) {
		free(p);
		return rbi_fail(RBI_NOMEM, "out of memory");
	}
	p->nodes[0] = (struct node){ UINT32_MAX, UINT32_MAX };
	p->nnodes = 1;
	*out = p;
	return RBI_OK;
}

RBI_EXPORT void rbi_profile_free(rbi_profile *p)
{
	if (!p)
		return;
	rbi_frametab_free(&p->ft);
	rbi_map_free(&p->node_idx);
	rbi_map_free(&p->thread_idx);
	rbi_map_free(&p->fiber_idx);
	rbi_map_free(&p->sample_idx);
	rbi_map_free(&p->view_frames);
	for (size_t i = 0; i < p->nmeta; i++) {
		free(p->meta[i].key);
		free(p->meta[i].value);
	}
	free(p->nodes);
	free(p->threads);
	free(p->fibers);
	free(p->samples);
	free(p->counts);
	free(p->path);
	free(p->vframes);
	free(p);
}

RBI_EXPORT int rbi_profile_set_meta(rbi_profile *p, const char *key, const char *value)
{
	char *v;
	size_t i;

	if (!p || !key || !*key || !value)
		return rbi_fail(RBI_INVAL, "no profile, key or value");
	for (i = 0; i < p->nmeta && strcmp(p->meta[i].key, key); i++)
		;
	if (i == META_MAX)
		return rbi_fail(RBI_INVAL, "too many metadata keys");
	if (!(v = strdup(value)))
		return rbi_fail(RBI_NOMEM, "out of memory");
	if (i == p->nmeta) {
		if (!(p->meta[i].key = strdup(key))) {
			free(v);
			return rbi_fail(RBI_NOMEM, "out of memory");
		}
		p->nmeta++;
	} else {
		free(p->meta[i].value);
	}
	p->meta[i].value = v;
	/* Views keep the idle samples of a profile of CPU time: kept apart,
	   not looked up for each sample. */
	if (!strcmp(key, "mode"))
		p->cpu = !strcmp(value, "cpu");
	return RBI_OK;
}

RBI_EXPORT const char *rbi_profile_meta(const rbi_profile *p, const char *key)
{
	for (size_t i = 0; p && key && i < p->nmeta; i++)
		if (!strcmp(p->meta[i].key, key))
			return p->meta[i].value;
	return NULL;
}

void rbi_sample_stats_sum(struct rbi_sample_stats *to, const struct rbi_sample_stats *st)
{
	to->samples += st->samples;
	to->stacks += st->stacks;
	to->idle += st->idle;
	to->errors += st->errors;
	to->torn += st->torn;
	to->retries += st->retries;
	to->rescans += st->rescans;
	to->total_ns += st->total_ns;
	if (st->max_ns > to->max_ns)
		to->max_ns = st->max_ns;
	to->late += st->late;
	to->missed += st->missed;
}

RBI_EXPORT void rbi_profile_add_stats(rbi_profile *p, const struct rbi_sample_stats *st)
{
	if (p && st)
		rbi_sample_stats_sum(&p->stats, st);
}

void rbi_profile_set_live_stats(rbi_profile *p, const struct rbi_sample_stats *st)
{
	p->live = *st;
}

RBI_EXPORT void rbi_profile_stats(const rbi_profile *p, struct rbi_sample_stats *out)
{
	if (!out)
		return;
	*out = p ? p->stats : (struct rbi_sample_stats){ 0 };
	if (p)
		rbi_sample_stats_sum(out, &p->live);
}

void rbi_profile_warn_lost(rbi_profile *p)
{
	uint64_t lost = p->stats.errors + p->stats.torn, tried = p->stats.stacks + lost;
	char buf[256];

	if (!tried || lost * LOST_WARN <= tried)
		return;
	snprintf(buf, sizeof(buf), "%.0f%% of the stacks could not be read (%" PRIu64
		 " errors, %" PRIu64 " torn, of %" PRIu64 "): the profile shows only the rest",
		 100.0 * (double)lost / (double)tried, p->stats.errors, p->stats.torn, tried);
	rbi_profile_set_meta(p, "warning", buf);
}

RBI_EXPORT size_t rbi_profile_sample_count(const rbi_profile *p)
{
	return p ? (size_t)p->total : 0;
}

RBI_EXPORT void rbi_profile_clear_samples(rbi_profile *p)
{
	if (!p)
		return;
	p->nsamples = 0;
	p->total = 0;
	rbi_map_clear(&p->sample_idx);
}

RBI_EXPORT int rbi_profile_aggregate(rbi_profile *p)
{
	if (!p)
		return rbi_fail(RBI_INVAL, "no profile");
	if (p->nsamples && !p->aggregated)
		return rbi_fail(RBI_INVAL, "the profile already keeps samples one by one");
	p->aggregated = true;
	return RBI_OK;
}

size_t rbi_profile_nrecords(const rbi_profile *p)
{
	return p->nsamples;
}

size_t rbi_profile_nthreads(const rbi_profile *p)
{
	return p->nthreads;
}

const struct rbi_profile_thread *rbi_profile_thread_at(const rbi_profile *p, size_t i)
{
	return i < p->nthreads ? &p->threads[i] : NULL;
}

size_t rbi_profile_nprocesses(const rbi_profile *p)
{
	size_t n = 0;

	for (size_t i = 0; i < p->nthreads; i++) {
		size_t j;

		for (j = 0; j < i && p->threads[j].pid != p->threads[i].pid; j++)
			;
		n += j == i;
	}
	return n;
}

size_t rbi_profile_nframes(const rbi_profile *p)
{
	return p->ft.n;
}

const struct rbi_sample_frame *rbi_profile_frame_at(const rbi_profile *p, size_t id)
{
	return id < p->ft.n ? p->ft.v[id] : NULL;
}

uint64_t rbi_profile_period_ns(const rbi_profile *p)
{
	const char *r = rbi_profile_meta(p, "rate");
	double rate = r ? strtod(r, NULL) : 0;

	return rate > 0 && rate < 1e9 ? (uint64_t)(1e9 / rate) : 10000000ull;
}

const char *rbi_profile_mode(const rbi_profile *p)
{
	return p->cpu ? "cpu" : "wall";
}

/* ---- Adding ------------------------------------------------------------- */

static int node_child(rbi_profile *p, uint32_t parent, uint32_t frame, uint32_t *out)
{
	uint64_t v;
	int rc;

	if (rbi_map_get(&p->node_idx, (uint64_t)parent + 1, (uint64_t)frame + 1, 1, &v)) {
		*out = (uint32_t)v;
		return RBI_OK;
	}
	if (p->nnodes >= UINT32_MAX - 1)
		return rbi_fail(RBI_NOMEM, "profile too large");
	if (!RBI_GROW(p->nodes, p->nodes_cap, p->nnodes + 1, 64))
		return rbi_fail(RBI_NOMEM, "out of memory");
	if ((rc = rbi_map_put(&p->node_idx, (uint64_t)parent + 1, (uint64_t)frame + 1, 1,
			      p->nnodes)))
		return rc;
	p->nodes[p->nnodes] = (struct node){ parent, frame };
	*out = (uint32_t)p->nnodes++;
	return RBI_OK;
}

static int thread_id(rbi_profile *p, pid_t pid, uint64_t thread, int32_t tid,
		     unsigned number, const char *name, bool main, uint32_t *out)
{
	struct rbi_profile_thread *th;
	uint64_t v;
	int rc;

	if (rbi_map_get(&p->thread_idx, (uint64_t)pid + 1, thread, (uint64_t)(uint32_t)tid + 1, &v)) {
		th = &p->threads[v];
		/* Threads get named after they start. */
		if (name && (!th->name || strcmp(th->name, name)))
			th->name = rbi_strtab_intern(&p->ft.strs, name, strlen(name));
		th->number = number;
		*out = (uint32_t)v;
		return RBI_OK;
	}
	if (!RBI_GROW(p->threads, p->threads_cap, p->nthreads + 1, 64))
		return rbi_fail(RBI_NOMEM, "out of memory");
	th = &p->threads[p->nthreads];
	*th = (struct rbi_profile_thread){
		.id = (uint32_t)p->nthreads, .pid = pid, .thread = thread, .tid = tid,
		.number = number, .main = main,
		.name = name ? rbi_strtab_intern(&p->ft.strs, name, strlen(name)) : NULL,
	};
	if ((rc = rbi_map_put(&p->thread_idx, (uint64_t)pid + 1, thread,
			      (uint64_t)(uint32_t)tid + 1, p->nthreads)))
		return rc;
	*out = (uint32_t)p->nthreads++;
	return RBI_OK;
}

/* The index of THREAD's fiber FIBER (an rb_fiber_t), added on first sight;
   RBI_PROFILE_NO_FIBER for fiber 0 (unknown). */
static int fiber_id(rbi_profile *p, uint32_t thread, uint64_t fiber, bool root, uint32_t *out)
{
	uint64_t v;
	int rc;

	*out = RBI_PROFILE_NO_FIBER;
	if (!fiber)
		return RBI_OK;
	if (rbi_map_get(&p->fiber_idx, (uint64_t)thread + 1, fiber, 1, &v)) {
		*out = (uint32_t)v;
		return RBI_OK;
	}
	if (p->nfibers >= RBI_PROFILE_NO_FIBER)
		return rbi_fail(RBI_NOMEM, "profile too large");
	if (!RBI_GROW(p->fibers, p->fibers_cap, p->nfibers + 1, 64))
		return rbi_fail(RBI_NOMEM, "out of memory");
	if ((rc = rbi_map_put(&p->fiber_idx, (uint64_t)thread + 1, fiber, 1, p->nfibers)))
		return rc;
	p->fibers[p->nfibers] = (struct fiber){ .thread = thread, .fiber = fiber, .root = root };
	*out = (uint32_t)p->nfibers++;
	return RBI_OK;
}

/* A sample, as a record of its own or (aggregated) added to the record of
   the samples alike in all but time: the first one's time stays. */
static int push_sample(rbi_profile *p, uint64_t time_ns, uint32_t node, uint32_t thread,
		       uint32_t fiber, unsigned state, bool gc, uint64_t weight_ns)
{
	/* Never the all-zero key: node + 1. */
	uint64_t ka = node + 1ull, kb = thread | (uint64_t)fiber << 32, kc = state | (uint64_t)gc << 8;
	uint64_t i;
	int rc;

	if (p->aggregated && rbi_map_get(&p->sample_idx, ka, kb, kc, &i)) {
		p->counts[i]++;
		p->samples[i].weight_ns += weight_ns;
		p->total++;
		return RBI_OK;
	}
	if (!RBI_GROW(p->samples, p->samples_cap, p->nsamples + 1, 64) ||
	    (p->aggregated && !RBI_GROW(p->counts, p->counts_cap, p->nsamples + 1, 64)))
		return rbi_fail(RBI_NOMEM, "out of memory");
	if (p->aggregated) {
		if ((rc = rbi_map_put(&p->sample_idx, ka, kb, kc, p->nsamples)))
			return rc;
		p->counts[p->nsamples] = 1;
	}
	p->samples[p->nsamples++] = (struct rbi_profile_sample){
		.time_ns = time_ns, .node = node, .thread = thread, .fiber = fiber,
		.state = (uint8_t)state, .gc = gc, .weight_ns = weight_ns,
	};
	p->total++;
	return RBI_OK;
}

static const struct rbi_sample_frame *own_frame(rbi_profile *p, const struct rbi_sample_frame *f,
						struct rbi_map *cache)
{
	const struct rbi_sample_frame *own;
	uint64_t v;

	if (cache && rbi_map_get(cache, (uintptr_t)f, 0, 0, &v))
		return p->ft.v[v];
	own = rbi_frametab_intern(&p->ft, f->kind, f->label, f->path, f->line, f->first_line);
	if (own && cache)
		rbi_map_put(cache, (uintptr_t)f, 0, 0, own->id);
	return own;
}

int rbi_profile_add_mapped(rbi_profile *p, const struct rbi_sample *s, struct rbi_map *cache)
{
	uint32_t node = 0, thread, fiber;
	int rc;

	if (!p || !s)
		return rbi_fail(RBI_INVAL, "no profile or sample");
	if (s->status != RBI_OK)
		return RBI_OK;
	for (size_t i = 0; i < s->nframes; i++) {
		const struct rbi_sample_frame *f = own_frame(p, s->frames[i], cache);

		if (!f)
			return rbi_fail(RBI_NOMEM, "out of memory");
		if ((rc = node_child(p, node, f->id, &node)))
			return rc;
	}
	if ((rc = thread_id(p, s->pid, s->thread, s->tid, s->thread_number, s->thread_name,
			    s->main, &thread)) ||
	    (rc = fiber_id(p, thread, s->fiber, s->root_fiber, &fiber)))
		return rc;
	return push_sample(p, s->time_ns, node, thread, fiber, s->state, s->gc,
			   s->weight_ns ? s->weight_ns : rbi_profile_period_ns(p));
}

RBI_EXPORT int rbi_profile_add(rbi_profile *p, const struct rbi_sample *s)
{
	return rbi_profile_add_mapped(p, s, NULL);
}

RBI_EXPORT int rbi_profile_add_fn(const struct rbi_sample *s, void *arg)
{
	int rc = rbi_profile_add(arg, s);

	return rc < 0 ? rc : 0;
}

/* ---- Views -------------------------------------------------------------- */

static bool view_keeps(const rbi_profile *p, const struct rbi_profile_view *v,
		       const struct rbi_profile_sample *s)
{
	uint32_t flags = v ? v->flags : 0;

	if (flags & RBI_VIEW_GVL)
		return s->state == RBI_STATE_GVL;
	return p->cpu || (flags & RBI_VIEW_IDLE) ||
	       !rbi_sample_state_idle((rbi_sample_state)s->state);
}

/* Whether S's stack ends in a frame for its state: a wait for the GVL
   always (the call under it did not run), idle states when asked. */
static bool state_shown(uint32_t flags, const struct rbi_profile_sample *s)
{
	return s->state == RBI_STATE_GVL_WAIT ||
	       ((flags & RBI_VIEW_IDLE) && rbi_sample_state_idle((rbi_sample_state)s->state));
}

/* A made-up frame, interned. */
static const struct rbi_sample_frame *made_up(rbi_profile *p, const char *label)
{
	return rbi_frametab_intern(&p->ft, RBI_FRAME_OTHER, label, NULL, 0, 0);
}

static const struct rbi_sample_frame *thread_frame(rbi_profile *p, const struct rbi_profile_thread *th)
{
	char buf[512];
	int n;

	n = snprintf(buf, sizeof(buf), "thread %u", th->number);
	if (th->name)
		n += snprintf(buf + n, sizeof(buf) - (size_t)n, " \"%.300s\"", th->name);
	if (th->main)
		n += snprintf(buf + n, sizeof(buf) - (size_t)n, " (main)");
	if (th->tid)
		snprintf(buf + n, sizeof(buf) - (size_t)n, " tid %d", (int)th->tid);
	return made_up(p, buf);
}

static const struct rbi_sample_frame *fiber_frame(rbi_profile *p, const struct rbi_profile_sample *s)
{
	const struct fiber *f;
	char buf[96];

	if (s->fiber == RBI_PROFILE_NO_FIBER)
		return made_up(p, "(fiber unknown)");
	f = &p->fibers[s->fiber];
	snprintf(buf, sizeof(buf), "Fiber 0x%" PRIx64 " (%sthread %u)", f->fiber,
		 f->root ? "root of " : "", p->threads[f->thread].number);
	return made_up(p, buf);
}

static const struct rbi_sample_frame *line_less(rbi_profile *p, const struct rbi_sample_frame *f)
{
	uint64_t v;

	if (!f->line)
		return f;
	if (rbi_map_get(&p->view_frames, f->id + 1ull, 0, 0, &v))
		return p->ft.v[v];
	const struct rbi_sample_frame *g = rbi_frametab_intern(&p->ft, f->kind, f->label,
							       f->path, 0, f->first_line);
	if (g)
		rbi_map_put(&p->view_frames, f->id + 1ull, 0, 0, g->id);
	return g;
}

/* The node of NODE's stack with every frame line-less (memoized), so
   stacks that differ only in lines are one. */
static int line_less_node(rbi_profile *p, uint32_t node, uint32_t *out)
{
	size_t depth = 0;
	uint32_t n = node, canon = 0;
	uint64_t v;
	int rc;

	/* Up to the first node already known (or the root)... */
	while (n && !rbi_map_get(&p->view_frames, n + 1ull, 0, 2, &v)) {
		if (!RBI_GROW(p->path, p->path_cap, depth + 1, 64))
			return rbi_fail(RBI_NOMEM, "out of memory");
		p->path[depth++] = n;
		n = p->nodes[n].parent;
	}
	if (n)
		canon = (uint32_t)v;
	/* ... then down again, naming each. */
	while (depth) {
		uint32_t m = p->path[--depth];
		const struct rbi_sample_frame *f = line_less(p, p->ft.v[p->nodes[m].frame]);

		if (!f)
			return rbi_fail(RBI_NOMEM, "out of memory");
		if ((rc = node_child(p, canon, f->id, &canon)) ||
		    (rc = rbi_map_put(&p->view_frames, m + 1ull, 0, 2, canon)))
			return rc;
	}
	*out = canon;
	return RBI_OK;
}

/* The frames of sample S as view V shapes it, into p->vframes. */
static int view_stack(rbi_profile *p, const struct rbi_profile_view *v, bool processes,
		      const struct rbi_profile_sample *s, size_t *n_out)
{
	uint32_t flags = v ? v->flags : 0;
	const struct rbi_profile_thread *th = &p->threads[s->thread];
	size_t depth = 0, n = 0;
	char buf[64];

	for (uint32_t node = s->node; node && depth < DEPTH_MAX; node = p->nodes[node].parent) {
		if (!RBI_GROW(p->path, p->path_cap, depth + 1, 64))
			return rbi_fail(RBI_NOMEM, "out of memory");
		p->path[depth++] = p->nodes[node].frame;
	}
	if (!RBI_GROW(p->vframes, p->vframes_cap, depth + 4, 64))
		return rbi_fail(RBI_NOMEM, "out of memory");
	if (processes) {
		snprintf(buf, sizeof(buf), "process %d", (int)th->pid);
		if (!(p->vframes[n++] = made_up(p, buf)))
			return rbi_fail(RBI_NOMEM, "out of memory");
	}
	if ((flags & RBI_VIEW_THREADS) && !(p->vframes[n++] = thread_frame(p, th)))
		return rbi_fail(RBI_NOMEM, "out of memory");
	if ((flags & RBI_VIEW_FIBERS) && !(p->vframes[n++] = fiber_frame(p, s)))
		return rbi_fail(RBI_NOMEM, "out of memory");
	while (depth) {
		const struct rbi_sample_frame *f = p->ft.v[p->path[--depth]];

		if ((flags & RBI_VIEW_NO_LINES) && !(f = line_less(p, f)))
			return rbi_fail(RBI_NOMEM, "out of memory");
		p->vframes[n++] = f;
	}
	if (state_shown(flags, s)) {
		if (s->state == RBI_STATE_GVL_WAIT)
			snprintf(buf, sizeof(buf), "(waiting for the GVL)");
		else
			snprintf(buf, sizeof(buf), "(%s)",
				 rbi_sample_state_name((rbi_sample_state)s->state));
		if (!(p->vframes[n++] = made_up(p, buf)))
			return rbi_fail(RBI_NOMEM, "out of memory");
	}
	*n_out = n;
	return RBI_OK;
}

/* The caller's view V as far as its size reaches (the rest: defaults, 0),
   in *BUF; NULL for none. */
static const struct rbi_profile_view *view_in(const struct rbi_profile_view *v,
					      struct rbi_profile_view *buf)
{
	if (!v)
		return NULL;
	*buf = (struct rbi_profile_view){ 0 };
	RBI_COPY_IN(buf, v);
	return buf;
}

/* The records of V's samples [FIRST, END).  An aggregated profile keeps
   no order: only all of its samples are a range. */
static int view_range(const rbi_profile *p, const struct rbi_profile_view *v,
		      size_t *first, size_t *end)
{
	size_t a = v ? v->first_sample : 0, b = v && v->end_sample ? v->end_sample : SIZE_MAX;

	if (p->aggregated) {
		if (a || b < p->total)
			return rbi_fail(RBI_UNSUPPORTED, "an aggregated profile keeps no order "
					"of samples: no range of them");
		*first = 0;
		*end = p->nsamples;
		return RBI_OK;
	}
	*first = a;
	*end = b < p->nsamples ? b : p->nsamples;
	if (*first > *end)
		*first = *end;
	return RBI_OK;
}

/* How many samples record I stands for. */
static uint64_t record_count(const rbi_profile *p, size_t i)
{
	return p->aggregated ? p->counts[i] : 1;
}

int rbi_profile_foreach_sample(rbi_profile *p, const struct rbi_profile_view *v,
			       rbi_profile_sample_fn fn, void *arg)
{
	bool processes = rbi_profile_nprocesses(p) > 1;
	struct rbi_profile_view vbuf;
	size_t first, end, n;
	int rc;

	if (p->aggregated)
		return rbi_fail(RBI_UNSUPPORTED, "an aggregated profile keeps no samples "
				"one by one, in order");
	v = view_in(v, &vbuf);
	if ((rc = view_range(p, v, &first, &end)))
		return rc;
	for (size_t i = first; i < end; i++) {
		const struct rbi_profile_sample *s = &p->samples[i];

		if (!view_keeps(p, v, s))
			continue;
		if ((rc = view_stack(p, v, processes, s, &n)) ||
		    (rc = fn(s, p->vframes, n, arg)))
			return rc;
	}
	return RBI_OK;
}

/* A distinct stack of a view: a record that has it, and the sums of its
   samples. */
struct stack_sum {
	const struct rbi_profile_sample *record;
	uint64_t count, weight_ns;
};

RBI_EXPORT int rbi_profile_foreach_stack(rbi_profile *p, const struct rbi_profile_view *v,
					 rbi_stack_fn fn, void *arg)
{
	struct rbi_profile_view vbuf;
	uint32_t flags;
	bool processes;
	struct rbi_map idx = { 0 };     /* the stack's key -> index in SUMS */
	struct stack_sum *sums = NULL;
	size_t nsums = 0, sums_cap = 0;
	size_t first, end, n;
	int rc = RBI_OK;

	if (!p || !fn)
		return rbi_fail(RBI_INVAL, "no profile or callback");
	v = view_in(v, &vbuf);
	flags = v ? v->flags : 0;
	processes = rbi_profile_nprocesses(p) > 1;
	if ((rc = view_range(p, v, &first, &end)))
		return rc;
	/* Count samples by what makes their view stack: node, thread (when
	   split or when processes are), fiber (when split), state (when
	   shown).  Distinct stacks come in the order of their first sample,
	   aggregated or not. */
	for (size_t i = first; i < end; i++) {
		const struct rbi_profile_sample *s = &p->samples[i];
		uint64_t b = 0, c = 0, have;

		uint32_t node = s->node;

		if (!view_keeps(p, v, s))
			continue;
		if ((flags & RBI_VIEW_NO_LINES) && (rc = line_less_node(p, s->node, &node)))
			goto out;
		if ((flags & RBI_VIEW_THREADS) || processes)
			b = s->thread + 1ull;
		if ((flags & RBI_VIEW_FIBERS) && s->fiber != RBI_PROFILE_NO_FIBER)
			b |= (s->fiber + 1ull) << 32;
		if (state_shown(flags, s))
			c = s->state + 1ull;
		c |= 1ull << 32;        /* never the empty key */
		if (!rbi_map_get(&idx, node, b, c, &have)) {
			if (!RBI_GROW(sums, sums_cap, nsums + 1, 256)) {
				rc = rbi_fail(RBI_NOMEM, "out of memory");
				goto out;
			}
			have = nsums;
			sums[nsums++] = (struct stack_sum){ .record = s };
			if ((rc = rbi_map_put(&idx, node, b, c, have)))
				goto out;
		}
		sums[have].count += record_count(p, i);
		sums[have].weight_ns += s->weight_ns;
	}
	for (size_t i = 0; i < nsums; i++) {
		if ((rc = view_stack(p, v, processes, sums[i].record, &n)) ||
		    (rc = fn(p->vframes, n, sums[i].count, sums[i].weight_ns, arg)))
			goto out;
	}
out:
	rbi_map_free(&idx);
	free(sums);
	return rc;
}

/* ---- Raw form ----------------------------------------------------------- */

static void put_str(FILE *f, const char *s)
{
	for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c; c++) {
		switch (*c) {
		case '\\': fputs("\\\\", f); break;
		case '\t': fputs("\\t", f); break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		default:
			if (*c < 0x20 || *c == 0x7f)
				fprintf(f, "\\x%02x", *c);
			else
				fputc(*c, f);
		}
	}
}

RBI_EXPORT int rbi_profile_save(const rbi_profile *p, FILE *f)
{
	const struct rbi_sample_stats *st;

	if (!p || !f)
		return rbi_fail(RBI_INVAL, "no profile or file");
	if (p->aggregated)
		return rbi_fail(RBI_UNSUPPORTED, "the raw form keeps every sample, in order: "
				"an aggregated profile has only their sums");
	st = &p->stats;
	fprintf(f, "%s%u\n", RAW_MAGIC, RAW_VERSION);
	for (size_t i = 0; i < p->nmeta; i++) {
		fputs("m\t", f);
		put_str(f, p->meta[i].key);
		fputc('\t', f);
		put_str(f, p->meta[i].value);
		fputc('\n', f);
	}
	for (size_t i = 0; i < p->ft.n; i++) {
		const struct rbi_sample_frame *fr = p->ft.v[i];

		fprintf(f, "f\t%zu\t%d\t%d\t%d\t", i, (int)fr->kind, fr->line, fr->first_line);
		put_str(f, fr->label);
		fputc('\t', f);
		put_str(f, fr->path);
		fputc('\n', f);
	}
	for (size_t i = 0; i < p->nthreads; i++) {
		const struct rbi_profile_thread *th = &p->threads[i];

		fprintf(f, "t\t%zu\t%d\t%u\t%d\t%d\t%" PRIu64 "\t", i, (int)th->pid,
			th->number, (int)th->tid, th->main, th->thread);
		put_str(f, th->name);
		fputc('\n', f);
	}
	for (size_t i = 0; i < p->nfibers; i++)
		fprintf(f, "u\t%zu\t%u\t%" PRIu64 "\t%d\n", i, p->fibers[i].thread,
			p->fibers[i].fiber, p->fibers[i].root);
	for (size_t i = 1; i < p->nnodes; i++)
		fprintf(f, "n\t%zu\t%u\t%u\n", i, p->nodes[i].parent, p->nodes[i].frame);
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct rbi_profile_sample *s = &p->samples[i];

		fprintf(f, "s\t%" PRIu64 "\t%u\t%u\t%u\t%u\t", s->time_ns, s->node, s->thread,
			s->state, s->gc);
		if (s->fiber != RBI_PROFILE_NO_FIBER)
			fprintf(f, "%u", s->fiber);
		fprintf(f, "\t%" PRIu64 "\n", s->weight_ns);
	}
	fprintf(f, "x\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%"
		PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\n",
		st->samples, st->stacks, st->idle, st->errors, st->torn, st->retries,
		st->rescans, st->total_ns, st->max_ns, st->late, st->missed);
	if (fflush(f) || ferror(f))
		return rbi_fail(RBI_SYSTEM, "writing the profile: %s", strerror(errno));
	return RBI_OK;
}

/* Undo put_str in place; false on a bad escape. */
static bool unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (*s != '\\') {
			*o++ = *s;
			continue;
		}
		switch (*++s) {
		case '\\': *o++ = '\\'; break;
		case 't': *o++ = '\t'; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 'x': {
			unsigned v;

			if (!s[1] || !s[2] || sscanf(s + 1, "%2x", &v) != 1 || !v)
				return false;
			*o++ = (char)v;
			s += 2;
			break;
		}
		default:
			return false;
		}
	}
	*o = '\0';
	return true;
}

/* Split LINE at TABs into at most MAX fields; the count. */
static size_t split(char *line, char **f, size_t max)
{
	size_t n = 0;

	while (n < max) {
		f[n++] = line;
		if (!(line = strchr(line, '\t')))
			break;
		*line++ = '\0';
	}
	return n;
}

static bool num(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!*s || *s == '-' || *s == '+')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return false;
	*out = v;
	return true;
}

static bool snum(const char *s, int64_t min, int64_t max, int64_t *out)
{
	char *end;
	long long v;

	if (!*s)
		return false;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

/* What loading a raw record needs besides its fields. */
struct loader {
	rbi_profile *p;
	unsigned version;
	bool stats_seen;
};

/* A record's ID must be the one its entry was interned as: one that repeats
   an earlier entry (or skips one) would renumber what follows. */
static int interned_as(const char *what, uint64_t id, uint32_t got)
{
	if (got != id)
		return rbi_fail(RBI_CORRUPT, "%s %" PRIu64 " repeats %s %u", what, id, what, got);
	return RBI_OK;
}

static int load_meta(struct loader *ld, char **f, size_t n)
{
	(void)n;
	return rbi_profile_set_meta(ld->p, f[1], f[2]);
}

static int load_frame(struct loader *ld, char **f, size_t n)
{
	rbi_profile *p = ld->p;
	const struct rbi_sample_frame *fr;
	uint64_t id;
	int64_t kind, line, first;

	(void)n;
	if (!num(f[1], UINT32_MAX, &id) || id != p->ft.n ||
	    !snum(f[2], RBI_FRAME_RUBY, RBI_FRAME_NATIVE, &kind) ||
	    !snum(f[3], 0, INT32_MAX, &line) || !snum(f[4], 0, INT32_MAX, &first))
		return rbi_fail(RBI_CORRUPT, "bad frame");
	fr = rbi_frametab_intern(&p->ft, (rbi_frame_kind)kind, f[5], *f[6] ? f[6] : NULL,
				 (int)line, (int)first);
	if (!fr)
		return rbi_fail(RBI_NOMEM, "out of memory");
	return interned_as("frame", id, fr->id);
}

static int load_thread(struct loader *ld, char **f, size_t n)
{
	rbi_profile *p = ld->p;
	uint64_t id, number, main, thread;
	int64_t pid, tid;
	uint32_t got;
	int rc;

	(void)n;
	if (!num(f[1], UINT32_MAX, &id) || id != p->nthreads ||
	    !snum(f[2], 0, INT32_MAX, &pid) || !num(f[3], UINT32_MAX, &number) ||
	    !snum(f[4], 0, INT32_MAX, &tid) || !num(f[5], 1, &main) ||
	    !num(f[6], UINT64_MAX, &thread))
		return rbi_fail(RBI_CORRUPT, "bad thread");
	if ((rc = thread_id(p, (pid_t)pid, thread, (int32_t)tid, (unsigned)number,
			    *f[7] ? f[7] : NULL, main, &got)))
		return rc;
	return interned_as("thread", id, got);
}

static int load_node(struct loader *ld, char **f, size_t n)
{
	rbi_profile *p = ld->p;
	uint64_t id, parent, frame;
	uint32_t got;
	int rc;

	(void)n;
	if (!num(f[1], UINT32_MAX, &id) || id != p->nnodes || !num(f[2], id - 1, &parent) ||
	    !num(f[3], p->ft.n ? p->ft.n - 1 : 0, &frame) || !p->ft.n)
		return rbi_fail(RBI_CORRUPT, "bad node");
	if ((rc = node_child(p, (uint32_t)parent, (uint32_t)frame, &got)))
		return rc;
	return interned_as("node", id, got);
}

static int load_fiber(struct loader *ld, char **f, size_t n)
{
	rbi_profile *p = ld->p;
	uint64_t id, thread, fiber, root;
	uint32_t got;
	int rc;

	(void)n;
	if (!num(f[1], UINT32_MAX - 1, &id) || id != p->nfibers || !p->nthreads ||
	    !num(f[2], p->nthreads - 1, &thread) || !num(f[3], UINT64_MAX, &fiber) || !fiber ||
	    !num(f[4], 1, &root))
		return rbi_fail(RBI_CORRUPT, "bad fiber");
	if ((rc = fiber_id(p, (uint32_t)thread, fiber, root, &got)))
		return rc;
	return interned_as("fiber", id, got);
}

/* Before version 2 a sample has no FIBER_ID (unknown), before 3 no
   WEIGHT_NS (one period). */
static int load_sample(struct loader *ld, char **f, size_t n)
{
	rbi_profile *p = ld->p;
	uint64_t time, node, thread, state, gc;
	uint64_t fiber = RBI_PROFILE_NO_FIBER, weight = rbi_profile_period_ns(p);

	if (!num(f[1], UINT64_MAX, &time) || !num(f[2], p->nnodes - 1, &node) ||
	    !p->nthreads || !num(f[3], p->nthreads - 1, &thread) ||
	    !num(f[4], RBI_STATE_GVL_WAIT, &state) || !num(f[5], 1, &gc) ||
	    (n > 6 && *f[6] && (!p->nfibers || !num(f[6], p->nfibers - 1, &fiber) ||
				p->fibers[fiber].thread != thread)) ||
	    (n > 7 && !num(f[7], WEIGHT_MAX, &weight)))
		return rbi_fail(RBI_CORRUPT, "bad sample");
	return push_sample(p, time, (uint32_t)node, (uint32_t)thread, (uint32_t)fiber,
			   (unsigned)state, gc, weight);
}

/* The closing figures, once; before version 4 without missed ticks. */
static int load_figures(struct loader *ld, char **f, size_t n)
{
	uint64_t v[11] = { 0 };

	if (ld->stats_seen)
		return rbi_fail(RBI_CORRUPT, "closing figures twice");
	for (size_t i = 0; i + 1 < n; i++)
		if (!num(f[i + 1], UINT64_MAX, &v[i]))
			return rbi_fail(RBI_CORRUPT, "bad figures");
	struct rbi_sample_stats st = {
		.samples = v[0], .stacks = v[1], .idle = v[2], .errors = v[3],
		.torn = v[4], .retries = v[5], .rescans = v[6], .total_ns = v[7],
		.max_ns = v[8], .late = v[9], .missed = v[10],
	};
	ld->stats_seen = true;
	rbi_profile_add_stats(ld->p, &st);
	return RBI_OK;
}

/* The raw form's records: each one's fields (its tag counted) in each
   version of the format, 0 in a version without it. */
static const struct raw_record {
	char tag;
	uint8_t fields[RAW_VERSION + 1];        /* by version; [0] unused */
	int (*load)(struct loader *ld, char **f, size_t n);
} raw_records[] = {
	{ 'm', { 0, 3, 3, 3, 3 }, load_meta },
	{ 'f', { 0, 7, 7, 7, 7 }, load_frame },
	{ 't', { 0, 8, 8, 8, 8 }, load_thread },
	{ 'u', { 0, 0, 5, 5, 5 }, load_fiber },
	{ 'n', { 0, 4, 4, 4, 4 }, load_node },
	{ 's', { 0, 6, 7, 8, 8 }, load_sample },
	{ 'x', { 0, 11, 11, 11, 12 }, load_figures },
};

#define RAW_FIELDS_MAX 12

static int load_line(struct loader *ld, char *line)
{
	char *f[RAW_FIELDS_MAX];
	size_t n = split(line, f, RBI_ARRAY_SIZE(f));

	for (size_t i = 1; i < n; i++)
		if (!unescape(f[i]))
			return rbi_fail(RBI_CORRUPT, "bad escape");
	for (size_t i = 0; f[0][0] && !f[0][1] && i < RBI_ARRAY_SIZE(raw_records); i++) {
		const struct raw_record *r = &raw_records[i];

		if (r->tag != f[0][0] || !r->fields[ld->version])
			continue;
		if (n != r->fields[ld->version])
			return rbi_fail(RBI_CORRUPT, "a \"%c\" record of %zu fields (version %u "
					"has %u)", r->tag, n, ld->version, r->fields[ld->version]);
		return r->load(ld, f, n);
	}
	return rbi_fail(RBI_CORRUPT, "unknown record \"%.20s\" in version %u", f[0],
			ld->version);
}

/* The format version a raw profile's first line names; 0 if none we read. */
static unsigned raw_version(const char *line)
{
	char magic[32];

	for (unsigned v = 1; v <= RAW_VERSION; v++) {
		snprintf(magic, sizeof(magic), "%s%u", RAW_MAGIC, v);
		if (!strcmp(line, magic))
			return v;
	}
	return 0;
}

static int load(FILE *f, bool aggregate, rbi_profile **out)
{
	rbi_profile *p = NULL;
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	struct loader ld = { 0 };
	size_t cut = 0;
	ssize_t len;
	int rc;

	if (!f || !out)
		return rbi_fail(RBI_INVAL, "no file");
	if ((rc = rbi_profile_new(&p)))
		return rc;
	p->aggregated = aggregate;
	ld.p = p;
	while ((len = rbi_read_line(&line, &cap, f, RAW_LINE_MAX)) != -1) {
		lineno++;
		if (len < 0) {
			rc = rbi_fail(RBI_CORRUPT, "line %zu is longer than %u bytes", lineno,
				      RAW_LINE_MAX);
			break;
		}
		if (len > 0 && line[len - 1] == '\n') {
			line[--len] = '\0';
		} else if (lineno > 1) {
			/* Every record ends in a newline: this one was cut. */
			cut = lineno;
			break;
		}
		if (len >= (ssize_t)RAW_LINE_MAX) {
			rc = rbi_fail(RBI_CORRUPT, "line %zu is too long", lineno);
			break;
		}
		if (lineno == 1) {
			if (!(ld.version = raw_version(line))) {
				rc = rbi_fail(RBI_CORRUPT, "not an rbinspect raw profile "
					      "(it starts \"%.40s\"; want \"%s%u\")", line,
					      RAW_MAGIC, RAW_VERSION);
				break;
			}
			continue;
		}
		if ((rc = load_line(&ld, line))) {
			rbi_fail_context(rc, "raw profile line %zu: ", lineno);
			break;
		}
	}
	if (!rc && lineno == 0)
		rc = rbi_fail(RBI_CORRUPT, "empty file: not an rbinspect raw profile");
	/* The figures are written last: without them the file was cut short
	   (a full disk, a copy interrupted) and holds only some samples. */
	if (!rc && (cut || !ld.stats_seen)) {
		char why[128];

		if (cut)
			snprintf(why, sizeof(why), "line %zu cut short", cut);
		else
			snprintf(why, sizeof(why), "no closing figures after line %zu",
				 lineno);
		rc = rbi_profile_set_meta(p, "incomplete", why);
	}
	if (!rc && ferror(f))
		rc = rbi_fail(RBI_SYSTEM, "reading the profile: %s", strerror(errno));
	free(line);
	if (rc) {
		rbi_profile_free(p);
		return rc;
	}
	*out = p;
	return RBI_OK;
}

RBI_EXPORT int rbi_profile_load(FILE *f, rbi_profile **out)
{
	return load(f, false, out);
}

RBI_EXPORT int rbi_profile_load_aggregated(FILE *f, rbi_profile **out)
{
	return load(f, true, out);
}
