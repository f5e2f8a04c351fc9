#!/usr/bin/env bash
# bench/torn-bias.sh [ROUNDS] [SECONDS]: whether stacks that move while they are read bias a
# profile, on each test Ruby (RBI_TEST_RUBIES narrows them, as for the tests).
# testdata/programs/fib-flat.rb runs Object#fib(22) (calls and returns all the time: its stack
# moves under the sampler's reads) then Object#flat (a loop without calls: its stack stands
# still), about half the time each, and notes when each starts (the truth, on the clock of
# the profile's sample times).  ROUNDS times (default 5), alternating, it is recorded SECONDS
# (default 3) at 1 kHz as it runs and at 300 Hz with --pause (every stack read whole).  Of the
# samples (every weight 1), means over the rounds:
#   fib        share with Object#fib in the stack, unpaused: the sampler as it is (a stack that
#              kept moving keeps its outer part under a "(moving)" leaf);
#   truth      share whose time the program spent in fib: the same samples' truth;
#   fix        fib - truth, in points, with two standard errors (of the rounds' spread);
#   dropped    the same less the stacks kept in part, against their truth: a sampler that drops
#              every torn stack (the bias issue #18 measured: -0.4 to -4.2 points);
#   paused     the --pause recordings' fib - truth, in points;
#   ticks      truth - the share of the recording's time the program spent in fib: whether
#              the ticks themselves fall evenly (a sampler that reads late in one of them);
#   fib/paused the ratio of the two recordings' fib shares.
# A sample read a little after its time may fall across a switch: noise either way, not bias.
# Goal: |fix| <= 1 point.  RBI_BENCH_VERBOSE=1 prints each round.  Run by hand; not a test.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-5}
secs=${2:-3}
. "$here/bench/common.sh"

# window NAME RECORD-ARGS...: one recording, within a window of the program's truth, into
# $RB_TMP/NAME.rbiprof and NAME.truth
window() {
	local name=$1 out n; shift
	out=$(ls -t "$RB_TMP"/fib-flat.*.out | head -1)
	n=$(grep -c '^WINDOW' "$out" || true)
	kill -USR1 "$RB_PID"
	"$RBINSPECT" record -p "$RB_PID" "$@" --format raw -o "$RB_TMP/$name.rbiprof" -q
	kill -USR2 "$RB_PID"
	for _ in $(seq 100); do
		[ "$(grep -c '^WINDOW' "$out" || true)" -gt "$n" ] && break
		sleep 0.05
	done
	cp "$RB_TRUTH" "$RB_TMP/$name.truth"
}

echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $rounds rounds of $secs s"
printf '%-12s %8s %7s %7s %7s %13s %14s %13s %13s %7s\n' ruby samples "kept in" fib truth \
	"fix (2 se)" "dropped (2 se)" "paused (2 se)" "ticks (2 se)" "fib/"
printf '%-12s %8s %7s %7s %7s %13s %14s %13s %13s %7s\n' "" "" part % % points points points \
	points paused
while read -r kind ver root cmd; do
	ruby_start "$kind" "$root" "$cmd" fib-flat.rb >/dev/null || continue
	sleep 0.5
	for i in $(seq "$rounds"); do
		window "run.$i" --duration "$secs" --rate 1000
		window "paused.$i" --duration "$secs" --rate 300 --pause
	done
	kill -9 "$RB_PID"
	python3 "$here/bench/torn-share.py" ${RBI_BENCH_VERBOSE:+-v} "$kind $ver" "$RB_TMP" "$rounds"
done < <(rubies_list)
