/* layout-dump: print the struct layout libruby-introspect reads from a
 * Ruby's DWARF, or the built-in table a version would get.
 *
 * usage: layout-dump FILE            DWARF of FILE (libruby.so or a static
 *                                    ruby; separate debug info is found by
 *                                    .gnu_debuglink, /usr/lib/debug/.build-id
 *                                    and DEBUGINFOD_URLS, as for a target)
 *        layout-dump --table X.Y.Z   the built-in table for Ruby X.Y.Z
 *
 * Output: one "group.field value" line per field of RBI_LAYOUT_FIELDS, in
 * its order, "absent" for a field the Ruby lacks: the format of
 * lib/layout/tables/dwarf/VERSION.layout, which tools/layout-tables.py
 * reads.  Exit status: 0 ok, 1 no DWARF / no layout / no table, 2 usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <elfutils/libdwfl.h>

#include "internal.h"
#include "layout/layout.h"

static char *debuginfo_path;

static const Dwfl_Callbacks offline_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

static int dump_table(const char *version)
{
	int major, minor, teeny;
	char end;
	const struct rbi_layout *l;

	if (sscanf(version, "%d.%d.%d%c", &major, &minor, &teeny, &end) != 3) {
		fprintf(stderr, "layout-dump: \"%s\" is not a version X.Y.Z\n", version);
		return 2;
	}
	l = rbi_layout_table(major, minor, teeny);
	if (!l) {
		fprintf(stderr, "layout-dump: no built-in table for Ruby %s\n", version);
		return 1;
	}
	rbi_layout_write(stdout, l);
	return 0;
}

static int dump_dwarf(const char *file)
{
	struct rbi_layout layout;
	Dwfl_Module *mod;
	Dwarf_Addr bias;
	Dwarf *dw;
	Dwfl *dwfl;
	int rc = 1;

	dwfl = dwfl_begin(&offline_callbacks);
	if (!dwfl) {
		fprintf(stderr, "layout-dump: dwfl_begin: %s\n", dwfl_errmsg(-1));
		return 1;
	}
	dwfl_report_begin(dwfl);
	mod = dwfl_report_offline(dwfl, file, file, -1);
	if (!mod || dwfl_report_end(dwfl, NULL, NULL) != 0) {
		fprintf(stderr, "layout-dump: %s: %s\n", file, dwfl_errmsg(-1));
		goto out;
	}
	dw = dwfl_module_getdwarf(mod, &bias);
	if (!dw) {
		fprintf(stderr, "layout-dump: %s: no DWARF (%s); install its debug "
			"info or set DEBUGINFOD_URLS\n", file, dwfl_errmsg(-1));
		goto out;
	}
	if (rbi_layout_from_dwarf(dw, &layout) != RBI_OK) {
		fprintf(stderr, "layout-dump: %s: %s\n", file, rbi_errmsg());
		goto out;
	}
	rbi_layout_write(stdout, &layout);
	rc = 0;
out:
	dwfl_end(dwfl);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--table"))
		return dump_table(argv[2]);
	if (argc == 2 && argv[1][0] != '-')
		return dump_dwarf(argv[1]);
	fputs("usage: layout-dump FILE\n"
	      "       layout-dump --table X.Y.Z\n", stderr);
	return 2;
}
