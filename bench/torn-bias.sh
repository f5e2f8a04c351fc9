#!/usr/bin/env bash
# bench/torn-bias.sh [ROUNDS] [SECONDS]: whether stacks that move while they are read bias a
# profile, on each test Ruby (RBI_TEST_RUBIES narrows them, as for the tests).
# testdata/programs/fib-flat.rb runs Object#fib(22) (calls and returns all the time: its stack
# moves under the sampler's reads) then Object#flat (a loop without calls: its stack stands
# still), about half the time each.  ROUNDS times (default 5), alternating, it is recorded
# SECONDS (default 3) at 1 kHz as it runs and at 300 Hz with --pause (every stack read whole:
# the reference).  Shares are of samples (every weight 1), pooled over the rounds:
#   fib        samples with Object#fib in their stack, unpaused: the sampler as it is (a stack
#              that kept moving keeps its outer part under a "(moving)" leaf);
#   dropped    the same samples less those kept in part: what a sampler that drops every torn
#              stack gives (the bias issue #18 measured: -0.4 to -4.2 points);
#   paused     the --pause reference;
# with the differences in points against paused, the ratio to it, and two standard errors
# of the difference (binomial), so a difference inside them is noise.  Goal: |fib - paused|
# <= 1 point.  Run by hand on a quiet machine; not a test.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-5}
secs=${2:-3}
. "$here/bench/common.sh"

echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $rounds rounds of $secs s"
printf '%-12s %8s %8s %8s %9s %9s %8s %7s %8s %8s\n' ruby samples "kept in" fib dropped paused \
	fib-p drop-p "fib/p" "2 se"
printf '%-12s %8s %8s %8s %9s %9s %8s %7s %8s %8s\n' "" "" part % % % points points "" points
while read -r kind ver root cmd; do
	ruby_start "$kind" "$root" "$cmd" fib-flat.rb >/dev/null || continue
	sleep 0.5
	for i in $(seq "$rounds"); do
		"$RBINSPECT" record -p "$RB_PID" --duration "$secs" --rate 1000 --format raw \
			-o "$RB_TMP/run.$i.rbiprof" -q
		"$RBINSPECT" record -p "$RB_PID" --duration "$secs" --rate 300 --pause --format raw \
			-o "$RB_TMP/paused.$i.rbiprof" -q
	done
	kill -9 "$RB_PID"
	python3 "$here/bench/torn-share.py" "$kind $ver" "$RB_TMP" "$rounds"
done < <(rubies_list)
