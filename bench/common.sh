# common.sh: what the benches share (sourced, with $runs set): the test Rubies
# (tests/rubies.sh) and the timers.
export RBINSPECT=${RBINSPECT:-$here/build/repl/rbinspect}
. "$here/tests/tap.sh"
. "$here/tests/rubies.sh"
. "$here/tests/folded.sh"
# RUBIES="deb 3.4.11 ...": the benches that take it run only the Rubies whose "KIND
# VERSION" starts so.
RUBIES=${RUBIES:-}
ruby_wanted() { [ -z "$RUBIES" ] || grep -q "$1 $2" <<<"$RUBIES"; }

# ms_per_run CMD...: mean wall milliseconds over $runs runs, after one untimed run (a core
# just written is still being flushed to disk, and the first reader pays for it).
ms_per_run() {
	local start end
	sync
	"$@" >/dev/null 2>&1
	start=$(date +%s%N)
	for _ in $(seq "$runs"); do "$@" >/dev/null 2>&1; done
	end=$(date +%s%N)
	echo $(( (end - start) / 1000000 / runs ))
}
# ratio A B: A / B, two decimals.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / (b > 0 ? b : 1) }'; }

# verdict NAME STATUS DETAIL: a soak's line, "ok" or "FAIL"; a nonzero STATUS sets $failed
# (the soak's exit status).
failed=0
verdict() {
	if [ "$2" = 0 ]; then
		printf 'ok    %s: %s\n' "$1" "$3"
	else
		printf 'FAIL  %s: %s\n' "$1" "$3"
		failed=1
	fi
}
