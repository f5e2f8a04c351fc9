# install.sh: `meson install --destdir` into a staging directory, then the
# library as another program uses it: examples/bt.c built through
# pkg-config against the staged header, library and .pc file only, and run
# on a live Ruby (its frames against the target's own).  Also: the staged
# rbinspect runs, both man pages are installed, and the library needs no
# json-c (only rbinspect reads heap-dump files).
set -u
. "$(dirname "$0")/../tap.sh"
. "$(dirname "$0")/../rubies.sh"

build=${RBI_BUILD:-$(dirname "$(dirname "$RBINSPECT")")}
stage=$RB_TMP/stage
if meson install -C "$build" --destdir "$stage" >"$RB_TMP/install.log" 2>&1; then
	ok "meson install --destdir"
else
	not_ok "meson install --destdir"; diag "$(tail -20 "$RB_TMP/install.log")"
fi

pc=$(find "$stage" -name libruby-introspect.pc | head -1)
check "libruby-introspect.pc installed" test -n "$pc"
check "ruby-introspect.h installed" test -n "$(find "$stage" -name ruby-introspect.h)"
for page in man1/rbinspect.1 man3/libruby-introspect.3; do
	check "man page $page installed" test -n "$(find "$stage" -path "*/man/$page")"
done
rbi=$(find "$stage" -type f -name rbinspect -perm -u+x | head -1)
libdir=$(dirname "$(find "$stage" -name 'libruby-introspect.so*' | head -1)")

# The staged files only: PKG_CONFIG_SYSROOT_DIR puts the staging directory
# in front of the .pc file's own prefix.
export PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_LIBDIR=$(dirname "$pc")
export PKG_CONFIG_SYSROOT_DIR=$stage
flags=$(pkg-config --cflags --libs libruby-introspect 2>&1)
if [ $? -eq 0 ] && grep -q -- "-I$stage" <<<"$flags"; then
	ok "pkg-config finds the staged library: $flags"
else
	not_ok "pkg-config finds the staged library"; diag "$flags"
fi
# A sanitizer build's library needs the sanitizer runtime in the program.
san=$(meson introspect --buildoptions "$build" 2>/dev/null |
      python3 -c 'import json,sys; print([o["value"] for o in json.load(sys.stdin) if o["name"] == "b_sanitize"][0])' 2>/dev/null)
extra=()
[ -n "$san" ] && [ "$san" != none ] && extra=(-fsanitize="$san")
if cc -std=c11 -Wall -Wextra -Werror "${extra[@]}" -o "$RB_TMP/bt" "$here/examples/bt.c" \
	$flags >"$RB_TMP/cc.log" 2>&1; then
	ok "examples/bt.c builds with pkg-config --cflags --libs"
else
	not_ok "examples/bt.c builds with pkg-config --cflags --libs"; diag "$(cat "$RB_TMP/cc.log")"
fi
# The library is the VM reader: heap-dump files (json-c) are rbinspect's to read.
so=$(find "$libdir" -maxdepth 1 -type f -name 'libruby-introspect.so*' | head -1)
is "$(readelf -d "$so" | grep -c 'NEEDED.*json')" 0 \
	"the installed library does not need json-c"
export LD_LIBRARY_PATH=$libdir
check "the example links the staged library" \
	bash -c "ldd '$RB_TMP/bt' | grep -q '=> $libdir/libruby-introspect.so'"

read -r kind ver root cmd < <(rubies_list | head -1)
if ruby_start "$kind" "$root" "$cmd" simple.rb; then
	"$RB_TMP/bt" "$RB_PID" >"$RB_TMP/bt.txt" 2>&1
	is "$?" 0 "the example runs on a live Ruby $ver"
	want=$(awk -F'\t' '$1 == "frame" && $2 == "main" { n++ } END { print n }' "$RB_TRUTH")
	got=$(awk '/^Thread 1 \(main\)/ { on = 1; next } /^Thread/ { on = 0 } on' "$RB_TMP/bt.txt" | wc -l)
	is "$got" "$want" "the example prints every frame of the main thread"
	line=$(awk -F'\t' '$1 == "frame" && $2 == "main" && $3 == 3 { print $5 ":" $6 ":in" }' "$RB_TRUTH")
	check "the example's frames are the target's own ($line)" grep -qF "  $line '" "$RB_TMP/bt.txt"
	kill -9 "$RB_PID"
else
	not_ok "simple.rb did not start"
fi
if [ -n "$rbi" ]; then
	is "$("$rbi" --version 2>&1)" "rbinspect $(meson introspect --projectinfo "$build" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')" \
		"the staged rbinspect runs"
else
	not_ok "rbinspect installed"
fi
tap_done
