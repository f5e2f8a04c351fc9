/* test-crash.c: how a process died (lib/native/crash.c) and the signal
 * helpers under it (lib/util/signal.c), on a process made up in memory.
 *
 * A callback backend (rbi_target_open_ops) serves a small address space:
 * libc's code and read-only data, the thread stacks, and Ruby's alternate
 * signal stack, on which the test writes the kernel's rt_sigframe by hand.
 * Its signal op says the process died of SIGABRT (abort(): SI_TKILL, sent
 * by the process itself).  Checked:
 *  - a valid frame above the crashing thread's stack pointer gives the
 *    handled SIGSEGV, its address, and a handler that ended the process;
 *  - each single field of the frame that the kernel would never write
 *    makes it no frame, and the limits that a real one may reach do not;
 *  - only the crashing thread's live stack is searched (not below its
 *    stack pointer, not another thread's stack);
 *  - backends that cannot tell how the process died;
 *  - who ended the process (itself, another process) and the wording;
 *  - signal and si_code names, and siginfo_t decoding.
 * Deterministic: no process, no core, no file.  TAP output. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "internal.h"
#include "tap.h"

/* ---- The kernel's rt_sigframe (x86_64) ----------------------------------- */

/* { pretcode; ucontext { uc_flags; uc_link; stack_t uc_stack;
   struct sigcontext uc_mcontext; sigset_t uc_sigmask; }; siginfo info; } */
#define FRAME_UC_FLAGS  8
#define FRAME_UC_LINK   16
#define FRAME_MCONTEXT  48
#define FRAME_RSP       (FRAME_MCONTEXT + 120)
#define FRAME_RIP       (FRAME_MCONTEXT + 128)
#define FRAME_FPSTATE   (FRAME_MCONTEXT + 184)
#define FRAME_INFO      312
#define FRAME_SIZE      440
/* siginfo_t: si_signo, si_errno, si_code, then the union. */
#define SI_SIGNO        0
#define SI_CODE         8
#define SI_UNION        16

_Static_assert(FRAME_INFO + RBI_SIGINFO_SIZE == FRAME_SIZE, "frame ends with siginfo");
#if defined(__x86_64__)
/* The layout above is written out by hand; glibc's ucontext_t shares its
   head with the kernel's (only uc_sigmask differs in size), so check the
   hand-written offsets against it where we can. */
_Static_assert(offsetof(ucontext_t, uc_mcontext) + 8 == FRAME_MCONTEXT, "mcontext");
_Static_assert(FRAME_MCONTEXT + REG_RSP * 8 == FRAME_RSP, "saved rsp");
_Static_assert(FRAME_MCONTEXT + REG_RIP * 8 == FRAME_RIP, "saved rip");
_Static_assert(offsetof(ucontext_t, uc_mcontext.fpregs) + 8 == FRAME_FPSTATE, "fpstate");
#endif

/* ---- The made-up process ------------------------------------------------- */

#define PID             1000
#define OTHER_PID       4242
#define CRASH_TID       PID                       /* the main thread crashed */
#define OTHER_TID       1001

#define CODE_START      UINT64_C(0x7f3a00000000)  /* libc: r-x */
#define RODATA_START    UINT64_C(0x7f3a00002000)  /* libc: r-- */
#define THREAD2_START   UINT64_C(0x7f3a10000000)  /* OTHER_TID's stack */
#define ALTSTACK_START  UINT64_C(0x55e000000000)  /* Ruby's sigaltstack (malloc'd) */
#define STACK_START     UINT64_C(0x7ffc00000000)  /* the main thread's [stack] */
#define UNMAPPED_ADDR   UINT64_C(0x7f3a00100000)  /* in no region */

#define CRASH_SP        (ALTSTACK_START + 0x9000) /* in abort(), on the altstack */
#define OTHER_SP        (THREAD2_START + 0x1000)
/* Where the kernel puts the frame: the FPU state 64-aligned, the frame
   below it so that the handler's entry sees (rsp + 8) 16-aligned. */
#define FPSTATE_OFF     0x1c8                     /* round_down(-440, 16) - 8 */
#define FPSTATE_AT      (ALTSTACK_START + 0xa000)
#define FRAME_AT        (FPSTATE_AT - FPSTATE_OFF)
#define FAULT_ADDR      UINT64_C(0x18)            /* a NULL struct's field */

struct fake_region {
	struct rbi_region r;
	uint8_t *bytes;
};

struct fake {
	struct fake_region regions[5];
	struct rbi_thread_regs threads[2];
	int signal_rc;                  /* what the signal op returns */
	struct rbi_signal kill;         /* and the signal it reports */
};

static void bail(const char *why)
{
	printf("Bail out! %s\n", why);
	exit(2);
}

static void put_u64(uint8_t *p, uint64_t v) { memcpy(p, &v, sizeof(v)); }
static void put_u32(uint8_t *p, uint32_t v) { memcpy(p, &v, sizeof(v)); }

/* LEN bytes of F's memory at ADDR, which the test means to be mapped. */
static uint8_t *fake_at(struct fake *f, uint64_t addr, size_t len)
{
	for (size_t i = 0; i < RBI_ARRAY_SIZE(f->regions); i++) {
		const struct fake_region *fr = &f->regions[i];

		if (addr >= fr->r.start && addr + len <= fr->r.end)
			return fr->bytes + (addr - fr->r.start);
	}
	bail("the test writes outside its own regions");
	return NULL;
}

/* A process that died of abort(), with no signal frame on its stacks yet. */
static struct fake *fake_new(void)
{
#define R RBI_PROT_READ
#define RW (RBI_PROT_READ | RBI_PROT_WRITE)
#define RX (RBI_PROT_READ | RBI_PROT_EXEC)
	static const struct rbi_region layout[] = {
		{ ALTSTACK_START, ALTSTACK_START + 0x10000, 0, RW, NULL },
		{ CODE_START, CODE_START + 0x2000, 0, RX, "/lib/libc.so.6" },
		{ RODATA_START, RODATA_START + 0x1000, 0x2000, R, "/lib/libc.so.6" },
		{ THREAD2_START, THREAD2_START + 0x8000, 0, RW, NULL },
		{ STACK_START, STACK_START + 0x8000, 0, RW, "[stack]" },
	};
#undef R
#undef RW
#undef RX
	struct fake *f = calloc(1, sizeof(*f));

	if (!f)
		bail("out of memory");
	for (size_t i = 0; i < RBI_ARRAY_SIZE(layout); i++) {
		f->regions[i].r = layout[i];
		if (!(f->regions[i].bytes = calloc(1, layout[i].end - layout[i].start)))
			bail("out of memory");
	}
	/* The crashing thread listed second: it is found by its tid. */
	f->threads[0] = (struct rbi_thread_regs){ .tid = OTHER_TID, .pc = CODE_START + 0x200,
						  .sp = OTHER_SP };
	f->threads[1] = (struct rbi_thread_regs){ .tid = CRASH_TID, .pc = CODE_START + 0x300,
						  .sp = CRASH_SP };
	/* The handler's own frames between its stack pointer and the signal
	   frame: return addresses into libc, which alone make no frame. */
	for (uint64_t a = CRASH_SP; a < CRASH_SP + 0x100; a += 16)
		put_u64(fake_at(f, a + 8, 8), CODE_START + 0x400 + (a - CRASH_SP));
	f->signal_rc = RBI_OK;
	f->kill = (struct rbi_signal){ .signo = SIGABRT, .code = SI_TKILL, .tid = CRASH_TID,
				       .sender_pid = PID };
	return f;
}

static const struct fake_region *fake_find(const struct fake *f, uint64_t addr)
{
	for (size_t i = 0; i < RBI_ARRAY_SIZE(f->regions); i++)
		if (addr >= f->regions[i].r.start && addr < f->regions[i].r.end)
			return &f->regions[i];
	return NULL;
}

static int fake_read(void *be, uint64_t addr, void *buf, size_t len, size_t *nread)
{
	const struct fake_region *fr = fake_find(be, addr);
	size_t avail;

	*nread = 0;
	if (!fr)
		return RBI_UNMAPPED;
	avail = fr->r.end - addr;
	*nread = len < avail ? len : avail;
	memcpy(buf, fr->bytes + (addr - fr->r.start), *nread);
	return *nread == len ? RBI_OK : RBI_PARTIAL;
}

/* In any order: the library sorts them. */
static int fake_region(void *be, size_t index, struct rbi_region *out)
{
	const struct fake *f = be;

	if (index >= RBI_ARRAY_SIZE(f->regions))
		return RBI_ITER_END;
	*out = f->regions[index].r;
	return RBI_OK;
}

static int fake_thread(void *be, size_t index, struct rbi_thread_regs *out)
{
	const struct fake *f = be;

	if (index >= RBI_ARRAY_SIZE(f->threads))
		return RBI_ITER_END;
	*out = f->threads[index];
	return RBI_OK;
}

static int fake_signal(void *be, struct rbi_signal *out)
{
	const struct fake *f = be;

	*out = f->kill;
	return f->signal_rc;
}

static void fake_close(void *be)
{
	struct fake *f = be;

	for (size_t i = 0; i < RBI_ARRAY_SIZE(f->regions); i++)
		free(f->regions[i].bytes);
	free(f);
}

static const struct rbi_mem_ops fake_ops = {
	.size = sizeof(struct rbi_mem_ops),
	.flags = RBI_MEM_STATIC,
	.read = fake_read,
	.region = fake_region,
	.thread = fake_thread,
	.close = fake_close,
	.signal = fake_signal,
};

/* ---- Signal frames ------------------------------------------------------- */

/* The fields of a frame the test sets; all 64-bit, so that a table can
   name one by its offset (signo and code are written as the kernel's
   32-bit ints). */
struct frame {
	uint64_t pretcode, uc_flags, uc_link, rsp, rip, fpstate;
	uint64_t signo, code, addr;
};

/* What the kernel writes at AT for a SIGSEGV at FAULT_ADDR taken in Ruby
   code on the main thread's stack, handled on the altstack. */
static struct frame frame_valid(uint64_t at)
{
	return (struct frame){
		.pretcode = CODE_START + 0x1b0,         /* __restore_rt */
		.uc_flags = 0x7,
		.uc_link = 0,
		.rsp = STACK_START + 0x6000,
		.rip = CODE_START + 0x800,
		.fpstate = at + FPSTATE_OFF,
		.signo = SIGSEGV,
		.code = SEGV_MAPERR,
		.addr = FAULT_ADDR,
	};
}

static void frame_put(struct fake *f, uint64_t at, const struct frame *fr)
{
	uint8_t *p = fake_at(f, at, FRAME_SIZE);

	memset(p, 0, FRAME_SIZE);
	put_u64(p, fr->pretcode);
	put_u64(p + FRAME_UC_FLAGS, fr->uc_flags);
	put_u64(p + FRAME_UC_LINK, fr->uc_link);
	put_u64(p + FRAME_RSP, fr->rsp);
	put_u64(p + FRAME_RIP, fr->rip);
	put_u64(p + FRAME_FPSTATE, fr->fpstate);
	put_u32(p + FRAME_INFO + SI_SIGNO, (uint32_t)fr->signo);
	put_u32(p + FRAME_INFO + SI_CODE, (uint32_t)fr->code);
	put_u64(p + FRAME_INFO + SI_UNION, fr->addr);
}

/* ---- Running a case ------------------------------------------------------ */

struct outcome {
	int rc;                 /* of rbi_target_crash */
	struct rbi_crash crash; /* when RBI_OK */
	char text[256];         /* rbi_crash_describe */
};

/* A target over F (which it then owns) served by OPS, pid PID. */
static rbi_target *fake_open(struct fake *f, const struct rbi_mem_ops *ops)
{
	struct rbi_open_opts opts = { .size = sizeof(opts), .pid = PID };
	rbi_target *t = NULL;

	if (rbi_target_open_ops(ops, f, &opts, &t) != RBI_OK) {
		fake_close(f);
		bail(rbi_errmsg());
	}
	return t;
}

static void outcome_of(rbi_target *t, struct outcome *o)
{
	const struct rbi_crash *c = NULL;

	*o = (struct outcome){ .rc = rbi_target_crash(t, &c) };
	if (o->rc == RBI_OK && c) {
		o->crash = *c;
		rbi_crash_describe(c, o->text, sizeof(o->text));
	}
}

/* How the process in F died, read through OPS by a target of its own
   (the crash is cached per target). */
static void run(struct fake *f, const struct rbi_mem_ops *ops, struct outcome *o)
{
	rbi_target *t = fake_open(f, ops);

	outcome_of(t, o);
	rbi_target_free(t);
}

/* The process in F with the frame FR written at AT. */
static void run_frame(struct fake *f, uint64_t at, const struct frame *fr, struct outcome *o)
{
	frame_put(f, at, fr);
	run(f, &fake_ops, o);
}

/* On a failed test: what was found. */
static void show(const struct outcome *o)
{
	diag("rc %d, signal %d/%d, handled %d/%d at 0x%" PRIx64 " (frame 0x%" PRIx64
	     "), ended it %d: \"%s\"", o->rc, o->crash.signal.signo, o->crash.signal.code,
	     o->crash.handled.signo, o->crash.handled.code, o->crash.handled.addr,
	     o->crash.handled_frame, o->crash.handler_ended_it, o->text);
}

/* Was the frame at AT taken, as a handler of SIGNO? */
static bool found_at(const struct outcome *o, uint64_t at, int signo)
{
	return o->rc == RBI_OK && o->crash.handled.signo == signo &&
	       o->crash.handled_frame == at;
}

static bool not_found(const struct outcome *o)
{
	return o->rc == RBI_OK && o->crash.signal.signo == SIGABRT &&
	       o->crash.handled.signo == 0 && o->crash.handled_frame == 0;
}

/* ---- 1. A valid frame ---------------------------------------------------- */

static void test_valid_frame(void)
{
	static const char want[] = "SIGSEGV (SEGV_MAPERR) at 0x18; Ruby's [BUG] handler "
				   "then aborted the process (SIGABRT, SI_TKILL)";
	struct fake *f = fake_new();
	struct frame fr = frame_valid(FRAME_AT);
	const struct rbi_crash *again = NULL;
	struct outcome o;
	char small[10];

	frame_put(f, FRAME_AT, &fr);
	rbi_target *t = fake_open(f, &fake_ops);
	outcome_of(t, &o);
	const struct rbi_signal *h = &o.crash.handled, *s = &o.crash.signal;
	if (!ok(o.rc == RBI_OK && o.crash.pid == PID && s->signo == SIGABRT &&
		s->code == SI_TKILL && s->sender_pid == PID && s->tid == CRASH_TID,
		"valid frame: the killing signal is the backend's SIGABRT"))
		show(&o);
	if (!ok(h->signo == SIGSEGV && h->code == SEGV_MAPERR && h->has_addr &&
		h->addr == FAULT_ADDR && h->tid == CRASH_TID && h->sender_pid == 0,
		"valid frame: handled SIGSEGV, SEGV_MAPERR at 0x18 on the crashing thread"))
		show(&o);
	if (!ok(o.crash.handled_frame == FRAME_AT,
		"valid frame: found at 0x%" PRIx64, FRAME_AT))
		show(&o);
	ok(o.crash.handler_ended_it == 1, "valid frame: its handler ended the process");
	ok(strstr(o.text, "SIGSEGV (SEGV_MAPERR) at 0x") &&
	   strstr(o.text, "aborted the process (SIGABRT, SI_TKILL)"),
	   "valid frame: described as \"%s\"", o.text);
	ok(strcmp(o.text, want) == 0, "valid frame: the whole description");

	/* Asked again, the answer comes from the target, not the backend. */
	f->kill.signo = SIGKILL;
	ok(rbi_target_crash(t, &again) == RBI_OK && again &&
	   again->signal.signo == SIGABRT && again->handled_frame == FRAME_AT,
	   "valid frame: a second call answers the same (cached per target)");
	rbi_target_free(t);

	ok(strcmp(rbi_crash_describe(&o.crash, small, sizeof(small)), "SIGSEGV (") == 0,
	   "describe: cut to fit a small buffer, NUL-terminated");
	ok(strcmp(rbi_crash_describe(NULL, small, sizeof(small)), "") == 0,
	   "describe: no crash gives an empty string");
}

/* ---- 2. One field changed ------------------------------------------------ */

#define FIELD(name) offsetof(struct frame, name)

/* One field of a valid frame set to VALUE (plus the frame's address when
   RELATIVE): is the frame still taken? */
static const struct variant {
	const char *what;
	size_t field;
	uint64_t value;
	bool relative;
	bool found;
} variants[] = {
	/* What a real kernel may write. */
	{ "uc_flags 0 (no XSAVE, an old kernel)", FIELD(uc_flags), 0, false, true },
	{ "fpstate 0 (no FPU state saved)", FIELD(fpstate), 0, false, true },
	{ "fpstate right at the frame's end", FIELD(fpstate), FRAME_SIZE, true, true },
	{ "fpstate 60 KiB above the frame", FIELD(fpstate), 60u << 10, true, true },
	{ "si_signo 64 (SIGRTMAX)", FIELD(signo), 64, false, true },
	/* What it never writes. */
	{ "pretcode in a non-executable region", FIELD(pretcode), RODATA_START + 0x10,
	  false, false },
	{ "pretcode unmapped", FIELD(pretcode), UNMAPPED_ADDR, false, false },
	{ "uc_flags with bit 0x8 set", FIELD(uc_flags), 0xf, false, false },
	{ "uc_link non-zero", FIELD(uc_link), STACK_START + 0x100, false, false },
	{ "si_signo 0", FIELD(signo), 0, false, false },
	{ "si_signo 65", FIELD(signo), 65, false, false },
	{ "si_signo -1", FIELD(signo), (uint32_t)-1, false, false },
	{ "fpstate below the frame", FIELD(fpstate), (uint64_t)-64, true, false },
	{ "fpstate inside the frame", FIELD(fpstate), FRAME_SIZE - 8, true, false },
	{ "fpstate more than 64 KiB above the frame", FIELD(fpstate),
	  FRAME_SIZE + (64u << 10), true, false },
	{ "saved rsp unmapped", FIELD(rsp), UNMAPPED_ADDR, false, false },
	{ "saved rsp in read-only memory", FIELD(rsp), RODATA_START + 0x100, false, false },
	{ "saved rsp in code", FIELD(rsp), CODE_START + 0x100, false, false },
	/* A stack overflow faults with rsp in the guard below the stack. */
	{ "saved rsp in the guard page below [stack]", FIELD(rsp), STACK_START - 0x1000,
	  false, true },
};

static void test_variants(void)
{
	for (size_t i = 0; i < RBI_ARRAY_SIZE(variants); i++) {
		const struct variant *v = &variants[i];
		struct frame fr = frame_valid(FRAME_AT);
		uint64_t value = v->value + (v->relative ? FRAME_AT : 0);
		struct outcome o;

		memcpy((char *)&fr + v->field, &value, sizeof(value));
		run_frame(fake_new(), FRAME_AT, &fr, &o);
		bool good = v->found ? found_at(&o, FRAME_AT, (int)fr.signo) : not_found(&o);
		if (!ok(good, "%s: %s", v->what, v->found ? "found" : "not found"))
			show(&o);
	}
}

/* ---- 3. Where on the stack ----------------------------------------------- */

static const struct placement {
	const char *what;
	uint64_t at;
	bool found;
} placements[] = {
	{ "right at the stack pointer", CRASH_SP, true },
	{ "below the stack pointer (a handler that returned)", CRASH_SP - 0x400, false },
	{ "across the stack pointer", CRASH_SP - 0x100, false },
	{ "on another thread's stack, above its stack pointer", OTHER_SP + 0x200, false },
};

static void test_placements(void)
{
	for (size_t i = 0; i < RBI_ARRAY_SIZE(placements); i++) {
		const struct placement *p = &placements[i];
		struct frame fr = frame_valid(p->at);
		struct outcome o;

		run_frame(fake_new(), p->at, &fr, &o);
		bool good = p->found ? found_at(&o, p->at, SIGSEGV) : not_found(&o);
		if (!ok(good, "frame %s: %s", p->what, p->found ? "found" : "not found"))
			show(&o);
	}

	/* A handler interrupted by another signal: the innermost frame is
	   the handler that was running. */
	struct fake *f = fake_new();
	struct frame outer = frame_valid(FRAME_AT), inner = frame_valid(CRASH_SP + 0x200);
	struct outcome o;

	outer.signo = SIGBUS;
	outer.code = 2;         /* BUS_ADRERR */
	frame_put(f, FRAME_AT, &outer);
	run_frame(f, CRASH_SP + 0x200, &inner, &o);
	if (!ok(found_at(&o, CRASH_SP + 0x200, SIGSEGV), "two frames: the innermost is taken"))
		show(&o);

	/* No frame: only the killing signal is told. */
	run(fake_new(), &fake_ops, &o);
	if (!ok(not_found(&o) && o.crash.handler_ended_it == 0 &&
		strcmp(o.text, "SIGABRT (SI_TKILL) sent by the process itself") == 0,
		"no frame: described as \"%s\"", o.text))
		show(&o);
}

/* ---- 4. Backends that cannot tell ---------------------------------------- */

static void test_backends(void)
{
	struct rbi_mem_ops v1 = fake_ops, no_signal = fake_ops, no_thread = fake_ops;
	struct rbi_mem_ops short_ops = fake_ops, tiny = fake_ops;
	rbi_target *t = NULL;
	int rc;
	struct frame fr = frame_valid(FRAME_AT);
	struct outcome o;
	struct fake *f;

	/* A program built against 0.1-0.2 numbered the struct: version 1
	   ends before .signal, never looked at.  One sized by the ABI rule
	   to end there is read the same. */
	v1.size = 1;
	short_ops.size = offsetof(struct rbi_mem_ops, signal);
	tiny.size = offsetof(struct rbi_mem_ops, close);
	no_signal.signal = NULL;
	no_thread.thread = NULL;

	f = fake_new();
	f->signal_rc = RBI_ITER_END;
	run(f, &fake_ops, &o);
	ok(o.rc == RBI_ITER_END, "signal op says RBI_ITER_END: RBI_ITER_END (%d)", o.rc);

	f = fake_new();
	f->kill.signo = 0;
	run(f, &fake_ops, &o);
	ok(o.rc == RBI_ITER_END, "signal op gives signal 0: RBI_ITER_END (%d)", o.rc);

	run(fake_new(), &v1, &o);
	ok(o.rc == RBI_ITER_END, "version-1 backend: RBI_ITER_END (%d)", o.rc);

	run(fake_new(), &short_ops, &o);
	ok(o.rc == RBI_ITER_END, "backend whose size ends before .signal: RBI_ITER_END (%d)",
	   o.rc);

	f = fake_new();
	rc = rbi_target_open_ops(&tiny, f, NULL, &t);
	ok(rc == RBI_INVAL && !t, "backend whose size does not reach .close: RBI_INVAL (%d)", rc);
	fake_close(f);

	run(fake_new(), &no_signal, &o);
	ok(o.rc == RBI_ITER_END, "backend without a signal op: RBI_ITER_END (%d)", o.rc);

	/* Without threads there is no stack pointer to search from. */
	f = fake_new();
	frame_put(f, FRAME_AT, &fr);
	run(f, &no_thread, &o);
	if (!ok(not_found(&o), "backend without a thread op: the signal, no frame"))
		show(&o);

	const struct rbi_crash *c = NULL;
	ok(rbi_target_crash(NULL, &c) == RBI_INVAL, "no target: RBI_INVAL");
}

/* ---- 5, 6. Who ended the process ----------------------------------------- */

static const struct killer {
	const char *what;
	int signo, code;
	int32_t sender;
	uint64_t addr;          /* of a fault */
	int ended;              /* handler_ended_it */
	const char *says;       /* after "SIGSEGV (SEGV_MAPERR) at 0x18; " */
} killers[] = {
	{ "abort()", SIGABRT, SI_TKILL, PID, 0, 1,
	  "Ruby's [BUG] handler then aborted the process (SIGABRT, SI_TKILL)" },
	{ "kill(getpid(), SIGABRT)", SIGABRT, SI_USER, PID, 0, 1,
	  "Ruby's [BUG] handler then aborted the process (SIGABRT, SI_USER)" },
	{ "raise(SIGSEGV) again (Ruby 3.3+)", SIGSEGV, SI_TKILL, PID, 0, 1,
	  "Ruby's [BUG] handler then raised it again to end the process (SI_TKILL)" },
	{ "raise(SIGQUIT)", SIGQUIT, SI_TKILL, PID, 0, 1,
	  "Ruby's [BUG] handler then ended the process (SIGQUIT, SI_TKILL)" },
	{ "SIGQUIT from another process", SIGQUIT, SI_USER, OTHER_PID, 0, 0,
	  "killed while handling it by SIGQUIT (SI_USER) sent by pid 4242" },
	{ "SIGABRT from another process's tgkill", SIGABRT, SI_TKILL, OTHER_PID, 0, 0,
	  "killed while handling it by SIGABRT (SI_TKILL) sent by pid 4242" },
	{ "sigqueue() to itself", SIGABRT, SI_QUEUE, PID, 0, 0,
	  "killed while handling it by SIGABRT (SI_QUEUE) sent by the process itself" },
	{ "a fault in the handler itself", SIGSEGV, SEGV_MAPERR, 0, UNMAPPED_ADDR, 0,
	  "killed while handling it by SIGSEGV (SEGV_MAPERR) at 0x7f3a00100000" },
};

static void test_killers(void)
{
	static const char handled[] = "SIGSEGV (SEGV_MAPERR) at 0x18; ";

	for (size_t i = 0; i < RBI_ARRAY_SIZE(killers); i++) {
		const struct killer *k = &killers[i];
		struct frame fr = frame_valid(FRAME_AT);
		struct fake *f = fake_new();
		struct outcome o;

		f->kill.signo = k->signo;
		f->kill.code = k->code;
		f->kill.sender_pid = k->sender;
		f->kill.addr = k->addr;
		f->kill.has_addr = k->addr != 0;
		run_frame(f, FRAME_AT, &fr, &o);
		bool worded = strncmp(o.text, handled, sizeof(handled) - 1) == 0 &&
			      strcmp(o.text + sizeof(handled) - 1, k->says) == 0;
		bool good = found_at(&o, FRAME_AT, SIGSEGV) &&
			    o.crash.handler_ended_it == k->ended && worded;
		if (!ok(good, "%s: handler ended it %d, \"...%s\"", k->what, k->ended, k->says))
			show(&o);
	}
}

/* Only Ruby's crash signals are put on Ruby's [BUG] handler: a profiler's
   SIGPROF handler that aborts is "its handler". */
static void test_other_handler(void)
{
	struct frame fr = frame_valid(FRAME_AT);
	struct outcome o;
	static const char want[] =
		"SIGPROF (SI_KERNEL); its handler then aborted the process (SIGABRT, SI_TKILL)";

	fr.signo = SIGPROF;
	fr.code = SI_KERNEL;
	run_frame(fake_new(), FRAME_AT, &fr, &o);
	if (!ok(found_at(&o, FRAME_AT, SIGPROF) && o.crash.handler_ended_it &&
		!strcmp(o.text, want), "a SIGPROF handler that aborts: \"%s\"", want))
		show(&o);
}

/* ---- 7. Names ------------------------------------------------------------ */

static bool same_str(const char *a, const char *b)
{
	return a && b ? strcmp(a, b) == 0 : a == b;
}

static void test_names(void)
{
	static const struct { int signo, code; const char *name; } codes[] = {
		{ SIGSEGV, 1, "SEGV_MAPERR" },
		{ SIGSEGV, 2, "SEGV_ACCERR" },
		{ SIGBUS, 2, "BUS_ADRERR" },
		{ SIGABRT, -6, "SI_TKILL" },
		{ SIGSEGV, 0, "SI_USER" },
		{ SIGSEGV, 0x80, "SI_KERNEL" },
		{ SIGSEGV, 99, NULL },
		{ SIGABRT, 1, NULL },   /* SIGABRT has no codes of its own */
	};

	ok(same_str(rbi_signal_name(SIGSEGV), "SIGSEGV") &&
	   same_str(rbi_signal_name(SIGABRT), "SIGABRT") &&
	   same_str(rbi_signal_name(SIGSYS), "SIGSYS"),
	   "rbi_signal_name: SIGSEGV, SIGABRT, SIGSYS");
	ok(!rbi_signal_name(0) && !rbi_signal_name(-1) && !rbi_signal_name(999),
	   "rbi_signal_name: 0, -1 and 999 name no signal");
	for (size_t i = 0; i < RBI_ARRAY_SIZE(codes); i++) {
		const char *got = rbi_signal_code_name(codes[i].signo, codes[i].code);

		ok(same_str(got, codes[i].name), "rbi_signal_code_name(%d, %d) == %s (%s)",
		   codes[i].signo, codes[i].code, codes[i].name ? codes[i].name : "NULL",
		   got ? got : "NULL");
	}
}

/* ---- 8. siginfo_t -------------------------------------------------------- */

/* si_pid and si_uid, side by side where a fault's si_addr is. */
#define PID_UID(pid, uid) ((uint64_t)(uint32_t)(pid) | (uint64_t)(uid) << 32)

static void test_siginfo(void)
{
	static const struct {
		const char *what;
		int signo, code;
		uint64_t word;          /* at SI_UNION */
		int has_addr;
		uint64_t addr;
		int32_t sender;
	} cases[] = {
		{ "SIGSEGV fault", SIGSEGV, 1, FAULT_ADDR, 1, FAULT_ADDR, 0 },
		{ "SIGBUS fault", SIGBUS, 2, 0x7f3a00003000, 1, 0x7f3a00003000, 0 },
		{ "SIGABRT by tgkill", SIGABRT, SI_TKILL, PID_UID(PID, 1001), 0, 0, PID },
		{ "SIGSEGV by kill", SIGSEGV, SI_USER, PID_UID(77, 0), 0, 0, 77 },
		{ "SIGTERM by sigqueue", SIGTERM, SI_QUEUE, PID_UID(77, 5), 0, 0, 77 },
		{ "SIGSEGV from the kernel (GP fault)", SIGSEGV, 0x80, 0, 0, 0, 0 },
	};

	for (size_t i = 0; i < RBI_ARRAY_SIZE(cases); i++) {
		uint8_t si[RBI_SIGINFO_SIZE];
		struct rbi_signal s;

		/* Bytes past what is decoded are junk: they must not matter. */
		memset(si, 0xa5, sizeof(si));
		put_u32(si + SI_SIGNO, (uint32_t)cases[i].signo);
		put_u32(si + 4, 0);                     /* si_errno */
		put_u32(si + SI_CODE, (uint32_t)cases[i].code);
		put_u64(si + SI_UNION, cases[i].word);
		rbi_signal_from_siginfo(si, 123, &s);
		ok(s.signo == cases[i].signo && s.code == cases[i].code && s.tid == 123 &&
		   s.has_addr == cases[i].has_addr && s.addr == cases[i].addr &&
		   s.sender_pid == cases[i].sender,
		   "siginfo %s: has_addr %d addr 0x%" PRIx64 " sender %d"
		   " (got %d 0x%" PRIx64 " %d)",
		   cases[i].what, cases[i].has_addr, cases[i].addr, (int)cases[i].sender,
		   s.has_addr, s.addr, (int)s.sender_pid);
	}
}

int main(void)
{
	test_valid_frame();
	test_variants();
	test_placements();
	test_backends();
	test_killers();
	test_other_handler();
	test_names();
	test_siginfo();
	return tap_plan();
}
