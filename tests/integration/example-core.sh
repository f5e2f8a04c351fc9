# example-core.sh: the core the README's demo uses (testdata/cores) still
# reads as its Ruby recorded itself, on a machine that has none of its
# files: version, every thread and frame, and object counts.
set -u
. "$(dirname "$0")/../tap.sh"
. "$(dirname "$0")/../rubies.sh"

core=$RB_TMP/example.core
truth=$here/testdata/cores/ruby-3.1-threads.truth
xz -dkc "$here/testdata/cores/ruby-3.1-threads.core.xz" >"$core"

"$RBINSPECT" --json "$core" info >"$RB_TMP/info.json" 2>"$RB_TMP/err"
is "$(jq -r .version "$RB_TMP/info.json")" \
	"$(awk -F'\t' '$1 == "ruby_version" { print $2 }' "$truth")" "example core: version"
"$RBINSPECT" --json "$core" bt >"$RB_TMP/bt.json" 2>>"$RB_TMP/err"
if out=$(python3 "$here/tests/bt-check.py" "$truth" "$RB_TMP/bt.json" 2>&1); then
	ok "example core: every thread and frame matches the recorded backtraces"
else
	not_ok "example core: frames differ"; diag "$out"
fi
"$RBINSPECT" --json "$core" objects >"$RB_TMP/objects.json" 2>>"$RB_TMP/err"
# Types the truth writer never allocates are exactly as the target counted
# them (see tests/integration/objects.sh for why the others move a little).
for type in TOTAL T_OBJECT T_CLASS T_MODULE T_FLOAT T_REGEXP T_STRUCT T_BIGNUM \
	    T_FILE T_DATA T_COMPLEX T_SYMBOL T_ICLASS; do
	is "$(jq ".counts.$type // 0" "$RB_TMP/objects.json")" \
		"$(awk -F'\t' -v t="$type" '$1 == "count" && $2 == t { print $3 }' "$truth")" \
		"example core: $type as ObjectSpace.count_objects said"
done
# bt --native: the core was dumped in a pid namespace, so its notes name host tids and Ruby
# its own; the threads are matched by their thread pointers.
"$RBINSPECT" --json "$core" bt --native >"$RB_TMP/native.json" 2>>"$RB_TMP/err"
is "$(jq -r '[.threads[] | select(.merged | not) | "\(.name): \(.unmerged_reason)"] | join("; ")' \
	"$RB_TMP/native.json")" "" "example core: bt --native merges every thread's native and Ruby frames"
jq '.threads[] |= (.frames = [.frames[] | .ruby | select(. != null)])' "$RB_TMP/native.json" \
	>"$RB_TMP/native-ruby.json"
if out=$(python3 "$here/tests/bt-check.py" "$truth" "$RB_TMP/native-ruby.json" 2>&1); then
	ok "example core: bt --native's Ruby frames are the recorded backtraces"
else
	not_ok "example core: bt --native's Ruby frames differ"; diag "$out"
fi
# The README's examples on this core run as written: each line there that starts
# "build/repl/rbinspect build/ruby-3.1-threads.core -ex", run on this copy, exits 0 and
# prints nothing on standard error but warnings (about the core's files: not on this
# machine, or other builds of them).
n=0
while IFS= read -r line; do
	n=$((n + 1))
	args=${line#build/repl/rbinspect build/ruby-3.1-threads.core }
	args=${args%%#*}
	eval "set -- $args"
	"$RBINSPECT" "$core" "$@" >"$RB_TMP/readme.out" 2>"$RB_TMP/readme.err" </dev/null
	rc=$?
	if [ "$rc" = 0 ] && ! grep -qv '^rbinspect: warning: ' "$RB_TMP/readme.err"; then
		ok "example core: the README's example $n runs as written"
	else
		not_ok "example core: the README's example $n runs as written (exit $rc)"
		diag "$line"; diag "$(cat "$RB_TMP/readme.err")"
	fi
done < <(grep -E '^build/repl/rbinspect build/ruby-3\.1-threads\.core -ex' "$here/README.md")
[ "$n" -gt 0 ] || not_ok "example core: the README has its examples on this core"

# Opened as it is shipped (.xz, 535 MiB inside: a second or more to decompress): on a
# terminal a progress line, wiped before the output; through a pipe, none.
xz=$here/testdata/cores/ruby-3.1-threads.core.xz
script -qec "'$RBINSPECT' '$xz' info" /dev/null >"$RB_TMP/tty.out" 2>&1
if grep -qE $'\rrbinspect: decompressing .*: [0-9]+ of 535 MiB \([0-9]+%\)' "$RB_TMP/tty.out" &&
   grep -q $'\r\033\\[K'"pid " "$RB_TMP/tty.out"; then
	ok "example core .xz on a terminal: a progress line while it decompresses, wiped"
else
	not_ok "example core .xz on a terminal: a progress line, wiped"
	diag "$(head -c 600 "$RB_TMP/tty.out" | cat -v)"
fi
"$RBINSPECT" "$xz" info 2>&1 >/dev/null | grep -q decompressing
is "$?" 1 "example core .xz through a pipe: no progress line"
# Ctrl-C 0.3 s in, while it decompresses (a second or more): it stops there, nothing
# printed (an interrupt held until the core was open would exit 0 with the output).
timeout --preserve-status -s INT 0.3 "$RBINSPECT" "$xz" info >"$RB_TMP/int.out" 2>&1
rc=$?
if [ "$rc" = 130 ] && [ ! -s "$RB_TMP/int.out" ]; then
	ok "example core .xz: Ctrl-C while it decompresses ends it (130), nothing printed"
else
	not_ok "example core .xz: Ctrl-C while it decompresses (exit $rc)"
	diag "$(head -3 "$RB_TMP/int.out")"
fi
tap_done
