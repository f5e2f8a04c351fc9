/* buildid.c: GNU build-id notes, from a file or from an image in target
 * memory.  The two are compared before a file on disk may stand in for
 * bytes a core lacks (core.c) or supply symbols (image/). */
#include <errno.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <elfutils/libdwelf.h>

#include "internal.h"

/* Headers and the build-id note sit in the first page of every image we
   care about; 64 KiB also covers images linked with 64 KiB pages. */
#define HEADER_READ_FIRST 4096u
#define HEADER_READ_MAX (64u * 1024u)

static int build_id_set(struct rbi_build_id *id, const void *p, size_t len)
{
	if (len == 0 || len > RBI_BUILD_ID_MAX)
		return -1;
	memcpy(id->bytes, p, len);
	id->len = len;
	return 0;
}

/* Look for NT_GNU_BUILD_ID in the note segment at buffer offset OFF. */
static bool find_build_id_note(Elf *elf, uint64_t off, uint64_t size,
			       uint64_t align, struct rbi_build_id *id)
{
	Elf_Data *data;
	GElf_Nhdr nhdr;
	size_t name_off, desc_off;
	size_t pos = 0, next;

	data = elf_getdata_rawchunk(elf, (int64_t)off, size,
				    align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
	if (!data)
		return false;
	while (pos < data->d_size &&
	       (next = gelf_getnote(data, pos, &nhdr, &name_off, &desc_off)) > 0) {
		if (nhdr.n_type == NT_GNU_BUILD_ID && nhdr.n_namesz == 4 &&
		    memcmp((const char *)data->d_buf + name_off, "GNU", 4) == 0 &&
		    build_id_set(id, (const char *)data->d_buf + desc_off,
				 nhdr.n_descsz) == 0)
			return true;
		pos = next;
	}
	return false;
}

/* The address of an image's first byte (file offset 0) is BASE; a segment's
   bytes are at BASE + p_vaddr - (first PT_LOAD's p_vaddr - p_offset). */
static int build_id_from_header(Elf *elf, size_t avail, uint64_t base, bool in_file,
				struct rbi_build_id *id)
{
	GElf_Phdr ph;
	size_t phnum, i;
	uint64_t link_base = 0;
	bool have_load = false, unreadable = false;

	if (elf_getphdrnum(elf, &phnum) != 0)
		return rbi_fail(RBI_ELF, "ELF image at 0x%" PRIx64
				": bad program headers: %s", base, elf_errmsg(-1));
	for (i = 0; i < phnum; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph))
			return rbi_fail(RBI_UNMAPPED, "ELF image at 0x%" PRIx64
					": program headers not readable", base);
		if (ph.p_type == PT_LOAD && !have_load) {
			if (ph.p_vaddr < ph.p_offset)
				return rbi_fail(RBI_CORRUPT, "ELF image at 0x%"
						PRIx64 ": first PT_LOAD below its "
						"file offset", base);
			link_base = ph.p_vaddr - ph.p_offset;
			have_load = true;
		}
	}
	for (i = 0; i < phnum; i++) {
		uint64_t off;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		if (have_load && !in_file) {
			if (ph.p_vaddr < link_base)
				continue;
			off = ph.p_vaddr - link_base;
		} else {
			off = ph.p_offset;
		}
		if (off > avail || ph.p_filesz > avail - off) {
			unreadable = true;
			continue;
		}
		if (find_build_id_note(elf, off, ph.p_filesz, ph.p_align, id))
			return RBI_OK;
	}
	if (unreadable)
		return rbi_fail(RBI_UNMAPPED, "ELF image at 0x%" PRIx64
				": its notes are not readable", base);
	return RBI_OK;
}

/* The build-id of the image whose first LEN bytes are at BASE: from its
   program headers and notes, read into BUF (LEN bytes of room). */
static int build_id_read(rbi_read_fn read, void *ctx, uint64_t base, bool in_file,
			 unsigned char *buf, size_t len, size_t *got, struct rbi_build_id *id)
{
	Elf *elf;
	size_t n = 0;
	int rc = read(ctx, base, buf, len, &n);

	if (rc != RBI_OK && rc != RBI_PARTIAL)
		n = 0;
	if (n > len)
		n = len;
	*got = n;
	if (n < SELFMAG) {
		/* A failure of the memory itself (the process exited) keeps
		   the backend's explanation. */
		if (rc == RBI_OK || rc == RBI_PARTIAL || rc == RBI_UNMAPPED)
			rc = rbi_fail(RBI_UNMAPPED, "no ELF header readable at 0x%" PRIx64,
				      base);
		return rc;
	}
	if (memcmp(buf, ELFMAG, SELFMAG) != 0)
		return rbi_fail(RBI_NOT_ELF, "no ELF image at 0x%" PRIx64, base);
	elf_version(EV_CURRENT);
	elf = elf_memory((char *)buf, n);
	if (!elf || elf_kind(elf) != ELF_K_ELF)
		rc = rbi_fail(RBI_UNMAPPED, "ELF header at 0x%" PRIx64
			      " not readable (%zu bytes)", base, n);
	else
		rc = build_id_from_header(elf, n, base, in_file, id);
	if (elf)
		elf_end(elf);
	return rc;
}

/* From the start of an image: in memory (its layout) or in its file. */
static int build_id_from_start(rbi_read_fn read, void *ctx, uint64_t base, bool in_file,
			       struct rbi_build_id *id)
{
	/* The headers and notes are mostly in the first page: more is read
	   only when they are not, or for an image mapped in smaller
	   pieces. */
	static const size_t sizes[] = { HEADER_READ_FIRST, HEADER_READ_MAX };
	unsigned char *buf;
	size_t got = 0;
	int rc = RBI_OK;

	id->len = 0;
	buf = malloc(HEADER_READ_MAX);
	if (!buf)
		return rbi_fail(RBI_NOMEM, "out of memory");
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		rc = build_id_read(read, ctx, base, in_file, buf, sizes[i], &got, id);
		/* Whatever was not in the bytes read fails as unreadable. */
		if (rc != RBI_UNMAPPED || got < sizes[i])
			break;
	}
	free(buf);
	return rc;
}

int rbi_build_id_from_memory(rbi_read_fn read, void *ctx, uint64_t base,
			     struct rbi_build_id *id)
{
	return build_id_from_start(read, ctx, base, false, id);
}

static int pread_fn(void *ctx, uint64_t addr, void *buf, size_t len, size_t *n)
{
	ssize_t got = pread(*(int *)ctx, buf, len, (off_t)addr);

	*n = got > 0 ? (size_t)got : 0;
	return got < 0 ? rbi_fail(RBI_SYSTEM, "reading a file: %s", strerror(errno)) :
	       (size_t)got < len ? RBI_PARTIAL : RBI_OK;
}

/* libelf's way: sections too, for a file whose program headers name no
   note. */
static int build_id_from_sections(int fd, struct rbi_build_id *id)
{
	const void *p = NULL;
	ssize_t len;
	Elf *elf;
	int rc = RBI_OK;

	id->len = 0;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		rc = rbi_fail(RBI_NOT_ELF, "not an ELF file");
		goto out;
	}
	len = dwelf_elf_gnu_build_id(elf, &p);
	if (len < 0)
		rc = rbi_fail(RBI_ELF, "reading build-id: %s", elf_errmsg(-1));
	else if (len > 0)
		build_id_set(id, p, (size_t)len);
out:
	if (elf)
		elf_end(elf);
	return rc;
}

int rbi_build_id_from_fd(int fd, struct rbi_build_id *id)
{
	/* The program headers' notes, as in memory: a page of the file,
	   where mapping it all and reading its section table cost more than
	   the rest of the image's checks. */
	if (build_id_from_start(pread_fn, &fd, 0, true, id) == RBI_OK && id->len)
		return RBI_OK;
	return build_id_from_sections(fd, id);
}

/* True only when both have an id and the ids are the same: "no id" never
   matches anything, not even another "no id". */
bool rbi_build_id_equal(const struct rbi_build_id *a, const struct rbi_build_id *b)
{
	return a->len > 0 && a->len == b->len &&
	       memcmp(a->bytes, b->bytes, a->len) == 0;
}

void rbi_build_id_hex(const struct rbi_build_id *id, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t len = id->len > RBI_BUILD_ID_MAX ? RBI_BUILD_ID_MAX : id->len;

	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[id->bytes[i] >> 4];
		out[2 * i + 1] = digits[id->bytes[i] & 15];
	}
	out[2 * len] = '\0';
}
