#!/usr/bin/env bash
# bench/heap-dump.sh: `rbinspect heap-dump` against the target's own ObjectSpace.dump_all of
# the same heap, and rbinspect's memory as the heap grows.
#
# usage: bench/heap-dump.sh [OBJECTS...]   (env: RBINSPECT, RUBIES="deb 3.4.11 ...")
#   For each OBJECTS (default: 1000000 4000000), starts testdata/programs/heap.rb with that
#   many extra Strings on every test Ruby (RUBIES filters by "KIND VERSION" prefixes): the
#   program times its own dump_all to a file.  Then `rbinspect -p PID heap-dump --pause -o
#   FILE` runs three times (median wall time) and once under /usr/bin/time -v (maximum
#   RSS).  Prints per Ruby and size: lines written, the target's ms, rbinspect's ms, their
#   ratio (goal <= 1), rbinspect's RSS MB (goal: flat, <= 50).
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/bench/common.sh"
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1000000 4000000)
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

printf '%-16s %9s %10s %10s %10s %7s %7s\n' RUBY objects lines "target ms" "rbi ms" rbi/tgt "RSS MB"
while read -r kind ver root cmd; do
	ruby_wanted "$kind" "$ver" || continue
	for n in "${sizes[@]}"; do
		if ! RBI_HEAP_OBJECTS=$n ruby_start "$kind" "$root" "$cmd" heap.rb; then
			echo "$kind $ver: heap.rb did not start" >&2; continue
		fi
		tgt=$(grep -h '^DUMP_ALL_US' "$RB_TMP"/heap.*.out | tail -1 | awk '{ print $2 }')
		rm -f "$RB_TMP"/heap.*.out "$RB_TRUTH"
		times=()
		for _ in 1 2 3; do
			# A new file, as the target's: truncating the last run's
			# 270 MB would be timed too.
			rm -f "$RB_TMP/dump.json"
			t0=$EPOCHREALTIME
			"$RBINSPECT" -p "$RB_PID" heap-dump --pause -o "$RB_TMP/dump.json" 2>"$RB_TMP/err" ||
				cat "$RB_TMP/err" >&2
			t1=$EPOCHREALTIME
			times+=($(( ${t1/./} - ${t0/./} )))
		done
		/usr/bin/time -v -o "$RB_TMP/time.txt" "$RBINSPECT" -p "$RB_PID" heap-dump --pause \
			-o "$RB_TMP/dump.json" 2>/dev/null
		rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$RB_TMP/time.txt")
		lines=$(wc -l <"$RB_TMP/dump.json")
		rbi=$(printf '%s\n' "${times[@]}" | median)
		awk -v l="$kind $ver" -v n="$n" -v li="$lines" -v t="$tgt" -v r="$rbi" -v m="$rss" 'BEGIN {
			printf "%-16s %9d %10d %10.0f %10.0f %7.2f %7.1f\n", l, n, li, t / 1000, r / 1000,
				r / t, m / 1024 }'
		rm -f "$RB_TMP/dump.json"
		kill -9 "$RB_PID"
	done
done < <(rubies_list)
