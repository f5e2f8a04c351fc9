#!/usr/bin/env bash
# bench/apps-overhead.sh [SECONDS] [ROUNDS]: what `record` costs a real application, in the
# requests per second it serves.  The Rails app of tests/integration/apps.sh under puma (2
# workers of 5 threads, each stack of tests/apps.sh) is loaded by ab (4 clients on the N+1
# page, /posts) for SECONDS (default 10) at a time, ROUNDS times (default 5) of each mode, the
# modes interleaved (none, 100 Hz, none, 1 kHz, ...) so that the machine's drift falls on all
# of them alike:
#   none      no profiler;
#   100 Hz    `record -p MASTER --subprocesses --rate 100` (both workers and the master);
#   1 kHz     the same at 1000 Hz.
# Prints per stack and mode the median requests per second and its ratio to none's median
# (goal: >= 0.98 at 100 Hz), the spread (min-max), and rbinspect's own CPU time over the
# round as a share of one CPU (median): a figure the machine's noise moves far less.  On a
# 2-CPU machine ab, the two workers and rbinspect share the CPUs: the figure is what a busy
# small box pays.  Run by hand on a quiet machine; not a test.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-10}
rounds=${2:-5}
runs=1
. "$here/bench/common.sh"
. "$here/tests/apps.sh"
trap 'apps_stop; rubies_cleanup' EXIT

# rps URL: ab's requests per second over $secs.
rps() {
	ab -q -t "$secs" -n 100000000 -c 4 "$1" 2>/dev/null |
		awk '/^Requests per second:/ { print $4 }'
}

# stats VALUES...: "median min max".
stats() {
	printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END {
		printf "%s %s %s", v[int((NR + 1) / 2)], v[1], v[NR] }'
}

overhead_stack() {
	local url mode r rec i cpu none=() hz100=() hz1000=() cpu100=() cpu1000=()
	if ! puma_start rails puma.rb config.ru; then
		echo "skip  $stack: puma did not start: $(tail -n 3 "$dir/puma.log")"; return
	fi
	url="http://127.0.0.1:$port/posts"
	rps "$url" >/dev/null       # warm: routes, templates, the database's pages
	for i in $(seq "$rounds"); do
		for mode in none 100 none 1000; do
			rec=
			if [ "$mode" != none ]; then
				"$RBINSPECT" record -p "$master" --subprocesses --rate "$mode" \
					-d $((secs + 30)) -f folded -o "$RB_TMP/o.folded" -q \
					2>"$RB_TMP/record.err" &
				rec=$!
				sleep 1         # attached to every process before the load
			fi
			r=$(rps "$url")
			if [ -n "$rec" ]; then
				# Its user and system ticks (every thread's) over the round.
				cpu=$(awk -v hz="$(getconf CLK_TCK)" -v s=$((secs + 1)) \
					'{ printf "%.1f", ($14 + $15) / hz / s * 100 }' "/proc/$rec/stat")
				kill -INT "$rec" 2>/dev/null
				wait "$rec" || echo "  record at $mode Hz exited $?:" \
					"$(head -n 2 "$RB_TMP/record.err")" >&2
				[ -s "$RB_TMP/o.folded" ] ||
					echo "  record at $mode Hz wrote no profile" >&2
				rm -f "$RB_TMP/o.folded"
			fi
			case $mode in
			none) none+=("$r") ;;
			100) hz100+=("$r"); cpu100+=("$cpu") ;;
			1000) hz1000+=("$r"); cpu1000+=("$cpu") ;;
			esac
		done
	done
	apps_stop
	masters=
	read -r base bmin bmax <<<"$(stats "${none[@]}")"
	printf '%-14s %-8s %8s %6s %17s %7s\n' "$stack" none "$base" 1.00 "$bmin-$bmax" -
	for mode in 100 1000; do
		if [ "$mode" = 100 ]; then set -- "${hz100[@]}"; else set -- "${hz1000[@]}"; fi
		read -r med min max <<<"$(stats "$@")"
		if [ "$mode" = 100 ]; then set -- "${cpu100[@]}"; else set -- "${cpu1000[@]}"; fi
		read -r cpu _ <<<"$(stats "$@")"
		printf '%-14s %-8s %8s %6s %17s %6s%%\n' "$stack" "$mode Hz" "$med" \
			"$(ratio "$med" "$base")" "$min-$max" "$cpu"
	done
}

printf '%-14s %-8s %8s %6s %17s %7s\n' STACK MODE "req/s" ratio "min-max" "rbi CPU"
stack_bookworm && overhead_stack || echo "skip  bookworm: ${stack_why:-}"
stack_trixie && overhead_stack || echo "skip  trixie: ${stack_why:-}"
