/* core.c: the core-file memory backend.
 *
 * Bytes come from the core's PT_LOAD segments (indexed by address and
 * binary-searched per read), read with pread, never mapped: a core is cut
 * short under a running session when the same program crashes again into
 * the same name (the kernel truncates the old core before it writes), and a
 * mapping of the lost pages would end the session in SIGBUS.  A short read
 * says the core changed (RBI_TRUNCATED); the target then reads as gone.
 * Bytes a core lacks inside a file mapping (NT_FILE) come from that file on
 * disk, but only when its build-id equals the one in the core's copy of the
 * image's ELF header:
 *   - gdb's gcore writes no PT_LOAD at all for unmodified file mappings
 *     (text, .rodata), and writes NT_FILE offsets in bytes (page size 1);
 *   - the kernel writes a PT_LOAD for every mapping, with FileSiz 0 (or one
 *     page, the ELF header) when it did not dump it, and writes NT_FILE
 *     offsets in pages (page size 4096).
 * Core bytes always win over file bytes (a file's .data is pre-relocation).
 *
 * Everything is decided at open: files are checked then (so warnings reach
 * the target's diag, which is only passed to open) and the fds of accepted
 * files stay open until close.  After open the state is read-only, so reads
 * from several threads are safe.
 *
 * The build-id a file must have is read from the core's own bytes at the
 * file's first mapping of offset 0 (its ELF header; the kernel and gcore
 * both dump that page by default, coredump_filter bit 4).  Without it the
 * file is used unchecked, with a warning.  gcore dumps mappings of deleted
 * files whole; for the kernel, "X (deleted)" is also looked up as X.
 *
 * Notes read: NT_PRSTATUS (threads and registers), NT_PRPSINFO (pid),
 * NT_AUXV (AT_ENTRY, to tell the executable's mappings apart), NT_FILE and
 * NT_SIGINFO.  Every count and offset in them is checked against the note's
 * size.
 *
 * The signal that killed the process: the kernel writes the thread that
 * took it first, with pr_cursig set, and one NT_SIGINFO with the whole
 * siginfo_t.  gcore writes pr_cursig 0 for a process it stopped (and an
 * NT_SIGINFO per thread, with gdb's SIGSTOP): no signal killed that one. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arch/arch.h"
#include "internal.h"

#ifndef NT_FILE
#define NT_FILE 0x46494c45
#endif
#ifndef NT_SIGINFO
#define NT_SIGINFO 0x53494749
#endif

/* struct elf_prstatus / elf_prpsinfo of 64-bit Linux (all architectures). */
#define PRSTATUS_SIGNO_OFF  0   /* pr_info: si_signo, si_code, si_errno */
#define PRSTATUS_CODE_OFF   4
#define PRSTATUS_CURSIG_OFF 12  /* short */
#define PRSTATUS_PID_OFF    32
#define PRSTATUS_REG_OFF    112
#define PRPSINFO_PID_OFF    24

/* A PT_LOAD: [vaddr, vaddr + memsz) of which the first filesz bytes are at
   offset in the core. */
struct core_seg {
	uint64_t vaddr, memsz, filesz, offset;
	uint32_t prot;
};

/* One NT_FILE entry: [start, end) maps FILE at byte offset OFFSET. */
struct core_map {
	uint64_t start, end, offset;
	size_t file;
};

/* One distinct file named by NT_FILE. */
struct core_file {
	const char *name;       /* as the core names it; points into names */
	int fd;                 /* open and verified, or -1: never read it */
	bool is_exe;            /* maps the executable (AT_ENTRY inside) */
};

struct core {
	int fd;                 /* the core */
	Elf *elf;               /* read, not mapped (see the top) */
	uint64_t size;          /* the file's size at open */
	const char *path;       /* for messages during open only */
	const struct rbi_arch *arch;    /* the machine that wrote it: this one's */
	struct core_seg *segs;  /* sorted by vaddr, disjoint */
	size_t nsegs;
	struct core_map *maps;  /* sorted by start, disjoint */
	size_t nmaps;
	struct core_file *files;        /* sorted by name, distinct */
	size_t nfiles;
	char *names;            /* NT_FILE's string table (owned) */
	struct rbi_region *regions;     /* sorted by start; paths borrowed
					   from files[] */
	size_t nregions;
	struct rbi_thread_regs *threads;
	struct rbi_registers *regs;     /* threads[i]'s, for the unwinder */
	size_t nthreads;
	char *sysroot;          /* owned copies of the open options */
	char *exe;
	uint64_t entry;         /* AT_ENTRY, 0 if unknown */
	pid_t pid;
	struct rbi_signal sig;  /* what killed it; signo 0: nothing */
	bool have_siginfo;      /* sig came from NT_SIGINFO */
};

/* ---- small helpers ------------------------------------------------------- */

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

static int seg_cmp(const void *a, const void *b)
{
	return cmp_u64(((const struct core_seg *)a)->vaddr,
		       ((const struct core_seg *)b)->vaddr);
}

static int map_cmp(const void *a, const void *b)
{
	return cmp_u64(((const struct core_map *)a)->start,
		       ((const struct core_map *)b)->start);
}

static int region_cmp(const void *a, const void *b)
{
	return cmp_u64(((const struct rbi_region *)a)->start,
		       ((const struct rbi_region *)b)->start);
}

static int file_cmp(const void *a, const void *b)
{
	return strcmp(((const struct core_file *)a)->name,
		      ((const struct core_file *)b)->name);
}

/* A name of NT_FILE and the entry it came from, for merging duplicates. */
struct name_ix {
	const char *name;
	size_t ix;
};

static int name_ix_cmp(const void *a, const void *b)
{
	return strcmp(((const struct name_ix *)a)->name,
		      ((const struct name_ix *)b)->name);
}

static uint64_t get_u64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static int32_t get_i32(const unsigned char *p)
{
	int32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint32_t seg_prot(uint32_t p_flags)
{
	return (p_flags & PF_R ? RBI_PROT_READ : 0) |
	       (p_flags & PF_W ? RBI_PROT_WRITE : 0) |
	       (p_flags & PF_X ? RBI_PROT_EXEC : 0);
}

/* The first segment that ends after ADDR, or NULL.  Segments are sorted and
   disjoint, so their ends are sorted too. */
static const struct core_seg *seg_upper(const struct core *c, uint64_t addr)
{
	size_t lo = 0, hi = c->nsegs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->segs[mid].vaddr + c->segs[mid].memsz <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->nsegs ? &c->segs[lo] : NULL;
}

static const struct core_map *map_upper(const struct core *c, uint64_t addr)
{
	size_t lo = 0, hi = c->nmaps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->maps[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->nmaps ? &c->maps[lo] : NULL;
}

static struct core_file *file_by_name(const struct core *c, const char *name)
{
	struct core_file key = { .name = name };

	if (!c->nfiles)
		return NULL;
	return bsearch(&key, c->files, c->nfiles, sizeof(*c->files), file_cmp);
}

/* ---- reading ------------------------------------------------------------- */

/* Up to WANT bytes at ADDR from the file mapped there, if it was accepted.
   Returns the number of bytes read (0: none). */
static size_t file_read(const struct core *c, uint64_t addr,
			unsigned char *dst, size_t want)
{
	const struct core_map *m = map_upper(c, addr);
	const struct core_file *f;
	uint64_t off;
	size_t done = 0;

	if (!m || m->start > addr)
		return 0;
	f = &c->files[m->file];
	if (f->fd < 0)
		return 0;
	want = (size_t)min_u64(want, m->end - addr);
	off = m->offset + (addr - m->start);
	if (off < m->offset || off > (uint64_t)INT64_MAX - want)
		return 0;
	while (done < want) {
		ssize_t n = pread(f->fd, dst + done, want - done,
				  (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	return done;
}

/* The N core bytes at file offset OFF into DST: false when they cannot be
   read (the file has fewer than it had at open, or an I/O error: errno). */
static bool seg_read(const struct core *c, uint64_t off, unsigned char *dst, size_t n)
{
	size_t done = 0;

	while (done < n) {
		ssize_t got = pread(c->fd, dst + done, n - done, (off_t)(off + done));

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			if (got == 0)
				errno = 0;
			return false;
		}
		done += (size_t)got;
	}
	return true;
}

/* Why seg_read failed at file offset OFF: the core cut short since open,
   or (the file as long as it was) an I/O error. */
static int fail_seg_read(const struct core *c, uint64_t off)
{
	int err = errno;
	struct stat st;
	long long now = fstat(c->fd, &st) == 0 ? (long long)st.st_size : -1;

	if (now >= 0 && (uint64_t)now >= c->size)
		return rbi_fail(RBI_SYSTEM, "reading the core file at offset 0x%" PRIx64
				": %s", off, strerror(err ? err : EIO));
	return rbi_fail(RBI_TRUNCATED, "the core file was cut short while being read "
			"(%lld bytes now, %" PRIu64 " at open): open it again",
			now, c->size);
}

/* Read LEN bytes at ADDR: from the core's own bytes and, when FILES, from
   accepted files where the core has none. */
static int core_read_from(const struct core *c, uint64_t addr, void *buf,
			  size_t len, size_t *nread, bool files)
{
	unsigned char *out = buf;
	size_t done = 0;

	while (done < len) {
		uint64_t a = addr + done;
		size_t want = len - done, n;
		const struct core_seg *s;
		uint64_t limit;         /* bytes before core bytes may start */

		if (a < addr)           /* wrapped past the top of memory */
			break;
		s = seg_upper(c, a);
		if (s && s->vaddr <= a) {
			uint64_t off = a - s->vaddr;

			if (off < s->filesz) {
				n = (size_t)min_u64(want, s->filesz - off);
				if (!seg_read(c, s->offset + off, out + done, n)) {
					*nread = done;
					return fail_seg_read(c, s->offset + off);
				}
				done += n;
				continue;
			}
			/* Between filesz and memsz: not in the core. */
			limit = s->vaddr + s->memsz - a;
		} else {
			limit = s ? s->vaddr - a : UINT64_MAX;
		}
		if (!files)
			break;
		n = file_read(c, a, out + done, (size_t)min_u64(want, limit));
		if (n == 0)
			break;
		done += n;
	}
	*nread = done;
	if (done == len)
		return RBI_OK;
	return done ? RBI_PARTIAL : RBI_UNMAPPED;
}

static int core_read(void *be, uint64_t addr, void *buf, size_t len,
		     size_t *nread)
{
	return core_read_from(be, addr, buf, len, nread, true);
}

/* rbi_read_fn over the core's own bytes only: what the core says an image
   looks like, never what a file on disk says. */
static int core_read_own(void *ctx, uint64_t addr, void *buf, size_t len,
			 size_t *nread)
{
	return core_read_from(ctx, addr, buf, len, nread, false);
}

/* Whether the core's own bytes cover all of [START, END). */
static bool core_covers(const struct core *c, uint64_t start, uint64_t end)
{
	const struct core_seg *s = seg_upper(c, start);
	uint64_t cur = start;

	while (s && s < c->segs + c->nsegs && s->vaddr <= cur && cur < end) {
		uint64_t have = s->vaddr + s->filesz;

		if (have <= cur)
			break;
		cur = have;
		s++;
	}
	return cur >= end;
}

/* ---- other ops ----------------------------------------------------------- */

static int core_region(void *be, size_t index, struct rbi_region *out)
{
	const struct core *c = be;

	if (index >= c->nregions)
		return RBI_ITER_END;
	*out = c->regions[index];
	return RBI_OK;
}

static int core_thread(void *be, size_t index, struct rbi_thread_regs *out)
{
	const struct core *c = be;

	if (index >= c->nthreads)
		return RBI_ITER_END;
	*out = c->threads[index];
	return RBI_OK;
}

static int core_registers(void *be, int32_t tid, struct rbi_registers *out)
{
	const struct core *c = be;

	for (size_t i = 0; i < c->nthreads; i++)
		if (c->threads[i].tid == tid) {
			if (!c->regs[i].count)
				return rbi_fail(RBI_UNSUPPORTED, "%s: no registers of "
						"thread %d for this machine", c->path,
						(int)tid);
			*out = c->regs[i];
			return RBI_OK;
		}
	return RBI_ITER_END;
}

static int core_signal(void *be, struct rbi_signal *out)
{
	const struct core *c = be;

	if (c->sig.signo == 0)
		return RBI_ITER_END;
	*out = c->sig;
	return RBI_OK;
}

#define DELETED_MARK " (deleted)"

/* rbi_open_regular(ROOT, the first LEN bytes of NAME). */
static int open_cut(const char *root, const char *name, size_t len)
{
	char *p = strndup(name, len);
	int fd;

	if (!p)
		return -ENOMEM;
	fd = rbi_open_regular(root, p);
	free(p);
	return fd;
}

/* NAME without the sysroot SYSROOT it already starts with (gdb's gcore of
   a chrooted process names its files as the host sees them), else NAME. */
static const char *inside_sysroot(const char *sysroot, const char *name)
{
	size_t n = sysroot ? strlen(sysroot) : 0;

	while (n > 1 && sysroot[n - 1] == '/')
		n--;
	if (n > 1 && strncmp(name, sysroot, n) == 0 && name[n] == '/')
		return name + n;
	return name;
}

/* Open NAME as the core names it (an absolute path), a regular file only:
   the given executable for the executable's mappings, else NAME inside the
   sysroot when there is one (never outside it; a NAME that starts with the
   sysroot already is taken inside it as it is), else NAME.  A name the
   kernel marked " (deleted)" is tried without the mark too (a library
   upgraded under a running process): the build-id check decides whether
   what is there now is what was mapped.  Returns an fd or -errno (-EINVAL:
   not a regular file). */
static int open_resolved(const struct core *c, const char *name, bool is_exe)
{
	size_t len, mark = strlen(DELETED_MARK);
	size_t lens[2];
	int fd = -ENOENT;

	if (is_exe && c->exe && (fd = rbi_open_regular(NULL, c->exe)) >= 0)
		return fd;
	if (name[0] != '/')     /* "anon_inode:[...]" and the like */
		return -ENOENT;
	name = inside_sysroot(c->sysroot, name);
	lens[0] = lens[1] = len = strlen(name);
	if (len > mark && strcmp(name + len - mark, DELETED_MARK) == 0)
		lens[1] = len - mark;
	for (size_t i = 0; i < 2 && (i == 0 || lens[1] != lens[0]); i++)
		if ((fd = open_cut(c->sysroot, name, lens[i])) >= 0)
			return fd;
	return fd;
}

static int core_open_file(void *be, const char *path)
{
	const struct core *c = be;
	const struct core_file *f;
	int fd;

	if (!path)
		return rbi_fail(RBI_INVAL, "no file name");
	f = file_by_name(c, path);
	fd = open_resolved(c, path, f && f->is_exe);
	if (fd == -EINVAL)
		return rbi_fail(RBI_INVAL, "%s is not a regular file: not opened", path);
	if (fd < 0)
		return rbi_fail(fd == -EACCES ? RBI_PERM :
				fd == -ENOMEM ? RBI_NOMEM : RBI_SYSTEM,
				"cannot open %s%s%s%s: %s", path,
				c->sysroot ? " (in sysroot " : "",
				c->sysroot ? c->sysroot : "",
				c->sysroot ? ")" : "", strerror(-fd));
	return fd;
}

static void core_free(struct core *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nfiles; i++)
		if (c->files[i].fd >= 0)
			close(c->files[i].fd);
	free(c->files);
	free(c->names);
	free(c->maps);
	free(c->segs);
	free(c->regions);
	free(c->threads);
	free(c->regs);
	free(c->sysroot);
	free(c->exe);
	if (c->elf)
		elf_end(c->elf);
	if (c->fd >= 0)
		close(c->fd);
	free(c);
}

static void core_close(void *be)
{
	core_free(be);
}

static const struct rbi_mem_ops core_ops = {
	.size = sizeof(struct rbi_mem_ops),
	.flags = RBI_MEM_STATIC | RBI_MEM_CONCURRENT,
	.read = core_read,
	.region = core_region,
	.thread = core_thread,
	.open_file = core_open_file,
	.close = core_close,
	.signal = core_signal,
	.registers = core_registers,
};

/* ---- opening: validation ------------------------------------------------- */

/* H (N bytes) is not an ELF header; UNPACKED: it came out of a compressed
   file (mem/unpack.c reads gzip, xz, zstd and lz4). */
static int fail_not_elf(const char *path, const unsigned char *h, size_t n, bool unpacked)
{
	if (n == 0)
		return rbi_fail(RBI_NOT_ELF, "%s is empty, not a core file", path);
	if (unpacked)
		return rbi_fail(RBI_NOT_ELF, "%s decompresses to something that is not "
				"an ELF file", path);
	if (n >= 3 && memcmp(h, "BZh", 3) == 0)
		return rbi_fail(RBI_NOT_ELF, "%s is bzip2-compressed, not an ELF core "
				"file: decompress it first", path);
	return rbi_fail(RBI_NOT_ELF, "%s is not an ELF file", path);
}

/* Read the first bytes of C's file into HEAD (EI_NIDENT of them); when
   they start a compressed stream, C's file becomes the decompressed core. */
static int read_head(struct core *c, const char *path, const struct rbi_open_opts *opts,
		     unsigned char *head, ssize_t *n, struct stat *st, bool *unpacked)
{
	int fd;

	for (int pass = 0; pass < 2; pass++) {
		do
			*n = pread(c->fd, head, EI_NIDENT, 0);
		while (*n < 0 && errno == EINTR);
		if (*n < 0)
			return rbi_fail(RBI_SYSTEM, "reading %s: %s", path, strerror(errno));
		if (pass == 1 || ((size_t)*n >= SELFMAG && memcmp(head, ELFMAG, SELFMAG) == 0))
			break;
		int rc = rbi_core_unpack(c->fd, path, head, (size_t)*n, opts, &fd);
		if (rc == RBI_ITER_END)
			break;
		if (rc)
			return rc;
		close(c->fd);
		c->fd = fd;
		*unpacked = true;
		if (fstat(c->fd, st) != 0)
			return rbi_fail(RBI_SYSTEM, "%s: %s", path, strerror(errno));
	}
	return RBI_OK;
}

static int fail_not_core(Elf *elf, const GElf_Ehdr *eh, const char *path)
{
	const char *what;

	switch (eh->e_type) {
	case ET_EXEC:
		what = "an executable";
		break;
	case ET_DYN: {
		size_t phnum = 0;
		GElf_Phdr ph;

		/* A PIE is ET_DYN too; PT_INTERP tells it from a library. */
		what = "a shared library";
		if (elf_getphdrnum(elf, &phnum) != 0)
			phnum = 0;
		for (size_t i = 0; i < phnum && i < 256; i++)
			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_INTERP)
				what = "an executable";
		break;
	}
	case ET_REL:
		what = "an object file";
		break;
	default:
		return rbi_fail(RBI_NOT_CORE, "%s is not a core file (ELF type %u)",
				path, (unsigned)eh->e_type);
	}
	return rbi_fail(RBI_NOT_CORE, "%s is %s, not a core file", path, what);
}

/* An ELF header libelf would not take: what in its e_ident (HEAD) is
   wrong, or libelf's word MSG when that is all there is. */
static int fail_ident(const char *path, const unsigned char *head, const char *msg)
{
	static const struct { int at, lo, hi; const char *what; } fields[] = {
		{ EI_CLASS, ELFCLASS32, ELFCLASS64, "class (32/64-bit)" },
		{ EI_DATA, ELFDATA2LSB, ELFDATA2MSB, "byte order" },
		{ EI_VERSION, EV_CURRENT, EV_CURRENT, "version" },
	};

	for (size_t i = 0; i < RBI_ARRAY_SIZE(fields); i++)
		if (head[fields[i].at] < fields[i].lo || head[fields[i].at] > fields[i].hi)
			return rbi_fail(RBI_NOT_ELF, "%s: bad ELF header: invalid %s "
					"byte %u in e_ident", path, fields[i].what,
					head[fields[i].at]);
	return rbi_fail(RBI_NOT_ELF, "%s: bad ELF header%s%s", path,
			msg && *msg ? ": " : "", msg ? msg : "");
}

static int fail_truncated(const char *path, const char *what, uint64_t at,
			  uint64_t need, uint64_t have)
{
	return rbi_fail(RBI_TRUNCATED, "%s: core truncated: %s at 0x%" PRIx64
			" needs %" PRIu64 " bytes, file has %" PRIu64
			" (was the dump cut short, e.g. by ulimit -c?)",
			path, what, at, need, have);
}

/* Check the program headers against the file and index the PT_LOADs. */
static int load_segments(struct core *c, const GElf_Ehdr *eh)
{
	size_t phnum, i, n = 0;
	GElf_Phdr ph;

	/* libelf quietly clamps the count to what fits in the file: check
	   the header's own count (unless it overflowed into section 0). */
	phnum = eh->e_phnum;
	if (phnum == PN_XNUM && elf_getphdrnum(c->elf, &phnum) != 0)
		return rbi_fail(RBI_NOT_CORE, "%s: bad program header count: %s",
				c->path, elf_errmsg(-1));
	if (eh->e_phoff > c->size ||
	    phnum > (c->size - eh->e_phoff) / sizeof(Elf64_Phdr))
		return fail_truncated(c->path, "program header table",
				      eh->e_phoff,
				      eh->e_phoff + (uint64_t)phnum * sizeof(Elf64_Phdr),
				      c->size);
	c->segs = calloc(phnum ? phnum : 1, sizeof(*c->segs));
	if (!c->segs)
		return rbi_fail(RBI_NOMEM, "out of memory");
	for (i = 0; i < phnum; i++) {
		if (!gelf_getphdr(c->elf, (int)i, &ph))
			return rbi_fail(RBI_NOT_CORE, "%s: program header %zu: %s",
					c->path, i, elf_errmsg(-1));
		if (ph.p_type != PT_LOAD && ph.p_type != PT_NOTE)
			continue;
		if (ph.p_offset > c->size ||
		    ph.p_filesz > c->size - ph.p_offset)
			return fail_truncated(c->path, ph.p_type == PT_LOAD ?
					      "segment" : "note segment",
					      ph.p_type == PT_LOAD ? ph.p_vaddr :
					      ph.p_offset, ph.p_offset + ph.p_filesz,
					      c->size);
		if (ph.p_type != PT_LOAD || ph.p_memsz == 0)
			continue;
		if (ph.p_filesz > ph.p_memsz ||
		    ph.p_memsz > UINT64_MAX - ph.p_vaddr)
			return rbi_fail(RBI_NOT_CORE, "%s: PT_LOAD at 0x%" PRIx64
					" has bad sizes (file %" PRIu64 ", memory %"
					PRIu64 ")", c->path, ph.p_vaddr,
					ph.p_filesz, ph.p_memsz);
		c->segs[n++] = (struct core_seg){
			.vaddr = ph.p_vaddr, .memsz = ph.p_memsz,
			.filesz = ph.p_filesz, .offset = ph.p_offset,
			.prot = seg_prot(ph.p_flags),
		};
	}
	if (n == 0)
		return rbi_fail(RBI_NOT_CORE, "%s: bad core: no memory segments "
				"(PT_LOAD) among its %zu program headers", c->path, phnum);
	c->nsegs = n;
	qsort(c->segs, n, sizeof(*c->segs), seg_cmp);
	for (i = 1; i < n; i++)
		if (c->segs[i].vaddr - c->segs[i - 1].vaddr < c->segs[i - 1].memsz)
			return rbi_fail(RBI_NOT_CORE, "%s: PT_LOAD segments at 0x%"
					PRIx64 " and 0x%" PRIx64 " overlap", c->path,
					c->segs[i - 1].vaddr, c->segs[i].vaddr);
	return RBI_OK;
}

/* ---- opening: notes ------------------------------------------------------ */

static int add_thread(struct core *c, const unsigned char *d, size_t size)
{
	struct rbi_thread_regs t = { 0 };
	struct rbi_registers full = { 0 };
	struct rbi_thread_regs *v;
	struct rbi_registers *r;
	const unsigned char *regs = d + PRSTATUS_REG_OFF;

	if (size < PRSTATUS_PID_OFF + 4)
		return rbi_fail(RBI_NOT_CORE, "%s: NT_PRSTATUS note too short "
				"(%zu bytes)", c->path, size);
	t.tid = get_i32(d + PRSTATUS_PID_OFF);
	if (c->nthreads == 0) {
		int16_t cursig;

		memcpy(&cursig, d + PRSTATUS_CURSIG_OFF, sizeof(cursig));
		if (cursig > 0)
			c->sig = (struct rbi_signal){
				.signo = cursig, .tid = t.tid,
				.code = get_i32(d + PRSTATUS_CODE_OFF),
			};
	}
	if (size >= PRSTATUS_REG_OFF + c->arch->user_words * 8) {
		t.pc = rbi_arch_user_word(regs, c->arch->user_pc);
		t.sp = rbi_arch_user_word(regs, c->arch->user_sp);
		t.tp = rbi_arch_user_word(regs, c->arch->user_tp);
		rbi_arch_regs_from_user(c->arch, regs, &full);
	}
	/* Grow by doubling; the count is bounded by the note segment's size. */
	if ((c->nthreads & (c->nthreads - 1)) == 0) {
		size_t cap = c->nthreads ? 2 * c->nthreads : 4;

		v = realloc(c->threads, cap * sizeof(*v));
		if (v)
			c->threads = v;
		r = realloc(c->regs, cap * sizeof(*r));
		if (r)
			c->regs = r;
		if (!v || !r)
			return rbi_fail(RBI_NOMEM, "out of memory");
	}
	c->regs[c->nthreads] = full;
	c->threads[c->nthreads++] = t;
	return RBI_OK;
}

/* The kernel's siginfo_t of the signal pr_cursig names (the first
   NT_SIGINFO; gcore's, of another signal, are not it). */
static void parse_siginfo(struct core *c, const unsigned char *d, size_t size)
{
	if (c->have_siginfo || size < RBI_SIGINFO_SIZE || c->sig.signo == 0 ||
	    get_i32(d) != c->sig.signo)
		return;
	rbi_signal_from_siginfo(d, c->sig.tid, &c->sig);
	c->have_siginfo = true;
}

static void parse_auxv(struct core *c, const unsigned char *d, size_t size)
{
	for (size_t off = 0; size - off >= 16; off += 16) {
		uint64_t type = get_u64(d + off);

		if (type == AT_NULL)
			break;
		if (type == AT_ENTRY)
			c->entry = get_u64(d + off + 8);
	}
}

/* NT_FILE: count, page_size, count x {start, end, page offset}, then count
   NUL-terminated names. */
static int parse_nt_file(struct core *c, const unsigned char *d, size_t size)
{
	uint64_t count, page_size, i;
	const unsigned char *names, *p;
	size_t names_len, left, n = 0;
	struct name_ix *byname = NULL;
	int rc = RBI_OK;

	if (size < 16)
		return rbi_fail(RBI_NOT_CORE, "%s: NT_FILE note too short", c->path);
	count = get_u64(d);
	page_size = get_u64(d + 8);
	if (count > (size - 16) / 24)
		return rbi_fail(RBI_NOT_CORE, "%s: NT_FILE claims %" PRIu64
				" mappings but its note has room for %zu",
				c->path, count, (size - 16) / 24);
	if (count == 0)
		return RBI_OK;
	if (page_size == 0)
		return rbi_fail(RBI_NOT_CORE, "%s: NT_FILE page size is 0", c->path);
	names = d + 16 + count * 24;
	names_len = size - 16 - count * 24;
	c->names = malloc(names_len + 1);
	c->maps = calloc(count, sizeof(*c->maps));
	c->files = calloc(count, sizeof(*c->files));
	byname = calloc(count, sizeof(*byname));
	if (!c->names || !c->maps || !c->files || !byname) {
		rc = rbi_fail(RBI_NOMEM, "out of memory");
		goto out;
	}
	memcpy(c->names, names, names_len);
	c->names[names_len] = '\0';
	/* Entry I's name goes to byname[I]; duplicates are merged below. */
	p = (const unsigned char *)c->names;
	left = names_len;
	for (i = 0; i < count; i++) {
		const unsigned char *e = d + 16 + i * 24;
		const unsigned char *nul = memchr(p, '\0', left);
		struct core_map *m = &c->maps[i];

		if (!nul) {
			rc = rbi_fail(RBI_NOT_CORE, "%s: NT_FILE has %" PRIu64
				      " mappings but only %" PRIu64 " names",
				      c->path, count, i);
			goto out;
		}
		m->start = get_u64(e);
		m->end = get_u64(e + 8);
		if (m->start >= m->end ||
		    __builtin_mul_overflow(get_u64(e + 16), page_size, &m->offset)) {
			rc = rbi_fail(RBI_NOT_CORE, "%s: NT_FILE mapping %" PRIu64
				      " is malformed (0x%" PRIx64 "-0x%" PRIx64 ")",
				      c->path, i, m->start, m->end);
			goto out;
		}
		byname[i] = (struct name_ix){ .name = (const char *)p, .ix = i };
		left -= (size_t)(nul + 1 - p);
		p = nul + 1;
	}
	/* One core_file per distinct name, sorted by name (file_by_name()
	   bsearches them); each map points at its name's file. */
	qsort(byname, count, sizeof(*byname), name_ix_cmp);
	for (i = 0; i < count; i++) {
		if (n == 0 || strcmp(c->files[n - 1].name, byname[i].name) != 0)
			c->files[n++] = (struct core_file){
				.name = byname[i].name, .fd = -1,
			};
		c->maps[byname[i].ix].file = n - 1;
	}
	c->nfiles = n;
	c->nmaps = count;
	qsort(c->maps, count, sizeof(*c->maps), map_cmp);
	for (i = 1; i < count; i++)
		if (c->maps[i].start < c->maps[i - 1].end) {
			rc = rbi_fail(RBI_NOT_CORE, "%s: NT_FILE mappings at 0x%"
				      PRIx64 " and 0x%" PRIx64 " overlap", c->path,
				      c->maps[i - 1].start, c->maps[i].start);
			goto out;
		}
out:
	free(byname);
	return rc;
}

static int load_notes(struct core *c)
{
	size_t phnum, i;
	GElf_Phdr ph;
	bool have_file = false, have_psinfo = false;
	int rc;

	if (elf_getphdrnum(c->elf, &phnum) != 0)
		return rbi_fail(RBI_NOT_CORE, "%s: bad program headers", c->path);
	for (i = 0; i < phnum; i++) {
		Elf_Data *data;
		GElf_Nhdr nh;
		size_t pos = 0, next, name_off, desc_off;

		if (!gelf_getphdr(c->elf, (int)i, &ph) || ph.p_type != PT_NOTE ||
		    ph.p_filesz == 0)
			continue;
		data = elf_getdata_rawchunk(c->elf, (int64_t)ph.p_offset, ph.p_filesz,
					    ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		if (!data)
			return rbi_fail(RBI_NOT_CORE, "%s: unreadable note segment "
					"at offset 0x%" PRIx64 ": %s", c->path,
					ph.p_offset, elf_errmsg(-1));
		while (pos < data->d_size) {
			if (!(next = gelf_getnote(data, pos, &nh, &name_off, &desc_off)) &&
			    data->d_size - pos < sizeof(Elf64_Nhdr))
				break;  /* padding after the last note */
			if (!next)
				return rbi_fail(RBI_NOT_CORE, "%s: bad core: the note at "
						"offset 0x%" PRIx64 " runs past its segment",
						c->path, ph.p_offset + pos);
			const unsigned char *name = (const unsigned char *)data->d_buf + name_off;
			const unsigned char *desc = (const unsigned char *)data->d_buf + desc_off;
			size_t dsz = nh.n_descsz;

			pos = next;
			if (nh.n_namesz != 5 || memcmp(name, "CORE", 5) != 0)
				continue;
			switch (nh.n_type) {
			case NT_PRSTATUS:
				rc = add_thread(c, desc, dsz);
				if (rc)
					return rc;
				if (!have_psinfo && c->nthreads == 1)
					c->pid = c->threads[0].tid;
				break;
			case NT_PRPSINFO:
				/* The tgid; the first NT_PRSTATUS is only the
				   thread that dumped. */
				if (dsz >= PRPSINFO_PID_OFF + 4) {
					c->pid = get_i32(desc + PRPSINFO_PID_OFF);
					have_psinfo = true;
				}
				break;
			case NT_AUXV:
				parse_auxv(c, desc, dsz);
				break;
			case NT_SIGINFO:
				parse_siginfo(c, desc, dsz);
				break;
			case NT_FILE:
				if (have_file)
					break;
				have_file = true;
				rc = parse_nt_file(c, desc, dsz);
				if (rc)
					return rc;
				break;
			}
		}
	}
	/* The kernel, gdb and systemd-coredump all write one per thread. */
	if (c->nthreads == 0)
		return rbi_fail(RBI_NOT_CORE, "%s: bad core: no thread (NT_PRSTATUS "
				"note) in its notes", c->path);
	return RBI_OK;
}

/* ---- opening: the region list ------------------------------------------- */

static uint32_t map_prot(const struct core *c, const struct core_map *m)
{
	const struct core_seg *s = seg_upper(c, m->start);

	/* NT_FILE has no permissions: borrow the overlapping PT_LOAD's. */
	if (s && s->vaddr < m->end)
		return s->prot;
	return RBI_PROT_READ;
}

/* NT_FILE mappings plus the parts of PT_LOADs no NT_FILE entry covers
   (anonymous memory, stacks, the vdso). */
static int build_regions(struct core *c)
{
	size_t cap = c->nsegs + 2 * c->nmaps, n = 0, i, j = 0;

	c->regions = calloc(cap ? cap : 1, sizeof(*c->regions));
	if (!c->regions)
		return rbi_fail(RBI_NOMEM, "out of memory");
	for (i = 0; i < c->nmaps; i++) {
		const struct core_map *m = &c->maps[i];

		c->regions[n++] = (struct rbi_region){
			.start = m->start, .end = m->end, .file_offset = m->offset,
			.prot = map_prot(c, m), .path = c->files[m->file].name,
		};
	}
	for (i = 0; i < c->nsegs; i++) {
		const struct core_seg *s = &c->segs[i];
		uint64_t cur = s->vaddr, end = s->vaddr + s->memsz;

		while (j < c->nmaps && c->maps[j].end <= cur)
			j++;
		/* Pieces per segment: at most one more than the NT_FILE
		   entries starting inside it, so N stays within CAP. */
		for (size_t k = j; k < c->nmaps && c->maps[k].start < end; k++) {
			if (c->maps[k].start > cur)
				c->regions[n++] = (struct rbi_region){
					.start = cur, .end = c->maps[k].start,
					.prot = s->prot,
				};
			if (c->maps[k].end > cur)
				cur = c->maps[k].end;
			if (cur >= end)
				break;
		}
		if (cur < end)
			c->regions[n++] = (struct rbi_region){
				.start = cur, .end = end, .prot = s->prot,
			};
	}
	qsort(c->regions, n, sizeof(*c->regions), region_cmp);
	c->nregions = n;
	return RBI_OK;
}

/* ---- opening: files on disk --------------------------------------------- */

/* The lowest mapping of file F at file offset 0: where its ELF header is. */
static const struct core_map *file_header_map(const struct core *c, size_t f)
{
	for (size_t i = 0; i < c->nmaps; i++)
		if (c->maps[i].file == f && c->maps[i].offset == 0)
			return &c->maps[i];
	return NULL;
}

/* Whether NAME starts with one of the N PREFIXES. */
static bool under(const char *name, const char *const *prefixes, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	return false;
}

/* Files never found on disk (shared memory, memfd, devices): not worth
   a warning when they cannot be opened. */
static bool pseudo_file(const char *name)
{
	static const char *const prefixes[] = { "/dev/", "/memfd:", "/SYSV" };

	return name[0] != '/' || under(name, prefixes, RBI_ARRAY_SIZE(prefixes));
}

/* Files a core names that are never read: the kernel's views of this
   machine (a crafted core may name /proc/self/environ). */
static bool kernel_file(const char *name)
{
	static const char *const prefixes[] = { "/proc/", "/sys/" };

	return under(name, prefixes, RBI_ARRAY_SIZE(prefixes));
}

/* What verify_files tells of the files it did not use, a count and the
   first name of each kind. */
struct unused_files {
	size_t unopened, data;
	char first_unopened[PATH_MAX + 128], first_data[PATH_MAX];
};

/* A data file NAME not read, counted for the warning; but the C library's
   own locale and character set data, which nearly every process maps and
   no reader of Ruby needs, go unsaid. */
static void unused_data(struct unused_files *u, const char *name)
{
	static const char *const quiet[] = {
		"/usr/lib/locale/", "/usr/share/locale/", "/usr/lib/x86_64-linux-gnu/gconv/",
		"/usr/lib/aarch64-linux-gnu/gconv/", "/usr/lib64/gconv/",
	};

	if (under(name, quiet, RBI_ARRAY_SIZE(quiet)))
		return;
	if (u->data++ == 0)
		snprintf(u->first_data, sizeof(u->first_data), "%s", name);
}

/* Decide whether file F may supply bytes the core lacks; warn when not,
   or when it cannot be checked.  Only ELF images are read, checked by
   build-id where the core holds their header: a core may name any file
   (a crafted one, /etc/shadow), and a tool run as root on cores others
   supply must not print it as the process's memory. */
static void verify_file(struct core *c, size_t f, struct rbi_diag *diag,
			struct unused_files *u)
{
	struct core_file *file = &c->files[f];
	const struct core_map *hdr = file_header_map(c, f);
	struct rbi_build_id cid = { .len = 0 }, fid = { .len = 0 };
	char chex[2 * RBI_BUILD_ID_MAX + 1], fhex[2 * RBI_BUILD_ID_MAX + 1];
	int crc = RBI_UNMAPPED, frc, fd;

	if (hdr)
		crc = rbi_build_id_from_memory(core_read_own, c, hdr->start, &cid);
	if (crc == RBI_NOT_ELF || kernel_file(file->name)) {
		unused_data(u, file->name);
		return;
	}
	if ((fd = open_resolved(c, file->name, file->is_exe)) < 0) {
		if (!pseudo_file(file->name) && u->unopened++ == 0)
			snprintf(u->first_unopened, sizeof(u->first_unopened), "%s: %s",
				 file->name,
				 fd == -EINVAL ? "not a regular file" : strerror(-fd));
		return;
	}
	frc = rbi_build_id_from_fd(fd, &fid);
	if (frc == RBI_NOT_ELF) {
		/* Not ELF on disk and no header in the core: data. */
		unused_data(u, file->name);
		goto reject;
	}
	rbi_build_id_hex(&cid, chex);
	rbi_build_id_hex(&fid, fhex);
	if (frc != RBI_OK && frc != RBI_NOT_ELF) {
		rbi_diag_add(diag, "%s: cannot read its build-id (%s); using only "
			     "what the core holds", file->name, rbi_errmsg());
		goto reject;
	}
	if (crc == RBI_OK) {
		/* The core holds the image's header. */
		if (cid.len == 0 && fid.len == 0) {
			rbi_diag_add(diag, "%s: no build-id in the core or on disk; "
				     "using the file unchecked", file->name);
			goto accept;
		}
		if (!rbi_build_id_equal(&cid, &fid)) {
			rbi_diag_add(diag, "%s: build-id on disk %s differs from "
				     "the core's %s; using only what the core "
				     "holds", file->name, fid.len ? fhex : "(none)",
				     cid.len ? chex : "(none)");
			goto reject;
		}
		goto accept;
	}
	if (crc != RBI_UNMAPPED) {
		rbi_diag_add(diag, "%s: cannot read the build-id of the core's "
			     "image (%s); using only what the core holds",
			     file->name, rbi_strerror(crc));
		goto reject;
	}
	/* The core has no header page for it (a coredump_filter without
	   ELF headers): an ELF image whose build-id cannot be compared. */
	rbi_diag_add(diag, "%s: the core holds no ELF header for it, so its "
		     "build-id %s cannot be checked; using the file on disk "
		     "unchecked", file->name, fid.len ? fhex : "(none)");
accept:
	file->fd = fd;
	return;
reject:
	close(fd);
}

/* Check every file the core lacks some bytes of; other files are never
   read, so they need not exist. */
static void verify_files(struct core *c, struct rbi_diag *diag)
{
	bool *needed = calloc(c->nfiles ? c->nfiles : 1, sizeof(*needed));
	struct unused_files *u = calloc(1, sizeof(*u));
	char saved[512];
	size_t i;

	/* The build-id helpers explain their failures, but here a failure is
	   only a warning: leave the caller's rbi_errmsg() as it was. */
	snprintf(saved, sizeof(saved), "%s", rbi_errmsg());
	if (!needed || !u) {
		rbi_diag_add(diag, "out of memory: files on disk not used");
		free(needed);
		free(u);
		return;
	}
	for (i = 0; i < c->nmaps; i++)
		if (!core_covers(c, c->maps[i].start, c->maps[i].end))
			needed[c->maps[i].file] = true;
	for (i = 0; i < c->nfiles; i++)
		if (needed[i])
			verify_file(c, i, diag, u);
	if (u->unopened)
		rbi_diag_add(diag, "%zu file%s mapped in the core could not be "
			     "opened (%s%s); bytes the core lacks from %s are "
			     "unreadable%s", u->unopened, u->unopened == 1 ? "" : "s",
			     u->first_unopened, u->unopened > 1 ? ", ..." : "",
			     u->unopened == 1 ? "it" : "them",
			     c->sysroot ? "" : " (a sysroot may help)");
	if (u->data)
		rbi_diag_add(diag, "%zu data file%s mapped in the core not read "
			     "(%s%s): only ELF images are read from disk; bytes "
			     "the core lacks from %s are unreadable", u->data,
			     u->data == 1 ? "" : "s", u->first_data,
			     u->data > 1 ? ", ..." : "", u->data == 1 ? "it" : "them");
	free(needed);
	free(u);
	rbi_fail(RBI_OK, "%s", saved);
}

/* Mark the files mapping AT_ENTRY as the executable; without an auxv, go by
   the name of the executable given. */
static void find_exe(struct core *c)
{
	const struct core_map *m = c->entry ? map_upper(c, c->entry) : NULL;
	const char *base;

	if (m && m->start <= c->entry) {
		c->files[m->file].is_exe = true;
		return;
	}
	if (!c->exe)
		return;
	base = strrchr(c->exe, '/');
	base = base ? base + 1 : c->exe;
	for (size_t i = 0; i < c->nfiles; i++) {
		const char *b = strrchr(c->files[i].name, '/');

		if (strcmp(b ? b + 1 : c->files[i].name, base) == 0)
			c->files[i].is_exe = true;
	}
}

/* ---- opening ------------------------------------------------------------- */

static int copy_opts(struct core *c, const struct rbi_open_opts *opts)
{
	if (!opts)
		return RBI_OK;
	/* Resolved, as the kernel and gdb write the names a core carries
	   (open_resolved compares them). */
	if (RBI_HAS_FIELD(opts, sysroot) &&
	    opts->sysroot && opts->sysroot[0] &&
	    !(c->sysroot = realpath(opts->sysroot, NULL)) &&
	    (errno == ENOMEM || !(c->sysroot = strdup(opts->sysroot))))
		return rbi_fail(RBI_NOMEM, "out of memory");
	if (RBI_HAS_FIELD(opts, exe) &&
	    opts->exe && opts->exe[0] && !(c->exe = strdup(opts->exe)))
		return rbi_fail(RBI_NOMEM, "out of memory");
	return RBI_OK;
}

int rbi_mem_core_open(const char *path, const struct rbi_open_opts *opts,
		      struct rbi_diag *diag, pid_t *pid,
		      const struct rbi_mem_ops **ops, void **be)
{
	struct core *c;
	unsigned char head[EI_NIDENT];
	GElf_Ehdr eh;
	struct stat st;
	ssize_t n;
	bool unpacked = false;
	int rc;

	if (!path || !ops || !be)
		return rbi_fail(RBI_INVAL, "no core file given");
	c = calloc(1, sizeof(*c));
	if (!c)
		return rbi_fail(RBI_NOMEM, "out of memory");
	c->fd = -1;
	c->path = path;
	rc = copy_opts(c, opts);
	if (rc)
		goto fail;
	c->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (c->fd < 0) {
		rc = rbi_fail(errno == EACCES ? RBI_PERM : RBI_SYSTEM,
			      "cannot open core %s: %s", path, strerror(errno));
		goto fail;
	}
	if (fstat(c->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		rc = rbi_fail(RBI_NOT_ELF, "%s is not a regular file", path);
		goto fail;
	}
	rc = read_head(c, path, opts, head, &n, &st, &unpacked);
	if (rc)
		goto fail;
	if ((size_t)n < SELFMAG || memcmp(head, ELFMAG, SELFMAG) != 0) {
		rc = fail_not_elf(path, head, (size_t)n, unpacked);
		goto fail;
	}
	elf_version(EV_CURRENT);
	c->elf = elf_begin(c->fd, ELF_C_READ, NULL);
	if (!c->elf || elf_kind(c->elf) != ELF_K_ELF || !gelf_getehdr(c->elf, &eh)) {
		rc = (size_t)n < EI_NIDENT || (size_t)st.st_size < sizeof(Elf64_Ehdr) ?
		     rbi_fail(RBI_TRUNCATED, "%s: core truncated: ELF header needs "
			      "%zu bytes, file has %lld", path, sizeof(Elf64_Ehdr),
			      (long long)st.st_size) :
		     fail_ident(path, head, elf_errmsg(-1));
		goto fail;
	}
	if (eh.e_type != ET_CORE) {
		rc = fail_not_core(c->elf, &eh, path);
		goto fail;
	}
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ?
				    ELFDATA2LSB : ELFDATA2MSB)) {
		rc = rbi_fail(RBI_UNSUPPORTED, "%s: only 64-bit cores of this "
			      "machine's byte order are supported", path);
		goto fail;
	}
	/* The registers, the struct layouts and the unwinder are this
	   machine's. */
	if (eh.e_machine != rbi_arch_host()->machine) {
		char a[32], b[32];

		rc = rbi_fail(RBI_UNSUPPORTED, "%s: a core of %s, and this rbinspect reads "
			      "those of %s: read it on such a machine", path,
			      rbi_arch_machine_name(eh.e_machine, a, sizeof(a)),
			      rbi_arch_machine_name(rbi_arch_host()->machine, b, sizeof(b)));
		goto fail;
	}
	c->arch = rbi_arch_host();
	c->size = (uint64_t)st.st_size;
	rc = load_segments(c, &eh);
	if (rc)
		goto fail;
	rc = load_notes(c);
	if (rc)
		goto fail;
	rc = build_regions(c);
	if (rc)
		goto fail;
	find_exe(c);
	verify_files(c, diag);
	c->path = NULL;         /* borrowed for messages during open only */
	if (pid)
		*pid = c->pid;
	*ops = &core_ops;
	*be = c;
	return RBI_OK;
fail:
	core_free(c);
	return rc;
}
