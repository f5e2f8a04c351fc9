#!/usr/bin/env bash
# bench/gc-share.sh [ROUNDS] [SECONDS]: whether the (garbage collection) frames get the GC's
# share of the time, on each test Ruby (RBI_TEST_RUBIES narrows them, as for the tests).
# testdata/programs/gc-time.rb keeps 300,000 objects alive and allocates as fast as it can,
# and counts its own GC time (GC.stat(:time); GC::Profiler before 3.1) and CPU time over a
# window (SIGUSR1 opens it, SIGUSR2 closes it and prints them).  ROUNDS times (default 4) it
# is recorded SECONDS (default 3) at 250 Hz in a window, alternately --mode cpu and wall:
#   target     its GC time over its CPU time (the truth), %;
#   cpu        the profile's share of CPU time under (garbage collection), %;
#   wall       the same of wall time (a thread waiting for a CPU still has a stack);
#   marking, sweeping: the (marking) and (sweeping) shares (cpu) against the target's own
#              GC.stat(:marking_time) and (:sweeping_time) (Ruby 3.3 on, else "-");
# means of the rounds, differences in points, and the ratio cpu/target.  The window opens a
# little before the recording and closes a little after it (record first opens the target):
# ratios only, which that barely moves.  What the target counts is not all that its VM
# flags as GC: (garbage collection) is every sample taken while objspace.during_gc is set,
# lazy sweeping steps run from allocations included; on 3.3 and 3.4 (marking) agreed with
# GC.stat(:marking_time) within about 2 points while (sweeping) exceeded
# GC.stat(:sweeping_time) by 14-25 (those steps not clocked there, it seems: unverified),
# and GC::Profiler (2.7) does not time them either.  Run by hand on a quiet machine; not a
# test.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-4}
secs=${2:-3}
. "$here/bench/common.sh"

echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $rounds rounds of $secs s in each mode"
printf '%-12s %7s %7s %7s %7s %7s %9s %9s %7s\n' ruby target cpu "cpu-t" "cpu/t" wall "wall-t" \
	"marking" "sweeping"
printf '%-12s %7s %7s %7s %7s %7s %9s %9s %7s\n' "" % % points "" % points "cpu-t" "cpu-t"
while read -r kind ver root cmd; do
	ruby_start "$kind" "$root" "$cmd" gc-time.rb >/dev/null || continue
	out=$(ls -t "$RB_TMP"/gc-time.*.out | head -1)
	sleep 1         # past the first GCs of the kept set
	for i in $(seq "$rounds"); do
		for mode in cpu wall; do
			n=$(grep -c '^WINDOW' "$out" || true)
			kill -USR1 "$RB_PID"
			"$RBINSPECT" record -p "$RB_PID" --mode "$mode" --duration "$secs" --rate 250 \
				--format raw -o "$RB_TMP/$mode.$i.rbiprof" -q
			kill -USR2 "$RB_PID"
			for _ in $(seq 100); do
				[ "$(grep -c '^WINDOW' "$out" || true)" -gt "$n" ] && break
				sleep 0.05
			done
			grep '^WINDOW' "$out" | tail -1 >"$RB_TMP/$mode.$i.window"
		done
	done
	kill -9 "$RB_PID"
	python3 "$here/bench/gc-share.py" "$kind $ver" "$RB_TMP" "$rounds"
done < <(rubies_list)
