# record-fibers.sh: profiles grouped by fiber (`record --fibers`, `report --fibers`) on every
# test Ruby.  testdata/programs/fiber-spin.rb's main thread takes turns with two fibers, each
# burning CPU in a method of its own, and each fiber writes its own stack and Fiber object.
#   - tests/fiber-profile-check.py on the raw profile: every sample names its fiber, one of
#     the program's three (rb_fiber_t as `rbinspect fibers` maps it to the Fiber object), the
#     main thread's root marked so; a stack inside a fiber's burner is in that fiber and its
#     Ruby frames are the fiber's own caller_locations;
#   - the folded output has a root frame per fiber, three of them; `report --threads
#     --fibers` puts the fiber inside its thread; without --fibers there is none.
# Profiles are of live processes only (a core has no time to sample over); `report` reads
# the raw profile back.
set -u
. "$(dirname "$0")/../tap.sh"
. "$(dirname "$0")/../rubies.sh"
check_py=$here/tests/fiber-profile-check.py

while read -r kind ver root cmd; do
	name="$kind $ver"
	if ! ruby_start "$kind" "$root" "$cmd" fiber-spin.rb; then
		not_ok "$name: fiber-spin.rb did not start"; continue
	fi
	j=$RB_TMP/rf
	"$RBINSPECT" --json -p "$RB_PID" fibers >"$j.fibers.json" 2>"$j.err"
	is "$?" 0 "$name: fibers lists the fibers of a process switching between them"
	"$RBINSPECT" record -q -p "$RB_PID" --fibers -d 2 -f folded -o "$j.folded" --raw "$j.raw" \
		2>"$j.err"
	is "$?" 0 "$name: record --fibers exits 0"
	if out=$(python3 "$check_py" "$j.raw" "$RB_TRUTH" "$j.fibers.json" 2>&1); then
		ok "$name: each sample in its own fiber, with that fiber's frames ($(tail -n 1 <<<"$out"))"
	else
		not_ok "$name: each sample in its own fiber, with that fiber's frames"
		diag "$out"
	fi
	is "$(grep -vc '^Fiber 0x[0-9a-f]* (\(root of \)\?thread 1);' "$j.folded") $(cut -d';' -f1 "$j.folded" | sort -u | wc -l) $(grep -c '^Fiber 0x[0-9a-f]* (root of thread 1);' "$j.folded" | grep -c '^[1-9]')" \
		"0 3 1" "$name: folded --fibers: a root frame per fiber, three fibers, one root"
	"$RBINSPECT" report "$j.raw" --threads --fibers -f folded -o - >"$j.tf" 2>"$j.err"
	is "$? $(grep -vc '^thread 1 (main) tid [0-9]*;Fiber 0x[0-9a-f]* (\(root of \)\?thread 1);' "$j.tf")" \
		"0 0" "$name: report --threads --fibers: each fiber inside its thread"
	"$RBINSPECT" report "$j.raw" -f folded -o - >"$j.plain" 2>"$j.err"
	is "$? $(grep -c 'Fiber 0x' "$j.plain")" "0 0" "$name: without --fibers, no fiber frames"
	kill -9 "$RB_PID" 2>/dev/null
done < <(rubies_list)
tap_done
