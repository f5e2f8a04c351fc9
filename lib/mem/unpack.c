/* unpack.c: compressed core files, opened as they are.
 *
 * systemd-coredump stores cores compressed (zstd by default; lz4 or xz as
 * configured), and people gzip or xz cores to carry them.  A compressed
 * core is decompressed as a stream into an anonymous memory file (memfd),
 * never to disk, and the core backend then reads that as it reads any core.
 * Cores are mostly holes (untouched heap reservations, pages the kernel did
 * not dump), so zero blocks are not written: the memfd stays sparse and
 * holds only the core's real bytes.  Each format is read by its own
 * library: zlib, liblzma, libzstd, liblz4. */
#define _GNU_SOURCE
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
};

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
		}
		off += n;
	}
	s->size += len;
	return 0;
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
		    int *out_fd)
{
	const struct codec *k = NULL;
	struct sink s = { .fd = -1 };
	void *state = NULL;
	int rc;

	for (size_t i = 0; i < RBI_ARRAY_SIZE(codecs); i++)
		if (head_len >= codecs[i].magic_len &&
		    !memcmp(head, codecs[i].magic, codecs[i].magic_len))
			k = &codecs[i];
	if (!k)
		return RBI_ITER_END;
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
