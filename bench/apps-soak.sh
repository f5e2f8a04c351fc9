#!/usr/bin/env bash
# bench/apps-soak.sh [READS] [SECONDS]: the live reads of a real application's busy worker,
# made many times while it serves, on each stack tests/integration/apps.sh runs (bookworm's
# Rails 6.1 on Ruby 3.1, trixie's Rails 7.2 on Ruby 3.3: tests/apps.sh).  A puma worker of
# the Rails app (2 workers of 5 threads) is kept busy by ab (8 clients: the N+1 page and the
# one that computes) while:
#   bt        `bt --json` READS times (default 500): each exits 0 with every thread whole
#             (its outermost frame the thread's own: `<main>`, or the block the thread runs),
#             or says in one line and exit 11 that the stacks kept moving; a stack printed
#             cut, or any other exit, fails;
#   native    `bt --native` READS/5 times: each exits 0;
#   record    `record --native --idle` at 100 Hz for SECONDS (default 30), the load stopped
#             (every thread of the worker held and read at each tick: under load and ASan a
#             tick takes ~150 ms), exit 0 and no sanitizer report (run it with build-test's
#             rbinspect for ASan), its ticks and how long threads were held a stack.
# Prints a line per stack and check, "ok" or "FAIL" with the counts; exits 1 on any FAIL.
# Run by hand (about 7 minutes a stack with ASan); not a test.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
reads=${1:-500}
secs=${2:-30}
runs=1
. "$here/bench/common.sh"
. "$here/tests/apps.sh"
trap 'apps_stop; rubies_cleanup' EXIT

# whole JSON: every thread's outermost frame is its own (not a stack cut mid-way).
whole() {
	jq -e '.error == null and all(.threads[]; (.frames | length) == 0 or
		.frames[-1].label == "<main>" or .frames[-1].type == "block")' "$1" >/dev/null
}

soak_stack() {
	local w i rc good=0 busy=0 cut=0 other=0 nfail=0 out=$RB_TMP/bt.json load
	if ! puma_start rails puma.rb config.ru; then
		verdict "$stack" 1 "puma did not start: $(tail -n 3 "$dir/puma.log")"; return
	fi
	w=$(pgrep -P "$master" | sort -n | head -n 1)
	ab -q -t 100000 -n 100000000 -c 4 "http://127.0.0.1:$port/posts" >/dev/null 2>&1 &
	load="$!"
	ab -q -t 100000 -n 100000000 -c 4 "http://127.0.0.1:$port/work" >/dev/null 2>&1 &
	load="$load $!"
	sleep 2
	for i in $(seq "$reads"); do
		"$RBINSPECT" --json -p "$w" bt >"$out" 2>"$out.err"; rc=$?
		if [ "$rc" = 0 ] && [ ! -s "$out.err" ] && whole "$out"; then good=$((good + 1))
		elif [ "$rc" = 0 ]; then cut=$((cut + 1)); cp "$out" "$RB_TMP/cut.$i.json"
		elif [ "$rc" = 11 ]; then busy=$((busy + 1))
		else other=$((other + 1)); sed "s/^/  read $i exit $rc: /" "$out.err" | head -n 2
		fi
	done
	verdict "$stack worker bt" $((cut + other)) \
		"$reads reads under load: $good whole, $busy said busy (exit 11), $cut cut, $other failed"
	for i in $(seq $((reads / 5))); do
		"$RBINSPECT" -p "$w" bt --native >/dev/null 2>"$out.err" || {
			nfail=$((nfail + 1)); head -n 1 "$out.err"; }
	done
	verdict "$stack worker bt --native" "$nfail" "$((reads / 5)) reads under load, $nfail failed"
	kill $load 2>/dev/null
	"$RBINSPECT" record -p "$w" --native --idle --rate 100 -d "$secs" -f folded \
		-o "$RB_TMP/idle.folded" 2>"$RB_TMP/record.err"; rc=$?
	grep -q 'Sanitizer' "$RB_TMP/record.err" && rc=99
	verdict "$stack worker record --native --idle" "$rc" \
		"$(grep -E '^(samples|native): [0-9]' "$RB_TMP/record.err" | tr '\n' ' ')(exit $rc)"
	apps_stop
	masters=
}

stack_bookworm && soak_stack || echo "skip  bookworm: ${stack_why:-}"
stack_trixie && soak_stack || echo "skip  trixie: ${stack_why:-}"
exit "$failed"
