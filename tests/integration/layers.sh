# layers.sh: the library's folders (lib/arch, lib/mem, lib/image, lib/layout,
# lib/vm, lib/native, lib/profile, lib/out, lib/util and lib/session.c)
# have no dependency cycle at symbol level: nm of the built objects, each
# symbol mapped to the folder that defines it (tools/check-layers.py; its
# --dot draws the graph).  And by their sources: struct rbi_target's
# fields are lib/mem's, and only lib/arch names a machine.  Needs no Ruby.
set -u
. "$(dirname "$0")/../tap.sh"
nm_check check-layers.py
