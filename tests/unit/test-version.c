/* test-version.c: RBI_VERSION_* and rbi_version() agree with each other and
 * with meson's project version (RBI_PROJECT_VERSION, passed by
 * tests/meson.build), and the shared library exports rbi_version at its
 * symbol version node, and the old names of renamed functions at theirs.
 * TAP output; exit 1 on any failure. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "tap.h"

int main(void)
{
	int major = -1, minor = -1, patch = -1;
	const char *s = rbi_version(&major, &minor, &patch);
	char want[64];

	snprintf(want, sizeof(want), "%d.%d.%d", RBI_VERSION_MAJOR, RBI_VERSION_MINOR,
		 RBI_VERSION_PATCH);
	ok(s && !strcmp(s, RBI_PROJECT_VERSION), "rbi_version() is meson's project version %s (%s)",
	   RBI_PROJECT_VERSION, s ? s : "NULL");
	ok(!strcmp(RBI_VERSION_STRING, want), "RBI_VERSION_STRING %s is MAJOR.MINOR.PATCH %s",
	   RBI_VERSION_STRING, want);
	ok(major == RBI_VERSION_MAJOR && minor == RBI_VERSION_MINOR && patch == RBI_VERSION_PATCH,
	   "rbi_version() gives the header's numbers (%d.%d.%d)", major, minor, patch);
	ok(rbi_version(NULL, NULL, NULL) == s, "rbi_version(NULL, NULL, NULL) is allowed");
	ok(RBI_VERSION_NUMBER == RBI_VERSION_MAJOR * 1000000 + RBI_VERSION_MINOR * 1000 +
	   RBI_VERSION_PATCH && RBI_VERSION_NUMBER >= RBI_VERSION_ENCODE(0, 1, 0),
	   "RBI_VERSION_NUMBER %d compares", RBI_VERSION_NUMBER);

	/* The installed library, as a program built elsewhere sees it. */
	void *h = dlopen(RBI_SHLIB_PATH, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		skip(dlerror(), "the shared library exports rbi_version");
		return tap_plan();
	}
	const char *(*fn)(int *, int *, int *) =
		(const char *(*)(int *, int *, int *))dlvsym(h, "rbi_version",
							     "LIBRUBY_INTROSPECT_0.7");
	ok(fn != NULL, "%s exports rbi_version@LIBRUBY_INTROSPECT_0.7", RBI_SHLIB_PATH);
	if (fn)
		ok(!strcmp(fn(NULL, NULL, NULL), RBI_PROJECT_VERSION),
		   "the shared library's rbi_version() is %s", RBI_PROJECT_VERSION);

	/* Renamed functions: a program linked against the old name binds to
	   it at its old node, and must get the same function. */
	static const char *const renamed[][3] = {
		{ "rbi_target_close", "LIBRUBY_INTROSPECT_0.1", "rbi_target_free" },
		{ "rbi_heap_iter_fini", "LIBRUBY_INTROSPECT_0.1", "rbi_heap_iter_free" },
	};
	for (size_t i = 0; i < sizeof(renamed) / sizeof(renamed[0]); i++) {
		void *old = dlvsym(h, renamed[i][0], renamed[i][1]);

		ok(old && old == dlvsym(h, renamed[i][2], "LIBRUBY_INTROSPECT_0.8"),
		   "%s@%s is still exported, and is %s@LIBRUBY_INTROSPECT_0.8",
		   renamed[i][0], renamed[i][1], renamed[i][2]);
	}
	dlclose(h);
	return tap_plan();
}
