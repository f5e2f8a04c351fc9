/* target.c: reading a target's memory.  Every read of target memory in
 * the library goes through rbi_read() or rbi_target_read(), so the cache
 * and error reporting live in one place. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "mem/target.h"

/* A process that exited and a core file cut short under the session (a
   backend's read fails RBI_TRUNCATED only then) are the same to a walk:
   what it reads from now on is not the target's. */
static int note_gone(struct rbi_target *t, int rc)
{
	if (rc == RBI_GONE || rc == RBI_ZOMBIE || rc == RBI_TRUNCATED)
		__atomic_store_n(&t->gone, rc == RBI_TRUNCATED ? rc : RBI_GONE,
				 __ATOMIC_RELAXED);
	return rc;
}

int rbi_backend_read(struct rbi_target *t, uint64_t addr, void *buf, size_t len,
		     size_t *nread)
{
	unsigned before = rbi_fail_count();
	int rc = t->ops->read(t->be, addr, buf, len, nread);

	return note_gone(t, rbi_fail_unexplained(before, rc, "reading the target's memory"));
}

bool rbi_target_gone_seen(const struct rbi_target *t)
{
	return __atomic_load_n(&t->gone, __ATOMIC_RELAXED) != 0;
}

RBI_EXPORT pid_t rbi_target_pid(const rbi_target *t)
{
	return t ? t->pid : 0;
}

bool rbi_target_is_live(const struct rbi_target *t)
{
	return t->live;
}

bool rbi_target_moves(const struct rbi_target *t)
{
	return t->live && t->paused == RBI_NOT_PAUSED;
}

bool rbi_target_regs_ready(const struct rbi_target *t)
{
	return !t->live || t->paused == RBI_PAUSED_BY_US;
}

bool rbi_target_concurrent(const struct rbi_target *t)
{
	return t->ops->flags & RBI_MEM_CONCURRENT;
}

void rbi_target_forget(struct rbi_target *t)
{
	if (!(t->ops->flags & RBI_MEM_STATIC))
		rbi_cache_clear(&t->cache);
}

int rbi_target_thread_at(struct rbi_target *t, size_t index, struct rbi_thread_regs *out)
{
	unsigned before = rbi_fail_count();

	if (!t->ops->thread)
		return RBI_UNSUPPORTED;
	return rbi_fail_unexplained(before, t->ops->thread(t->be, index, out),
				    "listing the target's threads");
}

int rbi_target_registers(struct rbi_target *t, int32_t tid, struct rbi_registers *out)
{
	unsigned before = rbi_fail_count();

	if (!t->ops->registers)
		return RBI_UNSUPPORTED;
	return rbi_fail_unexplained(before, t->ops->registers(t->be, tid, out),
				    "reading a thread's registers");
}

bool rbi_target_has_registers(const struct rbi_target *t)
{
	return t->ops->registers != NULL;
}

int rbi_target_signal(struct rbi_target *t, struct rbi_signal *out)
{
	unsigned before = rbi_fail_count();

	if (!t->ops->signal)
		return RBI_UNSUPPORTED;
	return rbi_fail_unexplained(before, t->ops->signal(t->be, out),
				    "reading the signal that ended the process");
}

int rbi_fail_gone(const struct rbi_target *t)
{
	if (__atomic_load_n(&t->gone, __ATOMIC_RELAXED) == RBI_TRUNCATED)
		return rbi_fail(RBI_TRUNCATED, "the core file was cut short while "
				"being read: open it again");
	return rbi_fail(RBI_GONE, "process %d has exited", (int)t->pid);
}

RBI_EXPORT int rbi_target_read(rbi_target *t, uint64_t addr, void *buf,
			       size_t len, size_t *nread)
{
	size_t dummy;

	if (!t || (!buf && len))
		return rbi_fail(RBI_INVAL, "invalid read");
	return rbi_cache_read(t, addr, buf, len, nread ? nread : &dummy);
}

RBI_EXPORT int rbi_target_read_batch(rbi_target *t, struct rbi_iov *iov, size_t n)
{
	if (!t || (!iov && n))
		return rbi_fail(RBI_INVAL, "invalid read");
	if (t->ops->read_batch) {
		unsigned before = rbi_fail_count();
		int rc = t->ops->read_batch(t->be, iov, n);

		return note_gone(t, rbi_fail_unexplained(before, rc, "reading the target's memory"));
	}
	for (size_t i = 0; i < n; i++) {
		iov[i].nread = 0;
		iov[i].status = rbi_backend_read(t, iov[i].addr, iov[i].buf,
						 iov[i].len, &iov[i].nread);
		if (iov[i].status != RBI_OK && iov[i].status != RBI_PARTIAL &&
		    iov[i].status != RBI_UNMAPPED)
			return iov[i].status;
	}
	return RBI_OK;
}

int rbi_target_read_fn(void *ctx, uint64_t addr, void *buf, size_t len,
		       size_t *nread)
{
	return rbi_cache_read(ctx, addr, buf, len, nread);
}

int rbi_read_fresh(struct rbi_target *t, uint64_t addr, void *buf, size_t len)
{
	struct rbi_iov iov = { .addr = addr, .buf = buf, .len = len };
	int rc = rbi_target_read_batch(t, &iov, 1);

	if (rc)
		return rc;
	if (iov.status != RBI_OK)
		return rbi_fail(iov.status, "cannot read %zu bytes at 0x%" PRIx64
				" (%zu readable)", len, addr, iov.nread);
	return RBI_OK;
}

int rbi_read(struct rbi_target *t, uint64_t addr, void *buf, size_t len)
{
	size_t n = 0;
	int rc = rbi_cache_read(t, addr, buf, len, &n);

	if (rc == RBI_OK)
		return RBI_OK;
	if (rc == RBI_PARTIAL || rc == RBI_UNMAPPED)
		return rbi_fail(rc, "cannot read %zu bytes at 0x%" PRIx64
				" (%zu readable)", len, addr, n);
	return rc;
}

int rbi_read_u64(struct rbi_target *t, uint64_t addr, uint64_t *out)
{
	return rbi_read(t, addr, out, sizeof(*out));
}

int rbi_read_u32(struct rbi_target *t, uint64_t addr, uint32_t *out)
{
	return rbi_read(t, addr, out, sizeof(*out));
}

int rbi_read_cstr(struct rbi_target *t, uint64_t addr, char *out, size_t cap)
{
	size_t n = 0;
	int rc;

	if (cap == 0)
		return rbi_fail(RBI_INVAL, "no room for a string");
	/* One read of the whole bound: a string may end just before an
	   unmapped page, so a partial read is fine if it holds the NUL. */
	rc = rbi_cache_read(t, addr, out, cap - 1, &n);
	if (rc == RBI_UNMAPPED)
		return rbi_fail(rc, "cannot read string at 0x%" PRIx64, addr);
	if (rc != RBI_OK && rc != RBI_PARTIAL)
		return rc;      /* the backend said why: the process exited... */
	if (!memchr(out, '\0', n)) {
		out[n < cap ? n : cap - 1] = '\0';
		return rbi_fail(RBI_CORRUPT, "string at 0x%" PRIx64
				" not terminated within %zu bytes", addr, cap - 1);
	}
	return RBI_OK;
}

int rbi_target_task(struct rbi_target *t, int32_t tid, int32_t *host)
{
	struct rbi_proc_tasks dir;
	char path[64];
	int h;

	*host = 0;
	if (!t->live)
		return -1;
	if (tid <= 0)
		return 0;
	if (rbi_proc_same_pidns(t->pid)) {
		snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)t->pid, (int)tid);
		if (access(path, F_OK) != 0)
			return 0;
		*host = tid;
		return 1;
	}
	if (rbi_proc_tasks_open(&dir, (int)t->pid))
		return 0;
	while (!*host && (h = rbi_proc_tasks_next(&dir)))
		if (rbi_proc_ns_tid(t->pid, h) == tid)
			*host = h;
	rbi_proc_tasks_close(&dir);
	return *host != 0;
}

int32_t rbi_target_tid_by_pointer(struct rbi_target *t, uint64_t pthread)
{
	struct rbi_thread_regs r;

	if (t->live || !pthread)
		return 0;
	for (size_t i = 0; i < RBI_THREADS_REGS_MAX && rbi_target_thread_at(t, i, &r) == RBI_OK;
	     i++)
		if (r.tp == pthread)
			return r.tid;
	return 0;
}

int32_t rbi_target_leader_tid(struct rbi_target *t)
{
	if (!t->live)
		return 0;
	return rbi_proc_same_pidns(t->pid) ? (int32_t)t->pid : rbi_proc_ns_tid(t->pid, t->pid);
}

int rbi_target_open_file(struct rbi_target *t, const char *path)
{
	int fd;

	if (t->ops->open_file)
		return t->ops->open_file(t->be, path);
	/* A live process's maps name files as this process sees them: the
	   sysroot first, then the name itself. */
	fd = t->sysroot && path[0] == '/' ? rbi_open_regular(t->sysroot, path) : -ENOENT;
	if (fd == -ENOENT)
		fd = rbi_open_regular(NULL, path);
	if (fd == -EINVAL)
		return rbi_fail(RBI_INVAL, "%s is not a regular file: not opened", path);
	if (fd < 0)
		return rbi_fail(fd == -EACCES ? RBI_PERM : fd == -ENOMEM ? RBI_NOMEM : RBI_SYSTEM,
				"cannot open %s: %s", path, strerror(-fd));
	return fd;
}

struct rbi_image_list *rbi_target_images(const struct rbi_target *t)
{
	return t->images;
}

void rbi_target_set_images(struct rbi_target *t, struct rbi_image_list *images)
{
	t->images = images;
}

struct rbi_vm *rbi_target_vm(const struct rbi_target *t)
{
	return t->vm;
}

void rbi_target_set_vm(struct rbi_target *t, struct rbi_vm *vm)
{
	t->vm = vm;
}

const struct rbi_layout_seed *rbi_target_seed(const struct rbi_target *t)
{
	return t->seed;
}

struct rbi_crash_memo *rbi_target_crash_memo(struct rbi_target *t)
{
	return &t->crash;
}

struct rbi_diag *rbi_target_diag(struct rbi_target *t)
{
	return &t->diag;
}

const char *rbi_target_sysroot(const struct rbi_target *t)
{
	return t->sysroot;
}

const char *rbi_target_ruby_version(const struct rbi_target *t)
{
	return t->ruby_version;
}

const char *rbi_target_layout_cache(const struct rbi_target *t)
{
	return t->layout_cache;
}
