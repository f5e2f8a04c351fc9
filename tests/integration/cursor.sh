# cursor.sh: the pull frame cursor (rbi_thread_frames_open,
# rbi_frame_cursor_next, rbi_frame_cursor_next_mixed) on every test Ruby,
# live and from a core, with and without native frames.  tests/cursor-check
# (a program linked to the shared library) walks every thread with the
# callbacks and with the cursor and compares them member by member and
# string by string (a live target is paused for it, so both read one
# stack); the main thread's frame count is the target's own backtrace's
# (testdata/programs/simple.rb's truth).
set -u
. "$(dirname "$0")/../tap.sh"
. "$(dirname "$0")/../rubies.sh"
checker=$RBI_BUILD/tests/cursor-check
[ -x "$checker" ] || { skip "no $checker (build the tests first)"; tap_done; exit 0; }

# run NAME WANT ARGS...: the checker on ARGS; every frame equal, and the
# main thread has WANT frames.
run() {
	local name=$1 want=$2 out rc
	shift 2
	out=$("$checker" "$@" 2>&1)
	rc=$?
	if [ "$rc" -eq 0 ]; then
		ok "$name: the cursor's frames are the callback's ($(grep -c '^thread' <<<"$out") threads)"
	else
		not_ok "$name: the cursor's frames are the callback's (exit $rc)"; diag "$out"
	fi
	is "$(awk '$1 == "thread" && $3 == "main" { print $4 }' <<<"$out")" "$want" \
		"$name: the main thread's frames through the cursor are the target's own count"
}

while read -r kind ver root cmd; do
	if ! ruby_start "$kind" "$root" "$cmd" simple.rb; then
		not_ok "$kind $ver: simple.rb did not start"; continue
	fi
	wait_parked "$RB_PID" || diag "$kind $ver: not every task sleeps"
	want=$(awk -F'\t' '$1 == "frame" && $2 == "main" { n++ } END { print n }' "$RB_TRUTH")
	run "$kind $ver live" "$want" "$RB_PID"
	run "$kind $ver live --native" "$want" --native "$RB_PID"
	if core=$(core_of "$RB_PID"); then
		run "$kind $ver core" "$want" "$core"
		run "$kind $ver core --native" "$want" --native "$core"
		rm -f "$core"
	else
		not_ok "$kind $ver: no core of simple.rb"
	fi
	kill -9 "$RB_PID"
done < <(rubies_list)
tap_done
