# layers.sh: the library's folders (lib/mem, lib/image, lib/layout, lib/vm,
# lib/native, lib/profile, lib/out, lib/dump, lib/util and lib/session.c)
# have no dependency cycle at symbol level: nm of the built objects, each
# symbol mapped to the folder that defines it (tools/check-layers.py; its
# --dot draws the graph).  Needs no Ruby.
set -u
. "$(dirname "$0")/../tap.sh"
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${RBI_BUILD:-$here/build-test}

if ! command -v nm >/dev/null; then
	skip "no nm (binutils)"
	tap_done
	exit
fi
exec python3 "$here/tools/check-layers.py" "$build"
