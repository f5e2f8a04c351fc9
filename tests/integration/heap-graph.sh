# heap-graph.sh: `rbinspect heap retainers DUMP ADDRESS` and `heap top DUMP` on every test
# Ruby, against chains of references testdata/programs/retain.rb built and wrote down
# itself.  heap retainers: in the
# target's own ObjectSpace.dump_all (references of every type, ROOT lines), the Leaf is
# kept from the global_tbl root through its Hash, Array and Box; in rbinspect's own
# heap-dump (live --pause and from a core, with its ROOT lines) the innermost of four nested
# Arrays is kept from the outermost, and, where it reads Objects' and Hashes' references,
# the Leaf from the global_tbl root through its Hash, Array and Box, as in the target's,
# and the Captured object through the Proc that captured it and its environment, the
# path the target's own dump gives;
# its ROOT lines say "partial" (it lacks the references of classes, T_DATA...), so heap
# top takes what nothing refers to as a root too and leaves (almost) nothing unreached;
# without ROOT lines the output says so.  heap top on the target's own dump: what a Big
# retains is itself, its Array and those of the Array's Strings nothing else in the dump
# refers to (a stale word on a stack Ruby scans conservatively may hold one), by the
# dump's memsize; what a list of 50 Links retains (each Link counted once, not once per
# Link above it) is the sum of ObjectSpace.memsize_of the program took.  Also --json, --max-paths, --by, and bad input.
set -u
. "$(dirname "$0")/../tap.sh"
. "$(dirname "$0")/../rubies.sh"

addr() { awk -v k="$1" '$1 == k { print $2 }' "$RB_TRUTH"; }

# row CLASS: "count<TAB>retained" of the OBJECT row of CLASS in heap top's JSON.
row() {
	jq -r --arg c "$1" '.rows[] | select(.type == "OBJECT" and .class_name == $c) | [.count, .retained] | @tsv' \
		"$RB_TMP/top.json"
}

# big_retained DUMP BIG: the bytes of the Big at BIG, of its one Array, and of the Array's
# elements that nothing else in DUMP refers to.
big_retained() {
	python3 - "$1" "$2" <<'PY'
import json, sys
objs, refs = {}, {}
for line in open(sys.argv[1]):
    o = json.loads(line)
    if "address" in o:
        objs[o["address"]] = o
    for r in o.get("references", []):
        refs[r] = refs.get(r, 0) + 1
big = objs[sys.argv[2]]
items = objs[big["references"][0]]
total = big["memsize"] + items["memsize"]
total += sum(objs[a]["memsize"] for a in set(items["references"]) if refs[a] == 1)
print(total)
PY
}

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

# closure_path JSON: the path of JSON (heap retainers --json) that starts at the global_tbl
# root and passes a Proc, as "ROOT ADDRESS:TYPE ...".
closure_path() {
	jq -r '.paths[] | select(.[0].root == "global_tbl" and any(.[]; .type == "DATA"))
		| [.[0].root] + [.[1:][] | "\(.address):\(.type)"] | join(" ")' "$1"
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
	"$RBINSPECT" --json heap retainers "$own" "$(addr captured)" >"$RB_TMP/ownclosure.json"
	own_closure=$(closure_path "$RB_TMP/ownclosure.json")
	like "$own_closure" "^global_tbl $(addr closure):DATA 0x[0-9a-f]+:IMEMO $(addr captured):OBJECT$" \
		"$R own dump_all: the Captured is kept through the Proc in a global and its environment"
	out=$("$RBINSPECT" heap retainers "$own" "$(addr box)")
	like "$out" "^$(addr box) OBJECT RbiRetain::Box: 1 retainer$" "$R own dump_all: text names the Box and its one retainer"
	like "$out" "^  -> $(addr array) ARRAY Array$" "$R own dump_all: text lists the Array on the path"

	"$RBINSPECT" --json heap top "$own" --top 0 >"$RB_TMP/top.json" 2>"$RB_TMP/err"
	is "$?" 0 "$R own dump_all: heap top exits 0"
	big=$(big_retained "$own" "$(addr big)")
	is "$(row RbiRetain::Big)" "$(printf '1\t%s' "$big")" \
		"$R own dump_all: heap top: the Big retains its Array and the Strings only it holds"
	is "$(row RbiRetain::Link)" "$(printf '50\t%s' "$(addr links_retained)")" \
		"$R own dump_all: heap top: the 50 Links retain themselves once"
	like "$("$RBINSPECT" heap top "$own" --top 0)" "^ +$big +[0-9]+ +1  OBJECT +RbiRetain::Big$" \
		"$R own dump_all: heap top text has the Big's row"

	wait_parked "$RB_PID" || diag "$R: not every task sleeps"
	"$RBINSPECT" -p "$RB_PID" heap-dump --pause -o "$RB_TMP/live.json.gz" 2>/dev/null
	"$RBINSPECT" --json heap retainers "$RB_TMP/live.json.gz" "$(addr aleaf)" >"$RB_TMP/live.json" 2>"$RB_TMP/err"
	is "$? $(jq -r .has_roots "$RB_TMP/live.json")" "0 true" "$R live heap-dump: heap retainers exits 0; ROOT lines"
	has_path "$R live heap-dump: the inner Array is kept through the three around it" "$RB_TMP/live.json" \
		"$(addr outer) $(addr middle) $(addr inner) $(addr aleaf)"
	core=$(core_of "$RB_PID")
	"$RBINSPECT" "$core" heap-dump >"$RB_TMP/core-dump.json" 2>/dev/null
	"$RBINSPECT" --json heap retainers "$RB_TMP/core-dump.json" "$(addr inner)" >"$RB_TMP/core.json" 2>"$RB_TMP/err"
	is "$?" 0 "$R core heap-dump: heap retainers exits 0"
	has_path "$R core heap-dump: the middle Array is kept through the outer one" "$RB_TMP/core.json" \
		"$(addr outer) $(addr middle) $(addr inner)"
	for how in live core; do
		dump=$RB_TMP/live.json.gz
		[ "$how" = core ] && dump=$RB_TMP/core-dump.json
		# The Leaf's chain holds Objects and a Hash (and no class).
		case ",$(heap_unread "$kind" "$ver")," in *,OBJECT,*|*,HASH,*)
			skip "$R $how heap-dump: the Leaf from global_tbl: heap-dump cannot read $(heap_unread "$kind" "$ver") references here"
			continue ;;
		esac
		"$RBINSPECT" --json heap retainers "$dump" "$(addr leaf)" >"$RB_TMP/leaf.json" 2>"$RB_TMP/err"
		is "$?" 0 "$R $how heap-dump: heap retainers of the Leaf exits 0"
		has_path "$R $how heap-dump: the Leaf is kept through its Hash, Array and Box" "$RB_TMP/leaf.json" \
			"$(addr hash) $(addr array) $(addr box) $(addr leaf)"
		is "$(jq -r '[.paths[] | select(.[0].root == "global_tbl" and length == 5)] | length' "$RB_TMP/leaf.json")" 1 \
			"$R $how heap-dump: that path starts at the global_tbl root, as in the target's own dump"
		like "$("$RBINSPECT" heap retainers "$dump" "$(addr leaf)")" "^     ROOT global_tbl$" \
			"$R $how heap-dump: text shows the root"
		"$RBINSPECT" --json heap retainers "$dump" "$(addr captured)" >"$RB_TMP/closure.json" 2>"$RB_TMP/err"
		is "$? $(closure_path "$RB_TMP/closure.json")" "0 $own_closure" \
			"$R $how heap-dump: the Captured is kept through the Proc and its environment, as in the target's own dump"
		"$RBINSPECT" --json heap top "$dump" --top 0 >"$RB_TMP/ourtop.json" 2>"$RB_TMP/err"
		is "$? $(jq -r '[.has_roots, .partial_roots, (.unreached * 1000 <= .objects)] | @tsv' "$RB_TMP/ourtop.json")" \
			"0 $(printf 'true\ttrue\ttrue')" \
			"$R $how heap-dump: heap top: partial roots, so what nothing refers to is a root too: (almost) nothing unreached"
	done
	rm -f "$core"

	if [ "$first" = 1 ]; then
		"$RBINSPECT" --json heap retainers "$own" "$(addr leaf)" --max-paths 0 >"$RB_TMP/all.json"
		"$RBINSPECT" --json heap retainers "$own" "$(addr leaf)" --max-paths 1 >"$RB_TMP/one.json"
		is "$(jq '.paths | length' "$RB_TMP/one.json") $(jq '.more' "$RB_TMP/one.json")" \
			"1 $(( $(jq '.paths | length' "$RB_TMP/all.json") - 1 ))" \
			"--max-paths 1: one path, the others counted"
		grep -v '"type":"ROOT"' "$RB_TMP/core-dump.json" >"$RB_TMP/noroots.json"
		like "$("$RBINSPECT" heap retainers "$RB_TMP/noroots.json" "$(addr aleaf)")" \
			"^This dump has no ROOT lines" "a dump without ROOT lines: the text says the paths start without roots"
		"$RBINSPECT" heap retainers "$own" 0x10 >/dev/null 2>"$RB_TMP/err"
		is "$? $(grep -c . "$RB_TMP/err") $(grep -c 'no object at 0x10 in this dump' "$RB_TMP/err")" \
			"1 1 1" "an address that is no object of the dump: one line, exit 1"
		"$RBINSPECT" heap retainers "$own" nothex >/dev/null 2>"$RB_TMP/err"
		is "$? $(grep -c . "$RB_TMP/err")" "2 1" "a word that is no address: one line, exit 2"
		"$RBINSPECT" heap retainers "$own" >/dev/null 2>"$RB_TMP/err"
		is "$? $(grep -c . "$RB_TMP/err")" "2 1" "no address: one line, exit 2"
		"$RBINSPECT" --json heap top "$own" --by count --top 3 >"$RB_TMP/bycount.json"
		is "$(jq '[.rows[].count] | (length == 3 and .[0] >= .[1] and .[1] >= .[2])' "$RB_TMP/bycount.json")" true \
			"heap top --by count --top 3: three rows, by count"
		"$RBINSPECT" heap top "$own" --by size >/dev/null 2>"$RB_TMP/err"
		is "$? $(grep -c . "$RB_TMP/err")" "2 1" "heap top --by with an unknown column: one line, exit 2"
		echo 'not json' >"$RB_TMP/bad.json"
		"$RBINSPECT" heap retainers "$RB_TMP/bad.json" 0x10 >/dev/null 2>"$RB_TMP/err"
		is "$? $(grep -c 'bad.json:1: not a JSON object: not a heap dump' "$RB_TMP/err")" "1 1" \
			"a file that is no heap dump: one line, exit 1"
		"$RBINSPECT" heap top "$RB_TMP/bad.json" >/dev/null 2>"$RB_TMP/err"
		is "$? $(grep -c 'bad.json:1: not a JSON object: not a heap dump' "$RB_TMP/err")" "1 1" \
			"heap top of a file that is no heap dump: one line, exit 1"
		first=0
	fi
	kill -9 "$RB_PID" 2>/dev/null
done < <(rubies_list)
tap_done
