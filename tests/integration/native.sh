# native.sh: `bt --native` on every test Ruby, live and from a crash core: native frames
# merged with Ruby frames.  testdata/programs/crash.rb parks threads in the places the
# merge has to get right: Kernel#sleep (a C method on its C function), Thread::Mutex#lock,
# Queue#pop, a C extension's own function (RbiCrash.park_then_crash, blocked in open(2)),
# and Ruby called back from inside zlib's C code (Zlib::Deflate#deflate with a block).
#   - the Ruby frames, taken out of the merged stack, are the target's own backtrace
#     (tests/bt-check.py against the truth it wrote);
#   - the native frames are gdb's `thread apply all bt` on the same target: same pcs,
#     same order, same names where both name one (tests/native-check.py); every thread
#     merged;
#   - the C methods sit on their C functions' frames, zlib's frames between the two runs
#     of Ruby frames, a blocked thread's innermost frame in the C library;
#   - a live process is stopped one thread at a time, briefly, and runs on afterwards;
#   - the crash core (SIGSEGV in the C extension, as the kernel dumps it after Ruby's
#     [BUG] handler): the crashed thread comes first and the frame after the signal
#     trampoline is the C function that faulted; a call through a NULL function pointer
#     shows pc 0 and then the function that made the call;
#   - gdb's rb-bt --native is rbinspect's, on the core and on a process gdb holds (read
#     through gdb's own snapshot: only the tracer may read a thread's registers);
#     rbinspect run outside on a process a debugger holds says so in one line, exit 11.
set -u
. "$(dirname "$0")/../tap.sh"
. "$(dirname "$0")/../rubies.sh"
check_py=$here/tests/bt-check.py
native_py=$here/tests/native-check.py
. "$(dirname "$0")/../debuggers.sh"
. "$(dirname "$0")/../crashes.sh"
crash_setup || { skip "native frames of crash cores: $CRASH_WHY"; tap_done; exit 0; }

# ruby_frames JSON: the bt --native JSON with only its Ruby frames, as `bt --json` has them.
ruby_frames() { jq '.threads[] |= (.frames = [.frames[] | .ruby | select(. != null)])' "$1"; }

# checks NAME JSON TRUTH GDB_OUT: what holds on a live process and a core alike.
checks() {
	local name=$1 j=$2 truth=$3 gdb_out=$4 out
	ruby_frames "$j" >"$j.ruby"
	if out=$(python3 "$check_py" "$truth" "$j.ruby" 2>&1); then
		ok "$name: the Ruby frames of the merged stacks are the target's own backtraces"
	else
		not_ok "$name: the Ruby frames of the merged stacks are the target's own backtraces"
		diag "$out"
	fi
	out=$(python3 "$native_py" "$j" "$gdb_out" 2>&1)
	case $? in
	0) ok "$name: native frames as gdb's thread apply all bt has them, every thread merged ($(tail -n 1 <<<"$out"))" ;;
	2) skip "$name: native frames against gdb: $out" ;;
	*)
		not_ok "$name: native frames as gdb's thread apply all bt has them, every thread merged"
		diag "$out" ;;
	esac
	# thread NAME's mixed frames, one line each: "N|MODULE|FUNCTION|RUBY LABEL".
	local lines=$j.lines
	jq -r '.threads[] | .name as $t | .frames[] |
		"\($t)|\(.native.module // "" | split("/") | last)|\(.native.function // "")|\(.ruby.label // "")"' \
		"$j" >"$lines"
	is "$(grep -c '^sleeper|libruby[^|]*|[^|]*|Kernel#sleep$' "$lines")" 1 \
		"$name: Kernel#sleep sits on its C function's native frame"
	is "$(grep -c '^zipper|zlib.so|[^|]*|Zlib::Deflate#deflate$' "$lines")" 1 \
		"$name: Zlib::Deflate#deflate sits on its C function in zlib.so"
	is "$(awk -F'|' '$1 == "zipper" && $4 ~ /^block in .*Zipper#run$/ { b = NR }
		$1 == "zipper" && b && $2 == "zlib.so" { z++ }
		$1 == "zipper" && $4 == "Zlib::Deflate#deflate" { print (z > 1); exit }' "$lines")" 1 \
		"$name: zlib's own frames lie between the block it called and Zlib::Deflate#deflate"
	is "$(grep -c '^locker|[^|]*|[^|]*|Thread::Mutex#lock$' "$lines")" 1 \
		"$name: the locker blocks in Thread::Mutex#lock"
	is "$(jq -r '[.threads[] | select(.name != "crasher") | .frames[0].native.module // "none" |
		split("/") | last | test("^lib(c|pthread)[-.]")] | all' "$j")" true \
		"$name: each blocked thread's innermost frame is in the C library"
}

# gdb_bt OUT GDBARGS...: gdb's own backtraces of every thread.
gdb_bt() {
	local out=$1
	shift
	timeout 300 gdb -nx -batch -ex 'set print frame-info location-and-address' \
		-ex 'set backtrace past-main on' "$@" -ex 'thread apply all bt' >"$out" 2>&1 </dev/null
}

# crashed_core WHAT CRASH: crash.rb of the Ruby in the loop started, parked and crashed by
# CRASH (crash_null, crash_fiddle), its core in $core; 1, said, if it did not start or
# left no core.
crashed_core() {
	if ! crash_start "$kind" "$root" "$cmd"; then
		not_ok "$name: crash.rb did not start ($1)"; return 1
	fi
	wait_parked "$RB_PID" || diag "$name: not every task sleeps"
	"$2"
	if ! wait_dead "$RB_PID" || ! core=$(crash_core) || [ -z "$core" ]; then
		not_ok "$name: no core of $1"; return 1
	fi
}

null_done=
while read -r kind ver root cmd; do
	name="$kind $ver"
	j=$RB_TMP/native
	opts=() gdbopts=() exe=$cmd
	if [ "$kind" = deb ]; then
		opts=(--sysroot "$root") gdbopts=(-iex "set sysroot $root") exe=$root/usr/bin/ruby
	fi
	if ! crash_start "$kind" "$root" "$cmd"; then
		not_ok "$name: crash.rb did not start"; continue
	fi
	wait_parked "$RB_PID" || diag "$name: not every task sleeps"

	# Live.
	"$RBINSPECT" --json -p "$RB_PID" bt --native >"$j.live.json" 2>"$j.err"
	is "$?" 0 "$name live: bt --native exits 0"
	# gdb attached to a chrooted process unwinds garbage past its first frame, even
	# with /proc/PID/root as its sysroot: there, gdb reads a gcore of the parked process.
	if [ "$kind" = deb ]; then
		snap=$(core_of "$RB_PID") && gdb_bt "$j.live.gdb" "${gdbopts[@]}" "$exe" "$snap"
		rm -f "$snap"
	else
		gdb_bt "$j.live.gdb" -p "$RB_PID"
	fi
	checks "$name live" "$j.live.json" "$RB_TRUTH" "$j.live.gdb"
	is "$(jq -r '[.threads[] | .stopped_ns > 0] | all' "$j.live.json")" true \
		"$name live: each thread was stopped while its stacks were read"
	is "$(jq -r '.threads[] | select(.name == "crasher") | .frames[] | select(.ruby.label == "RbiCrash.park_then_crash") |
		.native.function' "$j.live.json")" park_then_crash \
		"$name live: the C extension's method sits on its own function"
	wait_parked "$RB_PID"
	is "$(task_states "$RB_PID")" S "$name live: every thread runs on (sleeps where it slept) afterwards"
	# gdb holding a process: rb-bt --native reads gdb's snapshot of it (not for the
	# chrooted ones: see above).
	if [ "$kind" = dwarf ]; then
		"$RBINSPECT" -p "$RB_PID" bt --native >"$j.live.txt" 2>/dev/null
		timeout 300 gdb -nx -batch -x "$GDB_SCRIPT" -p "$RB_PID" \
			-ex 'echo @@bt\n' -ex 'rb-bt --native' >"$j.gdbrb" 2>&1 </dev/null
		# gdb says where the snapshot went and when it detached: the rest is rbinspect's.
		# gdb's own stdout is a pipe here, flushed after rbinspect's: "Saved corefile"
		# may come after the frames.
		if sed '1,/^@@bt$/d' "$j.gdbrb" | sed -n '/^Thread /,$p' |
			grep -v -e '^\[Inferior 1 .* detached\]$' -e '^Saved corefile ' |
			cmp -s - "$j.live.txt"; then
			ok "$name live: gdb's rb-bt --native (through its snapshot) = rbinspect bt --native"
		else
			not_ok "$name live: gdb's rb-bt --native (through its snapshot) = rbinspect bt --native"
			diag "$(sed '1,/^@@bt$/d' "$j.gdbrb" | diff "$j.live.txt" - | head -20)"
		fi
		# Outside gdb, while gdb holds it: no registers for us, one line, exit 11.
		timeout 300 gdb -nx -batch -p "$RB_PID" -ex "shell '$RBINSPECT' -p $RB_PID bt --native \
			>/dev/null 2>'$j.held.err'; echo \$? >'$j.held.rc'" >/dev/null 2>&1 </dev/null
		if [ "$(cat "$j.held.rc")" = 11 ] && [ "$(grep -c . "$j.held.err")" = 1 ] &&
			grep -q 'traced already' "$j.held.err"; then
			ok "$name live: a process a debugger holds: one line, exit 11 (busy)"
		else
			not_ok "$name live: a process a debugger holds: one line, exit 11 (busy)"
			diag "exit $(cat "$j.held.rc"): $(cat "$j.held.err")"
		fi
	fi

	# The crash core.
	crash_segv
	if ! wait_dead "$RB_PID"; then
		not_ok "$name: the process did not die"; continue
	fi
	core=$(crash_core)
	if [ -z "$core" ]; then
		not_ok "$name: the kernel wrote no core"; continue
	fi
	crash_truth segv >"$j.truth"
	"$RBINSPECT" "${opts[@]}" --json "$core" bt --native >"$j.core.json" 2>"$j.err"
	is "$?" 0 "$name core: bt --native exits 0"
	gdb_bt "$j.core.gdb" "${gdbopts[@]}" "$exe" "$core"
	checks "$name core" "$j.core.json" "$j.truth" "$j.core.gdb"
	is "$(jq -r '.threads[0] | [.name, .crashed, ([.frames[] | .native.signal_trampoline] | index(true)) as $s |
		.frames[$s + 1] | .native.function, (.native.module | split("/") | last), .ruby.label] | @tsv' "$j.core.json")" \
		"$(printf 'crasher\ttrue\tpark_then_crash\tcrashext.so\tRbiCrash.park_then_crash')" \
		"$name core: the crashed thread first; after the signal trampoline, the C function that faulted"
	"$RBINSPECT" "${opts[@]}" "$core" bt --native >"$j.core.txt" 2>/dev/null
	timeout 300 gdb -nx -batch "${gdbopts[@]}" -x "$GDB_SCRIPT" "$exe" "$core" \
		-ex 'echo @@bt\n' -ex 'rb-bt --native' >"$j.gdbrb" 2>&1 </dev/null
	if sed '1,/^@@bt$/d' "$j.gdbrb" | cmp -s - "$j.core.txt"; then
		ok "$name core: gdb's rb-bt --native = rbinspect bt --native"
	else
		not_ok "$name core: gdb's rb-bt --native = rbinspect bt --native"
		diag "$(sed '1,/^@@bt$/d' "$j.gdbrb" | diff "$j.core.txt" - | head -20)"
	fi
	rm -f "$core"

	# A call through a NULL function pointer (a C extension's callback never set),
	# once per kind of Ruby: the fault is at pc 0, where libdwfl's unwinding ends.  As
	# gdb does, the frame at 0 and then the caller the call's return address names:
	# the extension's function, with its Ruby method merged on it.
	case " $null_done " in *" $kind "*) continue ;; esac
	null_done="$null_done $kind"
	crashed_core "the NULL call" crash_null || continue
	"$RBINSPECT" "${opts[@]}" --json "$core" bt --native >"$j.null.json" 2>"$j.err"
	is "$(jq -r '.threads[0] | [.name, .merged, ([.frames[] | .native.signal_trampoline] | index(true)) as $s |
		(.frames[$s + 1].native.pc), (.frames[$s + 2] | .native.function, .ruby.label)] | @tsv' "$j.null.json")" \
		"$(printf 'crasher\ttrue\t0x0\tpark_then_crash\tRbiCrash.park_then_crash')" \
		"$name NULL-call core: after the signal trampoline, pc 0, then the C function that called it, merged"
	rm -f "$core"

	# The same call made by Fiddle (a gem's binding of a C library, its callback never
	# set), on the DWARF builds (Debian's roots here have no libffi): the call was made
	# from libffi's ffi_call_unix64, which finds its frame by rbp, so the registers the
	# signal saved carry the unwinding on, as gdb's: libffi, fiddle.so's function
	# (nogvl_ffi_call) under rb_nogvl, and Fiddle::Function#call merged on fiddle's
	# function_call.
	[ "$kind" = dwarf ] || continue
	crashed_core "the NULL call through Fiddle" crash_fiddle || continue
	"$RBINSPECT" "${opts[@]}" --json "$core" bt --native >"$j.fiddle.json" 2>"$j.err"
	is "$(jq -r '.threads[0] | ([.frames[] | .native.signal_trampoline] | index(true)) as $s |
		[.merged, .frames[$s + 1].native.pc, ([.frames[$s + 2:][] | .native.module // "" |
		select(test("libffi|fiddle|libruby"))] | map(sub(".*/"; "") | sub("[.]so.*"; "")) |
		unique | join(",")), ([.frames[] | .native.function // empty |
		select(. == "nogvl_ffi_call" or . == "rb_nogvl")] | join(",")),
		([.frames[] | select(.native.function == "function_call") | .ruby.label] | first)] |
		@tsv' "$j.fiddle.json")" \
		"$(printf 'true\t0x0\tfiddle,libffi,libruby\tnogvl_ffi_call,rb_nogvl\tFiddle::Function#call')" \
		"$name NULL call through Fiddle, core: pc 0, then libffi, fiddle.so and rb_nogvl, Fiddle::Function#call merged"
	rm -f "$core"
done < <(rubies_list)
tap_done
