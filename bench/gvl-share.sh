#!/usr/bin/env bash
# bench/gvl-share.sh [SECONDS]: whether a call that lets the GVL go gets only its own time, on
# each test Ruby (RBI_TEST_RUBIES narrows them, as for the tests).  testdata/programs/gvl-write.rb
# runs four threads that each do a little Ruby work, then a 64-byte IO#syswrite: after each
# write a thread queues for the GVL while another runs.  The write's cost is kernel time, so
# the kernel's share of the process's CPU time over the recording (/proc/PID/stat's stime over
# utime + stime: futex hand-offs of the GVL are in it too) bounds the share IO#syswrite may
# have of itself.  Each Ruby is recorded SECONDS (default 3) at 100 Hz in --mode cpu, then as
# long in wall time (the default view):
#   kernel     stime / (utime + stime) over the cpu recording, %;
#   cpu        IO#syswrite's self share of CPU time, %, and cpu-k its excess in points;
#   work       Writer.work's self share of CPU time, % (the Ruby code that costs);
#   wall       IO#syswrite's self share of wall time, %;
#   gvl-wait   "(waiting for the GVL)"'s share of wall time, %.
# Before the GVL's queue was read, cpu was 27-52 % where kernel was 1-3 % (issue #31).  A
# loaded machine inflates cpu: a thread back from its write and waiting for a CPU, not for
# the GVL, is runnable ('R') and counts as on a CPU.  Run by hand on a quiet machine; not a
# test.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-3}
. "$here/bench/common.sh"

# self_share FOLDED LEAF: the share, %, of the folded stacks' time whose leaf is LEAF.
self_share() {
	awk -v leaf="$2" '{ n = $NF; t += n; sub(/ [0-9]+$/, ""); k = split($0, f, ";")
		if (f[k] ~ "^" leaf) s += n } END { printf "%.1f", t ? 100 * s / t : 0 }' "$1"
}
# cpu_ticks PID: utime and stime of PID, in clock ticks.
cpu_ticks() { cut -d' ' -f14,15 "/proc/$1/stat"; }

echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $secs s in each mode"
printf '%-14s %7s %7s %7s %7s %7s %9s\n' ruby kernel cpu cpu-k work wall gvl-wait
while read -r kind ver root cmd; do
	ruby_start "$kind" "$root" "$cmd" gvl-write.rb || { echo "$kind $ver: did not start" >&2; continue; }
	read -r u0 s0 < <(cpu_ticks "$RB_PID")
	"$RBINSPECT" record -p "$RB_PID" --duration "$secs" --rate 100 --mode cpu --no-lines \
		--format folded -o "$RB_TMP/cpu.folded" -q
	read -r u1 s1 < <(cpu_ticks "$RB_PID")
	"$RBINSPECT" record -p "$RB_PID" --duration "$secs" --rate 100 --no-lines \
		--format folded -o "$RB_TMP/wall.folded" -q
	kill -9 "$RB_PID"
	kernel=$(awk -v u=$((u1 - u0)) -v s=$((s1 - s0)) 'BEGIN { printf "%.1f", 100 * s / (u + s) }')
	cpu=$(self_share "$RB_TMP/cpu.folded" 'IO#syswrite')
	printf '%-14s %7s %7s %7s %7s %7s %9s\n' "$kind $ver" "$kernel" "$cpu" \
		"$(awk -v a="$cpu" -v b="$kernel" 'BEGIN { printf "%+.1f", a - b }')" \
		"$(self_share "$RB_TMP/cpu.folded" 'Writer.work')" \
		"$(self_share "$RB_TMP/wall.folded" 'IO#syswrite')" \
		"$(self_share "$RB_TMP/wall.folded" '\(waiting for the GVL\)')"
done < <(rubies_list)
