/* cursor-check.c: the frame cursor (rbi_thread_frames_open) against the
 * callback walks it is built on, through the shared library as a program
 * uses it.  For every thread of a live process (paused first, so that the
 * two walks see one stack) or a core: the frames rbi_frame_cursor_next
 * gives equal rbi_frame_foreach's, member by member and string by string;
 * with --native, the lines of rbi_frame_cursor_next_mixed equal
 * rbi_native_foreach's and rbi_frame_cursor_next gives the Ruby frames
 * among them.  Prints "thread N main|- FRAMES" per thread (the script
 * checks the count against the target's own backtrace) and
 * "mismatch: ..." for each difference.
 *
 *   cursor-check [--native] PID | CORE
 * Exit: 0 all equal, 1 a difference, 2 the target could not be read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ruby-introspect.h>

#define MAX_LINES 100000

struct line {
	struct rbi_frame ruby;
	struct rbi_native_frame native;
	int has_ruby, has_native;
};

struct stack {
	struct line *v;
	size_t n;
};

static struct rbi_target *target;
static int native, mismatches;
static unsigned cur_thread;

static char *dup_opt(const char *s)
{
	return s ? strdup(s) : NULL;
}

static struct line *stack_add(struct stack *s)
{
	if (s->n >= MAX_LINES)
		return NULL;
	if (!(s->n & (s->n - 1)) || !s->v) {
		size_t cap = s->n ? 2 * s->n : 1;
		struct line *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		s->v = v;
	}
	memset(&s->v[s->n], 0, sizeof(s->v[0]));
	return &s->v[s->n++];
}

static void keep_ruby(struct line *l, const struct rbi_frame *f)
{
	l->has_ruby = 1;
	l->ruby = *f;
	l->ruby.label = dup_opt(f->label);
	l->ruby.own_label = dup_opt(f->own_label);
	l->ruby.base_label = dup_opt(f->base_label);
	l->ruby.path = dup_opt(f->path);
	l->ruby.line_error = dup_opt(f->line_error);
}

static void keep_native(struct line *l, const struct rbi_native_frame *f)
{
	l->has_native = 1;
	l->native = *f;
	l->native.module = dup_opt(f->module);
	l->native.function = dup_opt(f->function);
	l->native.file = dup_opt(f->file);
}

static void stack_free(struct stack *s)
{
	for (size_t i = 0; i < s->n; i++) {
		struct line *l = &s->v[i];

		free((char *)l->ruby.label);
		free((char *)l->ruby.own_label);
		free((char *)l->ruby.base_label);
		free((char *)l->ruby.path);
		free((char *)l->ruby.line_error);
		free((char *)l->native.module);
		free((char *)l->native.function);
		free((char *)l->native.file);
	}
	free(s->v);
	*s = (struct stack){ 0 };
}

static int frame_cb(const struct rbi_frame *f, void *arg)
{
	struct line *l = stack_add(arg);

	if (!l)
		return RBI_NOMEM;
	keep_ruby(l, f);
	return 0;
}

static int mixed_cb(const struct rbi_mixed_frame *f, void *arg)
{
	struct line *l = stack_add(arg);

	if (!l)
		return RBI_NOMEM;
	if (f->ruby)
		keep_ruby(l, f->ruby);
	if (f->native)
		keep_native(l, f->native);
	return 0;
}

static void mismatch(size_t i, const char *what)
{
	printf("mismatch: thread %u line %zu: %s\n", cur_thread, i, what);
	mismatches++;
}

static int str_eq(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

#define SAME(i, a, b, m) do { if ((a)->m != (b)->m) mismatch((i), #m); } while (0)
#define SAME_STR(i, a, b, m) do { if (!str_eq((a)->m, (b)->m)) mismatch((i), #m); } while (0)

static void compare_ruby(size_t i, const struct rbi_frame *a, const struct rbi_frame *b)
{
	SAME(i, a, b, index); SAME(i, a, b, kind); SAME(i, a, b, type);
	SAME_STR(i, a, b, label); SAME_STR(i, a, b, own_label);
	SAME_STR(i, a, b, base_label); SAME_STR(i, a, b, path);
	SAME(i, a, b, line); SAME(i, a, b, cfp); SAME(i, a, b, iseq); SAME(i, a, b, pc);
	SAME(i, a, b, cme); SAME(i, a, b, self); SAME(i, a, b, cfunc);
	SAME(i, a, b, vm_entry); SAME_STR(i, a, b, line_error);
	SAME(i, a, b, label_cut); SAME(i, a, b, path_cut);
}

static void compare_native(size_t i, const struct rbi_native_frame *a,
			   const struct rbi_native_frame *b)
{
	SAME(i, a, b, index); SAME(i, a, b, pc); SAME_STR(i, a, b, module);
	SAME(i, a, b, module_offset); SAME_STR(i, a, b, function);
	SAME(i, a, b, function_offset); SAME_STR(i, a, b, file); SAME(i, a, b, line);
	SAME(i, a, b, inlined); SAME(i, a, b, signal_trampoline);
	SAME(i, a, b, function_start); SAME(i, a, b, found_by_scan);
}

/* The cursor's lines into *S: mixed ones, and separately the Ruby frames
   rbi_frame_cursor_next gives (RUBY). */
static int read_cursor(const struct rbi_thread *th, struct stack *s, struct stack *ruby)
{
	rbi_frame_cursor *c;
	const struct rbi_mixed_frame *m;
	const struct rbi_frame *f;
	int rc;

	if ((rc = rbi_thread_frames_open(target, th, native ? RBI_FRAMES_NATIVE : 0, 0, &c)))
		return rc;
	while ((rc = rbi_frame_cursor_next_mixed(c, &m)) == RBI_OK) {
		struct line *l = stack_add(s);

		if (!l) {
			rc = RBI_NOMEM;
			break;
		}
		if (m->index != s->n - 1)
			mismatch(s->n - 1, "mixed index");
		if (m->ruby)
			keep_ruby(l, m->ruby);
		if (m->native)
			keep_native(l, m->native);
	}
	if ((native != 0) != (rbi_frame_cursor_native_info(c) != NULL))
		mismatch(0, "native info only with RBI_FRAMES_NATIVE");
	rbi_frame_cursor_free(c);
	if (rc != RBI_ITER_END)
		return rc;

	/* Again, Ruby frames only. */
	if ((rc = rbi_thread_frames_open(target, th, native ? RBI_FRAMES_NATIVE : 0, 0, &c)))
		return rc;
	while ((rc = rbi_frame_cursor_next(c, &f)) == RBI_OK) {
		struct line *l = stack_add(ruby);

		if (!l) {
			rc = RBI_NOMEM;
			break;
		}
		keep_ruby(l, f);
	}
	rbi_frame_cursor_free(c);
	return rc == RBI_ITER_END ? RBI_OK : rc;
}

/* MAX_FRAMES bounds the cursor as it bounds the walk: the first two
   frames of WALK's, no more. */
static void check_max(const struct rbi_thread *th, const struct stack *ruby)
{
	rbi_frame_cursor *c;
	const struct rbi_frame *f;
	size_t n = 0;

	if (rbi_thread_frames_open(target, th, 0, 2, &c))
		return;         /* read_cursor's own open said why */
	while (rbi_frame_cursor_next(c, &f) == RBI_OK) {
		if (n < ruby->n)
			compare_ruby(n, &ruby->v[n].ruby, f);
		n++;
	}
	rbi_frame_cursor_free(c);
	if (n != (ruby->n < 2 ? ruby->n : 2)) {
		printf("mismatch: thread %u: %zu frames with MAX_FRAMES 2 of %zu\n",
		       th->number, n, ruby->n);
		mismatches++;
	}
}

static int thread_cb(const struct rbi_thread *th, void *arg)
{
	struct stack walk = { 0 }, cur = { 0 }, ruby = { 0 };
	size_t nruby = 0;
	int rc_walk, rc_cur;

	(void)arg;
	if (th->error)
		return 0;
	cur_thread = th->number;
	rc_walk = native ? rbi_native_foreach(target, th, 0, mixed_cb, &walk, NULL)
			 : rbi_frame_foreach(target, th, 0, frame_cb, &walk);
	rc_cur = read_cursor(th, &cur, &ruby);
	if (rc_walk != rc_cur) {
		printf("mismatch: thread %u: the walk returned %d (%s), the cursor %d\n",
		       th->number, rc_walk, rbi_strerror(rc_walk), rc_cur);
		mismatches++;
	}
	if (walk.n != cur.n) {
		printf("mismatch: thread %u: %zu lines walked, %zu from the cursor\n",
		       th->number, walk.n, cur.n);
		mismatches++;
	}
	for (size_t i = 0; i < walk.n && i < cur.n; i++) {
		const struct line *a = &walk.v[i], *b = &cur.v[i];

		if (a->has_ruby != b->has_ruby || a->has_native != b->has_native) {
			mismatch(i, "the line's kind");
			continue;
		}
		if (a->has_ruby)
			compare_ruby(i, &a->ruby, &b->ruby);
		if (a->has_native)
			compare_native(i, &a->native, &b->native);
		if (a->has_ruby) {
			if (nruby < ruby.n)
				compare_ruby(i, &a->ruby, &ruby.v[nruby].ruby);
			nruby++;
		}
	}
	if (nruby != ruby.n) {
		printf("mismatch: thread %u: %zu Ruby frames walked, %zu from "
		       "rbi_frame_cursor_next\n", th->number, nruby, ruby.n);
		mismatches++;
	}
	if (!native)
		check_max(th, &ruby);
	printf("thread %u %s %zu\n", th->number, th->main ? "main" : "-", nruby);
	stack_free(&walk);
	stack_free(&cur);
	stack_free(&ruby);
	return 0;
}

/* The cursor's own rules that need no thread: unknown flags are refused,
   close is NULL-safe. */
static void check_rules(void)
{
	struct rbi_thread none = { 0 };
	rbi_frame_cursor *c = NULL;

	if (rbi_thread_frames_open(target, &none, 0x80, 0, &c) != RBI_INVAL || c) {
		puts("mismatch: unknown flags are not refused");
		mismatches++;
	}
	rbi_frame_cursor_free(NULL);
}

int main(int argc, char **argv)
{
	const char *where;
	char *end;
	long pid;
	int rc, stopped = 0;

	if (argc > 1 && !strcmp(argv[1], "--native")) {
		native = 1;
		argc--;
		argv++;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: cursor-check [--native] PID | CORE\n");
		return 2;
	}
	where = argv[1];
	pid = strtol(where, &end, 10);
	if (*end == '\0' && pid > 0) {
		rc = rbi_target_open_pid((pid_t)pid, NULL, &target);
		if (rc == RBI_OK)
			rc = rbi_target_pause(target, &stopped);
	} else {
		rc = rbi_target_open_core(where, NULL, &target);
	}
	if (rc) {
		fprintf(stderr, "%s: %s\n", where, rbi_errmsg());
		rbi_target_free(target);
		return 2;
	}
	check_rules();
	if ((rc = rbi_thread_foreach(target, thread_cb, NULL)) != RBI_OK) {
		fprintf(stderr, "%s: %s\n", where, rbi_errmsg());
		rbi_target_free(target);
		return 2;
	}
	rbi_target_free(target);
	return mismatches ? 1 : 0;
}
