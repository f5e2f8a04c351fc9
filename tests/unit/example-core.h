/* example-core.h: the bundled example core (testdata/cores, Debian's Ruby
 * 3.1 running testdata/programs' threads.rb), unpacked for a unit test;
 * copies of it with bytes changed (corrupt memory, as a core may hold);
 * rbinspect run on a core (tests built with RBINSPECT_PATH). */
#ifndef RBI_TESTS_EXAMPLE_CORE_H
#define RBI_TESTS_EXAMPLE_CORE_H

#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* The core, unpacked into a temporary file (unlink it when done); NULL if
   it cannot be. */
static inline char *unpack_core(void)
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

/* Copy core file FROM to TO. */
static inline bool copy_core(const char *from, const char *to)
{
	char cmd[8192];

	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", from, to);
	return system(cmd) == 0;
}

/* Write LEN bytes of BUF where core file PATH holds target address ADDR
   (inside one PT_LOAD's file bytes). */
static inline bool patch_core(const char *path, uint64_t addr, const void *buf, size_t len)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);
	Elf *e = NULL;
	size_t n;
	off_t off = -1;

	elf_version(EV_CURRENT);
	if (fd >= 0 && (e = elf_begin(fd, ELF_C_READ, NULL)) && !elf_getphdrnum(e, &n))
		for (size_t i = 0; i < n && off < 0; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD &&
			    addr >= ph.p_vaddr && addr + len <= ph.p_vaddr + ph.p_filesz)
				off = (off_t)(ph.p_offset + (addr - ph.p_vaddr));
		}
	elf_end(e);
	if (off >= 0 && pwrite(fd, buf, len, off) != (ssize_t)len)
		off = -1;
	if (fd >= 0)
		close(fd);
	return off >= 0;
}

#ifdef RBINSPECT_PATH
/* rbinspect ARGS on CORE: its exit status (-1 if it did not exit), its
   standard output in OUT and error in ERR (CAP bytes each). */
static inline int run_cli(const char *core, const char *args, char *out, char *err,
			  size_t cap)
{
	char cmd[8192], ef[] = "/tmp/rbi-test-cli-err.XXXXXX";
	FILE *p;
	size_t n;
	int fd = mkstemp(ef), st;

	if (fd < 0)
		return -1;
	close(fd);
	snprintf(cmd, sizeof(cmd), "'%s' '%s' %s 2>'%s'", RBINSPECT_PATH, core, args, ef);
	if (!(p = popen(cmd, "r"))) {
		unlink(ef);
		return -1;
	}
	n = fread(out, 1, cap - 1, p);
	out[n] = '\0';
	st = pclose(p);
	p = fopen(ef, "r");
	n = p ? fread(err, 1, cap - 1, p) : 0;
	err[n] = '\0';
	if (p)
		fclose(p);
	unlink(ef);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
#endif

#endif
