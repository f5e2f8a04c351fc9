# ps.sh: `rbinspect ps` lists the Ruby processes the test started (every
# test Ruby, one in its own pid namespace), each with its version as the
# test-rubies list names it, its threads, RSS, uptime and command line as
# /proc has them, and does not list a process that is not Ruby even when
# its command line says "ruby".  Text and JSON; a command line's control
# characters are escaped; other Rubies on the machine may be listed too.
set -u
. "$(dirname "$0")/../tap.sh"
. "$(dirname "$0")/../rubies.sh"

started=()      # "PID VERSION" of the Rubies started here
while read -r kind ver root cmd; do
	if ruby_start "$kind" "$root" "$cmd" simple.rb; then
		started+=("$RB_PID $ver")
	else
		not_ok "$kind $ver: simple.rb did not start"
	fi
done < <(rubies_list)
read -r kind ver root cmd < <(rubies_list | awk '$1 == "deb"' | tail -1)
ns_pid= ns_why="no Debian Ruby in this list"
if [ -n "$kind" ] && ! ns_why=$(no_ns) && ruby_start "$kind" "$root" "$cmd" simple.rb ns; then
	ns_pid=$RB_PID
	started+=("$RB_PID $ver")
fi
# Not Ruby, though its command line begins with "ruby".
bash -c 'exec -a ruby sleep 300' &
fake=$!
RB_PIDS+=("$fake")
# A Ruby whose command line holds an escape sequence.
read -r kind ver root cmd < <(rubies_list | awk '$1 != "deb"' | head -1)
esc=
if [ -n "$kind" ]; then
	"$cmd" -e 'sleep' -- $'\e[31mred' &
	esc=$!
	RB_PIDS+=("$esc")
fi
# rbinspect recording one of them maps its libruby to read it, not to run it: no Ruby.
recorder=
if [ ${#started[@]} -gt 0 ]; then
	"$RBINSPECT" record -p "${started[0]% *}" -d 30 -q -o "$RB_TMP/rec.svg" 2>/dev/null &
	recorder=$!
	RB_PIDS+=("$recorder")
fi
sleep 1

start=$(date +%s%N)
"$RBINSPECT" --json ps >"$RB_TMP/ps.json" 2>"$RB_TMP/ps.err"
rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
is "$rc" 0 "ps --json: exit 0"
check "ps --json: in ${ms} ms (under 3 s: nothing is attached)" test "$ms" -lt 3000
for s in "${started[@]}"; do
	pid=${s% *} v=${s#* }
	got=$(jq -c --argjson p "$pid" '.processes[] | select(.pid == $p)' "$RB_TMP/ps.json")
	if [ -z "$got" ]; then
		not_ok "ps lists $pid (Ruby $v)"; diag "$(cat "$RB_TMP/ps.err")"; continue
	fi
	threads=$(awk '$1 == "Threads:" { print $2 }' "/proc/$pid/status")
	is "$(jq -r '"\(.version) \(.threads) \(.cmdline | test("simple\\.rb$")) \(.rss_bytes > 0) \(.uptime_ms > 0)"' <<<"$got")" \
		"$v $threads true true true" "ps lists $pid: version $v, its $threads threads, command line, RSS, uptime"
	if [ "$pid" = "$ns_pid" ]; then
		is "$(jq -r '"\(.container) \(.ns_pid)"' <<<"$got")" "true 1" "ps: $pid is in a container, pid 1 there"
	else
		is "$(jq -r '"\(.container) \(.ns_pid)"' <<<"$got")" "false $pid" "ps: $pid is in our pid namespace"
	fi
done
if [ -n "$recorder" ]; then
	if grep -q 'libruby' "/proc/$recorder/maps" 2>/dev/null; then
		is "$(jq --argjson p "$recorder" '[.processes[] | select(.pid == $p)] | length' "$RB_TMP/ps.json")" 0 \
			"ps does not list an rbinspect record that maps the target's libruby to read it"
	else
		skip "ps and a recorder: rbinspect record had not mapped libruby (it reads the target's image from memory)"
	fi
	kill "$recorder" 2>/dev/null
fi
is "$(jq --argjson p "$fake" '[.processes[] | select(.pid == $p)] | length' "$RB_TMP/ps.json")" 0 \
	"ps does not list sleep started as \"ruby\" (not Ruby)"
is "$(jq 'all(.processes[]; .image | test("/(lib)?ruby[^/]*$"))' "$RB_TMP/ps.json")" true \
	"ps lists no process that is not Ruby"

"$RBINSPECT" ps >"$RB_TMP/ps.txt" 2>&1
is "$?" 0 "ps: exit 0"
check "ps: a header line" grep -qE '^ +PID +RUBY +UPTIME +RSS +THREADS +COMMAND$' "$RB_TMP/ps.txt"
pid=${started[0]% *} v=${started[0]#* }
check "ps: one line for $pid with its version" grep -qE "^ +$pid +$v +" "$RB_TMP/ps.txt"
if [ -n "$ns_pid" ]; then
	check "ps: the container's process says so" \
		grep -qE "^ +$ns_pid .*simple\\.rb  \\[container: pid 1 there\\]$" "$RB_TMP/ps.txt"
else
	skip "ps: the container's process: ${ns_why:-it did not start in a namespace}"
fi
if [ -n "$esc" ]; then
	check "ps: a command line's escape sequence is escaped" \
		grep -qE "^ +$esc .* -- \\\\e\\[31mred$" "$RB_TMP/ps.txt"
	check "ps: no raw escape byte reaches the output" bash -c "! grep -q \$'\\x1b' '$RB_TMP/ps.txt'"
else
	skip "ps: escaping (no DWARF Ruby to start directly)"
fi
"$RBINSPECT" ps bogus >/dev/null 2>"$RB_TMP/bad.err"
is "$?:$(wc -l <"$RB_TMP/bad.err")" "2:1" "ps with an argument: one line, exit 2"
printf 'ps\nquit\n' | "$RBINSPECT" -p "$pid" >"$RB_TMP/session.txt" 2>&1
check "ps in a session on a target" grep -qE "^ +$pid +$v +" "$RB_TMP/session.txt"
tap_done
