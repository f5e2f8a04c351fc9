#!/usr/bin/env bash
# bench/heap-graph.sh: what `heap top` and `heap retainers` cost on a big dump, against
# `heap diff` of the same file (which streams it three times and keeps only addresses).
#
# usage: bench/heap-graph.sh [OBJECTS...]   (env: RBINSPECT, RUBIES="deb 3.4.11 ...")
#   For each OBJECTS (default: 1000000), starts testdata/programs/heap.rb with that many
#   extra Strings (in Arrays of 1000) on every test Ruby (RUBIES filters by "KIND VERSION"
#   prefixes) and takes the target's own ObjectSpace.dump_all (every reference, ROOT
#   lines).  Prints per Ruby: the dump's lines and MB, heap diff's ms (median of 3), heap
#   top's and heap retainers' (of the last String) over it, and each one's maximum RSS in
#   MB and bytes per dump line.  Run by hand; not a test.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/bench/common.sh"
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1000000)
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# ms CMD...: median wall milliseconds of three runs.
ms() {
	local t0 t1 times=()
	for _ in 1 2 3; do
		t0=$EPOCHREALTIME
		"$@" >/dev/null 2>&1
		t1=$EPOCHREALTIME
		times+=($(( (${t1/./} - ${t0/./}) / 1000 )))
	done
	printf '%s\n' "${times[@]}" | median
}
# rss CMD...: maximum RSS in MB.
rss() {
	/usr/bin/time -v -o "$RB_TMP/time.txt" "$@" >/dev/null 2>&1
	awk -F': ' '/Maximum resident set size/ { printf "%.0f", $2 / 1024 }' "$RB_TMP/time.txt"
}

printf '%-16s %9s %6s %8s %7s %7s %9s %9s %9s\n' RUBY lines MB "diff ms" top/diff \
	ret/diff "diff RSS" "top RSS" "B/line"
while read -r kind ver root cmd; do
	ruby_wanted "$kind" "$ver" || continue
	for n in "${sizes[@]}"; do
		if ! RBI_HEAP_OBJECTS=$n ruby_start "$kind" "$root" "$cmd" heap.rb; then
			echo "$kind $ver: heap.rb did not start" >&2; continue
		fi
		kill -9 "$RB_PID"
		dump=$RB_TRUTH
		last=$(grep '"type":"STRING"' "$dump" | tail -n 1 | sed 's/.*"address":"\(0x[0-9a-f]*\)".*/\1/')
		diff=$(ms "$RBINSPECT" heap diff "$dump" "$dump")
		top=$(ms "$RBINSPECT" heap top "$dump")
		ret=$(ms "$RBINSPECT" heap retainers "$dump" "$last")
		lines=$(wc -l <"$dump")
		top_rss=$(rss "$RBINSPECT" heap top "$dump")
		awk -v l="$kind $ver" -v li="$lines" -v mb="$(( $(stat -c %s "$dump") >> 20 ))" \
			-v d="$diff" -v t="$top" -v r="$ret" -v dr="$(rss "$RBINSPECT" heap diff "$dump" "$dump")" \
			-v tr="$top_rss" 'BEGIN {
			printf "%-16s %9d %6d %8d %7.2f %7.2f %9d %9d %9.0f\n", l, li, mb, d, t / d, r / d,
				dr, tr, tr * 1048576 / li }'
		rm -f "$dump"
	done
done < <(rubies_list)
