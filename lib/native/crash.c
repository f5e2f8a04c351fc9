/* crash.c: how a process died, from its core.  The signal that killed it
 * comes from the backend (the kernel's NT_SIGINFO and NT_PRSTATUS); when
 * the thread that took it was running a signal handler, the signal that
 * handler was called for comes from the frame the kernel pushed for it on
 * that thread's stack.
 *
 * That second signal is what a Ruby crash is about.  Ruby's handler for
 * SIGSEGV, SIGBUS, SIGILL and SIGFPE runs on an alternate signal stack,
 * prints "[BUG] Segmentation fault at ADDR" and calls abort(): the core
 * says SIGABRT, and the SIGSEGV with its address lives only in the kernel's
 * rt_sigframe at the top of that stack, above the handler's own frames.
 * A frame is taken only when every field the kernel writes checks out: its
 * return address is executable (the C library's sigreturn trampoline), its
 * ucontext's flags and link are what the kernel sets, the saved stack
 * pointer is mapped memory and the saved FPU state lies just above it. */
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "arch/arch.h"
#include "internal.h"

/* The size of the kernel's signal frame F (lib/arch) up to its siginfo's end. */
static size_t frame_size(const struct rbi_arch_sigframe *f)
{
	return f->info + RBI_SIGINFO_SIZE;
}
/* The FPU state goes right above the frame: XSAVE areas are a few KiB. */
#define FPSTATE_MAX_GAP  (64u << 10)
/* How far above the stack pointer to look: a handler's own frames. */
#define SCAN_BYTES       (256u << 10)
/* A stack that overflowed faults with its pointer in the guard below it. */
#define GUARD_BYTES      (1u << 20)

/* Does ADDR lie in a region with all of PROT? */
static bool mapped_with(const struct rbi_region_list *rl, uint64_t addr, uint32_t prot)
{
	const struct rbi_region *r = rbi_region_find(rl, addr);

	return r && (r->prot & prot) == prot;
}

/* Could SP be a thread's stack pointer when a signal came: in writable
   memory, or in the guard gap just below it (a stack overflow)? */
static bool stack_pointer_plausible(const struct rbi_region_list *rl, uint64_t sp)
{
	for (uint64_t gap = 0; gap <= GUARD_BYTES; gap += 4096)
		if (sp + gap >= sp && mapped_with(rl, sp + gap, RBI_PROT_READ | RBI_PROT_WRITE))
			return true;
		else if (rbi_region_find(rl, sp + gap))
			return false;   /* something else is mapped there */
	return false;
}

/* Is the 8-aligned slot at OFF of BUF (read from ADDR) the start of a
   kernel signal frame?  Its siginfo goes into *OUT. */
static bool signal_frame_at(const struct rbi_region_list *rl, const uint8_t *buf,
			    size_t off, uint64_t addr, int32_t tid, struct rbi_signal *out)
{
	const struct rbi_arch_sigframe *fr = rbi_arch_host()->sigframe;
	const uint8_t *f = buf + off;
	uint64_t fpstate = rbi_get_u64(f, fr->fpstate);
	struct rbi_signal sig;

	if ((rbi_get_u64(f, fr->uc_flags) & ~fr->uc_flags_kernel) ||
	    rbi_get_u64(f, fr->uc_link) != 0)
		return false;
	rbi_signal_from_siginfo(f + fr->info, tid, &sig);
	if (sig.signo <= 0 || sig.signo > 64)
		return false;
	if (fpstate != 0 && (fpstate < addr + frame_size(fr) ||
			     fpstate - addr > FPSTATE_MAX_GAP))
		return false;
	if (!mapped_with(rl, rbi_get_u64(f, 0), RBI_PROT_EXEC) ||
	    !stack_pointer_plausible(rl, rbi_get_u64(f, fr->sp)))
		return false;
	*out = sig;
	return true;
}

/* The innermost signal frame above SP on thread TID's stack, if any. */
static void find_signal_frame(struct rbi_target *t, int32_t tid, uint64_t sp,
			      struct rbi_crash *c)
{
	const struct rbi_arch_sigframe *fr = rbi_arch_host()->sigframe;
	const struct rbi_region_list *rl;
	const struct rbi_region *r;
	uint8_t *buf;
	size_t len, n = 0;

	if (!fr || rbi_regions(t, &rl) || !(r = rbi_region_find(rl, sp)))
		return;
	sp &= ~(uint64_t)7;
	len = r->end - sp < SCAN_BYTES ? (size_t)(r->end - sp) : SCAN_BYTES;
	if (len < frame_size(fr) || !(buf = malloc(len)))
		return;
	int rc = rbi_target_read_fn(t, sp, buf, len, &n);
	if (rc == RBI_OK || rc == RBI_PARTIAL) {
		for (size_t off = 0; off + frame_size(fr) <= n; off += 8) {
			if (signal_frame_at(rl, buf, off, sp + off, tid, &c->handled)) {
				c->handled_frame = sp + off;
				break;
			}
		}
	}
	free(buf);
}

/* The stack pointer of native thread TID as the backend has it. */
static bool thread_sp(struct rbi_target *t, int32_t tid, uint64_t *sp)
{
	struct rbi_thread_regs regs;

	for (size_t i = 0; i < RBI_THREADS_REGS_MAX; i++) {
		regs = (struct rbi_thread_regs){ 0 };
		if (rbi_target_thread_at(t, i, &regs) != RBI_OK)
			return false;
		if (regs.tid == tid) {
			*sp = regs.sp;
			return regs.sp != 0;
		}
	}
	return false;
}

/* Is SIGNO one Ruby's crash handler takes (it prints [BUG] and ends the
   process: signal.c's sigsegv, sigbus, sigill and, from 3.x, sigfpe)? */
static bool ruby_crash_signal(int signo)
{
	return signo == SIGSEGV || signo == SIGBUS || signo == SIGILL || signo == SIGFPE;
}

/* Did the handler of C->handled end the process itself?  The signal that
   killed it was sent by the process to itself (abort() and raise() send it
   with tgkill) while that handler ran: a handler that returned or jumped
   away would have left no frame there to find. */
static bool handler_ended_it(const struct rbi_crash *c)
{
	const struct rbi_signal *s = &c->signal;

	return c->handled.signo && c->pid > 0 && s->sender_pid == c->pid &&
	       (s->code == SI_TKILL || s->code == SI_USER);
}

RBI_EXPORT int rbi_target_crash(rbi_target *t, const struct rbi_crash **out)
{
	struct rbi_crash_memo *memo;
	uint64_t sp;

	if (!t || !out)
		return rbi_fail(RBI_INVAL, "no target");
	memo = rbi_target_crash_memo(t);
	if (memo->state == RBI_CRASH_UNKNOWN) {
		struct rbi_crash *c = &memo->crash;

		*c = (struct rbi_crash){ .pid = rbi_target_pid(t) };
		memo->state = RBI_CRASH_NONE;
		if (rbi_target_signal(t, &c->signal) == RBI_OK && c->signal.signo > 0) {
			memo->state = RBI_CRASH_SIGNAL;
			if (thread_sp(t, c->signal.tid, &sp))
				find_signal_frame(t, c->signal.tid, sp, c);
			c->handler_ended_it = handler_ended_it(c);
		}
	}
	if (memo->state != RBI_CRASH_SIGNAL)
		return RBI_ITER_END;
	*out = &memo->crash;
	return RBI_OK;
}

/* printf FMT at BUF + *LEN, cut to CAP; *LEN stays below CAP. */
RBI_PRINTF(4, 5)
static void appendf(char *buf, size_t cap, size_t *len, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*len + 1 >= cap)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *len, cap - *len, fmt, ap);
	va_end(ap);
	if (n > 0)
		*len = *len + (size_t)n < cap ? *len + (size_t)n : cap - 1;
}

/* "SIGSEGV (SEGV_MAPERR) at 0x0", "SIGABRT (SI_TKILL) sent by the process
   itself", appended to BUF at *LEN. */
static void describe_signal(const struct rbi_signal *s, pid_t self, char *buf,
			    size_t cap, size_t *len)
{
	const char *name = rbi_signal_name(s->signo);
	const char *code = rbi_signal_code_name(s->signo, s->code);

	if (name)
		appendf(buf, cap, len, "%s", name);
	else
		appendf(buf, cap, len, "signal %d", s->signo);
	if (code)
		appendf(buf, cap, len, " (%s)", code);
	else
		appendf(buf, cap, len, " (si_code %d)", s->code);
	if (s->has_addr)
		appendf(buf, cap, len, " at 0x%" PRIx64, s->addr);
	else if (s->sender_pid && s->sender_pid == self)
		appendf(buf, cap, len, " sent by the process itself");
	else if (s->sender_pid)
		appendf(buf, cap, len, " sent by pid %d", (int)s->sender_pid);
}

RBI_EXPORT const char *rbi_crash_describe(const struct rbi_crash *c, char *buf, size_t cap)
{
	size_t len = 0;

	if (!buf || !cap)
		return buf;
	buf[0] = '\0';
	if (!c)
		return buf;
	if (!c->handled.signo) {
		describe_signal(&c->signal, c->pid, buf, cap, &len);
		return buf;
	}
	describe_signal(&c->handled, c->pid, buf, cap, &len);
	if (c->handler_ended_it) {
		const char *name = rbi_signal_name(c->signal.signo);
		const char *code = rbi_signal_code_name(c->signal.signo, c->signal.code);
		const char *who = ruby_crash_signal(c->handled.signo) ?
				  "Ruby's [BUG] handler" : "its handler";

		/* Ruby up to 3.2 calls abort(); from 3.3 it raises the
		   signal again with the default action. */
		if (c->signal.signo == c->handled.signo)
			appendf(buf, cap, &len, "; %s then raised it again to end the "
				"process (%s)", who, code ? code : "sent to itself");
		else
			appendf(buf, cap, &len, "; %s then %s the process (%s, %s)", who,
				c->signal.signo == SIGABRT ? "aborted" : "ended",
				name ? name : "a signal", code ? code : "sent to itself");
	} else {
		appendf(buf, cap, &len, "; killed while handling it by ");
		describe_signal(&c->signal, c->pid, buf, cap, &len);
	}
	return buf;
}
