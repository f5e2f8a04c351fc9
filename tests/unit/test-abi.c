/* test-abi.c: the one ABI rule for structs with a size member (lib/internal.h,
 * ruby-introspect.h "Structs and sizes"): a caller built against an older
 * header passes a smaller size and the members past it take their
 * defaults; a newer caller's larger size is accepted.  The helpers
 * themselves, then the public entry points that take such structs and need
 * no target (a profile view, the recording options); and a member renamed
 * (rbi_thread_regs' fs_base, now tp) still there by its old name.  TAP
 * output. */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "tap.h"

struct v2 {                     /* a struct as version 2 of a header has it */
	uint32_t size;
	uint32_t flags;
	uint64_t added_in_v2;
};
struct v1 {                     /* ... and as version 1 had it */
	uint32_t size;
	uint32_t flags;
};

static void test_helpers(void)
{
	struct v2 old = { .size = sizeof(struct v1), .flags = 7, .added_in_v2 = 99 };
	struct v2 cur = { .size = sizeof(struct v2) };
	struct v2 lib = { .size = 0, .added_in_v2 = 5 };        /* 5: the default */
	unsigned char big[sizeof(struct v2) + 16];
	struct v2 out = { .size = sizeof(struct v1), .added_in_v2 = 1234 };

	ok(!RBI_HAS_FIELD(&old, added_in_v2) && RBI_HAS_FIELD(&old, flags),
	   "an older caller's struct lacks the new member, has the old ones");
	ok(RBI_HAS_FIELD(&cur, added_in_v2), "a current caller's struct has every member");

	RBI_COPY_IN(&lib, &old);
	ok(lib.size == sizeof(lib) && lib.flags == 7 && lib.added_in_v2 == 5,
	   "copy in from an older caller: its members, then the defaults (flags %u, new %llu)",
	   lib.flags, (unsigned long long)lib.added_in_v2);

	memset(big, 0xff, sizeof(big));
	memcpy(big, &(struct v2){ .size = sizeof(big), .flags = 3, .added_in_v2 = 8 },
	       sizeof(struct v2));
	lib = (struct v2){ .added_in_v2 = 5 };
	rbi_copy_sized(&lib, sizeof(lib), big, sizeof(big));
	ok(lib.size == sizeof(lib) && lib.flags == 3 && lib.added_in_v2 == 8,
	   "copy in from a newer caller: what this library knows, the rest ignored");

	lib = (struct v2){ .size = sizeof(lib), .flags = 1, .added_in_v2 = 2 };
	RBI_COPY_OUT(&out, &lib);
	ok(out.size == sizeof(struct v1) && out.flags == 1 && out.added_in_v2 == 1234,
	   "copy out to an older caller: only as far as its size, which is kept");

	struct v2 *none = NULL;
	lib = (struct v2){ .added_in_v2 = 5 };
	RBI_COPY_IN(&lib, none);
	ok(lib.added_in_v2 == 5, "copy in from NULL keeps the defaults");
}

static int count_samples(const struct rbi_sample_frame *const *frames, size_t n,
			 uint64_t count, uint64_t weight_ns, void *arg)
{
	(void)frames, (void)n, (void)weight_ns;
	*(uint64_t *)arg += count;
	return 0;
}

static void test_view(void)
{
	static const struct rbi_sample_frame f = {
		.id = 0, .kind = RBI_FRAME_RUBY, .label = "main", .path = "/a.rb", .line = 1,
	};
	const struct rbi_sample_frame *frames[1] = { &f };
	rbi_profile *p;
	uint64_t n;

	if (rbi_profile_new(&p)) {
		ok(false, "a profile");
		return;
	}
	for (int i = 0; i < 3; i++) {
		struct rbi_sample s = {
			.pid = 1, .thread_number = 1, .thread = 0x1000, .tid = 1, .main = 1,
			.state = RBI_STATE_RUNNING, .status = RBI_OK, .nframes = 1,
			.frames = frames, .weight_ns = 1000,
		};
		rbi_profile_add(p, &s);
	}
	/* first_sample == end_sample == 2: no samples, if they are read. */
	struct rbi_profile_view v = { .size = sizeof(v), .first_sample = 2, .end_sample = 2 };

	n = 0;
	rbi_profile_foreach_stack(p, &v, count_samples, &n);
	ok(n == 0, "a view with the range: %llu samples", (unsigned long long)n);

	v.size = offsetof(struct rbi_profile_view, first_sample);
	n = 0;
	rbi_profile_foreach_stack(p, &v, count_samples, &n);
	ok(n == 3, "an older caller's view without the range: all %llu samples",
	   (unsigned long long)n);

	struct {
		struct rbi_profile_view v;
		unsigned char newer[16];
	} big;
	memset(&big, 0xff, sizeof(big));
	big.v = (struct rbi_profile_view){ .size = sizeof(big), .end_sample = 1 };
	n = 0;
	rbi_profile_foreach_stack(p, &big.v, count_samples, &n);
	ok(n == 1, "a newer caller's larger view is accepted: %llu sample",
	   (unsigned long long)n);

	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	v.size = offsetof(struct rbi_profile_view, first_sample);
	int rc = rbi_profile_write(p, RBI_FORMAT_SPEEDSCOPE, &v, m);
	fclose(m);
	ok(rc == RBI_OK && buf && strstr(buf, "\"endValue\":3000"),
	   "speedscope through an older caller's view: all samples");
	free(buf);
	rbi_profile_free(p);
}

static void test_record(void)
{
	rbi_profile *p;

	if (rbi_profile_new(&p)) {
		ok(false, "a profile");
		return;
	}
	/* As a caller built when the options ended after FLAGS. */
	struct rbi_record_opts o = { .size = offsetof(struct rbi_record_opts, rate),
				     .duration = -1 };
	int rc = rbi_profile_record(p, getpid(), &o);
	ok(rc != RBI_INVAL, "recording accepts an older caller's smaller options "
	   "(this process is no Ruby: %s)", rbi_strerror(rc));
	rbi_profile_free(p);
}

/* A backend built against 0.9 fills struct rbi_thread_regs' fs_base: the
   thread pointer is the same word, and the struct did not grow. */
static void test_thread_regs(void)
{
	struct rbi_thread_regs r = { .fs_base = 0x7f0012345640 };

	ok(offsetof(struct rbi_thread_regs, tp) == 24 &&
	   offsetof(struct rbi_thread_regs, fs_base) == 24 &&
	   sizeof(struct rbi_thread_regs) == 32, "rbi_thread_regs: tp is fs_base's word, "
	   "at 24 of 32 bytes as in 0.9");
	ok(r.tp == 0x7f0012345640, "a thread pointer set as fs_base reads as tp");
}

int main(void)
{
	test_helpers();
	test_view();
	test_record();
	test_thread_regs();
	return tap_plan();
}
