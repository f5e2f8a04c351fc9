# frame.sh: `rbinspect frame N` (label, path, line, self, local variables)
# on every test Ruby, live and from a core, against the locals the target
# wrote about itself (testdata/programs/simple.rb: "local" truth records of
# a block frame with an enclosing scope, a method with a value of every
# kind, and a method whose variables a Binding moved to the heap;
# tests/locals-check.py compares).  Also the session plumbing without a
# terminal: -ex, -x, commands piped on stdin (no prompt), `set`, exit
# codes, and a live target that exits during a session.
set -u
. "$(dirname "$0")/../tap.sh"
. "$(dirname "$0")/../rubies.sh"
check_py=$here/tests/locals-check.py

# locals LABEL TARGET...: frames 1, 3 and 4 of main against the truth.
locals() {
	local label=$1 i out; shift
	for i in 1 3 4; do
		"$RBINSPECT" --json "$@" frame "$i" >"$RB_TMP/frame$i.json" 2>"$RB_TMP/frame$i.err"
		if out=$(python3 "$check_py" "$RB_TRUTH" main "$i" "$RB_TMP/frame$i.json" 2>&1); then
			ok "$label: frame $i locals match the target's own ($(tail -1 <<<"$out"))"
		else
			not_ok "$label: frame $i locals match the target's own"
			diag "$out"; diag "$(cat "$RB_TMP/frame$i.err")"
		fi
	done
}

first=1
# nav LABEL TARGET...: thr 1, fr 2, up, down, down, info locals select and show frames
# 2 3 2 1 1, each with the label the target's own backtrace gives it; down from frame 0
# is an error.
nav() {
	local label=$1 want got
	shift
	want=$(for n in 2 3 2 1 1; do
		awk -F'\t' -v n="$n" '$1 == "frame" && $2 == "main" && $3 == n { print "#" n " " $7 }' \
			"$RB_TRUTH"
	done)
	# "#2  Array#each (C method, cfunc)" -> "#2 each", as the truth's base label.
	got=$("$RBINSPECT" "$@" -ex 'thr 1' -ex 'fr 2' -ex up -ex down -ex down -ex 'info locals' \
		2>/dev/null | grep '^#' | sed -E 's/ \([A-Za-z ,]*\)$//; s/^(#[0-9]+) .*[ #.]/\1 /')
	is "$got" "$want" "$label: thr 1, fr 2, up, down, down, info locals: frames 2 3 2 1 1"
	"$RBINSPECT" "$@" -ex 'fr 0' -ex down >/dev/null 2>"$RB_TMP/down.err"
	is "$? $(grep -c 'no frame further in' "$RB_TMP/down.err")" "2 1" "$label: down from frame 0: exit 2, says why"
}

while read -r kind ver root cmd; do
	if ! ruby_start "$kind" "$root" "$cmd" simple.rb; then
		not_ok "$kind $ver: simple.rb did not start"; continue
	fi
	wait_parked "$RB_PID" || diag "$kind $ver: not every task sleeps"
	locals "$kind $ver live" -p "$RB_PID"

	# Text: label, path:line, self, escaped values, a C frame.
	"$RBINSPECT" -p "$RB_PID" frame 3 >"$RB_TMP/f3.txt" 2>&1
	want=$(awk -F'\t' '$1 == "frame" && $2 == "main" && $3 == 3 { print $5 ":" $6 }' "$RB_TRUTH")
	if grep -q "^#3  .*inner (method)" "$RB_TMP/f3.txt" && grep -qF "  at $want" "$RB_TMP/f3.txt" &&
	   grep -q '^  self: #<Object 0x' "$RB_TMP/f3.txt"; then
		ok "$kind $ver: frame 3 shows label, path:line and self"
	else
		not_ok "$kind $ver: frame 3 shows label, path:line and self"; diag "$(head -5 "$RB_TMP/f3.txt")"
	fi
	check "$kind $ver: control characters and bidirectional controls in values are escaped" \
		grep -qF '    esc = "tab\tnl\n\e[31mredé\"q\\\u{202e}"' "$RB_TMP/f3.txt"
	check "$kind $ver: no raw escape byte or right-to-left override reaches the output" \
		bash -c "! grep -q \$'\\x1b\\|\\xe2\\x80\\xae' '$RB_TMP/f3.txt'"
	check "$kind $ver: a long String is cut, with its length" \
		grep -qE '^    long = "x{200}"\.\.\. \(600 bytes\)$' "$RB_TMP/f3.txt"
	"$RBINSPECT" -p "$RB_PID" frame 0 >"$RB_TMP/f0.txt" 2>&1
	check "$kind $ver: frame 0 (Kernel#sleep) is a C method without locals" \
		grep -q "^  (a method written in C: no local variables)" "$RB_TMP/f0.txt"

	# gdb's habits: abbreviations, up and down, info locals, and the innermost frame
	# as the floor.
	nav "$kind $ver live" -p "$RB_PID"

	core=$(core_of "$RB_PID")
	nav "$kind $ver core" "$core"
	locals "$kind $ver core" "$core"
	"$RBINSPECT" "$core" frame 4 >"$RB_TMP/core4.txt" 2>&1
	check "$kind $ver core: text frame 4 lists outer's variables" \
		grep -qF '    o_str = "outer"' "$RB_TMP/core4.txt"
	rm -f "$core"

	if [ "$first" = 1 ]; then
		first=0
		r=(-p "$RB_PID")
		"$RBINSPECT" "${r[@]}" -ex 'thread 1' -ex 'frame 1' >"$RB_TMP/ex.txt" 2>&1
		is "$?" 0 "-ex: two commands run, exit 0"
		check "-ex: thread then frame" grep -q '^    blk = "in block"' "$RB_TMP/ex.txt"
		"$RBINSPECT" "${r[@]}" -ex bogus -ex info >"$RB_TMP/bad.txt" 2>&1
		is "$?" 2 "-ex: an unknown command ends the run with exit 2"
		check "-ex: nothing runs after the failing command" \
			bash -c "! grep -q '^ruby ' '$RB_TMP/bad.txt'"
		printf '# a comment\n\nset max-frames 2\nbt 1\n' >"$RB_TMP/cmds"
		"$RBINSPECT" "${r[@]}" -x "$RB_TMP/cmds" >"$RB_TMP/x.txt" 2>&1
		is "$?" 0 "-x FILE: runs, exit 0"
		is "$(wc -l <"$RB_TMP/x.txt")" 4 "-x FILE: set max-frames 2, bt 1: header, 2 frames, marker"
		"$RBINSPECT" "${r[@]}" frame 99 >/dev/null 2>&1
		is "$?" 2 "frame 99 (no such frame): exit 2"
		"$RBINSPECT" "${r[@]}" thread 99 >/dev/null 2>&1
		is "$?" 2 "thread 99 (no such thread): exit 2"
		"$RBINSPECT" "${r[@]}" bt 1 x y >/dev/null 2>&1
		is "$?" 2 "bad arguments: exit 2"
		printf 'set json on\ninfo\n' | "$RBINSPECT" "${r[@]}" >"$RB_TMP/pipe.txt" 2>&1
		is "$?" 0 "stdin not a terminal: commands run line by line"
		is "$(jq -r .version "$RB_TMP/pipe.txt" 2>&1)" "$ver" "stdin: no prompt, set json on gives JSON"
		"$RBINSPECT" --color=always "${r[@]}" bt 1 >"$RB_TMP/color.txt" 2>&1
		check "--color=always colors" grep -q $'\x1b\\[' "$RB_TMP/color.txt"
		"$RBINSPECT" "${r[@]}" bt 1 >"$RB_TMP/nocolor.txt" 2>&1
		check "no color when not a terminal" bash -c "! grep -q \$'\\x1b' '$RB_TMP/nocolor.txt'"
		"$RBINSPECT" --color=sometimes "${r[@]}" info >/dev/null 2>&1
		is "$?" 2 "--color=sometimes: exit 2"
	fi
	kill -9 "$RB_PID"
done < <(rubies_list)

# A live target that exits during a session: reported once, the session
# stays usable, info says it is gone.
read -r kind ver root cmd < <(rubies_list | head -1)
if ruby_start "$kind" "$root" "$cmd" simple.rb; then
	fifo=$RB_TMP/fifo
	mkfifo "$fifo"
	"$RBINSPECT" -p "$RB_PID" <"$fifo" >"$RB_TMP/gone.txt" 2>&1 &
	rbi=$!
	exec 7>"$fifo"
	echo info >&7
	sleep 1
	kill -9 "$RB_PID"
	sleep 0.3
	printf 'info\nbt\nhelp\n' >&7
	exec 7>&-
	wait "$rbi"
	is "$?" 0 "gone: the session ends normally (help was last)"
	check "gone: info first shows a running process" grep -q '^state  *running' "$RB_TMP/gone.txt"
	check "gone: the exit is reported" grep -q "^rbinspect: process $RB_PID has exited$" "$RB_TMP/gone.txt"
	check "gone: info says it is gone" grep -q '^state  *exited' "$RB_TMP/gone.txt"
	check "gone: bt says why it cannot run" grep -q '^rbinspect: bt: process .* has exited' "$RB_TMP/gone.txt"
	check "gone: the session stays usable (help)" grep -q '^  frame ' "$RB_TMP/gone.txt"
	"$RBINSPECT" -p "$RB_PID" info >/dev/null 2>&1
	rc=$?
	check "a process that is gone: exit 3 (no such process) or 9 (a zombie): $rc" \
		test "$rc" = 3 -o "$rc" = 9
else
	not_ok "gone: simple.rb did not start"
fi
tap_done
