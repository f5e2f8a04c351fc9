# bad-input.sh: every kind of bad input gets one clear line on stderr and
# its own documented exit code; never a crash or a hang.
set -u
. "$(dirname "$0")/../tap.sh"
. "$(dirname "$0")/../rubies.sh"

# expect DESC CODE PATTERN CMD...: exit code CODE, exactly one stderr line
# matching PATTERN, no sanitizer report.
expect() {
	local desc=$1 code=$2 pat=$3 rc lines
	shift 3
	timeout 60 "$@" >"$RB_TMP/out" 2>"$RB_TMP/err"
	rc=$?
	lines=$(grep -c . "$RB_TMP/err")
	if [ "$rc" -eq "$code" ] && [ "$lines" -eq 1 ] && grep -qE -- "$pat" "$RB_TMP/err"; then
		ok "$desc"
	else
		not_ok "$desc (exit $rc, want $code)"
		diag "$(head -5 "$RB_TMP/err")"
	fi
}

# A pid that surely does not exist: one we started and reaped.
sh -c 'exit 0' & gone=$!; wait $gone
expect "no such pid" 3 "no such process: $gone" "$RBINSPECT" -p "$gone" info
expect "pid 0 is a usage error" 2 "invalid process id" "$RBINSPECT" -p 0 info

sleep 300 & notruby=$!; RB_PIDS+=("$notruby")
expect "a pid that is not Ruby" 5 "not a Ruby process" "$RBINSPECT" -p "$notruby" info

# A process that maps no memory (a kernel thread; a program in the middle of
# exec looks the same for a moment): not Ruby, not "exited".
kthread=$(awk '$0 == "kthreadd" { print FILENAME }' /proc/[0-9]*/comm 2>/dev/null |
	  head -1 | cut -d/ -f3)
if [ -n "$kthread" ] && [ ! -s "/proc/$kthread/maps" ]; then
	expect "a kernel thread is not Ruby" 5 "maps no memory.*not a Ruby process" \
		"$RBINSPECT" -p "$kthread" info
else
	skip "no kernel thread visible here"
fi

# A zombie: the child exits and its parent (now sleep) never reaps it.  The
# child lives a little longer than the shell, so the shell cannot reap it
# before it becomes sleep.
sh -c 'sleep 0.3 & echo $! > '"$RB_TMP"'/zpid; exec sleep 300' & RB_PIDS+=($!)
for _ in $(seq 50); do
	[ -s "$RB_TMP/zpid" ] && grep -q '^State:.*Z' "/proc/$(cat "$RB_TMP/zpid")/status" 2>/dev/null && break
	sleep 0.1
done
expect "a zombie" 9 "zombie" "$RBINSPECT" -p "$(cat "$RB_TMP/zpid")" info

printf 'not an ELF file\n' > "$RB_TMP/text"
expect "a file that is not ELF" 6 "not an ELF file" "$RBINSPECT" "$RB_TMP/text" info
expect "an ELF that is not a core" 6 "not a core" "$RBINSPECT" /bin/true info
expect "a missing core file" 1 "No such file" "$RBINSPECT" "$RB_TMP/none" info

# The command line around a core (the bundled one needs nothing else): options anywhere
# before the command, nothing taken for an executable that is not a file, and no target
# opened for a mistyped command.
ex=$here/testdata/cores/ruby-3.1-threads.core.xz
expect "an unknown option after the core" 2 'unknown option.*"--bogus"' "$RBINSPECT" "$ex" --bogus info
expect "a mistyped command after the core" 2 '"bta" is neither a command.*nor the core.s executable' \
	"$RBINSPECT" "$ex" bta
expect "an executable that does not exist" 2 'neither a command.*no such file' \
	"$RBINSPECT" "$ex" "$RB_TMP/none" info
"$RBINSPECT" "$ex" /bin/true bt 1 >/dev/null 2>"$RB_TMP/err"
is "$?" 0 "an executable of another build: still read (from the core's memory)"
like "$(cat "$RB_TMP/err")" "^rbinspect: warning: /usr/bin/ruby3.1 on disk \(read from /(usr/)?bin/true\) has build-id [0-9a-f]+ but the target mapped build-id 9b43a4fc" \
	"an executable of another build: a warning names the file given and both build-ids"
expect "a mistyped command with -p: nothing opened" 2 'unknown command "bogus"' \
	"$RBINSPECT" -p "$gone" bogus
expect "a process and a core" 2 'a process \(-p\) and a core' "$RBINSPECT" "$ex" -p "$gone" info
expect "an extra word after info" 2 'info: takes no arguments' "$RBINSPECT" "$ex" info extra
expect "a command where the target belongs" 2 'bt is a command: name the target first' \
	"$RBINSPECT" bt
expect "--sysroot that does not exist" 2 '--sysroot "/nonexistent" is no directory' \
	"$RBINSPECT" --sysroot /nonexistent "$ex" info
expect "--sysroot that is a file" 2 '--sysroot ".*" is no directory' \
	"$RBINSPECT" "$ex" --sysroot "$RB_TMP/text" info
expect "--ruby-version that is no version, before the core is read" 2 \
	'--ruby-version takes X.Y.Z \(3.4.11\) or X.Y, not "abc"' \
	"$RBINSPECT" --ruby-version abc "$ex" info
# Files that are no command files or profiles: one line, an exit status, never a read for
# ever or a buffer grown until memory runs out.
for x in /dev/zero "$RB_TMP"; do
	expect "-x $x: not a file or a pipe" 2 ": -x .*: not a file or a pipe" "$RBINSPECT" "$ex" -x "$x"
done
head -c 200000 /dev/zero | tr '\0' i >"$RB_TMP/oneline"
expect "-x of a file without line ends: one line, exit 2" 2 "a line longer than 65536 bytes" \
	"$RBINSPECT" "$ex" -x "$RB_TMP/oneline"
expect "report /dev/zero: one line, exit 1" 1 "line 1 is longer than" \
	"$RBINSPECT" report /dev/zero -o "$RB_TMP/z.svg"
for args in "--json $ex info" "$ex --json info" "$ex info --json"; do
	# shellcheck disable=SC2086
	"$RBINSPECT" $args 2>/dev/null | jq -e .version >/dev/null
	is "$?" 0 "--json in any place before or after the command: rbinspect $args"
done
"$RBINSPECT" "$ex" -ex 'threads --json' -ex threads >"$RB_TMP/out" 2>/dev/null
is "$(head -c 1 "$RB_TMP/out") $(tail -n 1 "$RB_TMP/out" | head -c 1)" "{  " \
	"a command's --json is for that command alone"
for cmd in "help record" "record --help" "report --help" "$ex bt --help"; do
	# shellcheck disable=SC2086
	out=$("$RBINSPECT" $cmd 2>&1)
	rc=$?
	if [ "$rc" = 0 ] && grep -q "^$(awk '{ print $NF == "--help" ? $(NF - 1) : $NF }' <<<"$cmd") " <<<"$out"; then
		ok "rbinspect $cmd: that command's help"
	else
		not_ok "rbinspect $cmd: that command's help (exit $rc)"; diag "$out"
	fi
done

# in_memory_cgroup BYTES CMD...: run CMD in a new memory cgroup of BYTES (v2 or v1), as a
# container's limit; status 125 when no memory cgroup can be made here.
in_memory_cgroup() {
	local bytes=$1 cg rc
	shift
	if grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
		cg=/sys/fs/cgroup/rbi-test.$$
		mkdir "$cg" 2>/dev/null && echo "$bytes" >"$cg/memory.max" 2>/dev/null &&
			echo 0 >"$cg/memory.swap.max" 2>/dev/null
	else
		cg=/sys/fs/cgroup/memory/rbi-test.$$
		mkdir "$cg" 2>/dev/null && echo "$bytes" >"$cg/memory.limit_in_bytes" 2>/dev/null
	fi || { rmdir "$cg" 2>/dev/null; return 125; }
	sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" "$@"
	rc=$?
	rmdir "$cg"
	return $rc
}

# A compressed core whose headers say 1 GiB of non-zero bytes (34 KB of zstd) opened under
# a 192 MiB memory limit: the memfd's pages are charged there, so the limit, not only the
# machine's free memory, bounds them; the OOM killer would end rbinspect without a word.
python3 - $((1 << 30)) <<'PY' | zstd -q -c >"$RB_TMP/bomb.zst"
import struct, sys
size = int(sys.argv[1])
eh = bytearray(64)
eh[0:7] = b"\x7fELF\x02\x01\x01"
struct.pack_into("<HHIQQQIHHHHHH", eh, 16, 4, 62, 1, 0, 64, 0, 0, 64, 56, 1, 0, 0, 0)
ph = struct.pack("<IIQQQQQQ", 1, 4, 4096, 0x10000000, 0, size, size, 4096)
out = sys.stdout.buffer
out.write(eh + ph + bytes(4096 - 64 - 56))
for _ in range(size >> 20):
    out.write(b"\x5a" * (1 << 20))
PY
in_memory_cgroup $((192 << 20)) "$RBINSPECT" "$RB_TMP/bomb.zst" info >"$RB_TMP/out" 2>"$RB_TMP/err"
rc=$?
if [ $rc -eq 125 ]; then
	skip "a bomb core under a memory limit: no memory cgroup can be made here"
elif [ $rc -eq 1 ] && [ "$(grep -c . "$RB_TMP/err")" -eq 1 ] &&
     grep -q "needs more memory than its memory cgroup's limit leaves free" "$RB_TMP/err"; then
	ok "a bomb core under a memory limit: one line, exit 1, not the OOM killer"
else
	not_ok "a bomb core under a memory limit (exit $rc)"; diag "$(head -3 "$RB_TMP/err")"
fi
rm -f "$RB_TMP/bomb.zst"

read -r kind ver root cmd < <(rubies_list | awk '$1 == "deb"' | tail -1)
if [ -z "${root:-}" ]; then
	skip "no test Ruby: run tools/test-rubies.sh"
	tap_done; exit
fi

# Permission: a root-owned Ruby inspected as nobody.
ruby_start "$kind" "$root" "$cmd" simple.rb
cp "$RBINSPECT" "$RB_TMP/rbinspect"; chmod 755 "$RB_TMP" "$RB_TMP/rbinspect"
expect "EPERM says how to fix it" 4 "CAP_SYS_PTRACE" \
	setpriv --reuid=nobody --regid=nogroup --clear-groups "$RB_TMP/rbinspect" -p "$RB_PID" info

# record's output that cannot be written: said at once, before a 30 s recording (the
# line "recording process..." would come first), and no command started.
for out in "$RB_TMP/none/p.svg" "$RB_TMP" "$here/README.md/p.svg"; do
	expect "record -o $out: refused before recording" 1 "record: cannot write $out: " \
		timeout 10 "$RBINSPECT" record -p "$RB_PID" -d 30 -o "$out"
done
expect "record --raw into a missing directory: refused before recording" 1 \
	"record: cannot write $RB_TMP/none/p.raw: No such" \
	timeout 10 "$RBINSPECT" record -p "$RB_PID" -d 30 -o - --raw "$RB_TMP/none/p.raw"
expect "record -- COMMAND into a missing directory: the command is not run" 1 \
	"record: cannot write" timeout 10 "$RBINSPECT" record -o "$RB_TMP/none/p.svg" -- \
	sh -c "touch $RB_TMP/ran"
check "record -- COMMAND into a missing directory: the command did not run" test ! -e "$RB_TMP/ran"
mkdir "$RB_TMP/gone"
expect "record into a current directory that was removed: refused before recording" 1 \
	"record: cannot write a profile in the current directory" \
	sh -c 'cd "$1" && rmdir "$1" && exec timeout 10 "$2" record -p "$3" -d 30' _ \
	"$RB_TMP/gone" "$RBINSPECT" "$RB_PID"

# --pause of a process a debugger holds (attached, running): it cannot be
# stopped with ptrace as well; say so, and leave it running.
gdb -q -nx -batch -p "$RB_PID" -ex continue >/dev/null 2>&1 & dbg=$!
for _ in $(seq 100); do
	[ "$(awk '/^TracerPid:/ { print $2 }' "/proc/$RB_PID/status")" = "$dbg" ] &&
		grep -q '^State:.*[RS]' "/proc/$RB_PID/status" && break
	sleep 0.1
done
expect "objects --pause of a process a debugger holds: busy" 11 "traced already, by process [0-9]+" \
	"$RBINSPECT" -p "$RB_PID" objects --pause
kill -9 "$dbg" 2>/dev/null; wait "$dbg" 2>/dev/null

# A truncated core.
core=$(core_of "$RB_PID")
truncate -s $(( $(stat -c %s "$core") / 2 )) "$core"
expect "a truncated core" 6 "truncated" "$RBINSPECT" "$core" info
rm -f "$core"

# Cores broken inside: the bad-core status and what is wrong, never "not a
# Ruby process" or a VM error.  corrupt HOW: a copy of the core broken so.
core=$(core_of "$RB_PID")
corrupt() {
	cp --sparse=always "$core" "$core.bad"
	python3 - "$core.bad" "$1" <<'PY'
import struct, sys
path, how = sys.argv[1:]
with open(path, "r+b") as f:
    eh = f.read(64)
    phoff, = struct.unpack_from("<Q", eh, 32)
    phnum, = struct.unpack_from("<H", eh, 56)
    f.seek(phoff)
    phs = [struct.unpack("<IIQQQQQQ", f.read(56)) for _ in range(phnum)]
    note = next(p for p in phs if p[0] == 4)     # PT_NOTE
    if how == "class":
        f.seek(4); f.write(b"\x07")
    elif how == "no-segments":
        f.seek(56); f.write(b"\0\0")
    elif how == "zero-notes":
        f.seek(note[2]); f.write(bytes(note[5]))
    elif how == "long-note":
        f.seek(note[2]); f.write(struct.pack("<I", 0x7fffffff))
PY
}
corrupt class
expect "a core whose e_ident is bad" 6 "bad ELF header: invalid class" "$RBINSPECT" "$core.bad" info
corrupt no-segments
expect "a core without program headers" 6 "bad core: no memory segments" "$RBINSPECT" "$core.bad" info
corrupt zero-notes
expect "a core whose notes are zeros" 6 "bad core: no thread" "$RBINSPECT" "$core.bad" info
corrupt long-note
expect "a core whose first note runs past its segment" 6 "bad core: the note at offset" \
	"$RBINSPECT" "$core.bad" info

# A core cut short while a session reads it: the same program crashing again into the
# same name (the kernel truncates the old core before it writes).  Each later command
# that needs bytes not read before (the heap: info reads none of it) says so, with the
# bad-core status; no SIGBUS.
cp --sparse=always "$core" "$core.cut"
mkfifo "$RB_TMP/cmds"
timeout 60 "$RBINSPECT" "$core.cut" <"$RB_TMP/cmds" >"$RB_TMP/out" 2>"$RB_TMP/err" & sess=$!
exec 7>"$RB_TMP/cmds"
echo info >&7
for _ in $(seq 100); do
	grep -q '^threads' "$RB_TMP/out" && break
	sleep 0.1
done
truncate -s 0 "$core.cut"
printf 'objects\nheap-dump -o %s\n' "$RB_TMP/cut.json" >&7
exec 7>&-
wait $sess
rc=$?
cut=$(grep -c 'the core file was cut short while being read' "$RB_TMP/err")
if [ $rc -eq 6 ] && [ "$cut" -eq 2 ] && [ "$(grep -c . "$RB_TMP/err")" -eq 2 ]; then
	ok "a core cut short under a session: objects and heap-dump say so, exit 6"
else
	not_ok "a core cut short under a session (exit $rc, $cut lines say so)"
	diag "$(head -5 "$RB_TMP/err")"
fi
rm -f "$core" "$core.bad" "$core.cut" "$RB_TMP/cmds" "$RB_TMP/cut.json"

# A core whose libruby on disk has another build-id: say so, and still
# answer from what the core holds (a core carrying file-backed mappings).
core=$(core_of "$RB_PID" --with-file-mappings)
lib=$(readlink -f "$(ls "$root"/usr/lib/x86_64-linux-gnu/libruby-*.so.*.* | head -1)")
mkdir -p "$RB_TMP/sysroot$(dirname "$lib")"
fake=$RB_TMP/sysroot$lib
cp "$lib" "$fake"
# Flip one byte of the build-id note's descriptor.
bid=$(readelf -n "$fake" | awk '/Build ID/ { print $3; exit }')
off=$(python3 -c 'import sys; print(open(sys.argv[1], "rb").read().index(bytes.fromhex(sys.argv[2])))' "$fake" "$bid")
printf '\xee' | dd of="$fake" bs=1 seek="$off" conv=notrunc status=none
"$RBINSPECT" --sysroot "$RB_TMP/sysroot" "$core" info >"$RB_TMP/out" 2>"$RB_TMP/err"
rc=$?
if [ $rc -eq 0 ] && grep -q 'build-id' "$RB_TMP/err" && grep -q "ruby *$ver" "$RB_TMP/out"; then
	ok "binary mismatch is reported and the core's own bytes are used"
else
	not_ok "binary mismatch (exit $rc)"; diag "$(cat "$RB_TMP/err")"
fi
rm -f "$core"

# An unknown Ruby version with no DWARF: the same Ruby with its version
# string patched, in a copy of its root.
fakeroot=$RB_TMP/fakeroot
cp -a "$root" "$fakeroot"
flib=$fakeroot${lib#"$root"}
# ruby_version lives in a read-only segment, where file offset == address.
voff=$(nm -D "$flib" | awk '$3 == "ruby_version" { print $1 }')
printf '9.9.0%*s' $(( ${#ver} - 5 )) '' | tr ' ' 0 |
	dd of="$flib" bs=1 seek=$((16#$voff)) conv=notrunc status=none
RUBYOPT=--disable-gems ruby_start deb "$fakeroot" "$cmd" simple.rb
expect "an unknown Ruby version says how to supply DWARF" 7 "DWARF|debug info" \
	"$RBINSPECT" -p "$RB_PID" info
tap_done
