#!/usr/bin/env bash
# bench/objects.sh: how fast `rbinspect objects` counts a big heap from outside, against the
# target counting itself.
#
# usage: bench/objects.sh [SCALE] [RUNS]     (env: RBINSPECT, RUBIES="deb 3.4.11 ...")
#   Starts testdata/programs/objects.rb with SCALE (default 20: about 1.3 million live
#   objects) on every test Ruby (tools/test-rubies.sh --list; RUBIES filters by "KIND VERSION"
#   prefixes), then runs `rbinspect -p PID objects` RUNS times (default 5) one after
#   another, RUNS more under /usr/bin/time -v, and prints per Ruby, medians over the runs:
#     slots        heap slots walked (ObjectSpace.count_objects' TOTAL)
#     in-proc ms   the target's own ObjectSpace.count_objects, timed inside it after GC.start
#     walk ms      rbinspect's heap walk (its "walk_us")
#     total ms     the whole rbinspect command: start, attach, locate the VM, walk, print
#                  (the shell's fork and exec included; bare /bin/true, the floor of any
#                  command, is printed first)
#     1st ms       the first of those runs (the machine busy with other things just before)
#     walk/in      walk time over the in-process count time
#     total/in     the whole command's time over the in-process count time
#     Mslots/s     slots per second of the walk
#     MB read      target memory read by the walk
#     RSS MB       rbinspect's maximum resident set size
#   and the same for `objects --by-class` (walk + class names).
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/tests/tap.sh"
. "$here/tests/rubies.sh"
SCALE=${1:-20}
RUNS=${2:-5}
RUBIES=${RUBIES:-}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# run_one LABEL IN_US ARGS...: RUNS timed runs one after another (as the target timed its
# own count: the median of back-to-back runs), then RUNS more for the RSS; prints the figures.
run_one() {
	local label=$1 in_us=$2; shift 2
	local walks=() totals=() rss=() slots bytes t0 t1 i
	for i in $(seq 1 "$RUNS"); do
		# Timed alone, output to a file: a pipe's reader or /usr/bin/time would run
		# beside it on this machine's two CPUs.
		t0=$EPOCHREALTIME
		"$RBINSPECT" --json -p "$RB_PID" objects "$@" >"$RB_TMP/bench.$i.json" ||
			{ echo "rbinspect failed" >&2; return 1; }
		t1=$EPOCHREALTIME
		totals+=($(( ${t1/./} - ${t0/./} )))
	done
	for i in $(seq 1 "$RUNS"); do
		walks+=("$(jq -r .walk_us "$RB_TMP/bench.$i.json")")
		/usr/bin/time -v -o "$RB_TMP/time.txt" "$RBINSPECT" -p "$RB_PID" objects "$@" >/dev/null
		rss+=("$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$RB_TMP/time.txt")")
	done
	slots=$(jq -r .counts.TOTAL "$RB_TMP/bench.1.json")
	bytes=$(jq -r .bytes_read "$RB_TMP/bench.1.json")
	local walk total maxrss
	walk=$(printf '%s\n' "${walks[@]}" | median)
	total=$(printf '%s\n' "${totals[@]}" | median)
	maxrss=$(printf '%s\n' "${rss[@]}" | sort -n | tail -1)
	awk -v l="$label" -v s="$slots" -v in_us="$in_us" -v w="$walk" -v t="$total" \
		-v f="${totals[0]}" -v b="$bytes" -v r="$maxrss" 'BEGIN {
		printf "%-24s %9d %10.1f %9.1f %9.1f %8.1f %7.2f %8.2f %9.1f %8.1f %7.1f\n", l, s,
			in_us / 1000, w / 1000, t / 1000, f / 1000, w / in_us, t / in_us,
			s / (w / 1e6) / 1e6, b / 1048576, r / 1024 }'
}

floor=$(for _ in $(seq 1 20); do t0=$EPOCHREALTIME; /bin/true; t1=$EPOCHREALTIME
	echo $(( ${t1/./} - ${t0/./} )); done | median)
echo "# /bin/true: $(awk -v f="$floor" 'BEGIN { printf "%.2f", f / 1000 }') ms (median of 20)"
printf '%-24s %9s %10s %9s %9s %8s %7s %8s %9s %8s %7s\n' RUBY slots "in-proc ms" "walk ms" \
	"total ms" "1st ms" walk/in total/in Mslots/s "MB read" "RSS MB"
while read -r kind ver root cmd; do
	if [ -n "$RUBIES" ] && ! grep -q "$kind $ver" <<<"$RUBIES"; then continue; fi
	if ! SCALE=$SCALE ruby_start "$kind" "$root" "$cmd" objects.rb; then
		echo "$kind $ver: objects.rb did not start" >&2; continue
	fi
	in_us=$(grep -h '^COUNT_OBJECTS_US' "$RB_TMP"/objects.*.out | tail -1 | awk '{ print $2 }')
	rm -f "$RB_TMP"/objects.*.out
	run_one "$kind $ver" "$in_us"
	run_one "$kind $ver --by-class" "$in_us" --by-class
	kill -9 "$RB_PID"
done < <(rubies_list)
