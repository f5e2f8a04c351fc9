# fibers.sh: every fiber (`fibers`, `bt --fibers`, `fiber N` + `frame`) on every test Ruby,
# live and from a core the kernel writes (kill -ABRT, which Ruby leaves to the kernel).
# testdata/programs/fibers.rb parks fibers where they have to be found: three calls deep in
# Fiber.yield, an external enumerator after #next, a thread blocked inside a fiber its root
# fiber resumed, one never resumed, one finished, and RBI_FIBERS_MANY more in Fiber.yield;
# it writes their truth (Fiber#backtrace_locations; its own caller_locations on 2.7).
#   - tests/fiber-check.py: each fiber found once, by its Fiber object, with its status,
#     thread and frames; the chain of the thread inside a fiber; the exact count;
#   - bounds: --max-fibers N shows N and says how many were left out;
#   - `fiber N` then `frame 1` reads that fiber's frame (not its thread's);
#   - gdb's and LLDB's rb-bt --fibers print rbinspect's bt --fibers (DWARF Rubies' cores).
set -u
. "$(dirname "$0")/../tap.sh"
. "$(dirname "$0")/../rubies.sh"
. "$(dirname "$0")/../crashes.sh"
. "$(dirname "$0")/../debuggers.sh"
check_py=$here/tests/fiber-check.py
MANY=50
crash_setup || { skip "fibers: $CRASH_WHY"; tap_done; exit 0; }

# checks NAME TARGET...: what holds live and in the core; TRUTH is RB_TRUTH.
checks() {
	local name=$1 j=$RB_TMP/fb out deep
	shift
	"$RBINSPECT" --json "$@" fibers >"$j.list" 2>"$j.err" &&
		"$RBINSPECT" --json "$@" bt --fibers --max-fibers 0 >"$j.bt" 2>>"$j.err"
	is "$? $(cat "$j.err")" "0 " "$name: fibers and bt --fibers exit 0, nothing on stderr"
	if out=$(python3 "$check_py" "$RB_TRUTH" "$j.list" "$j.bt" 2>&1); then
		ok "$name: every fiber with its status, thread, chain and frames ($(tail -n 1 <<<"$out"))"
	else
		not_ok "$name: every fiber with its status, thread, chain and frames"
		diag "$out"
	fi
	"$RBINSPECT" "$@" bt --fibers --max-fibers 3 >"$j.txt" 2>&1
	local found
	found=$(jq .found "$j.list")
	is "$(grep -c '^Fiber 0x' "$j.txt") $(tail -n 1 "$j.txt")" \
		"3 $found fibers, $((found - 3)) not shown (--max-fibers 3; 0: all)" \
		"$name: bt --fibers --max-fibers 3 shows 3 and says what it left out"
	# The deep fiber by its number in the list; its frame 1 is Lab.level3.
	deep=$(jq -r --arg o "$(awk -F'\t' '$1 == "fiber" && $2 == "deep" { print $5 }' "$RB_TRUTH.fibers")" \
		'.fibers[] | select(.object == $o) | .index' "$j.list")
	out=$(printf 'fiber %s\nframe 1\n' "$deep" | "$RBINSPECT" "$@" 2>&1)
	like "$out" "^#1  (Lab\.)?level3 " "$name: fiber N, then frame 1: that fiber's frame"
}

# debugger_checks NAME EXE CORE: rb-bt --fibers in gdb and each LLDB = bt --fibers (LLDB
# before 18 does not name the crash of a core: the headers are compared without it).
debugger_checks() {
	local name=$1 exe=$2 core=$3 j=$RB_TMP/fbd lldb
	"$RBINSPECT" "$core" bt --fibers >"$j.want" 2>&1
	sed 's/, crashed here: .*:$/:/' "$j.want" >"$j.want.plain"
	timeout 300 gdb -nx -batch -x "$GDB_SCRIPT" "$exe" "$core" -ex 'echo @@bt\n' \
		-ex 'rb-bt --fibers' >"$j.gdb" 2>&1 </dev/null
	if sed '1,/^@@bt$/d' "$j.gdb" | cmp -s - "$j.want"; then
		ok "$name: gdb's rb-bt --fibers = rbinspect bt --fibers"
	else
		not_ok "$name: gdb's rb-bt --fibers = rbinspect bt --fibers"
		diag "$(sed '1,/^@@bt$/d' "$j.gdb" | diff "$j.want" - | head -20)"
	fi
	for lldb in "${lldbs[@]}"; do
		timeout 300 "${LLDB_ENV[@]}" "$lldb" --batch -o "plugin load $PLUGIN" \
			-o "target create \"$exe\" --core \"$core\"" -o 'rb-bt --fibers' \
			>"$j.lldb" 2>&1 </dev/null
		sed '1,/^(lldb) rb-bt --fibers$/d; s/, crashed here: .*:$/:/' "$j.lldb" >"$j.lldb.plain"
		if cmp -s "$j.lldb.plain" "$j.want.plain"; then
			ok "$name: $(basename "$lldb")'s rb-bt --fibers = rbinspect bt --fibers"
		else
			not_ok "$name: $(basename "$lldb")'s rb-bt --fibers = rbinspect bt --fibers"
			diag "$(diff "$j.want.plain" "$j.lldb.plain" | head -20)"
		fi
	done
}

while read -r kind ver root cmd; do
	name="$kind $ver"
	opts=()
	[ "$kind" = deb ] && opts=(--sysroot "$root")
	if ! RBI_FIBERS_MANY=$MANY ruby_start "$kind" "$root" "$cmd" fibers.rb; then
		not_ok "$name: fibers.rb did not start"; continue
	fi
	wait_parked "$RB_PID" || diag "$name: not every task sleeps"
	checks "$name live" -p "$RB_PID"
	kill -ABRT "$RB_PID"
	if ! wait_dead "$RB_PID"; then
		not_ok "$name: the process did not die"; continue
	fi
	core=$(crash_core)
	if [ -z "$core" ]; then
		not_ok "$name: the kernel wrote no core"; continue
	fi
	checks "$name core" "${opts[@]}" "$core"
	[ "$kind" = dwarf ] && debugger_checks "$name core" "$cmd" "$core"
	rm -f "$core"
done < <(rubies_list)
tap_done
