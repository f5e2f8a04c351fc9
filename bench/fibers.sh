#!/usr/bin/env bash
# bench/fibers.sh [RUNS] [FIBERS]: what finding every fiber costs, on each test Ruby.
# testdata/programs/fibers.rb parks FIBERS (default 10000) more fibers in Fiber.yield, then:
#   bt ms       `rbinspect -p PID bt`, the reference of the row (threads only);
#   fibers/bt   `rbinspect -p PID fibers --max-fibers 0` (a heap walk, one line per fiber
#               with its innermost frame) over it;
#   btf/bt      `rbinspect -p PID bt --fibers --max-fibers 0` (every frame of every fiber);
#   us/fiber    bt --fibers' time per fiber found.
# Milliseconds are means over RUNS runs (default 5).  Run by hand; not a test.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-5}
many=${2:-10000}
. "$here/bench/common.sh"

printf '%-12s %8s %7s %10s %8s %9s\n' ruby fibers "bt ms" fibers/bt btf/bt us/fiber
while read -r kind ver root cmd; do
	RBI_FIBERS_MANY=$many ruby_start "$kind" "$root" "$cmd" fibers.rb >/dev/null || continue
	found=$("$RBINSPECT" --json -p "$RB_PID" fibers --max-fibers 1 | jq .found)
	bt=$(ms_per_run "$RBINSPECT" -p "$RB_PID" bt)
	btf=$(ms_per_run "$RBINSPECT" -p "$RB_PID" bt --fibers --max-fibers 0)
	printf '%-12s %8d %7d %10s %8s %9s\n' "$kind $ver" "$found" "$bt" \
		"$(ratio "$(ms_per_run "$RBINSPECT" -p "$RB_PID" fibers --max-fibers 0)" "$bt")" \
		"$(ratio "$btf" "$bt")" "$(awk -v t="$btf" -v n="$found" 'BEGIN { printf "%.1f", t * 1000 / n }')"
	kill -9 "$RB_PID"
done < <(rubies_list)
