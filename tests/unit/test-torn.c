/* test-torn.c: what the sampler keeps of a stack that moves under every
 * read (vm/sample-read.c), made deterministic: the bundled core
 * (testdata/cores/ruby-3.1-threads.core.xz) read through a backend whose
 * batched reads (the sampler's reads B and C of the frames and their
 * values) see one word change between every two reads of it, as if the
 * stack were rewritten there each time the sampler looks.
 *
 * On the thread "sleeper" (Kernel#sleep < Foo::Bar.nap < block (2 levels)
 * in Foo::Bar#baz < Integer#times < block in Foo::Bar#baz < Array#each <
 * Foo::Bar#baz < block in <main>), the truth being the walker's frames
 * (rbi_frame_foreach) on the unmoved core:
 *  - nothing moves: the whole stack, no retry;
 *  - a frame's receiver changes (another call pushed in its place): every
 *    read is torn, and the sample is the frames beneath it with a
 *    "(moving)" leaf; the innermost frame changing keeps all the others;
 *  - a frame's environment changes while it is read (a C method's: never
 *    kept): the same, found by the decoding;
 *  - the outermost frame changes: nothing held still, RBI_TORN, no frames;
 *  - the innermost frame stays half pushed (a Ruby method's iseq, a C
 *    method's environment: Ruby 2.7's order of writes, read with the
 *    target off its CPU): the sampler keeps what is beneath, the walker
 *    of a running process says the stack moved.
 * TAP output. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "tap.h"
#include "vm/stack/sample.h"
#include "bundled-core.h"

#define RETRIES 2
#define FRAMES_MAX 16

/* A backend whose batched reads of the word at WATCH see it XOR FLIP on
   every second read (the first as it is). */
struct mover {
	struct wrapped w;
	uint64_t watch, flip;
	unsigned seen;          /* batched reads that covered WATCH */
};

static int mover_read(void *be, uint64_t addr, void *buf, size_t len, size_t *nread)
{
	struct mover *m = be;
	return m->w.ops->read(m->w.be, addr, buf, len, nread);
}

static int mover_read_batch(void *be, struct rbi_iov *iov, size_t n)
{
	struct mover *m = be;

	for (size_t i = 0; i < n; i++) {
		struct rbi_iov *v = &iov[i];

		v->nread = 0;
		v->status = m->w.ops->read(m->w.be, v->addr, v->buf, v->len, &v->nread);
		if (v->status != RBI_OK && v->status != RBI_PARTIAL && v->status != RBI_UNMAPPED)
			return v->status;
		if (!m->watch || v->status != RBI_OK || m->watch < v->addr ||
		    m->watch + 8 > v->addr + v->len || ++m->seen % 2)
			continue;
		uint8_t *w = (uint8_t *)v->buf + (m->watch - v->addr);
		uint64_t x;

		memcpy(&x, w, 8);
		x ^= m->flip;
		memcpy(w, &x, 8);
	}
	return RBI_OK;
}

/* A backend whose every read sees the words at AT as VAL: a stack the
   target left half written when it went off its CPU, read as often as one
   likes. */
struct frozen {
	struct wrapped w;
	uint64_t at[2], val[2];
};

static void frozen_overlay(const struct frozen *f, uint64_t addr, void *buf, size_t len)
{
	for (size_t i = 0; i < RBI_ARRAY_SIZE(f->at); i++)
		if (f->at[i] >= addr && f->at[i] + 8 <= addr + len)
			memcpy((uint8_t *)buf + (f->at[i] - addr), &f->val[i], 8);
}

static int frozen_read(void *be, uint64_t addr, void *buf, size_t len, size_t *nread)
{
	struct frozen *f = be;
	int rc = f->w.ops->read(f->w.be, addr, buf, len, nread);

	if (rc == RBI_OK)
		frozen_overlay(f, addr, buf, len);
	return rc;
}

static int frozen_read_batch(void *be, struct rbi_iov *iov, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct rbi_iov *v = &iov[i];

		v->nread = 0;
		v->status = frozen_read(be, v->addr, v->buf, v->len, &v->nread);
		if (v->status != RBI_OK && v->status != RBI_PARTIAL && v->status != RBI_UNMAPPED)
			return v->status;
	}
	return RBI_OK;
}

/* The sleeper's frames on the unmoved core, innermost first. */
static struct truth {
	rbi_target *t;
	unsigned number;
	size_t n;
	uint64_t cfp[FRAMES_MAX];
	char *label[FRAMES_MAX];
} truth;

static int on_frame(const struct rbi_frame *f, void *arg)
{
	(void)arg;
	if (truth.n == FRAMES_MAX)
		return 1;
	truth.cfp[truth.n] = f->cfp;
	truth.label[truth.n++] = strdup(f->label ? f->label : "(unknown)");
	return 0;
}

static int on_thread(const struct rbi_thread *th, void *arg)
{
	(void)arg;
	if (!th->name || strcmp(th->name, "sleeper"))
		return 0;
	truth.number = th->number;
	return rbi_frame_foreach(truth.t, th, FRAMES_MAX, on_frame, NULL) ? -1 : 1;
}

/* The frame labelled LABEL, or -1. */
static int truth_index(const char *label)
{
	for (size_t i = 0; i < truth.n; i++)
		if (!strcmp(truth.label[i], label))
			return (int)i;
	return -1;
}

/* What one sample of the sleeper gave. */
struct got {
	int rc;
	unsigned retries;
	char stack[1024];       /* labels outermost first, ";" between */
};

/* Sample the sleeper of a target read through OPS (backend BE). */
static bool sample_through(const struct rbi_mem_ops *ops, void *be, struct got *g)
{
	struct rbi_open_opts o = { .size = sizeof(o) };
	struct rbi_vm_sampler *s = NULL;
	struct rbi_vm_sthread *th = NULL, *me = NULL;
	rbi_target *t = NULL;
	size_t n = 0, at = 0;
	bool done = false;

	memset(g, 0, sizeof(*g));
	if (rbi_target_open_ops(ops, be, &o, &t) || rbi_vm_sampler_new(t, &s) ||
	    rbi_vm_sampler_poll(s, &th, &n))
		goto out;
	for (size_t i = 0; i < n; i++) {
		th[i].want = th[i].number == truth.number;
		if (th[i].want)
			me = &th[i];
	}
	if (!me || rbi_vm_sampler_read(s, 0, RETRIES))
		goto out;
	g->rc = me->rc;
	g->retries = me->retries;
	for (size_t i = 0; i < me->nframes && at < sizeof(g->stack) - 1; i++)
		at += (size_t)snprintf(g->stack + at, sizeof(g->stack) - at, "%s%s", i ? ";" : "",
				       me->frames[i]->label);
	done = true;
out:
	rbi_vm_sampler_free(s);
	rbi_target_free(t);
	return done;
}

/* Sample the sleeper of a target read through a mover changing the word
   at WATCH (0: none) by FLIP. */
static bool sample(rbi_target *core, uint64_t watch, uint64_t flip, struct got *g)
{
	struct mover m = { .w = backend_of(core), .watch = watch, .flip = flip };
	struct rbi_mem_ops ops = wrapped_ops(&m.w, mover_read, mover_read_batch);

	return sample_through(&ops, &m, g);
}

/* The truth's frames from FROM out (outermost first), then LEAF if any. */
static void expect(size_t from, const char *leaf, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = '\0';
	for (size_t i = truth.n; i > from && at < len - 1; i--)
		at += (size_t)snprintf(buf + at, len - at, "%s%s", i == truth.n ? "" : ";",
				       truth.label[i - 1]);
	if (leaf && at < len - 1)
		snprintf(buf + at, len - at, "%s%s", at ? ";" : "", leaf);
}

/* The sampler on the sleeper with the word at WATCH moving: kept from
   truth frame FROM out with a "(moving)" leaf. */
static void moving_case(rbi_target *core, const char *what, uint64_t watch, uint64_t flip,
			size_t from)
{
	char want[1024];
	struct got g;

	expect(from, "(moving)", want, sizeof(want));
	if (!check(sample(core, watch, flip, &g), "%s: sampled", what))
		return;
	ok(g.rc == RBI_OK && !strcmp(g.stack, want), "%s: kept what held still: %s (got %s, %s)",
	   what, want, g.stack, rbi_strerror(g.rc));
	ok(g.retries == RETRIES + 1, "%s: read %u times (got %u)", what, RETRIES + 1, g.retries);
}

/* Frames the walker delivered, and the first one's label. */
struct walked {
	bool found;
	int rc;
	size_t n;
	char first[256];
};

static int count_frame(const struct rbi_frame *f, void *arg)
{
	struct walked *w = arg;

	if (!w->n++)
		snprintf(w->first, sizeof(w->first), "%s", f->label ? f->label : "(unknown)");
	return 0;
}

static int walk_sleeper(const struct rbi_thread *th, void *arg)
{
	struct walked *w = arg;

	if (th->number != truth.number)
		return 0;
	w->found = true;
	w->rc = rbi_frame_foreach(truth.t, th, FRAMES_MAX, count_frame, w);
	return 1;
}

/* The sleeper's innermost frame (Kernel#sleep, a C method's) read half
   pushed, as Ruby 2.7 leaves it between writing a control frame and its
   environment: the iseq and pc of the method beneath (Foo::Bar.nap), the
   environment still the C method's.  The sampler keeps what is beneath
   with a "(moving)" leaf; the walker, where the process runs, reads it
   again and again and then says the stack moved: neither shows the frame
   as the C method with the Ruby method's path, nor as a bare label. */
static void half_pushed_case(rbi_target *core, const struct rbi_layout *l, size_t sleep_)
{
	struct frozen f = { .w = backend_of(core) };
	struct rbi_mem_ops ops = wrapped_ops(&f.w, frozen_read, frozen_read_batch);
	struct rbi_open_opts o = { .size = sizeof(o) };
	uint64_t cfp = truth.cfp[sleep_], below = truth.cfp[sleep_ + 1];
	struct walked w = { 0 };
	rbi_target *t = NULL, *core_t = truth.t;
	char want[1024];
	struct got g;

	f.at[0] = cfp + l->cfp_iseq;
	f.at[1] = cfp + l->cfp_pc;
	if (!check(rbi_read_u64(core, below + l->cfp_iseq, &f.val[0]) == RBI_OK &&
		   rbi_read_u64(core, below + l->cfp_pc, &f.val[1]) == RBI_OK,
		   "Foo::Bar.nap's iseq and pc"))
		return;
	expect(sleep_ + 1, "(moving)", want, sizeof(want));
	if (check(sample_through(&ops, &f, &g), "half pushed: sampled"))
		ok(g.rc == RBI_OK && !strcmp(g.stack, want), "half pushed: the sampler kept "
		   "what is beneath: %s (got %s, %s)", want, g.stack, rbi_strerror(g.rc));
	if (!check(rbi_target_open_ops(&ops, &f, &o, &t) == RBI_OK, "half pushed: a target"))
		return;
	t->live = true;         /* as a process that runs: it is read again */
	truth.t = t;
	rbi_thread_foreach(t, walk_sleeper, &w);
	truth.t = core_t;
	ok(w.found && w.rc == RBI_TORN && w.n == 0, "half pushed: the walker says the stack moved, no "
	   "frame delivered (got %s, %zu frames, the first %s)",
	   w.found ? rbi_strerror(w.rc) : "no sleeper", w.n, w.first);
	rbi_target_free(t);
}

int main(void)
{
	char dir[] = "/tmp/rbi-torn-XXXXXX", path[64], want[1024];
	const struct rbi_layout *l;
	struct rbi_vm *vm;
	rbi_target *core = NULL;
	off_t size;
	struct got g;
	uint64_t ep;
	int times, sleep_, main_;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!bundled_core("torn stacks", dir, path, sizeof(path), &size))
		return tap_plan();
	if (!check(rbi_target_open_core(path, NULL, &core) == RBI_OK, "the bundled core opens") ||
	    !check(rbi_vm_get(core, &vm) == RBI_OK, "its VM"))
		goto out;
	l = vm->layout;
	truth.t = core;
	rbi_thread_foreach(core, on_thread, NULL);
	times = truth_index("Integer#times");
	sleep_ = truth_index("Kernel#sleep");
	main_ = truth_index("block in <main>");
	if (!ok(truth.n == 8 && times == 3 && sleep_ == 0 && main_ == 7,
		"the sleeper's 8 frames, as the core has them (%zu)", truth.n))
		goto out;

	expect(0, NULL, want, sizeof(want));
	if (check(sample(core, 0, 0, &g), "still: sampled")) {
		ok(g.rc == RBI_OK && !strcmp(g.stack, want), "still: the whole stack %s (got %s)",
		   want, g.stack);
		ok(g.retries == 0, "still: read once (retries %u)", g.retries);
	}
	moving_case(core, "Integer#times pushed again for another receiver",
		    truth.cfp[times] + l->cfp_self, 0x40, (size_t)times + 1);
	moving_case(core, "the innermost frame pushed again for another receiver",
		    truth.cfp[sleep_] + l->cfp_self, 0x40, (size_t)sleep_ + 1);
	/* A C method's environment flags (ep[0]) changing between C's two
	   readings of the values: steady, then caught by the decoding. */
	if (check(rbi_read_u64(core, truth.cfp[times] + l->cfp_ep, &ep) == RBI_OK,
		  "Integer#times' environment"))
		moving_case(core, "Integer#times' environment rewritten", ep, 0x10000,
			    (size_t)times + 1);
	half_pushed_case(core, l, (size_t)sleep_);
	if (check(sample(core, truth.cfp[main_] + l->cfp_self, 0x40, &g),
		  "the outermost frame moving: sampled"))
		ok(g.rc == RBI_TORN && !g.stack[0], "the outermost frame moving: torn, no frames "
		   "(got %s, %s)", rbi_strerror(g.rc), g.stack);
out:
	rbi_target_free(core);
	for (size_t i = 0; i < truth.n; i++)
		free(truth.label[i]);
	unlink(path);
	rmdir(dir);
	return tap_plan();
}
