# man.sh: the man pages render without a single groff warning, agree with
# `rbinspect --help` (every option, command and exit status it lists is
# documented), the library page's synopsis names exported functions, and
# its example program is examples/bt.c.
set -u
. "$(dirname "$0")/../tap.sh"
here=$(cd "$(dirname "$0")/../.." && pwd)
RBINSPECT=${RBINSPECT:-$here/build-test/repl/rbinspect}
tmp=$(mktemp -d /tmp/rbi-man.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

for page in man/rbinspect.1 man/libruby-introspect.3; do
	if groff -ww -man -Tutf8 "$here/$page" >"$tmp/out" 2>"$tmp/err" && [ ! -s "$tmp/err" ] &&
	   [ -s "$tmp/out" ]; then
		ok "$page renders with groff -ww -man -Tutf8, no warnings"
	else
		not_ok "$page renders with groff -ww -man -Tutf8, no warnings"; diag "$(head -20 "$tmp/err")"
	fi
done

# Plain text of rbinspect(1) (ASCII: \- is a plain -).
groff -man -Tascii -P-cbou "$here/man/rbinspect.1" 2>/dev/null >"$tmp/man.txt"
section() { awk -v s="$1" '/^[A-Z]/ { on = ($0 == s) } on' "$tmp/man.txt"; }
"$RBINSPECT" --help >"$tmp/help.txt"

# Options: every -x / --xyz word of the Options part of --help.
opts=$(awk '/^Options:/ { on = 1; next } /^Commands:/ { on = 0 } on' "$tmp/help.txt" |
       grep -oE '(^|[ ,])--?[a-zA-Z][-a-zA-Z]*' | tr -d ' ,' | sort -u)
check "--help lists options" test -n "$opts"
for o in $opts; do
	if grep -qE -- "(^|[^-a-zA-Z])$o([^-a-zA-Z]|$)" <(section OPTIONS); then
		ok "option $o is in rbinspect(1) OPTIONS"
	else
		not_ok "option $o is in rbinspect(1) OPTIONS"
	fi
done

# Commands: the first word of each line of the Commands part.
cmds=$(awk '/^Commands:/ { on = 1; next } /^$/ { on = 0 } on { print $1 }' "$tmp/help.txt")
check "--help lists commands" test -n "$cmds"
for c in $cmds; do
	if section COMMANDS | grep -qE "^       $c( |$)"; then
		ok "command $c is in rbinspect(1) COMMANDS"
	else
		not_ok "command $c is in rbinspect(1) COMMANDS"
	fi
done

# The profiling commands' options (one table, repl/profile-options.c): each that `help`
# offers is one of PROFILES' entries.
# The tags (the line after each .TP) of the section's source.
awk '/^\.SH/ { on = ($2 == "PROFILES") } on && tag { print; tag = 0 } on && /^\.TP/ { tag = 1 }' \
	"$here/man/rbinspect.1" | sed 's/\\-/-/g' >"$tmp/profile-tags"
missing=
for o in $(for c in record top report; do "$RBINSPECT" help "$c"; done |
	   sed -n 's/^ *arguments: //p' | tr ' ' '\n' | sed 's/=.*//' | sort -u); do
	grep -qE -- "(^|[ ,\"])$o([ ,\"]|$)" "$tmp/profile-tags" || missing+=" $o"
done
is "${missing# }" "" "every option of record, top and report is an entry of rbinspect(1) PROFILES"

# Exit statuses: every "N word" of --help's Exit status text.
codes=$(sed -n '/^Exit status:/,$p' "$tmp/help.txt" | tr '\n' ' ' | grep -oE '(:|,) [0-9]+ ' | tr -dc '0-9 \n' | tr ' ' '\n' | sort -un)
check "--help lists exit statuses" test -n "$codes"
for n in $codes; do
	if section "EXIT STATUS" | grep -qE "^       $n( |$)"; then
		ok "exit status $n is in rbinspect(1) EXIT STATUS"
	else
		not_ok "exit status $n is in rbinspect(1) EXIT STATUS"
	fi
done

# libruby-introspect(3): its synopsis names exported functions, and its
# example is the buildable examples/bt.c.
fns=$(grep -oE '^\.BI? "[^"]*\brbi_[a-z_]+\(' "$here/man/libruby-introspect.3" |
      grep -oE 'rbi_[a-z_]+\($' | tr -d '(' | sort -u)
check "libruby-introspect(3) has a synopsis" test -n "$fns"
for f in $fns; do
	check "$f (libruby-introspect(3) synopsis) is exported" \
		grep -qE "^[[:space:]]+$f;" "$here/lib/libruby-introspect.sym"
done
if out=$(python3 "$here/tools/man-example.py" --check "$here/man/libruby-introspect.3" \
		"$here/examples/bt.c" 2>&1); then
	ok "libruby-introspect(3) EXAMPLES is examples/bt.c"
else
	not_ok "libruby-introspect(3) EXAMPLES is examples/bt.c"; diag "$out"
fi
tap_done
