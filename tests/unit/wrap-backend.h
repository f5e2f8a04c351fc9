/* wrap-backend.h: a memory backend over another (the bundled core's) that
 * passes everything on but the reads, for the unit tests whose reads lie
 * (test-fuzz.c) or see memory move (test-torn.c).  A wrapper's state
 * starts with a struct wrapped. */
#ifndef RBI_TESTS_WRAP_BACKEND_H
#define RBI_TESTS_WRAP_BACKEND_H

#include <fcntl.h>

#include "internal.h"

struct wrapped {
	const struct rbi_mem_ops *ops;  /* the wrapped backend's */
	void *be;
};

static int wrapped_region(void *be, size_t i, struct rbi_region *out)
{
	const struct wrapped *w = be;
	return w->ops->region(w->be, i, out);
}

static int wrapped_thread(void *be, size_t i, struct rbi_thread_regs *out)
{
	const struct wrapped *w = be;
	return w->ops->thread ? w->ops->thread(w->be, i, out) : RBI_ITER_END;
}

static int wrapped_open_file(void *be, const char *path)
{
	const struct wrapped *w = be;
	return w->ops->open_file ? w->ops->open_file(w->be, path) :
	       open(path, O_RDONLY | O_CLOEXEC);
}

static int wrapped_signal(void *be, struct rbi_signal *out)
{
	const struct wrapped *w = be;
	return w->ops->signal ? w->ops->signal(w->be, out) : RBI_ITER_END;
}

static int wrapped_registers(void *be, int32_t tid, struct rbi_registers *out)
{
	const struct wrapped *w = be;
	return w->ops->registers ? w->ops->registers(w->be, tid, out) : RBI_ITER_END;
}

/* Ops for a wrapper of W with its own READ and READ_BATCH (may be NULL).
   Not concurrent: a wrapper's reads are one sequence. */
static inline struct rbi_mem_ops wrapped_ops(const struct wrapped *w,
					     int (*read)(void *, uint64_t, void *, size_t, size_t *),
					     int (*read_batch)(void *, struct rbi_iov *, size_t))
{
	return (struct rbi_mem_ops){
		.version = w->ops->version,
		.flags = w->ops->flags & ~RBI_MEM_CONCURRENT,
		.read = read, .read_batch = read_batch, .region = wrapped_region,
		.thread = wrapped_thread, .open_file = wrapped_open_file,
		.signal = wrapped_signal, .registers = wrapped_registers,
	};
}

#endif
