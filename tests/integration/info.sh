# info.sh: `rbinspect info` on every test Ruby (Debian's stripped binaries
# and DWARF builds), live and from a core: the right version, a VM that
# validates, where it was found, and the thread count the target reports.
set -u
. "$(dirname "$0")/../tap.sh"
. "$(dirname "$0")/../rubies.sh"
# The layout each run reports is where it came from: DWARF read now, not a cached copy
# (the cache is asked for below, by name).
export RBI_NO_CACHE=1

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

# vm_source PID: "symbol" when the image holding the VM (libruby, or the executable of a
# static Ruby) names its VM pointer in a symbol table, else "code" (Ruby 3.3+ keeps it
# out of .dynsym: a stripped one is found from machine code).
vm_source() {
	local image syms
	image=$(awk '$6 ~ /\/libruby[^/]*\.so/ { print $6; exit }' "/proc/$1/maps")
	[ -n "$image" ] || image=$(readlink "/proc/$1/exe")
	syms=$({ nm -D --defined-only "$image"; nm --defined-only "$image"; } 2>/dev/null)
	if grep -qE ' ruby_current_vm(_ptr)?$' <<<"$syms"; then echo symbol; else echo code; fi
}

while read -r kind ver root cmd; do
	layout=table; ruby_dwarf "$kind" && layout=dwarf
	if ! ruby_start "$kind" "$root" "$cmd" simple.rb; then
		not_ok "$kind $ver: program did not start"; continue
	fi
	src=$(vm_source "$RB_PID")
	"$RBINSPECT" --json -p "$RB_PID" info >"$RB_TMP/live.json"
	check_info "$kind $ver live" "$RB_TMP/live.json" "$src" "$layout"
	if ruby_dwarf "$kind"; then
		# A DWARF layout is cached by build-id; a cached one must read
		# the target exactly as a fresh one does.
		export XDG_CACHE_HOME=$RB_TMP/xdg-$ver
		RBI_NO_CACHE=0 "$RBINSPECT" -p "$RB_PID" bt >"$RB_TMP/fresh.txt"
		RBI_NO_CACHE=0 "$RBINSPECT" --json -p "$RB_PID" info >"$RB_TMP/cached.json"
		RBI_NO_CACHE=0 "$RBINSPECT" -p "$RB_PID" bt >"$RB_TMP/cached.txt"
		# An entry its group may write could be anyone's: DWARF is read again.
		chmod g+w "$XDG_CACHE_HOME"/rbinspect/layouts/*
		RBI_NO_CACHE=0 "$RBINSPECT" --json -p "$RB_PID" info >"$RB_TMP/untrusted.json"
		unset XDG_CACHE_HOME
		check "$kind $ver: the second run uses the cached DWARF layout" \
			grep -q '(cached)$' <(jq -r .layout "$RB_TMP/cached.json")
		check "$kind $ver: bt is the same with the cached layout" \
			cmp -s "$RB_TMP/fresh.txt" "$RB_TMP/cached.txt"
		is "$(jq -r .layout "$RB_TMP/untrusted.json")" "$(jq -r .layout "$RB_TMP/live.json")" \
			"$kind $ver: a cached layout others may write is not used (DWARF read again)"
	else
		XDG_CACHE_HOME=$RB_TMP/xdg-none RBI_NO_CACHE=0 "$RBINSPECT" -p "$RB_PID" bt >/dev/null
		check "$kind $ver: nothing to cache, no cache directory made" \
			test ! -e "$RB_TMP/xdg-none/rbinspect"
	fi
	core=$(core_of "$RB_PID")
	"$RBINSPECT" --json "$core" info >"$RB_TMP/core.json"
	check_info "$kind $ver core" "$RB_TMP/core.json" "$src" "$layout"
	# A static Ruby's core carried off its machine: no libruby whose name gives the
	# version, so the family comes from a .../ruby/X.Y.0/ path it mapped (an extension),
	# and the patch release stays unknown, not a stray number (it was once read
	# uninitialised: "3.4.793283117").
	if [ "$kind" = static-stripped ]; then
		family=${ver%.*}
		mkdir -p "$RB_TMP/no-files"
		"$RBINSPECT" --json --sysroot "$RB_TMP/no-files" "$core" info >"$RB_TMP/bare.json" \
			2>/dev/null
		if grep -q "/ruby/$family.0/" "/proc/$RB_PID/maps"; then
			is "$(jq -r --arg f "$family" '[.version, (.version_via |
				test("^path .*/ruby/" + $f + ".0 [(]patch release unknown[)]$"))] | @tsv' \
				"$RB_TMP/bare.json")" "$(printf '%s\ttrue' "$family")" \
				"$kind $ver core without its files: the family from a path, no patch release"
		else
			skip "$kind $ver: the process maps no file under /ruby/$family.0/"
		fi
	fi
	rm -f "$core"
	kill -9 "$RB_PID"
done < <(rubies_list)

# Container-like: its own mount and pid namespace, so /proc/PID/maps names
# paths that exist only under /proc/PID/root; its core names them too, and
# --sysroot finds them.
read -r kind ver root cmd < <(rubies_list | awk '$1 == "deb"' | tail -1)
if [ -z "$kind" ]; then
	skip "container: no Debian Ruby in this list (${RBI_TEST_RUBIES:-main})"
elif why=$(no_ns); then
	skip "container: $why"
elif ruby_start "$kind" "$root" "$cmd" simple.rb ns; then
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
