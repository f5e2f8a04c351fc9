# crash.sh: the cores users bring, on every test Ruby: written by the kernel after Ruby's own
# [BUG] handler ran.  testdata/programs/crash.rb parks its threads and writes their truth
# (lib/truth.rb), then dies one of two ways:
#   segv  its "crasher" thread writes through NULL in a C extension (testdata/crashext),
#         under a chain of Ruby calls: SIGSEGV, SEGV_MAPERR at 0x0, in that thread;
#   self  that C code sends SIGSEGV to its own process instead (kill(2): the kernel hands it
#         to the main thread);
#   kill  another process sends it SIGSEGV (to the main thread too).
# Ruby prints its [BUG] report and ends the process (abort() up to 3.2, the same signal
# raised again from 3.3), and the kernel writes the core.  Checked on the core: every thread
# and frame against the truth, the crashed thread (first in bt, marked in threads), the
# signal Ruby's handler reported and the one that ended the process (against gdb's word on
# the same core), info and JSON, object counts, heap-dump (the segv core: against the
# program's own ObjectSpace.dump_all), gdb's rb-bt, and the core compressed as
# systemd-coredump stores it.  Then the core is read as if carried off its machine, without
# the Ruby's files: Debian's Rubies ran in a chroot, so the core names paths this machine
# does not have; a DWARF build runs from a copy of its ruby and libruby that is removed
# after the crash.  Version, threads and frames must still read (but for what lived only
# in libruby's read-only data), and a wrong --ruby-version must be refused.
# None of it may take more than seconds: libdw once searched such a core's symbol tables for
# minutes.
#
# Where the core goes: see tests/crashes.sh.  Once, the pattern is a pipe to a helper of the
# test's own (as systemd-coredump gets its cores: on standard input, holes written as zeros).
set -u
. "$(dirname "$0")/../tap.sh"
. "$(dirname "$0")/../rubies.sh"
check_py=$here/tests/bt-check.py
# A cached DWARF layout (by build-id) would stand in for a wrong --ruby-version.
export RBI_NO_CACHE=1
build=${RBI_BUILD:-$(cd "$(dirname "$RBINSPECT")/.." && pwd)}
GDB_SCRIPT=$build/gdb-plugin/rbinspect-uninstalled.gdb
. "$(dirname "$0")/../crashes.sh"
crash_setup || { skip "crash cores: $CRASH_WHY"; tap_done; exit 0; }

# compressed_cores NAME CORE BT_JSON RBINSPECT-OPTS...: the core compressed as
# systemd-coredump stores it (zstd; lz4 and xz when so configured) and as people carry it
# (gzip) reads as the core itself; a cut stream is one line.  zstd on every Ruby, the
# others on the first.
compressed_formats="zst lz4 xz gz"
compressed_cores() {
	local name=$1 core=$2 want=$3 fmt out rc
	shift 3
	for fmt in $compressed_formats; do
		case $fmt in
		zst) zstd -q -f -o "$core.$fmt" "$core" ;;
		lz4) lz4 -q -f "$core" "$core.$fmt" ;;
		xz) xz -T0 -1 -kc "$core" >"$core.$fmt" ;;
		gz) gzip -1 -c "$core" >"$core.$fmt" ;;
		esac
		"$RBINSPECT" "$@" --json "$core.$fmt" bt >"$core.$fmt.json" 2>/dev/null
		if cmp -s "$want" "$core.$fmt.json"; then
			ok "$name: the core as .$fmt reads as the core itself"
		else
			not_ok "$name: the core as .$fmt reads as the core itself"
		fi
	done
	if [ "$compressed_formats" != zst ]; then
		head -c 200000 "$core.zst" >"$core.cut.zst"
		out=$("$RBINSPECT" "$@" "$core.cut.zst" bt 2>&1 >/dev/null); rc=$?
		if [ "$rc" = 6 ] && [ "$(grep -c . <<<"$out")" = 1 ] && grep -q 'zstd data ends early' <<<"$out"; then
			ok "$name: a cut .zst core: one line, exit 6"
		else
			not_ok "$name: a cut .zst core: one line, exit 6"; diag "exit $rc: $out"
		fi
	fi
	rm -f "$core".*
	compressed_formats=zst
}

# offline_core NAME CORE TRUTH VERSION: CORE, whose Ruby's files are gone, read as a core
# carried off its machine.
offline_core() {
	local name="$1 without its files" core=$2 truth=$3 ver=$4 j=$RB_TMP/offline out rc
	# No search for what the core lacks may run on: libdw sized .dynsym by walking
	# hash chains over the zero pages a kernel core has for libruby's text, for
	# minutes (images.c hands it no such image).  Each command, the native unwinder
	# and its symbol tables included, ends in seconds.
	local cmd slow=""
	for cmd in info bt "bt --native"; do
		start=$(date +%s%N)
		# shellcheck disable=SC2086
		timeout 60 "$RBINSPECT" "$core" $cmd >/dev/null 2>"$j.err"; rc=$?
		ms=$(( ($(date +%s%N) - start) / 1000000 ))
		{ [ "$rc" = 124 ] || [ "$ms" -ge 10000 ]; } && slow="$slow $cmd: ${ms} ms (exit $rc);"
	done
	is "$slow" "" "$name: info, bt and bt --native end in under 10 s"
	if grep -q "symbol tables are not in the core.*--sysroot" "$j.err"; then
		ok "$name: bt --native says which symbols it went without"
	else
		not_ok "$name: bt --native says which symbols it went without"; diag "$(cat "$j.err")"
	fi
	"$RBINSPECT" --json "$core" info >"$j.info" 2>"$j.err"
	is "$(jq -r '[.version, (.version_via | startswith("file name libruby")), .vm_source] | @tsv' "$j.info")" \
		"$(printf '%s\ttrue\tscan' "$ver")" "$name: the version from libruby's file name, the VM from its data"
	"$RBINSPECT" --json "$core" bt >"$j.bt" 2>>"$j.err"
	if out=$(python3 "$check_py" --offline "$truth" "$j.bt" 2>&1); then
		ok "$name: every thread and frame matches the truth (labels in libruby's .rodata unknown)"
	else
		not_ok "$name: frames differ from the truth"; diag "$out"; diag "$(cat "$j.err")"
	fi
	# A release whose table was only derived from headers: info says so plainly, in its
	# layout line and in a warning that says how to do better.
	local unchecked=""
	case $ver in 3.3.*) unchecked=3.3.5 ;; 3.4.*) unchecked=3.4.2 ;; esac
	if [ -n "$unchecked" ]; then
		"$RBINSPECT" --ruby-version $unchecked --json "$core" info >"$j.unchecked" 2>/dev/null
		is "$(jq -r '[(.layout | endswith("never checked against a real build)")),
			      (.warnings | map(select(test("never checked against a real '"$unchecked"' build.*DWARF"))) | length)] | @tsv' "$j.unchecked")" \
			"$(printf 'true\t1')" "$name: as Ruby $unchecked, whose offsets were never checked on a real build: info says so"
		is "$(jq -r '[(.layout | test("never checked")), (.warnings | map(select(test("never checked"))) | length)] | @tsv' "$j.info")" \
			"$(printf 'false\t0')" "$name: as its own version, checked offsets: no such warning"
	fi
	# A version of another generation: neighbours (2.6 and 2.7) share the VM's layout.
	local wrong=3.4.1
	[ "${ver%%.*}" = 3 ] && wrong=2.7.8
	out=$("$RBINSPECT" --ruby-version $wrong "$core" bt 2>&1 >/dev/null); rc=$?
	if [ "$rc" = 7 ] && [ "$(tail -n 1 <<<"$out" | grep -c "no VM validates as Ruby $wrong.*--ruby-version")" = 1 ]; then
		ok "$name: a wrong --ruby-version is refused (exit 7), warnings first"
	else
		not_ok "$name: a wrong --ruby-version is refused (exit 7), warnings first"; diag "exit $rc: $out"
	fi
}

# crash_heap_dump NAME CORE KIND VER RBINSPECT-OPTS...: heap-dump of the crash core against
# the program's own dump_all, written with GC off once its threads were parked: every object
# as it wrote it (tests/heap-check.py, what heap-dump.sh checks on a gcore core).  Objects
# allocated after it (waking the crasher, Ruby's [BUG] report) are only in ours: allowed.
# Threads and Fibers are not compared: the thread that wrote the truth and the crasher
# have run on since, their stacks (which Threads and Fibers mark) no longer the truth's.
crash_heap_dump() {
	local name=$1 core=$2 kind=$3 ver=$4 out genivar_unread=
	shift 4
	"$RBINSPECT" "$@" "$core" heap-dump --strings -o "$RB_TMP/crash-heap.json" 2>"$RB_TMP/crash-heap.err"
	is "$?" 0 "$name: heap-dump of the crash core exits 0"
	# Objects with generic instance variables left out where their table was not found.
	grep -q 'generic instance variables written without references' "$RB_TMP/crash-heap.err" &&
		genivar_unread=--genivar-unread
	if out=$(python3 "$here/tests/heap-check.py" --values --roots --gc $genivar_unread \
		--unread "$(heap_unread "$kind" "$ver")" --skip VM/thread,fiber "$RB_TRUTH.heap.json" \
		"$RB_TMP/crash-heap.json" 2>&1); then
		ok "$name: heap-dump of the crash core: every object dump_all wrote before the crash ($(grep -m 1 'objects in the truth' <<<"$out"))"
		diag "$name: the differences: $(grep -Eo '^[^:]+: [0-9]+, e\.g\.' <<<"$out" | sed 's/, e\.g\.//' | paste -sd ';')"
	else
		not_ok "$name: heap-dump of the crash core differs from the target's own dump_all"
		diag "$out"; diag "$(cat "$RB_TMP/crash-heap.err")"
	fi
	rm -f "$RB_TMP/crash-heap.json"
}

# crash_case KIND VER ROOT CMD MODE [pipe]: MODE segv or kill; "pipe": the core through a
# piped core_pattern (then only what a core is checked for, not the extra ways to read it).
crash_case() {
	local kind=$1 ver=$2 root=$3 cmd=$4 mode=$5 via=${6:-file} name="$1 $2 $5" core sender=0
	local j=$RB_TMP/$mode copy="" lib want_tid opts=()
	[ "$via" = pipe ] && name="$name, piped core"
	if [ "$kind" = deb ]; then
		opts=(--sysroot "$root")
	else
		# Its ruby and libruby from a copy that can go away (RUNPATH gives way to
		# LD_LIBRARY_PATH); the rest of the Ruby stays where it is.
		copy=$RB_TMP/ruby-copy
		rm -rf "$copy" && mkdir -p "$copy/bin" "$copy/lib"
		cp -a "$cmd" "$copy/bin/" && cp -a "$root"/lib/libruby.so* "$copy/lib/"
		cmd=$copy/bin/ruby
	fi
	# The file crash: the heap's truth too (lib/truth.rb), for heap-dump of the core.
	local heap=0
	[ "$mode$via" = segvfile ] && heap=1
	if ! RBI_HEAP_TRUTH=$heap LD_LIBRARY_PATH=${copy:+$copy/lib} crash_start "$kind" "$root" "$cmd"; then
		not_ok "$name: crash.rb did not start"; return
	fi
	wait_parked "$RB_PID" || diag "$name: not every task sleeps"
	[ "$via" = pipe ] && crash_pipe_pattern
	case $mode in
	segv) want_tid=$(cat "$RB_TRUTH.tid"); crash_segv ;;
	self) want_tid=$(truth_get pid); sender=$(truth_get pid); crash_self ;;
	kill) want_tid=$(truth_get pid); sender=$BASHPID; kill -SEGV "$RB_PID" ;;
	esac
	if ! wait_dead "$RB_PID"; then
		not_ok "$name: the process did not die"; return
	fi
	core=$(crash_core "$via")
	[ "$via" = pipe ] && crash_file_pattern
	if [ -z "$core" ]; then
		not_ok "$name: the kernel wrote no core"; diag "$(tail -n 3 "$RB_TMP"/crash.*.out)"; return
	fi
	crash_truth "$mode" >"$j.truth"

	"$RBINSPECT" "${opts[@]}" --json "$core" bt >"$j.bt.json" 2>"$j.err"
	if out=$(python3 "$check_py" "$j.truth" "$j.bt.json" 2>&1); then
		ok "$name: every thread and frame of the crash core matches the target's own backtrace"
	else
		not_ok "$name: frames differ from the target's own backtrace"; diag "$out"; diag "$(cat "$j.err")"
	fi
	[ "$mode$via" = segvfile ] && compressed_cores "$name" "$core" "$j.bt.json" "${opts[@]}"
	is "$(jq -r '[.threads[0].crashed, .threads[0].tid, ([.threads[] | select(.crashed)] | length)] | @tsv' "$j.bt.json")" \
		"$(printf 'true\t%s\t1' "$want_tid")" "$name: bt shows the thread that crashed first, and only it as crashed"
	is "$(jq -r '.crash | [.tid, .handled.name, .handler_ended_it] | @tsv' "$j.bt.json")" \
		"$(printf '%s\tSIGSEGV\ttrue' "$want_tid")" "$name: the crash is the SIGSEGV Ruby's handler reported, in that thread"
	if [ "$mode" = segv ]; then
		is "$(jq -r '.crash.handled | [.code_name, .addr] | @tsv' "$j.bt.json")" "$(printf 'SEGV_MAPERR\t0x0')" \
			"$name: the fault: SEGV_MAPERR at 0x0, as the C code did"
	else
		is "$(jq -r '.crash.handled | [.code_name, .sender_pid] | @tsv' "$j.bt.json")" "$(printf 'SI_USER\t%s' "$sender")" \
			"$name: sent by the process that sent it (SI_USER, its pid)"
	fi

	# The signal that ended it, as gdb reads the same core; and rb-bt = rbinspect bt.
	"$RBINSPECT" "${opts[@]}" "$core" bt >"$j.bt.txt" 2>/dev/null
	local exe=$cmd gdbopts=()
	[ "$kind" = deb ] && exe=$root/usr/bin/ruby && gdbopts=(-iex "set sysroot $root")
	timeout 300 gdb -nx -batch "${gdbopts[@]}" -x "$GDB_SCRIPT" "$exe" "$core" \
		-ex 'echo @@bt\n' -ex rb-bt >"$j.gdb" 2>&1 </dev/null
	is "$(jq -r '.crash.signal | [.name, .code_name, .sender_pid] | @tsv' "$j.bt.json")" \
		"$(sed -n 's/^Program terminated with signal \(SIG[A-Z]*\),.*/\1/p' "$j.gdb")$(printf '\tSI_TKILL\t%s' "$(truth_get pid)")" \
		"$name: the signal that ended it (gdb: $(grep -o 'signal SIG[A-Z]*' "$j.gdb" | head -1)), raised by the process itself"
	if sed '1,/^@@bt$/d' "$j.gdb" | cmp -s - "$j.bt.txt"; then
		ok "$name: gdb's rb-bt on the crash core = rbinspect bt"
	else
		not_ok "$name: gdb's rb-bt on the crash core = rbinspect bt"
		diag "$(sed '1,/^@@bt$/d' "$j.gdb" | diff "$j.bt.txt" - | head -20)"
	fi
	if head -n 1 "$j.bt.txt" | grep -qE "^Thread [0-9]+.* tid $want_tid .*, crashed here: SIGSEGV"; then
		ok "$name: bt text: the first thread 'crashed here: SIGSEGV ...'"
	else
		not_ok "$name: bt text: the first thread 'crashed here: SIGSEGV ...'"; diag "$(head -n 2 "$j.bt.txt")"
	fi
	if [ "$mode$via" = segvfile ]; then
		"$RBINSPECT" "${opts[@]}" --json -ex "thread $(jq '.threads[0].number' "$j.bt.json")" \
			-ex 'frame 1' "$core" 2>/dev/null | sed -n 2p >"$j.frame.json"
		if out=$(python3 "$here/tests/locals-check.py" "$RB_TRUTH" crasher 1 "$j.frame.json" 2>&1); then
			ok "$name: frame 1 of the thread that crashed: its locals as the target listed them"
		else
			not_ok "$name: frame 1 of the thread that crashed: its locals"; diag "$out"
		fi
	fi
	"$RBINSPECT" "${opts[@]}" "$core" threads >"$j.threads" 2>/dev/null
	is "$(awk '/crashed here/ { print $3 }' "$j.threads")" "$want_tid" "$name: threads marks the thread that crashed"
	"$RBINSPECT" "${opts[@]}" "$core" info >"$j.info" 2>/dev/null
	"$RBINSPECT" "${opts[@]}" --json "$core" info >"$j.info.json" 2>/dev/null
	if grep -qE "^crash +tid $want_tid: SIGSEGV .*Ruby's \[BUG\] handler then" "$j.info"; then
		ok "$name: info names the crash"
	else
		not_ok "$name: info names the crash"; diag "$(cat "$j.info")"
	fi
	# The heap reads as from a gcore: types that neither the truth writer nor Ruby's crash
	# report allocates, exact.  (The report makes a backtrace object, a T_DATA, from 3.3,
	# and its allocations may add a heap page: TOTAL.)
	"$RBINSPECT" "${opts[@]}" --json "$core" objects >"$j.objects" 2>/dev/null
	local type bad=""
	for type in T_OBJECT T_CLASS T_MODULE T_FLOAT T_REGEXP T_STRUCT T_FILE T_SYMBOL T_ICLASS; do
		[ "$(jq ".counts.$type // 0" "$j.objects")" = "$(awk -F'\t' -v t="$type" \
			'$1 == "count" && $2 == t { print $3 }' "$RB_TRUTH")" ] || bad="$bad $type"
	done
	is "$bad" "" "$name: objects on the crash core, as ObjectSpace.count_objects said"
	[ "$heap" = 1 ] && crash_heap_dump "$name" "$core" "$kind" "$ver" "${opts[@]}"

	if [ "$mode$via" = segvfile ]; then
		lib=$(jq -r .libruby "$j.info.json" 2>/dev/null)
		[ -n "$copy" ] && rm -rf "$copy"
		if [ "$kind" = deb ] && [ -e "${lib#"$root"}" ]; then
			skip "$name: this machine has ${lib#"$root"} itself: not a core without its files"
		else
			offline_core "$name" "$core" "$j.truth" "$(truth_get ruby_version)"
		fi
	fi
	rm -rf "$core" "$copy"
}

first=1
while read -r kind ver root cmd; do
	crash_case "$kind" "$ver" "$root" "$cmd" segv
	crash_case "$kind" "$ver" "$root" "$cmd" self
	crash_case "$kind" "$ver" "$root" "$cmd" kill
	if [ "$first" = 1 ]; then
		if why=$(in_chroot); then skip "$kind $ver segv, piped core: $why"
		else crash_case "$kind" "$ver" "$root" "$cmd" segv pipe; fi
	fi
	first=0
done < <(rubies_list)
tap_done
