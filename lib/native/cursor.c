/* cursor.c: a thread's frames one at a time (rbi_frame_cursor), for
 * callers that cannot hand the library a callback: bindings, crash
 * reporters, a loop in a debugger's command.
 *
 * The cursor is the callback walk (rbi_frame_foreach, or rbi_native_foreach
 * for mixed stacks) run once when it opens, its frames copied with their
 * strings (owned.c).  Stepping frame by frame through the target instead
 * (as unw_step does) cannot work here: a live thread's stack is only
 * shown once two reads of it agree (frame.c), and a mixed stack is read
 * while its thread is held stopped, which must not last from one step to
 * the next.  So the walk, its checks and its bounds stay in one place, and
 * the frames a cursor gives are the callback's, by construction. */
#include "native/native.h"

/* One line: a Ruby frame, a native frame, or both (rbi_mixed_frame). */
struct cursor_line {
	struct rbi_frame ruby;
	struct rbi_native_frame native;
	bool has_ruby, has_native;
};

struct rbi_frame_cursor {
	struct cursor_line *v;
	size_t n, cap;
	size_t next;                    /* the line the next step gives */
	bool native;                    /* RBI_FRAMES_NATIVE */
	struct rbi_native_info info;
	char *unmerged;                 /* INFO.unmerged, owned */
	struct rbi_mixed_frame mixed;   /* what rbi_frame_cursor_next_mixed
					   handed out last */
	int end;                        /* what the step past the last line
					   returns: RBI_ITER_END, or the
					   walk's error after its frames */
	char end_msg[RBI_ERRMSG_MAX];
};

static struct cursor_line *add_line(struct rbi_frame_cursor *c)
{
	if (!RBI_GROW_ZERO(c->v, c->cap, c->n + 1, 64))
		return NULL;
	return &c->v[c->n];
}

static int keep_frame(const struct rbi_frame *f, void *arg)
{
	struct rbi_frame_cursor *c = arg;
	struct cursor_line *l = add_line(c);

	if (!l || rbi_frame_own(&l->ruby, f))
		return rbi_fail(RBI_NOMEM, "out of memory");
	l->has_ruby = true;
	c->n++;
	return RBI_OK;
}

static int keep_mixed(const struct rbi_mixed_frame *f, void *arg)
{
	struct rbi_frame_cursor *c = arg;
	struct cursor_line *l = add_line(c);

	if (!l)
		return rbi_fail(RBI_NOMEM, "out of memory");
	if (f->ruby) {
		if (rbi_frame_own(&l->ruby, f->ruby))
			return rbi_fail(RBI_NOMEM, "out of memory");
		l->has_ruby = true;
	}
	if (f->native) {
		if (rbi_native_frame_own(&l->native, f->native)) {
			rbi_frame_disown(&l->ruby);
			l->has_ruby = false;
			return rbi_fail(RBI_NOMEM, "out of memory");
		}
		l->has_native = true;
	}
	c->n++;
	return RBI_OK;
}

RBI_EXPORT void rbi_frame_cursor_free(rbi_frame_cursor *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++) {
		rbi_frame_disown(&c->v[i].ruby);
		rbi_native_frame_disown(&c->v[i].native);
	}
	free(c->v);
	free(c->unmerged);
	free(c);
}

RBI_EXPORT int rbi_thread_frames_open(rbi_target *t, const struct rbi_thread *th,
				      unsigned flags, size_t max_frames,
				      rbi_frame_cursor **out)
{
	rbi_frame_cursor *c;
	int rc;

	if (!out)
		return rbi_fail(RBI_INVAL, "no cursor to return");
	*out = NULL;
	if (!t || !th)
		return rbi_fail(RBI_INVAL, "no target or thread");
	if (flags & ~RBI_FRAMES_NATIVE)
		return rbi_fail(RBI_INVAL, "unknown flags 0x%x", flags & ~RBI_FRAMES_NATIVE);
	if (!(c = calloc(1, sizeof(*c))))
		return rbi_fail(RBI_NOMEM, "out of memory");
	c->native = flags & RBI_FRAMES_NATIVE;
	if (c->native)
		rc = rbi_native_foreach(t, th, max_frames, keep_mixed, c, &c->info);
	else
		rc = rbi_frame_foreach(t, th, max_frames, keep_frame, c);
	if (rc == RBI_OK && c->info.unmerged &&
	    !(c->unmerged = strdup(c->info.unmerged)))
		rc = rbi_fail(RBI_NOMEM, "out of memory");
	c->info.unmerged = c->unmerged;
	/* An error before any frame is the open's; after some, the walk's
	   callback caller would have had those frames first, and so does
	   the cursor's. */
	if (rc < 0 && (!c->n || rc == RBI_NOMEM)) {
		rbi_frame_cursor_free(c);
		return rc;
	}
	c->end = rc < 0 ? rc : RBI_ITER_END;
	if (rc < 0)
		snprintf(c->end_msg, sizeof(c->end_msg), "%s", rbi_errmsg());
	*out = c;
	return RBI_OK;
}

/* The end of C's lines: RBI_ITER_END, or the walk's error again (its
   message made this thread's once more). */
static int cursor_end(const rbi_frame_cursor *c)
{
	if (c->end == RBI_ITER_END)
		return RBI_ITER_END;
	return rbi_fail(c->end, "%s", c->end_msg);
}

RBI_EXPORT int rbi_frame_cursor_next_mixed(rbi_frame_cursor *c,
					   const struct rbi_mixed_frame **out)
{
	const struct cursor_line *l;

	if (!c || !out)
		return rbi_fail(RBI_INVAL, "no cursor or frame to return");
	if (c->next >= c->n)
		return cursor_end(c);
	l = &c->v[c->next];
	c->mixed = (struct rbi_mixed_frame){
		.index = c->next++,
		.native = l->has_native ? &l->native : NULL,
		.ruby = l->has_ruby ? &l->ruby : NULL,
	};
	*out = &c->mixed;
	return RBI_OK;
}

RBI_EXPORT int rbi_frame_cursor_next(rbi_frame_cursor *c, const struct rbi_frame **out)
{
	if (!c || !out)
		return rbi_fail(RBI_INVAL, "no cursor or frame to return");
	while (c->next < c->n && !c->v[c->next].has_ruby)
		c->next++;      /* a native frame alone */
	if (c->next >= c->n)
		return cursor_end(c);
	*out = &c->v[c->next++].ruby;
	return RBI_OK;
}

RBI_EXPORT const struct rbi_native_info *
rbi_frame_cursor_native_info(const rbi_frame_cursor *c)
{
	return c && c->native ? &c->info : NULL;
}
