/* example-core.h: the bundled example core (testdata/cores, Debian's Ruby
 * 3.1 running testdata/programs' threads.rb), unpacked for a unit test. */
#ifndef RBI_TESTS_EXAMPLE_CORE_H
#define RBI_TESTS_EXAMPLE_CORE_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* The core, unpacked into a temporary file (unlink it when done); NULL if
   it cannot be. */
static char *unpack_core(void)
{
	static char path[] = "/tmp/rbi-test-core.XXXXXX";
	char cmd[4096];
	int fd = mkstemp(path);

	if (fd < 0)
		return NULL;
	close(fd);
	snprintf(cmd, sizeof(cmd), "xz -dc '%s/testdata/cores/ruby-3.1-threads.core.xz' > '%s'",
		 RBI_SRCDIR, path);
	if (system(cmd) != 0) {
		unlink(path);
		return NULL;
	}
	return path;
}

#endif
