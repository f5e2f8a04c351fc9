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
# GC.stat(:marking_time) within about 3 points and (sweeping) exceeded
# GC.stat(:sweeping_time) by 4-5 (load 7; 14-25 at load 15-20: a loaded machine's
# descheduled time lands in whatever the thread was doing), and GC::Profiler (2.7) does
# not time lazy sweeping either.
# On Debian's Ruby 3.1 stackprof profiles the same windows from inside (Debian's
# ruby-stackprof, built for that Ruby, fetched with apt-get download and unpacked into the
# test Ruby's root; gc-time.rb's STACKPROF): its shares beside ours, as a peer reads them:
#   sp         stackprof's share of its :cpu samples under (garbage collection), %;
#   cpu-sp     ours less stackprof's, points (cpu rounds);
#   sp-mark, sp-sweep: its (marking) and (sweeping) shares less ours, points.
# Run by hand on a quiet machine; not a test.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-4}
secs=${2:-3}
. "$here/bench/common.sh"

echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $rounds rounds of $secs s in each mode"
printf '%-12s %7s %7s %7s %7s %7s %9s %9s %7s %7s %7s %8s %8s\n' ruby target cpu "cpu-t" \
	"cpu/t" wall "wall-t" "marking" "sweeping" sp "cpu-sp" "sp-mark" "sp-sweep"
printf '%-12s %7s %7s %7s %7s %7s %9s %9s %7s %7s %7s %8s %8s\n' "" % % points "" % points \
	"cpu-t" "cpu-t" % points "-ours" "-ours"

# stackprof_lib ROOT: Debian's ruby-stackprof unpacked into ROOT (once), and the RUBYLIB
# (as ROOT's programs see it) that finds its Ruby and C parts; nothing if apt cannot get it.
stackprof_lib() {
	local root=$1 dir=/tmp/rbi-stackprof lib ext
	if [ ! -d "$root$dir/usr" ]; then
		(cd "$RB_TMP" && apt-get download ruby-stackprof) >/dev/null 2>&1 &&
			mkdir -p "$root$dir" && dpkg -x "$RB_TMP"/ruby-stackprof_*.deb "$root$dir" ||
			return 0
	fi
	lib=$(ls -d "$root$dir"/usr/lib/*/rubygems-integration/*/gems/stackprof-*/lib | head -1)
	ext=$(ls -d "$root$dir"/usr/lib/*/rubygems-integration/*/extensions/*/*/stackprof-* | head -1)
	[ -n "$lib" ] && [ -n "$ext" ] && echo "${lib#"$root"}:${ext#"$root"}"
}

while read -r kind ver root cmd; do
	sp_lib=
	# Debian's stackprof is built for Debian's Ruby 3.1 only.
	if [ "$kind" = deb ] && [ "${ver%.*}" = 3.1 ]; then
		sp_lib=$(stackprof_lib "$root")
		[ -n "$sp_lib" ] || echo "$kind $ver: no ruby-stackprof from apt: its columns stay empty" >&2
	fi
	STACKPROF=${sp_lib:+4000} RUBYLIB=$sp_lib ruby_start "$kind" "$root" "$cmd" gc-time.rb \
		>/dev/null || continue
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
