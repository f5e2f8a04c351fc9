/* debuginfo.c: libdwfl's find_debuginfo callback, without libdebuginfod
 * when nobody asked for it.
 *
 * dwfl_standard_find_debuginfo looks for a separate debug file by
 * build-id and by .gnu_debuglink, and when neither is there, asks
 * debuginfod.  libdwfl (elfutils 0.188, and still 0.192) dlopens
 * libdebuginfod for that, with libcurl, GnuTLS and Kerberos behind it,
 * even when DEBUGINFOD_URLS is unset and the client will not even look at
 * its cache: 4.5 ms and 8 MB on every command that reads a stripped Ruby,
 * most of what a one-shot `info` costs.
 *
 * So unless DEBUGINFOD_URLS names a server, the standard search runs only
 * when one of the files it would open is there; otherwise the answer is
 * "none" at once.  The existence check mirrors libdwfl's search
 * (find-debuginfo.c) and errs on the side of "there": a candidate that
 * turns out wrong costs only the dlopen we try to avoid, a candidate
 * missed would lose debug info, so every path libdwfl opens is covered. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define DEFAULT_DEBUGINFO_PATH ":.debug:/usr/lib/debug"

static bool exists(const char *dir, const char *sub, const char *name)
{
	char path[PATH_MAX];
	int n = snprintf(path, sizeof(path), "%s%s%s%s%s", dir,
			 sub && *sub ? "/" : "", sub ? sub : "", *name == '/' ? "" : "/", name);

	return n > 0 && (size_t)n < sizeof(path) && access(path, F_OK) == 0;
}

/* Is NAME under DIR by a suffix of FILE_DIR (all of it, then with leading
   components dropped one by one, as libdwfl explores), or right in DIR? */
static bool exists_under(const char *dir, const char *file_dir, const char *name)
{
	for (const char *sub = file_dir + (*file_dir == '/'); *sub; ) {
		const char *next = strchr(sub, '/');

		if (exists(dir, sub, name))
			return true;
		if (!next)
			break;
		sub = next + 1;
	}
	return exists(dir, NULL, name);
}

/* A file named NAME (or, for a made-up name, the file's own basename) in
   one of the places debuginfo path PATH says, for the main file FILE. */
static bool exists_by_name(const char *path, const char *file, const char *name,
			   const char *base)
{
	char dir[PATH_MAX], entries[PATH_MAX];
	const char *slash = strrchr(file, '/');

	if (!slash || (size_t)(slash - file) >= sizeof(dir) ||
	    snprintf(entries, sizeof(entries), "%s", path) >= (int)sizeof(entries))
		return true;    /* cannot tell: let libdwfl look */
	memcpy(dir, file, (size_t)(slash - file));
	dir[slash - file] = '\0';
	for (char *save = NULL, *e = strtok_r(entries, ":", &save); ;
	     e = strtok_r(NULL, ":", &save)) {
		const char *entry = e ? e : "";

		if (*entry == '+' || *entry == '-')
			entry++;
		if (*entry == '/') {
			if (exists_under(entry, dir, name) ||
			    (base && exists_under(entry, dir, base)))
				return true;
		} else if (exists(dir, entry, name) || (base && *entry && exists(dir, entry, base))) {
			return true;
		}
		if (!e)
			break;  /* the empty entry (the file's directory), last */
	}
	return false;
}

/* /usr/lib/debug/.build-id/xx/yyyy.debug under an absolute entry of PATH. */
static bool exists_by_build_id(const char *path, Dwfl_Module *mod)
{
	const unsigned char *bits;
	GElf_Addr vaddr;
	char rel[2 * RBI_BUILD_ID_MAX + 32], entries[PATH_MAX];
	int len = dwfl_module_build_id(mod, &bits, &vaddr);
	size_t n = 0;

	if (len <= 0)
		return false;
	if (len > RBI_BUILD_ID_MAX ||
	    snprintf(entries, sizeof(entries), "%s", path) >= (int)sizeof(entries))
		return true;
	n += (size_t)snprintf(rel, sizeof(rel), ".build-id/%02x/", bits[0]);
	for (int i = 1; i < len; i++)
		n += (size_t)snprintf(rel + n, sizeof(rel) - n, "%02x", bits[i]);
	snprintf(rel + n, sizeof(rel) - n, ".debug");
	for (char *save = NULL, *e = strtok_r(entries, ":", &save); e;
	     e = strtok_r(NULL, ":", &save)) {
		if (*e == '+' || *e == '-')
			e++;
		if (*e == '/' && exists(e, NULL, rel))
			return true;
	}
	return false;
}

/* Could libdwfl's local search find a debug file for MOD's FILE? */
static bool local_candidate(Dwfl_Module *mod, const char *path, const char *file,
			    const char *debuglink)
{
	char made_up[PATH_MAX], *canon;
	const char *base = NULL;
	bool found;

	if (exists_by_build_id(path, mod))
		return true;
	if (!file)
		return false;
	if (!debuglink) {
		/* No .gnu_debuglink: libdwfl tries FILE's basename + ".debug",
		   and the basename itself outside FILE's directory. */
		base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
		if (snprintf(made_up, sizeof(made_up), "%s.debug", base) >= (int)sizeof(made_up))
			return true;
		debuglink = made_up;
	}
	if (exists_by_name(path, file, debuglink, base))
		return true;
	/* A symlink's debug file may go by its target's name. */
	if (!(canon = realpath(file, NULL)))
		return false;
	found = strcmp(canon, file) != 0 && exists_by_name(path, canon, debuglink, base);
	free(canon);
	return found;
}

static bool debuginfod_wanted(void)
{
	const char *urls = getenv("DEBUGINFOD_URLS");

	return urls && urls[strspn(urls, " \t")];
}

int rbi_debuginfo_find(Dwfl_Module *mod, const char *path, void **userdata,
		       const char *modname, Dwarf_Addr base, const char *file_name,
		       const char *debuglink_file, GElf_Word debuglink_crc,
		       char **debuginfo_file_name)
{
	/* An alternate (dwz) file, asked for once a debug file was found
	   (no CRC, and the name is the .gnu_debugaltlink's): the user has
	   debug info, so the whole standard search it is. */
	bool alt = debuglink_file && debuglink_crc == 0;

	if (!alt && !debuginfod_wanted() &&
	    !local_candidate(mod, path ? path : DEFAULT_DEBUGINFO_PATH, file_name,
			     debuglink_file)) {
		errno = 0;
		return -1;
	}
	return dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name,
					    debuglink_file, debuglink_crc,
					    debuginfo_file_name);
}
