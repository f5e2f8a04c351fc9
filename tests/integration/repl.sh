# repl.sh: the interactive session driven through a real terminal (tmux
# send-keys / capture-pane) on two Ruby versions (the oldest and newest
# test Rubies): tab completion of commands, thread numbers and options, of p's locals,
# @ivars, $globals and constants,
# history kept across two runs, Ctrl-C at the prompt and during a long
# command, EOF, color on a terminal and NO_COLOR, and frame/locals on a
# live target and on a core.
set -u
. "$(dirname "$0")/../tap.sh"
. "$(dirname "$0")/../rubies.sh"
. "$(dirname "$0")/../tmux.sh"
tmux_start "the session needs a terminal"
export XDG_STATE_HOME=$RB_TMP/state

# start NAME ENV... -- ARGS...: rbinspect ARGS in a new 150x50 terminal; the
# pane stays after it exits and shows "EXITED:rc".
start() {
	local name=$1 envs=() q; shift
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	q=$(printf '%q ' env -u NO_COLOR "XDG_STATE_HOME=$XDG_STATE_HOME" "${envs[@]}" \
		"$RBINSPECT" "$@")
	tm new-session -d -s "$name" -x 150 -y 50 "$q; echo EXITED:\$?; sleep 600"
}
# screen NAME: everything the pane showed, history included, without the
# blank lines below the cursor.  screen_e: with color escapes.
screen() { tm capture-pane -p -t "$1" -S -100000 | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}'; }
screen_e() { tm capture-pane -e -p -t "$1" -S -100000; }
# wait_for NAME REGEX [TENTHS]: until a line of the pane matches.
wait_for() {
	for _ in $(seq 1 "${3:-100}"); do
		screen "$1" | grep -qE -- "$2" && return 0
		sleep 0.1
	done
	return 1
}
# wait_prompt NAME: until the last line is an empty prompt (capture-pane
# drops trailing blanks).
wait_prompt() {
	for _ in $(seq 1 "${2:-100}"); do
		[ "$(screen "$1" | tail -1)" = "(rbinspect)" ] && return 0
		sleep 0.1
	done
	return 1
}
last_line() { screen "$1" | tail -1; }
keys() { tm send-keys -t "$@"; }
# expect DESC NAME REGEX: ok when a pane line matches.
expect() {
	if wait_for "$2" "$3" "${4:-100}"; then ok "$1"; else not_ok "$1"; diag "$(screen "$2" | tail -15)"; fi
}

mapfile -t rubies < <(rubies_list)
picked=("${rubies[0]}")
[ "${#rubies[@]}" -gt 1 ] && picked+=("${rubies[${#rubies[@]}-1]}")

for line in "${picked[@]}"; do
	read -r kind ver root cmd <<<"$line"
	l="$kind $ver"
	rm -rf "$XDG_STATE_HOME"
	if ! ruby_start "$kind" "$root" "$cmd" simple.rb; then
		not_ok "$l: simple.rb did not start"; continue
	fi
	pid=$RB_PID truth=$RB_TRUTH
	s=live$RANDOM
	start "$s" -- -p "$pid"
	if ! wait_prompt "$s"; then
		not_ok "$l: the prompt appears"; diag "$(screen "$s")"; continue
	fi
	ok "$l: the prompt appears"

	# Completion from the command table.
	keys "$s" thr Tab
	expect "$l: Tab completes a command prefix" "$s" '^\(rbinspect\) thread$' 30
	keys "$s" Tab Tab
	expect "$l: Tab Tab lists the candidates" "$s" '^thread +threads$' 30
	keys "$s" C-u 'bt ' Tab Tab
	# Two lines of candidates, sorted down the columns, at the pane's width.
	expect "$l: bt completes options and thread numbers" "$s" '^--fibers +--locals +--max-frames +--native +2 +all$' 30
	expect "$l: bt completes options and thread numbers (second line)" "$s" '^--json +--max-fibers +--max-value-bytes +1 +3$' 30
	keys "$s" C-u 'set c' Tab
	expect "$l: set completes its keys" "$s" '^\(rbinspect\) set color$' 30
	keys "$s" Tab Tab
	expect "$l: set color completes its values" "$s" '^auto +off +on$' 30
	keys "$s" C-u 'thread ' Tab Tab
	expect "$l: thread completes thread numbers" "$s" '^1 +2 +3$' 30

	# frame/locals, live, with completion of "frame".
	keys "$s" C-u fr Tab 3 Enter
	expect "$l live: frame 3 through completion" "$s" '^#3  .*inner \(method\)$'
	expect "$l live: locals with values" "$s" '^    small = 42$'
	expect "$l live: a String, escaped" "$s" '^    esc = "tab\\tnl\\n\\e\[31mredé\\"q\\\\\\u\{202e\}"$'
	# p completes the selected frame's locals (frame 3: inner's).
	keys "$s" 'p sm' Tab
	expect "$l: p completes a local of the selected frame" "$s" '^\(rbinspect\) p small$' 30
	keys "$s" Enter
	expect "$l: p small" "$s" '^42$'
	wait_prompt "$s"
	# ... and self's @ivars, the $globals and the constants its code reads.
	keys "$s" 'p @top_f' Tab
	expect "$l: p completes an instance variable of self" "$s" '^\(rbinspect\) p @top_float$' 30
	keys "$s" C-u 'p $stdo' Tab
	expect "$l: p completes a global variable" "$s" '^\(rbinspect\) p \$stdout$' 30
	keys "$s" C-u 'p Thin' Tab
	expect "$l: p completes a constant" "$s" '^\(rbinspect\) p Thing$' 30
	keys "$s" C-u
	keys "$s" 'frame 1' Enter
	expect "$l live: a block's own and enclosing locals" "$s" '^  locals of the enclosing scope:$'
	wait_prompt "$s"
	if screen_e "$s" | grep -q $'\e\\[1m#1'; then
		ok "$l: color on a terminal"
	else
		not_ok "$l: color on a terminal"; diag "$(screen_e "$s" | grep -a '#1' | cat -v)"
	fi

	# Ctrl-C at the prompt drops the line; the session goes on.
	keys "$s" 'not a command' C-c
	sleep 0.3
	keys "$s" info Enter
	expect "$l: Ctrl-C at the prompt, then info runs" "$s" '^state +running$'
	if screen "$s" | grep -q 'unknown command'; then
		not_ok "$l: the dropped line never ran"
	else
		ok "$l: the dropped line never ran"
	fi
	keys "$s" quit Enter
	expect "$l: quit exits 0" "$s" '^EXITED:0$'
	if grep -qx 'frame 3' "$XDG_STATE_HOME/rbinspect/history" 2>/dev/null; then
		ok "$l: history saved in \$XDG_STATE_HOME/rbinspect/history"
	else
		not_ok "$l: history saved in \$XDG_STATE_HOME/rbinspect/history"
		diag "$(ls -la "$XDG_STATE_HOME/rbinspect" 2>&1)"
	fi

	# History across runs: Up recalls the last session's lines.
	s2=again$RANDOM
	start "$s2" -- -p "$pid"
	wait_prompt "$s2"
	keys "$s2" Up Up
	expect "$l: Up Up recalls the previous run's \"info\"" "$s2" '^\(rbinspect\) info$' 30
	keys "$s2" Up
	sleep 0.2
	keys "$s2" Enter
	expect "$l: the recalled \"frame 1\" runs" "$s2" '^#1  .*block in'
	wait_prompt "$s2"
	keys "$s2" C-d
	expect "$l: EOF (Ctrl-D) exits 0" "$s2" '^EXITED:0$'

	# NO_COLOR on a terminal.
	s3=nocolor$RANDOM
	start "$s3" NO_COLOR=1 -- -p "$pid" -ex 'frame 3'
	wait_for "$s3" '^EXITED:' 100
	if screen_e "$s3" | grep -a '#3' | grep -q $'\e\\['; then
		not_ok "$l: NO_COLOR: no color"; diag "$(screen_e "$s3" | grep -a '#3' | cat -v)"
	else
		ok "$l: NO_COLOR: no color"
	fi

	# A core: frame/locals the same.
	core=$(core_of "$pid")
	kill -9 "$pid"
	s4=core$RANDOM
	start "$s4" -- "$core"
	wait_prompt "$s4" 300
	keys "$s4" 'frame 1' Enter
	expect "$l core: frame 1 locals" "$s4" '^    blk = "in block"$' 300
	expect "$l core: enclosing scope's locals" "$s4" '^    count = 3$'
	keys "$s4" info Enter
	expect "$l core: info says core" "$s4" '^state +core$'
	keys "$s4" quit Enter
	wait_for "$s4" '^EXITED:' 50
	rm -f "$core"

	# Ctrl-C during a long command: a 100,000-frame backtrace whose output
	# the terminal holds (Ctrl-S), then Ctrl-C (which also lets output go).
	if DEPTH=100000 RUBY_THREAD_VM_STACK_SIZE=16777216 \
			ruby_start "$kind" "$root" "$cmd" threads.rb; then
		s5=intr$RANDOM
		start "$s5" -- -p "$RB_PID"
		wait_prompt "$s5" 300
		got=0
		for attempt in 1 2 3; do
			keys "$s5" bt Enter
			sleep 0.05
			keys "$s5" C-s
			sleep 0.5
			keys "$s5" C-c
			if wait_for "$s5" '^rbinspect: bt: interrupted$' 300; then got=1; break; fi
			diag "attempt $attempt: $(screen "$s5" | tail -3)"
			keys "$s5" C-g C-c        # it finished first: leave search mode, retry
			wait_prompt "$s5" 300
		done
		if [ "$got" = 1 ]; then ok "$l: Ctrl-C interrupts bt"; else not_ok "$l: Ctrl-C interrupts bt"; fi
		if wait_prompt "$s5" 300; then ok "$l: the prompt is back after Ctrl-C"
		else not_ok "$l: the prompt is back after Ctrl-C"; diag "$(screen "$s5" | tail -5)"; fi
		n=$(screen "$s5" | grep -c ":in 'Foo.recurse'")
		check "$l: the interrupted bt stopped early ($n of 100,000 deep frames)" test "$n" -lt 100000
		keys "$s5" threads Enter
		expect "$l: the session goes on after Ctrl-C" "$s5" '^ +[0-9]+ +0x[0-9a-f]+ .*deep$' 300
		keys "$s5" quit Enter
		expect "$l: exit after an interrupted command" "$s5" '^EXITED:0$'
		kill -9 "$RB_PID"
	else
		not_ok "$l: threads.rb (deep) did not start"
	fi
done

# Without readline (loaded only when a session starts on a terminal; here hidden by an empty
# file bind-mounted over it in a mount namespace of its own): one line says so, then the
# session reads plain lines.
lib=$(ldconfig -p | awk '/libreadline\.so\.8 .*x86-64/ { print $NF; exit }')
read -r kind ver root cmd <<<"${rubies[0]}"
if [ -z "$lib" ] || [ "$(id -u)" != 0 ] || ! unshare -m true 2>/dev/null; then
	skip "needs root, unshare and libreadline.so.8" "a session without readline"
elif ruby_start "$kind" "$root" "$cmd" simple.rb; then
	s=nolib$RANDOM
	q=$(printf '%q ' env -u NO_COLOR unshare -m sh -c 'mount --bind /dev/null "$1" && shift && exec "$@"' \
		sh "$lib" "$RBINSPECT" -p "$RB_PID")
	tm new-session -d -s "$s" -x 150 -y 50 "$q; echo EXITED:\$?; sleep 600"
	expect "$kind $ver without readline: one line says so" "$s" \
		'^rbinspect: no line editing: .*libreadline\.so\.8'
	keys "$s" info Enter
	expect "$kind $ver without readline: commands still run" "$s" "^ruby +$ver\$"
	keys "$s" quit Enter
	expect "$kind $ver without readline: quit" "$s" '^EXITED:0$'
	kill -9 "$RB_PID"
else
	not_ok "$kind $ver: simple.rb did not start"
fi
tap_done
