# layout.sh: struct layouts from DWARF, and where DWARF is found.
#
# 1. The built-in tables are right: for every DWARF build, tools/layout-dump of its libruby
#    (what rbi_layout_from_dwarf reads) equals `layout-dump --table VERSION` (the table that
#    version gets without DWARF) on every field the table has.
# 2. Separate debug info is found the standard ways, so a stripped libruby still gets its
#    layout from DWARF ("dwarf" in `rbinspect info`) on a live process running the stripped
#    copy (LD_LIBRARY_PATH, which beats the builds' RUNPATH): its DWARF moved to a file named
#    by .gnu_debuglink beside it; to /usr/lib/debug/.build-id/xx/yyyy.debug (a private
#    /usr/lib/debug in a mount namespace: the machine's is left alone); served by a local debuginfod (DEBUGINFOD_URLS) in a private network namespace, so it
#    listens on that namespace's loopback only (elfutils 0.188's debuginfod has no listen
#    address option), stopped at the end. Without any of them the copy gets a table: the
#    stripping did strip; and libdebuginfod is not even loaded.
set -u
. "$(dirname "$0")/../tap.sh"
. "$(dirname "$0")/../rubies.sh"
# A stripped copy keeps its build's build-id: a cached layout would hide whether its DWARF
# was found.
export RBI_NO_CACHE=1
LAYOUT_DUMP=${LAYOUT_DUMP:-$(dirname "$RBINSPECT")/../tools/layout-dump}
DEBUGINFOD_PID=""

cleanup() {
	[ -n "$DEBUGINFOD_PID" ] && kill "$DEBUGINFOD_PID" 2>/dev/null
	rubies_cleanup
}
trap cleanup EXIT

if [ ! -x "$LAYOUT_DUMP" ]; then
	not_ok "layout-dump not built ($LAYOUT_DUMP)"; tap_done; exit
fi

# info_layout PID: the layout `rbinspect info` reports; with DEBUG_NS set, from a mount
# namespace whose /usr/lib/debug is that directory.
info_layout() {
	if [ -n "${DEBUG_NS:-}" ]; then
		unshare -m sh -c 'mount --make-rprivate / && mount --bind "$1" /usr/lib/debug &&
			"$2" --json -p "$3" info' sh "$DEBUG_NS" "$RBINSPECT" "$1" | jq -r .layout
	else
		"$RBINSPECT" --json -p "$1" info | jq -r .layout
	fi
}

# try_stripped LABEL DIR ROOT CMD WANT: run simple.rb on the libruby in DIR and check the
# layout's source starts with WANT.
try_stripped() {
	local label=$1 dir=$2 root=$3 cmd=$4 want=$5 got
	if ! LD_LIBRARY_PATH=$dir ruby_start dwarf "$root" "$cmd" simple.rb; then
		not_ok "$label: program did not start"; return
	fi
	if ! grep -q " $dir/libruby" "/proc/$RB_PID/maps"; then
		not_ok "$label: the process does not run the stripped copy"; kill -9 "$RB_PID"; return
	fi
	got=$(info_layout "$RB_PID")
	case $got in
	"$want"*) ok "$label: layout from $want ($got)" ;;
	*) not_ok "$label: layout from $want"; diag "got: $got" ;;
	esac
	# No debug file anywhere and no DEBUGINFOD_URLS: libdebuginfod (curl,
	# GnuTLS, ...) is never loaded (lib/image/debuginfo.c).
	if [ "$want" = table ]; then
		loaded=$(env -u DEBUGINFOD_URLS LD_DEBUG=files "$RBINSPECT" -p "$RB_PID" info 2>&1 \
			>/dev/null | grep -c 'file=libdebuginfod')
		is "$loaded" 0 "$label: libdebuginfod not loaded without DEBUGINFOD_URLS"
	fi
	kill -9 "$RB_PID"
}

newest=""
while read -r kind ver root cmd; do
	[ "$kind" = dwarf ] || continue
	lib=$(find "$root/lib" -maxdepth 1 -name "libruby.so.$ver" -type f | head -n 1)
	if [ -z "$lib" ]; then not_ok "dwarf $ver: no libruby.so.$ver"; continue; fi
	newest="$ver $root $cmd $lib"

	# 1. The table for this version against this build's DWARF.
	"$LAYOUT_DUMP" "$lib" >"$RB_TMP/dwarf.layout" 2>"$RB_TMP/err" || diag "$(cat "$RB_TMP/err")"
	"$LAYOUT_DUMP" --table "$ver" >"$RB_TMP/table.layout" 2>"$RB_TMP/err" || diag "$(cat "$RB_TMP/err")"
	check "dwarf $ver: layout-dump reads its DWARF" test -s "$RB_TMP/dwarf.layout"
	have=$(awk '$2 != "absent"' "$RB_TMP/table.layout" | wc -l)
	bad=$(join <(sort "$RB_TMP/table.layout") <(sort "$RB_TMP/dwarf.layout") |
		awk '$2 != "absent" && $2 != $3 { print $1 ": table " $2 ", dwarf " $3 }')
	if [ -n "$bad" ] || [ "$have" -lt 50 ]; then
		not_ok "dwarf $ver: the built-in table matches DWARF on its $have fields"; diag "$bad"
	else
		ok "dwarf $ver: the built-in table matches DWARF on its $have fields"
	fi
	for f in objspace.sorted heap_page.start heap_page.total_slots; do
		check "dwarf $ver: the table has $f" grep -q "^$f [0-9]" "$RB_TMP/table.layout"
	done
	# The family's later patch releases get the same heap layout (carried forward).
	next=${ver%.*}.$(( ${ver##*.} + 6 ))
	is "$("$LAYOUT_DUMP" --table "$next" | grep -E '^(objspace|heap_page)\.')" \
		"$(grep -E '^(objspace|heap_page)\.' "$RB_TMP/dwarf.layout")" \
		"dwarf $ver: Ruby $next gets the heap layout of $ver"
done < <(rubies_list)

if [ -z "$newest" ]; then
	skip "no DWARF build: tools/test-rubies.sh --dwarf"; tap_done; exit
fi

# 2. The newest DWARF build, stripped.
read -r ver root cmd lib <<<"$newest"
soname=libruby.so.${ver%.*}
buildid=$(readelf -n "$lib" | awk '/Build ID/ { print $3; exit }')
debug=$RB_TMP/$soname.debug
objcopy --only-keep-debug "$lib" "$debug"

plain=$RB_TMP/plain; mkdir -p "$plain"
objcopy --strip-debug "$lib" "$plain/$soname"
check "dwarf $ver: the stripped copy has no .debug_info" \
	bash -c "! readelf -S -W '$plain/$soname' | grep -q ' .debug_info '"
try_stripped "dwarf $ver stripped, no debug info" "$plain" "$root" "$cmd" table

linked=$RB_TMP/linked; mkdir -p "$linked"
cp "$debug" "$linked/"
objcopy --strip-debug --add-gnu-debuglink="$linked/$soname.debug" "$lib" "$linked/$soname"
try_stripped "dwarf $ver stripped, .gnu_debuglink" "$linked" "$root" "$cmd" dwarf
"$LAYOUT_DUMP" "$linked/$soname" >"$RB_TMP/linked.layout" 2>/dev/null
is "$(md5sum <"$RB_TMP/linked.layout")" "$(md5sum <"$RB_TMP/dwarf.layout")" \
	"dwarf $ver: layout-dump of the stripped copy finds its debuglink file"

# The machine's /usr/lib/debug is not the test's: rbinspect looks there from a mount namespace
# of its own, with a private /usr/lib/debug that holds only this debug file.
if [ -z "$buildid" ]; then
	skip "dwarf $ver: libruby has no build-id"
elif [ ! -d /usr/lib/debug ] || ! unshare -m true 2>/dev/null; then
	skip "dwarf $ver: /usr/lib/debug/.build-id: needs a mount namespace (root) and /usr/lib/debug to mount a private one over"
else
	mkdir -p "$RB_TMP/debugdir/.build-id/${buildid:0:2}"
	cp "$debug" "$RB_TMP/debugdir/.build-id/${buildid:0:2}/${buildid:2}.debug"
	DEBUG_NS=$RB_TMP/debugdir try_stripped "dwarf $ver stripped, /usr/lib/debug/.build-id" \
		"$plain" "$root" "$cmd" dwarf
fi

# debuginfod: the server and rbinspect share a network namespace of their own (loopback
# only); the target runs outside it (reading its memory needs no network).
if ! command -v debuginfod >/dev/null || ! command -v unshare >/dev/null || ! command -v curl >/dev/null; then
	skip "debuginfod: needs elfutils' debuginfod (apt-get install debuginfod), unshare and curl"
elif ! unshare --net true 2>/dev/null; then
	skip "debuginfod: cannot make a private network namespace (unshare --net) to keep it on loopback"
elif [ -z "$buildid" ]; then
	skip "debuginfod: libruby has no build-id"
else
	served=$RB_TMP/served; mkdir -p "$served"
	cp "$debug" "$served/"
	if LD_LIBRARY_PATH=$plain ruby_start dwarf "$root" "$cmd" simple.rb; then
		port=$((20000 + RANDOM % 20000))
		RB_PID=$RB_PID BUILDID=$buildid PORT=$port SERVED=$served LIB=$plain/$soname \
			DUMP=$LAYOUT_DUMP RBINSPECT=$RBINSPECT TMPD=$RB_TMP \
			unshare --net bash -c '
			ip link set lo up
			debuginfod -p "$PORT" -F -d "$TMPD/debuginfod.sqlite" -t 0 -g 0 "$SERVED" \
				>"$TMPD/debuginfod.log" 2>&1 &
			srv=$!
			trap "kill $srv 2>/dev/null; wait $srv 2>/dev/null" EXIT
			for _ in $(seq 1 200); do
				curl -sf -o /dev/null "http://127.0.0.1:$PORT/buildid/$BUILDID/debuginfo" && break
				sleep 0.1
			done
			export DEBUGINFOD_URLS=http://127.0.0.1:$PORT DEBUGINFOD_CACHE_PATH=$TMPD/dcache
			"$RBINSPECT" --json -p "$RB_PID" info | jq -r .layout >"$TMPD/dinfod.layout"
			"$DUMP" "$LIB" >"$TMPD/dinfod.dump" 2>/dev/null
			true' </dev/null
		got=$(cat "$RB_TMP/dinfod.layout" 2>/dev/null)
		case $got in
		dwarf*) ok "dwarf $ver stripped, DEBUGINFOD_URLS (local debuginfod on loopback): layout from dwarf" ;;
		*) not_ok "dwarf $ver stripped, DEBUGINFOD_URLS: layout from dwarf"; diag "got: $got"
		   diag "$(tail -5 "$RB_TMP/debuginfod.log" 2>/dev/null)" ;;
		esac
		is "$(md5sum <"$RB_TMP/dinfod.dump")" "$(md5sum <"$RB_TMP/dwarf.layout")" \
			"dwarf $ver: layout-dump of the stripped copy gets its DWARF from debuginfod"
		kill -9 "$RB_PID"
	else
		not_ok "debuginfod: program did not start"
	fi
fi
tap_done
