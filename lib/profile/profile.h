/* profile.h: what lib/profile shares with the renderers (lib/out). */
#ifndef RBI_PROFILE_H
#define RBI_PROFILE_H

#include "internal.h"
#include "util/table.h"

/* A thread as a profile knows it. */
struct rbi_profile_thread {
	uint32_t id;            /* index in the profile */
	pid_t pid;
	uint64_t thread;
	int32_t tid;
	unsigned number;
	const char *name;       /* interned; NULL if none */
	bool main;
};

/* One kept sample. */
struct rbi_profile_sample {
	uint64_t time_ns;       /* CLOCK_MONOTONIC of the recording machine */
	uint32_t node;          /* its stack: a node of the call tree */
	uint32_t thread;        /* index into the threads */
	uint32_t fiber;         /* index into the fibers; RBI_PROFILE_NO_FIBER */
	uint8_t state;          /* rbi_sample_state */
	uint8_t gc;
	uint64_t weight_ns;     /* rbi_sample.weight_ns */
};

/* A sample whose fiber is not known (a Ruby without the layout, a raw
   profile of version 1). */
#define RBI_PROFILE_NO_FIBER UINT32_MAX

size_t rbi_profile_nthreads(const rbi_profile *p);
const struct rbi_profile_thread *rbi_profile_thread_at(const rbi_profile *p, size_t i);
/* Distinct processes of the samples. */
size_t rbi_profile_nprocesses(const rbi_profile *p);
/* Frames by id (rbi_sample_frame.id of a frame the profile handed out). */
size_t rbi_profile_nframes(const rbi_profile *p);
const struct rbi_sample_frame *rbi_profile_frame_at(const rbi_profile *p, size_t id);
/* The sampling period from the "rate" metadata (10 ms if unknown): the
   weight of samples from raw profiles that did not record one. */
uint64_t rbi_profile_period_ns(const rbi_profile *p);
/* What the weights measure, from the "mode" metadata: "cpu" (CPU time),
   else "wall" (wall time, as recordings made before modes). */
const char *rbi_profile_mode(const rbi_profile *p);

/* Add ST's figures to TO's (MAX_NS: the larger). */
void rbi_sample_stats_sum(struct rbi_sample_stats *to, const struct rbi_sample_stats *st);

/* The figures of a recording under way (its open samplers', the ticks
   late and missed so far), which rbi_profile_stats adds to the profile's
   own until they are set to zeros. */
void rbi_profile_set_live_stats(rbi_profile *p, const struct rbi_sample_stats *st);

/* When more than a fifth of the stacks tried could not be read (errors,
   torn), the metadata "warning" says how many: the profile shows the rest
   as if it were the whole. */
void rbi_profile_warn_lost(rbi_profile *p);

/* The records P keeps: a sample each, or (aggregated) one per distinct
   (stack, thread, fiber, state, gc).  What tests measure memory by. */
size_t rbi_profile_nrecords(const rbi_profile *p);

/* Callback for each sample of a view, in the order recorded, with its
   stack as the view shapes it.  RBI_UNSUPPORTED for an aggregated
   profile. */
typedef int (*rbi_profile_sample_fn)(const struct rbi_profile_sample *s,
				     const struct rbi_sample_frame *const *frames,
				     size_t n, void *arg);
int rbi_profile_foreach_sample(rbi_profile *p, const struct rbi_profile_view *view,
			       rbi_profile_sample_fn fn, void *arg);

/* rbi_profile_add, with CACHE mapping the sampler's frame pointers to the
   profile's own frames (the cache must not outlive the sampler). */
int rbi_profile_add_mapped(rbi_profile *p, const struct rbi_sample *s,
			   struct rbi_map *cache);

/* How a recording opens and frees the targets of the processes it
   samples: the session's rbi_target_open_pid and rbi_target_free, handed
   down by rbi_profile_record (session.c), since lib/profile sits below
   the session and never calls up into it. */
struct rbi_record_targets {
	/* rbi_target_open_pid_seeded and rbi_target_layout_seed (internal.h):
	   a process opened reuses the DWARF layout read for another one of
	   the same build. */
	int (*open_pid)(pid_t pid, const struct rbi_open_opts *opts,
			struct rbi_layout_seed *seed, rbi_target **out);
	struct rbi_layout_seed *(*layout_seed)(rbi_target *t);
	void (*free_target)(rbi_target *t);
};

/* rbi_profile_record (record.c), opening processes through TARGETS. */
int rbi_record_run(rbi_profile *p, pid_t pid, const struct rbi_record_opts *opts,
		   const struct rbi_record_targets *targets);

#endif
