# print.sh: a debugger's `p EXPR`, `info args` and `bt --locals` on every test Ruby, live
# and from a core, against the locals the target wrote about itself
# (testdata/programs/simple.rb: "local" truth records of frames 1, 3 and 4
# of main; tests/locals-check.py compares).  p of every local the target
# listed, and of what main's instance variables, some globals and constant
# paths were ("expr" records of frame 3) and, in fibers.rb, a module's own
# instance variables where a singleton method runs, steps into a value (NAME[I],
# .length, .bytesize, .class, .@ivar, chained: the "expr" records have
# @top_obj.@n[0].@n), names that are not there, what cannot be read
# (a virtual global, an ivar of a non-Object) and bad expressions as one
# line with their exit codes; bt --locals as JSON (every frame's locals) and
# as text (escaped, cut by --max-value-bytes).  And the host tid of a
# namespaced process's threads.
set -u
. "$(dirname "$0")/../tap.sh"
. "$(dirname "$0")/../rubies.sh"
check_py=$here/tests/locals-check.py

# p_records LABEL KIND [--thread NAME] TARGET...: `p NAME` of every name the truth's KIND
# records of thread NAME (main) list ("local": frames 1, 3 and 4 of main; "expr": @ivars
# of self, $globals and constant paths in frame 3), one session a frame, checked as a
# frame's locals would be.
p_records() {
	local label=$1 kind=$2 th=main sel=() i out names frames; shift 2
	if [ "$1" = --thread ]; then
		th=$2; shift 2
		sel=(-ex "thread $("$RBINSPECT" --json "$@" threads |
			jq --arg n "$th" '.threads[] | select(.name == $n) | .number')")
	fi
	frames=$(awk -F'\t' -v k="$kind" -v t="$th" '$1 == k && $2 == t { print $3 }' \
		"$RB_TRUTH" | sort -un)
	[ -n "$frames" ] || not_ok "$label: the truth has no $kind records of $th (an older program?)"
	for i in $frames; do
		names=$(awk -F'\t' -v k="$kind" -v t="$th" -v i="$i" \
			'$1 == k && $2 == t && $3 == i { print $4 }' "$RB_TRUTH")
		args=("${sel[@]}" -ex "frame $i")
		for n in $names; do args+=(-ex "p $n"); done
		"$RBINSPECT" --json "$@" "${args[@]}" >"$RB_TMP/p$i.out" 2>"$RB_TMP/p$i.err"
		# The thread's and frame's own JSON first, then one value per p: as `frame --json`
		# gives them.
		# (Python, not jq: jq 1.6 reads integers as doubles.)
		python3 -c '
import json, sys
docs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
json.dump({"frame": {"index": int(sys.argv[2])},
           "locals": [{"name": d["expression"], "internal": False, "value": d["value"]}
                      for d in docs if "expression" in d]}, sys.stdout)' "$RB_TMP/p$i.out" "$i" \
			>"$RB_TMP/p$i.json" 2>>"$RB_TMP/p$i.err"
		if out=$(python3 "$check_py" "$RB_TRUTH" "$th" "$i" "$RB_TMP/p$i.json" "$kind" 2>&1); then
			ok "$label: p of each $kind of $th's frame $i is the target's own ($(tail -1 <<<"$out"))"
		else
			not_ok "$label: p of each $kind of $th's frame $i is the target's own"
			diag "$out"; diag "$(head -5 "$RB_TMP/p$i.err")"
		fi
	done
}

# bt_locals LABEL [--native] TARGET...: bt --locals --json: frames 1, 3 and 4 of the
# main thread carry the locals the target listed there; with --native, the Ruby frames
# of the merged stack do.
bt_locals() {
	local label=$1 native= i out; shift
	if [ "$1" = --native ]; then
		native=--native label="$label: --native"; shift
	fi
	"$RBINSPECT" --json "$@" bt --locals $native >"$RB_TMP/btl.json" 2>"$RB_TMP/btl.err"
	is "$?" 0 "$label: bt --locals --json: exit 0"
	for i in 1 3 4; do
		python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
frames = [t for t in doc["threads"] if t.get("main")][0]["frames"]
if sys.argv[3]:
    frames = [f["ruby"] for f in frames if f.get("ruby")]
f = [f for f in frames if f["index"] == int(sys.argv[2])][0]
json.dump({"frame": {"index": f["index"]}, "locals": f["locals"],
           "error": f["locals_error"]}, sys.stdout)' "$RB_TMP/btl.json" "$i" "$native" \
			>"$RB_TMP/btl$i.json" 2>>"$RB_TMP/btl.err"
		if out=$(python3 "$check_py" "$RB_TRUTH" main "$i" "$RB_TMP/btl$i.json" 2>&1); then
			ok "$label: bt --locals: frame $i's locals are the target's own"
		else
			not_ok "$label: bt --locals: frame $i's locals are the target's own"
			diag "$out"; diag "$(head -5 "$RB_TMP/btl.err")"
		fi
	done
	is "$(jq '[.threads[].frames[] | if has("native") then .ruby // empty else . end] |
		length > 0 and all(.self.kind != null)' "$RB_TMP/btl.json")" \
		true "$label: bt --locals: every Ruby frame of every thread has self"
}

# info_args LABEL TARGET...: info args of frame 3 (inner) names the parameters the
# target's own Method#parameters listed ("param" records), in order, with the values
# `frame 3` gives them; the block (frame 1) has x, outer (frame 4) none.
info_args() {
	local label=$1 want got; shift
	want=$(awk -F'\t' '$1 == "param" && $2 == "main" && $3 == 3 { print $4 }' "$RB_TRUTH")
	"$RBINSPECT" --json "$@" -ex 'fr 3' -ex 'info args' >"$RB_TMP/args.json" 2>"$RB_TMP/args.err"
	got=$(python3 -c '
import json, sys
frame, args = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
vals = {l["name"]: l["value"] for l in frame["locals"]}
for a in args["arguments"]:
    print(a["name"] if a["value"] == vals.get(a["name"]) else a["name"] + " (value differs)")
' "$RB_TMP/args.json" 2>&1)
	is "$got" "$want" "$label: info args of frame 3: Method#parameters' names, frame's values"
	got=$("$RBINSPECT" "$@" -ex 'fr 1' -ex 'info args' -ex 'fr 4' -ex 'info args' 2>&1 |
		grep -v '^ \|^#')
	is "$got" "$(printf 'x = 1\nNo arguments.')" "$label: info args: the block's x; outer has none"
}

first=1
while read -r kind ver root cmd; do
	if ! ruby_start "$kind" "$root" "$cmd" simple.rb; then
		not_ok "$kind $ver: simple.rb did not start"; continue
	fi
	wait_parked "$RB_PID" || diag "$kind $ver: not every task sleeps"
	r=(-p "$RB_PID")
	p_records "$kind $ver live" local "${r[@]}"
	p_records "$kind $ver live" expr "${r[@]}"
	info_args "$kind $ver live" "${r[@]}"
	bt_locals "$kind $ver live" "${r[@]}"
	bt_locals "$kind $ver live" --native "${r[@]}"

	# One step into a value, and the frame's receiver.
	got=$("$RBINSPECT" "${r[@]}" -ex 'fr 3' -ex 'p arr[1]' -ex 'p arr[-2]' -ex 'p arr[5]' \
		-ex 'p arr.length' -ex 'p long.bytesize' -ex 'p obj.class' -ex 'p self' 2>&1 |
		sed -n '/^  *later = /,$p' | tail -n +2)
	want=$(printf '2\n1\nnil\n2\n600\n')
	is "$(head -5 <<<"$got")" "$want" "$kind $ver: p arr[1], arr[-2], arr[5], arr.length, long.bytesize"
	like "$(sed -n 6,7p <<<"$got" | tr '\n' ' ')" '^Thing \(Class\) #<Object 0x[0-9a-f]+> $' \
		"$kind $ver: p obj.class, p self"

	core=$(core_of "$RB_PID")
	p_records "$kind $ver core" local "$core"
	p_records "$kind $ver core" expr "$core"
	info_args "$kind $ver core" "$core"
	bt_locals "$kind $ver core" "$core"
	bt_locals "$kind $ver core" --native "$core"
	rm -f "$core"

	if [ "$first" = 1 ]; then
		first=0
		"$RBINSPECT" "${r[@]}" -ex 'fr 3' -ex 'print esc' >"$RB_TMP/esc.txt" 2>&1
		check "print: control characters and bidirectional controls are escaped" \
			grep -qxF '"tab\tnl\n\e[31mredé\"q\\\u{202e}"' "$RB_TMP/esc.txt"
		"$RBINSPECT" "${r[@]}" p count >"$RB_TMP/one.txt" 2>&1
		is "$?:$(cat "$RB_TMP/one.txt")" "2:rbinspect: p: no local variable \"count\" in frame 0 (it has no locals)" \
			"one-shot p in frame 0 (Kernel#sleep): no such local, exit 2"
		# A name that is not there: one line naming what is, exit 2.
		for e in '@nosuch|self has no instance variable @nosuch (it has: @top_int, ' \
			'obj.@nosuch|the value has no instance variable @nosuch (it has: @n)' \
			'$nosuch|no global variable $nosuch' 'Nosuch|no constant Nosuch' \
			'Thing::NOSUCH|no constant Thing::NOSUCH (its own: ' \
			'Thing::LIMIT::X|Thing::LIMIT is no class or module'; do
			"$RBINSPECT" "${r[@]}" -ex 'fr 3' -ex "p ${e%%|*}" >/dev/null 2>"$RB_TMP/e.err"
			is "$?:$(wc -l <"$RB_TMP/e.err"):$(grep -cF "rbinspect: p: ${e#*|}" "$RB_TMP/e.err")" \
				"2:1:1" "p ${e%%|*}: one line, ${e#*|}..., exit 2" ||
				diag "$(cat "$RB_TMP/e.err")"
		done
		# What cannot be read: one line saying why, exit 1 (frame 2 is Array#each: self
		# is the Array).
		for e in '2|@n|instance variables are read of an Object, a Class or a Module, and self is a T_ARRAY' \
			'3|$~|$~ is a virtual variable' \
			'3|arr.@n|instance variables are read of an Object, a Class or a Module, and the value is a T_ARRAY'; do
			IFS='|' read -r f x why <<<"$e"
			"$RBINSPECT" "${r[@]}" -ex "fr $f" -ex "p $x" >/dev/null 2>"$RB_TMP/e.err"
			is "$?:$(wc -l <"$RB_TMP/e.err"):$(grep -cF "$why" "$RB_TMP/e.err")" \
				"1:1:1" "p $x in frame $f: one line, $why, exit 1"
		done
		for e in nosuch 'arr[x' 'arr.' 'a b' 'small.foo' 'str[0]' 'obj.@' 'obj.@n.' \
			'arr[0]x'; do
			"$RBINSPECT" "${r[@]}" -ex 'fr 3' -ex "p $e" >/dev/null 2>"$RB_TMP/e.err"
			is "$?:$(wc -l <"$RB_TMP/e.err")" "2:1" "p $e: one line, exit 2"
		done
		"$RBINSPECT" "${r[@]}" bt 1 --locals --max-value-bytes 4 >"$RB_TMP/btl.txt" 2>&1
		check "bt --locals --max-value-bytes 4: Strings cut, with their length" \
			grep -qxF '    long = "xxxx"... (600 bytes)' "$RB_TMP/btl.txt"
		check "bt --locals: escaped values" \
			grep -qxF '    esc = "tab\t"... (23 bytes)' "$RB_TMP/btl.txt"
		check "bt --locals: no raw escape byte reaches the output" \
			bash -c "! grep -q \$'\\x1b' '$RB_TMP/btl.txt'"
		check "bt --locals: a C frame shows its self" \
			grep -qA1 "in 'Array#each'\$" "$RB_TMP/btl.txt"
		"$RBINSPECT" "${r[@]}" bt 1 --locals --native >"$RB_TMP/btln.txt" 2>&1
		check "bt --locals --native: a C method's line on its C function's, then its self" \
			grep -qA1 "in 'Kernel#sleep'\$" "$RB_TMP/btln.txt"
		is "$(grep -A3 "in 'Object#inner'\$" "$RB_TMP/btln.txt" | sed -n 4p)" \
			'    count = 3' "bt --locals --native: inner's locals under its line"
		"$RBINSPECT" "${r[@]}" bt --locals --max-value-bytes 0 >/dev/null 2>&1
		is "$?" 2 "bt --max-value-bytes 0: exit 2"
		"$RBINSPECT" "${r[@]}" bt --max-value-bytes 5 >/dev/null 2>"$RB_TMP/e.err"
		is "$?:$(wc -l <"$RB_TMP/e.err")" "2:1" "bt --max-value-bytes without --locals: one line, exit 2"
	fi
	kill -9 "$RB_PID"
done < <(rubies_list)

# p @ivar where self is a module: Lab.wait_inner (fibers.rb, thread "fibered") reads Lab's
# own instance variables, and p LEX_INT Lab's constants through the frame's lexical scope
# (not from the top level, where they are not), live and from a core, on every Ruby.
while read -r kind ver root cmd; do
	if ! ruby_start "$kind" "$root" "$cmd" fibers.rb; then
		not_ok "$kind $ver: fibers.rb did not start"; continue
	fi
	wait_parked "$RB_PID" || diag "$kind $ver: fibers.rb: not every task sleeps"
	p_records "$kind $ver live" expr --thread fibered -p "$RB_PID"
	th=$("$RBINSPECT" --json -p "$RB_PID" threads | jq '.threads[] | select(.name == "fibered") | .number')
	"$RBINSPECT" -p "$RB_PID" -ex "thread $th" -ex 'frame 1' -ex 'p ::LEX_INT' >/dev/null 2>"$RB_TMP/lex.err"
	is "$?:$(grep -c 'no constant LEX_INT' "$RB_TMP/lex.err")" "2:1" \
		"$kind $ver: p ::LEX_INT reads from the top level, where Lab's LEX_INT is not"
	core=$(core_of "$RB_PID")
	p_records "$kind $ver core" expr --thread fibered "$core"
	rm -f "$core"
	kill -9 "$RB_PID"
done < <(rubies_list)

# bt --fibers --locals: suspended fibers' frames with their locals (fibers.rb: Lab.produce(y)
# in an external enumerator, Lab.request(n) in scheduler fibers for n = 0 and 1,
# Lab.run_fibered's inner Fiber), live and from a core.
read -r kind ver root cmd < <(rubies_list | awk '$1 == "deb"' | tail -1)
if [ -z "$kind" ]; then
	skip "bt --fibers --locals: no Debian Ruby in this list"
elif ruby_start "$kind" "$root" "$cmd" fibers.rb; then
	wait_parked "$RB_PID" || diag "fibers.rb: not every task sleeps"
	core=$(core_of "$RB_PID")
	for t in "-p $RB_PID" "$core"; do
		what=$([ "$t" = "$core" ] && echo core || echo live)
		# shellcheck disable=SC2086
		"$RBINSPECT" --json $t bt --fibers --locals >"$RB_TMP/fib.json" 2>"$RB_TMP/fib.err"
		got=$(jq -r '[.. | objects | select(.base_label? | IN("produce", "request", "run_fibered")) |
			"\(.base_label) " + ([.locals[] | select(.internal | not) |
			"\(.name)=\(.value.class):\(.value.value)"] | join(","))] | unique | join(" ")' \
			"$RB_TMP/fib.json" 2>&1)
		is "$got" "produce y=Enumerator::Yielder:null request n=Integer:0 request n=Integer:1 run_fibered inner=Fiber:null" \
			"$kind $ver $what: bt --fibers --locals: the suspended fibers' locals"
	done
	rm -f "$core"
	kill -9 "$RB_PID"
else
	not_ok "fibers.rb did not start"
fi

# A process in its own pid namespace (a container): threads and bt give each
# thread's host tid beside its own, as this machine's /proc numbers it.
read -r kind ver root cmd < <(rubies_list | awk '$1 == "deb"' | tail -1)
if [ -z "$kind" ]; then
	skip "container: no Debian Ruby in this list"
elif why=$(no_ns); then
	skip "container: $why"
elif ruby_start "$kind" "$root" "$cmd" simple.rb ns; then
	want=$(for t in /proc/"$RB_PID"/task/*; do
		awk -v h="${t##*/}" '$1 == "NSpid:" { print $NF, h }' "$t/status"
	done | sort -n)
	"$RBINSPECT" --json -p "$RB_PID" threads >"$RB_TMP/nsth.json" 2>&1
	got=$(jq -r '.threads[] | "\(.tid) \(.host_tid)"' "$RB_TMP/nsth.json" | sort -n)
	missing=$(comm -23 <(sort <<<"$got") <(sort <<<"$want"))
	is "$(wc -l <<<"$got") ${missing:-none}" "3 none" \
		"container: threads --json: each thread's host_tid is the task whose NSpid ends in its tid"
	"$RBINSPECT" -p "$RB_PID" bt 1 >"$RB_TMP/nsbt.txt" 2>&1
	check "container: bt names the host tid of the main thread (tid 1 inside)" \
		grep -qE "^Thread 1 \(main\) tid 1 \(host tid $RB_PID\) " "$RB_TMP/nsbt.txt"
	"$RBINSPECT" -p "$RB_PID" threads >"$RB_TMP/nsth.txt" 2>&1
	check "container: threads: tid 1 (host $RB_PID)" \
		grep -qE "^ +1 +0x[0-9a-f]+ +1 \(host $RB_PID\) " "$RB_TMP/nsth.txt"
	# Every status starts under the header's STATUS, however wide the tids.
	is "$(awk 'NR == 1 { at = index($0, "STATUS"); next }
		substr($0, at - 1, 2) !~ /^ [a-z]/ { bad++ } END { print NR - 1, bad + 0 }' \
		"$RB_TMP/nsth.txt")" "3 0" "container: threads: the columns line up under the header"
	kill -9 "$RB_PID"
	if ruby_start "$kind" "$root" "$cmd" simple.rb; then
		"$RBINSPECT" --json -p "$RB_PID" threads >"$RB_TMP/th.json" 2>&1
		is "$(jq '[.threads[] | .tid == .host_tid] | all' "$RB_TMP/th.json")" true \
			"no namespace: host_tid is the tid"
		kill -9 "$RB_PID"
	fi
else
	not_ok "container: simple.rb did not start in a namespace"
fi
tap_done
