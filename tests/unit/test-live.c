/* test-live.c: the live backend and the target layer on a real child
 * process: reads, partial and unmapped reads, batched reads (with and
 * without process_vm_readv), regions, the cache and refresh (which keeps
 * the images until the files mapped change), files opened only when regular,
 * pages the process made
 * PROT_NONE (as Ruby's GC.compact does), a process that exits, pids
 * that are not there, and the kernel's random bytes that tell an exec
 * with address randomization off.  TAP output. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "tap.h"

struct child {
	pid_t pid;
	int cmd;                /* write 'c': the child bumps its counter;
				   'm': it maps a file and says when;
				   'p': it makes its last page PROT_NONE */
	int ack;
	uint64_t base;          /* 3 pages; the middle one unmapped */
	long page;
};

/* The child's side: map three pages, unmap the middle one, fill the others
   with a pattern, say where (on OUT), then run the commands read from IN
   until it reads EOF. */
static void child_run(long page, int in, int out)
{
	uint8_t *p = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t a = (uintptr_t)p;
	char b;

	if (p == MAP_FAILED)
		_exit(1);
	munmap(p + page, page);
	for (long i = 0; i < page; i++) {
		p[i] = (uint8_t)i;
		p[2 * page + i] = (uint8_t)~i;
	}
	if (write(out, &a, sizeof(a)) != sizeof(a))
		_exit(1);
	while (read(in, &b, 1) == 1) {
		if (b == 'c') {
			p[0]++;
		} else if (b == 'm') {
			int fd = open("/proc/self/exe", O_RDONLY);

			/* Two pages: too big for the hole. */
			if (fd < 0 || mmap(NULL, 2 * page, PROT_READ, MAP_PRIVATE, fd, 0) ==
				      MAP_FAILED || write(out, &b, 1) != 1)
				_exit(1);
		} else if (b == 'p') {
			if (mprotect(p + 2 * page, page, PROT_NONE) || write(out, &b, 1) != 1)
				_exit(1);
		}
	}
	_exit(0);
}

static int child_start(struct child *c)
{
	int up[2], down[2];

	c->page = sysconf(_SC_PAGESIZE);
	if (pipe(up) || pipe(down))
		return -1;
	c->pid = fork();
	if (c->pid < 0)
		return -1;
	if (c->pid == 0) {
		/* Only the parent holds the command pipe's write end: when it dies
		   the child's read sees EOF and the child ends too. */
		close(down[1]);
		close(up[0]);
		child_run(c->page, down[0], up[1]);
	}
	close(up[1]);
	close(down[0]);
	c->cmd = down[1];
	c->ack = up[0];
	return read(up[0], &c->base, sizeof(c->base)) == sizeof(c->base) ? 0 : -1;
}

static void test_reads(rbi_target *t, const struct child *c, const char *how)
{
	uint8_t buf[64], want[64];
	size_t n = 0;
	int rc;

	for (int i = 0; i < 64; i++)
		want[i] = (uint8_t)(i + 16);
	rc = rbi_target_read(t, c->base + 16, buf, sizeof(buf), &n);
	check(rc == RBI_OK && n == 64 && !memcmp(buf, want, 64), "%s: read", how);
	rc = rbi_target_read(t, c->base + c->page - 8, buf, 16, &n);
	check(rc == RBI_PARTIAL && n == 8, "%s: read into a hole is partial (%zu)", how, n);
	rc = rbi_target_read(t, c->base + c->page + 8, buf, 16, &n);
	check(rc == RBI_UNMAPPED && n == 0, "%s: read of a hole is unmapped", how);

	/* Skip byte 0: test_refresh() makes the child change it. */
	enum { N = 300 };
	struct rbi_iov iov[N];
	static uint8_t bufs[N][8];
	for (int i = 0; i < N; i++) {
		int page = i % 3;
		iov[i] = (struct rbi_iov){ .addr = c->base + page * c->page + 8 + i,
					   .buf = bufs[i], .len = 8 };
	}
	rc = rbi_target_read_batch(t, iov, N);
	bool good = rc == RBI_OK;
	for (int i = 0; i < N && good; i++) {
		int page = i % 3;
		if (page == 1) {
			good = iov[i].status == RBI_UNMAPPED && iov[i].nread == 0;
			continue;
		}
		good = iov[i].status == RBI_OK && iov[i].nread == 8 &&
		       bufs[i][0] == (uint8_t)(page ? ~(8 + i) : 8 + i);
	}
	check(good, "%s: %d batched reads, a third of them unmapped", how, N);
}

static void test_regions(rbi_target *t, const struct child *c)
{
	const struct rbi_region_list *l;
	const struct rbi_region *r;

	check(rbi_regions(t, &l) == RBI_OK && l->n > 3, "regions listed");
	r = rbi_region_find(l, c->base);
	check(r && r->start == c->base && r->end == c->base + c->page &&
	      r->prot == (RBI_PROT_READ | RBI_PROT_WRITE) && !r->path,
	      "the child's first page is one anonymous rw region");
	check(!rbi_region_find(l, c->base + c->page), "the hole is in no region");
}

/* A page the target may not read itself (Ruby's GC.compact locks the heap
   pages it moves objects out of) is read all the same, alone, across the
   end of a readable page and in a batch. */
static void test_protected(const struct child *c)
{
	uint8_t buf[16], want[16], ack;
	struct rbi_iov iov[2];
	rbi_target *t;
	size_t n = 0;
	bool good;
	int rc;

	if (write(c->cmd, "p", 1) != 1 || read(c->ack, &ack, 1) != 1) {
		check(false, "the child made its last page PROT_NONE");
		return;
	}
	if (rbi_target_open_pid(c->pid, NULL, &t)) {
		check(false, "open the child again: %s", rbi_errmsg());
		return;
	}
	for (int i = 0; i < 16; i++)
		want[i] = (uint8_t)~(8 + i);
	rc = rbi_target_read(t, c->base + 2 * c->page + 8, buf, sizeof(buf), &n);
	check(rc == RBI_OK && n == 16 && !memcmp(buf, want, 16),
	      "a PROT_NONE page is read (%d, %zu bytes)", rc, n);
	iov[0] = (struct rbi_iov){ .addr = c->base + 8, .buf = buf, .len = 8 };
	iov[1] = (struct rbi_iov){ .addr = c->base + 2 * c->page + 8, .buf = buf + 8,
				   .len = 8 };
	rc = rbi_target_read_batch(t, iov, 2);
	good = rc == RBI_OK && iov[0].status == RBI_OK && iov[1].status == RBI_OK &&
	       buf[0] == 8 && !memcmp(buf + 8, want, 8);
	check(good, "so is it in a batch, beside a readable page");
	rbi_target_free(t);
}

/* Files the maps name are opened only when regular: a device can act on
   open. */
static void test_open_file(rbi_target *t)
{
	int fd = rbi_target_open_file(t, "/proc/self/exe");

	check(fd >= 0, "a regular file the process could map opens (%d)", fd);
	if (fd >= 0)
		close(fd);
	fd = rbi_target_open_file(t, "/dev/null");
	check(fd == RBI_INVAL && strstr(rbi_errmsg(), "not a regular file"),
	      "a device is not opened (%d: %s)", fd, rbi_errmsg());
}

static void test_refresh(rbi_target *t, const struct child *c)
{
	uint8_t before = 0xff, cached = 0xff, after = 0xff;
	struct rbi_image_list *images = NULL;
	char b = 'c';

	check(rbi_images_load(t, &images) == RBI_OK && images, "images load");
	rbi_target_read(t, c->base, &before, 1, NULL);
	if (write(c->cmd, &b, 1) != 1)
		return;
	usleep(100000);
	rbi_target_read(t, c->base, &cached, 1, NULL);
	rbi_target_refresh(t);
	rbi_target_read(t, c->base, &after, 1, NULL);
	check(cached == before, "reads are cached until refresh");
	check(after == (uint8_t)(before + 1), "refresh re-reads a moving target");
	check(rbi_target_images(t) == images, "refresh keeps the images while the same files are mapped");

	b = 'm';
	if (write(c->cmd, &b, 1) != 1 || read(c->ack, &b, 1) != 1)
		return;
	rbi_target_refresh(t);
	check(!rbi_target_images(t), "refresh drops the images once another file is mapped");
	check(rbi_images_load(t, &images) == RBI_OK && images, "and they load again");
}

/* The child of test_exec_nonce: "nonce-a" waits for a byte on fd 3, then
   runs this program again as "nonce-b" (same path, same length: the same
   stack), which says so on fd 4 and waits to be killed. */
static int nonce_child(const char *mode)
{
	char c = 'b';

	if (!strcmp(mode, "nonce-a")) {
		if (read(3, &c, 1) == 1)
			execl("/proc/self/exe", "test-live", "nonce-b", (char *)NULL);
		_exit(1);
	}
	if (write(4, &c, 1) == 1)
		pause();
	_exit(1);
}

/* What record follows an exec by when nothing else moves (ASLR off, the
   same program and arguments): the 16 bytes at AT_RANDOM.  Truth: our own
   getauxval(AT_RANDOM); a child started twice with randomization off has
   them at the same address, and new ones after its second exec. */
static void test_exec_nonce(void)
{
	uint64_t at = rbi_proc_at_random(getpid()), n1, n2, at1 = 0, at2;
	int go[2], done[2];
	char path[64], cmd[64] = "";
	pid_t pid;

	check(at && at == getauxval(AT_RANDOM), "AT_RANDOM from /proc/PID/auxv as getauxval says");
	check(rbi_proc_exec_nonce(getpid(), at) &&
	      rbi_proc_exec_nonce(getpid(), at) == rbi_proc_exec_nonce(getpid(), at),
	      "the exec nonce of this process: known, the same when read again");
	check(!rbi_proc_exec_nonce(getpid(), 8) && !rbi_proc_at_random(0x7fffffff),
	      "an unmapped address, a pid not there: unknown (0)");
	if (pipe(go) || pipe(done) || (pid = fork()) < 0) {
		skip("cannot start a child", "exec nonce");
		return;
	}
	if (!pid) {
		dup2(go[0], 3);
		dup2(done[1], 4);
		if (personality(ADDR_NO_RANDOMIZE) != -1)
			execl("/proc/self/exe", "test-live", "nonce-a", (char *)NULL);
		_exit(1);
	}
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	for (int i = 0; i < 500 && !strstr(cmd, "nonce-a"); i++) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t k = fd >= 0 ? read(fd, cmd, sizeof(cmd) - 1) : -1;

		if (fd >= 0)
			close(fd);
		cmd[k > 0 ? k : 0] = '\0';
		for (ssize_t j = 0; j < k; j++)
			cmd[j] = cmd[j] ? cmd[j] : ' ';
		if (!strstr(cmd, "nonce-a"))
			usleep(10000);
	}
	if (strstr(cmd, "nonce-a")) {
		at1 = rbi_proc_at_random(pid);
		n1 = rbi_proc_exec_nonce(pid, at1);
	}
	if (!at1 || write(go[1], "a", 1) != 1 || read(done[0], cmd, 1) != 1) {
		skip("the child did not run again", "exec nonce");
	} else {
		at2 = rbi_proc_at_random(pid);
		n2 = rbi_proc_exec_nonce(pid, at1);
		if (at2 != at1)
			skip("randomization could not be turned off (personality)", "exec nonce");
		else
			check(n1 && n2 && n1 != n2, "an exec that keeps AT_RANDOM's address "
			      "(ASLR off, same program) gives new bytes there");
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

int main(int argc, char **argv)
{
	struct child c;
	rbi_target *t = NULL;
	int rc, status;

	if (argc > 1)
		return nonce_child(argv[1]);
	test_exec_nonce();
	if (child_start(&c)) {
		printf("1..0 # SKIP cannot start a child\n");
		return 77;
	}
	rc = rbi_target_open_pid(c.pid, NULL, &t);
	check(rc == RBI_OK, "open a live child");
	if (rc)
		goto out;
	check(rbi_target_pid(t) == c.pid, "its pid");
	test_reads(t, &c, "process_vm_readv");
	test_regions(t, &c);
	test_open_file(t);
	test_refresh(t, &c);
	rbi_target_free(t);

	setenv("RBI_NO_PROCESS_VM_READV", "1", 1);
	rc = rbi_target_open_pid(c.pid, NULL, &t);
	check(rc == RBI_OK, "open again, /proc/PID/mem only");
	if (rc == RBI_OK) {
		test_reads(t, &c, "/proc/PID/mem");
		rbi_target_free(t);
	}
	unsetenv("RBI_NO_PROCESS_VM_READV");
	test_protected(&c);

	rc = rbi_target_open_pid(c.pid, NULL, &t);
	kill(c.pid, SIGKILL);
	usleep(100000);
	rc = rbi_target_open_pid(c.pid, NULL, &(rbi_target *){ NULL });
	check(rc == RBI_ZOMBIE, "an unreaped child is a zombie (%d)", rc);
	waitpid(c.pid, &status, 0);
	uint8_t b;
	rbi_target_refresh(t);
	rc = rbi_target_read(t, c.base, &b, 1, NULL);
	check(rc == RBI_GONE, "reading a process that exited says it is gone (%d)", rc);
	char str[16];
	rc = rbi_read_cstr(t, c.base, str, sizeof(str));
	check(rc == RBI_GONE && strstr(rbi_errmsg(), "has exited"),
	      "so does reading a string from it (%d: %s)", rc, rbi_errmsg());
	rbi_target_free(t);
	rc = rbi_target_open_pid(c.pid, NULL, &t);
	check(rc == RBI_NO_PROCESS, "a reaped pid is no such process (%d)", rc);
out:
	kill(c.pid, SIGKILL);
	return tap_plan();
}
