#!/usr/bin/env bash
# run-in-ns.sh — run CMD container-like: ROOT becomes / (pivot_root) in a new mount and pid
# namespace, so the host sees the process's files only through /proc/PID/root and its
# /proc/PID/maps names paths such as /usr/lib/x86_64-linux-gnu/libruby-3.3.so.3.3.8 that do
# not exist on the host. Inside, CMD is pid 1.
#
# usage: [RBI_NS_PIDFILE=FILE] tools/run-in-ns.sh ROOT CMD [ARGS...]
#   e.g. RBI_NS_PIDFILE=/tmp/p tools/run-in-ns.sh ~/.cache/rbinspect/rubies/deb-3.3 \
#            /usr/bin/ruby /tmp/threads.rb &
#
# Prints nothing of its own; CMD's stdin/stdout/stderr and exit status pass through.
# CMD and its files are named by their paths inside ROOT. Needs root (CAP_SYS_ADMIN).
#
# Finding the host pid of CMD:
#   - If RBI_NS_PIDFILE is set, the host pid of CMD (pid 1 inside) is written to that file
#     (atomically, via rename) as soon as it exists; wait for the file to appear.
#   - Otherwise: this script execs unshare, so the caller's $! is unshare's pid; CMD is the
#     child of that pid whose /proc/CHILD/status has two pids on its NSpid: line.
# Killing the script's pid ($!) kills CMD too (unshare --kill-child). CMD receives SIGTERM from
# the host normally (Ruby installs a handler, so pid-1 signal filtering does not bite).
set -euo pipefail

die() { printf 'run-in-ns.sh: %s\n' "$*" >&2; exit 2; }

# Host pid of the namespaced child of $1: the child whose NSpid has two entries (host, ns).
ns_child_of() {
	local parent=$1 c
	for c in $(cat "/proc/$parent/task/$parent/children" 2>/dev/null); do
		awk '$1 == "NSpid:" && NF == 3 { found = 1 } END { exit !found }' \
			"/proc/$c/status" 2>/dev/null && { echo "$c"; return 0; }
	done
	return 1
}

# Background helper: poll until unshare (which will be this pid after exec) has forked CMD,
# then publish its host pid. Gives up after ~10 s, or as soon as the parent is gone.
write_pidfile() {
	local parent=$1 file=$2 i pid
	for ((i = 0; i < 1000; i++)); do
		if pid=$(ns_child_of "$parent"); then
			echo "$pid" > "$file.tmp.$$" && mv -f "$file.tmp.$$" "$file"
			return 0
		fi
		[[ -d /proc/$parent ]] || return 1
		sleep 0.01
	done
	return 1
}

main() {
	[[ $# -ge 2 ]] || die "usage: run-in-ns.sh ROOT CMD [ARGS...]"
	local root
	root=$(realpath -e "$1") || die "no such root: $1"
	shift
	[[ -d $root/proc ]] || die "$root does not look like a root dir (no proc/)"
	mkdir -p "$root/.oldroot"
	if [[ -n ${RBI_NS_PIDFILE:-} ]]; then
		rm -f "$RBI_NS_PIDFILE"
		# The helper must not hold the caller's stdout open (a caller reading CMD's output
		# through a pipe would otherwise wait for it).
		write_pidfile $$ "$RBI_NS_PIDFILE" < /dev/null > /dev/null 2>&1 &
	fi
	# Inside: make mounts private so nothing leaks to the host, bind ROOT onto itself (pivot_root
	# needs a mount point), mount a proc of the new pid namespace, pivot, exec CMD as pid 1.
	# Every tool must run before pivot_root: afterwards PATH and the dynamic loader resolve in
	# ROOT, which has no mount(8). So the old root stays mounted at /.oldroot (harmless here).
	# shellcheck disable=SC2016  # expanded by the inner sh
	exec unshare --mount --pid --fork --kill-child sh -c '
		set -e
		mount --make-rprivate /
		mount --bind "$0" "$0"
		mount -t proc proc "$0/proc"
		cd "$0"
		pivot_root . .oldroot
		exec "$@"' "$root" "$@"
}

main "$@"
