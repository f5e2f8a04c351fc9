/* cache.c: a direct-mapped page cache in front of every backend.
 *
 * Walking Ruby structures means many small reads (a frame, an iseq body, a
 * string header) that cluster on few pages; one 4 KiB process_vm_readv or
 * pread costs about as much as an 8-byte one.  Reads larger than a page
 * bypass it (heap pages are read whole, once).  The cache holds bytes of a
 * moving target, so rbi_target_refresh() clears it; a backend whose bytes
 * never change (RBI_MEM_STATIC: cores) keeps its pages for good.
 * Collecting (internal.h: rbi_target_collect_begin) turns the misses of
 * several readers into one batched read. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "mem/target.h"

void rbi_cache_clear(struct rbi_cache *c)
{
	if (c->tags)
		memset(c->tags, 0, RBI_CACHE_SLOTS * sizeof(*c->tags));
}

void rbi_cache_free(struct rbi_cache *c)
{
	free(c->tags);
	free(c->data);
	c->tags = NULL;
	c->data = NULL;
}

/* The cache slot of PAGE (direct-mapped). */
static size_t slot_of(uint64_t page)
{
	return (page / RBI_CACHE_PAGE) % RBI_CACHE_SLOTS;
}

/* Note PAGE as wanted by a collecting round (once; beyond
   RBI_CACHE_WANT_MAX, the next round asks again). */
static void want(struct rbi_cache *c, uint64_t page)
{
	for (size_t i = 0; i < c->nwant; i++)
		if (c->want[i] == page)
			return;
	if (c->nwant < RBI_CACHE_WANT_MAX)
		c->want[c->nwant++] = page;
}

/* The slot holding PAGE, filled from the backend if needed: its tag, and
   its bytes in *DATA.  NULL when the backend has no byte of it (the caller
   then reads directly to get the backend's own status), or when
   collecting and it is not cached (the page is noted instead). */
static struct rbi_cache_tag *cache_page(struct rbi_target *t, uint64_t page,
					const uint8_t **data)
{
	struct rbi_cache *c = &t->cache;
	size_t slot = slot_of(page), n = 0;
	struct rbi_cache_tag *s;
	uint8_t *d;

	if (!c->tags) {
		c->tags = calloc(RBI_CACHE_SLOTS, sizeof(*c->tags));
		c->data = malloc((size_t)RBI_CACHE_SLOTS * RBI_CACHE_PAGE);
		if (!c->tags || !c->data) {
			rbi_cache_free(c);
			return NULL;
		}
	}
	s = &c->tags[slot];
	d = c->data + slot * RBI_CACHE_PAGE;
	*data = d;
	if (s->page == page + 1)
		return s;
	if (c->collecting) {
		want(c, page);
		return NULL;
	}
	s->page = 0;
	int rc = rbi_backend_read(t, page, d, RBI_CACHE_PAGE, &n);
	if ((rc != RBI_OK && rc != RBI_PARTIAL) || n == 0)
		return NULL;
	s->page = page + 1;
	s->valid = (uint32_t)n;
	return s;
}

int rbi_cache_read(struct rbi_target *t, uint64_t addr, void *buf, size_t len,
		   size_t *nread)
{
	uint8_t *dst = buf;
	size_t done = 0;

	*nread = 0;
	if (len == 0)
		return RBI_OK;
	if (addr + len < addr)
		return RBI_UNMAPPED;
	if (len > RBI_CACHE_PAGE)
		return rbi_backend_read(t, addr, buf, len, nread);

	while (done < len) {
		uint64_t a = addr + done;
		uint64_t page = a & ~(uint64_t)(RBI_CACHE_PAGE - 1);
		size_t off = a - page;
		const uint8_t *data;
		struct rbi_cache_tag *s = cache_page(t, page, &data);

		if (!s && t->cache.collecting) {
			t->cache.missed++;
			*nread = done;
			return RBI_UNMAPPED;
		}
		if (!s) {
			/* Let the backend say why (unmapped, gone, denied). */
			size_t n = 0;
			int rc = rbi_backend_read(t, a, dst + done, len - done, &n);

			*nread = done + n;
			if (rc == RBI_UNMAPPED && done)
				return RBI_PARTIAL;
			return rc;
		}
		if (off >= s->valid) {
			*nread = done;
			return done ? RBI_PARTIAL : RBI_UNMAPPED;
		}
		size_t chunk = s->valid - off;
		if (chunk > len - done)
			chunk = len - done;
		memcpy(dst + done, data + off, chunk);
		done += chunk;
		if (off + chunk < RBI_CACHE_PAGE && done < len) {
			*nread = done;
			return RBI_PARTIAL;
		}
	}
	*nread = done;
	return RBI_OK;
}

void rbi_target_collect_begin(struct rbi_target *t)
{
	struct rbi_cache *c = &t->cache;

	c->collecting = !(t->ops->flags & RBI_MEM_STATIC);
	c->nwant = 0;
	c->missed = 0;
}

size_t rbi_target_missed(const struct rbi_target *t)
{
	return t->cache.missed;
}

size_t rbi_target_collect_end(struct rbi_target *t)
{
	struct rbi_cache *c = &t->cache;
	struct rbi_iov iov[RBI_CACHE_WANT_MAX];
	size_t n = 0;

	c->collecting = false;
	if (!c->tags)
		return 0;
	for (size_t i = 0; i < c->nwant; i++) {
		uint8_t *buf = c->data + slot_of(c->want[i]) * RBI_CACHE_PAGE;
		bool taken = false;

		/* A second page for one slot waits for the next round. */
		for (size_t j = 0; j < n; j++)
			taken |= iov[j].buf == buf;
		if (!taken)
			iov[n++] = (struct rbi_iov){ .addr = c->want[i], .buf = buf,
						     .len = RBI_CACHE_PAGE };
	}
	c->nwant = 0;
	for (size_t i = 0; i < n; i++)
		c->tags[slot_of(iov[i].addr)].page = 0;
	if (!n || rbi_target_read_batch(t, iov, n))
		return 0;
	size_t fetched = 0;
	for (size_t i = 0; i < n; i++) {
		if (iov[i].status == RBI_UNMAPPED || !iov[i].nread)
			continue;
		c->tags[slot_of(iov[i].addr)] = (struct rbi_cache_tag){ .page = iov[i].addr + 1,
							 .valid = (uint32_t)iov[i].nread };
		fetched++;
	}
	return fetched;
}
