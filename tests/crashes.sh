# crashes.sh: real crash cores for integration tests (sourced after tap.sh and rubies.sh).
# testdata/programs/crash.rb with the C extension testdata/crashext, crashed the way users'
# Rubies crash, and the kernel writes the core.
#
# Where the core goes: /proc/sys/kernel/core_pattern.  A plain name ("core", the default)
# puts it in the crashing process's working directory, where crash.rb works.  A pipe
# (systemd-coredump, apport) or a path elsewhere is set to "core" while the test runs (root
# only) and put back at exit.  crash_pipe_pattern points it at a pipe helper of the test's
# own instead (the way systemd-coredump gets its cores: on standard input).
#
# core_pattern is the machine's, not the test's: a test that may change it holds the lock
# $CRASH_LOCK (flock) from crash_setup until it has put it back, so that concurrent runs
# (two checkouts, a soak beside CI) take turns instead of each restoring the other's pattern.
# Anything else on the machine that sets core_pattern can take the same lock.
CORE_PATTERN=/proc/sys/kernel/core_pattern
CRASH_LOCK=${RBI_CORE_PATTERN_LOCK:-/run/lock/rbinspect-core_pattern.lock}
crash_old_pattern=
crash_restore_pattern=0
CRASH_EXT=$RB_TMP/crashext.so

crashes_cleanup() {
	[ "$crash_restore_pattern" = 1 ] && printf '%s\n' "$crash_old_pattern" >"$CORE_PATTERN"
	# Unlocked here, not when the last descriptor closes: a child may still hold a copy.
	[ -n "${crash_lock_fd:-}" ] && flock -u "$crash_lock_fd"
	rubies_cleanup
}
trap crashes_cleanup EXIT

# crash_setup: a core pattern that leaves cores where crash.rb works, no core size limit,
# the extension built.  1 with CRASH_WHY set when that cannot be had.
crash_setup() {
	if [ -w "$CORE_PATTERN" ]; then
		exec {crash_lock_fd}>>"$CRASH_LOCK" && flock -w 1800 "$crash_lock_fd" ||
			{ CRASH_WHY="cannot take $CRASH_LOCK, which guards core_pattern"; return 1; }
	fi
	crash_old_pattern=$(cat "$CORE_PATTERN")
	case $crash_old_pattern in
	*/* | \|*)
		if ! printf 'core\n' 2>/dev/null >"$CORE_PATTERN"; then
			CRASH_WHY="core_pattern is '$crash_old_pattern' and cannot be set to 'core' (run as root)"
			return 1
		fi
		crash_restore_pattern=1
		diag "core_pattern '$crash_old_pattern' is 'core' during this test"
		;;
	esac
	crash_pattern=$(cat "$CORE_PATTERN")
	if ! ulimit -c unlimited 2>/dev/null; then
		CRASH_WHY="cannot raise the core size limit (ulimit -c)"; return 1
	fi
	if ! cc -shared -fPIC -O2 -o "$CRASH_EXT" "$here/testdata/crashext/crashext.c"; then
		CRASH_WHY="cannot build testdata/crashext/crashext.c"; return 1
	fi
	# The pipe helper: the kernel runs it as root with the core on its standard input.
	printf '#!/bin/sh\ncat >"$1.part" && mv "$1.part" "$1"\n' >"$RB_TMP/catcore"
	chmod 755 "$RB_TMP/catcore"
}

# crash_pipe_pattern: cores of the next crash go to the pipe helper, which writes
# $RB_TMP/piped-core.PID; crash_file_pattern puts the pattern back.
crash_pipe_pattern() {
	crash_restore_pattern=1
	printf '|%s %s/piped-core.%%p\n' "$RB_TMP/catcore" "$RB_TMP" >"$CORE_PATTERN"
}
crash_file_pattern() { printf '%s\n' "$crash_pattern" >"$CORE_PATTERN"; }

# crash_start KIND ROOT CMD: start crash.rb (ruby_start) with the extension where that Ruby
# can load it.  The Ruby must run with LD_LIBRARY_PATH as given to this call.
crash_start() {
	local kind=$1 root=$2 cmd=$3
	if [ "$kind" = deb ]; then
		programs_install "$root" "$CRASH_EXT"
		RBI_CRASHEXT="$RB_PROGS/crashext.so" ruby_start "$kind" "$root" "$cmd" crash.rb
	else
		RBI_CRASHEXT=$CRASH_EXT ruby_start "$kind" "$root" "$cmd" crash.rb
	fi
}

# crash_truth MODE: the truth as it is at the crash: the crasher woke up to crash (segv),
# so it runs.
crash_truth() {
	awk -F'\t' -v OFS='\t' -v mode="$1" \
		'mode == "segv" && $1 == "thread" && $2 == "crasher" { $4 = "run" } { print }' "$RB_TRUTH"
}

# crash_segv: wake crash.rb's crasher, which writes through NULL in C; crash_self: which
# sends SIGSEGV to its own process; crash_null: which calls a NULL function pointer.
# A crasher that already died leaves no reader on the FIFO: the write gives up after 10 s.
crash_segv() { crash_wake x; }
crash_self() { crash_wake k; }
# crash_null: the crasher calls through a NULL function pointer (pc 0 at the fault).
crash_null() { crash_wake n; }
# crash_fiddle: the crasher makes that call through Fiddle (a Ruby with fiddle.so).
crash_fiddle() { crash_wake f; }
crash_wake() { timeout 10 sh -c 'printf %s "$1" >"$2"' sh "$1" "$RB_TRUTH.fifo"; }

# wait_dead PID: until PID has exited (gone, or a zombie: its core is written by then).
wait_dead() {
	local st
	for _ in $(seq 1 600); do
		st=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)
		[ -z "$st" ] || [ "$st" = Z ] && return 0
		sleep 0.05
	done
	return 1
}

# crash_core [pipe]: the core of the crash.rb that died, or "" (after wait_dead).
crash_core() {
	local core
	if [ "${1:-}" = pipe ]; then
		core=$RB_TMP/piped-core.$RB_PID
		for _ in $(seq 1 600); do [ -f "$core" ] && break; sleep 0.05; done
	else
		core=$(ls "$RB_TRUTH.cwd"/core* 2>/dev/null | head -n 1)
	fi
	[ -f "$core" ] && echo "$core"
}
