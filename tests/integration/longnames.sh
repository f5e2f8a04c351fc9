# longnames.sh: names longer than rbinspect reads whole (issue #22), on every test Ruby, live
# and from a core, against the target's own Thread#backtrace_locations (the truth file).
#
# testdata/programs/longnames.rb parks two threads in methods whose 602-byte names are equal in
# their first 601 bytes: both labels are read whole (bt --json gives the target's own label,
# exactly; text shows them apart). Its main thread parks in a method of a 5,000-byte name
# defined in a file of a 5,003-byte name, more than the 4 KiB either is read: text marks each
# cut ("…[+905 bytes]", "…[+908 bytes]"), JSON gives label_cut and path_cut, and the bytes it
# does give are the name's first; own_label_cut and base_label_cut count the cuts of the
# target's own label and bare name. The same for classes, in `objects --by-class` and
# heap-dump: two of 608-byte names equal in 607, whole; one of 5,006 bytes, cut and marked
# (name_cut in JSON). A thread and a method named with every bidirectional control: escaped
# in bt and threads, raw in neither text nor JSON, and JSON decodes back to the target's names.
set -u
. "$(dirname "$0")/../tap.sh"
. "$(dirname "$0")/../rubies.sh"

# check_names LABEL TARGET...: the checks, on rbinspect TARGET.
check_names() {
	local label=$1 json txt t want got
	shift
	json=$("$RBINSPECT" --json "$@" bt); is "$?" 0 "$label: bt --json exits 0"
	txt=$("$RBINSPECT" "$@" bt)
	for t in first second; do
		want=$(awk -F'\t' -v t="$t" '$1 == "frame" && $2 == t && $3 == 1 { print $4 }' "$RB_TRUTH")
		got=$(jq -r --arg t "$t" '.threads[] | select(.name == $t) | .frames[1] |
			"\(.own_label)\t\(.label_cut)"' <<<"$json")
		is "$got" "$want"$'\t'0 "$label: thread $t: its label whole, as the target has it (${#want} bytes)"
	done
	is "$(grep -c "in 'Long.ma\{600\}[12]'$" <<<"$txt")" 2 \
		"$label: text: the two labels, equal in 601 bytes, printed whole and apart"
	want=$(awk -F'\t' '$1 == "frame" && $2 == "main" && $3 == 1 { print $5 }' "$RB_TRUTH")
	got=$(jq -r '.threads[] | select(.main) | .frames[1] | "\(.label_cut) \(.path_cut) \(.path)"' <<<"$json")
	is "$got" "905 908 ${want:0:4095}" "$label: main: label_cut 905, path_cut 908, the path's first 4095 bytes"
	want=$(awk -F'\t' '$1 == "frame" && $2 == "main" && $3 == 1 { print $7 }' "$RB_TRUTH")
	got=$(jq -r '.threads[] | select(.main) | .frames[1] |
		"\(.own_label_cut) \(.base_label_cut) \(.base_label)"' <<<"$json")
	is "$got" "905 905 ${want:0:4095}" \
		"$label: main: own_label_cut 905, base_label_cut 905, the base label's first 4095 bytes"
	like "$txt" "^f{4095}…\[\+908 bytes\]:1:in '(Long\.)?h{4095}'…\[\+905 bytes\]$" \
		"$label: text: both cuts marked"

	# A thread and a method named with every bidirectional control.
	local bidi='bidix\\u\{61c\}x\\u\{200e\}x\\u\{200f\}x\\u\{202a\}x\\u\{202b\}x\\u\{202c\}x\\u\{202d\}x\\u\{202e\}x\\u\{2066\}x\\u\{2067\}x\\u\{2068\}x\\u\{2069\}'
	like "$txt" "^Thread [0-9]+ \"$bidi\" " "$label: text: the thread's name, every bidi control escaped"
	like "$txt" ":in '(Long\.)?$bidi'$" "$label: text: the method's name, every bidi control escaped"
	like "$("$RBINSPECT" "$@" threads)" " $bidi$" "$label: threads: the name escaped"
	is "$(LC_ALL=C.UTF-8 grep -cP '[\x{061c}\x{200e}\x{200f}\x{202a}-\x{202e}\x{2066}-\x{2069}]' <<<"$txt$json")" 0 \
		"$label: no bidi control reaches text or JSON raw"
	want=$(awk -F'\t' '$1 == "thread" && $2 ~ /^bidix/ { print $2 }' "$RB_TRUTH")
	[ -n "$want" ] || want="(the truth names no bidi thread)"
	is "$(jq -r --arg n "$want" '[.threads[] | select(.name == $n) | .frames[1].base_label] | join(",")' \
		<<<"$json")" "$want" "$label: JSON: the names as the target has them (escaped, decoded back)"

	# Classes (Ruby 3.2 reads no class names).
	[ "${label#* 3.2.}" = "$label" ] || return 0
	json=$("$RBINSPECT" --json "$@" objects --by-class --top 0)
	is "$(jq -r '[.classes[] | select(.name | startswith("Long::")) |
		"\(.count) \(.name | length) \(.name_cut) \(.name[-1:])"] | sort | join(",")' <<<"$json")" \
		"3 608 0 1,4 608 0 2,5 4095 911 H" \
		"$label: objects --by-class: two 608-byte class names whole, a 5,006-byte one cut by 911 bytes"
	txt=$("$RBINSPECT" "$@" objects --by-class --top 0)
	like "$txt" " Long::H{4089}…\[\+911 bytes\]$" "$label: objects --by-class: text marks the cut"
	"$RBINSPECT" "$@" heap-dump -o "$RB_TMP/dump.json" 2>/dev/null
	is "$(jq -r 'select(.type == "CLASS" and (.name // "" | startswith("Long::"))) |
		"\(.name | length) \(.name_cut) \(.name[-1:])"' "$RB_TMP/dump.json" | sort | paste -sd,)" \
		"4095 911 H,608 null 1,608 null 2" \
		"$label: heap-dump: two 608-byte class names whole, a 5,006-byte one cut, name_cut 911"
}

while read -r kind ver root cmd; do
	live_and_core "$kind" "$ver" "$root" "$cmd" longnames.rb check_names
done < <(rubies_list)
tap_done
