#!/usr/bin/env bash
# bench/profile.sh [RUBY]: what sampling costs, on one test Ruby (default: Debian's stripped
# 3.3, as in production; any KIND-VERSION prefix of tools/test-rubies.sh --list or
# --list-variants, e.g. yjit-3.4).
#   1. per-sample cost, warm, of a 50-frame stack (testdata/programs/hot.rb with
#      RBI_HOT_DEPTH=42), sampled back to back by bench/sample-cost.c (public API only):
#      median, mean, p99, and the highest rate one thread of rbinspect reaches;
#   2. the target's slowdown: bench/cpu.rb (fib, 65 frames deep, ~3 s) run alone and run while
#      `rbinspect record` samples it at 1 kHz, alternating, 5 runs each, medians;
#   3. rbinspect's own CPU at 100 Hz: `record --rate 100 --duration 10` on hot.rb, CPU time
#      (user + system) less that of a near-zero recording (opening the target), per second;
#   4. how much of a moving stack survives: testdata/programs/recurse.rb's share of samples
#      30+ frames deep, recorded without stopping it, against `record --pause` (every stack
#      read whole) in the same run.  tests/integration/profile.sh only checks a floor;
#   5. what the totals add up to: wall time with --idle (and the late ticks' missed
#      periods, in no sample) against the recorded window, on
#      hot.rb (always busy) and testdata/programs/duty.rb (busy a quarter of the time), and
#      --mode cpu against the CPU time /proc/PID/stat counts for the process over the same
#      recording (scaled from the whole `record` run to its window: the target is opened
#      before the clock starts).  Goal: within 2 %;
#   6. hot.rb's split (4:1, so Hot#spin 80 % of Hot#spin + Cold#walk), by samples and by time:
#      recorded as it runs, with --pause, in forker.rb's workers (--subprocesses) and started
#      by record (-- COMMAND).  tests/integration/profile.sh only checks Hot#spin ahead;
#   7. how soon a forked worker is sampled: forker.rb forks its 2 workers 3 s after it
#      started, 2 s into `record -p --subprocesses` (4 s); from each fork (the program's
#      CLOCK_MONOTONIC, the clock of the samples) to that worker's first sample, 3 runs,
#      median and max.  A worker reuses the DWARF layout read for its parent: compare builds
#      on the same machine and load, ratios only (tests/integration/profile.sh checks that
#      every worker is sampled).
# Prints the figures and ratios.  Run by hand on a quiet machine; not a test.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${RBI_BUILD:-$here/build}
rbinspect=${RBINSPECT:-$build/repl/rbinspect}
want=${1:-deb-3.3}
tmp=$(mktemp -d /tmp/rbi-bench.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT

line=$({ bash "$here/tools/test-rubies.sh" --list; bash "$here/tools/test-rubies.sh" --list-variants; } | awk -v w="$want" 'index($1 "-" $2, w) == 1 { print; exit }')
[ -n "$line" ] || { echo "bench/profile.sh: no test Ruby $want (tools/test-rubies.sh --list)" >&2; exit 1; }
read -r kind ver root cmd <<<"$line"

# ruby_run OUT FILE ARGS...: start a Ruby program (env passes through) in the background;
# its pid in $pid once it printed READY.
ruby_run() {
	local out=$1 file=$2; shift 2
	if [ "$kind" = deb ]; then
		mkdir -p "$root/tmp/rbi-bench"
		cp -r "$here/testdata/programs/." "$here/bench/cpu.rb" "$root/tmp/rbi-bench/"
		chroot "$root" /usr/bin/ruby "/tmp/rbi-bench/$(basename "$file")" "$@" >"$out" 2>&1 &
	else
		"$cmd" "$file" "$@" >"$out" 2>&1 &
	fi
	pid=$!
	pids+=("$pid")
	for _ in $(seq 100); do grep -q READY "$out" && break; sleep 0.05; done
}
# cpu_of CMD...: CPU seconds (user + system) CMD used.
cpu_of() {
	python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.4f" % (r.ru_utime + r.ru_stime))' "$@"
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "Ruby: $kind $ver; machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
cc -O2 -o "$tmp/sample-cost" "$here/bench/sample-cost.c" -I"$here/include" -I"$build/include" \
	-L"$build" -lruby-introspect -Wl,-rpath,"$build"

# 1. Per-sample cost.
RBI_HOT_DEPTH=42 ruby_run "$tmp/hot.out" "$here/testdata/programs/hot.rb"
sleep 0.5
"$tmp/sample-cost" "$pid" 5 >"$tmp/cost"
cat "$tmp/cost" | sed 's/^/  /'
kill "$pid"
awk '$1 == "median_us" { m = $2 } $1 == "samples_per_s" { r = $2 } $1 == "frames" { f = $2 }
     END { printf "1. warm sample of a %d-frame stack: median %.2f us (goal <= 5: %.2fx the goal); max rate %d/s on one thread (goal >= 20000: %.1fx)\n", f, m, m / 5, r, r / 20000 }' "$tmp/cost"

# 2. Target slowdown at 1 kHz.
alone=() sampled=()
for i in 1 2 3 4 5; do
	ruby_run "$tmp/a$i" "$here/bench/cpu.rb" 600 0.3
	wait "$pid" 2>/dev/null || true
	alone+=("$(awk '/^elapsed/ { print $2 }' "$tmp/a$i")")
	ruby_run "$tmp/s$i" "$here/bench/cpu.rb" 600 0.3
	"$rbinspect" record -p "$pid" --rate 1000 --format folded -o "$tmp/s$i.folded" 2>"$tmp/s$i.stats" || true
	wait "$pid" 2>/dev/null || true
	sampled+=("$(awk '/^elapsed/ { print $2 }' "$tmp/s$i")")
done
a=$(printf '%s\n' "${alone[@]}" | median)
s=$(printf '%s\n' "${sampled[@]}" | median)
echo "  alone:   ${alone[*]}"
echo "  sampled: ${sampled[*]}"
sed 's/^/  last sampled run: /' "$tmp/s5.stats" | grep -v wrote
awk -v a="$a" -v s="$s" 'BEGIN { printf "2. target slowdown at 1 kHz: %.3f s alone, %.3f s sampled (medians of 5): %+.2f%% (goal <= 1%%)\n", a, s, 100 * (s - a) / a }'

# 3. rbinspect's own CPU at 100 Hz.
ruby_run "$tmp/hot2.out" "$here/testdata/programs/hot.rb"
sleep 0.3
base=$(cpu_of "$rbinspect" record -p "$pid" --duration 0.01 --format folded -o "$tmp/c0" -q)
run=$(cpu_of "$rbinspect" record -p "$pid" --rate 100 --duration 10 --format folded -o "$tmp/c1" -q)
kill "$pid"
awk -v b="$base" -v r="$run" 'BEGIN { printf "3. rbinspect at 100 Hz for 10 s: %.3f s CPU (%.3f s of it opening the target): %.3f%% of a core while sampling (goal <= 1%%)\n", r, b, 100 * (r - b) / 10 }'

# 4. Deep stacks of a recursion kept, against a paused recording.
deep_share() {
	awk '{ n = gsub(/Object#r/, "&"); t += $NF; if (n >= 30) d += $NF }
	     END { if (t) printf "%.1f\n", 100 * d / t; else print 0 }' "$1"
}
ruby_run "$tmp/rec.out" "$here/testdata/programs/recurse.rb"
"$rbinspect" record -p "$pid" --duration 3 --rate 1000 --no-lines --format folded -o "$tmp/r1" -q
"$rbinspect" record -p "$pid" --duration 3 --rate 200 --pause --no-lines --format folded -o "$tmp/r0" -q
kill "$pid"
awk -v s="$(deep_share "$tmp/r1")" -v p="$(deep_share "$tmp/r0")" 'BEGIN {
	printf "4. recursion 30+ deep: %.1f%% of samples unpaused, %.1f%% paused: %.2fx the paused share (goal >= 0.5x)\n", s, p, p ? s / p : 0 }'

# 5. Totals: wall against the window, CPU against the kernel's count.
ticks=$(getconf CLK_TCK)
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# totals PROGRAM: wall and CPU recordings of it, 3 s each
totals() {
	local prog=$1 name win win_cpu t0 t1 c0 c1 wall cpu proc_cpu
	name=$(basename "$prog" .rb)
	ruby_run "$tmp/$name.out" "$prog"
	sleep 0.3
	"$rbinspect" record -p "$pid" --duration 3 --idle --format folded -o "$tmp/$name.wall" \
		--raw "$tmp/$name.wall.raw" -q
	win=$(sed -n 's/^m\tduration\t//p' "$tmp/$name.wall.raw")
	# Plus what late ticks missed (ticks.c: in no sample): the x line's missed ticks times
	# the period.
	wall=$(awk '{ c += $NF } END { print c / 1e6 }' "$tmp/$name.wall")
	wall=$(awk -F'\t' -v w="$wall" '$1 == "m" && $2 == "rate" { r = $3 } $1 == "x" { m = $12 }
		END { printf "%.6f", w + (r ? m / r : 0) }' "$tmp/$name.wall.raw")
	c0=$(cpu_ticks "$pid"); t0=$(date +%s%N)
	"$rbinspect" record -p "$pid" --duration 3 --mode cpu --format folded -o "$tmp/$name.cpu" \
		--raw "$tmp/$name.cpu.raw" -q
	t1=$(date +%s%N); c1=$(cpu_ticks "$pid")
	kill "$pid"
	cpu=$(awk '{ c += $NF } END { print c / 1e6 }' "$tmp/$name.cpu")
	win_cpu=$(sed -n 's/^m\tduration\t//p' "$tmp/$name.cpu.raw")
	proc_cpu=$(awk -v c="$((c1 - c0))" -v hz="$ticks" -v w="$win_cpu" -v el="$(( (t1 - t0) / 1000 ))" \
		'BEGIN { printf "%.3f", c / hz * w / (el / 1e6) }')
	awk -v n="$name" -v w="$wall" -v win="$win" -v c="$cpu" -v p="$proc_cpu" 'BEGIN {
		printf "5. %s: wall (--idle) %.3f s in a %.3f s window: %+.2f%%; CPU %.3f s, /proc %.3f s: %+.2f%% (goal within 2%%)\n",
			n, w, win, 100 * (w - win) / win, c, p, (p > 0 ? 100 * (c - p) / p : 0) }'
}
totals "$here/testdata/programs/hot.rb"
totals "$here/testdata/programs/duty.rb"

# 6. hot.rb's split.
# hot_share FOLDED: Hot#spin's share of Hot#spin + Cold#walk
hot_share() {
	awk '{ c = $NF; if ($0 ~ /Hot#spin[^;]* [0-9]+$/) h += c; else if ($0 ~ /Cold#walk[^;]* [0-9]+$/) w += c }
	     END { printf "%.1f", (h + w) ? 100 * h / (h + w) : 0 }' "$1"
}
# split NAME RAW: hot_share of RAW by samples (every weight set to 1 us) and by time
split() {
	awk -F'\t' 'BEGIN { OFS = "\t" } $1 == "s" { $8 = 1000 } 1' "$2" >"$2.n"
	"$rbinspect" report "$2" --format folded --no-lines -o "$2.t" -q
	"$rbinspect" report "$2.n" --format folded --no-lines -o "$2.s" -q
	echo "6. hot.rb $1: Hot#spin $(hot_share "$2.s") % of the samples, $(hot_share "$2.t") % of the time (want 80)"
}
ruby_run "$tmp/hot3.out" "$here/testdata/programs/hot.rb"
sleep 0.3
"$rbinspect" record -p "$pid" --duration 3 --rate 400 --format raw -o "$tmp/split.raw" -q
split "as it runs, 400 Hz" "$tmp/split.raw"
"$rbinspect" record -p "$pid" --duration 3 --rate 300 --pause --format raw -o "$tmp/splitp.raw" -q
split "with --pause, 300 Hz" "$tmp/splitp.raw"
kill "$pid"
ruby_run "$tmp/fork.out" "$here/testdata/programs/forker.rb"
"$rbinspect" record -p "$pid" --subprocesses --duration 3 --rate 250 --format raw -o "$tmp/splitf.raw" -q
kill -TERM "$pid"
split "in forker.rb's workers (--subprocesses), 250 Hz" "$tmp/splitf.raw"
if [ "$kind" = deb ]; then
	set -- chroot "$root" /usr/bin/ruby /tmp/rbi-bench/hot.rb 3
else
	set -- "$cmd" "$here/testdata/programs/hot.rb" 3
fi
"$rbinspect" record --rate 400 --format raw -o "$tmp/splitc.raw" -q -- "$@" >/dev/null
split "started by record (-- COMMAND), 400 Hz" "$tmp/splitc.raw"

# ---- 7. fork to first sample ---------------------------------------------------------------
if [ "$kind" = deb ]; then
	truth_in=/tmp/rbi-bench/fork.truth truth=$root/tmp/rbi-bench/fork.truth
	set -- chroot "$root" /usr/bin/ruby /tmp/rbi-bench/forker.rb
else
	truth_in=$tmp/fork.truth truth=$tmp/fork.truth
	set -- "$cmd" "$here/testdata/programs/forker.rb"
fi
for run in 1 2 3; do
	rm -f "$truth"
	# Recorded from 1 s in, so the parent is sampled (its layout read) before it forks.
	FORK_DELAY=3 RBI_TRUTH=$truth_in "$@" >/dev/null 2>&1 &
	pid=$!
	pids+=("$pid")
	sleep 1
	"$rbinspect" record -p "$pid" --subprocesses --duration 4 --rate 250 --format raw \
		-o "$tmp/forkd.$run.raw" -q 2>/dev/null || true
	kill -TERM "$pid" 2>/dev/null || true
	# A run whose parent was not Ruby yet, or is gone, says nothing.
	[ -s "$tmp/forkd.$run.raw" ] && [ -s "$truth" ] || continue
	# Each worker's fork (truth: pids, then fork times in order) to its first sample.
	awk -F'\t' 'FNR == NR { split($2, v, " "); for (i in v) w[$1, i] = v[i]; next }
		$1 == "t" { pid[$2] = $3 }
		$1 == "s" && !(pid[$4] in first) { first[pid[$4]] = $2 }
		END { for (i = 1; (("workers", i) in w); i++)
			printf "%.1f\n", ((w["workers", i] in first) ? \
				first[w["workers", i]] - w["forked_ns", i] : 1e10) / 1e6 }' \
		"$truth" "$tmp/forkd.$run.raw"
done >"$tmp/forkd.ms"
echo "7. fork to first sample, forker.rb's workers (--subprocesses, 250 Hz, $(wc -l <"$tmp/forkd.ms") forks): median $(median <"$tmp/forkd.ms") ms, max $(sort -g "$tmp/forkd.ms" | tail -1) ms (1e4 ms: never sampled)"
