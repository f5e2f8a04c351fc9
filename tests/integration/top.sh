# top.sh: `top` on a terminal (tmux send-keys / capture-pane), on the first test Ruby:
# its header, and its keys (s: sort by own or total time, p: pause the display, r: reset,
# c: cumulative or last interval, q: quit); --sort off a terminal.  What is checked is what
# the keys do to the screen, never the shares (bench/profile.sh measures them).
set -u
. "$(dirname "$0")/../tap.sh"
. "$(dirname "$0")/../rubies.sh"
. "$(dirname "$0")/../tmux.sh"
tmux_start "the keys need a terminal"

# screen: what the pane shows now.
screen() { tm capture-pane -p -t top; }
# wait_for REGEX [TENTHS]: until a line of the pane matches.
wait_for() {
	for _ in $(seq 1 "${2:-100}"); do
		screen | grep -qE -- "$1" && return 0
		sleep 0.1
	done
	return 1
}
# row1: the method of the first row
row1() { screen | awk '/%SELF/ { getline; print $5; exit }'; }
# nsamples: the samples the header counts
nsamples() { screen | sed -n 's/^process [0-9]*, Ruby [^:]*: \([0-9]*\) samples.*/\1/p'; }

read -r kind ver root cmd < <(rubies_list)
R="$kind $ver"
if ! ruby_start "$kind" "$root" "$cmd" hot.rb; then
	not_ok "$R: hot.rb did not start"
	tap_done
	exit
fi
tm new-session -d -s top -x 150 -y 50 \
	"$(printf '%q ' "$RBINSPECT" top -p "$RB_PID" --rate 200); echo EXITED:\$?; sleep 600"

if wait_for 'cumulative, by own time' && wait_for '^threads 1, GVL held [0-9.]+%, idle [0-9.]+%, [0-9]+ samples/s; torn [0-9]+, errors [0-9]+, late [0-9]+ \(missed [0-9]+\)$' &&
   wait_for '^keys: s sort own/total, p pause, r reset, c cumulative/interval, q quit$' &&
   [ "$(row1)" = 'Hot#spin' ]; then
	ok "$R: top on a terminal: the header (threads, GVL, idle, rate, losses), the keys, by own time"
else
	not_ok "$R: top's first screen"; diag "$(screen)"
fi

tm send-keys -t top s
if wait_for 'cumulative, by total time' && wait_for '^ +[0-9.]+% +100\.0% .*<main>'; then
	ok "$R: s sorts by total time: <main> on top at 100 %"
else
	not_ok "$R: s: by total time"; diag "$(screen)"
fi

tm send-keys -t top c
if wait_for 'last interval, by total time'; then
	ok "$R: c shows the last interval"
else
	not_ok "$R: c: last interval"; diag "$(screen)"
fi
tm send-keys -t top c
wait_for 'cumulative, by total time'

tm send-keys -t top p
if wait_for ', paused\)'; then
	before=$(screen)
	sleep 2.5
	if [ "$(screen)" = "$before" ]; then
		ok "$R: p pauses the display"
	else
		not_ok "$R: p: the display moved while paused"; diag "$(screen)"
	fi
else
	not_ok "$R: p: not paused"; diag "$(screen)"
fi
tm send-keys -t top p
wait_for 'by total time\)$'

# Reset: the next screen counts only what came after it.
sleep 2.5
n=$(nsamples)
tm send-keys -t top r
for _ in $(seq 1 50); do
	m=$(nsamples)
	[ -n "$m" ] && [ -n "$n" ] && [ "$m" -lt "$n" ] && break
	sleep 0.1
done
if [ -n "$m" ] && [ -n "$n" ] && [ "$m" -lt "$n" ]; then
	ok "$R: r resets: $n samples, then $m"
else
	not_ok "$R: r: $n samples, then ${m:-?}"; diag "$(screen)"
fi

tm send-keys -t top q
if wait_for '^EXITED:0$' 30; then
	ok "$R: q quits, exit 0"
else
	not_ok "$R: q: still running"; diag "$(screen)"
fi

# Off a terminal: --sort, and no keys line.
"$RBINSPECT" top -p "$RB_PID" --rate 200 --duration 1.3 --interval 1 --sort total >"$RB_TMP/top.txt" 2>&1
if awk '/%SELF/ { getline; exit !($2 == "100.0%") }' "$RB_TMP/top.txt" &&
   grep -q 'cumulative, by total time)$' "$RB_TMP/top.txt" && ! grep -q '^keys:' "$RB_TMP/top.txt"; then
	ok "$R: top --sort total off a terminal: by total time, no keys"
else
	not_ok "$R: top --sort total"; diag "$(cat "$RB_TMP/top.txt")"
fi
# Every refresh of the duration, the one it ends on too (as top -b -n 2).
"$RBINSPECT" top -p "$RB_PID" --rate 200 --duration 2 --interval 1 >"$RB_TMP/top2.txt" 2>&1
is "$(grep -c '^process ' "$RB_TMP/top2.txt")" 2 "$R: top --duration 2 --interval 1 off a terminal: two refreshes"
"$RBINSPECT" top -p "$RB_PID" --sort most >/dev/null 2>"$RB_TMP/err"
is "$?" 2 "$R: top --sort most: usage error"
tap_done
