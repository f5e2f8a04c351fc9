/* test-lines.c: a line table that gives a line the VM cannot have, in a
 * copy of the bundled example core whose bytes are changed: a negative
 * line, and line 0 (before the file's first line, though the check climbs
 * from the block to the file's top-level iseq to know it).  The frame is still
 * delivered, its line unknown (0) and line_error saying why, the other
 * frames as they were; `rbinspect CORE bt` prints "path:?" with the
 * reason and exits 8 (inconsistent VM data).  And the other side: a
 * table whose entries after the first have no line (0, as 2.7's compiler
 * gives a block's last nop) puts the frame on the line before, no error.
 * TAP output. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "vm/vm.h"
#include "example-core.h"
#include "tap.h"

#define NEGATIVE_LINE (-337320011)
#define FRAMES_MAX 16
/* The main thread's frame "block in Foo::Bar.run_main" (threads.rb:62). */
#define VICTIM_LABEL "block in Foo::Bar.run_main"

struct frames {
	size_t n;
	int line[FRAMES_MAX];
	char *error[FRAMES_MAX];
	uint64_t iseq[FRAMES_MAX];
	char *label[FRAMES_MAX];
};

static int frame_cb(const struct rbi_frame *f, void *arg)
{
	struct frames *fr = arg;

	if (fr->n == FRAMES_MAX)
		return 1;
	fr->line[fr->n] = f->line;
	fr->error[fr->n] = f->line_error ? strdup(f->line_error) : NULL;
	fr->iseq[fr->n] = f->iseq;
	fr->label[fr->n] = strdup(f->label ? f->label : "");
	fr->n++;
	return 0;
}

struct main_walk {
	rbi_target *t;
	struct frames *fr;
	int rc;
};

static int thread_cb(const struct rbi_thread *th, void *arg)
{
	struct main_walk *w = arg;

	if (th->number != 1)
		return 0;
	w->rc = rbi_frame_foreach(w->t, th, 0, frame_cb, w->fr);
	return 1;
}

static void frames_free(struct frames *fr)
{
	for (size_t i = 0; i < fr->n; i++) {
		free(fr->error[i]);
		free(fr->label[i]);
	}
}

/* The main thread's frames of T into *FR. */
static int main_frames(rbi_target *t, struct frames *fr)
{
	struct main_walk w = { t, fr, RBI_ITER_END };
	int rc;

	memset(fr, 0, sizeof(*fr));
	rc = rbi_thread_foreach(t, thread_cb, &w);
	return rc == 1 ? w.rc : rc;
}

/* A copy of CORE whose iseq IS has every line of its table from entry
   FROM on BAD. */
static bool corrupt_copy(const char *core, const char *out, rbi_target *t,
			 const struct rbi_iseq *is, uint32_t from, int32_t bad)
{
	struct rbi_vm *vm;
	bool done;

	done = copy_core(core, out) && rbi_vm_get(t, &vm) == RBI_OK;
	for (uint32_t i = from; i < is->insns_info_size && done; i++)
		done = patch_core(out, is->insns_info + (uint64_t)i * vm->layout->insn_info_size,
				  &bad, sizeof(bad));
	return done;
}

/* A copy of CORE (open as T, whose main thread's frames are WANT) whose
   VICTIM frame's line table (IS) gives BAD for every instruction: read
   by the library and printed by rbinspect. */
static void check_bad_line(const char *core, rbi_target *t, const struct frames *want,
			   size_t victim, const struct rbi_iseq *is, int bad)
{
	char bad_core[] = "/tmp/rbi-test-lines.XXXXXX", bad_text[32], *o;
	static char out[65536], err[65536];
	struct frames got;
	size_t same = 0;
	rbi_target *b;
	int fd, rc;

	if ((fd = mkstemp(bad_core)) < 0) {
		check(false, "a temporary file: %s", strerror(errno));
		return;
	}
	close(fd);
	snprintf(bad_text, sizeof(bad_text), "line %d ", bad);
	if (!check(corrupt_copy(core, bad_core, t, is, 0, bad), "a copy of the core with every "
		   "line of that table %d", bad) ||
	    !check(rbi_target_open_core(bad_core, NULL, &b) == RBI_OK, "open the copy"))
		goto out;
	rc = main_frames(b, &got);
	ok(rc == RBI_OK && got.n == want->n, "every frame delivered (%zu of %zu): %s", got.n,
	   want->n, rbi_strerror(rc));
	for (size_t i = 0; i < got.n && i < want->n; i++)
		same += i != victim && got.line[i] == want->line[i] && !got.error[i] &&
			!strcmp(got.label[i], want->label[i]);
	ok(same + 1 == want->n, "the other frames as in the core (%zu of %zu)", same, want->n - 1);
	if (victim < got.n)
		ok(got.line[victim] == 0 && got.error[victim] &&
		   strstr(got.error[victim], bad_text) &&
		   !strcmp(got.label[victim], VICTIM_LABEL),
		   "the frame itself: line 0 (unknown), why: %s",
		   got.error[victim] ? got.error[victim] : "(none)");
	frames_free(&got);
	rbi_target_free(b);

	rc = run_cli(bad_core, "bt 1", out, err, sizeof(out));
	ok(rc == 8, "rbinspect CORE bt: exit status 8 (got %d)", rc);
	o = strstr(out, "threads.rb:?:in '" VICTIM_LABEL "' (line unknown: ");
	ok(o && strstr(o, bad_text), "the frame printed as threads.rb:?, with why");
	ok(strstr(err, "rbinspect: bt: 1 value the VM cannot have (corrupt memory), marked in "
		  "the output\n") != NULL, "a line on standard error says so");
	rc = run_cli(bad_core, "--json bt 1", out, err, sizeof(out));
	ok(rc == 8 && strstr(out, "\"line\":0,\"line_error\":\"iseq 0x"),
	   "--json: exit status 8, \"line\": 0 and \"line_error\"");
out:
	unlink(bad_core);
}

/* A copy of CORE whose VICTIM frame's line table (IS) has no line (0)
   from its second entry on, as 2.7 gives the nop at a block's redo/next
   label: the frame stands on the line of the first entry, no error. */
static void check_lineless(const char *core, rbi_target *t, const struct frames *want,
			   size_t victim, const struct rbi_iseq *is)
{
	char bad_core[] = "/tmp/rbi-test-lines.XXXXXX";
	struct frames got;
	struct rbi_vm *vm;
	uint32_t first;
	rbi_target *b;
	int fd;

	if ((fd = mkstemp(bad_core)) < 0) {
		check(false, "a temporary file: %s", strerror(errno));
		return;
	}
	close(fd);
	if (!check(rbi_vm_get(t, &vm) == RBI_OK && is->insns_info_size > 1 &&
		   rbi_read_u32(t, is->insns_info, &first) == RBI_OK,
		   "the table's first entry") ||
	    !check(corrupt_copy(core, bad_core, t, is, 1, 0), "a copy of the core with the "
		   "table's entries after the first of line 0") ||
	    !check(rbi_target_open_core(bad_core, NULL, &b) == RBI_OK, "open the copy"))
		goto out;
	if (main_frames(b, &got) == RBI_OK && victim < got.n)
		ok(got.line[victim] == (int)first && !got.error[victim],
		   "a lineless entry: the frame stands on the line before it, %" PRIu32
		   " (got %d, %s)", first, got.line[victim],
		   got.error[victim] ? got.error[victim] : "no error");
	else
		ok(false, "a lineless entry: the frames read");
	frames_free(&got);
	rbi_target_free(b);
out:
	unlink(bad_core);
}

int main(void)
{
	char *core = unpack_core();
	static char out[65536], err[65536];
	struct frames want;
	struct rbi_iseq is;
	struct rbi_vm *vm;
	rbi_target *t;
	size_t victim = FRAMES_MAX;
	int rc;

	if (!core) {
		skip("xz cannot unpack testdata/cores/ruby-3.1-threads.core.xz", "line tables");
		return tap_plan();
	}
	if (!check(rbi_target_open_core(core, NULL, &t) == RBI_OK, "open the example core") ||
	    !check(main_frames(t, &want) == RBI_OK, "the main thread's frames"))
		goto out;
	for (size_t i = 0; i < want.n; i++)
		if (!strcmp(want.label[i], VICTIM_LABEL))
			victim = i;
	if (!check(victim < want.n && want.line[victim] == 62 && !want.error[victim],
		   "frame '" VICTIM_LABEL "' at line 62") ||
	    !check(rbi_vm_get(t, &vm) == RBI_OK &&
		   rbi_iseq_read(t, vm, want.iseq[victim], &is) == RBI_OK && is.insns_info_size,
		   "its iseq and line table") ||
	    !check(is.type == RBI_ISEQ_BLOCK && is.first_lineno > 1 && is.first_lineno <= 62,
		   "a block, from line %d on", is.first_lineno))
		goto out_t;
	check_bad_line(core, t, &want, victim, &is, NEGATIVE_LINE);
	/* Before the file's first line, and not negative. */
	check_bad_line(core, t, &want, victim, &is, 0);
	check_lineless(core, t, &want, victim, &is);

	rc = run_cli(core, "bt 1", out, err, sizeof(out));
	ok(rc == 0 && strstr(out, "threads.rb:62:in '" VICTIM_LABEL "'") &&
	   !strstr(err, "cannot have"), "the intact core: exit 0, line 62");
out_t:
	frames_free(&want);
	rbi_target_free(t);
out:
	unlink(core);
	return tap_plan();
}
