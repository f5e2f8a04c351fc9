#!/usr/bin/env bash
# bench/soak.sh [SECONDS] [RUNS]: the live checks the tests make a few times, made many times,
# on each test Ruby (RBI_TEST_RUBIES narrows them, as for the tests), so that a check that
# fails once in ten thousand samples fails here and not in CI.  Each check is the tests' own:
#   native   record --native SECONDS at 500 Hz of squeeze.rb, tests/native-profile-check.py
#            (record-native.sh records 2 s at the default rate);
#   fibers   record --fibers SECONDS at 500 Hz of fiber-spin.rb, tests/fiber-profile-check.py,
#            and `fibers --json` RUNS times, each to exit 0 (record-fibers.sh: 2 s, once);
#   churn    `bt --json` RUNS times of thread-churn.rb, churn.rb, compact.rb and recurse.rb,
#            tests/churn-check.py: no impossible stack, none cut (bt.sh: 15 each).
# Defaults: 20 s, 300 runs (about 30 minutes for the eight main Rubies).  Session 13 found
# five such failures this way (its note on the issues lists them): samples of the VM's call
# into a C function, a caller read after its callee returned, 2.7's line-0 nops, a C frame
# read half written, and Ruby 2.7 crashing on its own under GC.compact.  Prints a line per
# Ruby and check, "ok" or "FAIL" with what the check said; exits 1 on any FAIL.  Run by
# hand; not a test.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-20}
runs=${2:-300}
. "$here/bench/common.sh"

soak_native() {
	local j=$RB_TMP/soak-native out
	"$RBINSPECT" record -q -p "$RB_PID" --native --rate 500 -d "$secs" -f folded \
		-o "$j.folded" --raw "$j.raw" 2>/dev/null
	out=$(python3 "$here/tests/native-profile-check.py" "$j.raw" "$RB_TRUTH" 2>&1)
	verdict "$name native" "$?" "$(tail -n 3 <<<"$out" | tr '\n' ' ')"
}

soak_fibers() {
	local j=$RB_TMP/soak-fibers out err='' bad=0
	"$RBINSPECT" --json -p "$RB_PID" fibers >"$j.json" 2>/dev/null
	"$RBINSPECT" record -q -p "$RB_PID" --fibers --rate 500 -d "$secs" -f folded \
		-o "$j.folded" --raw "$j.raw" 2>/dev/null
	out=$(python3 "$here/tests/fiber-profile-check.py" "$j.raw" "$RB_TRUTH" "$j.json" 2>&1)
	verdict "$name record --fibers" "$?" "$(tail -n 3 <<<"$out" | tr '\n' ' ')"
	for _ in $(seq "$runs"); do
		"$RBINSPECT" --json -p "$RB_PID" fibers >/dev/null 2>"$j.err" ||
			{ bad=$((bad + 1)); err=$(head -c 300 "$j.err"); }
	done
	verdict "$name fibers --json" "$bad" "$bad of $runs runs failed${err:+: $err}"
}

soak_churn() {
	local prog=$1 j=$RB_TMP/soak-churn out
	: >"$j.json"
	for _ in $(seq "$runs"); do
		"$RBINSPECT" --json -p "$RB_PID" bt >>"$j.json" 2>/dev/null
	done
	# A target that died (Ruby's own [BUG]) is a failure too: its output says why.
	kill -0 "$RB_PID" 2>/dev/null ||
		verdict "$name $prog" 1 "the target died: $(grep -h -m1 BUG "$RB_TMP"/"$prog".*.out)"
	out=$(python3 "$here/tests/churn-check.py" "$prog" "$j.json" 2>&1)
	verdict "$name bt of $prog.rb" "$?" "$(tail -n 3 <<<"$out" | tr '\n' ' ' | cut -c1-400)"
}

while read -r kind ver root cmd; do
	name="$kind $ver"
	if ruby_start "$kind" "$root" "$cmd" squeeze.rb; then
		soak_native; kill -9 "$RB_PID"
	fi
	if ruby_start "$kind" "$root" "$cmd" fiber-spin.rb; then
		soak_fibers; kill -9 "$RB_PID"
	fi
	for prog in thread-churn churn compact recurse; do
		if [ "$prog" = churn ]; then export KEEP=20000; else unset KEEP; fi
		if ruby_start "$kind" "$root" "$cmd" "$prog.rb"; then
			soak_churn "$prog"; kill -9 "$RB_PID" 2>/dev/null
		fi
	done
done < <(rubies_list)
exit "$failed"
