# late-threads.sh: a live session's counts are the process's now, not at attach.
# rbinspect -p PID runs `info`, the target then starts two threads
# (testdata/programs/late-threads.rb), and the same session's `info` and
# `threads` both see them: rbi_ruby_info()'s thread_count is counted again
# (a REPL once said "19 threads" while `threads` listed 21).  On every test
# Ruby.
set -u
. "$(dirname "$0")/../tap.sh"
. "$(dirname "$0")/../rubies.sh"

# info_threads TEXT N: the thread count of the Nth `info` in TEXT.
info_threads() { awk -v n="$2" '$1 == "threads" && $3 == "in" { if (++i == n) print $2 }' <<<"$1"; }

while read -r kind ver root cmd; do
	l="$kind $ver"
	if ! RBI_LATE=2 ruby_start "$kind" "$root" "$cmd" late-threads.rb; then
		not_ok "$l: late-threads.rb did not start"; continue
	fi
	fifo=$RB_TMP/cmds.$RANDOM out=$RB_TMP/session.$RANDOM
	mkfifo "$fifo"
	# -ex info first; then -x reads the commands that come after the threads started.
	"$RBINSPECT" -p "$RB_PID" -ex info -x "$fifo" >"$out" 2>&1 &
	session=$!
	for _ in $(seq 1 100); do grep -q '^threads ' "$out" && break; sleep 0.1; done
	touch "$RB_TRUTH.go"
	for _ in $(seq 1 100); do [ -s "$RB_TRUTH.started" ] && break; sleep 0.1; done
	want=$(cat "$RB_TRUTH.started" 2>/dev/null)
	printf 'info\nthreads\n' >"$fifo"
	wait "$session"
	rc=$?
	text=$(cat "$out")
	before=$(info_threads "$text" 1) after=$(info_threads "$text" 2)
	listed=$(awk '/^threads / { n++; next } n >= 2 && /^ *[0-9]+ / { c++ } END { print c + 0 }' "$out")
	is "$rc" 0 "$l: the session ran its commands"
	is "$before" 1 "$l: info at attach: 1 thread"
	is "$after" "$want" "$l: info after two threads started: Ruby's Thread.list.size ($want)"
	is "$listed" "$want" "$l: threads lists as many"
	{ [ "$after" = "$want" ] && [ "$listed" = "$want" ]; } || diag "$text"
	kill -9 "$RB_PID" 2>/dev/null
done < <(rubies_list)
tap_done
