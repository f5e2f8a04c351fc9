# gone.sh: a target that exits in the middle of a long command (issue #22).
#
# The process is killed while `objects --by-class`, `heap-dump` and `bt` read it: at a chosen
# call into the library (rbinspect under gdb), and at moments spread over the run (rbinspect
# stopped with SIGSTOP, the target killed and reaped, rbinspect let go on).
# Whatever the moment, the command either finished before (exit 0, and its output true: String
# named String) or says the process exited, with exit status 9 (EXIT STATUS in rbinspect(1)),
# or (killed before rbinspect found it) "no such process", exit status 3;
# never exit 0 with classes it could no longer name printed as anonymous, nor frames without
# their labels. The delays spread over the command's own run time, measured first, so some
# stops land in the walk, some while classes are named.
set -u
. "$(dirname "$0")/../tap.sh"
. "$(dirname "$0")/../rubies.sh"

TRIALS=${RBI_GONE_TRIALS:-3}

# run_killed KIND ROOT CMD FRACTION COMMAND...: start objects.rb (SCALE times its heap), run rbinspect
# COMMAND on it, stop rbinspect after FRACTION (0-1) of $DUR_MS, kill the target, let
# rbinspect go on. Sets RC, OUT, ERR, STOPPED (1: rbinspect was still running at the kill).
run_killed() {
	local kind=$1 root=$2 cmd=$3 frac=$4 rbi ms
	shift 4
	if ! SCALE=$SCALE ruby_start "$kind" "$root" "$cmd" objects.rb; then
		RC=start; return
	fi
	wait_parked "$RB_PID" >/dev/null 2>&1
	ms=$(awk -v d="$DUR_MS" -v f="$frac" 'BEGIN { printf "%.3f", d * f / 1000 }')
	"$RBINSPECT" -p "$RB_PID" "$@" >"$RB_TMP/out" 2>"$RB_TMP/err" &
	rbi=$!
	sleep "$ms"
	STOPPED=0
	kill -STOP "$rbi" 2>/dev/null && STOPPED=1
	kill -9 "$RB_PID"
	for _ in $(seq 1 100); do [ -e "/proc/$RB_PID" ] || break; sleep 0.02; done
	kill -CONT "$rbi" 2>/dev/null
	wait "$rbi"; RC=$?
	OUT=$(cat "$RB_TMP/out"); ERR=$(cat "$RB_TMP/err")
}

# duration KIND ROOT CMD COMMAND...: the command's run time on a live objects.rb, in ms: the
# shorter of two runs (a first run that reads cold files, on a busy machine, can take several
# times as long, and the kills spread over it would then all come after the end).
duration() {
	local kind=$1 root=$2 cmd=$3 t0 ms
	shift 3
	SCALE=$SCALE ruby_start "$kind" "$root" "$cmd" objects.rb || return 1
	wait_parked "$RB_PID" >/dev/null 2>&1
	DUR_MS=
	for _ in 1 2; do
		t0=$(date +%s%N)
		"$RBINSPECT" -p "$RB_PID" "$@" >/dev/null 2>&1
		ms=$(( ($(date +%s%N) - t0) / 1000000 + 1 ))
		[ -z "$DUR_MS" ] || [ "$ms" -lt "$DUR_MS" ] && DUR_MS=$ms
	done
	kill -9 "$RB_PID"
}

# trials LABEL GOOD_REGEX COMMAND...: TRIALS runs killed at spread moments.
trials() {
	local label=$1 good=$2 bad=0 gone=0 done_=0 early=0 i
	shift 2
	duration "$kind" "$root" "$cmd" "$@" || { not_ok "$kind $ver $label: objects.rb did not start"; return; }
	for i in $(seq 1 "$TRIALS"); do
		run_killed "$kind" "$root" "$cmd" "$(awk -v i="$i" -v n="$TRIALS" 'BEGIN { print i / n * 1.2 }')" "$@"
		if [ "$RC" = 9 ] && grep -q 'has exited' <<<"$ERR"; then
			gone=$((gone + 1))
		elif [ "$RC" = 3 ] && grep -q 'no such process' <<<"$ERR"; then
			early=$((early + 1))     # gone before rbinspect found it
		elif [ "$RC" = 0 ] && grep -Eq -- "$good" <<<"$OUT"; then
			done_=$((done_ + 1))
		else
			bad=$((bad + 1))
			diag "$label, trial $i (stopped: $STOPPED): exit $RC; $(head -c 300 <<<"$ERR")"
			diag "$(head -5 <<<"$OUT")"
		fi
	done
	if [ "$bad" = 0 ] && [ "$gone" -gt 0 ]; then
		ok "$kind $ver $label: killed at $TRIALS moments of its ${DUR_MS} ms: $gone exit 9 (process exited), $done_ finished before, $early gone before it opened (exit 3), none exit 0 with a false output"
	else
		not_ok "$kind $ver $label: killed mid-run, exit 9 or a true output ($gone gone, $done_ finished, $bad neither)"
	fi
}

# at_break KIND ROOT CMD FUNCTION COMMAND...: run rbinspect COMMAND under gdb on objects.rb,
# kill the target at the first call of FUNCTION (the library's, once the command is under
# way), and let rbinspect go on. Sets RC, OUT, ERR.
at_break() {
	local kind=$1 root=$2 cmd=$3 fn=$4 g
	shift 4
	RC=start
	SCALE=1 ruby_start "$kind" "$root" "$cmd" objects.rb || return
	wait_parked "$RB_PID" >/dev/null 2>&1
	# LeakSanitizer cannot run under ptrace: an ASan build checks leaks in the trials.
	g=$(gdb -q -nx -batch -ex 'set breakpoint pending on' -ex "break $fn" \
		-ex "set environment ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		-ex "run -p $RB_PID $* >$RB_TMP/out 2>$RB_TMP/err" \
		-ex "shell kill -9 $RB_PID; sleep 0.3" -ex delete -ex continue \
		-ex 'print $_exitcode' --args "$RBINSPECT" 2>&1)
	RC=$(sed -n 's/^\$1 = \([0-9]*\)$/\1/p' <<<"$g")
	OUT=$(cat "$RB_TMP/out"); ERR=$(cat "$RB_TMP/err")
	# "Breakpoint 1.2, ": gdb numbers the stop by location when the function has more than
	# one (an -O2 build's rbi_class_name_cut has two: its entry and the code after the
	# argument check, which the optimiser moved); an ASan build's has one.
	grep -Eq 'Breakpoint 1(\.[0-9]+)?, ' <<<"$g" || RC="no stop at $fn"
}

# killed_at LABEL FUNCTION COMMAND...: the target killed at FUNCTION: exit 9, one line.
killed_at() {
	local label=$1 fn=$2
	shift 2
	at_break "$kind" "$root" "$cmd" "$fn" "$@"
	if [ "$RC" = 9 ] && [ "$(wc -l <<<"$ERR")" = 1 ] && grep -q 'has exited' <<<"$ERR" &&
		! grep -q '#<Class:' <<<"$OUT"; then
		ok "$kind $ver $label: killed at $fn: exit 9, \"$ERR\""
	else
		not_ok "$kind $ver $label: killed at $fn: exit 9 and one line"
		diag "exit $RC; $ERR"; diag "$(head -5 <<<"$OUT")"
	fi
}

while read -r kind ver root cmd; do
	# Deterministic: between the walk and the naming of its classes (the bug of #22: exit 0
	# and every class "#<Class:0x...>"), in the middle of a dump, before a backtrace.
	killed_at "objects --by-class" rbi_class_name_cut objects --by-class
	killed_at "heap-dump" rbi_class_name_cut heap-dump
	killed_at "bt" rbi_frame_foreach bt
	SCALE=20 trials "objects --by-class --top 0" $' String$' objects --by-class --top 0
	SCALE=4 trials "heap-dump" '"type":"STRING"' heap-dump
done < <(rubies_list)
tap_done
