// rbinspect-lldb.cpp: rbinspect's commands inside LLDB, as a native plugin.
//
//   (lldb) plugin load /usr/lib/lldb/plugins/librbinspect-lldb.so
//   (lldb) rb bt | rb-bt [all|N] [--max-frames N] [--native] [--json]
//          rb threads | rb objects | rb info         (also rb-threads, ...)
//
// The commands are rbinspect's own (repl/, through cli-run.c), run on a
// target of libruby-introspect whose memory comes from what LLDB holds:
//   - a local live process: read directly (process_vm_readv, as
//     `rbinspect -p`), which is 20-70 times faster than through
//     lldb-server and works while LLDB keeps the process stopped; when that
//     is not allowed, through LLDB;
//   - a core with LLDB 18 or newer (SBProcess::GetCoreFile, looked up at run
//     time): the same core file, read as `rbinspect CORE` reads it;
//   - otherwise (LLDB 14's cores, remote processes), through LLDB: the
//     memory backend below (struct rbi_mem_ops) over the SB API.  Process
//     memory comes from SBProcess::ReadMemory; for a core, bytes the core
//     does not hold (read-only file mappings) come from the module files
//     LLDB loaded, but only from those whose build-id matches the one in the
//     target's memory.  Regions are the PT_LOAD segments of LLDB's modules
//     (named as the target names them, with their file offsets) plus the
//     process's other mapped regions; threads and their registers come from
//     SBThread; for a core, the signal that ended the process from the
//     thread LLDB shows stopped by it, with its siginfo_t where LLDB gives
//     one (LLDB 21 on: before, no crash is named; see be_signal).
//     RBINSPECT_LLDB_BACKEND=lldb in the environment always reads through
//     LLDB; =direct never does.
//
// Built against LLDB's headers only: liblldb is not linked (DT_NEEDED on a
// liblldb other than the one LLDB runs on would load a second copy, which
// crashes newer LLDBs), so the SB symbols bind to the running LLDB, and SB
// calls newer than LLDB 14 are looked up with dlsym.  Only
// lldb::PluginInitialize is exported.
#include <dlfcn.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include <lldb/API/LLDB.h>

#include "cli-run.h"

// lib/util/signal.c (lib/internal.h): a 64-bit Linux siginfo_t's 128 bytes
// decoded as the core backend and the signal frames of lib/native/crash.c
// decode them.  The library is linked into the plugin.
extern "C" void rbi_signal_from_siginfo(const unsigned char *si, int32_t tid,
					struct rbi_signal *out);

namespace {

// ---- Where LLDB's target is ------------------------------------------------

std::string path_of(const lldb::SBFileSpec &fs)
{
	char buf[PATH_MAX];

	if (!fs.IsValid() || fs.GetPath(buf, sizeof(buf)) == 0)
		return std::string();
	return std::string(buf);
}

bool is_core_plugin(const char *name)
{
	return name && (strstr(name, "core") || !strcmp(name, "minidump"));
}

// SBProcess::GetCoreFile() (LLDB 18+), or "" where LLDB has none.
std::string core_file(lldb::SBProcess &process)
{
	typedef lldb::SBFileSpec (*get_core_fn)(lldb::SBProcess *);
	// Itanium C++ ABI: a method returning a class by value takes the
	// result's address first, then `this`: the same as this function type.
	void *sym = dlsym(RTLD_DEFAULT, "_ZN4lldb9SBProcess11GetCoreFileEv");

	if (!sym)
		return std::string();
	get_core_fn fn = reinterpret_cast<get_core_fn>(sym);
	return path_of(fn(&process));
}

// ---- The memory backend over the SB API ----------------------------------

struct Module {
	lldb::SBModule mod;
	std::string name;       // as the target names it (platform path)
	std::string file;       // the file LLDB loaded for it
	uint64_t base = 0;      // where its ELF header is mapped
	bool mapped_name = false; // NAME is the mapped file's own path (live)
	int trusted = -1;       // file's build-id is the mapped one: 1, 0; -1 unknown
};

struct Region {
	uint64_t start, end, offset;
	uint32_t prot;
	int module;             // index into modules, -1: anonymous
};

struct Backend {
	lldb::SBTarget target;
	lldb::SBProcess process;
	bool core = false;
	std::string sysroot;
	std::vector<Module> modules;
	std::vector<Region> regions;
	bool loaded = false;
};

const uint64_t kPage = 4096;

uint32_t prot_of(uint32_t perms)
{
	return ((perms & lldb::ePermissionsReadable) ? RBI_PROT_READ : 0) |
	       ((perms & lldb::ePermissionsWritable) ? RBI_PROT_WRITE : 0) |
	       ((perms & lldb::ePermissionsExecutable) ? RBI_PROT_EXEC : 0);
}

int process_read_fn(void *ctx, uint64_t addr, void *buf, size_t len, size_t *nread)
{
	Backend *b = static_cast<Backend *>(ctx);
	lldb::SBError err;
	size_t n = b->process.ReadMemory(addr, buf, len, err);

	*nread = n;
	return n == len ? RBI_OK : n ? RBI_PARTIAL : RBI_UNMAPPED;
}

// The program headers of the ELF image whose header is mapped at BASE, read
// from process (or core) memory; its load bias in *BIAS.
struct Phdr {
	uint32_t type, flags;
	uint64_t offset, vaddr, filesz, memsz;
};

bool read_phdrs(Backend *b, uint64_t base, std::vector<Phdr> &out, uint64_t *bias)
{
	unsigned char hdr[64];
	size_t n = 0;

	out.clear();
	if (base == 0 || base == LLDB_INVALID_ADDRESS ||
	    process_read_fn(b, base, hdr, sizeof(hdr), &n) != RBI_OK ||
	    memcmp(hdr, "\177ELF", 4) || hdr[4] != 2 /* ELFCLASS64 */)
		return false;
	uint64_t phoff;
	uint16_t phentsize, phnum;
	memcpy(&phoff, hdr + 32, 8);
	memcpy(&phentsize, hdr + 54, 2);
	memcpy(&phnum, hdr + 56, 2);
	if (phentsize != 56 || phnum == 0 || phnum > 256)
		return false;
	std::vector<unsigned char> ph((size_t)phnum * 56);
	if (process_read_fn(b, base + phoff, ph.data(), ph.size(), &n) != RBI_OK)
		return false;
	*bias = UINT64_MAX;
	for (unsigned i = 0; i < phnum; i++) {
		Phdr p;
		memcpy(&p.type, &ph[i * 56], 4);
		memcpy(&p.flags, &ph[i * 56 + 4], 4);
		memcpy(&p.offset, &ph[i * 56 + 8], 8);
		memcpy(&p.vaddr, &ph[i * 56 + 16], 8);
		memcpy(&p.filesz, &ph[i * 56 + 32], 8);
		memcpy(&p.memsz, &ph[i * 56 + 40], 8);
		if (p.type == 1 /* PT_LOAD */ && p.offset == 0 && *bias == UINT64_MAX)
			*bias = base - p.vaddr;
		out.push_back(p);
	}
	return *bias != UINT64_MAX;
}

// Whether the file LLDB loaded for module M is the one the target mapped:
// LLDB's UUID of an ELF file is its build-id; the target's is read from the
// image's notes in (core) memory.
bool module_trusted(Backend *b, Module &m)
{
	if (m.trusted >= 0)
		return m.trusted == 1;
	m.trusted = 0;
	std::vector<Phdr> ph;
	uint64_t bias;
	size_t n = 0;
	if (m.file.empty() || !read_phdrs(b, m.base, ph, &bias))
		return false;
	std::string want;
	for (const Phdr &p : ph) {
		if (!want.empty())
			break;
		if (p.type != 4 /* PT_NOTE */ || p.filesz > 65536)
			continue;
		std::vector<unsigned char> notes(p.filesz);
		if (process_read_fn(b, bias + p.vaddr, notes.data(), notes.size(), &n) != RBI_OK)
			continue;
		for (size_t p = 0; p + 12 <= notes.size();) {
			uint32_t namesz, descsz, ntype;
			memcpy(&namesz, &notes[p], 4);
			memcpy(&descsz, &notes[p + 4], 4);
			memcpy(&ntype, &notes[p + 8], 4);
			size_t name_at = p + 12, desc_at = name_at + ((namesz + 3) & ~3u);
			size_t next = desc_at + ((descsz + 3) & ~3u);
			if (next > notes.size() || next <= p)
				break;
			if (ntype == 3 /* NT_GNU_BUILD_ID */ && namesz == 4 &&
			    !memcmp(&notes[name_at], "GNU", 4) && descsz > 0 && descsz <= 64) {
				for (uint32_t k = 0; k < descsz; k++) {
					char hex[3];
					snprintf(hex, sizeof(hex), "%02x", notes[desc_at + k]);
					want += hex;
				}
				break;
			}
			p = next;
		}
	}
	const char *uuid = m.mod.GetUUIDString();
	std::string have;
	for (const char *c = uuid ? uuid : ""; *c; c++)
		if (*c != '-')
			have += (char)tolower((unsigned char)*c);
	m.trusted = !want.empty() && want == have;
	return m.trusted == 1;
}

// The PT_LOAD segments of the ELF image mapped at BASE, from its program
// headers in memory, as regions of module INDEX.
void add_phdr_segments(Backend *b, uint64_t base, int index, std::vector<Region> &out)
{
	std::vector<Phdr> ph;
	uint64_t bias;

	if (!read_phdrs(b, base, ph, &bias))
		return;
	for (const Phdr &p : ph) {
		uint64_t addr = bias + p.vaddr;
		uint64_t start = addr & ~(kPage - 1);
		uint64_t end = (addr + p.memsz + kPage - 1) & ~(kPage - 1);
		if (p.type != 1 /* PT_LOAD */ || p.memsz == 0 || end <= start ||
		    p.offset < addr - start)
			continue;
		out.push_back(Region{ start, end, p.offset - (addr - start),
				      ((p.flags & 4) ? RBI_PROT_READ : 0u) |
				      ((p.flags & 2) ? RBI_PROT_WRITE : 0u) |
				      ((p.flags & 1) ? RBI_PROT_EXEC : 0u), index });
	}
}

// The regions: the PT_LOAD segments of LLDB's modules (as LLDB's sections,
// else from the program headers in memory), then the process's other mapped
// memory as anonymous regions.  A module is named as the target names it:
// the memory region's own name where LLDB has one (a live process:
// /proc/PID/maps, so also right for a chroot or container), else LLDB's
// platform path (a core: the path the target's link map gives).
void load_regions(Backend *b)
{
	struct MemRegion {
		uint64_t start, end;
		uint32_t prot;
		std::string name;
	};
	std::vector<MemRegion> mem;
	std::vector<Region> mods, all;

	b->loaded = true;
	b->modules.clear();
	b->regions.clear();
	lldb::SBMemoryRegionInfoList list = b->process.GetMemoryRegions();
	for (uint32_t i = 0, n = list.GetSize(); i < n; i++) {
		lldb::SBMemoryRegionInfo info;

		if (!list.GetMemoryRegionAtIndex(i, info) || !info.IsMapped() ||
		    info.GetRegionEnd() <= info.GetRegionBase())
			continue;
		const char *name = info.GetName();
		mem.push_back(MemRegion{ info.GetRegionBase(), info.GetRegionEnd(),
					 (info.IsReadable() ? RBI_PROT_READ : 0u) |
					 (info.IsWritable() ? RBI_PROT_WRITE : 0u) |
					 (info.IsExecutable() ? RBI_PROT_EXEC : 0u),
					 name ? name : "" });
	}

	for (uint32_t i = 0, n = b->target.GetNumModules(); i < n; i++) {
		Module m;

		m.mod = b->target.GetModuleAtIndex(i);
		m.file = path_of(m.mod.GetFileSpec());
		m.base = m.mod.GetObjectFileHeaderAddress().GetLoadAddress(b->target);
		for (const MemRegion &r : mem)
			if (r.start <= m.base && m.base < r.end && r.name[0] == '/') {
				m.name = r.name;
				m.mapped_name = true;
			}
		if (m.name.empty())
			m.name = path_of(m.mod.GetPlatformFileSpec());
		if (m.name.empty())
			m.name = m.file;
		if (m.name.empty() || m.name[0] != '/')
			continue;       // [vdso] and the like: no file
		int index = (int)b->modules.size();
		size_t before = mods.size();
		for (size_t k = 0, ns = m.mod.GetNumSections(); k < ns; k++) {
			lldb::SBSection sec = m.mod.GetSectionAtIndex(k);
			const char *sn = sec.GetName();

			if (!sn || strncmp(sn, "PT_LOAD[", 8))
				continue;
			uint64_t addr = sec.GetLoadAddress(b->target);
			uint64_t size = sec.GetByteSize();
			uint64_t off = sec.GetFileOffset();
			uint64_t start = addr & ~(kPage - 1);
			uint64_t end = (addr + size + kPage - 1) & ~(kPage - 1);
			if (addr == LLDB_INVALID_ADDRESS || size == 0 || end <= start ||
			    off < addr - start)
				continue;
			mods.push_back(Region{ start, end, off - (addr - start),
					       prot_of(sec.GetPermissions()), index });
		}
		if (mods.size() == before)
			add_phdr_segments(b, m.base, index, mods);
		if (mods.size() > before)
			b->modules.push_back(m);
	}
	// Mapped ELF files LLDB has no module for (LLDB 19 drops a library it
	// cannot find on disk; a live process's regions still name it).
	for (const MemRegion &r : mem) {
		bool known = r.name.empty() || r.name[0] != '/';
		for (const Module &m : b->modules)
			known = known || m.name == r.name;
		if (known)
			continue;
		Module m;
		m.name = r.name;
		m.base = r.start;
		m.mapped_name = true;
		size_t before = mods.size();
		add_phdr_segments(b, m.base, (int)b->modules.size(), mods);
		if (mods.size() > before)
			b->modules.push_back(m);
	}
	std::sort(mods.begin(), mods.end(),
		  [](const Region &x, const Region &y) { return x.start < y.start; });
	// Segments of different modules must not overlap (a module LLDB placed
	// wrongly): keep the first.
	for (const Region &r : mods)
		if (all.empty() || r.start >= all.back().end)
			all.push_back(r);

	std::vector<Region> anon;
	for (const MemRegion &m : mem) {
		// The parts no module segment covers.
		uint64_t cur = m.start;
		for (const Region &r : all) {
			if (r.end <= cur || r.start >= m.end)
				continue;
			if (r.start > cur)
				anon.push_back(Region{ cur, r.start, 0, m.prot, -1 });
			cur = std::max(cur, r.end);
			if (cur >= m.end)
				break;
		}
		if (cur < m.end)
			anon.push_back(Region{ cur, m.end, 0, m.prot, -1 });
	}
	all.insert(all.end(), anon.begin(), anon.end());
	std::sort(all.begin(), all.end(),
		  [](const Region &x, const Region &y) { return x.start < y.start; });
	b->regions = all;
	// RBINSPECT_LLDB_DEBUG=1: what LLDB gave, for reports.
	if (getenv("RBINSPECT_LLDB_DEBUG")) {
		for (const MemRegion &r : mem)
			fprintf(stderr, "rbinspect-lldb: memory %#" PRIx64 "-%#" PRIx64 " %x %s\n",
				r.start, r.end, r.prot, r.name.c_str());
		for (const Module &m : b->modules)
			fprintf(stderr, "rbinspect-lldb: module %s base %#" PRIx64 " file %s%s\n",
				m.name.c_str(), m.base, m.file.c_str(),
				m.mapped_name ? " (named by its mapping)" : "");
		for (const Region &r : all)
			fprintf(stderr, "rbinspect-lldb: region %#" PRIx64 "-%#" PRIx64 " off %#" PRIx64
				" %x %s\n", r.start, r.end, r.offset, r.prot,
				r.module >= 0 ? b->modules[(size_t)r.module].name.c_str() : "");
	}
}

// Bytes at ADDR from the module file mapped there (cores only: where the
// core holds no bytes, a read-only file mapping was not dumped).
size_t file_read(Backend *b, uint64_t addr, void *buf, size_t len)
{
	lldb::SBAddress a = b->target.ResolveLoadAddress(addr);
	lldb::SBSection sec = a.GetSection();
	lldb::SBModule mod = a.GetModule();

	if (!sec.IsValid() || !mod.IsValid())
		return 0;
	Module *m = nullptr;
	for (Module &x : b->modules)
		if (x.mod == mod)
			m = &x;
	if (!m || !module_trusted(b, *m))
		return 0;
	uint64_t sec_addr = sec.GetLoadAddress(b->target);
	if (sec_addr == LLDB_INVALID_ADDRESS || addr < sec_addr)
		return 0;
	uint64_t in_sec = addr - sec_addr;
	if (in_sec >= sec.GetFileByteSize())
		return 0;       // .bss and the like: nothing in the file
	size_t n = (size_t)std::min<uint64_t>(len, sec.GetFileByteSize() - in_sec);
	lldb::SBError err;
	return b->target.ReadMemory(a, buf, n, err);
}

int be_read(void *be, uint64_t addr, void *buf, size_t len, size_t *nread)
{
	Backend *b = static_cast<Backend *>(be);
	size_t done = 0;

	if (!b->loaded)
		load_regions(b);
	while (done < len) {
		lldb::SBError err;
		char *dst = static_cast<char *>(buf) + done;
		size_t n = b->process.ReadMemory(addr + done, dst, len - done, err);

		if (n == 0 && b->core)
			n = file_read(b, addr + done, dst, len - done);
		if (n == 0 || n > len - done)
			break;
		done += n;
	}
	*nread = done;
	if (done == 0 && !b->core) {
		lldb::StateType st = b->process.GetState();
		if (st == lldb::eStateExited || st == lldb::eStateDetached ||
		    st == lldb::eStateInvalid)
			return RBI_GONE;
	}
	return done == len ? RBI_OK : done ? RBI_PARTIAL : RBI_UNMAPPED;
}

int be_region(void *be, size_t index, struct rbi_region *out)
{
	Backend *b = static_cast<Backend *>(be);

	if (!b->loaded)
		load_regions(b);
	if (index >= b->regions.size())
		return RBI_ITER_END;
	const Region &r = b->regions[index];
	out->start = r.start;
	out->end = r.end;
	out->file_offset = r.offset;
	out->prot = r.prot;
	out->path = r.module >= 0 ? b->modules[(size_t)r.module].name.c_str() : nullptr;
	return RBI_OK;
}

int be_thread(void *be, size_t index, struct rbi_thread_regs *out)
{
	Backend *b = static_cast<Backend *>(be);

	if (index >= b->process.GetNumThreads())
		return RBI_ITER_END;
	lldb::SBThread th = b->process.GetThreadAtIndex(index);
	lldb::SBFrame f = th.GetFrameAtIndex(0);
	// The thread pointer: x86-64's fs_base, AArch64's tpidr.
	lldb::SBValue tp = f.FindRegister("fs_base");
	if (!tp.IsValid())
		tp = f.FindRegister("tpidr");
	out->tid = (int32_t)th.GetThreadID();
	out->pc = f.GetPC();
	out->sp = f.GetSP();
	out->tp = tp.IsValid() ? tp.GetValueAsUnsigned(0) : 0;
	return RBI_OK;
}

// The registers of thread TID as its innermost frame has them, in DWARF's
// numbering for x86-64 (rbi_registers): what LLDB unwinds from too.
int be_registers(void *be, int32_t tid, struct rbi_registers *out)
{
	static const char *const names[] = {
		"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8", "r9",
		"r10", "r11", "r12", "r13", "r14", "r15", "rip",
	};
	Backend *b = static_cast<Backend *>(be);
	lldb::SBThread th = b->process.GetThreadByID((lldb::tid_t)tid);

	if (!th.IsValid())
		return RBI_ITER_END;
	lldb::SBFrame f = th.GetFrameAtIndex(0);
	*out = rbi_registers();
	out->machine = 62;      // EM_X86_64
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		lldb::SBValue v = f.FindRegister(names[i]);
		if (!v.IsValid())
			return RBI_UNSUPPORTED;     // another machine
		out->reg[i] = v.GetValueAsUnsigned(0);
	}
	out->count = sizeof(names) / sizeof(names[0]);
	return RBI_OK;
}

// SBThread::GetSiginfo(), looked up at run time like GetCoreFile: an
// invalid SBValue where this LLDB has no such call.
lldb::SBValue thread_siginfo(lldb::SBThread &th)
{
	typedef lldb::SBValue (*get_siginfo_fn)(lldb::SBThread *);
	void *sym = dlsym(RTLD_DEFAULT, "_ZN4lldb8SBThread10GetSiginfoEv");

	if (!sym)
		return lldb::SBValue();
	return reinterpret_cast<get_siginfo_fn>(sym)(&th);
}

// Does SIGNO end a process with a core?  The kernel dumps one for no other
// signal.
bool dumps_core(int signo)
{
	switch (signo) {
	case SIGQUIT: case SIGILL: case SIGTRAP: case SIGABRT: case SIGBUS:
	case SIGFPE: case SIGSEGV: case SIGXCPU: case SIGXFSZ: case SIGSYS:
		return true;
	default:
		return false;
	}
}

// The signal that ended a core's process.  The kernel writes the thread
// that took it first, with pr_cursig set, and its siginfo_t (NT_SIGINFO);
// LLDB shows that thread stopped by the signal (its other threads by signal
// 0; a gcore's, by gdb's SIGSTOP, which killed nothing).  What the library
// needs besides the number, si_code (a fault, SEGV_MAPERR; or sent, SI_USER,
// SI_TKILL) and the fault's address or the sender's pid, is only in that
// siginfo_t, which LLDB gives for a core from LLDB 21 on (SBThread::
// GetSiginfo; LLDB 14 to 20 fail the call, and their stop
// description says only "signal SIGSEGV").  Without it no signal is
// reported: a made-up si_code would name a sender (0 is SI_USER), and the
// library judges from it whether Ruby's [BUG] handler ended the process.
int be_signal(void *be, struct rbi_signal *out)
{
	Backend *b = static_cast<Backend *>(be);
	bool debug = getenv("RBINSPECT_LLDB_DEBUG") != nullptr;

	for (uint32_t i = 0, n = b->process.GetNumThreads(); i < n; i++) {
		lldb::SBThread th = b->process.GetThreadAtIndex(i);

		if (th.GetStopReason() != lldb::eStopReasonSignal ||
		    th.GetStopReasonDataCount() < 1)
			continue;
		uint64_t stop_sig = th.GetStopReasonDataAtIndex(0);
		if (stop_sig == 0 || stop_sig > INT_MAX)
			continue;
		int signo = (int)stop_sig;
		int32_t tid = (int32_t)th.GetThreadID();
		// The numbers are the target's: Linux's, as the library names them.
		const char *lname = b->process.GetUnixSignals().GetSignalAsCString(signo);
		const char *name = rbi_signal_name(signo);
		if (!dumps_core(signo) || !lname || !name || strcmp(lname, name)) {
			if (debug)
				fprintf(stderr, "rbinspect-lldb: thread tid %d stopped by %s (%d): "
					"not a signal that ends a process with a core\n",
					(int)tid, lname ? lname : "?", signo);
			return RBI_ITER_END;
		}
		lldb::SBValue si = thread_siginfo(th);
		lldb::SBError e_signo, e_code, e_pid, e_addr;
		int64_t f_signo = -1, f_code = 0, f_pid = 0;
		uint64_t f_addr = 0;
		if (si.IsValid() && si.GetError().Success()) {
			f_signo = si.GetChildMemberWithName("si_signo").GetValueAsSigned(e_signo, -1);
			f_code = si.GetChildMemberWithName("si_code").GetValueAsSigned(e_code, 0);
			f_pid = si.GetValueForExpressionPath("._sifields._kill.si_pid")
				   .GetValueAsSigned(e_pid, 0);
			f_addr = si.GetValueForExpressionPath("._sifields._sigfault.si_addr")
				   .GetValueAsUnsigned(e_addr, 0);
		}
		if (!si.IsValid() || si.GetError().Fail() || e_signo.Fail() || e_code.Fail() ||
		    e_pid.Fail() || e_addr.Fail() || f_signo != signo) {
			if (debug) {
				const char *why = !si.IsValid() ? "no SBThread::GetSiginfo"
					: si.GetError().Fail() ? si.GetError().GetCString()
					: f_signo != signo ? "another signal's" : "fields missing";
				fprintf(stderr, "rbinspect-lldb: thread tid %d took %s, but LLDB gives "
					"no siginfo_t of it (%s): how the process died is not named\n",
					(int)tid, name, why ? why : "?");
			}
			return RBI_ITER_END;
		}
		// The kernel's bytes again: _kill.si_pid and _sigfault.si_addr
		// share the union's first bytes (x86-64 and AArch64 are
		// little-endian).
		unsigned char raw[128] = { 0 };
		int32_t v32 = (int32_t)f_signo;
		memcpy(raw, &v32, 4);
		v32 = (int32_t)f_code;
		memcpy(raw + 8, &v32, 4);
		memcpy(raw + 16, &f_addr, 8);
		v32 = (int32_t)f_pid;
		memcpy(raw + 16, &v32, 4);
		rbi_signal_from_siginfo(raw, tid, out);
		return RBI_OK;
	}
	return RBI_ITER_END;
}

void be_refresh(void *be)
{
	static_cast<Backend *>(be)->loaded = false;
}

// A file the target maps: the mapped file itself where LLDB named it (a
// live process), else the one LLDB loaded for that module, then under the
// sysroot, then the path itself.  The library checks build-ids.
int be_open_file(void *be, const char *path)
{
	Backend *b = static_cast<Backend *>(be);
	int fd = -1;

	if (!b->loaded)
		load_regions(b);
	for (const Module &m : b->modules) {
		if (m.name != path)
			continue;
		if (m.mapped_name && (fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0)
			return fd;
		if (!m.file.empty() && (fd = open(m.file.c_str(), O_RDONLY | O_CLOEXEC)) >= 0)
			return fd;
	}
	if (!b->sysroot.empty() && path[0] == '/' &&
	    (fd = open((b->sysroot + path).c_str(), O_RDONLY | O_CLOEXEC)) >= 0)
		return fd;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd >= 0 ? fd : RBI_SYSTEM;
}

void be_close(void *be)
{
	delete static_cast<Backend *>(be);
}

const struct rbi_mem_ops live_ops = {
	sizeof(struct rbi_mem_ops), 0, be_read, nullptr, be_region, be_thread,
	be_refresh, be_open_file, be_close, nullptr, be_registers,
};
// A live process is not dead: no signal op.
const struct rbi_mem_ops core_ops = {
	sizeof(struct rbi_mem_ops), RBI_MEM_STATIC, be_read, nullptr, be_region, be_thread,
	be_refresh, be_open_file, be_close, be_signal, be_registers,
};

// ---- The commands ---------------------------------------------------------

const char *backend_choice()
{
	const char *v = getenv("RBINSPECT_LLDB_BACKEND");
	return v && *v ? v : "auto";
}

// Open what LLDB holds.  Returns a library status; *WHAT and *LIVE describe it.
int open_target(lldb::SBDebugger &dbg, std::string &what, bool &live, bool &via_lldb,
		rbi_target **out, std::string &why)
{
	lldb::SBTarget target = dbg.GetSelectedTarget();
	lldb::SBProcess process = target.IsValid() ? target.GetProcess() : lldb::SBProcess();
	struct rbi_open_opts opts = {};
	std::string exe = target.IsValid() ? path_of(target.GetExecutable()) : std::string();
	std::string choice = backend_choice();
	int rc;

	opts.size = sizeof(opts);
	lldb::StateType state = process.IsValid() ? process.GetState() : lldb::eStateInvalid;
	if (state == lldb::eStateExited || state == lldb::eStateDetached) {
		why = "the process has exited or was detached";
		return RBI_GONE;
	}
	if (!process.IsValid() || state == lldb::eStateInvalid) {
		why = "no process or core: run or attach a process (process launch, process "
		      "attach -p PID) or load a core (target create -c CORE EXE) first";
		return RBI_NO_PROCESS;
	}
	const char *plugin = process.GetPluginName();
	bool core = is_core_plugin(plugin);
	lldb::pid_t pid = process.GetProcessID();
	lldb::SBPlatform platform = target.GetPlatform();
	const char *pname = platform.IsValid() ? platform.GetName() : nullptr;
	bool local = pname && !strcmp(pname, "host");

	live = !core;
	if (choice != "lldb") {
		if (!core && local && pid > 0 && pid != LLDB_INVALID_PROCESS_ID) {
			what = "process " + std::to_string(pid);
			rc = rbi_target_open_pid((pid_t)pid, &opts, out);
			if (rc == RBI_OK || choice == "direct")
				return rc;
		} else if (core) {
			std::string path = core_file(process);
			if (!path.empty()) {
				if (!exe.empty())
					opts.exe = exe.c_str();
				what = path;
				rc = rbi_target_open_core(path.c_str(), &opts, out);
				if (rc == RBI_OK || choice == "direct")
					return rc;
			}
		}
	}
	if (!core) {
		lldb::StateType st = process.GetState();
		if (st != lldb::eStateStopped && st != lldb::eStateSuspended &&
		    st != lldb::eStateCrashed) {
			why = "the process is running: LLDB reads memory only from a stopped "
			      "process (process interrupt)";
			return RBI_INVAL;
		}
	}
	via_lldb = true;
	Backend *b = new Backend();
	b->target = target;
	b->process = process;
	b->core = core;
	what = core ? "core of process " + std::to_string(pid) : "process " + std::to_string(pid);
	opts.pid = (pid_t)pid;
	rc = rbi_target_open_ops(core ? &core_ops : &live_ops, b, &opts, out);
	if (rc != RBI_OK)
		delete b;
	return rc;
}

// Lines of TEXT without rbinspect's "rbinspect: " (and "warning: ") prefix.
std::vector<std::string> message_lines(const char *text, size_t len)
{
	std::vector<std::string> lines;
	std::string cur;

	for (size_t i = 0; i <= len; i++) {
		if (i == len || text[i] == '\n') {
			const char *p = cur.c_str();
			if (!strncmp(p, "rbinspect: ", 11))
				p += 11;
			if (!strncmp(p, "warning: ", 9))
				p += 9;
			if (*p)
				lines.push_back(p);
			cur.clear();
		} else if (text[i] != '\r') {
			cur += text[i];
		}
	}
	return lines;
}

class RbCommand : public lldb::SBCommandPluginInterface {
public:
	explicit RbCommand(const char *name) : name_(name) {}

	bool DoExecute(lldb::SBDebugger dbg, char **command,
		       lldb::SBCommandReturnObject &result) override
	{
		std::vector<char *> argv;
		std::string what, why;
		rbi_target *t = nullptr;
		bool live = false, via_lldb = false;
		char *obuf = nullptr, *ebuf = nullptr;
		size_t olen = 0, elen = 0;

		argv.push_back(const_cast<char *>(name_.c_str()));
		for (char **a = command; a && *a; a++)
			argv.push_back(*a);
		argv.push_back(nullptr);

		int rc = open_target(dbg, what, live, via_lldb, &t, why);
		if (rc != RBI_OK) {
			std::string msg = !why.empty() ? why : rbi_errmsg();
			if (msg.empty())
				msg = rbi_strerror(rc);
			result.SetError(("rb " + name_ + ": " + msg).c_str());
			return false;
		}
		FILE *out = open_memstream(&obuf, &olen);
		FILE *err = open_memstream(&ebuf, &elen);
		if (!out || !err) {
			if (out)
				fclose(out);
			if (err)
				fclose(err);
			free(obuf);
			free(ebuf);
			rbi_target_free(t);
			result.SetError("rb: out of memory");
			return false;
		}
		int status = rbi_lldb_run(t, what.c_str(), live, out, err,
					  (int)argv.size() - 1, argv.data());
		rbi_target_free(t);
		fclose(out);
		fclose(err);
		if (olen)
			result.Printf("%s", obuf);
		std::vector<std::string> msgs = message_lines(ebuf ? ebuf : "", elen);
		free(obuf);
		free(ebuf);
		if (status != 0) {
			std::string msg;
			for (const std::string &m : msgs)
				msg += (msg.empty() ? "" : "\n") + m;
			if (msg.empty())
				msg = "rb " + name_ + ": rbinspect failed (exit status " +
				      std::to_string(status) + ")";
			// 5 not Ruby, 7 unknown version, 8 no VM: often files LLDB
			// did not find for a core (it finds them by their paths).
			if (via_lldb && !live && (status == 5 || status == 7 || status == 8))
				msg += "\n(read through LLDB, which found the core's files by the paths "
				       "the target used: for a core of a chroot, a container or another "
				       "machine, point LLDB at them first, e.g. settings set "
				       "target.exec-search-paths DIR..., and see image list)";
			result.SetError(msg.c_str());
			return false;
		}
		for (const std::string &m : msgs)
			result.AppendWarning(m.c_str());
		result.SetStatus(lldb::eReturnStatusSuccessFinishResult);
		return true;
	}

private:
	std::string name_;
};

struct CommandDoc {
	const char *name, *help, *syntax;
};

const CommandDoc kCommands[] = {
	{ "bt", "Ruby backtrace of every thread, or of thread N, as Ruby prints it.",
	  "rb bt [all|N] [--max-frames N] [--native] [--fibers [--max-fibers N]] "
	  "[--locals [--max-value-bytes N]] [--json]" },
	{ "threads", "One line per Ruby thread: number, tid, status, GVL, name.",
	  "rb threads [--json]" },
	{ "objects", "The Ruby heap: live objects by type and by class.",
	  "rb objects [ARGS]   (as rbinspect's objects command)" },
	{ "info", "Ruby version, libruby, VM address and where each was found.",
	  "rb info [--json]" },
};

} // namespace

namespace lldb {
__attribute__((visibility("default"))) bool PluginInitialize(lldb::SBDebugger debugger);
}

bool lldb::PluginInitialize(lldb::SBDebugger debugger)
{
	lldb::SBCommandInterpreter ci = debugger.GetCommandInterpreter();
	lldb::SBCommand rb = ci.AddMultiwordCommand(
		"rb", "Ruby commands from rbinspect: backtraces, threads, objects and VM, "
		      "read from the process or core LLDB holds (also rb-bt, rb-threads, "
		      "rb-objects, rb-info).");

	for (const CommandDoc &c : kCommands) {
		std::string top = std::string("rb-") + c.name;

		if (rb.IsValid())
			rb.AddCommand(c.name, new RbCommand(c.name), c.help, c.syntax);
		ci.AddCommand(top.c_str(), new RbCommand(c.name), c.help, c.syntax);
	}
	return true;
}
