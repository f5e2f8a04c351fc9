/* test-layout-cache.c: where DWARF layouts are kept (layout/cache.c), and
 * which entries are trusted, on made-up directories: a built-in table
 * stored and read back; rbi_open_opts.layout_cache's "" (none) and a
 * directory of the caller's; the default's XDG_CACHE_HOME and
 * RBI_NO_CACHE; and an entry that another may have written (writable by
 * its group, in a directory others may write, a symbolic link, another
 * user's) never read.  TAP output. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "layout/layout.h"
#include "tap.h"

static const struct rbi_build_id id = {
	.bytes = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 },
	.len = 20,
};
#define ENTRY "deadbeef0102030405060708090a0b0c0d0e0f10"

/* Is the entry in DIR read back as L, field by field? */
static bool reads_back(const char *dir, const struct rbi_layout *l)
{
	struct rbi_layout got;

	if (!rbi_layout_cache_load(dir, &id, &got))
		return false;
	for (size_t i = 0; i < rbi_layout_field_count; i++)
		if (rbi_layout_get(&got, i) != rbi_layout_get(l, i))
			return false;
	return true;
}

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

int main(void)
{
	char dir[] = "/tmp/rbi-layout-cache-XXXXXX", entry[128], sub[256], xdg[64], cmd[512];
	struct rbi_layout l = *rbi_layout_tables[0];

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!check(mkdtemp(dir) != NULL, "a work directory"))
		return tap_plan();
	snprintf(entry, sizeof(entry), "%s/" ENTRY, dir);
	unsetenv("RBI_NO_CACHE");

	rbi_layout_cache_store(dir, &id, &l);
	ok(exists(entry), "stored in the directory the option names");
	ok(reads_back(dir, &l), "read back as stored");

	/* "": no cache, whatever the environment says. */
	snprintf(xdg, sizeof(xdg), "%s/xdg", dir);
	setenv("XDG_CACHE_HOME", xdg, 1);
	rbi_layout_cache_store("", &id, &l);
	ok(!exists(xdg), "\"\": nothing stored, no directory made");
	ok(!rbi_layout_cache_load("", &id, &l), "\"\": nothing read");

	/* NULL: the default, under XDG_CACHE_HOME unless RBI_NO_CACHE. */
	setenv("RBI_NO_CACHE", "1", 1);
	rbi_layout_cache_store(NULL, &id, &l);
	ok(!exists(xdg), "default with RBI_NO_CACHE=1: nothing stored");
	unsetenv("RBI_NO_CACHE");
	rbi_layout_cache_store(NULL, &id, &l);
	snprintf(sub, sizeof(sub), "%s/rbinspect/layouts/" ENTRY, xdg);
	ok(exists(sub), "default: stored under $XDG_CACHE_HOME/rbinspect/layouts");
	ok(reads_back(NULL, &l), "default: read back");

	/* Entries another could have written are not read. */
	chmod(entry, 0620);
	ok(!reads_back(dir, &l), "an entry its group may write: not read");
	chmod(entry, 0600);
	ok(reads_back(dir, &l), "mode 0600 again: read");
	chmod(dir, 0777);
	ok(!reads_back(dir, &l), "in a directory anyone may write: not read");
	rbi_layout_cache_store(dir, &id, &l);
	snprintf(cmd, sizeof(cmd), "ls -A '%s' | grep -c . | grep -qx 2", dir);
	ok(system(cmd) == 0, "nor stored there (the entry and xdg/ only)");
	chmod(dir, 0700);
	snprintf(sub, sizeof(sub), "%s/" ENTRY ".real", dir);
	rename(entry, sub);
	ok(symlink(sub, entry) == 0 && !reads_back(dir, &l), "a symbolic link: not followed");
	unlink(entry);
	rename(sub, entry);
	if (geteuid() == 0) {
		ok(chown(entry, 65534, 65534) == 0 && !reads_back(dir, &l),
		   "another user's entry: not read");
	} else {
		skip("not root: no entry of another user can be made", "another user's entry");
	}

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	check(system(cmd) == 0, "work directory removed");
	return tap_plan();
}
