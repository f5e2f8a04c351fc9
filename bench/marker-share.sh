#!/usr/bin/env bash
# bench/marker-share.sh [SECONDS]: issue #31's item 2, "Process.clock_gettime overstated", on
# each test Ruby (RBI_TEST_RUBIES narrows them, as for the tests).  testdata/programs/marker.rb
# does Ruby work and, between pieces of it, reads its own CPU clock (a real system call, as
# Rails' Event#now_cpu makes); it measures the calls' share of its time itself (truth).  It
# is recorded SECONDS (default 4) at 100 Hz in wall time, in CPU time and with --pause, on a
# quiet machine and then beside one busy loop per CPU (`busy`), and each profile's share of
# Process.clock_gettime as the leaf is printed beside the truth, with:
#   wait   the share of the recording the program spent runnable but waiting for a CPU
#          (its own /proc schedstat run_delay, before and after);
#   cost   the marker's cost in microseconds, as the program measured it.
# Run by hand; not a test.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-4}
runs=1
. "$here/bench/common.sh"
busy_pids=()
trap 'kill "${busy_pids[@]}" 2>/dev/null; rubies_cleanup' EXIT

run_delay() { awk '{ print $2 }' "/proc/$1/task/$1/schedstat"; }

# one LOAD MODE-ARGS...: a recording of a fresh marker.rb; prints its row.
one() {
	local load=$1 d0 d1 t0 t1 truth share cost
	shift
	ruby_start "$kind" "$root" "$cmd" marker.rb || { echo "marker.rb did not start"; return; }
	sleep 0.5
	d0=$(run_delay "$RB_PID") t0=$(date +%s%N)
	"$RBINSPECT" record -p "$RB_PID" -d "$secs" --rate 100 "$@" -f folded --no-lines \
		-o "$RB_TMP/m.folded" -q 2>/dev/null
	d1=$(run_delay "$RB_PID") t1=$(date +%s%N)
	kill -USR2 "$RB_PID"
	sleep 0.3
	truth=$(awk '$1 == "share" { print $2 }' "$RB_TRUTH") cost=$(awk '$1 == "cost" { print $2 }' "$RB_TRUTH")
	share=$(leaf_share "$RB_TMP/m.folded" Process.clock_gettime)
	kill -9 "$RB_PID"
	printf '%-14s %-6s %-8s %6s %6s %6s %6s\n' "$kind $ver" "$load" "${1:-wall}" "$share" \
		"$truth" "$(awk -v d=$((d1 - d0)) -v t=$((t1 - t0)) 'BEGIN { printf "%.1f", 100 * d / t }')" "$cost"
}

printf '%-14s %-6s %-8s %6s %6s %6s %6s\n' ruby load mode share truth wait cost
while read -r kind ver root cmd; do
	for load in quiet busy; do
		if [ "$load" = busy ]; then
			for _ in $(seq "$(nproc)"); do
				sh -c 'while :; do :; done' & busy_pids+=($!)
			done
		fi
		one "$load"
		one "$load" --mode cpu
		one "$load" --pause
		kill "${busy_pids[@]}" 2>/dev/null || true
		busy_pids=()
	done
done < <(rubies_list)
