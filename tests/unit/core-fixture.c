/* core-fixture.c: a small process with known memory, dumped by test-core.
 *
 *   core-fixture wait    print what it knows, then block until stdin closes
 *   core-fixture abort   print, then abort() on the first byte of stdin
 *
 * With FIXTURE_MAP=FILE in its environment it also maps FILE's first page,
 * read-only and private: a data file a core names but does not hold.
 *
 * Built twice: -DFIXTURE_VARIANT=1 and =2 differ in their .rodata magic, so
 * the two binaries have different build-ids (the mismatch test swaps one
 * for the other under a core). */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifdef __x86_64__
#include <asm/prctl.h>
#endif

#ifndef FIXTURE_VARIANT
#define FIXTURE_VARIANT 1
#endif
#define STR_(x) #x
#define STR(x) STR_(x)

/* .rodata: never dumped by gcore, FileSiz 0 in kernel cores. */
__attribute__((used)) const char fixture_magic[] =
	"RBINSPECT-CORE-FIXTURE-MAGIC-" STR(FIXTURE_VARIANT);
/* .data: the file's value; the core holds the same. */
__attribute__((used)) volatile uint64_t fixture_data = 0x1122334455667788ull;
/* .data changed at run time: the core's value differs from the file's. */
__attribute__((used)) volatile uint64_t fixture_runtime = 1;

static int ready[2];

static uint64_t thread_pointer(void)
{
#ifdef __x86_64__
	unsigned long fs = 0;

	syscall(SYS_arch_prctl, ARCH_GET_FS, &fs);
	return fs;
#else
	return 0;
#endif
}

struct info {
	pid_t tid;
	uint64_t fs;
};

static void *worker(void *arg)
{
	struct info *me = arg;

	me->tid = (pid_t)syscall(SYS_gettid);
	me->fs = thread_pointer();
	if (write(ready[1], "x", 1) != 1)
		abort();
	for (;;)
		pause();
	return NULL;
}

/* FIXTURE_MAP's first page, mapped: its address, or 0. */
static uint64_t map_data_file(void)
{
	const char *path = getenv("FIXTURE_MAP");
	void *p;
	int fd;

	if (!path || (fd = open(path, O_RDONLY)) < 0)
		return 0;
	p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	return p == MAP_FAILED ? 0 : (uint64_t)(uintptr_t)p;
}

int main(int argc, char **argv)
{
	struct info other = { 0 };
	uint64_t map;
	pthread_t th;
	char c;

	if (argc != 2 || (strcmp(argv[1], "wait") && strcmp(argv[1], "abort"))) {
		fprintf(stderr, "usage: %s wait|abort\n", argv[0]);
		return 2;
	}
	fixture_runtime = 0x5151000000000000ull | (uint64_t)getpid();
	map = map_data_file();
	if (pipe(ready) != 0 || pthread_create(&th, NULL, worker, &other) != 0 ||
	    read(ready[0], &c, 1) != 1)
		return 1;
	printf("pid=%d magic=%p data=%p runtime=%p runtime_value=%" PRIu64
	       " tid0=%d fs0=%" PRIu64 " tid1=%d fs1=%" PRIu64 " map=%" PRIu64 "\n",
	       (int)getpid(), (const void *)fixture_magic, (void *)&fixture_data,
	       (void *)&fixture_runtime, (uint64_t)fixture_runtime,
	       (int)syscall(SYS_gettid), thread_pointer(), (int)other.tid,
	       other.fs, map);
	fflush(stdout);
	if (strcmp(argv[1], "abort") == 0) {
		if (read(0, &c, 1) == 1)
			abort();
		return 0;
	}
	while (read(0, &c, 1) > 0)
		;
	return 0;
}
