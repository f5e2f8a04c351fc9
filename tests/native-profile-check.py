#!/usr/bin/env python3
"""native-profile-check.py RAW TRUTH: check a `record --native` profile of
testdata/programs/squeeze.rb (raw form, see lib/profile/profile.c) against
the squeezer's own caller_locations (TRUTH).

Every sample must be accounted for: the metadata's merged and Ruby-only counts
add up to the samples kept, and the merged ones are those with native frames.
In every merged stack, outermost first: the thread's start is native code; a
C method that calls back into Ruby (Kernel#loop) has native frames (its C
function, the VM's entry) before the Ruby frame it runs.  In every merged
stack that is inside Zlib::Deflate.deflate: the Ruby frames, taken out, are
deflate then the truth (Ruby frames by path and line, C methods by base
label); right after deflate comes its C function in the zlib extension
(zlib.so, or its source file ext/zlib/zlib.c where the build has DWARF), or,
in a few of them, only the VM's own code entering or leaving that function;
and zlib's own code (libz), which the extension calls, is seen in some of
them.  Prints one line per mismatch (at most 20) and a summary; exits 1 on any
mismatch or fewer than 5 stacks inside the extension's function.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rawprofile import CFUNC, NATIVE, RUBY, base, load, ruby_mismatch  # noqa: E402

# The VM's frames past a C method's own when it is entering or leaving the function:
# vm_call_cfunc_with_frame and the invoker (or the pop after it), with a callee or two.
MAX_VM_FRAMES = 3
# Where CRuby calls and returns from a C method's function (vm_insnhelper.c is compiled
# as part of vm.c).
VM_SOURCES = ("vm_insnhelper.c", "vm.c", "vm_eval.c")


def in_zlib_ext(frame):
    return frame["path"].endswith(("/zlib.so", "/zlib.c"))


def vm_around_cfunc(before, after):
    """Whether AFTER, the frames past deflate's, are the VM on its way into or out of the C
    function: the VM pushes a C method's frame before it calls the function (through an
    invoker that tail-jumps to it) and pops it after the function returned, so a sample in
    those few instructions holds deflate with only VM code past it.  That code must be in
    the module of the interpreter loop that runs the Ruby frames outside it (the native
    frame right before the first of them: libruby, or ruby where it is linked in), or,
    where the build has DWARF, in the VM's source files beside that stack's own."""
    first_ruby = next((i for i, f in enumerate(before) if f["kind"] != NATIVE), len(before))
    loop = before[first_ruby - 1]["path"] if first_ruby else None
    sources = {os.path.dirname(f["path"]) for f in before[:first_ruby]
               if f["path"].endswith(".c")}

    def in_vm(f):
        return f["kind"] == NATIVE and (f["path"] == loop or (
            os.path.basename(f["path"]) in VM_SOURCES and
            os.path.dirname(f["path"]) in sources))
    return 0 < len(after) <= MAX_VM_FRAMES and all(in_vm(f) for f in after)


def main():
    meta, samples, _ = load(sys.argv[1])
    stacks = [smp["stack"] for smp in samples]
    truth = [l.rstrip("\n").split("\t")[1:] for l in open(sys.argv[2]) if l.startswith("frame\t")]
    bad = []
    merged = [s for s in stacks if any(f["kind"] == NATIVE for f in s)]
    if meta.get("native") != "yes":
        bad.append("metadata: not a --native profile")
    if int(meta.get("native_merged", -1)) != len(merged):
        bad.append("metadata says %s merged stacks, the profile has %d"
                   % (meta.get("native_merged"), len(merged)))
    if int(meta.get("native_merged", 0)) + int(meta.get("native_ruby_only", 0)) != len(stacks):
        bad.append("merged %s + Ruby-only %s != %d samples kept" % (
            meta.get("native_merged"), meta.get("native_ruby_only"), len(stacks)))
    checked = in_libz = in_vm = 0
    for s in merged:
        text = " ; ".join(f["label"] for f in s)
        if s[0]["kind"] != NATIVE:
            bad.append("outermost frame is not native: " + text)
        for i, f in enumerate(s[:-1]):
            if f["kind"] == CFUNC and s[i + 1]["kind"] == RUBY:
                bad.append("C method %s runs Ruby with no native frame between: %s"
                           % (f["label"], text))
        ruby = [f for f in s if f["kind"] in (RUBY, CFUNC)][::-1]      # innermost first
        if not ruby or ruby[0]["kind"] != CFUNC or base(ruby[0]["label"]) != "deflate":
            continue
        checked += 1
        miss = ruby_mismatch(ruby, [["deflate", "", "0"]] + truth)
        if miss:
            bad.append(miss + ": " + text)
        d = max(i for i, f in enumerate(s) if f["kind"] == CFUNC and base(f["label"]) == "deflate")
        after = s[d + 1:]
        if vm_around_cfunc(s[:d], after):
            in_vm += 1
            continue
        # Its path: the module (zlib.so), or with DWARF the source file (ext/zlib/zlib.c).
        if not after or after[0]["kind"] != NATIVE or not in_zlib_ext(after[0]):
            bad.append("the frame after deflate is not its C function in the zlib extension: "
                       + text + " (" + (after[0]["path"] if after else "") + ")")
        in_libz += any("libz.so" in f["path"] for f in after)
    if checked and not in_libz:
        bad.append("no stack inside deflate reached zlib's own code (libz)")
    if checked - in_vm < 5:
        bad.append("only %d merged stacks inside deflate's C function (want 5 or more)"
                   % (checked - in_vm))
    if in_vm * 4 > checked:
        bad.append("%d of %d stacks inside deflate end in the VM's own code, not zlib's: more "
                   "than the VM's few instructions around a C call account for" % (in_vm, checked))
    for b in bad[:20]:
        print(b)
    print("%d samples, %d merged, %d inside deflate checked, %d in libz, %d in the VM around it"
          % (len(stacks), len(merged), checked, in_libz, in_vm))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
