#!/usr/bin/env bash
# make-core.sh — write a core file of a running process with gdb's gcore, leaving it running.
#
# usage: tools/make-core.sh PID OUT [--with-file-mappings]
#   Prints the core's path (OUT) on stdout; gdb's chatter goes to OUT.log only on failure.
#   --with-file-mappings  also dump file-backed private mappings (coredump_filter 0x37 instead
#       of the usual 0x33), so the core carries the bytes of libruby's own text and data and
#       can be read without the rootfs. The process's filter is restored afterwards.
#
# The process is stopped for the duration of the dump (0.2-1 s) and then detached. Needs ptrace
# permission over PID (root, or same user with kernel.yama.ptrace_scope=0). For a chroot or a
# tools/run-in-ns.sh process, NT_FILE names the paths as the host sees them (absolute host paths
# for chroot, in-root paths like /usr/lib/... for run-in-ns.sh).
# Cores of Ruby 3.3+ are ~530 MB on disk (a 404 MiB mostly untouched anonymous mapping is
# written as zeros); compress with zstd for fixtures.
set -euo pipefail

die() { printf 'make-core.sh: %s\n' "$*" >&2; exit 1; }

FILTER=/dev/null # /proc/PID/coredump_filter once we changed it
OLD_FILTER=""

# Put the process's coredump_filter back, whatever happened.
restore_filter() {
	if [[ -n $OLD_FILTER ]]; then
		echo "0x$OLD_FILTER" > "$FILTER" 2> /dev/null || true
	fi
}

# Bit 2 (file-backed private) is what makes text pages of libruby go into the core.
widen_filter() {
	local pid=$1
	FILTER=/proc/$pid/coredump_filter
	OLD_FILTER=$(< "$FILTER") || die "cannot read $FILTER"
	trap restore_filter EXIT
	echo 0x37 > "$FILTER" || die "cannot write $FILTER"
}

main() {
	local pid out files=0 arg log
	[[ $# -ge 2 ]] || die "usage: make-core.sh PID OUT [--with-file-mappings]"
	pid=$1 out=$2
	shift 2
	for arg in "$@"; do
		case $arg in
		--with-file-mappings) files=1 ;;
		*) die "unknown option: $arg" ;;
		esac
	done
	[[ $pid =~ ^[0-9]+$ && -d /proc/$pid ]] || die "no such process: $pid"
	command -v gdb > /dev/null || die "gdb is not installed"
	mkdir -p "$(dirname "$out")"
	out=$(realpath -m "$out")
	log=$out.log
	rm -f "$out"
	[[ $files -eq 1 ]] && widen_filter "$pid"
	# gdb honours coredump_filter (use-coredump-filter is on by default) and detaches at exit,
	# so the process keeps running. -nx: no user gdbinit may change what is dumped.
	if ! gdb -q -batch -nx -ex "gcore $out" -p "$pid" > "$log" 2>&1 || [[ ! -s $out ]]; then
		cat "$log" >&2
		die "gcore of $pid failed (log: $log)"
	fi
	rm -f "$log"
	# gcore writes untouched memory as zeros (Ruby 3.3+ reserves 404 MiB):
	# punch holes so a 900 MB core takes a few MB of a shared disk.
	fallocate --dig-holes "$out" 2> /dev/null || true
	printf '%s\n' "$out"
}

main "$@"
