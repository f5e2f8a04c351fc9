# forked.sh: a forked worker (puma's cluster mode, unicorn, resque, a Sidekiq swarm) is a
# process of its own, whatever its Ruby remembers of its parent.  Ruby 3.1 keeps the parent's
# th->tid in the child after fork; glibc's own record is right.  On every test Ruby, with
# testdata/programs/forker.rb's worker (its main thread the one that forked, spinning in
# Hot#spin; a thread it started itself):
#   - threads: the main thread's tid is the worker's pid, and every tid is a task of it;
#   - bt --native and record --native (under strace) seize no thread outside the worker's
#     /proc/PID/task, and the parent's threads are never traced;
#   - record --mode cpu has the worker's samples (its CPU time is read from its own tasks);
#   - the kernel's core of the worker, killed by SIGSEGV through Ruby's [BUG] handler, marks
#     its main thread crashed, by the worker's own tid.
set -u
. "$(dirname "$0")/../tap.sh"
. "$(dirname "$0")/../rubies.sh"
. "$(dirname "$0")/../crashes.sh"

crash_ok=1
crash_setup || crash_ok=0
have_strace=1
command -v strace >/dev/null || have_strace=0

# tids_outside PID FILE: the tids in FILE (one a line) that are not tasks of PID.
tids_outside() {
	local t bad=""
	while read -r t; do
		[ -n "$t" ] && [ ! -e "/proc/$1/task/$t" ] && bad="$bad $t"
	done <"$2"
	echo "${bad# }"
}

# seized STRACE_LOG: the tids PTRACE_SEIZE was called on, one a line.
seized() { sed -n 's/.*ptrace(PTRACE_SEIZE, \([0-9]*\).*/\1/p' "$1" | sort -u; }

# traced_check NAME PID STRACE_LOG: every thread seized is one of PID's.  The worker's
# tasks are read after the command: a thread of it that exited meanwhile would count as
# outside, so forker.rb's worker keeps its threads for its life.
traced_check() {
	seized "$3" >"$3.tids"
	if [ ! -s "$3.tids" ]; then
		not_ok "$1: the worker's threads were held (strace saw no PTRACE_SEIZE)"
	else
		is "$(tids_outside "$2" "$3.tids")" "" \
			"$1: every thread it stopped is the worker's ($(wc -l <"$3.tids") seized)"
	fi
}

while read -r kind ver root cmd; do
	name="$kind $ver worker"
	if ! WORKERS=1 ruby_start "$kind" "$root" "$cmd" forker.rb; then
		not_ok "$kind $ver: forker.rb did not start"; continue
	fi
	parent=$RB_PID
	w=$(truth_get workers)
	RB_PIDS+=("$w")
	parent_tasks=$(ls "/proc/$parent/task" | sort | tr '\n' ' ')
	j=$RB_TMP/forked
	for _ in $(seq 1 50); do [ -e "/proc/$w/task" ] && break; sleep 0.1; done

	"$RBINSPECT" --json -p "$w" threads >"$j.threads" 2>"$j.err"
	is "$(jq -r '.threads[] | select(.main) | .tid' "$j.threads")" "$w" \
		"$name: threads: the main thread's tid is the worker's pid, not its parent's thread"
	jq -r '.threads[].tid | select(. > 0)' "$j.threads" >"$j.tids"
	is "$(tids_outside "$w" "$j.tids")" "" "$name: threads: every tid is a task of the worker"

	if [ "$have_strace" = 1 ]; then
		strace_to "$j.strace" -e trace=ptrace -- \
			"$RBINSPECT" -p "$w" bt --native >"$j.bt" 2>"$j.err"
		is "$?" 0 "$name: bt --native exits 0"
		traced_check "$name: bt --native" "$w" "$j.strace"
		like "$(sed -n '/^Thread 1 /,/^$/p' "$j.bt")" 'Hot#spin|Cold#walk|HotLib' \
			"$name: bt --native: the main thread's stack is the worker's loop"
		strace_to "$j.rstrace" -e trace=ptrace -- \
			"$RBINSPECT" record -p "$w" --native -d 1 -f folded -o "$j.nfolded" -q 2>"$j.err"
		is "$?" 0 "$name: record --native exits 0"
		traced_check "$name: record --native" "$w" "$j.rstrace"
	else
		skip "$name: bt --native and record --native under strace: no strace"
	fi
	is "$(awk '/^TracerPid:/ { print $2 }' "/proc/$parent/status") $(ls "/proc/$parent/task" | sort | tr '\n' ' ')" \
		"0 $parent_tasks" "$name: the parent was never traced, its threads as they were"

	"$RBINSPECT" record -p "$w" --mode cpu -d 1 -f folded -o "$j.cpu" -q 2>"$j.err"
	rc=$?
	if [ "$rc" = 0 ] && grep -q 'Hot#spin' "$j.cpu"; then
		ok "$name: record --mode cpu has the worker's samples"
	else
		not_ok "$name: record --mode cpu has the worker's samples (exit $rc)"; diag "$(cat "$j.err")"
	fi

	if [ "$crash_ok" = 0 ]; then
		skip "$name: its core: $CRASH_WHY"
	else
		kill -SEGV "$w"
		if ! wait_dead "$w"; then
			not_ok "$name: the worker did not die of SIGSEGV"
		elif ! core=$(crash_core) || [ -z "$core" ]; then
			not_ok "$name: the kernel wrote no core of the worker"
		else
			opts=()
			[ "$kind" = deb ] && opts=(--sysroot "$root")
			"$RBINSPECT" "${opts[@]}" --json "$core" bt >"$j.core.json" 2>"$j.err"
			is "$(jq -r '[.threads[0].crashed, .threads[0].main, .threads[0].tid, .crash.tid] | @tsv' "$j.core.json")" \
				"$(printf 'true\ttrue\t%s\t%s' "$w" "$w")" \
				"$name: its core: the main thread crashed, by the worker's own tid"
			rm -f "$core"
		fi
	fi
	kill -9 "$parent" 2>/dev/null
done < <(rubies_list)
tap_done
