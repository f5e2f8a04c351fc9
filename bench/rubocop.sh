#!/usr/bin/env bash
# bench/rubocop.sh [ROUNDS] [SECONDS]: the sampler on deep, busy stacks of a real program
# (issue #31 item 3): trixie's rubocop linting ActiveRecord's sources on Ruby 3.3
# (tools/test-rubies.sh --bench makes the root, ~100 MB, on first use), over and over in one
# process.  ROUNDS times (default 3), one after the other, it is recorded SECONDS (default 4)
# without stopping it at 100 Hz and at 1 kHz, and with --pause at 200 Hz (every stack read
# whole).  Per recording:
#   moving     share of the samples whose leaf is "(moving)": a stack that kept changing
#              through every read, its outer part kept (goal < 1 %);
#   re-read    stacks read again / kept in part, from record's summary;
#   us/sample  record's mean time per sample (goal <= 15 us);
# and, per round, the largest difference in points between the 1 kHz recording's and the
# paused one's self shares of the 20 leaf methods the paused one puts first (the two must
# agree; noise of a few points between windows of a program that changes phase is expected).
# rubocop's phases differ (loading, inspecting, reporting): compare rounds, not runs.
# Run by hand on a quiet machine; not a test.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-3}
secs=${2:-4}
rbinspect=${RBINSPECT:-${RBI_BUILD:-$here/build}/repl/rbinspect}
tmp=$(mktemp -d /tmp/rbi-rubocop.XXXXXX)
pid=
cleanup() { [ -z "$pid" ] || kill -9 "$pid" 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
. "$here/tests/folded.sh"

bash "$here/tools/test-rubies.sh" --bench >&2
read -r _ ver root < <(bash "$here/tools/test-rubies.sh" --list-bench)
ar=$(cd "$root" && ls -d usr/share/rubygems-integration/all/gems/activerecord-*/lib/active_record | head -n 1)
mkdir -p "$root/tmp/rbi-bench"
cat > "$root/tmp/rbi-bench/lint.rb" <<'EOF'
require "rubocop"
$stdout.sync = true
puts "READY"
null = File.open(File::NULL, "w")
loop do
  $stdout = null
  RuboCop::CLI.new.run(["--cache", "false", "--format", "quiet", ARGV[0]])
  $stdout = STDOUT
end
EOF
LANG=C.UTF-8 HOME=/tmp chroot "$root" /usr/bin/ruby /tmp/rbi-bench/lint.rb "/$ar" >"$tmp/lint.out" 2>&1 &
pid=$!
disown
for _ in $(seq 100); do grep -q READY "$tmp/lint.out" && break; sleep 0.1; done
grep -q READY "$tmp/lint.out" || { echo "bench/rubocop.sh: rubocop did not start" >&2; cat "$tmp/lint.out" >&2; exit 1; }
sleep 3         # past loading the cops

# record NAME ARGS...: one recording into $tmp/NAME.folded and its summary into NAME.err.
record() {
	local name=$1
	shift
	"$rbinspect" record -p "$pid" --duration "$secs" --format folded -o "$tmp/$name.folded" \
		"$@" 2>"$tmp/$name.err"
}
# figures NAME: "moving% re-read/kept us/sample" of a recording.
figures() {
	local moving
	moving=$(leaf_share "$tmp/$1.folded" "(moving)")
	sed -nE 's/.*stacks re-read: ([0-9]+), kept in part: ([0-9]+)\).*/\1 \2/p' "$tmp/$1.err" |
		{ read -r reread kept; printf '%s%% %s/%s ' "$moving" "$reread" "$kept"; }
	sed -nE 's/^time per sample: mean ([0-9.]+) us.*/\1/p' "$tmp/$1.err"
}
# leaves NAME: "share label" of each leaf method (its location left out), highest first.
leaves() {
	sed -E 's/ ([0-9]+)$/\t\1/' "$tmp/$1.folded" |
		awk -F'\t' '{ n = split($1, f, ";"); leaf = f[n]; sub(/ \([^()]*\)$/, "", leaf)
			w[leaf] += $2; t += $2 }
			END { for (l in w) printf "%.2f\t%s\n", 100 * w[l] / t, l }' | sort -t$'\t' -k1,1gr
}

echo "rubocop $(chroot "$root" /usr/bin/rubocop --version) on Ruby $ver, ActiveRecord's $(basename "$(dirname "$(dirname "$ar")")"); $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %-24s %-24s %-24s %s\n' round "100 Hz" "1 kHz" "--pause 200 Hz" "max |1 kHz - paused| (top 20)"
printf '%-6s %-24s %-24s %-24s\n' "" "moving re-read/kept us" "moving re-read/kept us" "moving re-read/kept us"
for r in $(seq "$rounds"); do
	record "r$r-100" --rate 100
	record "r$r-1k" --rate 1000
	record "r$r-pause" --rate 200 --pause
	leaves "r$r-pause" | awk 'NR <= 20' >"$tmp/paused-top"
	diff=$(awk -F'\t' 'NR == FNR { s[$2] = $1; next } { d = $1 - s[$2]; if (d < 0) d = -d;
		if (d > m) { m = d; who = $2 } } END { printf "%.1f pp (%s)", m, who }' \
		<(leaves "r$r-1k") "$tmp/paused-top")
	printf '%-6s %-24s %-24s %-24s %s\n' "$r" "$(figures "r$r-100")" "$(figures "r$r-1k")" \
		"$(figures "r$r-pause")" "$diff"
done
echo "goals: moving < 1 %, <= 15 us a sample (issue #31 item 3)"
