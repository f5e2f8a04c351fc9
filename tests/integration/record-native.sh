# record-native.sh: `record --native` on every test Ruby: profiles whose stacks are native
# frames merged with Ruby frames.  testdata/programs/squeeze.rb keeps one thread compressing
# (Zlib::Deflate.deflate: the zlib extension's C function, then zlib's own code, without
# the GVL) and writes its own stack at that call (caller_locations).
#   - tests/native-profile-check.py on the raw profile: every kept stack counted as merged
#     or Ruby-only; each merged stack starts in native code, has native frames where a C
#     method calls back into Ruby, and inside deflate its Ruby frames are the target's own
#     with the extension's C function right after deflate and zlib's code further in;
#   - the summary and `report` say how the stacks were read and how long threads were held;
#   - the process runs on untraced afterwards;
#   - without --native, the thread running C code without the GVL is sampled as running
#     (Ruby marks it stopped, as if asleep);
#   - in a pid namespace (as in a container) the threads are held by our tids for them;
#   - --native with --pause, and a process a debugger holds: one line, exit 2 and 4.
set -u
. "$(dirname "$0")/../tap.sh"
. "$(dirname "$0")/../rubies.sh"
check_py=$here/tests/native-profile-check.py
first=1 ns_done=0

# record_checks NAME: record RB_PID --native and check the profile against RB_TRUTH.
record_checks() {
	local name=$1 j=$RB_TMP/rn out
	"$RBINSPECT" record -p "$RB_PID" --native -d 2 -f folded -o "$j.folded" --raw "$j.raw" \
		2>"$j.err"
	is "$?" 0 "$name: record --native exits 0"
	if out=$(python3 "$check_py" "$j.raw" "$RB_TRUTH" 2>&1); then
		ok "$name: merged stacks hold the target's Ruby frames and the native ones around them ($(tail -n 1 <<<"$out"))"
	else
		not_ok "$name: merged stacks hold the target's Ruby frames and the native ones around them"
		diag "$out"
	fi
	like "$(cat "$j.err")" 'native: [1-9][0-9]* stacks with native frames, [0-9]+ with Ruby frames only; threads held [0-9.]+ ms a stack' \
		"$name: the summary says how the stacks were read"
	like "$("$RBINSPECT" report "$j.raw" -o "$j.svg" 2>&1)" '^native: [1-9][0-9]* stacks with native frames' \
		"$name: report says it too"
	is "$(awk '/^TracerPid:/ { print $2 }' "/proc/$RB_PID/status") $(task_states "$RB_PID" | tr -d 'S ')" "0 R" \
		"$name: the process runs on, untraced"
}

while read -r kind ver root cmd; do
	name="$kind $ver"
	if ! ruby_start "$kind" "$root" "$cmd" squeeze.rb; then
		not_ok "$name: squeeze.rb did not start"; continue
	fi
	record_checks "$name"
	j=$RB_TMP/rn
	"$RBINSPECT" record -p "$RB_PID" -d 1 -f folded -o "$j.plain" 2>/dev/null
	like "$(cat "$j.plain")" 'Zlib::Deflate\.deflate [0-9]+' \
		"$name: without --native, the thread in C code without the GVL is sampled as running"
	if [ "$first" = 1 ]; then
		first=0
		"$RBINSPECT" record -p "$RB_PID" --native --pause -d 1 -o "$j.x" 2>"$j.err"
		is "$? $(grep -c . "$j.err")" "2 1" "$name: --native with --pause: one line, exit 2"
		timeout 120 gdb -nx -batch -p "$RB_PID" -ex "shell '$RBINSPECT' record -p $RB_PID \
			--native -d 1 -o '$j.x' >/dev/null 2>'$j.held.err'; echo \$? >'$j.held.rc'" \
			>/dev/null 2>&1 </dev/null
		if [ "$(cat "$j.held.rc")" = 11 ] && [ "$(grep -vc '^rbinspect: recording' "$j.held.err")" = 1 ] &&
			grep -q 'traced already' "$j.held.err"; then
			ok "$name: a process a debugger holds: one line, exit 11 (busy)"
		else
			not_ok "$name: a process a debugger holds: one line, exit 11 (busy)"
			diag "exit $(cat "$j.held.rc"): $(cat "$j.held.err")"
		fi
	fi
	kill -9 "$RB_PID" 2>/dev/null
	# More threads than one tick's first slots (8), every one sampled (--idle): the slots
	# of a tick stay where they are while it reads more (under ASan a use after free
	# before); each thread is held a few milliseconds at most, not "92736 ms".
	if ruby_start "$kind" "$root" "$cmd" bench-threads.rb; then
		"$RBINSPECT" record -p "$RB_PID" --native --idle -d 1 -f folded -o "$j.idle" 2>"$j.err"
		rc=$?
		held=$(sed -n 's/.*threads held \([0-9.]*\) ms a stack.*/\1/p' "$j.err")
		ticks=$(sed -n 's/^samples: \([0-9]*\) in.*/\1/p' "$j.err")
		stacks=$(sed -n 's/^native: \([0-9]*\) stacks with native frames.*/\1/p' "$j.err")
		if [ "$rc" = 0 ] && [ "${stacks:-0}" -ge $(( ${ticks:-1} * 10 )) ] &&
		   grep -q 'descend' "$j.idle" &&
		   awk -v h="${held:-x}" 'BEGIN { exit !(h + 0 == h && h < 1000) }'; then
			ok "$name: record --native --idle of 11 threads: $stacks stacks in $ticks ticks, held $held ms a stack"
		else
			not_ok "$name: record --native --idle of 11 threads (exit $rc, held ${held:-?} ms)"
			diag "$(tail -n 5 "$j.err")"
		fi
		kill -9 "$RB_PID" 2>/dev/null
	else
		not_ok "$name: bench-threads.rb did not start"
	fi
	if [ "$kind" = deb ] && [ "$ns_done" = 0 ]; then
		ns_done=1
		if why=$(no_ns); then
			skip "$name in a pid namespace: $why"
		elif ruby_start "$kind" "$root" "$cmd" squeeze.rb ns; then
			record_checks "$name in a pid namespace"
			kill -9 "$RB_PID" 2>/dev/null
		else
			not_ok "$name: squeeze.rb did not start in a pid namespace"
		fi
	fi
done < <(rubies_list)
tap_done
