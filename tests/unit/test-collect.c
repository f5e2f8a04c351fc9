/* test-collect.c: the page cache's collecting rounds (mem/cache.c,
 * rbi_target_collect_begin/end): a read that misses while collecting notes
 * its page and reads nothing; the noted pages come in one batch, and are
 * then read from the cache; an unreadable page is not cached; two pages of
 * one slot wait a round each; a snapshot's reads are never collected.
 * Made-up memory whose backend counts its calls: no Ruby needed. */
#include <string.h>

#include "internal.h"
#include "tap.h"

#define PAGE RBI_CACHE_PAGE
#define BASE 0x100000u
#define PAGES 4u                /* readable; the page after them is not */

static unsigned char mem[PAGES * PAGE];
static unsigned reads, batches, batched;

static int be_read(void *be, uint64_t addr, void *buf, size_t len, size_t *nread)
{
	size_t n = 0;

	(void)be;
	reads++;
	if (addr >= BASE && addr < BASE + sizeof(mem)) {
		n = BASE + sizeof(mem) - addr;
		n = n < len ? n : len;
		memcpy(buf, mem + (addr - BASE), n);
	}
	*nread = n;
	return n == len ? RBI_OK : n ? RBI_PARTIAL : RBI_UNMAPPED;
}

static int be_read_batch(void *be, struct rbi_iov *iov, size_t n)
{
	batches++;
	batched += (unsigned)n;
	for (size_t i = 0; i < n; i++) {
		iov[i].status = be_read(be, iov[i].addr, iov[i].buf, iov[i].len, &iov[i].nread);
		reads--;
	}
	return RBI_OK;
}

static int be_region(void *be, size_t index, struct rbi_region *out)
{
	(void)be;
	if (index > 0)
		return RBI_ITER_END;
	*out = (struct rbi_region){ .start = BASE, .end = BASE + sizeof(mem),
				    .prot = RBI_PROT_READ };
	return RBI_OK;
}

static struct rbi_mem_ops ops = {
	.size = sizeof(struct rbi_mem_ops),
	.read = be_read, .read_batch = be_read_batch, .region = be_region,
};

/* The word at ADDR, read through the cache; its status in *RC. */
static uint64_t word(rbi_target *t, uint64_t addr, int *rc)
{
	uint64_t v = 0;
	size_t n;

	*rc = rbi_target_read(t, addr, &v, sizeof(v), &n);
	return v;
}

static uint64_t truth(uint64_t addr)
{
	uint64_t v;

	memcpy(&v, mem + (addr - BASE), sizeof(v));
	return v;
}

int main(void)
{
	rbi_target *t, *snap;
	size_t fetched;
	uint64_t v;
	int rc;

	for (size_t i = 0; i < sizeof(mem); i++)
		mem[i] = (unsigned char)(i * 7 + i / PAGE);
	if (!ok(rbi_target_open_ops(&ops, NULL, NULL, &t) == RBI_OK, "a target of made-up memory"))
		return tap_plan();

	rbi_target_collect_begin(t);
	reads = 0;
	word(t, BASE + 8, &rc);
	ok(rc == RBI_UNMAPPED && reads == 0 && rbi_target_missed(t) == 1,
	   "collecting: a miss fails, reads nothing, is counted (status %d, %u reads)", rc, reads);
	word(t, BASE + 16, &rc);
	word(t, BASE + 2 * PAGE, &rc);
	word(t, BASE + PAGES * PAGE, &rc);      /* not readable */
	ok(rbi_target_missed(t) == 4, "every miss counted, the same page's too (%zu)",
	   rbi_target_missed(t));
	fetched = rbi_target_collect_end(t);
	ok(fetched == 2 && batches == 1 && batched == 3 && reads == 0,
	   "the three pages noted come in one batch; the two readable are kept "
	   "(%u batches of %u pages, %zu kept)", batches, batched, fetched);
	v = word(t, BASE + 16, &rc);
	ok(rc == RBI_OK && v == truth(BASE + 16) && reads == 0,
	   "then read from the cache: the right bytes, no read");
	v = word(t, BASE + 2 * PAGE + 40, &rc);
	ok(rc == RBI_OK && v == truth(BASE + 2 * PAGE + 40) && reads == 0,
	   "the other page too");
	word(t, BASE + PAGES * PAGE, &rc);
	ok(rc == RBI_UNMAPPED && reads > 0,
	   "an unreadable page was not cached: read again, and fails (status %d)", rc);

	rbi_target_collect_begin(t);
	word(t, BASE + 8, &rc);
	ok(rc == RBI_OK && rbi_target_missed(t) == 0, "collecting: a cached page is read");
	rbi_target_forget(t);
	word(t, BASE + PAGE, &rc);
	word(t, BASE + PAGE + (uint64_t)RBI_CACHE_SLOTS * PAGE, &rc);
	batches = batched = 0;
	fetched = rbi_target_collect_end(t);
	ok(fetched == 1 && batched == 1,
	   "two pages of one slot: the first is fetched, the second waits (%u asked)",
	   batched);
	reads = 0;
	word(t, BASE + PAGE + 8, &rc);
	ok(rc == RBI_OK && reads == 0, "the first is cached");

	ops.flags = RBI_MEM_STATIC;
	if (ok(rbi_target_open_ops(&ops, NULL, NULL, &snap) == RBI_OK, "a snapshot")) {
		rbi_target_collect_begin(snap);
		reads = 0;
		v = word(snap, BASE + 3 * PAGE, &rc);
		ok(rc == RBI_OK && v == truth(BASE + 3 * PAGE) && reads == 1 &&
		   rbi_target_missed(snap) == 0,
		   "a snapshot's reads are made, never collected");
		rbi_target_collect_end(snap);
		rbi_target_free(snap);
	}
	rbi_target_free(t);
	return tap_plan();
}
