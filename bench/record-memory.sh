#!/usr/bin/env bash
# bench/record-memory.sh [SECONDS] [RATE]: what a recording's length costs in memory.
# testdata/programs/bench-threads.rb parks 10 threads 50 frames deep (few distinct stacks);
# `rbinspect record --idle` samples all 11 threads at RATE Hz (default 1000) for SECONDS
# (default 3) and for ten times as long, once writing a flame graph (the samples summed by
# stack as they come) and once the raw profile (every sample kept, in order), and reports
# rbinspect's peak RSS (GNU time's maximum resident set) of each and the ratio long/short:
# flat (about 1) for the flame graph, growing with the samples (32 bytes each) for raw;
# and the same of `rbinspect top` (refreshed every second, off a terminal), which keeps
# one interval of samples: flat.
# On the test Rubies RBI_TEST_RUBIES picks (the first one); the machine's load moves the
# sample counts, so compare ratios.  Run by hand; not a test.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
short=${1:-3}
rate=${2:-1000}
runs=1
. "$here/bench/common.sh"
command -v /usr/bin/time >/dev/null || { echo "bench/record-memory.sh: needs GNU time (apt-get install time)" >&2; exit 1; }

# peak FORMAT SECONDS: "KIB STACKS" of one recording of $RB_PID (FORMAT top: of top, whose
# last screen counts the samples).
peak() {
	local out=$RB_TMP/mem.$1
	if [ "$1" = top ]; then
		/usr/bin/time -f 'peak %M' -o "$out.time" "$RBINSPECT" top -p "$RB_PID" --idle \
			--rate "$rate" --duration "$2" >"$out" 2>"$out.stats"
		echo "$(awk '/^peak/ { print $2 }' "$out.time") $(sed -n 's/^process [0-9]*, Ruby [^:]*: \([0-9]*\) samples.*/\1/p' "$out" | tail -1)"
		return
	fi
	/usr/bin/time -f 'peak %M' -o "$out.time" "$RBINSPECT" record -p "$RB_PID" --idle \
		--rate "$rate" --duration "$2" --format "$1" -o "$out" 2>"$out.stats"
	echo "$(awk '/^peak/ { print $2 }' "$out.time") $(sed -n 's/^samples: .* Hz: \([0-9]*\) stacks.*/\1/p' "$out.stats")"
}

read -r kind ver root cmd < <(rubies_list | head -1)
ruby_start "$kind" "$root" "$cmd" bench-threads.rb >/dev/null
printf '%-12s %-10s %10s %10s %10s %10s %10s %10s\n' ruby format "short s" "short KiB" stacks \
	"long KiB" stacks long/short
for format in flamegraph raw top; do
	read -r ks ss < <(peak "$format" "$short")
	read -r kl sl < <(peak "$format" "$((short * 10))")
	printf '%-12s %-10s %10s %10s %10s %10s %10s %10s\n' "$kind $ver" "$format" "$short" \
		"$ks" "$ss" "$kl" "$sl" "$(ratio "$kl" "$ks")"
done
kill -9 "$RB_PID"
