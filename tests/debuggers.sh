# debuggers.sh: the debuggers the plugins are tested in (sourced, after rubies.sh).
#   GDB_SCRIPT  gdb-plugin/rbinspect.gdb of the build under test
#   PLUGIN      the LLDB plugin of the build under test
#   lldbs       the system's LLDB, LLDB 19 unpacked privately (tools/private-debugger.sh) and
#               RBI_LLDB=PROGRAM, another one to try; empty without the plugin
#   LLDB_ENV    the command prefix to run an LLDB with the plugin: a sanitizer build's
#               plugin needs the sanitizer's runtime loaded first (and LLDB 19 then hangs
#               at start: it is left out, LLDB_LEFT_OUT says so)
build=${RBI_BUILD:-$(cd "$(dirname "$RBINSPECT")/.." && pwd)}
GDB_SCRIPT=$build/gdb-plugin/rbinspect-uninstalled.gdb
PLUGIN=$build/gdb-plugin/lldb/librbinspect-lldb.so
lldbs=()
for l in lldb lldb-19 lldb-18 lldb-17 lldb-16 lldb-15 lldb-14; do
	if command -v "$l" >/dev/null; then lldbs+=("$(command -v "$l")"); break; fi
done
# Debian's LLDB 14 points its Python at a wrong directory and says so on every start.
for d in /usr/lib/llvm-14/lib/python3*/dist-packages; do
	[ -d "$d" ] && export PYTHONPATH=$d
done
LLDB_ENV=() LLDB_LEFT_OUT=
if [ -f "$PLUGIN" ] && nm -D "$PLUGIN" 2>/dev/null | grep -q ' U __asan_init'; then
	LLDB_ENV=(env "LD_PRELOAD=$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)"
		  ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0)
	LLDB_LEFT_OUT="LLDB 19 not tested: it hangs with a sanitizer runtime, which this build's plugin needs"
else
	l=$(bash "$here/tools/private-debugger.sh" lldb-19 --path 2>/dev/null || true)
	[ -n "$l" ] && lldbs+=("$l")
	[ -n "${RBI_LLDB:-}" ] && lldbs+=("$RBI_LLDB")
fi
[ -f "$PLUGIN" ] || lldbs=()
