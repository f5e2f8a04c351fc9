#!/usr/bin/env bash
# bench/crash-core.sh [RUNS]: what reading a crash core costs, on each test Ruby.  A kernel
# crash core is made as tests/integration/crash.sh makes it (crash.rb, its C extension writes
# through NULL, Ruby's [BUG] handler ends it; root, see tests/crashes.sh), then timed:
#   raw     `rbinspect CORE bt`, the reference of the row;
#   X/raw   the same core compressed as X (zst, lz4, xz, gz): `rbinspect CORE.X bt`, and
#   X-cat   the decompressor itself (`zstd -dc CORE.zst >/dev/null` ...), both over raw;
#   gdb/raw gdb's `thread apply all bt` on the same raw core (file and core loading, native
#           frames only), over raw.
# Milliseconds are means over RUNS runs (default 10).  Run by hand; not a test.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-10}
. "$here/bench/crash-common.sh"

printf '%-12s %6s %8s' ruby "MB" "raw ms"
for x in zst lz4 xz gz; do printf ' %7s %7s' "$x/raw" "$x-cat"; done
printf ' %8s\n' "gdb/raw"
while read -r kind ver root cmd; do
	opts=()
	[ "$kind" = deb ] && opts=(--sysroot "$root")
	crash_start "$kind" "$root" "$cmd" >/dev/null || continue
	wait_parked "$RB_PID" || true
	crash_segv
	wait_dead "$RB_PID" || continue
	core=$(crash_core) || continue
	raw=$(ms_per_run "$RBINSPECT" "${opts[@]}" "$core" bt)
	printf '%-12s %6d %8d' "$kind $ver" "$(( $(du -k "$core" | cut -f1) / 1024 ))" "$raw"
	zstd -q -f -o "$core.zst" "$core"; lz4 -q -f "$core" "$core.lz4"
	xz -T0 -1 -kc "$core" >"$core.xz"; gzip -1 -c "$core" >"$core.gz"
	for x in zst lz4 xz gz; do
		case $x in zst) dec=(zstd -dc) ;; lz4) dec=(lz4 -dc) ;; xz) dec=(xz -dc) ;; gz) dec=(gzip -dc) ;; esac
		printf ' %7s %7s' "$(ratio "$(ms_per_run "$RBINSPECT" "${opts[@]}" "$core.$x" bt)" "$raw")" \
			"$(ratio "$(ms_per_run "${dec[@]}" "$core.$x")" "$raw")"
	done
	exe=$cmd gdbopts=()
	[ "$kind" = deb ] && exe=$root/usr/bin/ruby && gdbopts=(-iex "set sysroot $root")
	printf ' %8s\n' "$(ratio "$(ms_per_run gdb -nx -batch "${gdbopts[@]}" -ex 'thread apply all bt' "$exe" "$core")" "$raw")"
	rm -f "$core" "$core".*
done < <(rubies_list)
