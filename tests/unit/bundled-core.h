/* bundled-core.h: the bundled core (testdata/cores/ruby-3.1-threads.core.xz,
 * Debian's Ruby 3.1 with threads) for the unit tests that read it through a
 * backend of their own: one whose reads lie (test-fuzz.c) or see memory
 * move (test-torn.c).  Such a backend passes everything on to the core's
 * but the reads; its state starts with a struct wrapped. */
#ifndef RBI_TESTS_BUNDLED_CORE_H
#define RBI_TESTS_BUNDLED_CORE_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "mem/target.h"
#include "tap.h"

#ifndef RBI_SRCDIR
#define RBI_SRCDIR "."
#endif
#define CORE_XZ RBI_SRCDIR "/testdata/cores/ruby-3.1-threads.core.xz"

/* The bundled core decompressed into DIR (a mkdtemp template, made here)
   as PATH (CAP bytes: DIR/core), its size in *SIZE.  False, after a TAP
   skip of WHAT (no bundled core) or failure, when it cannot be had; DIR is
   removed then. */
static inline bool bundled_core(const char *what, char *dir, char *path, size_t cap,
				off_t *size)
{
	char cmd[4352];
	struct stat st;

	if (access(CORE_XZ, R_OK) != 0) {
		skip("no bundled core " CORE_XZ, what);
		return false;
	}
	if (!ok(mkdtemp(dir) != NULL, "a work directory"))
		return false;
	snprintf(path, cap, "%s/core", dir);
	snprintf(cmd, sizeof(cmd), "xz -dc '%s' >'%s'", CORE_XZ, path);
	if (!ok(system(cmd) == 0 && stat(path, &st) == 0, "the bundled core decompressed")) {
		unlink(path);
		rmdir(dir);
		return false;
	}
	*size = st.st_size;
	return true;
}

struct wrapped {
	const struct rbi_mem_ops *ops;  /* the wrapped backend's */
	void *be;
};

/* The backend of target T (lib/mem's, reached into as only a test may). */
static inline struct wrapped backend_of(const rbi_target *t)
{
	return (struct wrapped){ t->ops, t->be };
}

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
		.size = sizeof(struct rbi_mem_ops),
		.flags = w->ops->flags & ~RBI_MEM_CONCURRENT,
		.read = read, .read_batch = read_batch, .region = wrapped_region,
		.thread = wrapped_thread, .open_file = wrapped_open_file,
		.signal = wrapped_signal, .registers = wrapped_registers,
	};
}

#endif
