/* cache.c: layouts read from DWARF, kept on disk by build-id.
 *
 * Reading a layout from DWARF costs 100-500 ms, nearly all of it libelf
 * inflating compressed .debug_info, and repeats for every command on the
 * same Ruby.  A build-id names exactly one build, so its layout never
 * changes: the first run stores it in
 * $XDG_CACHE_HOME/rbinspect/layouts/BUILDID (or ~/.cache/...), later runs
 * read it back.  Only what DWARF gave is cached (never "no DWARF", so
 * installing debug info later still works).  RBI_NO_CACHE=1 turns it off;
 * rbi_open_opts.layout_cache names another directory, or none.
 *
 * A layout steers every read of the target, so an entry is trusted as the
 * user's own configuration is (ssh's rule): the file and its directory
 * belong to the effective user and no one else may write them.  Another
 * user's entry, one in a shared directory, is not read (DWARF is, and
 * the entry is not replaced there).
 * The file format is the one tools/layout-dump prints, after a header
 * that names the field list, so a library with other fields ignores it. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "layout/layout.h"

#define CACHE_MAGIC "rbinspect-layout 1"

/* FNV-1a over every field's name, struct and path: changes whenever the
   field list does. */
static uint32_t fields_hash(void)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < rbi_layout_field_count; i++) {
		const char *parts[] = { rbi_layout_fields[i].name,
					rbi_layout_fields[i].c_struct,
					rbi_layout_fields[i].path };
		for (size_t p = 0; p < RBI_ARRAY_SIZE(parts); p++)
			for (const char *c = parts[p]; ; c++) {
				h = (h ^ (uint8_t)*c) * 16777619u;
				if (!*c)
					break;
			}
	}
	return h;
}

void rbi_layout_write(FILE *f, const struct rbi_layout *l)
{
	for (size_t i = 0; i < rbi_layout_field_count; i++) {
		uint32_t v = rbi_layout_get(l, i);

		if (v == RBI_ABSENT)
			fprintf(f, "%s absent\n", rbi_layout_fields[i].name);
		else
			fprintf(f, "%s %u\n", rbi_layout_fields[i].name, v);
	}
}

/* Read exactly the fields rbi_layout_write() writes, in its order. */
static bool layout_read(FILE *f, struct rbi_layout *l)
{
	char line[256], value[32];

	for (size_t i = 0; i < rbi_layout_field_count; i++) {
		char *end;
		size_t n = strlen(rbi_layout_fields[i].name);
		uint32_t *slot = (uint32_t *)((char *)l + rbi_layout_fields[i].offset);

		if (!fgets(line, sizeof(line), f) ||
		    strncmp(line, rbi_layout_fields[i].name, n) || line[n] != ' ' ||
		    sscanf(line + n + 1, "%31s", value) != 1)
			return false;
		if (!strcmp(value, "absent")) {
			*slot = RBI_ABSENT;
			continue;
		}
		unsigned long v = strtoul(value, &end, 10);
		if (*end || v >= RBI_ABSENT)
			return false;
		*slot = (uint32_t)v;
	}
	return true;
}

/* Does the file or directory ST belong to this user alone to write? */
static bool owned(const struct stat *st)
{
	return st->st_uid == geteuid() && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

/* The cache directory (created when CREATE), or false when caching is
   off or the directory is not the user's own.  Only a store creates it:
   a run that caches nothing leaves no trace in the user's home. */
static bool cache_dir(const char *dir, char *out, size_t cap, bool create)
{
	const char *off = getenv("RBI_NO_CACHE"), *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");
	struct stat st;
	size_t n;

	if (dir)
		n = (size_t)snprintf(out, cap, "%s", dir);
	else if (off && *off && strcmp(off, "0"))
		return false;
	else if (xdg && *xdg == '/')
		n = (size_t)snprintf(out, cap, "%s/rbinspect/layouts", xdg);
	else if (home && *home == '/')
		n = (size_t)snprintf(out, cap, "%s/.cache/rbinspect/layouts", home);
	else
		return false;
	if (!*out || n >= cap || (create && !rbi_make_dirs(out)))
		return false;
	return stat(out, &st) == 0 && S_ISDIR(st.st_mode) && owned(&st);
}

static bool cache_path(const char *dir_opt, const struct rbi_build_id *id, char *out,
		       size_t cap, bool create)
{
	char dir[4200], hex[2 * RBI_BUILD_ID_MAX + 1];

	if (id->len < 8 || !cache_dir(dir_opt, dir, sizeof(dir), create))
		return false;
	rbi_build_id_hex(id, hex);
	return (size_t)snprintf(out, cap, "%s/%s", dir, hex) < cap;
}

/* The entry at PATH, opened if it is a regular file of the user's own. */
static FILE *open_owned(const char *path)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	FILE *f;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || !owned(&st) ||
	    !(f = fdopen(fd, "r"))) {
		close(fd);
		return NULL;
	}
	return f;
}

bool rbi_layout_cache_load(const char *dir, const struct rbi_build_id *id,
			   struct rbi_layout *out)
{
	char path[4400], header[64], want[64];
	bool ok;
	FILE *f;

	if (!cache_path(dir, id, path, sizeof(path), false) || !(f = open_owned(path)))
		return false;
	snprintf(want, sizeof(want), CACHE_MAGIC " %08x\n", fields_hash());
	memset(out, 0, sizeof(*out));
	ok = fgets(header, sizeof(header), f) && !strcmp(header, want) &&
	     layout_read(f, out) && rbi_layout_validate(out) == RBI_OK;
	fclose(f);
	return ok;
}

void rbi_layout_cache_store(const char *dir, const struct rbi_build_id *id,
			    const struct rbi_layout *l)
{
	char path[4400], tmp[4500];
	FILE *f;
	int fd;

	if (!cache_path(dir, id, path, sizeof(path), true))
		return;
	snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path);
	if ((fd = mkstemp(tmp)) < 0)
		return;
	if (!(f = fdopen(fd, "w"))) {
		close(fd);
		unlink(tmp);
		return;
	}
	fprintf(f, CACHE_MAGIC " %08x\n", fields_hash());
	rbi_layout_write(f, l);
	/* Readers see the old file or the whole new one, never a part. */
	if (fclose(f) != 0 || rename(tmp, path) != 0)
		unlink(tmp);
}
