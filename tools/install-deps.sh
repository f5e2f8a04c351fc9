#!/usr/bin/env bash
# install-deps.sh [--test]: Debian packages to build rbinspect, and with
# --test also to run its tests (root).
set -euo pipefail
build_deps=(gcc make meson ninja-build pkg-config libelf-dev libdw-dev
	    libcapstone-dev libreadline-dev zlib1g-dev xz-utils)
test_deps=(gdb jq binutils util-linux python3)
missing=()
want=("${build_deps[@]}")
[ "${1:-}" = --test ] && want+=("${test_deps[@]}")
for p in "${want[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
