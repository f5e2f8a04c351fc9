# heap-hostile.sh: `rbinspect heap-dump` of a large heap of hostile content on every test
# Ruby (testdata/programs/hostile.rb: Strings of control, escape, quote, backslash, NUL,
# random binary and invalid UTF-8 bytes, and one cycle of Arrays through all of them),
# live (--pause --strings) and from a core: every line valid UTF-8 JSON, the Strings the
# program wrote down with their bytesize and, when 7-bit, their value byte for byte, the
# cycle's Arrays with their references, the global_tbl root holding it
# (tests/hostile-check.py); heap retainers finds a path through the cycle from a root and
# ends; and the dump streams: rbinspect's maximum RSS on a heap of RBI_HOSTILE_LARGE
# objects (default 600000) is at most 8 MB above that on RBI_HOSTILE_SMALL (default
# 30000) and at most 64 MB (8 MB on Debian's Rubies; up to 49 MB where libdw holds a
# debug build's DWARF, whatever the heap's size; 128 MB for an ASan build), each dump
# within 300 s.  The 10M-object case, with times, is
# bench/heap-hostile.sh.
set -u
. "$(dirname "$0")/../tap.sh"
. "$(dirname "$0")/../rubies.sh"
check_py=$here/tests/hostile-check.py
# The bound in KB: ASan's shadow and quarantine (CI's build) add a fixed 20-40 MB.
cap=65536
readelf -d "$RBINSPECT" 2>/dev/null | grep -q 'libasan' && cap=131072
small=${RBI_HOSTILE_SMALL:-30000}
large=${RBI_HOSTILE_LARGE:-600000}

# dump_rss ARGS...: run rbinspect ARGS under a 300 s bound; prints "EXIT MAXRSS_KB", the
# highest VmHWM of the process seen while it ran (read every 10 ms: the rusage of a child
# would include the pages of the python that forked it).
dump_rss() {
	python3 - "$RBINSPECT" "$@" <<'PY'
import subprocess, sys, time
p = subprocess.Popen(sys.argv[1:], stderr=subprocess.DEVNULL)
hwm, t0 = 0, time.monotonic()
while p.poll() is None and time.monotonic() - t0 < 300:
    try:
        for line in open("/proc/%d/status" % p.pid):
            if line.startswith("VmHWM:"):
                hwm = max(hwm, int(line.split()[1]))
    except OSError:
        pass
    time.sleep(0.01)
if p.poll() is None:
    p.kill()
    p.wait()
    print("timeout", hwm)
else:
    print(p.returncode, hwm)
PY
}

# ring_addr I: the address of the cycle's Array I in the truth.
ring_addr() { jq -r --argjson i "$1" 'select(.ring == $i) | .address' "$RB_TRUTH"; }

while read -r kind ver root cmd; do
	R="$kind $ver"
	declare -A rss=()
	for n in "$small" "$large"; do
		if ! RBI_HEAP_OBJECTS=$n ruby_start "$kind" "$root" "$cmd" hostile.rb; then
			not_ok "$R: hostile.rb ($n objects) did not start"; continue 2
		fi
		wait_parked "$RB_PID" || diag "$R: not every task sleeps"
		read -r rc kb < <(dump_rss -p "$RB_PID" heap-dump --pause --strings -o "$RB_TMP/live.json.gz")
		is "$rc" 0 "$R live, $n objects: heap-dump --pause --strings exits 0 within 300 s"
		rss[$n]=$kb
		if out=$(python3 "$check_py" "$RB_TRUTH" "$RB_TMP/live.json.gz" "$n" 2>&1); then
			ok "$R live, $n objects: valid JSON, hostile Strings and the cycle as written ($(tail -n 1 <<<"$out"))"
		else
			not_ok "$R live, $n objects: the dump differs from what hostile.rb wrote"; diag "$out"
		fi
		if [ "$n" = "$large" ]; then
			core=$(core_of "$RB_PID")
			read -r rc kb < <(dump_rss "$core" heap-dump --strings -o "$RB_TMP/core.json")
			is "$rc" 0 "$R core, $n objects: heap-dump exits 0 within 300 s"
			if out=$(python3 "$check_py" "$RB_TRUTH" "$RB_TMP/core.json" "$n" 2>&1); then
				ok "$R core, $n objects: valid JSON, hostile Strings and the cycle as written"
			else
				not_ok "$R core, $n objects: the dump differs from what hostile.rb wrote"; diag "$out"
			fi
			rm -f "$core"
			timeout 300 "$RBINSPECT" --json heap retainers "$RB_TMP/core.json" "$(ring_addr 5)" \
				>"$RB_TMP/ret.json" 2>"$RB_TMP/err"
			is "$? $(jq -r '.paths[0] | [(.[0].root != null), .[-2].address, .[-1].address,
				(length <= 7)] | @tsv' "$RB_TMP/ret.json")" \
				"0 $(printf 'true\t%s\t%s\ttrue' "$(ring_addr 4)" "$(ring_addr 5)")" \
				"$R core: heap retainers in the cycle: from a root through the Array before, within 6 steps"
			rm -f "$RB_TMP/core.json"
		fi
		rm -f "$RB_TMP/live.json.gz"
		kill -9 "$RB_PID" 2>/dev/null
	done
	big=${rss[$large]:-0} little=${rss[$small]:-0}
	if [ "$big" -gt 0 ] && [ "$big" -le $((little + 8192)) ] && [ "$big" -le "$cap" ]; then
		ok "$R: heap-dump streams: max RSS $((little / 1024)) MB at $small objects, $((big / 1024)) MB at $large"
	else
		not_ok "$R: heap-dump streams: max RSS $((little / 1024)) MB at $small objects, $((big / 1024)) MB at $large (want <= +8 MB, <= $((cap / 1024)) MB)"
	fi
	unset rss
done < <(rubies_list)
tap_done
