# crash-common.sh: what the crash-core benches share (sourced, with $runs set): common.sh
# and the crash cores (tests/crashes.sh; root).
. "$here/bench/common.sh"
. "$here/tests/crashes.sh"
crash_setup || { echo "$(basename "$0"): $CRASH_WHY" >&2; exit 1; }
