# insn-tables.sh: lib/vm/vm/insn-tables.c is what tools/insn-tables.py makes of the release
# sources it names (2.7.4's and 3.1.2's insns.inc and insns_info.inc), where those sources
# are: RBI_RUBY_SRC/X.Y (default: what tools/test-rubies.sh kept of its DWARF builds'
# sources, $RBI_RUBIES/.insns, else /tmp/rubysrc).  Without them, SKIP.  (At run
# time heap-dump checks the table against the one a 3.0+ libruby exports, and
# heap-dump.sh shows iseqs' references read with it on 2.7 and 3.1.)  Needs no Ruby.
set -u
. "$(dirname "$0")/../tap.sh"
here=$(cd "$(dirname "$0")/../.." && pwd)
src=${RBI_RUBY_SRC:-${RBI_RUBIES:-$HOME/.cache/rbinspect/rubies}/.insns}
[ -n "${RBI_RUBY_SRC:-}" ] || [ -d "$src" ] || src=/tmp/rubysrc
dirs=()
for v in 2.7:4 3.1:2; do
	d=$src/${v%%:*}
	if ! grep -qs "RUBY_VERSION_TEENY ${v#*:}\$" "$d/version.h"; then
		skip "no Ruby ${v%%:*}.${v#*:} source in $d"
		tap_done
		exit
	fi
	dirs+=("$d")
done
if out=$(python3 "$here/tools/insn-tables.py" "${dirs[@]}" 2>&1) &&
	diff -u "$here/lib/vm/vm/insn-tables.c" - <<<"$out" >"${TMPDIR:-/tmp}/insn-tables.$$.diff"; then
	ok "lib/vm/vm/insn-tables.c is tools/insn-tables.py's output for ${dirs[*]}"
else
	not_ok "lib/vm/vm/insn-tables.c is tools/insn-tables.py's output for ${dirs[*]}"
	diag "$out"; diag "$(head -40 "${TMPDIR:-/tmp}/insn-tables.$$.diff")"
fi
rm -f "${TMPDIR:-/tmp}/insn-tables.$$.diff"
tap_done
