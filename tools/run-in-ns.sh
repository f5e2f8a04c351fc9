#!/usr/bin/env bash
# run-in-ns.sh — run CMD container-like: ROOT becomes / (pivot_root) in a new mount and pid
# namespace, so the host sees the process's files only through /proc/PID/root and its
# /proc/PID/maps names paths such as /usr/lib/x86_64-linux-gnu/libruby-3.3.so.3.3.8 that do
# not exist on the host. Inside, CMD is pid 1.
#
# usage: [RBI_NS_PIDFILE=FILE] tools/run-in-ns.sh ROOT CMD [ARGS...]
#   e.g. RBI_NS_PIDFILE=/tmp/p tools/run-in-ns.sh ~/.cache/rbinspect/rubies/deb-3.3 \
#            /usr/bin/ruby /tmp/programs/threads.rb &
#
# Prints nothing of its own; CMD's stdin/stdout/stderr and exit status pass through.
# CMD and its files are named by their paths inside ROOT. Needs root (CAP_SYS_ADMIN).
#
# Finding the host pid of CMD:
#   - If RBI_NS_PIDFILE is set, the host pid of CMD (pid 1 inside) is written to that file
#     (atomically, via rename) as soon as it exists; wait for the file to appear.
#   - Otherwise: CMD is the grandchild of this script (script > unshare > CMD); it is the
#     process whose /proc/PID/status NSpid: line has two pids, the second being 1.
# Stopping: SIGTERM/SIGINT/SIGHUP to this script's pid are forwarded to CMD as SIGTERM (unshare
# itself ignores them); SIGTERM to CMD's host pid works directly too (Ruby handles it, so the
# pid-1 signal filtering does not drop it); SIGKILL of unshare kills CMD (--kill-child).
set -euo pipefail

die() { printf 'run-in-ns.sh: %s\n' "$*" >&2; exit 2; }

# Host pid of the namespaced child of $1: the child whose NSpid has two entries (host, ns).
ns_child_of() {
	local parent=$1 c kids=()
	read -r -a kids < "/proc/$parent/task/$parent/children" 2> /dev/null || true
	for c in "${kids[@]}"; do
		awk '$1 == "NSpid:" && NF == 3 { found = 1 } END { exit !found }' \
			"/proc/$c/status" 2> /dev/null && { echo "$c"; return 0; }
	done
	return 1
}

# Wait (up to ~10 s) until unshare ($1) has forked CMD; print CMD's host pid.
wait_ns_child() {
	local parent=$1 i
	for ((i = 0; i < 1000; i++)); do
		ns_child_of "$parent" && return 0
		[[ -d /proc/$parent ]] || return 1
		sleep 0.01
	done
	return 1
}

CHILD="" # host pid of CMD once known

# shellcheck disable=SC2317  # called from the trap
forward_term() {
	[[ -n $CHILD ]] || CHILD=$(ns_child_of "$UNSHARE") || true
	[[ -n $CHILD ]] && kill -TERM "$CHILD" 2> /dev/null
	return 0
}

main() {
	[[ $# -ge 2 ]] || die "usage: run-in-ns.sh ROOT CMD [ARGS...]"
	local root rc=0
	root=$(realpath -e "$1") || die "no such root: $1"
	shift
	[[ -d $root/proc ]] || die "$root does not look like a root dir (no proc/)"
	mkdir -p "$root/.oldroot"
	[[ -n ${RBI_NS_PIDFILE:-} ]] && rm -f "$RBI_NS_PIDFILE"
	# Inside: make mounts private so nothing leaks to the host, bind ROOT onto itself (pivot_root
	# needs a mount point), mount a proc of the new pid namespace, pivot, exec CMD as pid 1.
	# Every tool must run before pivot_root: afterwards PATH and the dynamic loader resolve in
	# ROOT, which has no mount(8). So the old root stays mounted at /.oldroot (harmless here).
	# shellcheck disable=SC2016  # expanded by the inner sh
	unshare --mount --pid --fork --kill-child sh -c '
		set -e
		mount --make-rprivate /
		mount --bind "$0" "$0"
		mount -t proc proc "$0/proc"
		cd "$0"
		pivot_root . .oldroot
		exec "$@"' "$root" "$@" &
	UNSHARE=$!
	trap forward_term TERM INT HUP
	if CHILD=$(wait_ns_child "$UNSHARE") && [[ -n ${RBI_NS_PIDFILE:-} ]]; then
		echo "$CHILD" > "$RBI_NS_PIDFILE.tmp.$$"
		mv -f "$RBI_NS_PIDFILE.tmp.$$" "$RBI_NS_PIDFILE"
	fi
	# A trapped signal interrupts wait (status > 128); keep waiting until unshare is gone.
	while true; do
		wait "$UNSHARE" && rc=0 || rc=$?
		[[ -d /proc/$UNSHARE ]] || break
	done
	exit "$rc"
}

main "$@"
