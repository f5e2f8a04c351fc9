# symbols.sh: the library's exported symbols follow the rule of its version
# script (lib/libruby-introspect.sym): one node per minor version that added
# functions, in order, the newest the project's version; every export in a
# node under that node's version, declared in the header; every global of
# the library's objects prefixed rbi_ (tools/check-symbols.py).  Needs no
# Ruby.
set -u
. "$(dirname "$0")/../tap.sh"
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${RBI_BUILD:-$here/build-test}

if ! command -v nm >/dev/null; then
	skip "no nm (binutils)"
	tap_done
	exit
fi
exec python3 "$here/tools/check-symbols.py" "$build"
