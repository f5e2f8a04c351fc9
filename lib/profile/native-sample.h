/* native-sample.h: sampled stacks with their native frames
 * (RBI_SAMPLER_NATIVE), for the sampler (sampler.c). */
#ifndef RBI_NATIVE_SAMPLE_H
#define RBI_NATIVE_SAMPLE_H

#include "internal.h"

/* One thread's stack from one sample. */
struct rbi_native_sample {
	int rc;                 /* RBI_OK, or why the thread was not read */
	const struct rbi_sample_frame **frames;         /* outermost first */
	size_t n, cap;
	bool truncated;
	bool merged;            /* native and Ruby frames; else Ruby only */
	char why[RBI_ERRMSG_MAX];       /* not merged, or not read: why */
	uint64_t stopped_ns;
};

struct rbi_native_sampler;

/* For live target T, whose threads it checks we may stop (RBI_PERM ...). */
int rbi_native_sampler_new(struct rbi_target *t, struct rbi_native_sampler **out);
void rbi_native_sampler_free(struct rbi_native_sampler *s);
/* Thread TH's stack now into slot SLOT (0, 1, ... as the caller numbers
   its threads), innermost MAX_FRAMES lines at most (0: all): the thread,
   HOST_TID as our /proc numbers it (0: look it up), is held
   stopped while it is read.  Returns the slot, its RC set; NULL when out
   of memory.  A slot stays where it is until the sampler is freed. */
const struct rbi_native_sample *rbi_native_sample_read(struct rbi_native_sampler *s,
							const struct rbi_thread *th,
							int32_t host_tid, size_t slot,
							size_t max_frames);

#endif
