/* unpack.c: compressed core files, opened as they are.
 *
 * systemd-coredump stores cores compressed (zstd by default; lz4 or xz as
 * configured), and people gzip or xz cores to carry them.  A compressed
 * core is decompressed as a stream into an anonymous memory file (memfd),
 * never to disk, and the core backend then reads that as it reads any core.
 * Cores are mostly holes (untouched heap reservations, pages the kernel did
 * not dump), so zero blocks are not written: the memfd stays sparse and
 * holds only the core's real bytes.  Each format is read by its own
 * library: zlib, liblzma, libzstd, liblz4.  Compressed input is untrusted:
 * what it may decompress to is bounded by the core's own ELF headers (the
 * first bytes of the stream) and by the memory free to this process (the
 * machine's, and its memory cgroup's: rbi_memory_room). */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <lz4frame.h>
#include <lzma.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "internal.h"

#define UNPACK_IN   (1u << 20)  /* compressed bytes read at a time */
#define UNPACK_OUT  (1u << 20)  /* decompressed bytes written at a time */
#define UNPACK_PAGE 4096u       /* zero blocks of this size are holes */

/* One decoder.  step() decompresses from *IN (*IN_LEN bytes) into OUT (at
   most *OUT_LEN bytes), updating both to what it consumed and produced;
   it returns 1 when a whole stream (a gzip member, a zstd or lz4 frame)
   has ended there, 0 to go on, -1 on corrupt data.  Several streams one
   after another are one core; with *IN_LEN 0 it is the end of the input. */
struct codec {
	const char *name;
	const unsigned char *magic;
	size_t magic_len;
	bool (*init)(void **state);
	int (*step)(void *state, const unsigned char **in, size_t *in_len,
		    unsigned char *out, size_t *out_len);
	void (*end)(void *state);
};

/* ---- gzip (zlib) --------------------------------------------------------- */

static bool gz_init(void **state)
{
	z_stream *z = calloc(1, sizeof(*z));

	/* 15 + 32: a gzip or zlib header, found by itself. */
	if (!z || inflateInit2(z, 15 + 32) != Z_OK) {
		free(z);
		return false;
	}
	*state = z;
	return true;
}

static int gz_step(void *state, const unsigned char **in, size_t *in_len,
		   unsigned char *out, size_t *out_len)
{
	z_stream *z = state;
	int rc;

	z->next_in = (unsigned char *)*in;
	z->avail_in = (uInt)*in_len;
	z->next_out = out;
	z->avail_out = (uInt)*out_len;
	rc = inflate(z, Z_NO_FLUSH);
	*out_len -= z->avail_out;
	*in += *in_len - z->avail_in;
	*in_len = z->avail_in;
	/* gzip -c a b > c makes several members: ready for the next. */
	if (rc == Z_STREAM_END)
		return inflateReset(z) == Z_OK ? 1 : -1;
	return rc == Z_OK || rc == Z_BUF_ERROR ? 0 : -1;
}

static void gz_end(void *state)
{
	inflateEnd(state);
	free(state);
}

/* ---- xz (liblzma) -------------------------------------------------------- */

static bool xz_init(void **state)
{
	lzma_stream *s = calloc(1, sizeof(*s));

	if (!s || lzma_stream_decoder(s, UINT64_MAX, LZMA_CONCATENATED) != LZMA_OK) {
		free(s);
		return false;
	}
	*state = s;
	return true;
}

static int xz_step(void *state, const unsigned char **in, size_t *in_len,
		   unsigned char *out, size_t *out_len)
{
	lzma_stream *s = state;
	lzma_ret rc;

	s->next_in = *in;
	s->avail_in = *in_len;
	s->next_out = out;
	s->avail_out = *out_len;
	/* LZMA_CONCATENATED wants LZMA_FINISH once all input was given. */
	rc = lzma_code(s, *in_len ? LZMA_RUN : LZMA_FINISH);
	*out_len -= s->avail_out;
	*in += *in_len - s->avail_in;
	*in_len = s->avail_in;
	return rc == LZMA_STREAM_END ? 1 : rc == LZMA_OK || rc == LZMA_BUF_ERROR ? 0 : -1;
}

static void xz_end(void *state)
{
	lzma_end(state);
	free(state);
}

/* ---- zstd ---------------------------------------------------------------- */

static bool zst_init(void **state)
{
	return (*state = ZSTD_createDStream()) != NULL;
}

static int zst_step(void *state, const unsigned char **in, size_t *in_len,
		    unsigned char *out, size_t *out_len)
{
	ZSTD_inBuffer ib = { *in, *in_len, 0 };
	ZSTD_outBuffer ob = { out, *out_len, 0 };
	size_t rc = ZSTD_decompressStream(state, &ob, &ib);

	*in += ib.pos;
	*in_len -= ib.pos;
	*out_len = ob.pos;
	if (ZSTD_isError(rc))
		return -1;
	return rc == 0 ? 1 : 0;        /* 0: a frame ended */
}

static void zst_end(void *state)
{
	ZSTD_freeDStream(state);
}

/* ---- lz4 (frame format) -------------------------------------------------- */

static bool lz4_init(void **state)
{
	LZ4F_dctx *d;

	if (LZ4F_isError(LZ4F_createDecompressionContext(&d, LZ4F_VERSION)))
		return false;
	*state = d;
	return true;
}

static int lz4_step(void *state, const unsigned char **in, size_t *in_len,
		    unsigned char *out, size_t *out_len)
{
	size_t src = *in_len;
	size_t rc = LZ4F_decompress(state, out, out_len, *in, &src, NULL);

	*in += src;
	*in_len -= src;
	if (LZ4F_isError(rc))
		return -1;
	return rc == 0 ? 1 : 0;        /* 0: a frame ended */
}

static void lz4_end(void *state)
{
	LZ4F_freeDecompressionContext(state);
}

static const unsigned char gz_magic[] = { 0x1f, 0x8b };
static const unsigned char xz_magic[] = { 0xfd, '7', 'z', 'X', 'Z', 0 };
static const unsigned char zst_magic[] = { 0x28, 0xb5, 0x2f, 0xfd };
static const unsigned char lz4_magic[] = { 0x04, 0x22, 0x4d, 0x18 };

static const struct codec codecs[] = {
	{ "gzip", gz_magic, sizeof(gz_magic), gz_init, gz_step, gz_end },
	{ "xz", xz_magic, sizeof(xz_magic), xz_init, xz_step, xz_end },
	{ "zstd", zst_magic, sizeof(zst_magic), zst_init, zst_step, zst_end },
	{ "lz4", lz4_magic, sizeof(lz4_magic), lz4_init, lz4_step, lz4_end },
};

/* ---- the stream into a memfd --------------------------------------------- */

struct sink {
	int fd;
	uint64_t size;          /* bytes decompressed so far */
	uint64_t stored;        /* of them, in the memfd (non-zero pages) */
	uint64_t end;           /* where the core ends, by its ELF headers;
				   UINT64_MAX until they are in */
	uint64_t room;          /* memory free for the memfd
				   (rbi_memory_room); UINT64_MAX if unknown */
	bool room_by_cgroup;    /* the memory cgroup's limit bounds it */
	void (*progress)(uint64_t done, uint64_t total, void *arg);
	void *progress_arg;
	uint64_t progress_due;  /* CLOCK_MONOTONIC ns of the next call */
};

#define PROGRESS_NS 250000000ull

/* Tell S's progress callback, at most every PROGRESS_NS. */
static void sink_progress(struct sink *s)
{
	uint64_t now;

	if (!s->progress || (now = rbi_now_ns()) < s->progress_due)
		return;
	s->progress_due = now + PROGRESS_NS;
	s->progress(s->size, s->end == UINT64_MAX ? 0 : s->end, s->progress_arg);
}

/* LEN bytes of the memfd at OFF into BUF (holes read as zeros). */
static bool sink_read(const struct sink *s, uint64_t off, void *buf, size_t len)
{
	return pread(s->fd, buf, len, (off_t)off) == (ssize_t)len;
}

/* Where the core S is decompressing ends, once its ELF header and program
   headers are in (the end of its last segment, or of its section headers):
   RBI_OK with s->end set, or not yet (s->end stays), or RBI_NOT_ELF or
   RBI_CORRUPT for what is no ELF core.  A core of more than 65535
   segments (PN_XNUM) keeps the count in its first section header. */
static int sink_end(struct sink *s)
{
	Elf64_Ehdr eh;
	Elf64_Shdr sh0;
	Elf64_Phdr ph;
	uint64_t phnum, end;

	_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "cores are read as "
		       "this machine's: little-endian ELF structs");
	if (s->size < sizeof(eh))
		return RBI_OK;
	if (!sink_read(s, 0, &eh, sizeof(eh)) || memcmp(eh.e_ident, ELFMAG, SELFMAG))
		return rbi_fail(RBI_NOT_ELF, "it decompresses to something that is not an "
				"ELF file");
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
		return rbi_fail(RBI_CORRUPT, "it decompresses to an ELF file that is no 64-bit "
				"little-endian core");
	if (eh.e_phentsize != sizeof(ph))
		return rbi_fail(RBI_CORRUPT, "its ELF header describes no core's program "
				"headers");
	end = eh.e_shoff + (uint64_t)eh.e_shnum * sizeof(sh0);
	phnum = eh.e_phnum;
	if (phnum == PN_XNUM) {         /* the count is section 0's sh_info */
		if (s->size < eh.e_shoff + sizeof(sh0))
			return RBI_OK;
		if (!sink_read(s, eh.e_shoff, &sh0, sizeof(sh0)))
			return rbi_fail(RBI_CORRUPT, "its section header 0 cannot be read");
		phnum = sh0.sh_info;
	}
	if (eh.e_phoff > s->size || phnum * sizeof(ph) > s->size - eh.e_phoff)
		return RBI_OK;
	if (eh.e_phoff + phnum * sizeof(ph) > end)
		end = eh.e_phoff + phnum * sizeof(ph);
	for (uint64_t i = 0; i < phnum; i++) {
		if (!sink_read(s, eh.e_phoff + i * sizeof(ph), &ph, sizeof(ph)))
			return rbi_fail(RBI_CORRUPT, "its program header %" PRIu64 " cannot "
					"be read", i);
		if (ph.p_offset + ph.p_filesz < ph.p_offset)
			return rbi_fail(RBI_CORRUPT, "its program header %" PRIu64 " ends past "
					"2^64", i);
		if (ph.p_offset + ph.p_filesz > end)
			end = ph.p_offset + ph.p_filesz;
	}
	s->end = end;
	return RBI_OK;
}

/* Write BUF's non-zero pages at their place in the memfd. */
static int sink_write(struct sink *s, const unsigned char *buf, size_t len)
{
	static const unsigned char zero[UNPACK_PAGE];

	for (size_t off = 0; off < len;) {
		size_t n = len - off < UNPACK_PAGE ? len - off : UNPACK_PAGE;

		if (memcmp(buf + off, zero, n) != 0) {
			ssize_t w = pwrite(s->fd, buf + off, n, (off_t)(s->size + off));

			if (w < 0 && errno == EINTR)
				continue;
			if (w != (ssize_t)n)
				return -(w < 0 ? errno : ENOSPC);
			s->stored += n;
		}
		off += n;
	}
	s->size += len;
	return 0;
}

/* What S may not become: more than its ELF headers say the core is (a
   bomb: a few kilobytes that decompress to terabytes), or more than the
   machine's free memory holds (the memfd's pages are memory, not this
   process's resident set: the OOM killer would end it, or another). */
static int sink_bounds(struct sink *s, const char *path)
{
	int rc;

	if (s->end == UINT64_MAX && (rc = sink_end(s)))
		return rbi_fail_context(rc, "%s: ", path);
	if (s->size > s->end)
		return rbi_fail(RBI_CORRUPT, "%s: it decompresses past the %" PRIu64 " bytes "
				"its ELF headers give the core: not one core", path, s->end);
	if (s->stored > s->room / 10 * 9)
		return rbi_fail(RBI_NOMEM, "%s: the decompressed core needs more memory than "
				"%s (%" PRIu64 " MiB of %" PRIu64 " MiB, after %" PRIu64
				" of %" PRIu64 " bytes); decompress it to a file first", path,
				s->room_by_cgroup ? "its memory cgroup's limit leaves free" :
				"this machine has free", s->stored >> 20, s->room >> 20,
				s->size, s->end);
	return RBI_OK;
}

static int unpack_stream(const struct codec *k, void *state, int in_fd,
			 const char *path, struct sink *s)
{
	unsigned char *in = malloc(UNPACK_IN), *out = malloc(UNPACK_OUT);
	const unsigned char *p = in;
	size_t avail = 0;
	bool eof = false, boundary = false;
	int rc = RBI_OK;

	if (!in || !out) {
		rc = rbi_fail(RBI_NOMEM, "out of memory");
		goto out;
	}
	for (;;) {
		size_t produced = UNPACK_OUT, before;
		int err, step;

		if (avail == 0 && !eof) {
			ssize_t n = read(in_fd, in, UNPACK_IN);

			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				rc = rbi_fail(RBI_SYSTEM, "reading %s: %s", path, strerror(errno));
				goto out;
			}
			p = in;
			avail = (size_t)n;
			eof = n == 0;
		}
		/* All read, and the last stream ended: the whole core. */
		if (eof && avail == 0 && boundary)
			break;
		before = avail;
		step = k->step(state, &p, &avail, out, &produced);
		if (step < 0) {
			rc = rbi_fail(RBI_TRUNCATED, "%s: corrupt %s data after %" PRIu64
				      " decompressed bytes", path, k->name, s->size);
			goto out;
		}
		if (produced && (err = sink_write(s, out, produced)) < 0) {
			rc = rbi_fail(RBI_NOMEM, "%s: no memory for the decompressed core "
				      "(%" PRIu64 " bytes so far: %s); decompress it to a "
				      "file first", path, s->size, strerror(-err));
			goto out;
		}
		if ((rc = sink_bounds(s, path)))
			goto out;
		sink_progress(s);
		if (step == 1)
			boundary = true;
		else if (produced || avail != before)
			boundary = false;
		else if (eof || avail) {
			/* No progress: the input ended inside a stream, or a
			   decoder takes nothing more of it. */
			rc = rbi_fail(RBI_TRUNCATED, "%s: %s data ends early (core truncated "
				      "after %" PRIu64 " bytes)", path, k->name, s->size);
			goto out;
		}
	}
out:
	free(in);
	free(out);
	return rc;
}

int rbi_core_unpack(int fd, const char *path, const unsigned char *head, size_t head_len,
		    const struct rbi_open_opts *opts, int *out_fd)
{
	const struct codec *k = NULL;
	struct sink s = { .fd = -1, .end = UINT64_MAX };
	void *state = NULL;
	int rc;

	for (size_t i = 0; i < RBI_ARRAY_SIZE(codecs); i++)
		if (head_len >= codecs[i].magic_len &&
		    !memcmp(head, codecs[i].magic, codecs[i].magic_len))
			k = &codecs[i];
	if (!k)
		return RBI_ITER_END;
	s.room = rbi_memory_room(&s.room_by_cgroup);
	if (opts && RBI_HAS_FIELD(opts, progress_arg) && opts->progress) {
		s.progress = opts->progress;
		s.progress_arg = opts->progress_arg;
		s.progress_due = rbi_now_ns() + PROGRESS_NS;
	}
	if (lseek(fd, 0, SEEK_SET) != 0)
		return rbi_fail(RBI_SYSTEM, "%s: %s", path, strerror(errno));
	s.fd = memfd_create("rbinspect-core", MFD_CLOEXEC);
	if (s.fd < 0)
		return rbi_fail(RBI_SYSTEM, "memfd_create: %s", strerror(errno));
	if (!k->init(&state)) {
		close(s.fd);
		return rbi_fail(RBI_NOMEM, "%s: cannot start a %s decoder", path, k->name);
	}
	rc = unpack_stream(k, state, fd, path, &s);
	k->end(state);
	if (rc == RBI_OK && ftruncate(s.fd, (off_t)s.size) != 0)
		rc = rbi_fail(RBI_SYSTEM, "%s: %s", path, strerror(errno));
	if (rc) {
		close(s.fd);
		return rc;
	}
	*out_fd = s.fd;
	return RBI_OK;
}
