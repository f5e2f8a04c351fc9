# tsan.sh: the recorder's threads under ThreadSanitizer.  record opens new processes on a
# helper thread while its loop samples the others (lib/profile/record.c: the processes'
# states are shared under one lock); a race there is found by TSan, not by the outputs.
# The build-tsan rbinspect (tools/test-all makes it; RBI_TSAN_BUILD names it) records, on
# the first DWARF test Ruby: a forking server with --subprocesses (a helper opening each
# worker), the same attached with -p and --pause, a process that execs Ruby again (opened
# anew after the exec), and --native.  Each must end 0 with a profile and no TSan report.
set -u
. "$(dirname "$0")/../tap.sh"
. "$(dirname "$0")/../rubies.sh"

tsan=${RBI_TSAN_BUILD:+$RBI_TSAN_BUILD/repl/rbinspect}
if [ -z "$tsan" ] || [ ! -x "$tsan" ]; then
	skip "no ThreadSanitizer build of rbinspect (tools/test-all makes build-tsan; RBI_TSAN_BUILD names it)"
	tap_done
	exit
fi
# A report fails the run (66) but lets it finish; the report goes to the run's stderr.
export TSAN_OPTIONS="halt_on_error=0 exitcode=66 history_size=4"
# TSan's runtime refuses some kernels' address layouts (more than 28 bits of mmap
# randomness: "unexpected memory mapping"); that is the machine, not the recorder.
if ! why=$("$tsan" --version 2>&1 >/dev/null); then
	skip "ThreadSanitizer does not run on this machine: $(grep -m1 ThreadSanitizer <<<"$why")"
	tap_done
	exit
fi

read -r kind ver root cmd < <(rubies_list | awk '$1 == "dwarf"' | head -n 1)
if [ -z "${kind:-}" ]; then
	skip "no DWARF test Ruby is ready (tools/test-rubies.sh --dwarf builds them)"
	tap_done
	exit
fi
R="$kind $ver"
T=$RB_TMP/tsan
mkdir -p "$T"

# check WHAT: the last run's exit ($rc), its stderr ($T/err), its profile ($T/out.folded).
check() {
	local what=$1 races
	races=$(grep -c 'WARNING: ThreadSanitizer' "$T/err")
	if [ "$rc" = 0 ] && [ "$races" = 0 ] && [ -s "$T/out.folded" ]; then
		ok "$R: $what under ThreadSanitizer: exit 0, a profile, no race"
	else
		not_ok "$R: $what under ThreadSanitizer: exit $rc, $races reports"
		diag "$(grep -A14 'WARNING: ThreadSanitizer' "$T/err" | head -40)"
		diag "$(grep -v '^  ' "$T/err" | tail -3)"
	fi
}

prog=$here/testdata/programs
# reap NAME: a program record started and left running when its -d ran out.
reap() { pkill -KILL -f "$prog/$1" 2>/dev/null; }

# The workers are forked a second in: opened by the helper while the loop samples.
FORK_DELAY=1 WORKERS=2 timeout 120 "$tsan" record --subprocesses --rate 200 -d 3 --format folded \
	-o "$T/out.folded" -q -- "$cmd" "$prog/forker.rb" >/dev/null 2>"$T/err"
rc=$?
reap forker.rb
check "record --subprocesses of a forking server"

if ruby_start "$kind" "$root" "$cmd" forker.rb; then
	timeout 120 "$tsan" record --subprocesses --pause -p "$RB_PID" --rate 200 -d 2 \
		--format folded -o "$T/out.folded" -q >/dev/null 2>"$T/err"
	rc=$?
	check "record --subprocesses --pause -p of a forking server"
	pkill -KILL -P "$RB_PID" 2>/dev/null
	kill -KILL "$RB_PID" 2>/dev/null
else
	not_ok "$R: forker.rb did not start"
fi

timeout 120 "$tsan" record --rate 500 --format folded -o "$T/out.folded" -q -- \
	"$cmd" "$prog/exec.rb" 1 >/dev/null 2>"$T/err"
rc=$?
check "record across an exec"

timeout 120 "$tsan" record --native --rate 200 -d 2 --format folded -o "$T/out.folded" -q -- \
	"$cmd" "$prog/hot.rb" >/dev/null 2>"$T/err"
rc=$?
reap hot.rb
check "record --native"

tap_done
