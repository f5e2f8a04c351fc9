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
(zlib.so, or its source file ext/zlib/zlib.c where the build has DWARF); and
zlib's own code (libz), which the extension calls, is seen in some of them.  Prints one line per mismatch (at
most 20) and a summary; exits 1 on any mismatch or fewer than 5 such stacks.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rawprofile import CFUNC, NATIVE, RUBY, base, load, ruby_mismatch  # noqa: E402


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
    checked = in_libz = 0
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
        # Its path: the module (zlib.so), or with DWARF the source file (ext/zlib/zlib.c).
        if d + 1 >= len(s) or s[d + 1]["kind"] != NATIVE or \
                not s[d + 1]["path"].endswith(("/zlib.so", "/zlib.c")):
            bad.append("the frame after deflate is not its C function in the zlib extension: "
                       + text + " (" + (s[d + 1]["path"] if d + 1 < len(s) else "") + ")")
        in_libz += any("libz.so" in f["path"] for f in s[d + 1:])
    if checked and not in_libz:
        bad.append("no stack inside deflate reached zlib's own code (libz)")
    if checked < 5:
        bad.append("only %d merged stacks inside deflate (want 5 or more)" % checked)
    for b in bad[:20]:
        print(b)
    print("%d samples, %d merged, %d inside deflate checked, %d in libz"
          % (len(stacks), len(merged), checked, in_libz))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
