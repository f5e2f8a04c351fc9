/* signal.c: signal numbers and si_code values by name, and siginfo_t as
 * the kernel writes it (into a core's NT_SIGINFO, or a signal frame on a
 * thread's stack).  Names are Linux's, whatever machine reads the core. */
#include <signal.h>
#include <stdio.h>

#include "internal.h"

#define SIGINFO_CODE_OFF 8
#define SIGINFO_PID_OFF  16     /* kill, tkill, sigqueue */
#define SIGINFO_ADDR_OFF 16     /* faults */

static const char *const signal_names[] = {
	[SIGHUP] = "SIGHUP", [SIGINT] = "SIGINT", [SIGQUIT] = "SIGQUIT",
	[SIGILL] = "SIGILL", [SIGTRAP] = "SIGTRAP", [SIGABRT] = "SIGABRT",
	[SIGBUS] = "SIGBUS", [SIGFPE] = "SIGFPE", [SIGKILL] = "SIGKILL",
	[SIGUSR1] = "SIGUSR1", [SIGSEGV] = "SIGSEGV", [SIGUSR2] = "SIGUSR2",
	[SIGPIPE] = "SIGPIPE", [SIGALRM] = "SIGALRM", [SIGTERM] = "SIGTERM",
	[SIGSTKFLT] = "SIGSTKFLT", [SIGCHLD] = "SIGCHLD", [SIGCONT] = "SIGCONT",
	[SIGSTOP] = "SIGSTOP", [SIGTSTP] = "SIGTSTP", [SIGTTIN] = "SIGTTIN",
	[SIGTTOU] = "SIGTTOU", [SIGURG] = "SIGURG", [SIGXCPU] = "SIGXCPU",
	[SIGXFSZ] = "SIGXFSZ", [SIGVTALRM] = "SIGVTALRM", [SIGPROF] = "SIGPROF",
	[SIGWINCH] = "SIGWINCH", [SIGIO] = "SIGIO", [SIGPWR] = "SIGPWR",
	[SIGSYS] = "SIGSYS",
};

RBI_EXPORT const char *rbi_signal_name(int signo)
{
	if (signo <= 0 || (size_t)signo >= RBI_ARRAY_SIZE(signal_names))
		return NULL;
	return signal_names[signo];
}

/* si_code of a signal a process sent, or the kernel for no fault. */
static const char *sender_code_name(int code)
{
	switch (code) {
	case SI_USER: return "SI_USER";
	case SI_KERNEL: return "SI_KERNEL";
	case SI_QUEUE: return "SI_QUEUE";
	case SI_TIMER: return "SI_TIMER";
	case SI_MESGQ: return "SI_MESGQ";
	case SI_ASYNCIO: return "SI_ASYNCIO";
	case SI_SIGIO: return "SI_SIGIO";
	case SI_TKILL: return "SI_TKILL";
	default: return NULL;
	}
}

RBI_EXPORT const char *rbi_signal_code_name(int signo, int code)
{
	static const char *const segv[] = { NULL, "SEGV_MAPERR", "SEGV_ACCERR",
		"SEGV_BNDERR", "SEGV_PKUERR", "SEGV_ACCADI", "SEGV_ADIDERR",
		"SEGV_ADIPERR", "SEGV_MTEAERR", "SEGV_MTESERR", "SEGV_CPERR" };
	static const char *const bus[] = { NULL, "BUS_ADRALN", "BUS_ADRERR",
		"BUS_OBJERR", "BUS_MCEERR_AR", "BUS_MCEERR_AO" };
	static const char *const ill[] = { NULL, "ILL_ILLOPC", "ILL_ILLOPN",
		"ILL_ILLADR", "ILL_ILLTRP", "ILL_PRVOPC", "ILL_PRVREG",
		"ILL_COPROC", "ILL_BADSTK", "ILL_BADIADDR" };
	static const char *const fpe[] = { NULL, "FPE_INTDIV", "FPE_INTOVF",
		"FPE_FLTDIV", "FPE_FLTOVF", "FPE_FLTUND", "FPE_FLTRES",
		"FPE_FLTINV", "FPE_FLTSUB" };
	static const char *const trap[] = { NULL, "TRAP_BRKPT", "TRAP_TRACE",
		"TRAP_BRANCH", "TRAP_HWBKPT", "TRAP_UNK", "TRAP_PERF" };
	static const char *const chld[] = { NULL, "CLD_EXITED", "CLD_KILLED",
		"CLD_DUMPED", "CLD_TRAPPED", "CLD_STOPPED", "CLD_CONTINUED" };
	const char *const *v = NULL;
	size_t n = 0;

	if (code <= 0 || code == SI_KERNEL)
		return sender_code_name(code);
#define CODES(a) (v = (a), n = RBI_ARRAY_SIZE(a))
	switch (signo) {
	case SIGSEGV: CODES(segv); break;
	case SIGBUS: CODES(bus); break;
	case SIGILL: CODES(ill); break;
	case SIGFPE: CODES(fpe); break;
	case SIGTRAP: CODES(trap); break;
	case SIGCHLD: CODES(chld); break;
	default: return NULL;
	}
#undef CODES
	return (size_t)code < n ? v[code] : NULL;
}

/* Is SIGNO with CODE a fault the CPU raised, with the address in si_addr? */
static bool signal_is_fault(int signo, int code)
{
	return code > 0 && code != SI_KERNEL &&
	       (signo == SIGSEGV || signo == SIGBUS || signo == SIGILL ||
		signo == SIGFPE || signo == SIGTRAP);
}

void rbi_signal_from_siginfo(const unsigned char *si, int32_t tid, struct rbi_signal *out)
{
	int32_t signo, code, pid;
	uint64_t addr;

	memcpy(&signo, si, sizeof(signo));
	memcpy(&code, si + SIGINFO_CODE_OFF, sizeof(code));
	*out = (struct rbi_signal){ .signo = signo, .code = code, .tid = tid };
	if (signal_is_fault(signo, code)) {
		memcpy(&addr, si + SIGINFO_ADDR_OFF, sizeof(addr));
		out->addr = addr;
		out->has_addr = 1;
	} else if (code == SI_USER || code == SI_TKILL || code == SI_QUEUE) {
		memcpy(&pid, si + SIGINFO_PID_OFF, sizeof(pid));
		out->sender_pid = pid;
	}
}
