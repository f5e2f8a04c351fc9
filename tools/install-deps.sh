#!/usr/bin/env bash
# install-deps.sh [--test]: Debian packages to build rbinspect, and with
# --test also to run its tests (root).
set -euo pipefail
build_deps=(gcc make meson ninja-build pkg-config libelf-dev libdw-dev
	    libzydis-dev libreadline-dev zlib1g-dev libjson-c-dev liblzma-dev libzstd-dev
	    liblz4-dev xz-utils)
test_deps=(gdb jq binutils util-linux python3 tmux groff-base zstd lz4 gzip
	   g++ lldb-14 liblldb-14-dev gdbserver debuginfod curl
	   chromium golang-go golang-github-google-pprof-dev valgrind iproute2
	   puma ruby-rails ruby-sqlite3 ruby-sinatra ruby-sidekiq redis-server
	   apache2-utils strace)
missing=()
want=("${build_deps[@]}")
[ "${1:-}" = --test ] && want+=("${test_deps[@]}")
# Node.js may come from elsewhere with its own npm (Debian's npm conflicts
# with such a nodejs): only ask Debian when the commands are missing.
if [ "${1:-}" = --test ] && ! command -v npm >/dev/null; then
	want+=(nodejs npm)
fi
for p in "${want[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	export DEBIAN_FRONTEND=noninteractive
	echo "install-deps: installing ${#missing[@]} Debian packages (a minute or two): ${missing[*]}" >&2
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# gdb without Python and LLDB 19 (they conflict with gdb, lldb-14): unpacked privately,
# after the packages above, which bring the libraries they load (libipt, libedit...) and
# the package lists apt-get download needs: on a fresh machine, run first, they failed
# ("libipt.so.2: cannot open").
if [ "${1:-}" = --test ]; then
	for d in gdb-minimal lldb-19; do
		bash "$(dirname "$0")/private-debugger.sh" "$d" >/dev/null || true
	done
fi
