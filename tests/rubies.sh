# rubies.sh: start real Ruby programs for integration tests (sourced after
# tap.sh).  The Rubies come from tools/test-rubies.sh --list.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RBINSPECT=${RBINSPECT:-$here/build-test/repl/rbinspect}
RB_TMP=$(mktemp -d /tmp/rbi-test.XXXXXX)
RB_PIDS=()
# Where a Debian Ruby's root holds testdata/programs (programs_install): one directory per
# checkout, so that runs of different checkouts (a branch beside main) never read each
# other's versions of a program.
RB_PROGS=/tmp/rbi-programs-$(printf '%s' "$here" | cksum | cut -d' ' -f1)
# Where this test's files go inside a Debian Ruby's root (truths, copies of programs): its own
# directory, removed with the test (root_tmp).
RB_RUN=$RB_PROGS/run.$$
RB_ROOTS=()

rubies_cleanup() {
	local p
	disown -a 2>/dev/null
	for p in "${RB_PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
	for p in "${RB_ROOTS[@]}"; do rm -rf "$p$RB_RUN"; done
	rm -rf "$RB_TMP"
}

# strace_to LOG STRACE-OPTIONS... -- CMD...: CMD under strace (every thread) into LOG.
# LeakSanitizer stops the world with ptrace, which it cannot under a tracer: off for CMD.
strace_to() {
	local log=$1 opts=()
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
	shift
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 strace -f -qq "${opts[@]}" -o "$log" "$@"
}

# root_tmp ROOT: make $RB_RUN inside ROOT, removed when the test ends.
root_tmp() {
	mkdir -p "$1$RB_RUN"
	RB_ROOTS+=("$1")
}
trap rubies_cleanup EXIT

# Lines "KIND VERSION ROOT RUBYCMD", one per ready Ruby: the main eight, or with
# RBI_TEST_RUBIES=variants the Rubies as users build them (tests/run runs the cheap
# checks on those; see tools/test-rubies.sh).  Any other RBI_TEST_RUBIES is a comma
# list picking from both: a KIND (deb, dwarf, yjit, musl-stripped...), KIND-X.Y or
# KIND-X.Y.Z (deb-3.4), a version (3.3, 2.7.4), "main" (deb and dwarf) or
# "variants", e.g. RBI_TEST_RUBIES=deb-3.4,dwarf-2.7 to run a test in seconds.
rubies_list() {
	local f=${RBI_TEST_RUBIES:-} out
	case $f in
	''|variants) out=$(bash "$here/tools/test-rubies.sh" --list${f:+-$f}) ;;
	*) out=$({ bash "$here/tools/test-rubies.sh" --list
		bash "$here/tools/test-rubies.sh" --list-variants; } | awk -v f="$f" '
		BEGIN { n = split(f, want, ",") }
		{
			split($2, v, "."); xy = v[1] "." v[2]
			main = $1 == "deb" || $1 == "dwarf"
			for (i = 1; i <= n; i++)
				if (want[i] == $1 || want[i] == $1 "-" xy || want[i] == $1 "-" $2 ||
				    want[i] == xy || want[i] == $2 || (want[i] == "main" && main) ||
				    (want[i] == "variants" && !main)) { print; next }
		}') ;;
	esac
	if [ -z "$out" ]; then
		# Said on stderr (stdout is the list), and left for tap_done: a test
		# that ran nothing says SKIP with this reason.
		if [ -n "$f" ]; then echo "no ready test Ruby matches RBI_TEST_RUBIES=$f (tools/test-rubies.sh --list)"
		else echo "no test Ruby is ready (tools/test-rubies.sh builds them)"; fi |
			tee "$RB_TMP/no-rubies" | sed 's/^/# /' >&2
		return 0
	fi
	printf '%s\n' "$out"
}

# ruby_dwarf KIND: whether a Ruby of KIND has DWARF and .symtab (dwarf builds and the
# variants not named "-stripped").
ruby_dwarf() { [ "$1" != deb ] && [ "${1%-stripped}" = "$1" ]; }

# heap_unread KIND VERSION: the types whose references and counts rbinspect heap-dump
# cannot read on that Ruby, comma-separated (tests/heap-check.py --unread).  Without
# DWARF, the built-in tables have RObject, RHash, RStruct, RRational, RComplex, RRegexp,
# RMatch, rb_io_t, the classes' tables and the shapes for the families of the DWARF builds
# only (2.7, 3.1, 3.3, 3.4: lib/layout/tables/dwarf); with DWARF, 3.2's Objects (its shapes
# live in the VM, not read); classes' references only on the families whose GC marking of
# classes was read (the same four: lib/vm/dump/heap-class.c), and without DWARF not on 3.4
# from 3.4.6 to 3.4.10 (its call caches' entries changed between 3.4.5 and 3.4.11, whose
# are known: tools/layout-tables.py NOT_CARRIED, OBSERVED).
# Iseqs' references ("iseq") only on 3.3 and 3.4, whose marking of them by mark bits was
# read (lib/vm/dump/heap-iseq.c), and 2.7 and 3.1, whose GC decodes the instructions
# (lib/vm/dump/heap-iseq-insns.c: 2.7.4's and 3.1.2's tables, the VM's address table found
# through DWARF or, stripped, by its shape), and not while YJIT runs (the yjit* variants).
# Call caches'
# and call infos' ("callcache", "callinfo") only on 3.1, 3.3 and 3.4, whose marking of
# them was read (lib/vm/dump/heap-imemo.c); ifuncs, memos and the T_DATA of Time, ARGF and
# autoload, queues and 3.4's pin_array_list (lib/vm/dump/heap-imemo.c, heap-data.c) where the layout has their structs: with
# DWARF, or the built-in tables of the four families.
# Threads', Fibers' and Ractors' ("VM/thread", "fiber", "ractor") on the families whose
# marking of them was read (2.7, 3.1, 3.3, 3.4: lib/vm/dump/heap-thread.c); no Ractors before
# 3.0.
heap_unread() {
	local classes=CLASS,MODULE,ICLASS unread
	local data=ifunc,memo,time,ARGF,autoload_const,autoload_i,autoload_data,autoload,autoload_table
	data=$data,VM/pin_array_list,queue,sized_queue,random,random/MT,backtrace,frame_info,marshal_compat_table,enumerator,dir
	if ruby_dwarf "$1"; then
		case $2 in 2.7.*|3.1.*|3.3.*|3.4.*) unread= ;; 3.2.*) unread=OBJECT,$classes ;;
		*) unread=$classes ;; esac
	else
		case $2 in 3.4.[6-9]|3.4.10) unread=$classes ;; 2.7.*|3.1.*|3.3.*|3.4.*) unread= ;;
		*) unread=OBJECT,HASH,STRUCT,RATIONAL,COMPLEX,REGEXP,MATCH,FILE,$classes,$data ;; esac
	fi
	case $1-$2 in yjit*|*-[01].*|*-2.[0-6].*|*-3.[02].*|*-3.[5-9]*|*-[4-9].*)
		unread=${unread:+$unread,}iseq ;; esac
	case $2 in 3.[134].*) ;; *) unread=${unread:+$unread,}callcache,callinfo ;; esac
	case $2 in 2.7.*|3.1.*|3.3.*|3.4.*) ;; *) unread=${unread:+$unread,}VM/thread,fiber,ractor ;; esac
	case $2 in 2.*) unread=${unread:+$unread,}ractor ;; esac      # none before 3.0
	echo "$unread"
}

# ruby_exe KIND ROOT RUBYCMD: the interpreter's executable, for a debugger (RUBYCMD may be
# a wrapper script that execs it with options).
ruby_exe() {
	if [ "$1" = deb ]; then echo "$2/usr/bin/ruby"
	elif [ "$(head -c 2 "$3")" = '#!' ]; then echo "$2/bin/ruby"
	else echo "$3"; fi
}

# programs_install ROOT [FILE...]: testdata/programs (and FILEs) into ROOT$RB_PROGS.  Every
# test run of this checkout shares that directory and Rubies of other runs may be reading
# it: a file is only replaced when it differs, and then by a rename, so a reader sees the
# old file or the new one, never one half written.
programs_install() {
	local dir=$1$RB_PROGS rel src
	while IFS= read -r rel; do
		file_replace "$here/testdata/programs/$rel" "$dir/$rel"
	done < <(cd "$here/testdata/programs" && find . -type f)
	for src in "${@:2}"; do file_replace "$src" "$dir/$(basename "$src")"; done
}
file_replace() {
	mkdir -p "$(dirname "$2")"
	cmp -s "$1" "$2" || { cp "$1" "$2.$$.new" && mv -f "$2.$$.new" "$2"; }
}

# ruby_start KIND ROOT RUBYCMD PROGRAM [MODE] — start PROGRAM (a path under
# testdata/programs) and wait for its "READY pid" line.  MODE "ns" runs it
# in its own mount+pid namespace (like a container).  Sets RB_PID (host
# pid) and RB_TRUTH (the truth file it wrote, as seen from the host).
ruby_start() {
	local kind=$1 root=$2 cmd=$3 prog=$4 mode=${5:-} out name
	name=$(basename "$prog" .rb)
	out=$RB_TMP/$name.$RANDOM.out
	if [ "$kind" = deb ]; then
		programs_install "$root"
		root_tmp "$root"
		local truth_in=$RB_RUN/$name.$RANDOM.truth
		RB_TRUTH=$root$truth_in
		if [ "$mode" = ns ]; then
			RBI_TRUTH=$truth_in RBI_NS_PIDFILE=$out.pid \
				"$here/tools/run-in-ns.sh" "$root" /usr/bin/ruby \
				"$RB_PROGS/$name.rb" >"$out" 2>&1 &
		else
			RBI_TRUTH=$truth_in chroot "$root" /usr/bin/ruby \
				"$RB_PROGS/$name.rb" >"$out" 2>&1 &
		fi
	else
		RB_TRUTH=$RB_TMP/$name.$RANDOM.truth
		RBI_TRUTH=$RB_TRUTH "$cmd" "$here/testdata/programs/$name.rb" >"$out" 2>&1 &
	fi
	local launcher=$!
	disown "$launcher" 2>/dev/null || true
	RB_PIDS+=("$launcher")
	# RBI_READY_SECONDS: how long a program may take to get ready (30 s; bench/ builds
	# heaps of millions of objects).
	for _ in $(seq 1 $(( ${RBI_READY_SECONDS:-30} * 10 ))); do
		grep -q '^READY' "$out" 2>/dev/null && break
		sleep 0.1
	done
	if ! grep -q '^READY' "$out"; then
		diag "$(cat "$out")"
		return 1
	fi
	if [ "$mode" = ns ]; then
		for _ in $(seq 1 50); do [ -s "$out.pid" ] && break; sleep 0.1; done
		RB_PID=$(cat "$out.pid")
	else
		RB_PID=$launcher
	fi
	RB_PIDS+=("$RB_PID")
}

# live_and_core KIND VERSION ROOT RUBYCMD PROGRAM CHECK — start PROGRAM, wait until it is
# parked, then run CHECK "KIND VERSION live" -p PID and CHECK "KIND VERSION core" CORE (a
# core of it), and end it.
live_and_core() {
	local kind=$1 ver=$2 root=$3 cmd=$4 prog=$5 check=$6 core
	if ! ruby_start "$kind" "$root" "$cmd" "$prog"; then
		not_ok "$kind $ver: $prog did not start"; return
	fi
	wait_parked "$RB_PID" || diag "$kind $ver: not every task sleeps"
	"$check" "$kind $ver live" -p "$RB_PID"
	if core=$(core_of "$RB_PID"); then
		"$check" "$kind $ver core" "$core"
		rm -f "$core"
	else
		not_ok "$kind $ver: no core"
	fi
	kill -9 "$RB_PID"
}

# core_of PID — a core of the running PID (gcore; the process keeps going).
core_of() {
	local core=$RB_TMP/core.$1.$RANDOM
	bash "$here/tools/make-core.sh" "$1" "$core" "${@:2}" >/dev/null 2>&1 || return 1
	echo "$core"
}

# truth_get KEY — the value of "KEY<TAB>value" from the truth file.
truth_get() { awk -F'\t' -v k="$1" '$1 == k { print $2; exit }' "$RB_TRUTH"; }

# task_states PID: the distinct states of PID's tasks ("S", "R S", "T" ...).
task_states() {
	local s
	for s in /proc/"$1"/task/*/stat; do sed 's/.*) //' "$s" | cut -d' ' -f1; done 2>/dev/null |
		sort -u | tr '\n' ' ' | sed 's/ $//'
}

# wait_parked PID: until every task of PID sleeps (state S), so the truth
# writer is back in its recorded call (see testdata/programs/lib/truth.rb);
# 1 after 10 s.
wait_parked() {
	for _ in $(seq 1 200); do
		[ "$(task_states "$1")" = S ] && return 0
		sleep 0.05
	done
	return 1
}

# no_ns: why this machine cannot run a program in its own mount+pid namespace
# (tools/run-in-ns.sh, ruby_start's MODE "ns"); nothing and status 1 when it can.
# A test then says SKIP with this reason instead of failing.
no_ns() {
	local err
	if [ "$(id -u)" != 0 ]; then echo "mount and pid namespaces need root"; return 0; fi
	if err=$(in_chroot); then echo "$err"; return 0; fi
	if ! command -v unshare >/dev/null; then echo "no unshare (util-linux)"; return 0; fi
	if ! err=$(unshare --mount --pid --fork true 2>&1); then
		echo "this environment gives no mount+pid namespace (unshare: ${err:-failed})"
		return 0
	fi
	return 1
}

# in_chroot: why the tests cannot stand for a container here, when they run in a chroot (not
# a namespace whose root is its own): the kernel names a contained process's files, and runs
# a core_pattern pipe helper, by the host's paths, which the chroot does not have.  Nothing
# and status 1 outside a chroot.
in_chroot() {
	local ours init
	ours=$(stat -Lc %d:%i / 2>/dev/null)
	init=$(stat -Lc %d:%i /proc/1/root/ 2>/dev/null) || return 1
	[ "$ours" != "$init" ] || return 1
	echo "the tests run in a chroot, where the kernel names a contained process's files and runs a core_pattern helper by the host's paths (run them in a namespace of their own: unshare, a container)"
}

# no_pty: why no pseudo-terminal can be opened here (a sandbox without
# /dev/pts); nothing and status 1 when one can.
no_pty() {
	local err
	if ! err=$(python3 -c 'import os, pty; m, s = pty.openpty(); os.close(m); os.close(s)' 2>&1)
	then
		echo "no pseudo-terminal can be opened here (${err##*$'\n'})"
		return 0
	fi
	return 1
}
