/* heap-pages.c: reading the heap's pages a batch at a time.
 *
 * A batch is a run of the page list: the page pointers, then every page's
 * struct heap_page, then the bodies, one rbi_target_read_batch each (one
 * process_vm_readv on a live target).  Copying the bodies is most of a
 * heap walk's time, and the kernel copies on the calling thread, so where
 * the backend allows concurrent reads a second thread reads the next
 * batches while the walker walks the current one, and the walker reads
 * too while its next batch is still being read: batches sit in a ring,
 * are claimed by whichever thread comes first, and are walked in order,
 * so the walk sees the same pages in the same order with or without the
 * thread.
 *
 * The two threads claim batches half a ring apart: the kernel takes the
 * target's page-table lock for every page it pins, one lock per 2 MiB of
 * the target, and two threads reading neighbouring batches spent a tenth
 * of their time waiting for each other's lock.
 *
 * A batch the walker goes through slot by slot keeps its bodies until it
 * is released, so only BODY_BUFS of them can be out at once.  A batch
 * counted as it is read (rbi_heap_reader_count) keeps only its counts: its
 * bodies go to the reading thread's scratch buffer, and the ring lets
 * the threads run up to RING batches ahead, so that neither waits for
 * the other (a wake-up here costs more than reading a batch).
 *
 * Nothing here trusts the target: every page must point back at itself
 * from its body and fit in it; a page that fails is skipped and the batch
 * says why. */
#define _GNU_SOURCE     /* CPU sets */
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/arch.h"
#include "vm/heap/heap-pages.h"

/* Batches out at once (claimed, not yet released): those the walker
   walks slot by slot, each with its own bodies, and those counted as
   read. */
#define BODY_BUFS 4
#define RING 32
/* Page structs a few hundred bytes apart (made one after another) are
   read in one piece of at most this many bytes: the kernel pins a page
   of the target per piece, which costs more than the bytes between. */
#define HDR_SPAN 4096u
/* How long the walker spins for a batch the other thread is reading
   before it sleeps.  A read takes about 60 us; a thread still not done
   after many of them was descheduled, and is better waited for asleep. */
#define SPIN_NS 2000000u

enum slot_state { SLOT_FREE, SLOT_READING, SLOT_READY };

struct heap_reader {
	struct rbi_target *t;
	struct heap_geometry g;
	uint32_t hdr_len;       /* bytes of struct heap_page we read */
	size_t per_batch;       /* pages per batch */
	uint64_t nbatches;
	struct heap_batch ring[RING];   /* batch K lives in ring[K % RING] */
	uint8_t *bufs[BODY_BUFS];       /* bodies of batch K, walked slot by
					   slot: bufs[K % BODY_BUFS] */
	uint8_t *scratch[2];    /* bodies of a batch counted as read, per
				   reading thread: the walker's, the other's */
	uint8_t *spans[2];      /* the page structs as read, per reading
				   thread (read_headers) */
	int state[RING];        /* enum slot_state; read without MU by a
				   waiting walker, so stored atomically */
	/* Under MU once the thread runs: */
	uint64_t claimed;       /* how many batches were claimed for reading
				   so far (before the thread runs, in order:
				   batches 0 to CLAIMED - 1) */
	uint64_t released;      /* batches the walker is done with */
	bool stop;              /* close: the thread must end */
	uint64_t halt_at;       /* the first batch whose read failed (or
				   NBATCHES): none after it is read */
	int counting;           /* enum heap_count_mode: atomic */
	struct heap_tally_index tally_ix[2];    /* per reading thread */
	bool threaded;
	cpu_set_t cpus;         /* where the process may run */
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
};

bool rbi_heap_page_parse(const struct heap_geometry *g, struct heap_page *p,
			 const uint8_t *hdr)
{
	const struct rbi_layout *l = g->l;
	uint64_t end;

	p->total = rbi_get_u16(hdr, l->heap_page_total_slots);
	p->slot_size = l->heap_page_slot_size != RBI_ABSENT
		       ? rbi_get_u16(hdr, l->heap_page_slot_size) : l->rvalue_size;
	p->start = rbi_get_u64(hdr, l->heap_page_start);
	if (p->total == 0)
		return p->empty = true;
	if (p->slot_size < 16 || p->slot_size % 8 || p->slot_size >= g->align ||
	    (p->start & 7))
		return false;
	p->body = p->start & ~(uint64_t)(g->align - 1);
	end = p->start + (uint64_t)p->total * p->slot_size;
	return p->start >= p->body + 8 && end <= p->body + g->align;
}

/* Whether page P (its struct in HDR, read up to the end of its mark
   bitmap) waits for the lazy sweep; if so its mark bits into P. */
static void page_marks(const struct heap_geometry *g, struct heap_page *p, const uint8_t *hdr)
{
	const struct rbi_layout *l = g->l;
	uint32_t bit = l->heap_page_before_sweep;

	p->unswept = false;
	if (!g->mark_words || p->empty || !((hdr[bit / 8] >> (bit % 8)) & 1))
		return;
	p->unswept = true;
	p->mark_unit = l->rvalue_size;
	memcpy(p->marks, hdr + l->heap_page_mark_bits, (size_t)g->mark_words * 8);
}

uint32_t rbi_heap_page_garbage(const struct heap_page *p, uint32_t from)
{
	const uint8_t *b = p->buf + (p->start - p->body) + (size_t)from * p->slot_size;
	uint32_t n = 0;

	if (!p->unswept)
		return 0;
	for (uint32_t i = from; i < p->total; i++, b += p->slot_size)
		n += rbi_get_u64(b, 0) && heap_slot_garbage(p, i);
	return n;
}

static void skip(struct heap_batch *b, struct heap_page *p)
{
	if (!b->moved_why)
		b->moved_why = "heap pages could not be read or failed their checks";
	b->pages_skipped++;
	p->total = 0;
}

/* Add the struct of page I at ADDR to the pieces read into SPANS: to
   the last piece if it fits in HDR_SPAN bytes from its start, else as a
   new piece.  *AT: where it will be in SPANS. */
static void add_header(struct heap_reader *r, struct heap_batch *b, size_t *nio,
		       uint8_t *spans, uint64_t addr, uint32_t *at)
{
	struct rbi_iov *v = *nio ? &b->iov[*nio - 1] : NULL;

	if (v && addr >= v->addr && addr + r->hdr_len - v->addr <= HDR_SPAN) {
		if (addr + r->hdr_len - v->addr > v->len)
			v->len = addr + r->hdr_len - v->addr;
	} else {
		uint8_t *buf = v ? (uint8_t *)v->buf + v->len : spans;

		v = &b->iov[(*nio)++];
		*v = (struct rbi_iov){ .addr = addr, .buf = buf, .len = r->hdr_len };
	}
	*at = (uint32_t)((uint8_t *)v->buf - spans) + (uint32_t)(addr - v->addr);
}

/* The structs of B's pages, read through SPANS (HDR_SPAN bytes a page);
   those that cannot be read or parsed are skipped. */
static int read_headers(struct heap_reader *r, struct heap_batch *b, uint8_t *spans)
{
	uint32_t at[HEAP_BATCH_MAX];
	uint8_t piece[HEAP_BATCH_MAX];  /* the read that has page I's struct */
	size_t nio = 0;
	int rc;

	for (size_t i = 0; i < b->n; i++) {
		struct heap_page *p = &b->pages[i];

		*p = (struct heap_page){ .page = b->ptrs[i], .size = -1 };
		if (!p->page || (p->page & 7))
			continue;
		add_header(r, b, &nio, spans, p->page, &at[i]);
		piece[i] = (uint8_t)(nio - 1);
	}
	if ((rc = rbi_target_read_batch(r->t, b->iov, nio)))
		return rc;
	for (size_t i = 0; i < nio; i++)
		b->bytes_read += b->iov[i].nread;
	for (size_t i = 0; i < b->n; i++) {
		struct heap_page *p = &b->pages[i];
		const struct rbi_iov *v;

		if (!p->page || (p->page & 7)) {
			skip(b, p);
			continue;
		}
		/* A piece read in part still holds the structs before the
		   unreadable byte. */
		v = &b->iov[piece[i]];
		if (at[i] + r->hdr_len > (size_t)((uint8_t *)v->buf - spans) + v->nread ||
		    !rbi_heap_page_parse(&r->g, p, spans + at[i]))
			skip(b, p);
		else
			page_marks(&r->g, p, spans + at[i]);
	}
	return RBI_OK;
}

/* The bodies of B's pages with slots, packed into its buffer in page
   order. */
static int read_bodies(struct heap_reader *r, struct heap_batch *b)
{
	size_t nio = 0, off = 0;
	int rc;

	for (size_t i = 0; i < b->n; i++) {
		struct heap_page *p = &b->pages[i];

		if (!p->total)
			continue;
		p->buf = b->bodies + off;
		off += r->g.align;
		b->iov[nio++] = (struct rbi_iov){ .addr = p->body, .buf = p->buf,
			.len = p->start - p->body + (size_t)p->total * p->slot_size };
	}
	if ((rc = rbi_target_read_batch(r->t, b->iov, nio)))
		return rc;
	nio = 0;
	for (size_t i = 0; i < b->n; i++) {
		struct heap_page *p = &b->pages[i];

		if (!p->total)
			continue;
		const struct rbi_iov *v = &b->iov[nio++];

		b->bytes_read += v->nread;
		/* The body's heap_page_header points back at the page. */
		p->ok = v->status == RBI_OK && rbi_get_u64(p->buf, 0) == p->page;
		if (!p->ok)
			skip(b, p);
	}
	return RBI_OK;
}

static int read_pages(struct heap_reader *r, struct heap_batch *b, uint8_t *spans)
{
	int rc = rbi_read_fresh(r->t, r->g.list + b->first * 8, b->ptrs, b->n * 8);

	if (heap_read_fatal(rc))
		return rc;
	if (rc) {
		b->list_gone = true;
		return RBI_OK;
	}
	b->bytes_read += b->n * 8;
	if ((rc = read_headers(r, b, spans)))
		return rc;
	return read_bodies(r, b);
}

/* Where a slot with flags F is counted: its type, or free (flags 0). */
static inline unsigned type_index(uint64_t f)
{
	return f ? (unsigned)(f & RBI_T_MASK) : RBI_TYPE_COUNT;
}

void rbi_heap_page_count(const struct heap_page *p, uint32_t from,
			 uint64_t c[RBI_TYPE_COUNT + 1])
{
	const uint8_t *b = p->buf + (p->start - p->body) + (size_t)from * p->slot_size;
	uint32_t step = p->slot_size, i = from;
	/* Neighbouring slots mostly share a type: four histograms, used in
	   turn, keep one increment from waiting on the one before. */
	uint32_t h[4][RBI_TYPE_COUNT + 1] = { { 0 } };

	/* A tight pass over the flags words: no class or capacity work.
	   Unrolled by hand: GCC keeps the loop over four and its counter. */
	for (; i + 4 <= p->total; i += 4, b += 4 * step) {
		uint64_t f0 = rbi_get_u64(b, 0), f1 = rbi_get_u64(b, step);
		uint64_t f2 = rbi_get_u64(b, 2 * step), f3 = rbi_get_u64(b, 3 * step);

		h[0][type_index(f0)]++;
		h[1][type_index(f1)]++;
		h[2][type_index(f2)]++;
		h[3][type_index(f3)]++;
	}
	for (; i < p->total; i++, b += step)
		h[0][type_index(rbi_get_u64(b, 0))]++;
	for (unsigned t = 0; t <= RBI_TYPE_COUNT; t++)
		c[t] += (uint64_t)h[0][t] + h[1][t] + h[2][t] + h[3][t];
}

/* B's slots by type, and in HEAP_COUNT_CLASSES its used slots by class
   too (one pass over each page for both), with reading thread WHO's
   index. */
static void count_batch(struct heap_reader *r, struct heap_batch *b, int who,
			enum heap_count_mode mode)
{
	const struct heap_tally_ruby rb = { .l = r->g.l, .fl_singleton = r->g.fl_singleton,
					    .elts_shared = r->g.elts_shared,
					    .ary_shared_root = r->g.ary_shared_root };
	struct heap_tally_index *ix = &r->tally_ix[who];
	bool classes = mode == HEAP_COUNT_CLASSES;

	memset(b->counts, 0, sizeof(b->counts));
	b->garbage = 0;
	if (classes) {
		rbi_heap_tally_reset(&b->tally);
		b->tally_rc = ix->slots ? RBI_OK : rbi_heap_tally_index_init(ix);
	}
	for (size_t i = 0; i < b->n && !(classes && b->tally_rc); i++) {
		struct heap_page *p = &b->pages[i];
		uint64_t before = b->counts[RBI_TYPE_COUNT];

		if (!p->ok)
			continue;
		if (classes)
			b->tally_rc = rbi_heap_tally_page(&b->tally, ix, &rb, p, b->counts);
		else
			rbi_heap_page_count(p, 0, b->counts);
		p->free = (uint32_t)(b->counts[RBI_TYPE_COUNT] - before);
		b->garbage += rbi_heap_page_garbage(p, 0);
	}
	if (classes && ix->slots)
		rbi_heap_tally_index_clear(ix, &b->tally);
	b->counted = true;
}

/* Read batch K into its ring slot on reading thread WHO (0: the walker).
   Runs without MU. */
static void read_batch(struct heap_reader *r, uint64_t k, int who)
{
	struct heap_batch *b = &r->ring[k % RING];
	/* Decided once: the mode may be set meanwhile by the walker. */
	int mode = __atomic_load_n(&r->counting, __ATOMIC_RELAXED);
	bool count = mode != HEAP_COUNT_NONE;
	uint64_t left;

	b->first = k * r->per_batch;
	left = r->g.npages - b->first;
	b->n = left < r->per_batch ? (size_t)left : r->per_batch;
	b->list_gone = false;
	b->moved_why = NULL;
	b->pages_skipped = b->bytes_read = 0;
	b->err[0] = '\0';
	b->counted = false;
	b->bodies = count ? r->scratch[who] : r->bufs[k % BODY_BUFS];
	b->rc = read_pages(r, b, r->spans[who]);
	if (b->rc)
		snprintf(b->err, sizeof(b->err), "%s", rbi_errmsg());
	else if (!b->list_gone && count)
		count_batch(r, b, who, mode);
}

static bool failed(const struct heap_batch *b)
{
	return b->rc || b->list_gone;
}

static void set_state(struct heap_reader *r, uint64_t k, enum slot_state st)
{
	__atomic_store_n(&r->state[k % RING], st, __ATOMIC_RELEASE);
}

static bool ready(struct heap_reader *r, uint64_t k)
{
	return __atomic_load_n(&r->state[k % RING], __ATOMIC_ACQUIRE) == SLOT_READY;
}

/* Wait for batch K without sleeping, for at most SPIN_NS. */
static void spin_until_ready(struct heap_reader *r, uint64_t k)
{
	uint64_t until = rbi_now_ns() + SPIN_NS;

	for (unsigned i = 1; !ready(r, k); i++) {
		if (i % 256 == 0 && rbi_now_ns() > until)
			return;
		rbi_arch_cpu_relax();
	}
}

/* The first batch from FROM on that the ring has room for and nobody
   claimed, or END.  Called with MU held. */
static uint64_t unclaimed_from(struct heap_reader *r, uint64_t from, uint64_t end)
{
	for (uint64_t k = from; k < end; k++)
		if (__atomic_load_n(&r->state[k % RING], __ATOMIC_RELAXED) == SLOT_FREE)
			return k;
	return end;
}

/* Claim a batch the ring has room for, and read it on thread WHO: the
   walker (0) the first one unclaimed, the other thread the first one
   half the ring ahead (or any, near the end).  Called and returns with MU
   held. */
static bool read_next_locked(struct heap_reader *r, int who)
{
	uint64_t room = __atomic_load_n(&r->counting, __ATOMIC_RELAXED) ? RING : BODY_BUFS;
	uint64_t end = r->released + room, k;

	if (end > r->halt_at)
		end = r->halt_at;
	k = who ? unclaimed_from(r, r->released + room / 2, end) : end;
	if (k == end)
		k = unclaimed_from(r, r->released, end);
	if (k == end)
		return false;
	r->claimed++;
	set_state(r, k, SLOT_READING);
	pthread_mutex_unlock(&r->mu);
	read_batch(r, k, who);
	pthread_mutex_lock(&r->mu);
	set_state(r, k, SLOT_READY);
	if (failed(&r->ring[k % RING]) && k < r->halt_at)
		r->halt_at = k;
	pthread_cond_broadcast(&r->cv);
	return true;
}

/* The read-ahead thread: read the next batch while the ring has room. */
static void *read_ahead_main(void *arg)
{
	struct heap_reader *r = arg;

	/* Started away from the walker's CPU (rbi_heap_reader_read_ahead); from
	   now on the scheduler's choice. */
	pthread_setaffinity_np(pthread_self(), sizeof(r->cpus), &r->cpus);
	pthread_mutex_lock(&r->mu);
	/* Done when nothing is left to read: joining a thread that sleeps
	   would wait for its wake-up. */
	while (!r->stop && r->halt_at == r->nbatches && r->claimed < r->nbatches)
		if (!read_next_locked(r, 1))
			pthread_cond_wait(&r->cv, &r->mu);
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

int rbi_heap_reader_open(struct rbi_target *t, const struct heap_geometry *g,
			 struct heap_reader **out)
{
	const struct rbi_layout *l = g->l;
	struct heap_reader *r = calloc(1, sizeof(*r));
	uint32_t end = l->heap_page_start;

	*out = NULL;
	if (!r)
		return rbi_fail(RBI_NOMEM, "out of memory");
	r->t = t;
	r->g = *g;
	if (l->heap_page_total_slots > end)
		end = l->heap_page_total_slots;
	if (l->heap_page_slot_size != RBI_ABSENT && l->heap_page_slot_size > end)
		end = l->heap_page_slot_size;
	/* The struct up to the end of its mark bitmap, to tell garbage. */
	if (g->mark_words) {
		if (l->heap_page_before_sweep / 8 > end)
			end = l->heap_page_before_sweep / 8;
		if (l->heap_page_mark_bits + (g->mark_words - 1) * 8 > end)
			end = l->heap_page_mark_bits + (g->mark_words - 1) * 8;
	}
	r->hdr_len = end + 8;
	if (r->hdr_len > HDR_SPAN) {
		free(r);
		return rbi_fail(RBI_LAYOUT, "the layout puts heap_page fields %u bytes in",
				end);
	}
	r->per_batch = HEAP_BATCH_BYTES / g->align;
	if (r->per_batch > HEAP_BATCH_MAX)
		r->per_batch = HEAP_BATCH_MAX;
	r->nbatches = (g->npages + r->per_batch - 1) / r->per_batch;
	r->halt_at = r->nbatches;
	/* Pages of buffers never used (the scratch of a walk that does not
	   count, say) are never made resident. */
	bool ok = true;

	for (int i = 0; i < BODY_BUFS; i++)
		ok &= (r->bufs[i] = malloc(HEAP_BATCH_BYTES)) != NULL;
	for (int i = 0; i < 2; i++) {
		ok &= (r->scratch[i] = malloc(HEAP_BATCH_BYTES)) != NULL;
		ok &= (r->spans[i] = malloc(r->per_batch * HDR_SPAN)) != NULL;
	}
	if (!ok) {
		rbi_heap_reader_close(r);
		return rbi_fail(RBI_NOMEM, "out of memory");
	}
	*out = r;
	return RBI_OK;
}

uint64_t rbi_heap_reader_batches(const struct heap_reader *r)
{
	return r->nbatches;
}

struct heap_batch *rbi_heap_reader_get(struct heap_reader *r, uint64_t k)
{
	if (!r->threaded) {
		if (r->claimed == k) {
			r->claimed++;
			read_batch(r, k, 0);
		}
		return &r->ring[k % RING];
	}
	/* While the other thread reads batch K, read the ones after it:
	   the kernel copies on the thread that asks, so two threads copy
	   twice as much. */
	pthread_mutex_lock(&r->mu);
	while (!ready(r, k)) {
		if (read_next_locked(r, 0))
			continue;
		/* The other thread is reading K: that takes one read's time,
		   less than a wake-up from a condition wait takes here. */
		pthread_mutex_unlock(&r->mu);
		spin_until_ready(r, k);
		pthread_mutex_lock(&r->mu);
		if (!ready(r, k) && !read_next_locked(r, 0))
			pthread_cond_wait(&r->cv, &r->mu);
	}
	pthread_mutex_unlock(&r->mu);
	return &r->ring[k % RING];
}

void rbi_heap_reader_release(struct heap_reader *r, uint64_t k)
{
	if (!r->threaded) {
		r->released = k + 1;
		return;
	}
	pthread_mutex_lock(&r->mu);
	r->released = k + 1;
	set_state(r, k, SLOT_FREE);
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

void rbi_heap_reader_count(struct heap_reader *r, enum heap_count_mode mode)
{
	__atomic_store_n(&r->counting, (int)mode, __ATOMIC_RELAXED);
}

/* Attributes that start the read-ahead thread on one of R's CPUs other
   than the caller's.  A new thread is queued on its creator's CPU, and the
   walker keeps that one busy: the scheduler moved the thread to the idle
   CPU only at its next balancing, 2-4 ms later (most of the walk of a
   million objects). */
static void start_elsewhere(struct heap_reader *r, pthread_attr_t *attr)
{
	cpu_set_t others = r->cpus;
	int here = sched_getcpu();

	if (here < 0)
		return;
	CPU_CLR(here, &others);
	if (CPU_COUNT(&others) > 0)
		pthread_attr_setaffinity_np(attr, sizeof(others), &others);
}

void rbi_heap_reader_read_ahead(struct heap_reader *r)
{
	sigset_t all, old;
	pthread_attr_t attr;

	if (r->threaded || r->claimed >= r->nbatches ||
	    !rbi_target_concurrent(r->t) ||
	    sched_getaffinity(0, sizeof(r->cpus), &r->cpus) || CPU_COUNT(&r->cpus) < 2)
		return;
	for (uint64_t k = r->released; k < r->claimed; k++)
		set_state(r, k, SLOT_READY);
	if (pthread_attr_init(&attr))
		return;
	start_elsewhere(r, &attr);
	if (pthread_mutex_init(&r->mu, NULL))
		goto out;
	if (pthread_cond_init(&r->cv, NULL)) {
		pthread_mutex_destroy(&r->mu);
		goto out;
	}
	/* Signals (Ctrl-C) are the caller's thread's business. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r->threaded = pthread_create(&r->thread, &attr, read_ahead_main, r) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!r->threaded) {
		pthread_cond_destroy(&r->cv);
		pthread_mutex_destroy(&r->mu);
	}
out:
	pthread_attr_destroy(&attr);
}

void rbi_heap_reader_close(struct heap_reader *r)
{
	if (!r)
		return;
	if (r->threaded) {
		pthread_mutex_lock(&r->mu);
		r->stop = true;
		pthread_cond_broadcast(&r->cv);
		pthread_mutex_unlock(&r->mu);
		pthread_join(r->thread, NULL);
		pthread_cond_destroy(&r->cv);
		pthread_mutex_destroy(&r->mu);
	}
	for (int i = 0; i < BODY_BUFS; i++)
		free(r->bufs[i]);
	for (int i = 0; i < 2; i++) {
		free(r->scratch[i]);
		free(r->spans[i]);
		rbi_heap_tally_index_free(&r->tally_ix[i]);
	}
	for (int i = 0; i < RING; i++)
		rbi_heap_tally_free(&r->ring[i].tally);
	free(r);
}
