/* live.c: the memory of a running process, read without stopping it.
 *
 * process_vm_readv is the fast path (one syscall per batch of reads);
 * /proc/PID/mem is the fallback where the syscall is unavailable (seccomp
 * in some containers: ENOSYS) and can be forced with
 * RBI_NO_PROCESS_VM_READV=1 so the fallback stays tested.  Both need the
 * same permission: ptrace access to the target.
 *
 * process_vm_readv honours the target's page protections, /proc/PID/mem
 * does not (the kernel reads it as a debugger's peek): where the syscall
 * stops at a page it may not read, the rest is read through the file.
 * Ruby's GC.compact makes the heap pages it moves objects out of PROT_NONE
 * until every reference is updated (gc.c lock_page_body, its read
 * barrier), so a String or class whose reference has not been updated yet
 * lies on a page only the file can read. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "internal.h"

#define LIVE_IOV_MAX 1024
#define LIVE_THREADS_MAX 100000

struct live {
	pid_t pid;
	/* Reads may run on several threads (RBI_MEM_CONCURRENT): these two
	   change under them, so they are only touched atomically. */
	int mem_fd;             /* /proc/PID/mem, opened on first fallback */
	int mem_errno;          /* why it could not be opened (tried once) */
	bool use_mem_file;
	bool same_root;         /* the target sees our / (no container) */
	struct rbi_region_list maps;
	bool maps_loaded;
	pid_t *tids;
	size_t ntids;
	bool tids_loaded;
	char path[PATH_MAX + 32];
};

static int fail_perm(pid_t pid, const char *what)
{
	char scope[8] = "";
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");

	if (f) {
		if (!fgets(scope, sizeof(scope), f))
			scope[0] = '\0';
		fclose(f);
		scope[strcspn(scope, "\n")] = '\0';
	}
	return rbi_fail(RBI_PERM,
			"permission denied %s process %d: run as the same user as the "
			"target or as root, or grant CAP_SYS_PTRACE (setcap "
			"cap_sys_ptrace+ep rbinspect)%s%s%s",
			what, (int)pid,
			scope[0] && strcmp(scope, "0") ? "; kernel.yama.ptrace_scope is " : "",
			scope[0] && strcmp(scope, "0") ? scope : "",
			scope[0] && strcmp(scope, "0") ? " (set it to 0, or use CAP_SYS_PTRACE)" : "");
}

/* Status for a failed access to the process itself (not to an address). */
static int fail_errno(pid_t pid, int err, const char *what)
{
	if (err == ESRCH || err == ENOENT)
		return rbi_fail(RBI_GONE, "process %d has exited", (int)pid);
	if (err == EPERM || err == EACCES)
		return fail_perm(pid, what);
	return rbi_fail(RBI_SYSTEM, "%s process %d: %s", what, (int)pid, strerror(err));
}

/* /proc/PID/mem, opened once: a thread that loses the race to open it
   uses the winner's descriptor. */
static int mem_file_fd(struct live *l)
{
	int fd = __atomic_load_n(&l->mem_fd, __ATOMIC_ACQUIRE), none = -1;
	char path[64];

	int err = __atomic_load_n(&l->mem_errno, __ATOMIC_RELAXED);

	if (fd >= 0)
		return fd;
	/* Refused once, refused always: not tried again, or every read of a
	   protected page would pay for it. */
	if (err)
		return fail_errno(l->pid, err, "opening memory of");
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)l->pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		err = errno;
		if (err == EACCES || err == EPERM)
			__atomic_store_n(&l->mem_errno, err, __ATOMIC_RELAXED);
		return fail_errno(l->pid, err, "opening memory of");
	}
	if (!__atomic_compare_exchange_n(&l->mem_fd, &none, fd, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		close(fd);
		fd = none;
	}
	return fd;
}

static int mem_file_read(struct live *l, uint64_t addr, void *buf, size_t len,
			 size_t *nread)
{
	size_t done = 0;
	int fd = mem_file_fd(l);

	if (fd < 0) {
		*nread = 0;
		return fd;
	}
	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done,
				  (off_t)(addr + done));
		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EIO && errno != EFAULT && done == 0) {
			*nread = 0;
			return fail_errno(l->pid, errno, "reading");
		}
		break;
	}
	*nread = done;
	return done == len ? RBI_OK : done ? RBI_PARTIAL : RBI_UNMAPPED;
}

/* The rest of a read process_vm_readv stopped DONE bytes into: through
   /proc/PID/mem, which also reads pages the target protected (PROT_NONE);
   what the syscall read stands if the file cannot be opened. */
static int protected_read(struct live *l, uint64_t addr, void *buf, size_t len,
			  size_t done, size_t *nread)
{
	size_t more = 0;

	mem_file_read(l, addr + done, (char *)buf + done, len - done, &more);
	*nread = done + more;
	return *nread == len ? RBI_OK : *nread ? RBI_PARTIAL : RBI_UNMAPPED;
}

static int live_read(void *be, uint64_t addr, void *buf, size_t len, size_t *nread)
{
	struct live *l = be;
	size_t done = 0;

	if (__atomic_load_n(&l->use_mem_file, __ATOMIC_RELAXED))
		return mem_file_read(l, addr, buf, len, nread);
	/* process_vm_readv stops at the first unreadable page and reports how
	   far it got; loop for the kernel's own short reads. */
	while (done < len) {
		struct iovec local = { (char *)buf + done, len - done };
		struct iovec remote = { (void *)(uintptr_t)(addr + done), len - done };
		ssize_t n = process_vm_readv(l->pid, &local, 1, &remote, 1, 0);

		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == ENOSYS) {
			__atomic_store_n(&l->use_mem_file, true, __ATOMIC_RELAXED);
			size_t m = 0;
			int rc = mem_file_read(l, addr + done, (char *)buf + done,
					       len - done, &m);
			*nread = done + m;
			return rc == RBI_UNMAPPED && done ? RBI_PARTIAL : rc;
		}
		if (n < 0 && errno != EFAULT && errno != EIO && done == 0) {
			*nread = 0;
			return fail_errno(l->pid, errno, "reading");
		}
		return protected_read(l, addr, buf, len, done, nread);
	}
	*nread = done;
	return RBI_OK;
}

/* Many small reads in few syscalls.  The kernel stops at the first iov it
   cannot complete; that one is retried alone to learn its own status, and
   the batch goes on after it. */
static int live_read_batch(void *be, struct rbi_iov *iov, size_t n)
{
	struct live *l = be;
	struct iovec local[LIVE_IOV_MAX], remote[LIVE_IOV_MAX];
	size_t i = 0;

	while (i < n) {
		size_t k = n - i < LIVE_IOV_MAX ? n - i : LIVE_IOV_MAX;
		ssize_t got = -1;

		if (!__atomic_load_n(&l->use_mem_file, __ATOMIC_RELAXED)) {
			for (size_t j = 0; j < k; j++) {
				local[j] = (struct iovec){ iov[i + j].buf, iov[i + j].len };
				remote[j] = (struct iovec){ (void *)(uintptr_t)iov[i + j].addr,
							    iov[i + j].len };
			}
			got = process_vm_readv(l->pid, local, k, remote, k, 0);
		}
		size_t full = 0;
		for (; full < k && got >= 0 && (size_t)got >= iov[i + full].len; full++) {
			got -= (ssize_t)iov[i + full].len;
			iov[i + full].nread = iov[i + full].len;
			iov[i + full].status = RBI_OK;
		}
		i += full;
		if (i < n) {
			struct rbi_iov *v = &iov[i];

			v->status = live_read(l, v->addr, v->buf, v->len, &v->nread);
			if (v->status != RBI_OK && v->status != RBI_PARTIAL &&
			    v->status != RBI_UNMAPPED)
				return v->status;
			i++;
		}
	}
	return RBI_OK;
}

/* A zombie has no memory left to read; say so rather than "not Ruby". */
static int check_state(pid_t pid)
{
	char path[64], state;
	int rc;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	rc = rbi_proc_stat(path, &state, NULL);
	if (rc == -ENOENT)
		return rbi_fail(RBI_NO_PROCESS, "no such process: %d", (int)pid);
	if (rc && rc != -EINVAL)
		return fail_errno(pid, -rc, "inspecting");
	if (!rc && (state == 'Z' || state == 'X'))
		return rbi_fail(RBI_ZOMBIE, "process %d has exited and is a zombie "
				"waiting for its parent: nothing left to inspect", (int)pid);
	return RBI_OK;
}

/* "/usr/lib/libfoo.so (deleted)" still names the mapped file. */
static char *maps_path(char *s)
{
	size_t n;

	while (*s == ' ')
		s++;
	n = strcspn(s, "\n");
	s[n] = '\0';
	if (*s != '/')
		return NULL;     /* anonymous, [heap], [stack], [vdso] */
	if (n > 10 && !strcmp(s + n - 10, " (deleted)"))
		s[n - 10] = '\0';
	return s;
}

static int maps_load(struct live *l)
{
	char *line = NULL;
	size_t linecap = 0, cap = 0;
	FILE *f;
	int rc = RBI_OK;

	snprintf(l->path, sizeof(l->path), "/proc/%d/maps", (int)l->pid);
	f = fopen(l->path, "re");
	if (!f)
		return fail_errno(l->pid, errno, "reading the mappings of");
	while (getline(&line, &linecap, f) > 0) {
		struct rbi_region r = { 0 };
		char perms[8];
		unsigned long long start, end, off;
		int pos = 0;

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s%n", &start, &end,
			   perms, &off, &pos) < 4 || pos == 0)
			continue;
		r.start = start;
		r.end = end;
		r.file_offset = off;
		r.prot = (perms[0] == 'r' ? RBI_PROT_READ : 0) |
			 (perms[1] == 'w' ? RBI_PROT_WRITE : 0) |
			 (perms[2] == 'x' ? RBI_PROT_EXEC : 0);
		const char *p = maps_path(line + pos);
		if (!RBI_GROW(l->maps.v, cap, l->maps.n + 1, 128)) {
			rc = rbi_fail(RBI_NOMEM, "out of memory");
			break;
		}
		if (p && !(r.path = strdup(p))) {
			rc = rbi_fail(RBI_NOMEM, "out of memory");
			break;
		}
		l->maps.v[l->maps.n++] = r;
	}
	free(line);
	fclose(f);
	/* No mapping at all: an exiting process, or one that maps nothing
	   (a kernel thread) or nothing yet (between exec's new, empty address
	   space and the loader's first mapping). */
	if (rc == RBI_OK && l->maps.n == 0) {
		rc = check_state(l->pid);
		if (rc == RBI_OK)
			rc = rbi_fail(RBI_NOT_RUBY, "process %d maps no memory (a kernel "
				      "thread, or a program being started): not a Ruby "
				      "process", (int)l->pid);
		else if (rc == RBI_NO_PROCESS)
			rc = fail_errno(l->pid, ESRCH, "reading");
	}
	l->maps_loaded = rc == RBI_OK;
	return rc;
}

static int live_region(void *be, size_t index, struct rbi_region *out)
{
	struct live *l = be;

	if (!l->maps_loaded) {
		rbi_region_list_free(&l->maps);
		int rc = maps_load(l);
		if (rc)
			return rc;
	}
	if (index >= l->maps.n)
		return RBI_ITER_END;
	*out = l->maps.v[index];
	return RBI_OK;
}

static int tids_load(struct live *l)
{
	struct rbi_proc_tasks d;
	size_t cap = 0;
	int tid, rc;

	if ((rc = rbi_proc_tasks_open(&d, (int)l->pid)))
		return fail_errno(l->pid, -rc, "listing the threads of");
	while (l->ntids < LIVE_THREADS_MAX && (tid = rbi_proc_tasks_next(&d))) {
		if (!RBI_GROW(l->tids, cap, l->ntids + 1, 16)) {
			rbi_proc_tasks_close(&d);
			return rbi_fail(RBI_NOMEM, "out of memory");
		}
		l->tids[l->ntids++] = (pid_t)tid;
	}
	rbi_proc_tasks_close(&d);
	l->tids_loaded = true;
	return RBI_OK;
}

/* Thread ids only: registers would need a ptrace stop, which the live
   backend never does. */
static int live_thread(void *be, size_t index, struct rbi_thread_regs *out)
{
	struct live *l = be;

	if (!l->tids_loaded) {
		int rc = tids_load(l);
		if (rc)
			return rc;
	}
	if (index >= l->ntids)
		return RBI_ITER_END;
	*out = (struct rbi_thread_regs){ .tid = l->tids[index] };
	return RBI_OK;
}

static void live_refresh(void *be)
{
	struct live *l = be;

	rbi_region_list_free(&l->maps);
	l->maps_loaded = false;
	free(l->tids);
	l->tids = NULL;
	l->ntids = 0;
	l->tids_loaded = false;
}

/* Paths in /proc/PID/maps are as the target sees them.  In another mount
   namespace (a container) they are reachable under /proc/PID/root; a plain
   chroot instead shows paths relative to our own root, so try both.  A
   process can map a device (a GPU's, /dev/zero): only regular files are
   opened (rbi_open_regular), since opening a device can act. */
static int live_open_file(void *be, const char *path)
{
	struct live *l = be;
	int fd = -ENOENT;

	if (!l->same_root) {
		snprintf(l->path, sizeof(l->path), "/proc/%d/root", (int)l->pid);
		fd = rbi_open_regular(l->path, path);
	}
	if (fd < 0 && fd != -EINVAL)
		fd = rbi_open_regular(NULL, path);
	if (fd == -EINVAL)
		return rbi_fail(RBI_INVAL, "%s (mapped by process %d) is not a regular file: "
				"not opened", path, (int)l->pid);
	if (fd < 0)
		return rbi_fail(fd == -EACCES ? RBI_PERM : RBI_SYSTEM,
				"cannot open %s (mapped by process %d): %s", path,
				(int)l->pid, strerror(-fd));
	return fd;
}

static void live_close(void *be)
{
	struct live *l = be;

	if (!l)
		return;
	if (l->mem_fd >= 0)
		close(l->mem_fd);
	live_refresh(l);
	free(l);
}

/* Only while the library holds TID stopped (rbi_native_foreach). */
static int live_registers(void *be, int32_t tid, struct rbi_registers *out)
{
	(void)be;
	return rbi_task_registers(tid, out);
}

static const struct rbi_mem_ops live_ops = {
	.size = sizeof(struct rbi_mem_ops),
	.flags = RBI_MEM_CONCURRENT,
	.read = live_read,
	.read_batch = live_read_batch,
	.region = live_region,
	.thread = live_thread,
	.refresh = live_refresh,
	.open_file = live_open_file,
	.close = live_close,
	.registers = live_registers,
};

static bool same_root(pid_t pid)
{
	char path[64];
	struct stat ours, theirs;

	snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
	if (stat("/", &ours) || stat(path, &theirs))
		return true;
	return ours.st_dev == theirs.st_dev && ours.st_ino == theirs.st_ino;
}

/* Prove up front that we may read: maps are readable by more users than
   memory is, so read a byte of the first readable mapping. */
static int check_access(struct live *l)
{
	struct rbi_region r;
	int rc;

	for (size_t i = 0; (rc = live_region(l, i, &r)) == RBI_OK; i++) {
		uint8_t b;
		size_t n;

		if (!(r.prot & RBI_PROT_READ))
			continue;
		rc = live_read(l, r.start, &b, 1, &n);
		if (rc == RBI_UNMAPPED)
			continue;
		return rc;
	}
	return rc == RBI_ITER_END ? RBI_OK : rc;
}

int rbi_mem_live_open(pid_t pid, const struct rbi_mem_ops **ops, void **be)
{
	const char *force = getenv("RBI_NO_PROCESS_VM_READV");
	struct live *l;
	int rc = check_state(pid);

	if (rc)
		return rc;
	l = calloc(1, sizeof(*l));
	if (!l)
		return rbi_fail(RBI_NOMEM, "out of memory");
	l->pid = pid;
	l->mem_fd = -1;
	l->use_mem_file = force && *force && strcmp(force, "0");
	l->same_root = same_root(pid);
	rc = check_access(l);
	if (rc == RBI_GONE)
		rc = check_state(pid) ? check_state(pid) : rc;
	if (rc) {
		live_close(l);
		return rc;
	}
	*ops = &live_ops;
	*be = l;
	return RBI_OK;
}
