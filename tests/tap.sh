# tap.sh: TAP helpers for integration tests (sourced).
# Each test script prints "ok N - desc" / "not ok N - desc" / "ok N # SKIP why"
# lines; tests/run counts them.
TAP_N=0
TAP_FAILED=0

ok() { TAP_N=$((TAP_N + 1)); echo "ok $TAP_N - $*"; }
not_ok() { TAP_N=$((TAP_N + 1)); TAP_FAILED=$((TAP_FAILED + 1)); echo "not ok $TAP_N - $*"; }
skip() { TAP_N=$((TAP_N + 1)); echo "ok $TAP_N # SKIP $*"; }
diag() { sed 's/^/# /' <<<"$*"; }

# is GOT WANT DESC
is() {
	if [ "$1" = "$2" ]; then ok "$3"; else not_ok "$3"; diag "got:  $1"; diag "want: $2"; fi
}

# like TEXT REGEX DESC: ok if a line of TEXT matches the extended REGEX
like() {
	if grep -Eq -- "$2" <<<"$1"; then ok "$3"; else not_ok "$3"; diag "got:  $1"; diag "want: /$2/"; fi
}

# unlike TEXT REGEX DESC: ok if no line of TEXT matches the extended REGEX
unlike() {
	if grep -Eq -- "$2" <<<"$1"; then not_ok "$3"; diag "got:  $1"; diag "unwanted: /$2/"; else ok "$3"; fi
}

# check DESC CMD...: ok if CMD succeeds
check() {
	local desc=$1; shift
	if "$@"; then ok "$desc"; else not_ok "$desc"; fi
}

# A script that ran no check because rubies_list had no Ruby says so: SKIP.
tap_done() {
	if [ "$TAP_N" -eq 0 ] && [ -s "${RB_TMP:-/nonexistent}/no-rubies" ]; then
		skip "$(cat "$RB_TMP/no-rubies")"
	fi
	echo "1..$TAP_N"; [ "$TAP_FAILED" -eq 0 ]
}

# nm_check TOOL: run tools/TOOL on the build (RBI_BUILD), a checker of the
# built library's objects that prints TAP itself; SKIP without nm.
nm_check() {
	local here build
	here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	build=${RBI_BUILD:-$here/build-test}
	if ! command -v nm >/dev/null; then
		skip "no nm (binutils)"
		tap_done
		exit
	fi
	exec python3 "$here/tools/$1" "$build"
}
