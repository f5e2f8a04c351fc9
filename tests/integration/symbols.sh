# symbols.sh: the library's exported symbols follow the rule of its version
# script (lib/libruby-introspect.sym): one node per minor version that added
# functions, in order, the newest the project's version; every export in a
# node under that node's version, declared in the header; every global of
# the library's objects prefixed rbi_ (tools/check-symbols.py).  Needs no
# Ruby.
set -u
. "$(dirname "$0")/../tap.sh"
nm_check check-symbols.py
