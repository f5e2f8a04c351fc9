# bt.sh: `rbinspect bt` and `threads` on every test Ruby (Debian's stripped
# binaries and DWARF builds), live and from a core, against the target's
# own Thread#backtrace_locations (testdata/programs/threads.rb with a
# 10,000-frame thread; tests/bt-check.py compares).  Also: --max-frames,
# one thread by number, text output, a thread spinning with the GVL, and the
# native frames merged with the Ruby ones (bt --native; tests/integration/native.sh
# checks the native frames themselves against gdb's).
set -u
. "$(dirname "$0")/../tap.sh"
. "$(dirname "$0")/../rubies.sh"
check_py=$here/tests/bt-check.py

# compare LABEL JSON: bt --json output against the running program's truth.
compare() {
	local out
	if out=$(python3 "$check_py" "$RB_TRUTH" "$2" 2>&1); then
		ok "$1: every thread and frame matches the target's own backtrace"
	else
		not_ok "$1: frames differ from the target's own backtrace"; diag "$out"
	fi
}

# churned PROGRAM WHAT [N]: N (15) bt of testdata/programs/PROGRAM.rb (started with the environment
# given), and no stack printed as real that it cannot have, no label without its class
# (tests/churn-check.py PROGRAM)
churned() {
	local out n=${3:-15}
	if ruby_start "$kind" "$root" "$cmd" "$1.rb"; then
		: >"$RB_TMP/$1-all.json"
		for _ in $(seq "$n"); do
			"$RBINSPECT" --json -p "$RB_PID" bt >>"$RB_TMP/$1-all.json" 2>/dev/null
		done
		if out=$(python3 "$here/tests/churn-check.py" "$1" "$RB_TMP/$1-all.json"); then
			ok "$kind $ver: $n bt of $2: no impossible stack, none cut, every label qualified ($(echo "$out" | awk '{ print $1 " stacks, " $2 " marked as moving" }'))"
		else
			not_ok "$kind $ver: bt of $2: stacks printed as real that $1.rb cannot have, or bare labels"
			diag "$out"
		fi
		kill -9 "$RB_PID"
	else
		not_ok "$kind $ver: $1.rb did not start"
	fi
}

# native LABEL RBINSPECT-ARGS...: bt --native: the Ruby frames of the merged stacks are the
# target's own backtraces, and every thread's two stacks were merged (on musl, whose C
# library has no call frame information, past a blocked thread's first frame by a stack
# scan).
native() {
	local label=$1 j=$RB_TMP/native.json
	shift
	"$RBINSPECT" --json "$@" bt --native >"$j" 2>"$RB_TMP/native.err"
	jq '.threads[] |= (.frames = [.frames[] | .ruby | select(. != null)])' "$j" >"$j.ruby"
	compare "$label bt --native" "$j.ruby"
	case $label in
	yjit*)
		# Ruby frames YJIT compiled run in its code, which has no CFI: stacks that
		# pass through it end there, and are not merged (man: bt --native).
		is "$(jq -r '[.threads[] | select(.merged | not) | .unmerged_reason |
			select(test("ends in JIT-compiled code") | not)] | join("; ")' "$j")" "" \
			"$label bt --native: a stack is merged, or says it ends in JIT-compiled code" ;;
	*)
		local unmerged
		unmerged=$(jq -r '[.threads[] | select(.merged | not) | "\(.name): \(.unmerged_reason)"] | join("; ")' "$j")
		# gdb's gcore writes the thread stacks of Debian's 3.4.11 (mapped stack-like,
		# VmFlags gu) as zeros: then gdb cannot unwind those threads either.
		if [ -n "$unmerged" ] && [ "$1" = "${1#-}" ] &&
		   [ "$(timeout 300 gdb -nx -batch -ex 'thread apply all bt' "$exe" "$1" 2>/dev/null |
			grep -c '^#[0-9]* *0x0000000000000000 in ?? ()$')" -ge \
		     "$(jq '[.threads[] | select(.merged | not)] | length' "$j")" ]; then
			skip "$label bt --native: gdb's gcore left the unmerged threads' stacks empty (gdb cannot unwind them either)"
		else
			is "$unmerged" "" "$label bt --native: every thread's native and Ruby frames merged"
		fi ;;
	esac
}

while read -r kind ver root cmd; do
	if ! DEPTH=10000 ruby_start "$kind" "$root" "$cmd" threads.rb; then
		not_ok "$kind $ver: program did not start"; continue
	fi
	wait_parked "$RB_PID" || diag "$kind $ver: not every task sleeps"
	start=$(date +%s%N)
	"$RBINSPECT" --json -p "$RB_PID" bt >"$RB_TMP/live.json"
	ms=$(( ($(date +%s%N) - start) / 1000000 ))
	compare "$kind $ver live" "$RB_TMP/live.json"
	check "$kind $ver live: 10,000-frame stack in ${ms} ms (< 5 s)" test "$ms" -lt 5000
	native "$kind $ver live" -p "$RB_PID"

	"$RBINSPECT" --json -p "$RB_PID" threads >"$RB_TMP/threads.json"
	is "$(jq '.threads | length' "$RB_TMP/threads.json")" \
		"$(awk -F'\t' '$1 == "thread"' "$RB_TRUTH" | wc -l)" "$kind $ver: threads lists every thread"
	is "$(jq '[.threads[] | select(.main)] | length' "$RB_TMP/threads.json")" 1 \
		"$kind $ver: one main thread"

	deep=$(jq '[.threads[] | .name] | index("deep") + 1' "$RB_TMP/live.json")
	"$RBINSPECT" -p "$RB_PID" bt "$deep" --max-frames 3 >"$RB_TMP/deep.txt"
	is "$(wc -l <"$RB_TMP/deep.txt")" 5 "$kind $ver: bt N --max-frames 3 prints header, 3 frames, marker"
	want=$(awk -F'\t' '$1 == "frame" && $2 == "deep" && $3 == 1 { print $5 ":" $6 }' "$RB_TRUTH")
	if sed -n 3p "$RB_TMP/deep.txt" | grep -qF "$want:in '"; then
		ok "$kind $ver: text frame is path:line:in 'label'"
	else
		not_ok "$kind $ver: text frame is path:line:in 'label'"; diag "$(cat "$RB_TMP/deep.txt")"
	fi

	core=$(core_of "$RB_PID")
	"$RBINSPECT" --json "$core" bt >"$RB_TMP/core.json"
	compare "$kind $ver core" "$RB_TMP/core.json"
	if [ "$kind" = deb ]; then
		# gcore of a chrooted process names its files as the host sees them,
		# under the root already: --sysroot ROOT still finds them.
		"$RBINSPECT" --json --sysroot "$root" "$core" bt >"$RB_TMP/core-root.json"
		compare "$kind $ver core, --sysroot the root its names carry" "$RB_TMP/core-root.json"
		# Carried off its machine (no file of its Ruby, libc or program): the
		# same threads, tids (each thread's pointer in the core's notes) and
		# labels, '<main>' and its blocks too (a literal in libruby's
		# read-only data).  '<top (required)>' and '<compiled>' are such
		# literals of one iseq type: unknown, as the type cannot tell them.
		mkdir -p "$RB_TMP/no-files"
		"$RBINSPECT" --json --sysroot "$RB_TMP/no-files" "$core" bt \
			>"$RB_TMP/core-bare.json" 2>/dev/null
		labels='.threads[] | "\(.tid)", (.frames[] | .label // "unknown")'
		is "$(jq -r "$labels" "$RB_TMP/core-bare.json")" \
			"$(jq -r "$labels" "$RB_TMP/core.json" | sed "s/^<top (required)>$/unknown/")" \
			"$kind $ver core without its files: tids and labels"
	fi
	exe=$(ruby_exe "$kind" "$root" "$cmd")
	native "$kind $ver core" "$core"
	rm -f "$core"
	kill -9 "$RB_PID"

	# A thread spinning in Ruby code: walked (retried if its stack moves),
	# and at most one GVL holder.
	if ruby_start "$kind" "$root" "$cmd" spin.rb; then
		for _ in 1 2 3 4 5; do "$RBINSPECT" --json -p "$RB_PID" bt >"$RB_TMP/spin.json" || break; done
		is "$(jq -r '.threads[] | select(.name == "spinner") | .status' "$RB_TMP/spin.json")" \
			runnable "$kind $ver: the spinner is runnable"
		check "$kind $ver: at most one GVL holder" \
			test "$(jq '[.threads[] | select(.gvl)] | length' "$RB_TMP/spin.json")" -le 1
		kill -9 "$RB_PID"
	else
		not_ok "$kind $ver: spin.rb did not start"
	fi

	# Methods of classes without a permanent name (set_temporary_name on 3.3+, a class
	# under an anonymous module): bare labels, as Ruby 3.4 prints them; own_label is
	# the target's own label on every Ruby.  Live and from a core.
	if ruby_start "$kind" "$root" "$cmd" tempname.rb; then
		"$RBINSPECT" --json -p "$RB_PID" bt >"$RB_TMP/tempname.json"
		compare "$kind $ver tempname.rb live" "$RB_TMP/tempname.json"
		if core=$(core_of "$RB_PID"); then
			"$RBINSPECT" --json "$core" bt >"$RB_TMP/tempname.json"
			compare "$kind $ver tempname.rb core" "$RB_TMP/tempname.json"
			rm -f "$core"
		else
			not_ok "$kind $ver: no core of tempname.rb"
		fi
		kill -9 "$RB_PID"
	else
		not_ok "$kind $ver: tempname.rb did not start"
	fi

	# Threads that come and go all the time (50 at once, each living a few
	# microseconds): the thread list changes under every walk, and every bt
	# must still answer, with the main thread in it.  The main thread runs
	# Ruby code all the time: its stack, when it could not be read still,
	# is an error line, never made-up frames.
	if ruby_start "$kind" "$root" "$cmd" thread-churn.rb; then
		fails=0 moving=0
		: >"$RB_TMP/churn-all.json"
		for _ in $(seq 15); do
			"$RBINSPECT" --json -p "$RB_PID" bt >"$RB_TMP/churn.json" 2>"$RB_TMP/churn.err"
			st=$?
			cat "$RB_TMP/churn.json" >>"$RB_TMP/churn-all.json"
			if [ "$st" -ne 0 ] ||
			   ! jq -e '[.threads[] | select(.main)] | length == 1 and
					(.[0].error != null or .[0].frames[-1].label == "<main>")' \
					"$RB_TMP/churn.json" >/dev/null; then
				fails=$((fails + 1))
				diag "$(cat "$RB_TMP/churn.err"; jq -c '[.threads[] | select(.main)]' "$RB_TMP/churn.json")"
			fi
			jq -e '.threads[] | select(.main) | .error != null' "$RB_TMP/churn.json" >/dev/null &&
				moving=$((moving + 1))
		done
		is "$fails" 0 "$kind $ver: 15 bt of a process churning threads, each answers with its main thread ($moving with its stack moving)"
		# Every stack printed without an error is one the program can have.
		if out=$(python3 "$here/tests/churn-check.py" thread-churn "$RB_TMP/churn-all.json"); then
			ok "$kind $ver: no impossible stack among 15 bt of a churning process ($(echo "$out" | awk '{ print $1 " stacks, " $2 " marked as moving" }'))"
		else
			not_ok "$kind $ver: a stack printed as real that the program cannot have"; diag "$out"
		fi
		# bt --native holds each thread while it reads it: one that exits first gets its
		# own error line, and the command goes on (before: it ended, exit 1 or 9).
		fails=0 gone=0
		for _ in $(seq 4); do
			"$RBINSPECT" --json -p "$RB_PID" bt --native >"$RB_TMP/churn.json" 2>"$RB_TMP/churn.err"
			st=$?
			if [ "$st" -ne 0 ] ||
			   ! jq -e '[.threads[] | select(.main)] | length == 1 and
					(.[0].error != null or (.[0].frames | length) > 0)' "$RB_TMP/churn.json" >/dev/null; then
				fails=$((fails + 1))
				diag "exit $st: $(cat "$RB_TMP/churn.err")"
			fi
			gone=$((gone + $(jq '[.threads[] | select(.error != null and (.main | not))] | length' \
				"$RB_TMP/churn.json" 2>/dev/null || echo 0)))
		done
		is "$fails" 0 "$kind $ver: 4 bt --native of a process churning threads, each answers ($gone threads gone while read)"
		kill -9 "$RB_PID"
	else
		not_ok "$kind $ver: thread-churn.rb did not start"
	fi

	# A heap that never stands still (GC all the time, GC.compact now and then): the
	# main thread's stacks are the program's too.
	KEEP=20000 churned churn "a process churning its heap"
	# Classes that move: GC.compact again and again while threads run methods of classes
	# just defined.  A class, method entry, iseq or path read while it moved (T_MOVED, the
	# references to it not updated yet) is read where it went, also from the pages
	# GC.compact has made PROT_NONE (its read barrier): every label qualified
	# (Churner3#deep, not bare deep), and a name that cannot be read marks the stack
	# torn, never a frame with no name.  Before, about one bt in three showed bare
	# labels and (unknown) paths on 3.1.
	churned compact "a process compacting its heap as classes come"
	# A stack that never stands still (a recursion 0-59 deep, over and over): a frame
	# read as it changed reads the whole stack again; none is ever cut after the frames
	# before it (before: a busy Rails thread's bt printed 21-108 frames, then the error).
	churned recurse "a recursion that never stands still"
done < <(rubies_list)
tap_done
