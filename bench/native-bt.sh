#!/usr/bin/env bash
# bench/native-bt.sh [RUNS]: what native frames cost, on each test Ruby.  crash.rb (seven
# threads, see tests/integration/native.sh) is read live, then crashed as the kernel dumps
# it (root, see tests/crashes.sh), and its core timed:
#   bt ms      `rbinspect CORE bt`, the reference of the row;
#   native/bt  `rbinspect CORE bt --native` over it;
#   gdb/bt     gdb's `thread apply all bt` on the same core (native frames only) over it;
#   stop us    live: median time a thread is held stopped while `bt --native` reads its two
#              stacks (stopped_ns of every thread of RUNS runs), and the largest.
# Milliseconds are means over RUNS runs (default 10).  RBI_CRASH_BALLAST_MB=1024 makes each
# core about 1 GiB bigger (strings filled before crash.rb parks).  Run by hand; not a test.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-10}
. "$here/bench/crash-common.sh"

printf '%-12s %6s %8s %9s %8s %10s %10s\n' ruby MB "bt ms" native/bt gdb/bt "stop us" "max us"
while read -r kind ver root cmd; do
	opts=() exe=$cmd gdbopts=()
	[ "$kind" = deb ] && opts=(--sysroot "$root") exe=$root/usr/bin/ruby gdbopts=(-iex "set sysroot $root")
	crash_start "$kind" "$root" "$cmd" >/dev/null || continue
	wait_parked "$RB_PID" || true
	stops=$(for _ in $(seq "$runs"); do
		"$RBINSPECT" --json -p "$RB_PID" bt --native | jq '.threads[].stopped_ns'
	done | sort -n)
	median=$(awk '{ v[NR] = $1 } END { printf "%d", v[int((NR + 1) / 2)] / 1000 }' <<<"$stops")
	max=$(tail -n 1 <<<"$stops")
	crash_segv
	wait_dead "$RB_PID" || continue
	core=$(crash_core) || continue
	bt=$(ms_per_run "$RBINSPECT" "${opts[@]}" "$core" bt)
	printf '%-12s %6d %8d %9s %8s %10d %10d\n' "$kind $ver" "$(( $(du -k "$core" | cut -f1) / 1024 ))" "$bt" \
		"$(ratio "$(ms_per_run "$RBINSPECT" "${opts[@]}" "$core" bt --native)" "$bt")" \
		"$(ratio "$(ms_per_run gdb -nx -batch "${gdbopts[@]}" -ex 'thread apply all bt' "$exe" "$core")" "$bt")" \
		"$median" "$((max / 1000))"
	rm -f "$core"
done < <(rubies_list)
