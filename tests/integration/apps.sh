# apps.sh: the applications users run, from Debian's own packages, on two stacks: bookworm's on
# the host (Ruby 3.1: Rails 6.1, puma 5.6, Sinatra 2.1, Sidekiq 6.4 on redis 7.0), and trixie's
# in a root of its packages (tools/test-rubies.sh --apps; Ruby 3.3: Rails 7.2, puma 6.6,
# Sinatra 4.1, Sidekiq 7.3 on redis 8.0), run with chroot.  On each: a Rails
# app (testdata/apps/rails-app.rb: ActiveRecord on sqlite3, an N+1 page) under puma in cluster
# mode (2 forked workers of 5 threads, preload_app!), and a Sinatra app
# (testdata/apps/sinatra-app.rb) under puma in single mode (5 threads in puma's own process),
# each driven by ab on loopback, and a Sidekiq process (testdata/apps/sidekiq-app.rb: 5
# processor threads, a heartbeat and a scheduler) on redis-server, fed 400 jobs.  Truths come from the application itself
# (testdata/apps/truth-trap.rb: on SIGPWR a process writes every thread's backtrace and stops
# itself while holding the GVL; on SIGURG it counts objects and says what its exprs are).
# For each worker, the single-mode process and Sidekiq, after a burst of requests or jobs:
#   - threads: the main thread's tid is the worker's pid, every tid one of its tasks;
#   - bt at the trapped instant: every thread and frame as the worker's own backtraces;
#   - bt --native (under strace): no thread stopped outside the worker, the master untraced;
#   - objects --by-class --pause: the app's RbiKeep objects as its own each_object counts them
#     right after, the garbage its lazy sweep has not freed left out; heap-dump --pause: the
#     objects of its own ObjectSpace.dump_all right after, by address (0.1 % only in the
#     dump, 1 % made by the app once it ran on);
#   - p into the app's objects (FIRST_POST.@attributes.class: an ActiveRecord record's
#     attribute set), as the app says they are;
# and a worker killed by SIGSEGV (Ruby's [BUG] handler, the kernel's core): its core marks
# its main thread crashed, by the worker's own tid.  SKIP where Debian's puma, ruby-rails,
# ruby-sqlite3, ruby-sinatra, ruby-sidekiq, redis-server or ab are not installed
# (tools/install-deps.sh --test installs them), or trixie's root is not made.
set -u
. "$(dirname "$0")/../tap.sh"
. "$(dirname "$0")/../rubies.sh"
. "$(dirname "$0")/../crashes.sh"
. "$(dirname "$0")/../apps.sh"

apps_cleanup() {
	apps_stop
	crashes_cleanup
}
trap apps_cleanup EXIT

crash_ok=1
crash_setup || crash_ok=0

# heap_diff DUMP TRUTH: "N A B": TRUTH's objects (dump_all's, roots and shapes aside), how
# many of DUMP's addresses it lacks, and how many of its DUMP lacks.
heap_diff() {
	local a=$RB_TMP/heap.a b=$RB_TMP/heap.b
	jq -r 'select(.address and .type != "ROOT" and .type != "SHAPE") | .address' "$1" 2>/dev/null |
		sort -u >"$a"
	jq -r 'select(.address and .type != "ROOT" and .type != "SHAPE") | .address' "$2" 2>/dev/null |
		sort -u >"$b"
	echo "$(wc -l <"$b") $(comm -23 "$a" "$b" | wc -l) $(comm -13 "$a" "$b" | wc -l)"
}

# check_process NAME PID: what every process serving the app must give (the list at the top).
check_process() {
	local name="$stack $1" w=$2 j=$dir/p$2 truth=$dir/truth t bad got want out expr value n a b
	"$RBINSPECT" --json -p "$w" threads >"$j.threads" 2>"$j.err"
	is "$(jq -r '.threads[] | select(.main) | .tid' "$j.threads")" "$w" \
		"$name: threads: the main thread's tid is the process's pid"
	bad=
	for t in $(jq -r '.threads[].tid | select(. > 0)' "$j.threads"); do
		[ -e "/proc/$w/task/$t" ] || bad="$bad $t"
	done
	is "${bad# }" "" "$name: threads: every tid ($(jq '.threads | length' "$j.threads") threads) is the process's"

	# The process's own backtraces at one instant.
	kill -PWR "$w"
	for _ in $(seq 1 100); do
		[ -f "$truth.$w" ] && [ "$(task_states "$w")" = T ] && break
		sleep 0.1
	done
	"$RBINSPECT" --json -p "$w" bt >"$j.bt" 2>"$j.err"
	if out=$(python3 "$here/tests/bt-check.py" "$truth.$w" "$j.bt" 2>&1); then
		ok "$name: bt: every thread and frame as the process's own backtraces ($(tail -n 1 <<<"$out" | cut -d: -f2-))"
	else
		not_ok "$name: bt: every thread and frame as the process's own backtraces"; diag "$out"
	fi
	kill -CONT "$w"

	if command -v strace >/dev/null; then
		strace_to "$j.strace" -e trace=ptrace -- \
			"$RBINSPECT" -p "$w" bt --native >"$j.native" 2>"$j.err"
		is "$?" 0 "$name: bt --native exits 0"
		bad=
		for t in $(sed -n 's/.*ptrace(PTRACE_SEIZE, \([0-9]*\).*/\1/p' "$j.strace" | sort -u); do
			[ -e "/proc/$w/task/$t" ] || bad="$bad $t"
		done
		is "${bad# }" "" "$name: bt --native stops no thread outside the process ($(grep -c PTRACE_SEIZE "$j.strace") seized)"
	else
		skip "$name: bt --native under strace: no strace"
	fi

	# Live RbiKeep objects, among the garbage ones the requests left: as each_object
	# counts them right after (it finishes the lazy sweep; the process is idle, so within a
	# few objects a conservatively marked machine stack may keep or let go).
	"$RBINSPECT" --json -p "$w" objects --by-class --pause --top 0 >"$j.objects" 2>"$j.err"
	got=$(jq -r '.classes[] | select(.name == "RbiKeep") | .count' "$j.objects")
	"$RBINSPECT" -p "$w" heap-dump --pause -o "$j.heap" 2>"$j.heap.err"
	kill -URG "$w"
	for _ in $(seq 1 300); do [ -f "$truth.objects.$w" ] && break; sleep 0.1; done
	want=$(awk -F'\t' '$1 == "RbiKeep" { print $2 }' "$truth.objects.$w" 2>/dev/null)
	if [ -n "$got" ] && [ -n "$want" ] && awk -v g="$got" -v w="$want" \
		'BEGIN { d = g - w; if (d < 0) d = -d; exit !(w >= 2000 && d <= 2 + w / 1000) }'; then
		ok "$name: objects --by-class --pause: $got RbiKeep, each_object's $want ($(jq .garbage "$j.objects") garbage slots left out)"
	else
		not_ok "$name: objects --by-class --pause: ${got:-no} RbiKeep where each_object counts ${want:-none}"
		diag "$(cat "$j.err")"
	fi

	# heap-dump --pause: the objects of the app's own dump_all right after (each_object
	# before it finished the lazy sweep), by address: no more than 0.1 % only in the dump
	# (garbage or made-up objects); and within 1 % the other way, the objects the app made
	# once it ran on (the signal handler's own, and a background thread's: Sidekiq's
	# heartbeat made 181-230 while an ASan build wrote its dump).
	read -r n a b < <(heap_diff "$j.heap" "$truth.heap.$w")
	if [ "$n" -gt 10000 ] && [ "$a" -le $((n / 1000)) ] && [ "$b" -le $((n / 100)) ]; then
		ok "$name: heap-dump --pause: dump_all's $n objects right after, $a only in the dump, $b only in dump_all"
	else
		not_ok "$name: heap-dump --pause: dump_all's $n objects right after, $a only in the dump, $b only in dump_all (at most $((n / 1000)) and $((n / 100)))"
		diag "$(head -n 3 "$j.heap.err")"
	fi

	# p into the app's objects, steps chained, as the app says they are (the first word
	# p prints: an Integer, true/false/nil, or a class's name).
	while IFS=$'\t' read -r _ expr value; do
		out=$("$RBINSPECT" -p "$w" p "$expr" 2>&1)
		is "$(awk '{ print $1; exit }' <<<"$out")" "$value" "$name: p $expr"
	done < <(grep '^expr' "$truth.objects.$w")
}

# ---- Rails under puma in cluster mode ------------------------------------------------------
rails_suite() {
	if ! puma_start rails puma.rb config.ru; then
		not_ok "$stack: a Rails app under puma: puma started"; diag "$(tail -n 20 "$dir/puma.log")"
	else
		local workers w core master_tasks
		workers=$(pgrep -P "$master" | sort -n | tr '\n' ' ')
		is "$(wc -w <<<"$workers")" 2 "$stack: a Rails app under puma: 2 workers"
		ab -q -n 400 -c 8 "http://127.0.0.1:$port/posts" >"$dir/ab.log" 2>&1
		like "$(cat "$dir/ab.log")" 'Failed requests: +0' "$stack: puma: 400 requests of the N+1 page served"
		master_tasks=$(ls "/proc/$master/task" | sort | tr '\n' ' ')
		for w in $workers; do
			check_process "puma worker $w" "$w"
		done
		is "$(awk '/^TracerPid:/ { print $2 }' "/proc/$master/status") $(ls "/proc/$master/task" | sort | tr '\n' ' ')" \
			"0 $master_tasks" "$stack: puma master: never traced, its threads as they were"

		# A worker killed by SIGSEGV: Ruby's [BUG] handler, then the kernel's core in puma's
		# directory.
		w=${workers%% *}
		if [ "$crash_ok" = 0 ]; then
			skip "$stack: puma worker's core: $CRASH_WHY"
		else
			kill -SEGV "$w"
			core=
			if wait_dead "$w"; then
				for _ in $(seq 1 100); do
					core=$(ls "$dir"/core* 2>/dev/null | head -n 1)
					[ -n "$core" ] && break
					sleep 0.1
				done
			fi
			if [ -z "$core" ]; then
				not_ok "$stack: puma worker $w: the kernel wrote a core"; diag "$(tail -n 5 "$dir/puma.log")"
			else
				"$RBINSPECT" --json ${sys:+--sysroot "$sys"} "$core" bt >"$dir/core.json" 2>"$dir/core.err"
				is "$(jq -r '[.threads[0].crashed, .threads[0].main, .threads[0].tid, .crash.tid] | @tsv' "$dir/core.json")" \
					"$(printf 'true\ttrue\t%s\t%s' "$w" "$w")" \
					"$stack: puma worker $w's core: its main thread crashed, by the worker's own tid"
			fi
		fi
		kill -9 "$master" $(pgrep -P "$master") 2>/dev/null
	fi
}

# ---- Sinatra under puma in single mode -----------------------------------------------------
sinatra_suite() {
	if ! puma_start sinatra puma-single.rb sinatra.ru; then
		not_ok "$stack: a Sinatra app under puma (single mode): puma started"; diag "$(tail -n 20 "$dir/puma.log")"
	else
		is "$(pgrep -P "$master" | wc -l)" 0 "$stack: a Sinatra app under puma: single mode, no workers"
		ab -q -n 400 -c 8 "http://127.0.0.1:$port/items" >"$dir/ab.log" 2>&1
		like "$(cat "$dir/ab.log")" 'Failed requests: +0' "$stack: puma: 400 requests of the Sinatra JSON page served"
		check_process "puma (single mode, Sinatra) $master" "$master"
	fi
}

# ---- Sidekiq on redis-server ---------------------------------------------------------------
sidekiq_suite() {
	if ! sidekiq_start; then
		not_ok "$stack: a Sidekiq app: sidekiq started"; diag "$(tail -n 20 "$dir/sidekiq.log" "$dir/redis.log")"
	else
		"${run[@]}" ruby "$app_in/sidekiq-app.rb" 400 >"$dir/enqueue.log" 2>&1
		for _ in $(seq 1 120); do
			[ "$(grep -c 'INFO: done' "$dir/sidekiq.log")" -ge 400 ] && break
			sleep 0.5
		done
		is "$(grep -c 'INFO: done' "$dir/sidekiq.log")" 400 "$stack: sidekiq: 400 jobs done"
		check_process "sidekiq $master" "$master"
	fi
}

# ---- bookworm's stack on the host, trixie's in its root -------------------------------------
if stack_bookworm; then
	rails_suite; sinatra_suite; sidekiq_suite
else
	skip "bookworm's Rails, Sinatra and Sidekiq apps: $stack_why"
fi
if stack_trixie; then
	rails_suite; sinatra_suite; sidekiq_suite
else
	skip "trixie's Rails, Sinatra and Sidekiq apps: $stack_why"
fi
tap_done
