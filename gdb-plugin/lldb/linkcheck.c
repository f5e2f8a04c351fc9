/* linkcheck.c: links the LLDB plugin's C parts into a program (see
 * meson.build); never run. */
#include <stdio.h>

#include "cli-run.h"

int main(void)
{
	return rbi_lldb_run(NULL, "", 0, stdout, stderr, 0, NULL);
}
