/* version.c: rbi_version(), the library's own version: the numbers of the
 * header it was built with (include/ruby-introspect-version.h, generated
 * from meson's project version). */
#include "internal.h"

RBI_EXPORT const char *rbi_version(int *major, int *minor, int *patch)
{
	if (major)
		*major = RBI_VERSION_MAJOR;
	if (minor)
		*minor = RBI_VERSION_MINOR;
	if (patch)
		*patch = RBI_VERSION_PATCH;
	return RBI_VERSION_STRING;
}
