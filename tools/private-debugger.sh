#!/usr/bin/env bash
# private-debugger.sh — debuggers for the tests that must not be installed on the system:
#   gdb-minimal  Debian's gdb built without Python (conflicts with the gdb package)
#   lldb-19      LLDB 19 (conflicts with lldb-14), to test the LLDB plugin built against 14
# Each is fetched once with `apt-get download` and unpacked with `dpkg-deb -x` into
# ${RBI_CACHE:-$HOME/.cache/rbinspect}/NAME; nothing is installed.
#
# usage: tools/private-debugger.sh NAME [--path]
#   Prints the program to run (for lldb-19 a wrapper that sets LD_LIBRARY_PATH).
#   --path: only print it if it is there already (status 1 if not); never downloads.
# Used by tools/install-deps.sh --test and tests/integration/debuggers.sh.
set -euo pipefail
name=${1:-}
dir=${RBI_CACHE:-$HOME/.cache/rbinspect}/$name
case $name in
gdb-minimal) pkgs=(gdb-minimal) bin=$dir/usr/bin/gdb ;;
lldb-19) pkgs=(lldb-19 liblldb-19 libllvm19 libclang-cpp19 python3-lldb-19) bin=$dir/lldb ;;
*) echo "usage: private-debugger.sh gdb-minimal|lldb-19 [--path]" >&2; exit 2 ;;
esac
if [ "${2:-}" = --path ]; then
	[ -x "$bin" ] || exit 1
	echo "$bin"
	exit
fi
if [ ! -x "$bin" ]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	(cd "$tmp" && apt-get download -q "${pkgs[@]}" >/dev/null 2>&1) ||
		{ echo "private-debugger.sh: apt-get download ${pkgs[*]} failed" >&2; exit 1; }
	rm -rf "$dir.new"
	mkdir -p "$dir.new"
	for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$dir.new"; done
	if [ "$name" = lldb-19 ]; then
		# Its own libraries first; the rest (libedit, libxml2, ...) are bookworm's.
		py=$(cd "$dir.new" && echo usr/lib/llvm-19/lib/python3*/site-packages)
		cat >"$dir.new/lldb" <<EOS
#!/bin/sh
export LD_LIBRARY_PATH="$dir/usr/lib/x86_64-linux-gnu:$dir/usr/lib/llvm-19/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
export PYTHONPATH="$dir/$py"
exec "$dir/usr/lib/llvm-19/bin/lldb" "\$@"
EOS
		chmod +x "$dir.new/lldb"
	fi
	rm -rf "$dir"
	mv "$dir.new" "$dir"
fi
case $name in
gdb-minimal)
	out=$("$bin" -nx -batch -ex 'python print(1)' 2>&1 || true)
	case $out in
	*"not supported"*) ;;
	*) echo "private-debugger.sh: $bin does not say it lacks Python: $out" >&2; exit 1 ;;
	esac ;;
lldb-19)
	"$bin" --version | grep -q 'lldb version 19' ||
		{ echo "private-debugger.sh: $bin does not run" >&2; exit 1; } ;;
esac
echo "$bin"
