/* images.c: the ELF images a target has mapped, their symbols and DWARF.
 *
 * The module list comes from the target's own regions (/proc/PID/maps,
 * NT_FILE, or a caller's backend), never from our filesystem: an image is
 * the group of regions of one path that starts at the region mapping file
 * offset 0, where its ELF header sits in target memory.  Each image's
 * build-id is read from target memory and decides which bytes we trust:
 *   - the file on disk (via rbi_target_open_file: sysroot, /proc/PID/root)
 *     when its build-id is the same, or memory has none;
 *   - otherwise the image as mapped, copied out of target memory into a
 *     buffer laid out by file offset (RBI_IMAGE_MEMORY).  libdwfl finds
 *     .dynsym in it through PT_DYNAMIC even without section headers.
 * libdwfl does the rest: symbol tables (.symtab over .dynsym, separate
 * debug files by .gnu_debuglink, /usr/lib/debug/.build-id, debuginfod when
 * DEBUGINFOD_URLS is set) and DWARF.  Files and memory copies are opened
 * lazily by find_elf, the first time an image's symbols are asked for.
 *
 * The list belongs to the target (rbi_target_images) and reads target memory
 * lazily, so it must not outlive it. */
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "util/table.h"

/* Bounds on what target memory may make us do. */
#define IMAGE_MEM_MAX    (256u << 20)   /* largest in-memory image copied */
#define IMAGE_PHNUM_MAX  256u           /* program headers per image */
#define IMAGE_SEGS_MAX   4096u          /* regions per image */
#define IMAGE_SYMS_MAX   (1u << 22)     /* symbols indexed per image */
#define IMAGE_END_SLACK  (64u << 10)    /* largest page size we expect */
#define IMAGE_READ_CHUNK (1u << 20)     /* bytes per read of a memory image */

/* One region of an image: where file offset OFF..OFF+LEN is mapped. */
struct image_seg {
	uint64_t start, len, off;
	uint32_t prot;
};

/* Private state of one image, kept as its Dwfl_Module's userdata. */
struct image_priv {
	struct rbi_target *t;
	struct rbi_image *img;
	const char *debuginfo_path;     /* the list's */
	uint64_t low;           /* address reported to libdwfl */
	uint64_t limit;         /* end of its PT_LOADs: later regions of the
				   same path beyond are other mappings */
	struct image_seg *segs;
	size_t nsegs;
	uint8_t *mem;           /* memory image handed to libdwfl (elf_memory) */
	size_t memsize;
	uint8_t *holes;         /* a bit per page of MEM the target lacked */
	/* Symbol name index: open addressing over symbol indices + 1. */
	uint32_t *slots;
	size_t nslots;          /* power of two; 0 = not built yet */
	bool index_failed;
	bool no_debuginfo;      /* the search for a debug file found none */
	bool unloaded;          /* a mapping the loader did not make */
};

/* The list and what only this file needs. */
struct image_list_priv {
	struct rbi_image_list pub;      /* first: the list the target sees */
	struct image_priv *priv;        /* pub.n of them */
	Dwfl_Callbacks callbacks;       /* image_callbacks + this debuginfo_path */
	char *debuginfo_path;
	bool said_no_symtab;            /* an image without symbol tables was
					   named (once per target) */
};

static int image_find_elf(Dwfl_Module *mod, void **userdata,
			  const char *modname, Dwarf_Addr base,
			  char **file_name, Elf **elfp);

static int image_find_debuginfo(Dwfl_Module *mod, void **userdata,
				const char *modname, Dwarf_Addr base,
				const char *file_name, const char *debuglink_file,
				GElf_Word debuglink_crc, char **debuginfo_file_name);

/* Separate debug info the standard way: .gnu_debuglink next to the file
   and in /usr/lib/debug, /usr/lib/debug/.build-id, debuginfod (when
   DEBUGINFOD_URLS is set: image/debuginfo.c). */
static const Dwfl_Callbacks image_callbacks = {
	.find_elf = image_find_elf,
	.find_debuginfo = image_find_debuginfo,
};

/* ---- ELF header in target memory --------------------------------------- */

/* Read and check the ELF header at BASE and find the load bias (runtime
   address - ELF vaddr), the low address libdwfl expects for the module
   (where its first PT_LOAD, aligned down, is mapped) and where its last
   PT_LOAD ends. */
static int image_header(struct rbi_target *t, uint64_t base, uint64_t *bias,
			uint64_t *low, uint64_t *limit)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	size_t n = 0;
	bool first = true;
	uint64_t hi = 0;

	if (rbi_target_read_fn(t, base, &eh, sizeof(eh), &n) != RBI_OK)
		return RBI_UNMAPPED;
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
		return RBI_NOT_ELF;
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    (eh.e_type != ET_DYN && eh.e_type != ET_EXEC) ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 ||
	    eh.e_phnum > IMAGE_PHNUM_MAX || eh.e_phoff > (1u << 20))
		return RBI_NOT_ELF;
	for (size_t i = 0; i < eh.e_phnum; i++) {
		if (rbi_target_read_fn(t, base + eh.e_phoff + i * sizeof(ph), &ph,
				       sizeof(ph), &n) != RBI_OK)
			return RBI_UNMAPPED;
		if (ph.p_type != PT_LOAD)
			continue;
		if (ph.p_memsz > (1ull << 40) || ph.p_vaddr > (1ull << 56))
			return RBI_NOT_ELF;
		if (ph.p_vaddr + ph.p_memsz > hi)
			hi = ph.p_vaddr + ph.p_memsz;
		if (!first)
			continue;
		/* The first PT_LOAD maps file offset 0 (it holds the ELF
		   header), so BASE is its page-aligned vaddr plus the bias. */
		uint64_t align = ph.p_align;
		if (align == 0 || (align & (align - 1)))
			align = 4096;
		*bias = base - (ph.p_vaddr - ph.p_offset);
		*low = *bias + (ph.p_vaddr & ~(align - 1));
		first = false;
	}
	if (first)
		return RBI_NOT_ELF;
	*limit = *bias + hi + IMAGE_END_SLACK;
	if (*limit < base)
		*limit = UINT64_MAX;
	return RBI_OK;
}

/* ---- Memory images ------------------------------------------------------ */

/* Copy what the target has mapped of the image into a buffer laid out
   like the file.  Pages the target cannot give stay zero. */
static int image_copy_memory(struct image_priv *p)
{
	uint64_t size = 0;
	uint8_t *buf;

	for (size_t i = 0; i < p->nsegs; i++) {
		const struct image_seg *s = &p->segs[i];

		if (s->off > IMAGE_MEM_MAX || s->len > IMAGE_MEM_MAX - s->off)
			return rbi_fail(RBI_CORRUPT, "%s: mapping at file offset 0x%" PRIx64
					" is too large to copy from memory",
					p->img->name, s->off);
		if (s->off + s->len > size)
			size = s->off + s->len;
	}
	if (size < sizeof(Elf64_Ehdr))
		return rbi_fail(RBI_NOT_ELF, "%s: nothing mapped", p->img->name);
	buf = calloc(1, size);
	p->holes = calloc(1, (size + 4095) / 4096 / 8 + 1);
	if (!buf || !p->holes) {
		free(buf);
		return rbi_fail(RBI_NOMEM, "out of memory");
	}
	for (size_t i = 0; i < p->nsegs; i++) {
		const struct image_seg *s = &p->segs[i];
		uint64_t done = 0;

		if (!(s->prot & RBI_PROT_READ))
			continue;
		while (done < s->len) {
			size_t want = s->len - done > IMAGE_READ_CHUNK ?
				      IMAGE_READ_CHUNK : (size_t)(s->len - done);
			size_t got = 0;
			int rc = rbi_target_read_fn(p->t, s->start + done,
						    buf + s->off + done, want, &got);

			if (rc == RBI_OK || (rc == RBI_PARTIAL && got > 0)) {
				done += got;
				continue;
			}
			if (rc != RBI_UNMAPPED && rc != RBI_PARTIAL) {
				free(buf);
				return rc;
			}
			/* Not there (a core without these pages): skip a page. */
			uint64_t page = (s->off + done) / 4096;

			p->holes[page / 8] |= (uint8_t)(1u << (page % 8));
			done += 4096 - ((s->start + done) & 4095);
		}
	}

	/* Section headers lie past the mapped part of almost every file, and
	   what memory holds of sections may be relocated or zeroed (.bss):
	   drop them, so that libdwfl reads only .dynsym via PT_DYNAMIC.  This
	   also keeps libelf/libdw away from section data a target controls. */
	Elf64_Ehdr *eh = (Elf64_Ehdr *)buf;
	eh->e_shoff = 0;
	eh->e_shnum = 0;
	eh->e_shstrndx = SHN_UNDEF;
	p->mem = buf;
	p->memsize = size;
	return RBI_OK;
}

/* Did the copy get every page of file offsets [OFF, OFF + LEN)? */
static bool image_copied(const struct image_priv *p, uint64_t off, uint64_t len)
{
	if (off > p->memsize || len > p->memsize - off)
		return false;
	for (uint64_t pg = off / 4096; pg * 4096 < off + len; pg++)
		if (p->holes[pg / 8] & (1u << (pg % 8)))
			return false;
	return true;
}

/* The file offset of virtual address VADDR by the copy's PT_LOADs, or
   UINT64_MAX. */
static uint64_t image_vaddr_offset(const struct image_priv *p, uint64_t vaddr)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)p->mem;

	for (size_t i = 0; i < eh->e_phnum; i++) {
		Elf64_Phdr ph;

		memcpy(&ph, p->mem + eh->e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type == PT_LOAD && vaddr >= ph.p_vaddr &&
		    vaddr - ph.p_vaddr < ph.p_filesz)
			return ph.p_offset + (vaddr - ph.p_vaddr);
	}
	return UINT64_MAX;
}

/* Are the dynamic symbol table and its hash and string tables in the
   copy?  libdwfl finds .dynsym through PT_DYNAMIC and walks the hash
   chains to size it, without a bound: over the zero pages a core lacks
   (the kernel dumps only an image's first page and its written data by
   default) that walk does not end.  So an image whose tables the target
   lacks is not handed to libdwfl at all: it has no symbols here. */
static bool image_dynsym_copied(const struct image_priv *p)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)p->mem;
	uint64_t lo = UINT64_MAX, hi = 0, strtab = 0, strsz = 0;

	if (eh->e_phoff > p->memsize ||
	    (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) > p->memsize - eh->e_phoff)
		return false;
	for (size_t i = 0; i < eh->e_phnum; i++) {
		Elf64_Phdr ph;

		memcpy(&ph, p->mem + eh->e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type != PT_DYNAMIC)
			continue;
		if (!image_copied(p, ph.p_offset, ph.p_filesz))
			return false;
		for (uint64_t o = 0; o + sizeof(Elf64_Dyn) <= ph.p_filesz; o += sizeof(Elf64_Dyn)) {
			Elf64_Dyn d;
			uint64_t v;

			memcpy(&d, p->mem + ph.p_offset + o, sizeof(d));
			if (d.d_tag == DT_NULL)
				break;
			if (d.d_tag == DT_STRSZ)
				strsz = d.d_un.d_val;
			if (d.d_tag != DT_SYMTAB && d.d_tag != DT_STRTAB && d.d_tag != DT_HASH &&
			    d.d_tag != DT_GNU_HASH && d.d_tag != DT_VERSYM)
				continue;
			/* ld.so relocates these in place on most targets. */
			v = d.d_un.d_ptr;
			if (p->img->bias && v >= p->img->bias)
				v -= p->img->bias;
			if ((v = image_vaddr_offset(p, v)) == UINT64_MAX)
				return false;
			if (d.d_tag == DT_STRTAB)
				strtab = v;
			lo = v < lo ? v : lo;
			hi = v > hi ? v : hi;
		}
	}
	if (lo == UINT64_MAX)
		return true;    /* no dynamic symbols: nothing to walk */
	/* .gnu.hash, .dynsym and .dynstr sit together: all of it, and a
	   page past the last table's start. */
	if (strtab + strsz > hi)
		hi = strtab + strsz;
	hi += 4096;
	if (hi > p->memsize)
		hi = p->memsize;
	return hi > lo && image_copied(p, lo, hi - lo);
}

/* ---- libdwfl callbacks -------------------------------------------------- */

/* A path in our namespace naming the file open on FD, which the backend
   opened for NAME: for libdwfl's debuglink search and for people.  The
   kernel's name for FD is not always it: for a file of another mount
   namespace (a container) it is the path inside that namespace, which
   here may name another file.  So each candidate must be FD's inode. */
static char *file_path(struct rbi_target *t, int fd, const char *name)
{
	char link[64], path[PATH_MAX], cand[PATH_MAX + 64];
	struct stat fst, st;
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	path[n > 0 ? n : 0] = '\0';
	if (fstat(fd, &fst) != 0)
		return strdup(path[0] == '/' ? path : name);
	for (int i = 0; i < 4; i++) {
		int len = -1;

		if (i == 0 && path[0] == '/')
			len = snprintf(cand, sizeof(cand), "%s", path);
		else if (i == 1 && rbi_target_is_live(t) && rbi_target_pid(t) > 0 && name[0] == '/')
			len = snprintf(cand, sizeof(cand), "/proc/%d/root%s", (int)rbi_target_pid(t), name);
		else if (i == 2 && rbi_target_sysroot(t) && name[0] == '/')
			len = snprintf(cand, sizeof(cand), "%s%s", rbi_target_sysroot(t),
				       name);
		else if (i == 3)
			len = snprintf(cand, sizeof(cand), "%s", name);
		if (len < 0 || (size_t)len >= sizeof(cand))
			continue;
		if (stat(cand, &st) == 0 && st.st_dev == fst.st_dev && st.st_ino == fst.st_ino)
			return strdup(cand);
	}
	return strdup(path[0] == '/' ? path : name);
}

/* Hand libdwfl the file we checked at load (reopened and checked again:
   it may have been replaced since), or the memory copy. */
static int image_find_elf(Dwfl_Module *mod, void **userdata,
			  const char *modname, Dwarf_Addr base,
			  char **file_name, Elf **elfp)
{
	struct image_priv *p = *userdata;
	struct rbi_image *img = p->img;

	(void)mod; (void)modname; (void)base;
	*elfp = NULL;
	if (img->origin == RBI_IMAGE_FILE) {
		struct rbi_build_id id = { .len = 0 };
		int fd = rbi_target_open_file(p->t, img->name);

		if (fd >= 0 && (img->build_id.len == 0 ||
				(rbi_build_id_from_fd(fd, &id) == RBI_OK &&
				 rbi_build_id_equal(&id, &img->build_id)))) {
			*file_name = strdup(img->file ? img->file : img->name);
			return fd;      /* libdwfl owns it now */
		}
		if (fd >= 0)
			close(fd);
		img->origin = RBI_IMAGE_MEMORY;
		img->mismatch = fd >= 0;
		free(img->file);
		img->file = NULL;
		rbi_diag_add(rbi_target_diag(p->t), "%s %s since it was checked; "
			     "using the image in target memory", img->name,
			     fd >= 0 ? "changed on disk" : "can no longer be opened");
	}
	if (!p->mem && image_copy_memory(p) != RBI_OK)
		return -1;
	if (!image_dynsym_copied(p)) {
		/* No symbols here (vm/offline.c copes for Ruby). */
		struct image_list_priv *lp =
			(struct image_list_priv *)rbi_target_images(p->t);

		if (lp && !lp->said_no_symtab)
			rbi_diag_add(rbi_target_diag(p->t), "%s and images like it: "
				     "their symbol tables are not in the core (only "
				     "their first page and the data they wrote are): "
				     "no symbols or native frames from them (their "
				     "files, under --sysroot, give them)", img->name);
		if (lp)
			lp->said_no_symtab = true;
		return -1;
	}
	*elfp = elf_memory((char *)p->mem, p->memsize);
	return -1;
}

static int image_find_debuginfo(Dwfl_Module *mod, void **userdata,
				const char *modname, Dwarf_Addr base,
				const char *file_name, const char *debuglink_file,
				GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	struct image_priv *p = *userdata;
	int fd;

	/* libdwfl searches again for the DWARF after the symbol table's
	   search found nothing (twenty-odd paths each time). */
	if (p->no_debuginfo)
		return -1;
	fd = rbi_debuginfo_find(mod, p->debuginfo_path, userdata, modname, base,
				file_name, debuglink_file, debuglink_crc,
				debuginfo_file_name);
	p->no_debuginfo = fd < 0;
	return fd;
}

/* ---- Loading ------------------------------------------------------------ */

static void image_priv_free(struct image_priv *p)
{
	free(p->segs);
	free(p->mem);
	free(p->holes);
	free(p->slots);
}

void rbi_images_free(struct rbi_image_list *l)
{
	struct image_list_priv *lp = (struct image_list_priv *)l;

	if (!l)
		return;
	/* libdwfl first: it holds Elf handles over the memory copies. */
	if (l->dwfl)
		dwfl_end(l->dwfl);
	for (size_t i = 0; i < l->n; i++) {
		rbi_image_functions_free(&l->v[i]);
		free(l->v[i].name);
		free(l->v[i].file);
		if (lp->priv)
			image_priv_free(&lp->priv[i]);
	}
	free(l->v);
	free(lp->priv);
	free(lp->debuginfo_path);
	free(lp);
}

/* Room for one more image in LP (CAP is the room both arrays have). */
static int images_grow(struct image_list_priv *lp, size_t *cap)
{
	size_t vcap = *cap, pcap = *cap;

	if (!RBI_GROW(lp->pub.v, vcap, lp->pub.n + 1, 16) ||
	    !RBI_GROW(lp->priv, pcap, lp->pub.n + 1, 16))
		return rbi_fail(RBI_NOMEM, "out of memory");
	*cap = vcap;
	return RBI_OK;
}

/* Group the file-backed regions into images (image headers at offset 0). */
static int images_collect(struct rbi_target *t, struct image_list_priv *lp)
{
	const struct rbi_region_list *rl;
	size_t cap = 0;
	int rc = rbi_regions(t, &rl);

	if (rc)
		return rc;
	for (size_t i = 0; i < rl->n; i++) {
		const struct rbi_region *r = &rl->v[i];
		struct rbi_image *img = NULL;
		struct image_priv *p = NULL;

		if (!r->path || !r->path[0])
			continue;
		if (r->file_offset == 0 && (r->prot & RBI_PROT_READ)) {
			uint64_t bias = 0, low = 0, limit = 0;

			if (image_header(t, r->start, &bias, &low, &limit) != RBI_OK)
				continue;       /* a data file, or no header */
			if ((rc = images_grow(lp, &cap)) != RBI_OK)
				return rc;
			img = &lp->pub.v[lp->pub.n];
			p = &lp->priv[lp->pub.n];
			*img = (struct rbi_image){ .start = r->start, .end = r->end,
						   .bias = bias };
			*p = (struct image_priv){ .t = t, .low = low, .limit = limit };
			lp->pub.n++;
			if (!(img->name = strdup(r->path)))
				return rbi_fail(RBI_NOMEM, "out of memory");
		} else {
			/* The latest image of this path that spans it. */
			for (size_t j = lp->pub.n; j-- > 0;) {
				if (lp->pub.v[j].start <= r->start &&
				    r->start < lp->priv[j].limit &&
				    !strcmp(lp->pub.v[j].name, r->path)) {
					img = &lp->pub.v[j];
					p = &lp->priv[j];
					break;
				}
			}
			if (!img)
				continue;
			if (r->end > img->end)
				img->end = r->end;
		}
		if (p->nsegs >= IMAGE_SEGS_MAX)
			continue;
		struct image_seg *s = realloc(p->segs, (p->nsegs + 1) * sizeof(*s));
		if (!s)
			return rbi_fail(RBI_NOMEM, "out of memory");
		p->segs = s;
		p->segs[p->nsegs++] = (struct image_seg){
			.start = r->start, .len = r->end - r->start,
			.off = r->file_offset, .prot = r->prot };
	}
	return RBI_OK;
}

/* Did the dynamic linker map this image?  It maps every PT_LOAD with its
   own protection, so a loaded image has an executable segment.  A program
   that maps an ELF file to read it (Ruby's crash reporter maps libruby's
   whole file read-only to symbolize its C backtrace) makes a second
   "image" of the same path at another address, whose data is the file's,
   never relocated: taking that one for the library finds no VM. */
static bool image_executable(const struct image_priv *p)
{
	for (size_t i = 0; i < p->nsegs; i++)
		if (p->segs[i].prot & RBI_PROT_EXEC)
			return true;
	return false;
}

/* Drop the images that are another mapping of a file the loader mapped
   too: only the loaded one is that module.  All are judged before any
   goes, as the list is compacted in place. */
static void images_drop_unloaded(struct image_list_priv *lp)
{
	size_t n = 0;

	for (size_t i = 0; i < lp->pub.n; i++) {
		lp->priv[i].unloaded = false;
		for (size_t j = 0; j < lp->pub.n && !image_executable(&lp->priv[i]); j++)
			if (j != i && image_executable(&lp->priv[j]) &&
			    !strcmp(lp->pub.v[i].name, lp->pub.v[j].name))
				lp->priv[i].unloaded = true;
	}
	for (size_t i = 0; i < lp->pub.n; i++) {
		if (lp->priv[i].unloaded) {
			free(lp->pub.v[i].name);
			image_priv_free(&lp->priv[i]);
			continue;
		}
		lp->pub.v[n] = lp->pub.v[i];
		lp->priv[n++] = lp->priv[i];
	}
	lp->pub.n = n;
}

/* Decide where each image's bytes come from.  *MISSING counts the files
   that could not be opened (FIRST_MISSING names one). */
static int images_check_files(struct rbi_target *t, struct image_list_priv *lp,
			      size_t *missing, const char **first_missing)
{
	for (size_t i = 0; i < lp->pub.n; i++) {
		struct rbi_image *img = &lp->pub.v[i];
		struct rbi_build_id fid = { .len = 0 };
		char mhex[2 * RBI_BUILD_ID_MAX + 1], fhex[2 * RBI_BUILD_ID_MAX + 1];
		char *other;
		int fd;

		if (rbi_build_id_from_memory(rbi_target_read_fn, t, img->start,
					     &img->build_id) != RBI_OK)
			img->build_id.len = 0;
		img->origin = RBI_IMAGE_MEMORY;
		fd = rbi_target_open_file(t, img->name);
		if (fd < 0) {
			if (!(*missing)++)
				*first_missing = img->name;
			continue;
		}
		if (img->build_id.len == 0 ||
		    (rbi_build_id_from_fd(fd, &fid) == RBI_OK &&
		     rbi_build_id_equal(&fid, &img->build_id))) {
			img->origin = RBI_IMAGE_FILE;
			img->file = file_path(t, fd, img->name);
			close(fd);
			if (!img->file)
				return rbi_fail(RBI_NOMEM, "out of memory");
			continue;
		}
		/* The file read may be another name's (the executable given
		   on the command line, a sysroot's): name it too. */
		other = file_path(t, fd, img->name);
		close(fd);
		img->mismatch = true;
		rbi_build_id_hex(&img->build_id, mhex);
		rbi_build_id_hex(&fid, fhex);
		rbi_diag_add(rbi_target_diag(t), "%s on disk%s%s%s has build-id %s but "
			     "the target mapped build-id %s (replaced after it was "
			     "loaded?); using the image in target memory", img->name,
			     other && strcmp(other, img->name) ? " (read from " : "",
			     other && strcmp(other, img->name) ? other : "",
			     other && strcmp(other, img->name) ? ")" : "",
			     fid.len ? fhex : "(none)", mhex);
		free(other);
	}
	return RBI_OK;
}

static int images_report(struct rbi_target *t, struct image_list_priv *lp)
{
	Dwfl *dwfl;

	lp->callbacks = image_callbacks;
	/* The standard path, then debug files inside the sysroot or the
	   target's root (a container) found by build-id. */
	{
		char buf[PATH_MAX + 64];
		int len;

		if (rbi_target_sysroot(t))
			len = snprintf(buf, sizeof(buf), ":.debug:/usr/lib/debug:%s/usr/lib/debug",
				       rbi_target_sysroot(t));
		else if (rbi_target_is_live(t) && rbi_target_pid(t) > 0)
			len = snprintf(buf, sizeof(buf), ":.debug:/usr/lib/debug:/proc/%d/root/usr/lib/debug",
				       (int)rbi_target_pid(t));
		else
			len = snprintf(buf, sizeof(buf), ":.debug:/usr/lib/debug");
		if (len < 0 || (size_t)len >= sizeof(buf))
			len = snprintf(buf, sizeof(buf), ":.debug:/usr/lib/debug");
		if (!(lp->debuginfo_path = strdup(buf)))
			return rbi_fail(RBI_NOMEM, "out of memory");
		lp->callbacks.debuginfo_path = &lp->debuginfo_path;
	}
	dwfl = dwfl_begin(&lp->callbacks);
	if (!dwfl)
		return rbi_fail(RBI_DWARF, "dwfl_begin: %s", dwfl_errmsg(-1));
	lp->pub.dwfl = dwfl;
	dwfl_report_begin(dwfl);
	for (size_t i = 0; i < lp->pub.n; i++) {
		struct rbi_image *img = &lp->pub.v[i];
		struct image_priv *p = &lp->priv[i];
		void **ud;

		if (p->low >= img->end)
			p->low = img->start;
		img->mod = dwfl_report_module(dwfl, img->name, p->low, img->end);
		if (!img->mod) {
			rbi_diag_add(rbi_target_diag(t), "%s: libdwfl refused it: %s",
				     img->name, dwfl_errmsg(-1));
			continue;
		}
		dwfl_module_info(img->mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
		p->debuginfo_path = lp->debuginfo_path;
		*ud = p;
	}
	if (dwfl_report_end(dwfl, NULL, NULL) != 0)
		return rbi_fail(RBI_DWARF, "dwfl_report_end: %s", dwfl_errmsg(-1));
	return RBI_OK;
}

int rbi_images_load(struct rbi_target *t, struct rbi_image_list **out)
{
	struct image_list_priv *lp;
	const char *first_missing = NULL;
	size_t missing = 0;
	int rc;

	if (rbi_target_images(t)) {
		*out = rbi_target_images(t);
		return RBI_OK;
	}
	elf_version(EV_CURRENT);
	lp = calloc(1, sizeof(*lp));
	if (!lp)
		return rbi_fail(RBI_NOMEM, "out of memory");
	rc = images_collect(t, lp);
	if (rc == RBI_OK)
		images_drop_unloaded(lp);
	for (size_t i = 0; i < lp->pub.n; i++)
		lp->priv[i].img = &lp->pub.v[i];     /* v is final now */
	if (rc == RBI_OK) {
		rc = images_check_files(t, lp, &missing, &first_missing);
		if (rc == RBI_OK && missing)
			rbi_diag_add(rbi_target_diag(t), "%zu mapped file%s not found "
				     "(%s%s); reading what target memory holds of %s",
				     missing, missing > 1 ? "s" : "", first_missing,
				     missing > 1 ? ", ..." : "",
				     missing > 1 ? "them" : "it");
	}
	if (rc == RBI_OK)
		rc = images_report(t, lp);
	if (rc) {
		rbi_images_free(&lp->pub);
		return rbi_fail_context(rc, "loading the target's ELF images: ");
	}
	rbi_target_set_images(t, &lp->pub);
	*out = &lp->pub;
	return RBI_OK;
}

/* ---- Symbols ------------------------------------------------------------ */

static struct image_priv *image_priv_of(const struct rbi_image *img)
{
	void **ud;

	if (!img || !img->mod)
		return NULL;
	dwfl_module_info(img->mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
	return *ud;
}

/* Length of NAME without a "@VERSION" / "@@VERSION" suffix (ld writes
   versioned names into .symtab). */
static size_t sym_base_len(const char *name)
{
	return strcspn(name, "@");
}

/* Indexed by name: defined symbols, but for file-scope functions: those
   are 60 % of a libruby .symtab (9,700 of 15,800), and indexing them took
   0.4 ms of every command on a Ruby with its symbols. */
static bool sym_usable(const GElf_Sym *sym, GElf_Word shndx, const char *name)
{
	int type = GELF_ST_TYPE(sym->st_info);

	return name && name[0] && shndx != SHN_UNDEF &&
	       type != STT_SECTION && type != STT_FILE &&
	       !(type == STT_FUNC && GELF_ST_BIND(sym->st_info) == STB_LOCAL);
}

/* A symbol table as its file holds it. */
struct sym_table {
	Elf_Data *syms, *strs;
};

/* Symbol I of TAB, as dwfl_module_getsym_info gives it (without the
   address): its name, or NULL. */
static const char *sym_table_get(const struct sym_table *tab, int i, GElf_Sym *sym,
				 GElf_Word *shndx)
{
	if (!gelf_getsym(tab->syms, i, sym) || sym->st_name >= tab->strs->d_size)
		return NULL;
	/* SHN_XINDEX (the real index elsewhere) is a defined symbol too. */
	*shndx = sym->st_shndx;
	return (const char *)tab->strs->d_buf + sym->st_name;
}

/* The symbols of MOD as its main file holds them, when they are the ones
   libdwfl numbers (its .symtab, else its .dynsym: what libdwfl takes
   first, NSYMS entries): read there, a symbol costs a fifth of what
   dwfl_module_getsym_info takes, which was most of indexing them. */
static bool main_sym_table(Dwfl_Module *mod, int nsyms, struct sym_table *tab)
{
	GElf_Addr bias, addr;
	Elf *elf = dwfl_module_getelf(mod, &bias);
	Elf_Scn *scn = NULL, *found = NULL;
	GElf_Shdr sh, found_sh = { 0 };
	GElf_Sym sym;
	GElf_Word shndx;
	const char *mine, *theirs;

	while (elf && (scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		if (!found || sh.sh_type == SHT_SYMTAB) {
			found = scn;
			found_sh = sh;
		}
	}
	if (!found || !found_sh.sh_entsize ||
	    found_sh.sh_size / found_sh.sh_entsize != (uint64_t)nsyms)
		return false;
	tab->syms = elf_getdata(found, NULL);
	scn = elf_getscn(elf, found_sh.sh_link);
	tab->strs = scn ? elf_getdata(scn, NULL) : NULL;
	/* A string table ends with a NUL, so every name in it does. */
	if (!tab->syms || !tab->strs || !tab->strs->d_size ||
	    ((const char *)tab->strs->d_buf)[tab->strs->d_size - 1] != '\0')
		return false;
	/* The same table: its last symbol is libdwfl's. */
	mine = sym_table_get(tab, nsyms - 1, &sym, &shndx);
	theirs = dwfl_module_getsym_info(mod, nsyms - 1, &sym, &addr, &shndx, NULL, NULL);
	return mine && theirs && !strcmp(mine, theirs);
}

/* Index IMG's symbols by name, once. */
static int image_index(struct image_priv *p)
{
	Dwfl_Module *mod = p->img->mod;
	struct sym_table tab;
	bool direct;
	int nsyms;
	size_t nslots = 16;
	uint32_t *slots;

	if (p->nslots)
		return RBI_OK;
	if (p->index_failed)
		return RBI_ELF;
	nsyms = dwfl_module_getsymtab(mod);
	if (nsyms < 0 || (unsigned)nsyms > IMAGE_SYMS_MAX) {
		p->index_failed = true;
		return RBI_ELF;
	}
	while (nslots < (size_t)nsyms * 2)
		nslots *= 2;
	slots = calloc(nslots, sizeof(*slots));
	if (!slots)
		return RBI_NOMEM;
	direct = main_sym_table(mod, nsyms, &tab);
	for (int i = 1; i < nsyms; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		const char *name = direct ? sym_table_get(&tab, i, &sym, &shndx)
				   : dwfl_module_getsym_info(mod, i, &sym, &addr, &shndx,
							     NULL, NULL);

		if (!sym_usable(&sym, shndx, name))
			continue;
		size_t h = rbi_str_hash(name, sym_base_len(name)) & (nslots - 1);
		while (slots[h])
			h = (h + 1) & (nslots - 1);
		slots[h] = (uint32_t)i + 1;
	}
	p->slots = slots;
	p->nslots = nslots;
	return RBI_OK;
}

int rbi_image_symbol(const struct rbi_image *img, const char *name,
		     uint64_t *addr, uint64_t *size, bool *is_tls)
{
	struct image_priv *p = image_priv_of(img);
	size_t len, h;
	int best = -1, best_rank = -1;
	GElf_Sym best_sym = { 0 };
	GElf_Addr best_addr = 0;
	int rc;

	if (!p || !name)
		return RBI_ITER_END;
	if ((rc = image_index(p)) != RBI_OK)
		return rc == RBI_NOMEM ? rbi_fail(rc, "out of memory") : RBI_ITER_END;
	len = strlen(name);
	h = rbi_str_hash(name, len) & (p->nslots - 1);
	/* Every symbol of that name: prefer GLOBAL, then WEAK, then LOCAL;
	   among equals the first in the table. */
	for (size_t probes = 0; p->slots[h] && probes < p->nslots; probes++) {
		int ndx = (int)p->slots[h] - 1;
		GElf_Sym sym;
		GElf_Addr a;
		GElf_Word shndx;
		const char *s = dwfl_module_getsym_info(img->mod, ndx, &sym, &a, &shndx,
							 NULL, NULL);

		h = (h + 1) & (p->nslots - 1);
		if (!s || sym_base_len(s) != len || memcmp(s, name, len) != 0)
			continue;
		int bind = GELF_ST_BIND(sym.st_info);
		int rank = bind == STB_GLOBAL ? 3 : bind == STB_WEAK ? 2 :
			   bind == STB_GNU_UNIQUE ? 2 : 1;
		if (s[len] == '@' && s[len + 1] != '@')
			rank = 0;       /* a non-default version */
		if (rank > best_rank) {
			best = ndx;
			best_rank = rank;
			best_sym = sym;
			best_addr = a;
		}
	}
	if (best < 0)
		return RBI_ITER_END;
	bool tls = GELF_ST_TYPE(best_sym.st_info) == STT_TLS;
	if (addr)
		*addr = tls ? best_sym.st_value : best_addr;
	if (size)
		*size = best_sym.st_size;
	if (is_tls)
		*is_tls = tls;
	return RBI_OK;
}

/* Does IMG's file name look like Ruby's (libruby-3.3.so, ruby3.4, ruby)? */
static bool image_looks_ruby(const struct rbi_image *img)
{
	const char *base = strrchr(img->name, '/');

	base = base ? base + 1 : img->name;
	return strstr(base, "ruby") != NULL;
}

struct rbi_image *rbi_images_at(struct rbi_image_list *l, uint64_t addr)
{
	for (size_t i = 0; l && i < l->n; i++)
		if (addr >= l->v[i].start && addr < l->v[i].end)
			return &l->v[i];
	return NULL;
}

int rbi_image_writable(const struct rbi_image *img, uint64_t *start, uint64_t *end)
{
	GElf_Addr bias = 0;
	Elf *elf = img && img->mod ? dwfl_module_getelf(img->mod, &bias) : NULL;
	size_t nph = 0;
	GElf_Phdr ph;

	if (!elf || elf_getphdrnum(elf, &nph) != 0)
		return rbi_fail(RBI_ELF, "no program headers for %s", img ? img->name : "?");
	for (size_t i = 0; i < nph && i < IMAGE_PHNUM_MAX; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    !(ph.p_flags & PF_W))
			continue;
		*start = bias + ph.p_vaddr;
		*end = *start + ph.p_memsz;
		return RBI_OK;
	}
	return RBI_ITER_END;
}

const struct rbi_image *rbi_images_find_symbol(struct rbi_image_list *l,
					       const char *name)
{
	if (!l || !name)
		return NULL;
	/* Ruby's own images first: the others may be memory copies, which
	   cost a read of the whole image. */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < l->n; i++) {
			const struct rbi_image *img = &l->v[i];

			if (image_looks_ruby(img) != (pass == 0))
				continue;
			if (rbi_image_symbol(img, name, NULL, NULL, NULL) == RBI_OK)
				return img;
		}
	}
	return NULL;
}

Dwarf *rbi_image_dwarf(const struct rbi_image *img, Dwarf_Addr *bias)
{
	Dwarf_Addr b = 0;
	Dwarf *dw;

	if (!img || !img->mod)
		return NULL;
	dw = dwfl_module_getdwarf(img->mod, &b);
	if (dw && bias)
		*bias = b;
	return dw;
}
