/* test-errmsg.c: rbi_errmsg() after a memory backend fails.  A backend a
 * program supplies (rbi_target_open_ops) returns bare statuses; the
 * library must explain them itself, or rbi_errmsg() shows whatever failed
 * before on this thread (an unrelated error, shown to a user as this
 * one's cause).  A backend that explains its own failure keeps its words.
 * Made-up memory: no Ruby needed. */
#include <string.h>

#include "internal.h"
#include "tap.h"

#define BASE 0x10000u
#define SIZE 0x1000u
#define EARLIER "an earlier, unrelated failure"
#define OWN "the backend's own words"

/* Reads: RBI_PERM, unexplained, inside the region; RBI_GONE explained
   with OWN past it (at BASE + SIZE). */
static int be_read(void *be, uint64_t addr, void *buf, size_t len, size_t *nread)
{
	(void)be; (void)buf; (void)len;
	*nread = 0;
	if (addr >= BASE + SIZE)
		return rbi_fail(RBI_GONE, OWN);
	return RBI_PERM;
}

static int be_region(void *be, size_t index, struct rbi_region *out)
{
	(void)be;
	if (index > 0)
		return RBI_ITER_END;
	*out = (struct rbi_region){ .start = BASE, .end = BASE + SIZE, .prot = RBI_PROT_READ };
	return RBI_OK;
}

static int be_thread(void *be, size_t index, struct rbi_thread_regs *out)
{
	(void)be; (void)index; (void)out;
	return RBI_CORRUPT;
}

static int be_registers(void *be, int32_t tid, struct rbi_registers *out)
{
	(void)be; (void)tid; (void)out;
	return RBI_GONE;
}

static const struct rbi_mem_ops ops = {
	.size = sizeof(struct rbi_mem_ops), .flags = RBI_MEM_STATIC,
	.read = be_read, .region = be_region, .thread = be_thread,
	.registers = be_registers,
};

/* STATUS from the call just made, and rbi_errmsg() explaining it, not
   EARLIER. */
static void explained(int rc, int want, const char *what)
{
	const char *m = rbi_errmsg();

	ok(rc == want && !strstr(m, EARLIER) && strstr(m, rbi_strerror(want)),
	   "%s: status %d (want %d), rbi_errmsg \"%s\"", what, rc, want, m);
}

int main(void)
{
	struct rbi_thread_regs th;
	struct rbi_registers regs;
	struct rbi_iov iov;
	rbi_target *t = NULL;
	uint64_t v;
	size_t n;
	int rc;

	if (!ok(rbi_target_open_ops(&ops, NULL, NULL, &t) == RBI_OK, "a target of made-up memory"))
		return tap_plan();

	rbi_fail(RBI_CORRUPT, EARLIER);
	explained(rbi_target_read(t, BASE, &v, sizeof(v), &n), RBI_PERM, "rbi_target_read");
	rbi_fail(RBI_CORRUPT, EARLIER);
	iov = (struct rbi_iov){ .addr = BASE, .buf = &v, .len = sizeof(v) };
	rc = rbi_target_read_batch(t, &iov, 1);
	explained(rc, RBI_PERM, "rbi_target_read_batch");
	rbi_fail(RBI_CORRUPT, EARLIER);
	explained(rbi_read(t, BASE, &v, sizeof(v)), RBI_PERM, "rbi_read (a walker's read)");
	rbi_fail(RBI_CORRUPT, EARLIER);
	explained(rbi_target_thread_at(t, 0, &th), RBI_CORRUPT, "a thread of the backend's");
	rbi_fail(RBI_CORRUPT, EARLIER);
	explained(rbi_target_registers(t, 1, &regs), RBI_GONE, "a thread's registers");

	rbi_fail(RBI_CORRUPT, EARLIER);
	rc = rbi_target_read(t, BASE + SIZE, &v, sizeof(v), &n);
	ok(rc == RBI_GONE && !strcmp(rbi_errmsg(), OWN),
	   "a backend's own explanation is kept: \"%s\"", rbi_errmsg());
	rbi_target_free(t);
	return tap_plan();
}
