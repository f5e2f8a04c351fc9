#!/usr/bin/env python3
"""fiber-profile-check.py RAW TRUTH FIBERS_JSON: check a profile of
testdata/programs/fiber-spin.rb (raw form) against what its fibers wrote of
themselves (TRUTH) and `rbinspect --json fibers` (FIBERS_JSON: which
rb_fiber_t is which Fiber object).

Every kept sample names its fiber, one of the program's three (fibers "a" and
"b", and the main thread's root fiber, the only one marked root).  A sample
whose stack is inside Burn.burn_X is in fiber X, and its Ruby frames from
burn_X outwards are X's own caller_locations (burn_X's own line aside: a
sample on its way out stands on its `end`); every stack of a fiber starts
where that fiber's own stack does (its outermost frame's path and line).
Each fiber has 3 or more stacks inside its burner.  Prints one line per
mismatch (at most 20) and a summary; exits 1 on any mismatch.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rawprofile import CFUNC, RUBY, base, load, ruby_mismatch  # noqa: E402


def load_truth(path):
    objects, frames = {}, {}
    for line in open(path, encoding="utf-8", errors="surrogateescape"):
        f = line.rstrip("\n").split("\t")
        if f[0] == "fiber":
            objects[f[1]] = int(f[2], 16)
        elif f[0] == "frame":
            frames.setdefault(f[1], []).append(f[2:])
    return objects, frames


def main():
    _, samples, fibers = load(sys.argv[1])
    objects, truth = load_truth(sys.argv[2])
    listed = json.load(open(sys.argv[3]))["fibers"]
    by_object = {int(f["object"], 16): int(f["fiber"], 16) for f in listed if f.get("object")}
    name_of = {}
    bad = []
    for name, obj in objects.items():
        if obj not in by_object:
            bad.append("fiber %s (object 0x%x) is not in `fibers`" % (name, obj))
        else:
            name_of[by_object[obj]] = name
    checked = {name: 0 for name in objects}
    for s in samples:
        text = " ; ".join(f["label"] for f in s["stack"])
        if s["fiber"] is None:
            bad.append("a sample without its fiber: " + text)
            continue
        fb = fibers[s["fiber"]]
        name = name_of.get(fb["fiber"])
        if name is None:
            bad.append("fiber 0x%x is none of the program's: %s" % (fb["fiber"], text))
            continue
        if fb["root"] != (name == "root"):
            bad.append("fiber %s marked root=%s" % (name, fb["root"]))
        ruby = [f for f in s["stack"] if f["kind"] in (RUBY, CFUNC)][::-1]    # innermost first
        outer = truth[name][-1]
        if not ruby or (ruby[-1]["path"], str(ruby[-1]["line"])) != (outer[1], outer[2]):
            bad.append("fiber %s: the stack does not start at %s:%s: %s"
                       % (name, outer[1], outer[2], text))
        burners = [k for k, f in enumerate(ruby) if re.fullmatch(r"(Burn\.)?burn_\w+", f["label"])]
        if not burners:
            continue
        burner = base(ruby[burners[0]]["label"])[len("burn_"):]
        if burner != name:
            bad.append("burn_%s sampled in fiber %s: %s" % (burner, name, text))
            continue
        # The burner itself by path: a sample on its way out stands on its `end` line.
        k = burners[0]
        miss = ("burn_%s is in %s, not %s" % (name, ruby[k]["path"], truth[name][0][1])
                if ruby[k]["path"] != truth[name][0][1] else
                ruby_mismatch(ruby[k + 1:], truth[name][1:]))
        if miss:
            bad.append("fiber %s: %s: %s" % (name, miss, text))
        checked[name] += 1
    for name, n in checked.items():
        if n < 3:
            bad.append("fiber %s: only %d stacks inside burn_%s (want 3 or more)" % (name, n, name))
    for b in bad[:20]:
        print(b)
    print("%d samples in %d fibers; inside their burners: %s" % (
        len(samples), len(fibers), ", ".join("%s %d" % kv for kv in sorted(checked.items()))))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
