/* native-sample.c: a sampled thread's stack with its native frames
 * (RBI_SAMPLER_NATIVE).
 *
 * The stack is the thread's merged stack (rbi_native_foreach: the thread
 * is held stopped while its native and Ruby stacks are read, about a
 * millisecond), turned into interned sample frames.  A line of it gives one
 * frame, or two for a C method on its C function's frame: the method, then
 * the function it runs.  Native frames are what a profile groups by: the
 * function (its name, or MODULE+0xSTART where no symbol covers it, the same
 * for every pc in it), then DWARF's file and line.  A stack that does not
 * merge gives its Ruby frames alone, with the merge's reason: native frames
 * are never guessed into place. */
#include <inttypes.h>
#include <stdio.h>

#include "native/native.h"
#include "profile/native-sample.h"
#include "util/table.h"

struct rbi_native_sampler {
	struct rbi_target *t;
	struct rbi_frametab ft;
	/* Each slot allocated on its own: the sampler keeps the slots of one
	   tick while it reads more threads, so growing the array must not move
	   them. */
	struct rbi_native_sample **slots;
	size_t nslots;
};

/* One read in progress. */
struct collect {
	struct rbi_native_sampler *s;
	struct rbi_native_sample *slot;
	const struct rbi_native_info *info;
	size_t lines, max_lines;
};

/* T's threads must be ones we may stop: checked now, holding the main
   thread once, rather than failing at every sample. */
int rbi_native_sampler_new(struct rbi_target *t, struct rbi_native_sampler **out)
{
	struct rbi_native_sampler *s;
	pid_t pid = rbi_target_pid(t);
	int rc;

	if ((rc = rbi_native_prepare(t)) || (rc = rbi_task_hold(pid, pid)))
		return rc;
	rbi_task_release(pid);
	if (!(s = calloc(1, sizeof(*s))))
		return rbi_fail(RBI_NOMEM, "out of memory");
	s->t = t;
	*out = s;
	return RBI_OK;
}

void rbi_native_sampler_free(struct rbi_native_sampler *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nslots; i++) {
		if (s->slots[i])
			free(s->slots[i]->frames);
		free(s->slots[i]);
	}
	free(s->slots);
	rbi_frametab_free(&s->ft);
	free(s);
}

static const char *basename_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

static const struct rbi_sample_frame *native_frame(struct rbi_frametab *ft,
						   const struct rbi_native_frame *n)
{
	char label[512];

	if (n->signal_trampoline)
		snprintf(label, sizeof(label), "<signal handler called>");
	else if (n->function)
		snprintf(label, sizeof(label), "%s", n->function);
	else if (n->module)
		snprintf(label, sizeof(label), "%s+0x%" PRIx64, basename_of(n->module),
			 n->function_start ? n->function_start : n->module_offset);
	else
		snprintf(label, sizeof(label), "(code in no image)");
	return rbi_frametab_intern(ft, RBI_FRAME_NATIVE, label,
				   n->file ? n->file : n->module, n->line, 0);
}

static const struct rbi_sample_frame *ruby_frame(struct rbi_frametab *ft,
						 const struct rbi_frame *r)
{
	if (r->kind != RBI_FRAME_RUBY)
		return rbi_frametab_intern(ft, r->kind, r->label, NULL, 0, 0);
	return rbi_frametab_intern(ft, r->kind, r->label, r->path, r->line, 0);
}

static int push(struct rbi_native_sample *slot, const struct rbi_sample_frame *f)
{
	if (!f || !RBI_GROW(slot->frames, slot->cap, slot->n + 1, 64))
		return rbi_fail(RBI_NOMEM, "out of memory");
	slot->frames[slot->n++] = f;
	return RBI_OK;
}

/* Innermost first: a C function's native frame before its C method. */
static int collect_fn(const struct rbi_mixed_frame *m, void *arg)
{
	struct collect *c = arg;
	int rc;

	if (c->max_lines && c->lines++ == c->max_lines) {
		c->slot->truncated = true;
		return RBI_ITER_END;
	}
	/* Not merged: every native frame, then the Ruby ones; keep those. */
	if (m->native && !c->info->unmerged &&
	    (rc = push(c->slot, native_frame(&c->s->ft, m->native))))
		return rc;
	if (m->ruby && (rc = push(c->slot, ruby_frame(&c->s->ft, m->ruby))))
		return rc;
	return RBI_OK;
}

static struct rbi_native_sample *slot_at(struct rbi_native_sampler *s, size_t i)
{
	if (i >= s->nslots && !RBI_GROW_ZERO(s->slots, s->nslots, i + 1, 8))
		return NULL;
	if (!s->slots[i])
		s->slots[i] = calloc(1, sizeof(*s->slots[i]));
	return s->slots[i];
}

static void reverse(const struct rbi_sample_frame **v, size_t n)
{
	for (size_t i = 0; i < n / 2; i++) {
		const struct rbi_sample_frame *x = v[i];

		v[i] = v[n - 1 - i];
		v[n - 1 - i] = x;
	}
}

const struct rbi_native_sample *rbi_native_sample_read(struct rbi_native_sampler *s,
							const struct rbi_thread *th,
							int32_t host_tid, size_t slot,
							size_t max_frames)
{
	struct rbi_native_sample *out = slot_at(s, slot);
	struct rbi_native_info info;
	struct collect c = { .s = s, .info = &info, .max_lines = max_frames };

	if (!out)
		return NULL;
	out->n = 0;
	out->truncated = false;
	out->why[0] = '\0';
	c.slot = out;
	out->rc = rbi_native_foreach_tid(s->t, th, host_tid, 0, collect_fn, &c, &info);
	if (out->rc == RBI_ITER_END)
		out->rc = RBI_OK;
	out->merged = out->rc == RBI_OK && !info.unmerged;
	out->stopped_ns = info.stopped_ns;
	if (out->rc)
		snprintf(out->why, sizeof(out->why), "%s", rbi_errmsg());
	else if (info.unmerged)
		snprintf(out->why, sizeof(out->why), "%s", info.unmerged);
	if (out->rc == RBI_NOMEM)
		return NULL;
	reverse(out->frames, out->n);
	return out;
}
