# lines.sh: no real line is ever called one the VM cannot have (issue #22), on every test Ruby.
#
# rbinspect shows a frame's line as unknown, and exits 8, when its iseq's line table gives a
# line before the first line of the code it was compiled from (tests/unit/test-lines.c
# corrupts a core to see that). Here, the other side: tests/line-rule.rb checks that rule
# against the Ruby's own compiler over every file of its library (no line of any iseq before
# the first line of a method, class body or file that holds it; 3.4.11 puts lines of ensure
# and rescue clauses before the clause's own first line, so that is no bound), and
# testdata/programs/lines.rb parks threads at lines that look odd but are real (in a heredoc
# after its method's end, in code eval'd from line -10 and from line 1,000,000,000, in rescue
# and ensure clauses, in a block, in module_eval'd code): bt, live and from a core, exits 0,
# marks nothing unknown and matches the target's own Thread#backtrace_locations.
set -u
. "$(dirname "$0")/../tap.sh"
. "$(dirname "$0")/../rubies.sh"

# check_bt LABEL TARGET...: bt on rbinspect TARGET against the truth.
check_bt() {
	local label=$1 out rc
	shift
	"$RBINSPECT" --json "$@" bt >"$RB_TMP/bt.json" 2>"$RB_TMP/bt.err"; rc=$?
	is "$rc" 0 "$label: bt --json exits 0"
	if out=$(python3 "$here/tests/bt-check.py" "$RB_TRUTH" "$RB_TMP/bt.json" 2>&1); then
		ok "$label: every frame's line is the target's own"
	else
		not_ok "$label: frames differ from the target's own backtrace"; diag "$out"
	fi
	is "$(jq '[.threads[].frames[] | select(.line_error != null)] | length' "$RB_TMP/bt.json")" 0 \
		"$label: no line_error"
	out=$("$RBINSPECT" "$@" bt 2>&1); rc=$?
	is "$rc" 0 "$label: bt exits 0"
	unlike "$out" "line unknown|cannot have" "$label: text marks no line unknown"
	like "$out" "^negative\.rb:-8:in .*negative'$" "$label: the negative line printed"
}

while read -r kind ver root cmd; do
	if [ "$kind" = deb ]; then
		programs_install "$root" "$here/tests/line-rule.rb"
		rule=$(chroot "$root" /usr/bin/ruby "$RB_PROGS/line-rule.rb" 2>&1)
	else
		rule=$("$cmd" "$here/tests/line-rule.rb" 2>&1)
	fi
	like "$rule" "^files [1-9][0-9][0-9]+ lines [1-9][0-9]* before_code 0 " \
		"$kind $ver: no iseq of the Ruby's library has a line before the code it came from"
	diag "$kind $ver: line-rule: $(head -1 <<<"$rule")"
	live_and_core "$kind" "$ver" "$root" "$cmd" lines.rb check_bt
done < <(rubies_list)
tap_done
