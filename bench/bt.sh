#!/usr/bin/env bash
# bench/bt.sh [RUNS]: wall time of `rbinspect -p PID bt` (all 11 threads,
# 10 of them 50 frames deep) against gdb asking the target for its own
# backtrace (`call (void)rb_backtrace()`: the main thread only, and it
# stops the target), on each test Ruby.  Prints milliseconds per run and
# the ratio measured in the same run.  Run by hand; not a test.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-20}
rbinspect=${RBINSPECT:-$here/build/repl/rbinspect}

# ms_per_run CMD...: mean wall milliseconds over $runs runs.
ms_per_run() {
	local start end
	start=$(date +%s%N)
	for _ in $(seq "$runs"); do "$@" >/dev/null 2>&1; done
	end=$(date +%s%N)
	echo "scale=2; ($end - $start) / 1000000 / $runs" | bc
}

printf '%-14s %12s %12s %8s\n' ruby "rbinspect ms" "gdb ms" "gdb/ours"
while read -r kind ver root cmd; do
	out=$(mktemp)
	if [ "$kind" = deb ]; then
		cp "$here/testdata/programs/bench-threads.rb" "$root/tmp/"
		chroot "$root" /usr/bin/ruby /tmp/bench-threads.rb >"$out" 2>/dev/null &
	else
		"$cmd" "$here/testdata/programs/bench-threads.rb" >"$out" 2>/dev/null &
	fi
	pid=$!
	until grep -q READY "$out"; do sleep 0.1; done
	ours=$(ms_per_run "$rbinspect" -p "$pid" bt)
	gdb=$(ms_per_run gdb -nx -q -batch -p "$pid" -ex 'call (void)rb_backtrace()')
	# Calling into the target can kill it (seen: a futex abort in a DWARF
	# build); a ratio measured on a dead process means nothing.
	if ! kill -0 "$pid" 2>/dev/null; then gdb="target died"; fi
	ratio=-
	case $gdb in [0-9]*) ratio=$(echo "scale=1; $gdb / $ours" | bc) ;; esac
	printf '%-14s %12s %12s %8s\n' "$kind-$ver" "$ours" "$gdb" "$ratio"
	kill "$pid"; wait "$pid" 2>/dev/null || true
	rm -f "$out"
done < <(bash "$here/tools/test-rubies.sh" --list)
