#!/usr/bin/env bash
# bench/heap-hostile.sh: `rbinspect heap-dump --pause --strings` of testdata/programs/hostile.rb
# at sizes too large for the tests (tests/integration/heap-hostile.sh runs 600000 objects):
# time, maximum RSS and the same checks (tests/hostile-check.py).
#
# usage: bench/heap-hostile.sh [OBJECTS...]   (env: RBINSPECT, RUBIES="deb 3.4.11 ...")
#   For each OBJECTS (default: 10000000) and test Ruby (RUBIES filters by "KIND VERSION"
#   prefixes): starts hostile.rb with that many objects, dumps it once under
#   /usr/bin/time -v, checks the file.  Prints per Ruby and size: lines written, wall
#   seconds, rbinspect's maximum RSS MB (goal: flat, <= 50) and the check's verdict.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/bench/common.sh"
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(10000000)
export RBI_READY_SECONDS=600

printf '%-16s %9s %10s %8s %7s  %s\n' RUBY objects lines "wall s" "RSS MB" check
while read -r kind ver root cmd; do
	ruby_wanted "$kind" "$ver" || continue
	for n in "${sizes[@]}"; do
		if ! RBI_HEAP_OBJECTS=$n ruby_start "$kind" "$root" "$cmd" hostile.rb; then
			echo "$kind $ver: hostile.rb did not start" >&2; continue
		fi
		wait_parked "$RB_PID"
		/usr/bin/time -v -o "$RB_TMP/time.txt" "$RBINSPECT" -p "$RB_PID" heap-dump --pause \
			--strings -o "$RB_TMP/dump.json.gz" 2>"$RB_TMP/err" || cat "$RB_TMP/err" >&2
		rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$RB_TMP/time.txt")
		wall=$(awk -F': ' '/Elapsed \(wall clock\)/ { print $2 }' "$RB_TMP/time.txt")
		check=$(python3 "$here/tests/hostile-check.py" "$RB_TRUTH" "$RB_TMP/dump.json.gz" "$n" 2>&1 |
			tail -n 1)
		lines=$(zcat "$RB_TMP/dump.json.gz" | wc -l)
		printf '%-16s %9d %10d %8s %7.1f  %s\n' "$kind $ver" "$n" "$lines" "$wall" \
			"$(awk -v m="$rss" 'BEGIN { print m / 1024 }')" "$check"
		rm -f "$RB_TMP/dump.json.gz"
		kill -9 "$RB_PID"
	done
done < <(rubies_list)
