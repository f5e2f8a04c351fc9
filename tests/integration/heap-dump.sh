# heap-dump.sh: `rbinspect heap-dump` on every test Ruby, live (--pause) and from a core,
# against the target's own ObjectSpace.dump_all of the same heap (testdata/programs/heap.rb
# writes it at a quiet moment, with GC off, then parks): every object it wrote at its
# address with its type, class and (3.3+) shape_id, Strings, Arrays, classes and modules
# with the fields dump_all gives them, Objects' ivars, Hashes' size and default, the
# references of Arrays, Objects, Hashes, Structs, Strings, Floats, Bignums, Symbols,
# Rationals, Complexes, Regexps, MatchData, Files, classes, modules and include wrappers
# where heap-dump can read them (heap.rb makes each with references: --need), and none
# where it says it cannot, those of every object with generic instance variables (an
# Array, Hash, Struct, Time, Proc and Strings of heap.rb's among them, generic ivars first), those of every
# Proc, Binding, Method, environment, method entry and lexical scope (heap.rb's closures among them: each matches, in
# marking order), of every Time, ARGF, Monitor, autoload's data, Queue, SizedQueue, 3.4's
# list of registered objects, ifunc, memo, call info and (3.1, 3.3, 3.4) call cache (the
# same), on 2.7, 3.1, 3.3 and 3.4 of every instruction sequence, of every Ractor, and (live --pause;
# from a core in the budget) of every Thread and Fiber but the Thread that ran dump_all and
# its Fiber (heap.rb's sleeping Thread and suspended Fiber: their stacks included; the
# counts printed), the ROOT lines (global_tbl and, up to 3.3, global_list as the target's,
# vm a part of its, a
# machine_context), GC flags and memsize (their match rate per type printed), and on 3.3+
# the SHAPE lines, every shape the truth has with all its fields (tests/heap-check.py
# --roots --gc).  Also: gzip output
# (FILE.gz), standard output, the process runs on untraced after --pause, and bad
# arguments and unwritable files get one line.  `heap diff` of three dumps of
# testdata/programs/leak.rb, which keeps 1000 objects of its own class a step: the new
# ones between two dumps, the retained ones of three; and (on the first Ruby: the
# dumps are heap-dump's, tested on each) of the snapshots `heap diff --every` takes
# of the running process itself, a step made between them.  And heap.rb again with
# ObjectSpace.trace_object_allocations on: every allocation site (file, line, method,
# generation) as dump_all's, live and from a core; none written when it was never on.
set -u
. "$(dirname "$0")/../tap.sh"
. "$(dirname "$0")/../rubies.sh"
check_py=$here/tests/heap-check.py
# The types heap.rb makes objects with references of (to be compared, not vacuous).
heap_rb_refs=OBJECT,HASH,STRUCT,STRING,RATIONAL,COMPLEX,REGEXP,MATCH,FILE,CLASS,MODULE,ICLASS
# The DATA and IMEMO kinds every heap.rb heap has (callcache from 3.0), and those some
# Rubies' have (each compared where it is).
heap_rb_kinds="time ARGF monitor ifunc memo autoload_const callcache queue sized_queue ractor"
heap_rb_kinds="$heap_rb_kinds VM/thread fiber random/MT backtrace frame_info enumerator dir"
other_kinds="callinfo autoload autoload_i autoload_data autoload_table VM/pin_array_list random"
other_kinds="$other_kinds marshal_compat_table"

# compare LABEL DUMP: DUMP (heap-dump's standard error in $RB_TMP/err) against the truth
# the program wrote, and the references of its objects with generic instance variables
# (heap.rb lists them) as dump_all's, in its order, each of them: heap.rb's of every type
# among them; unless heap-dump said it did not find their table (then they may be left
# out: 1 % of their type, and that said here).
compare() {
	local out unread genivar_unread=
	unread=$(heap_unread "$kind" "$ver")
	grep -q 'generic instance variables written without references' "$RB_TMP/err" &&
		genivar_unread=--genivar-unread
	if out=$(python3 "$check_py" --values --roots --gc --unread "$unread" \
		--need "$heap_rb_refs" --genivar "$RB_TRUTH.genivar" $genivar_unread \
		"$RB_TRUTH" "$2" 2>&1); then
		ok "$1: every object dump_all wrote, as it wrote it ($(grep -m 1 'objects in the truth' <<<"$out"))"
		if [ -n "$genivar_unread" ]; then
			skip "$1: generic ivars not read: $(grep -m 1 'generic instance variables written without' "$RB_TMP/err")"
		else
			like "$(grep '^generic ivars ' <<<"$out")" \
				"^generic ivars ([1-9][0-9]*)/\\1 \\(\\1 in order; ARRAY [1-9][0-9]*, DATA [1-9][0-9]*, HASH [1-9][0-9]*, STRING [1-9][0-9]*, STRUCT [1-9][0-9]*\\)$" \
				"$1: the references of every object with generic instance variables as dump_all's, in its order ($(grep -m 1 '^generic ivars ' <<<"$out"))"
		fi
		diag "$1: GC flags and memsize that match dump_all's: $(tail -n 1 <<<"$out")"
		diag "$1: $(grep '^references ' <<<"$out")"
		for k in binding cref env iseq method ment proc $heap_rb_kinds $other_kinds; do
			[[ ,$unread, == *,$k,* ]] && continue
			[[ " $other_kinds " == *" $k "* ]] &&
				! grep -Eq "(^references |; )$k [0-9]" <<<"$out" && continue
			[[ $k == callcache && $ver == 2.* ]] && continue
			# gcore may not copy a thread's stack: one whose guard page glibc put
			# inside its mapping (MADV_GUARD_INSTALL, VmFlags "gu": the glibc of
			# Debian's 3.4.11 root) is written all zeros, its read having failed.
			# Threads' and fibers' references of a core are in the budget only.
			[[ $1 == *core && ($k == VM/thread || $k == fiber) ]] && continue
			like "$(grep '^references ' <<<"$out")" "(^references |; )$k ([1-9][0-9]*)/\\2 \\(\\2 in order\\)(;|$)" \
				"$1: the references of every $k as dump_all's, in its order"
		done
	else
		not_ok "$1: objects differ from the target's own dump_all"; diag "$out"
	fi
}

# traced KIND VER ROOT CMD: heap.rb with ObjectSpace.trace_object_allocations on
# (RBI_HEAP_TRACE=1): every object dump_all wrote a file, line, method and generation for
# has the same in heap-dump's, live (--pause) and from a core (heap-check.py --alloc: the
# truth has some, all match); the count printed.
traced() {
	local out
	if ! RBI_HEAP_TRACE=1 ruby_start "$1" "$3" "$4" heap.rb; then
		not_ok "$R traced: heap.rb did not start"; return
	fi
	wait_parked "$RB_PID" || diag "$R traced: not every task sleeps"
	"$RBINSPECT" -p "$RB_PID" heap-dump --pause -o "$RB_TMP/traced.json" 2>"$RB_TMP/err"
	is "$? $(grep -Ec '^rbinspect: heap-dump: [1-9][0-9]* objects with the allocation site' "$RB_TMP/err")" \
		"0 1" "$R traced live: heap-dump exits 0 and counts the objects with an allocation site"
	core=$(core_of "$RB_PID")
	"$RBINSPECT" "$core" heap-dump -o "$RB_TMP/traced-core.json" 2>/dev/null
	# A full disk: the write's failure, never "N objects written" before it.
	"$RBINSPECT" "$core" heap-dump -o /dev/full 2>"$RB_TMP/err"
	is "$? $(grep -c 'objects written' "$RB_TMP/err") $(grep -c 'writing /dev/full failed' "$RB_TMP/err")" \
		"1 0 1" "$R core: heap-dump -o /dev/full: exit 1, the write's failure, no count of objects written"
	rm -f "$core"
	for f in traced traced-core; do
		if out=$(python3 "$check_py" --alloc --unread "$(heap_unread "$1" "$2")" \
			"$RB_TRUTH" "$RB_TMP/$f.json" 2>&1); then
			ok "$R $f: every allocation site dump_all wrote, as it wrote it ($(grep -m 1 '^allocation sites' <<<"$out"))"
		else
			not_ok "$R $f: allocation sites differ from the target's own dump_all"; diag "$out"
		fi
	done
	kill -9 "$RB_PID" 2>/dev/null
}

# snapshots_of_leak: heap diff --every of leak.rb (two steps made so far), a third step
# made once the first snapshot is written: its 1000 RbiLeak::Item new in the second, the
# temporary snapshots gone; then three kept with --keep.
snapshots_of_leak() {
	local tmp=$RB_TMP/tmpdir pid
	mkdir -p "$tmp"
	TMPDIR=$tmp "$RBINSPECT" --json -p "$RB_PID" heap diff --every 4 --pause \
		>"$RB_TMP/snap.json" 2>"$RB_TMP/snap.err" &
	pid=$!
	for _ in $(seq 1 300); do
		grep -q 'snapshot-1.json.gz (paused)' "$RB_TMP/snap.err" && break
		sleep 0.1
	done
	kill -USR1 "$RB_PID"
	for _ in $(seq 1 100); do
		[ "$(cat "$RB_TRUTH.ack" 2>/dev/null)" = 3 ] && break
		sleep 0.1
	done
	wait "$pid"
	is "$? $(jq -r '[.new[] | select(.class_name == "RbiLeak::Item" and .type == "OBJECT") | .count] | add' "$RB_TMP/snap.json") $(ls -A "$tmp" | wc -l)" \
		"0 1000 0" "$R: heap diff --every: the step made between its snapshots is new, the snapshots removed"
	"$RBINSPECT" --json -p "$RB_PID" heap diff --every 1 --snapshots 3 --pause --keep "$RB_TMP/kept" \
		>"$RB_TMP/snap3.json" 2>"$RB_TMP/snap.err"
	is "$? $(jq '.objects | length' "$RB_TMP/snap3.json") $(jq '.retained | type' "$RB_TMP/snap3.json") $(cd "$RB_TMP/kept" && gzip -t snapshot-1.json.gz snapshot-2.json.gz snapshot-3.json.gz && echo kept)" \
		"0 3 \"array\" kept" "$R: heap diff --every --snapshots 3 --keep DIR: the retained view, the three dumps kept"
}

first=1 snap_first=1
# gz_after_resume: heap-dump --pause -o FILE.gz lets the process go before it compresses
# (strace: the last PTRACE_DETACH comes before the first write to FILE.gz; before, the
# process waited for zlib, 5.9 s against 1.6 s for plain JSON on a Rails worker), and the
# file holds what the plain dump does.
gz_after_resume() {
	local log=$RB_TMP/gz.strace detach first
	if ! command -v strace >/dev/null; then
		skip "$R: heap-dump --pause -o FILE.gz: no strace"; return 0
	fi
	strace_to "$log" -y -e trace=ptrace,write -- \
		"$RBINSPECT" -p "$RB_PID" heap-dump --pause -o "$RB_TMP/after.json.gz" 2>/dev/null
	detach=$(grep -n 'PTRACE_DETACH' "$log" | tail -n 1 | cut -d: -f1)
	first=$(grep -n 'write([0-9]*</[^>]*after\.json\.gz>' "$log" | head -n 1 | cut -d: -f1)
	if [ -n "$detach" ] && [ -n "$first" ] && [ "$detach" -lt "$first" ]; then
		ok "$R: heap-dump --pause -o FILE.gz: the process is let go before compressing"
	else
		not_ok "$R: heap-dump --pause -o FILE.gz: the process is let go before compressing (detach at line ${detach:-none}, first write at ${first:-none})"
	fi
	"$RBINSPECT" -p "$RB_PID" heap-dump --pause -o "$RB_TMP/after.json" 2>/dev/null
	is "$(zcat "$RB_TMP/after.json.gz" | wc -l)" "$(wc -l <"$RB_TMP/after.json")" \
		"$R: heap-dump --pause -o FILE.gz: as many lines as the plain dump"
	return 0
}

while read -r kind ver root cmd; do
	R="$kind $ver"
	if ! ruby_start "$kind" "$root" "$cmd" heap.rb; then
		not_ok "$R: heap.rb did not start"; continue
	fi
	wait_parked "$RB_PID" || diag "$R: not every task sleeps"
	"$RBINSPECT" -p "$RB_PID" heap-dump --pause --strings -o "$RB_TMP/live.json.gz" \
		2>"$RB_TMP/err"
	is "$?" 0 "$R live: heap-dump --pause exits 0"
	if gzip -t "$RB_TMP/live.json.gz" 2>/dev/null; then
		ok "$R live: -o FILE.gz is gzip"
	else
		not_ok "$R live: -o FILE.gz is gzip"
	fi
	compare "$R live --pause" "$RB_TMP/live.json.gz"
	is "$(gzip -dc "$RB_TMP/live.json.gz" | grep -c '"generation":')" 0 \
		"$R live: objspace loaded, allocations never traced: no allocation sites"
	case $ver in
	2.*|3.[01].*) want= what="no SHAPE lines (no object shapes before 3.2)" ;;
	*) want="FROZEN IVAR OBJ_TOO_COMPLEX ROOT T_OBJECT "
	   what="shapes of every type to compare (heap.rb's Objects, frozen and too complex)" ;;
	esac
	is "$(grep -o '"shape_type":"[A-Z_]*"' "$RB_TRUTH" | cut -d'"' -f4 | sort -u | tr '\n' ' ')" "$want" \
		"$R: the truth has $what"
	# heap.rb's call through its refinement (3.3+; 3.1 marks every call cache's entry).
	case $ver in
	3.[134].*)
		is "$(grep -c '"imemo_type":"callcache".*"references":\["0x' "$RB_TRUTH" | awk '{ print ($1 > 0) }')" 1 \
			"$R: the truth has call caches with references to compare" ;;
	esac
	"$RBINSPECT" --json heap diff "$RB_TRUTH" "$RB_TMP/live.json.gz" >"$RB_TMP/self.json" 2>&1
	is "$(jq -r '[([.gone[].count] | add // 0), ([.new[].count] | add // 0) < 100] | @tsv' "$RB_TMP/self.json")" \
		"$(printf '0\ttrue')" "$R: heap diff of the target's own dump_all and ours: none gone, a few new (printing READY)"
	case $ver in 2.*|3.[01].*) shapes= ;; *) shapes=", [0-9]+ SHAPE lines" ;; esac
	# vm, vm_stack, global_tbl, machine_context, finalizers (heap.rb has one), and up to
	# 3.3 global_list.
	case $ver in 2.*|3.[0-3].*) nroots=6 ;; *) nroots=5 ;; esac
	is "$(grep -Ec "objects written to .*live.json.gz \(paused\), $nroots ROOT lines$shapes\$" "$RB_TMP/err")" 1 \
		"$R live: says how many objects, ROOT and SHAPE lines went where, and that the process was paused"
	wait_parked "$RB_PID"
	is "$(task_states "$RB_PID") $(awk '/^TracerPid/ { print $2 }' "/proc/$RB_PID/status")" "S 0" \
		"$R live: afterwards the process sleeps where it slept, untraced"

	core=$(core_of "$RB_PID")
	"$RBINSPECT" "$core" heap-dump --strings >"$RB_TMP/core.json" 2>"$RB_TMP/err"
	is "$?" 0 "$R core: heap-dump to standard output exits 0"
	compare "$R core" "$RB_TMP/core.json"
	# 2.7 and 3.1 decode iseqs' instructions through the VM's instruction address table,
	# found through the symbol table or DWARF where the build has them, else by the scan of
	# .data.rel.ro that a stripped libruby takes: where all can run, each must find the
	# same table (the same dump, the iseqs' references known as compare showed).
	case $kind-$ver in dwarf-2.7.*|dwarf-3.1.*)
		for way in symtab dwarf scan; do
			RBI_INSN_TABLE=$way "$RBINSPECT" "$core" heap-dump --strings \
				>"$RB_TMP/core-$way.json" 2>/dev/null
			is "$? $(cmp -s "$RB_TMP/core.json" "$RB_TMP/core-$way.json" && echo same)" "0 same" \
				"$R core: the instruction address table found by way of $way alone: the same dump"
		done ;;
	esac
	if [ "$first" = 1 ]; then
		"$RBINSPECT" "$core" heap diff --every 1 >/dev/null 2>"$RB_TMP/err"
		is "$? $(grep -c . "$RB_TMP/err") $(grep -c 'a core is one moment' "$RB_TMP/err")" \
			"2 1 1" "$R core: heap diff --every on a core: one line, exit 2"
	fi
	rm -f "$core"

	if [ "$first" = 1 ]; then
		"$RBINSPECT" -p "$RB_PID" heap-dump -o /nonexistent/dir/x.json >/dev/null 2>"$RB_TMP/err"
		rc=$?
		is "$rc $(grep -c . "$RB_TMP/err") $(grep -c 'cannot create /nonexistent/dir/x.json: No such file' "$RB_TMP/err")" \
			"1 1 1" "$R: an unwritable -o FILE: one line, exit 1"
		"$RBINSPECT" -p "$RB_PID" heap-dump --strings=0 >/dev/null 2>"$RB_TMP/err"
		is "$? $(grep -c . "$RB_TMP/err")" "2 1" "$R: --strings=0: one line, exit 2"
		"$RBINSPECT" -p "$RB_PID" heap-dump --bogus >/dev/null 2>"$RB_TMP/err"
		is "$? $(grep -c . "$RB_TMP/err")" "2 1" "$R: an unknown argument: one line, exit 2"
		"$RBINSPECT" heap diff /nonexistent.json "$RB_TMP/core.json" >/dev/null 2>"$RB_TMP/err"
		is "$? $(grep -c . "$RB_TMP/err") $(grep -c 'nonexistent.json: No such file' "$RB_TMP/err")" \
			"1 1 1" "heap diff of a file that is not there: one line, exit 1"
		echo 'not json' >"$RB_TMP/bad.json"
		"$RBINSPECT" heap diff "$RB_TMP/bad.json" "$RB_TMP/core.json" >/dev/null 2>"$RB_TMP/err"
		is "$? $(grep -c . "$RB_TMP/err") $(grep -c 'bad.json:1: not a JSON object: not a heap dump' "$RB_TMP/err")" \
			"1 1 1" "heap diff of a file that is no heap dump: one line, exit 1"
		# Empty, NUL bytes, /dev/zero: each one line naming what it is, never an empty
		# dump (a heap diff would call every object new) nor an empty message.
		: >"$RB_TMP/empty.json"
		head -c 4096 /dev/zero >"$RB_TMP/nul.json"
		for bad in "$RB_TMP/empty.json|empty: not a heap dump" \
			   "$RB_TMP/nul.json|nul.json:1: a NUL byte: not a heap dump" \
			   "/dev/zero|/dev/zero:1: a NUL byte: not a heap dump"; do
			timeout 60 "$RBINSPECT" heap top "${bad%%|*}" >/dev/null 2>"$RB_TMP/err"
			is "$? $(grep -c . "$RB_TMP/err") $(grep -cF "${bad#*|}" "$RB_TMP/err")" \
				"1 1 1" "heap top $(basename "${bad%%|*}"): one line, ${bad#*|}, exit 1"
		done
		"$RBINSPECT" heap diff "$RB_TMP/core.json" >/dev/null 2>"$RB_TMP/err"
		is "$? $(grep -c . "$RB_TMP/err")" "2 1" "heap diff of one dump: one line, exit 2"
		for bad in "--every 0" "--every 2 $RB_TMP/core.json $RB_TMP/core.json" "--snapshots 4 --every 1" \
			   "--keep $RB_TMP"; do
			# shellcheck disable=SC2086
			"$RBINSPECT" -p "$RB_PID" heap diff $bad >/dev/null 2>"$RB_TMP/err"
			is "$? $(grep -c . "$RB_TMP/err")" "2 1" "heap diff $bad: one line, exit 2"
		done
		"$RBINSPECT" heap diff --every 1 >/dev/null 2>"$RB_TMP/err"
		is "$? $(grep -c 'give it with -p PID' "$RB_TMP/err")" "2 1" \
			"heap diff --every with no process: one line, exit 2"
		first=0
	fi
	kill -9 "$RB_PID" 2>/dev/null
	traced "$kind" "$ver" "$root" "$cmd"

	# heap diff: leak.rb keeps 1000 RbiLeak::Item a step and drops 3000 Strings.
	if ruby_start "$kind" "$root" "$cmd" leak.rb; then
		for i in 0 1 2; do
			if [ "$i" -gt 0 ]; then
				kill -USR1 "$RB_PID"
				for _ in $(seq 1 100); do
					[ "$(cat "$RB_TRUTH.ack" 2>/dev/null)" = "$i" ] && break
					sleep 0.1
				done
			fi
			wait_parked "$RB_PID"
			"$RBINSPECT" -p "$RB_PID" heap dump --pause -o "$RB_TMP/leak$i.json.gz" 2>/dev/null
		done
		"$RBINSPECT" --json heap diff "$RB_TMP/leak0.json.gz" "$RB_TMP/leak1.json.gz" \
			>"$RB_TMP/diff2.json" 2>"$RB_TMP/err"
		is "$? $(jq -r '[.new[] | select(.class_name == "RbiLeak::Item" and .type == "OBJECT") | .count] | add' "$RB_TMP/diff2.json")" \
			"0 1000" "$R: heap diff A B: the step's 1000 RbiLeak::Item are new"
		"$RBINSPECT" --json heap diff "$RB_TMP/leak0.json.gz" "$RB_TMP/leak1.json.gz" \
			"$RB_TMP/leak2.json.gz" >"$RB_TMP/diff3.json" 2>"$RB_TMP/err"
		is "$? $(jq -r '[.retained[] | select(.class_name == "RbiLeak::Item" and .type == "OBJECT") | .count] | add' "$RB_TMP/diff3.json") $(jq '.objects | length' "$RB_TMP/diff3.json")" \
			"0 1000 3" "$R: heap diff A B C: the 1000 made between A and B are retained in C"
		is "$(jq -r '[.retained[] | select(.type == "STRING") | .count] | add // 0 | . < 100' "$RB_TMP/diff3.json")" \
			true "$R: heap diff A B C: the dropped Strings are not retained"
		[ "$snap_first" = 1 ] && { snapshots_of_leak; gz_after_resume; }
		snap_first=0
		kill -9 "$RB_PID" 2>/dev/null
	else
		not_ok "$R: leak.rb did not start"
	fi
done < <(rubies_list)
tap_done
