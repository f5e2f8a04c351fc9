# lldb-crash.sh: the LLDB plugin (gdb-plugin/lldb) names how a crashed Ruby died, as
# `rbinspect CORE bt` and `info` do, where LLDB can tell.  One DWARF Ruby (the newest
# tools/test-rubies.sh lists; RBI_LLDB_CRASH_RUBIES: an extended regex on "KIND VERSION" to
# choose another) runs testdata/programs/crash.rb and is crashed in a C extension (SIGSEGV,
# SEGV_MAPERR at 0x0; Ruby's [BUG] handler then ends the process), and the kernel writes the
# core, as in crash.sh.  Then each LLDB (the system's, LLDB 19 unpacked privately by
# tools/private-debugger.sh, and RBI_LLDB=PROGRAM, another one to try) opens it in batch mode
# with the plugin, twice: by default (LLDB 18 on: the core file itself) and through LLDB's own
# API (RBINSPECT_LLDB_BACKEND=lldb: the plugin's backend over the SB API).
#
# Through LLDB's API the signal comes from the thread LLDB shows stopped by it, and what it
# was (si_code: the fault, or who sent it) from SBThread::GetSiginfo, which LLDB answers for
# a core from LLDB 21 on (`thread siginfo` shows it).  Where LLDB can tell: rb-bt = rbinspect
# bt, its first thread "crashed here" with the same words, and rb-info's crash line =
# rbinspect info's.  Where it cannot (LLDB 14 to 20 through their API): no crash is named
# (rather than a signal with a made-up si_code), and the threads are the same.  Either way
# rb-bt --native (registers from LLDB's own register context through its API) gives every
# thread the frames `rbinspect CORE bt --native` gives it (the module named as each names
# it: LLDB by the path it loaded, libruby.so.3.4, the kernel's core by the file's own,
# libruby.so.3.4.5).
#
# Where the core goes: see tests/crashes.sh.
set -u
. "$(dirname "$0")/../tap.sh"
. "$(dirname "$0")/../rubies.sh"
. "$(dirname "$0")/../crashes.sh"
. "$(dirname "$0")/../debuggers.sh"

skip_all() { skip "LLDB on a crash core: $*"; tap_done; exit 0; }

[ -f "$PLUGIN" ] || skip_all "no LLDB plugin built ($PLUGIN; needs liblldb-14-dev)"
[ ${#lldbs[@]} -gt 0 ] || skip_all "no LLDB (lldb-14)"

crash_setup || skip_all "$CRASH_WHY"

RUBIES_RE=${RBI_LLDB_CRASH_RUBIES:-'^dwarf '}
read -r kind ver root cmd < <(rubies_list | grep -E -- "$RUBIES_RE" | tail -n 1)
[ -n "${cmd:-}" ] || skip_all "no Ruby matches '$RUBIES_RE' (tools/test-rubies.sh)"
name="$kind $ver"

crash_start "$kind" "$root" "$cmd" || skip_all "$name: crash.rb did not start"
wait_parked "$RB_PID" || diag "$name: not every task sleeps"
crash_segv
wait_dead "$RB_PID" || skip_all "$name: the process did not die"
core=$(crash_core)
[ -n "$core" ] || skip_all "$name: the kernel wrote no core"

w=$RB_TMP/want
"$RBINSPECT" "$core" bt >"$w.bt" 2>/dev/null
"$RBINSPECT" "$core" info >"$w.info" 2>/dev/null
want_head=$(head -n 1 "$w.bt")
want_crash=$(grep '^crash ' "$w.info")
if [[ $want_head == *", crashed here: "* ]] && [ -n "$want_crash" ]; then
	ok "$name: rbinspect names the crash: $(sed "s/.*crashed here: //; s/:$//" <<<"$want_head")"
else
	not_ok "$name: rbinspect names the crash"; diag "$want_head"; diag "$want_crash"
	skip_all "$name: nothing to compare LLDB with"
fi
# The thread headers without the crash, in number order.
plain_headers() { grep '^Thread ' "$1" | sed 's/, crashed here: .*:$/:/' | sort -k2,2n; }
plain_headers "$w.bt" >"$w.threads"
"$RBINSPECT" "$core" bt --native >"$w.native" 2>/dev/null
# by_thread BT: the threads of a bt's text in number order, their headers without the crash,
# native frames without their module's name.
by_thread() {
	python3 -c '
import re, sys
blocks, cur = [], None
for line in open(sys.argv[1]):
    if line.startswith("Thread "):
        cur = [re.sub(r", crashed here: .*:$", ":", line.rstrip("\n"))]
        blocks.append(cur)
    elif cur is not None:
        cur.append(re.sub(r"^(#\d+ .*?) \([^()]*\)( at |$)", r"\1\2", line.rstrip("\n")))
blocks.sort(key=lambda b: int(b[0].split()[1].rstrip(":")))
print("\n".join("\n".join(b) for b in blocks))' "$1"
}
by_thread "$w.native" >"$w.native.threads"

# lldb_run PREFIX BACKEND: rb-bt, rb-info and rb-bt --native in LLDB ($lldb) on the core,
# into PREFIX.bt, PREFIX.info and PREFIX.native.
lldb_run() {
	local p=$1
	RBINSPECT_LLDB_BACKEND=$2 timeout 600 "${LLDB_ENV[@]}" "$lldb" --batch \
		-o "plugin load $PLUGIN" -o "target create \"$cmd\" --core \"$core\"" \
		-o rb-bt -o rb-info -o 'rb-bt --native' >"$p.log" 2>"$p.err" </dev/null
	awk -v p="$p" '/^\(lldb\) / { n = substr($0, 8); f = "";
			if (n == "rb-bt") f = p ".bt"; else if (n == "rb-info") f = p ".info";
			else if (n == "rb-bt --native") f = p ".native";
			if (f) printf "" > f; next }
		f { print >> f }' "$p.log"
}

for lldb in "${lldbs[@]}"; do
	v=$("$lldb" --version 2>/dev/null | sed -n 's/^lldb version \([0-9]*\).*/\1/p;q')
	ln=lldb-${v:-?}
	# Does this LLDB give a core's siginfo_t (LLDB 21 on)?
	siginfo=0
	timeout 600 "${LLDB_ENV[@]}" "$lldb" --batch -c "$core" "$cmd" -o 'thread siginfo' \
		2>&1 </dev/null | grep -q 'si_code = ' && siginfo=1
	for backend in auto lldb; do
		d="$name $ln, $([ "$backend" = lldb ] && echo "through LLDB's API" || echo "by default")"
		p=$RB_TMP/l-$backend
		rm -f "$p".*
		lldb_run "$p" "$backend"
		if [ ! -s "$p.bt" ]; then
			not_ok "$d: rb-bt printed nothing"
			diag "$( (tail -5 "$p.log"; grep -v '^$' "$p.err" | tail -5) 2>&1)"
			continue
		fi
		named=$siginfo
		[ "$backend" = auto ] && [ "${v:-0}" -ge 18 ] && named=1
		if [ "$named" = 1 ]; then
			is "$(head -n 1 "$p.bt")" "$want_head" "$d: rb-bt's first thread crashed here, as rbinspect bt says"
			if cmp -s "$p.bt" "$w.bt"; then
				ok "$d: rb-bt = rbinspect bt"
			else
				not_ok "$d: rb-bt = rbinspect bt"; diag "$(diff "$w.bt" "$p.bt" | head -20)"
			fi
			is "$(grep '^crash ' "$p.info")" "$want_crash" "$d: rb-info names the crash as rbinspect info"
		else
			is "$(grep -c 'crashed here' "$p.bt"; grep -c '^crash ' "$p.info")" "$(printf '0\n0')" \
				"$d: no crash named (LLDB gives no siginfo_t of a core)"
			if plain_headers "$p.bt" | cmp -s - "$w.threads"; then
				ok "$d: rb-bt: the same threads as rbinspect bt"
			else
				not_ok "$d: rb-bt: the same threads as rbinspect bt"
				diag "$(plain_headers "$p.bt" | diff "$w.threads" - | head -20)"
			fi
		fi
		by_thread "$p.native" >"$p.native.threads"
		if [ -s "$p.native" ] && cmp -s "$p.native.threads" "$w.native.threads"; then
			ok "$d: rb-bt --native: every thread's frames as rbinspect bt --native has them"
		else
			not_ok "$d: rb-bt --native: every thread's frames as rbinspect bt --native has them"
			diag "$(diff "$w.native.threads" "$p.native.threads" | head -20)"
		fi
	done
done
tap_done
