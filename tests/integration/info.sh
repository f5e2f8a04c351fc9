# info.sh: `rbinspect info` on every test Ruby (Debian's stripped binaries
# and DWARF builds), live and from a core: the right version, a VM that
# validates, where it was found, and the thread count the target reports.
set -u
. "$(dirname "$0")/../tap.sh"
. "$(dirname "$0")/../rubies.sh"

# check_info LABEL JSONFILE: compare with the truth of the running program.
check_info() {
	local label=$1 json=$2 want_src=$3 want_layout=$4
	is "$(jq -r .version "$json")" "$(truth_get ruby_version)" "$label: version"
	is "$(jq -r .threads "$json")" "$(grep -c '^thread'$'\t' "$RB_TRUTH")" "$label: thread count"
	is "$(jq -r .vm_source "$json")" "$want_src" "$label: VM found by $want_src"
	if jq -r .layout "$json" | grep -q "^$want_layout"; then
		ok "$label: layout from $want_layout"
	else
		not_ok "$label: layout from $want_layout"; diag "$(jq -r .layout "$json")"
	fi
	check "$label: symbol table found" test "$(jq -r .symbols "$json")" != null
}

while read -r kind ver root cmd; do
	# Debian 3.3+ export no VM symbol: the VM comes from machine code.
	src=symbol
	if [ "$kind" = deb ] && [ "$(printf '%s\n' "$ver" 3.3 | sort -V | head -1)" = 3.3 ]; then
		src=code
	fi
	layout=table; [ "$kind" = dwarf ] && layout=dwarf
	if ! ruby_start "$kind" "$root" "$cmd" simple.rb; then
		not_ok "$kind $ver: program did not start"; continue
	fi
	"$RBINSPECT" --json -p "$RB_PID" info >"$RB_TMP/live.json"
	check_info "$kind $ver live" "$RB_TMP/live.json" "$src" "$layout"
	if [ "$kind" = dwarf ]; then
		# A DWARF layout is cached by build-id; a cached one must read
		# the target exactly as a fresh one does.
		export XDG_CACHE_HOME=$RB_TMP/xdg-$ver
		RBI_NO_CACHE=0 "$RBINSPECT" -p "$RB_PID" bt >"$RB_TMP/fresh.txt"
		RBI_NO_CACHE=0 "$RBINSPECT" --json -p "$RB_PID" info >"$RB_TMP/cached.json"
		RBI_NO_CACHE=0 "$RBINSPECT" -p "$RB_PID" bt >"$RB_TMP/cached.txt"
		unset XDG_CACHE_HOME
		check "$kind $ver: the second run uses the cached DWARF layout" \
			grep -q '(cached)$' <(jq -r .layout "$RB_TMP/cached.json")
		check "$kind $ver: bt is the same with the cached layout" \
			cmp -s "$RB_TMP/fresh.txt" "$RB_TMP/cached.txt"
	fi
	core=$(core_of "$RB_PID")
	"$RBINSPECT" --json "$core" info >"$RB_TMP/core.json"
	check_info "$kind $ver core" "$RB_TMP/core.json" "$src" "$layout"
	rm -f "$core"
	kill -9 "$RB_PID"
done < <(rubies_list)

# Container-like: its own mount and pid namespace, so /proc/PID/maps names
# paths that exist only under /proc/PID/root; its core names them too, and
# --sysroot finds them.
read -r kind ver root cmd < <(rubies_list | awk '$1 == "deb"' | tail -1)
if ruby_start "$kind" "$root" "$cmd" simple.rb ns; then
	"$RBINSPECT" --json -p "$RB_PID" info >"$RB_TMP/ns.json"
	is "$(jq -r .version "$RB_TMP/ns.json")" "$ver" "container live: version"
	core=$(core_of "$RB_PID")
	"$RBINSPECT" --json --sysroot "$root" "$core" info >"$RB_TMP/nscore.json"
	is "$(jq -r .version "$RB_TMP/nscore.json")" "$ver" "container core with --sysroot: version"
	is "$(jq -r '.warnings | length' "$RB_TMP/nscore.json")" 0 "container core: no warnings"
	rm -f "$core"
else
	not_ok "container: program did not start"
fi
tap_done
