/* test-memroom.c: the memory a compressed core may fill (util/memroom.c):
 * the machine's free memory, or less where the process's memory cgroup
 * leaves less, at its own level or a parent's, in a cgroup v2 or v1
 * hierarchy.  Made-up /proc and /sys/fs/cgroup files in a directory: the
 * machine this runs on may have either version, or neither writable. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "tap.h"

#define MIB (1ull << 20)

static char root[] = "/tmp/rbi-memroom-XXXXXX";
static char meminfo[64], cgroups[64], sysfs[64];

/* Write TEXT to ROOT/REL, making its directories. */
static void put(const char *rel, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0700);
		*p = '/';
	}
	if ((f = fopen(path, "w"))) {
		fputs(text, f);
		fclose(f);
	}
}

static uint64_t room(bool *by_cgroup)
{
	return rbi_memory_room_at(meminfo, cgroups, sysfs, by_cgroup);
}

int main(void)
{
	bool by = true;
	uint64_t r;

	if (!ok(mkdtemp(root) != NULL, "a work directory"))
		return tap_plan();
	snprintf(meminfo, sizeof(meminfo), "%s/meminfo", root);
	snprintf(cgroups, sizeof(cgroups), "%s/cgroup", root);
	snprintf(sysfs, sizeof(sysfs), "%s/sys", root);
	/* 8 GiB available, 1 GiB of swap free. */
	put("meminfo", "MemTotal: 16777216 kB\nMemAvailable: 8388608 kB\nSwapFree: 1048576 kB\n");

	put("cgroup", "0::/\n");
	r = room(&by);
	ok(r == 9216 * MIB && !by, "no limit: the machine's MemAvailable and SwapFree (%llu MiB)",
	   (unsigned long long)(r / MIB));

	/* v2: the service's cgroup has no limit of its own ("max"); its
	   parent's 1 GiB, half used, bounds it. */
	put("cgroup", "0::/system.slice/app.service\n");
	put("sys/system.slice/app.service/memory.max", "max\n");
	put("sys/system.slice/app.service/memory.current", "104857600\n");
	put("sys/system.slice/memory.max", "1073741824\n");
	put("sys/system.slice/memory.current", "536870912\n");
	r = room(&by);
	ok(r == 512 * MIB && by, "v2: a parent's limit less its usage (%llu MiB)",
	   (unsigned long long)(r / MIB));

	/* v1: the memory controller's line among others; its own limit. */
	put("cgroup", "5:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n0::/\n");
	put("sys/memory/docker/abc/memory.limit_in_bytes", "268435456\n");
	put("sys/memory/docker/abc/memory.usage_in_bytes", "67108864\n");
	put("sys/memory/memory.limit_in_bytes", "9223372036854771712\n");
	put("sys/memory/memory.usage_in_bytes", "4294967296\n");
	r = room(&by);
	ok(r == 192 * MIB && by, "v1: the memory hierarchy's cgroup, its limit less its usage "
	   "(%llu MiB)", (unsigned long long)(r / MIB));

	/* Over its limit already: no room at all, not a wrapped-around one. */
	put("sys/memory/docker/abc/memory.usage_in_bytes", "300000000\n");
	ok(room(&by) == 0 && by, "usage over the limit: no room");

	/* A cgroup named but not mounted (another namespace's path): the
	   machine's figure. */
	put("cgroup", "4:memory:/elsewhere\n");
	r = room(&by);
	ok(r == 9216 * MIB && !by, "a cgroup not under the mount: the machine's (%llu MiB)",
	   (unsigned long long)(r / MIB));

	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		diag("could not remove %s", root);
	return tap_plan();
}
