# heap-retainers.sh: `rbinspect heap retainers DUMP ADDRESS` on every test Ruby, against
# chains of references testdata/programs/retain.rb built and wrote down itself: in the
# target's own ObjectSpace.dump_all (references of every type, ROOT lines), the Leaf is
# kept from the global_tbl root through its Hash, Array and Box; in rbinspect's own
# heap-dump (live --pause and from a core: Array references only, no ROOT lines yet) the
# innermost of four nested Arrays is kept from the outermost, which nothing in the dump
# refers to, and the output says so.  Also --json, --max-paths, and bad input.
set -u
. "$(dirname "$0")/../tap.sh"
. "$(dirname "$0")/../rubies.sh"

addr() { awk -v k="$1" '$1 == k { print $2 }' "$RB_TRUTH"; }

# has_path LABEL JSON WANT: a path in JSON (heap retainers --json) whose objects are
# the addresses WANT (space separated), with or without a root before them.
has_path() {
	local got
	got=$(jq -r '.paths[] | [.[] | select(.address) | .address] | join(" ")' "$2")
	if grep -qxF -- "$3" <<<"$got"; then
		ok "$1"
	else
		not_ok "$1"; diag "want: $3"; diag "paths: $got"
	fi
}

first=1
while read -r kind ver root cmd; do
	R="$kind $ver"
	if ! ruby_start "$kind" "$root" "$cmd" retain.rb; then
		not_ok "$R: retain.rb did not start"; continue
	fi
	own=$RB_TRUTH.dump
	"$RBINSPECT" --json heap retainers "$own" "$(addr leaf)" >"$RB_TMP/own.json" 2>"$RB_TMP/err"
	is "$?" 0 "$R own dump_all: heap retainers exits 0"
	has_path "$R own dump_all: the Leaf is kept through its Hash, Array and Box" "$RB_TMP/own.json" \
		"$(addr hash) $(addr array) $(addr box) $(addr leaf)"
	is "$(jq -r '[.has_roots, (.paths[0][0].root != null), .target.class_name] | @tsv' "$RB_TMP/own.json")" \
		"$(printf 'true\ttrue\tRbiRetain::Leaf')" "$R own dump_all: paths start at a root; the target is named"
	is "$(jq -r '[.paths[] | select(.[0].root == "global_tbl" and length == 5)] | length' "$RB_TMP/own.json")" 1 \
		"$R own dump_all: that path starts at the global_tbl root"
	out=$("$RBINSPECT" heap retainers "$own" "$(addr box)")
	like "$out" "^$(addr box) OBJECT RbiRetain::Box: 1 retainer$" "$R own dump_all: text names the Box and its one retainer"
	like "$out" "^  -> $(addr array) ARRAY Array$" "$R own dump_all: text lists the Array on the path"

	wait_parked "$RB_PID" || diag "$R: not every task sleeps"
	"$RBINSPECT" -p "$RB_PID" heap-dump --pause -o "$RB_TMP/live.json.gz" 2>/dev/null
	"$RBINSPECT" --json heap retainers "$RB_TMP/live.json.gz" "$(addr aleaf)" >"$RB_TMP/live.json" 2>"$RB_TMP/err"
	is "$? $(jq -r .has_roots "$RB_TMP/live.json")" "0 false" "$R live heap-dump: heap retainers exits 0; no ROOT lines"
	has_path "$R live heap-dump: the inner Array is kept through the three around it" "$RB_TMP/live.json" \
		"$(addr outer) $(addr middle) $(addr inner) $(addr aleaf)"
	like "$("$RBINSPECT" heap retainers "$RB_TMP/live.json.gz" "$(addr aleaf)")" \
		"^This dump has no ROOT lines" "$R live heap-dump: text says the paths start without roots"

	core=$(core_of "$RB_PID")
	"$RBINSPECT" "$core" heap-dump >"$RB_TMP/core-dump.json" 2>/dev/null
	"$RBINSPECT" --json heap retainers "$RB_TMP/core-dump.json" "$(addr inner)" >"$RB_TMP/core.json" 2>"$RB_TMP/err"
	is "$?" 0 "$R core heap-dump: heap retainers exits 0"
	has_path "$R core heap-dump: the middle Array is kept through the outer one" "$RB_TMP/core.json" \
		"$(addr outer) $(addr middle) $(addr inner)"
	rm -f "$core"

	if [ "$first" = 1 ]; then
		"$RBINSPECT" --json heap retainers "$own" "$(addr leaf)" --max-paths 0 >"$RB_TMP/all.json"
		"$RBINSPECT" --json heap retainers "$own" "$(addr leaf)" --max-paths 1 >"$RB_TMP/one.json"
		is "$(jq '.paths | length' "$RB_TMP/one.json") $(jq '.more' "$RB_TMP/one.json")" \
			"1 $(( $(jq '.paths | length' "$RB_TMP/all.json") - 1 ))" \
			"--max-paths 1: one path, the others counted"
		"$RBINSPECT" heap retainers "$own" 0x10 >/dev/null 2>"$RB_TMP/err"
		is "$? $(grep -c . "$RB_TMP/err") $(grep -c 'no object at 0x10 in this dump' "$RB_TMP/err")" \
			"1 1 1" "an address that is no object of the dump: one line, exit 1"
		"$RBINSPECT" heap retainers "$own" nothex >/dev/null 2>"$RB_TMP/err"
		is "$? $(grep -c . "$RB_TMP/err")" "2 1" "a word that is no address: one line, exit 2"
		"$RBINSPECT" heap retainers "$own" >/dev/null 2>"$RB_TMP/err"
		is "$? $(grep -c . "$RB_TMP/err")" "2 1" "no address: one line, exit 2"
		echo 'not json' >"$RB_TMP/bad.json"
		"$RBINSPECT" heap retainers "$RB_TMP/bad.json" 0x10 >/dev/null 2>"$RB_TMP/err"
		is "$? $(grep -c 'bad.json:1: not a JSON object: not a heap dump' "$RB_TMP/err")" "1 1" \
			"a file that is no heap dump: one line, exit 1"
		first=0
	fi
	kill -9 "$RB_PID" 2>/dev/null
done < <(rubies_list)
tap_done
