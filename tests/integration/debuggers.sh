# debuggers.sh: the Ruby commands inside debuggers print what rbinspect prints on the same
# target: gdb-plugin/rbinspect.gdb in Debian's gdb and in gdb-minimal (no Python at all), and
# the LLDB plugin (gdb-plugin/lldb), in batch mode, against a live Ruby and a core of it, for a
# stripped Debian Ruby 3.3+ and a DWARF build of another version (RBI_DEBUGGER_RUBIES: an
# extended regex on "KIND VERSION" to choose others).  `rb-bt` must equal `rbinspect bt` and
# `rb-objects --by-class` must equal `rbinspect objects --by-class` (but for its first line,
# which names the target and the walk's time).
#
# gdb: attached (-p), a core (gdb EXE CORE), a process gdb started (run, then SIGINT), a gcore
# snapshot forced with $rbinspect_snapshot, a process rbinspect may not read (it lacks
# CAP_SYS_PTRACE, the Ruby runs as another user: the snapshot fallback), a remote target
# (gdbserver); a failing command stops a gdb script; help rb; no snapshot left in /tmp.
# LLDB (the system's, and LLDB 19 unpacked privately by tools/private-debugger.sh): attached
# (direct reads), attached through LLDB's own memory API (RBINSPECT_LLDB_BACKEND=lldb), a core
# through LLDB and by default (LLDB 19: the core file itself); help rb; a failing command fails
# --batch.
set -u
. "$(dirname "$0")/../tap.sh"
. "$(dirname "$0")/../rubies.sh"

. "$(dirname "$0")/../debuggers.sh"
SCRIPT=$GDB_SCRIPT
GDB_FULL=$(command -v gdb || true)
GDB_MIN=$(bash "$here/tools/private-debugger.sh" gdb-minimal --path 2>/dev/null || true)
[ -n "$LLDB_LEFT_OUT" ] && diag "$LLDB_LEFT_OUT"
RUBIES_RE=${RBI_DEBUGGER_RUBIES:-'^(deb 3\.[3-9]|dwarf 2\.7)'}
HAVE_OBJECTS=0
"$RBINSPECT" --help 2>/dev/null | grep -q "^  objects " && HAVE_OBJECTS=1

# want PREFIX RBINSPECT-TARGET-ARGS...: rbinspect's own output, PREFIX.bt and PREFIX.objects.
want() {
	local p=$1; shift
	"$RBINSPECT" "$@" bt >"$p.bt" 2>"$p.bt.err"
	if [ "$HAVE_OBJECTS" = 1 ]; then
		"$RBINSPECT" "$@" objects --by-class 2>"$p.objects.err" | sed 1d >"$p.objects"
	fi
}

# Sections of a debugger's output: lines after "@@NAME" (gdb) into PREFIX.NAME.
gdb_sections() {
	awk -v p="$2" '/^@@/ { f = p "." substr($0, 3); printf "" > f; next }
		f && !/^Saved corefile / { print >> f }' "$1"
	[ -f "$2.objects" ] && sed -i 1d "$2.objects"
	return 0
}

# gdb_rb GDB PREFIX [GDB-ARGS...]: rb-bt and rb-objects in gdb's batch mode (after GDB-ARGS,
# which open the target), into PREFIX.bt and PREFIX.objects.  RB_CMDS="bt": the backtrace only.
gdb_rb() {
	local gdb=$1 p=$2 cmds=() c
	shift 2
	for c in ${RB_CMDS:-bt objects}; do
		[ "$c" = objects ] && [ "$HAVE_OBJECTS" = 0 ] && continue
		cmds+=(-ex "echo @@$c\\n" -ex "rb-$c$([ "$c" = objects ] && echo ' --by-class')")
	done
	timeout 600 "$gdb" -nx -batch -x "${GDB_SCRIPT:-$SCRIPT}" "$@" "${cmds[@]}" -ex 'echo @@end\n' \
		>"$p.log" 2>"$p.err" </dev/null
	gdb_sections "$p.log" "$p"
}

# lldb_rb PREFIX [LLDB-ARGS...]: the same in LLDB ($lldb) with the plugin.
lldb_rb() {
	local p=$1 cmds=(-o "plugin load $PLUGIN" -o rb-bt)
	shift
	[ "$HAVE_OBJECTS" = 1 ] && cmds+=(-o 'rb-objects --by-class')
	timeout 600 "${LLDB_ENV[@]}" "$lldb" --batch "$@" "${cmds[@]}" >"$p.log" 2>"$p.err" </dev/null
	awk -v p="$p" '/^\(lldb\) / { n = substr($0, 8); f = "";
			if (n == "rb-bt") f = p ".bt"; else if (n ~ /^rb-objects/) f = p ".objects";
			if (f) printf "" > f; next }
		f { print >> f }' "$p.log"
	[ -f "$p.objects" ] && sed -i 1d "$p.objects"
	return 0
}

# same DESC GOT-PREFIX WANT-PREFIX: every section equal (and the backtrace not empty).
same() {
	local desc=$1 got=$2 exp=$3 s
	for s in ${RB_CMDS:-bt objects}; do
		[ "$s" = objects ] && [ "$HAVE_OBJECTS" = 0 ] && continue
		if [ -s "$exp.$s" ] && [ -f "$got.$s" ] && cmp -s "$got.$s" "$exp.$s"; then
			ok "$desc: rb-$s = rbinspect $s"
		else
			not_ok "$desc: rb-$s = rbinspect $s"
			if [ -f "$got.$s" ]; then
				diag "$( (diff "$exp.$s" "$got.$s"; cat "$got.err") 2>&1 | head -20)"
			else
				diag "$( (tail -5 "$got.log"; grep -v '^$' "$got.err" | tail -5) 2>&1)"
			fi
		fi
	done
}

snapshots_left() { ls -d /tmp/rbinspect-gdb.* ~/.cache/rbinspect/gdb.* 2>/dev/null | wc -l; }

if [ ! -f "$SCRIPT" ]; then
	skip "no $SCRIPT (build first)"
	tap_done
	exit
fi
[ -n "$GDB_MIN" ] || diag "no gdb-minimal: run tools/gdb-minimal.sh (tools/install-deps.sh --test)"
[ ${#lldbs[@]} -gt 0 ] || diag "no LLDB or no LLDB plugin built (liblldb-14-dev)"
# lldb_name LLDB: "lldb-14", "lldb-19" from its version.
lldb_name() { echo "lldb-$("$1" --version 2>/dev/null | sed -n 's/^lldb version \([0-9]*\).*/\1/p;q')"; }
gdbs=()
[ -n "$GDB_FULL" ] && gdbs+=("gdb:$GDB_FULL")
[ -n "$GDB_MIN" ] && gdbs+=("gdb-minimal:$GDB_MIN")
snap_before=$(snapshots_left)
first=1

while read -r kind ver root cmd; do
	name="$kind $ver"
	exe=$(ruby_exe "$kind" "$root" "$cmd")
	if ! ruby_start "$kind" "$root" "$cmd" threads.rb; then
		not_ok "$name: threads.rb did not start"; continue
	fi
	wait_parked "$RB_PID" || diag "$name: not every task sleeps"
	pid=$RB_PID
	w=$RB_TMP/want-live
	want "$w" -p "$pid"

	# --- gdb: attached, then a forced snapshot ---
	for g in "${gdbs[@]}"; do
		gname=${g%%:*} gbin=${g#*:}
		gdb_rb "$gbin" "$RB_TMP/$gname-live" -p "$pid"
		same "$name $gname attached" "$RB_TMP/$gname-live" "$w"
	done
	if [ -n "$GDB_MIN" ]; then
		# Another user has taken every /tmp slot's name (once): the snapshot is in
		# the home directory, where nobody else can.
		squatted=()
		if [ "$first" = 1 ] && [ "$(id -u)" = 0 ]; then
			for s in $(seq 100 124); do
				d=/tmp/rbinspect-gdb.$s
				[ -e "$d" ] || { mkdir -m 700 "$d" && chown 65534:65534 "$d" && squatted+=("$d"); }
			done
		fi
		RB_CMDS=bt gdb_rb "$GDB_MIN" "$RB_TMP/snap" -p "$pid" -ex 'set $rbinspect_snapshot = 1'
		RB_CMDS=bt same "$name gdb-minimal snapshot" "$RB_TMP/snap" "$w"
		if grep -q 'reading a snapshot' "$RB_TMP/snap.err" &&
		   grep -q "^Saved corefile $HOME/.cache/rbinspect/gdb\.1[01][0-9]/core" "$RB_TMP/snap.log"; then
			ok "$name gdb-minimal snapshot: read through gcore in ~/.cache/rbinspect (${#squatted[@]} /tmp slots squatted)"
		else
			not_ok "$name gdb-minimal snapshot: read through gcore in ~/.cache/rbinspect"
			diag "$(head -5 "$RB_TMP/snap.err"; grep Saved "$RB_TMP/snap.log")"
		fi
		[ ${#squatted[@]} -gt 0 ] && rmdir "${squatted[@]}"
	fi

	# --- LLDB: attached, direct and through LLDB ---
	for lldb in "${lldbs[@]}"; do
		ln=$(lldb_name "$lldb")
		lldb_rb "$RB_TMP/lldb-live" -p "$pid"
		same "$name $ln attached" "$RB_TMP/lldb-live" "$w"
		RBINSPECT_LLDB_BACKEND=lldb lldb_rb "$RB_TMP/lldb-sb-live" -p "$pid"
		same "$name $ln attached, read through LLDB" "$RB_TMP/lldb-sb-live" "$w"
	done

	# --- a core ---
	core=$(core_of "$pid")
	if [ -z "$core" ]; then
		not_ok "$name: no core"
	else
		w=$RB_TMP/want-core
		want "$w" "$core"
		for g in "${gdbs[@]}"; do
			gname=${g%%:*} gbin=${g#*:}
			gdb_rb "$gbin" "$RB_TMP/$gname-core" "$exe" "$core"
			same "$name $gname core" "$RB_TMP/$gname-core" "$w"
		done
		# A core of a chroot names the chroot's own paths: LLDB finds them by
		# name in its search paths.
		search=()
		[ "$kind" = deb ] && search=(-O "settings set target.exec-search-paths \
$root/lib/x86_64-linux-gnu $root/usr/lib/x86_64-linux-gnu $root/lib64")
		for lldb in "${lldbs[@]}"; do
			ln=$(lldb_name "$lldb")
			RBINSPECT_LLDB_BACKEND=lldb lldb_rb "$RB_TMP/lldb-core" "${search[@]}" -c "$core" "$exe"
			same "$name $ln core, read through LLDB" "$RB_TMP/lldb-core" "$w"
			# Without them: LLDB 19 names the core file (SBProcess::GetCoreFile),
			# which the plugin then reads as rbinspect does; LLDB 14 does not,
			# and the plugin says what LLDB needs.
			lldb_rb "$RB_TMP/lldb-core2" -c "$core" "$exe"
			if [ "$kind" != deb ] || [ "${ln#lldb-}" -ge 19 ]; then
				same "$name $ln core (no search paths)" "$RB_TMP/lldb-core2" "$w"
			elif grep -q 'point LLDB at them' "$RB_TMP/lldb-core2.err"; then
				ok "$name $ln core of a chroot, no search paths: says how to point LLDB at its files"
			else
				not_ok "$name $ln core of a chroot, no search paths: says how to point LLDB at its files"
				diag "$(tail -3 "$RB_TMP/lldb-core2.err")"
			fi
		done
		rm -f "$core"
	fi

	# Native frames: only the tracer has registers, so through gdb's gcore; the same as
	# rbinspect's own (the threads are parked).  On a DWARF build, which runs on the
	# host's glibc: a newer glibc (2.41, trixie's) puts a thread stack's guard inside its
	# mapping (MADV_GUARD_INSTALL, kernel 6.13+), and gdb 13's gcore then writes the
	# whole stack as zeros (the kernel's cores keep it).
	if [ "$kind" = dwarf ] && [ -n "$GDB_MIN" ]; then
		"$RBINSPECT" -p "$pid" bt --native >"$RB_TMP/want-native.bt" 2>&1
		timeout 600 "$GDB_MIN" -nx -batch -x "$SCRIPT" -p "$pid" -ex 'echo @@bt\n' \
			-ex 'rb-bt --native' -ex 'echo @@end\n' >"$RB_TMP/native.log" 2>"$RB_TMP/native.err" </dev/null
		gdb_sections "$RB_TMP/native.log" "$RB_TMP/native"
		RB_CMDS=bt same "$name gdb-minimal rb-bt --native (through gcore)" "$RB_TMP/native" "$RB_TMP/want-native"
	fi

	# --- once: errors and help ---
	if [ "$first" = 1 ] && [ -n "$GDB_MIN" ]; then
		printf 'rb-bt 999\necho NOT-REACHED\\n\n' >"$RB_TMP/fail.gdb"
		timeout 600 "$GDB_MIN" -nx -batch -x "$SCRIPT" -x "$RB_TMP/fail.gdb" -ex 'help rb' -p "$pid" \
			>"$RB_TMP/fail.log" 2>&1 </dev/null
		if grep -q 'rb bt: rbinspect failed (exit status 2)' "$RB_TMP/fail.log" &&
		   grep -q 'no thread 999' "$RB_TMP/fail.log" && ! grep -q NOT-REACHED "$RB_TMP/fail.log"; then
			ok "gdb: a failing rb-bt is a gdb error that stops the script"
		else
			not_ok "gdb: a failing rb-bt is a gdb error that stops the script"
			diag "$(grep -v '^\[New' "$RB_TMP/fail.log" | tail -8)"
		fi
		for c in "rb bt, rb-bt" "rb threads, rb-threads" "rb objects, rb-objects" "rb info, rb-info"; do
			if grep -qF -- "$c --" "$RB_TMP/fail.log"; then ok "gdb: help rb lists $c"
			else not_ok "gdb: help rb lists $c"; fi
		done
		if "$GDB_MIN" -nx -batch -ex 'python print(1)' 2>&1 | grep -q 'not supported'; then
			ok "gdb-minimal has no Python"
		else
			not_ok "gdb-minimal has no Python"
		fi
	fi
	for lldb in "${lldbs[@]}"; do
		[ "$first" = 1 ] || break
		ln=$(lldb_name "$lldb")
		timeout 600 "${LLDB_ENV[@]}" "$lldb" --batch -o "plugin load $PLUGIN" -o 'help rb' -o 'rb-bt 999' -o 'rb-threads' \
			-p "$pid" >"$RB_TMP/lfail.log" 2>&1 </dev/null
		lrc=$?
		if [ "$lrc" -ne 0 ] && grep -q 'error: bt: no thread 999' "$RB_TMP/lfail.log" &&
		   ! grep -q '^(lldb) rb-threads' "$RB_TMP/lfail.log"; then
			ok "$ln: a failing rb-bt is an error that stops --batch"
		else
			not_ok "$ln: a failing rb-bt is an error that stops --batch (rc $lrc)"
			diag "$(tail -5 "$RB_TMP/lfail.log")"
		fi
		if grep -q 'objects -- ' "$RB_TMP/lfail.log" && grep -q 'bt      -- ' "$RB_TMP/lfail.log"; then
			ok "$ln: help rb lists the commands"
		else
			not_ok "$ln: help rb lists the commands"
		fi
	done
	kill -9 "$pid" 2>/dev/null

	# --- once, a Debian Ruby: gdb starts it; a process rbinspect may not read; remote ---
	if [ "$first" = 1 ] && [ "$kind" = deb ] && [ -n "$GDB_MIN" ]; then
		programs_install "$root"
		root_tmp "$root"
		log=$RB_TMP/launched.log
		RBI_TRUTH="$RB_RUN/launched.truth" "$GDB_MIN" -nx -batch -x "$SCRIPT" \
			-ex run -ex 'echo @@bt\n' -ex rb-bt -ex 'echo @@end\n' -ex kill \
			--args chroot "$root" /usr/bin/ruby "$RB_PROGS/threads.rb" >"$log" 2>&1 </dev/null &
		gpid=$!
		for _ in $(seq 1 300); do grep -q '^READY' "$log" && break; sleep 0.1; done
		lpid=$(awk '/^READY/ { print $2; exit }' "$log")
		if [ -n "$lpid" ] && wait_parked "$lpid"; then
			want "$RB_TMP/want-launched" -p "$lpid"
			kill -INT "$lpid"
			for _ in $(seq 1 300); do kill -0 "$gpid" 2>/dev/null || break; sleep 0.1; done
			kill -9 "$gpid" "$lpid" 2>/dev/null
			gdb_sections "$log" "$RB_TMP/launched"
			RB_CMDS=bt same "$name gdb-minimal, process gdb started" "$RB_TMP/launched" "$RB_TMP/want-launched"
		else
			not_ok "$name gdb-minimal: the process gdb started did not get ready"
			diag "$(tail -5 "$log")"; kill -9 "$gpid" 2>/dev/null
		fi
		wait "$gpid" 2>/dev/null

		# A Ruby of another user; rbinspect without CAP_SYS_PTRACE may not read it
		# (as with ptrace_scope), gdb may: rbinspect asks gdb for a snapshot.
		if command -v setpriv >/dev/null; then
			dir=/tmp/rbi-nobody.$$
			mkdir -p "$root$dir" && chmod 1777 "$root$dir"
			RBI_TRUTH=$dir/truth chroot --userspec=65534:65534 "$root" /usr/bin/ruby \
				"$RB_PROGS/threads.rb" >"$RB_TMP/nobody.out" 2>&1 </dev/null &
			npid=$!
			RB_PIDS+=("$npid")
			for _ in $(seq 1 300); do grep -q '^READY' "$RB_TMP/nobody.out" && break; sleep 0.1; done
			wait_parked "$npid"
			want "$RB_TMP/want-nobody" -p "$npid"
			wrapper=$RB_TMP/rbinspect-noptrace
			printf '#!/bin/sh\nexec setpriv --inh-caps=-sys_ptrace --bounding-set=-sys_ptrace -- %s "$@"\n' \
				"$RBINSPECT" >"$wrapper"
			chmod +x "$wrapper"
			"$wrapper" -p "$npid" info >/dev/null 2>&1
			is "$?" 4 "rbinspect without CAP_SYS_PTRACE may not read another user's Ruby"
			sed "s|'$RBINSPECT'|'$wrapper'|g" "$SCRIPT" >"$RB_TMP/noptrace.gdb"
			GDB_SCRIPT=$RB_TMP/noptrace.gdb RB_CMDS=bt gdb_rb "$GDB_MIN" "$RB_TMP/nobody" -p "$npid"
			RB_CMDS=bt same "$name gdb-minimal, rbinspect may not read: snapshot" \
				"$RB_TMP/nobody" "$RB_TMP/want-nobody"
			if grep -q 'permission denied.*reading a snapshot' "$RB_TMP/nobody.err"; then
				ok "$name gdb-minimal: denied, so read through gcore"
			else
				not_ok "$name gdb-minimal: denied, so read through gcore"
				diag "$(grep -v '^warning' "$RB_TMP/nobody.err" | grep . | head -8)"
			fi
			kill -9 "$npid" 2>/dev/null
			rm -rf "${root:?}$dir"
		fi
	fi
	first=0
done < <(rubies_list | grep -E "$RUBIES_RE")

# A remote target (gdbserver): always through a snapshot.  The smallest Ruby: the
# snapshot crosses the remote protocol.
if command -v gdbserver >/dev/null && [ -n "$GDB_MIN" ]; then
	read -r kind ver root cmd < <(rubies_list | grep -E '^dwarf 2\.7|^dwarf' | head -1)
	if [ -n "${kind:-}" ] && ruby_start "$kind" "$root" "$cmd" threads.rb; then
		wait_parked "$RB_PID"
		want "$RB_TMP/want-remote" -p "$RB_PID"
		RB_CMDS=bt gdb_rb "$GDB_MIN" "$RB_TMP/remote" \
			-ex "target remote | exec gdbserver --attach - $RB_PID"
		RB_CMDS=bt same "$kind $ver gdb-minimal, remote (gdbserver)" "$RB_TMP/remote" "$RB_TMP/want-remote"
		if grep -q "target is remote; reading a snapshot" "$RB_TMP/remote.err"; then
			ok "$kind $ver gdb-minimal remote: read through gcore"
		else
			not_ok "$kind $ver gdb-minimal remote: read through gcore"
		fi
		kill -9 "$RB_PID" 2>/dev/null
	fi
fi
# rb-bt --native on a process that is no Ruby: said so, without a gcore of it first.
if [ -n "$GDB_MIN" ]; then
	sleep 600 &
	spid=$!
	timeout 120 "$GDB_MIN" -nx -batch -x "$SCRIPT" -p "$spid" -ex 'rb-bt --native' \
		>"$RB_TMP/sleep.log" 2>&1 </dev/null
	kill -9 "$spid" 2>/dev/null
	if grep -q 'not a Ruby process' "$RB_TMP/sleep.log" && ! grep -q 'Saved corefile' "$RB_TMP/sleep.log"; then
		ok "gdb-minimal rb-bt --native, no Ruby: said so, no snapshot written"
	else
		not_ok "gdb-minimal rb-bt --native, no Ruby: said so, no snapshot written"
		diag "$(grep -E 'rbinspect|Saved' "$RB_TMP/sleep.log" | head -5)"
	fi
fi
# No more than before (a leftover of a gdb that was killed is cleaned up on the way).
left=$(snapshots_left)
if [ "$left" -le "$snap_before" ]; then ok "no snapshot left in /tmp or ~/.cache/rbinspect ($left, $snap_before before)"
else not_ok "no snapshot left in /tmp or ~/.cache/rbinspect ($left, $snap_before before)"; fi
tap_done
