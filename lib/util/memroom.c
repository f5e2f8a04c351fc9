/* memroom.c: how much memory this process may still fill.
 *
 * A compressed core is decompressed into a memfd, whose pages are memory
 * but not this process's resident set: past what is free the OOM killer
 * ends rbinspect (or another process) without a word.  What is free is the
 * machine's (MemAvailable and SwapFree) and, in a container or a systemd
 * unit, its memory cgroup's: the limit less the usage, at the cgroup and
 * at each parent visible (a limit holds for everything below it).  Both
 * cgroup versions: v2's memory.max and memory.current, v1's
 * memory.limit_in_bytes and memory.usage_in_bytes. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The machine's, from MEMINFO (/proc/meminfo): MemAvailable and SwapFree;
   UINT64_MAX if unknown. */
static uint64_t machine_room(const char *meminfo)
{
	char line[128];
	unsigned long long kb, room = 0;
	int seen = 0;
	FILE *f = fopen(meminfo, "re");

	if (!f)
		return UINT64_MAX;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1 ||
		    sscanf(line, "SwapFree: %llu kB", &kb) == 1) {
			room += kb * 1024;
			seen++;
		}
	fclose(f);
	return seen ? room : UINT64_MAX;
}

/* The number in file DIR/NAME ("max" and anything unreadable: none). */
static bool read_number(const char *dir, const char *name, uint64_t *out)
{
	char path[PATH_MAX + 64];
	unsigned long long v;
	FILE *f;
	bool ok;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path) ||
	    !(f = fopen(path, "re")))
		return false;
	ok = fscanf(f, "%llu", &v) == 1;
	fclose(f);
	if (ok)
		*out = v;
	return ok;
}

/* The room under the limits of cgroup directory DIR and its parents down
   to ROOT (DIR is edited). */
static uint64_t cgroup_dir_room(char *dir, size_t root_len, const char *limit_name,
				const char *usage_name)
{
	uint64_t room = UINT64_MAX, limit, usage;

	for (;;) {
		if (read_number(dir, limit_name, &limit) && read_number(dir, usage_name, &usage)) {
			uint64_t left = limit > usage ? limit - usage : 0;

			if (left < room)
				room = left;
		}
		char *slash = strrchr(dir + root_len, '/');

		if (!slash)
			return room;
		*slash = '\0';
	}
}

/* The room under the memory cgroup file CGROUPS (/proc/self/cgroup) names,
   the hierarchies mounted under SYSFS (/sys/fs/cgroup); UINT64_MAX if none. */
static uint64_t cgroup_room(const char *cgroups, const char *sysfs)
{
	char line[PATH_MAX + 64], dir[PATH_MAX + 32], mount[PATH_MAX];
	uint64_t room = UINT64_MAX;
	FILE *f = fopen(cgroups, "re");

	if (!f)
		return room;
	while (fgets(line, sizeof(line), f)) {
		char *controllers = strchr(line, ':'), *path;
		const char *hierarchy = NULL, *limit = NULL, *usage = NULL;

		if (!controllers || !(path = strchr(controllers + 1, ':')))
			continue;
		*path++ = '\0';
		path[strcspn(path, "\n")] = '\0';
		if (!strcmp(controllers + 1, "")) {
			hierarchy = "", limit = "memory.max", usage = "memory.current";
		} else {
			char *save = NULL;

			for (char *c = strtok_r(controllers + 1, ",", &save); c;
			     c = strtok_r(NULL, ",", &save))
				if (!strcmp(c, "memory"))
					hierarchy = "/memory";
			limit = "memory.limit_in_bytes", usage = "memory.usage_in_bytes";
		}
		if (!hierarchy ||
		    (size_t)snprintf(mount, sizeof(mount), "%s%s", sysfs, hierarchy) >= sizeof(mount) ||
		    (size_t)snprintf(dir, sizeof(dir), "%s%s", mount,
				     strcmp(path, "/") ? path : "") >= sizeof(dir))
			continue;
		uint64_t r = cgroup_dir_room(dir, strlen(mount), limit, usage);

		if (r < room)
			room = r;
	}
	fclose(f);
	return room;
}

uint64_t rbi_memory_room_at(const char *meminfo, const char *cgroups, const char *sysfs,
			    bool *by_cgroup)
{
	uint64_t machine = machine_room(meminfo), cgroup = cgroup_room(cgroups, sysfs);

	*by_cgroup = cgroup < machine;
	return cgroup < machine ? cgroup : machine;
}

uint64_t rbi_memory_room(bool *by_cgroup)
{
	return rbi_memory_room_at("/proc/meminfo", "/proc/self/cgroup", "/sys/fs/cgroup",
				  by_cgroup);
}
