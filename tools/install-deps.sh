#!/usr/bin/env bash
# install-deps.sh: Debian packages to build and test rbinspect (root).
set -euo pipefail
build_deps=(gcc make meson ninja-build pkg-config libelf-dev libdw-dev
	    libcapstone-dev libreadline-dev zlib1g-dev xz-utils)
test_deps=(gdb jq)
missing=()
for p in "${build_deps[@]}" "${@:+${test_deps[@]}}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
