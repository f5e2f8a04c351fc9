#!/usr/bin/env python3
"""fiber-check.py TRUTH FIBERS_JSON BT_JSON: compare `rbinspect --json fibers`
and `rbinspect --json bt --fibers --max-fibers 0` with the truth
testdata/programs/fibers.rb wrote (TRUTH: the threads, lib/truth.rb's format;
TRUTH.fibers: the fibers).

Every fiber of the truth is listed once, found by its Fiber object's address,
with its status and thread; the main thread's fiber is its current and root
fiber; "fibered-root" is thread "fibered"'s root, first in line after the
fiber that thread runs, which it resumed.  The frames of every fiber of the
truth, and those of each thread's current fiber (its thread's backtrace in
TRUTH), are compared as bt-check.py compares a thread's.  The count is exact:
one root fiber per thread, "fibered"'s inner fiber, the others of the truth
and the "many" suspended ones; every suspended fiber is shown by bt --fibers
and no terminated one.  Prints one line per mismatch (at most 40) and a summary;
exits 1 on any mismatch.
"""
import importlib.util
import json
import os
import sys

spec = importlib.util.spec_from_file_location(
    "bt_check", os.path.join(os.path.dirname(os.path.abspath(__file__)), "bt-check.py"))
bt_check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bt_check)
clean = bt_check.clean


def load_fibers(path):
    fibers, many = [], 0
    for line in open(path, encoding="utf-8", errors="surrogateescape"):
        f = line.rstrip("\n").split("\t")
        if f[0] == "fiber":
            fibers.append(dict(name=f[1], status=f[2], thread=f[3], object=f[4], frames=[]))
        elif f[0] == "frame":
            fibers[-1]["frames"].append(
                dict(label=f[3], path=f[4], line=int(f[5]), base=f[6]))
        elif f[0] == "many":
            many = int(f[1])
    return fibers, many


def main():
    version, threads = bt_check.load_truth(sys.argv[1])
    fibers, many = load_fibers(sys.argv[1] + ".fibers")
    listed = json.load(open(sys.argv[2], encoding="utf-8", errors="surrogateescape"))
    shown = json.load(open(sys.argv[3], encoding="utf-8", errors="surrogateescape"))
    v34 = tuple(int(x) for x in version.split(".")[:2]) >= (3, 4)
    bad, nframes = [], 0

    def chk(where, want, have):
        if want != have:
            bad.append("%s: want %r, got %r" % (where, want, have))

    def thread_name(f):
        return "main" if f.get("thread_main") else clean(f.get("thread_name"))

    def frames(where, want, have):
        nonlocal nframes
        chk(where + " frame count", len(want), len(have))
        for j, (tf, f) in enumerate(zip(want, have)):
            nframes += 1
            fw = "%s frame %d" % (where, j)
            chk(fw + " path", tf["path"] or None, clean(f["path"]) or None)
            chk(fw + " line", tf["line"], f["line"])
            chk(fw + " label", tf["label"], clean(f["own_label"]))
            chk(fw + " base_label", tf["base"], clean(f["base_label"]))
            if v34:
                chk(fw + " 3.4 label", tf["label"], clean(f["label"]))

    for doc, what in ((listed, "fibers"), (shown, "bt --fibers")):
        chk(what + " error", None, doc.get("error"))
        # A root fiber per thread, fibered's inner one, every other of the truth, many.
        others = [f for f in fibers if not f["name"].endswith("-root")]
        chk(what + " found", len(threads) + 1 + len(others) + many, doc.get("found"))
    by_object = {f["object"]: f for f in listed["fibers"] if f["object"]}
    frames_of = {f["fiber"]: f["frames"] for f in shown["fibers"]}

    def by_frames(t):
        # Known by its innermost frames, among the fibers outside the chains.
        for f in listed["fibers"]:
            have = frames_of.get(f["fiber"], [])
            if f["chain"] is None and t["frames"] and have and all(
                    clean(h["base_label"]) == w["base"] and h["line"] == w["line"]
                    for h, w in zip(have[:2], t["frames"][:2])):
                return f
        return None

    for t in fibers:
        w = "fiber %s" % t["name"]
        g = by_object.get(t["object"]) if t["object"] != "-" else by_frames(t)
        if g is None:
            bad.append("%s: Fiber %s not listed" % (w, t["object"]))
            continue
        chk(w + " status", t["status"], g["status"])
        chk(w + " thread", t["thread"], thread_name(g))
        if t["name"] == "main-root":
            chk(w + " current and root", (True, True), (g["current"], g["root"]))
        if t["name"] == "fibered-root":
            chk(w + " root, in the chain after the current fiber", (True, 1),
                (g["root"], g["chain"]))
            inner = [f for f in listed["fibers"] if f["current"] and thread_name(f) == "fibered"]
            chk(w + " resumed the current fiber", [g["fiber"]], [f["resumed_by"] for f in inner])
        # An external enumerator's: the method inside its outermost frame, Enumerator#each.
        outer = t["frames"][-2:] if t["status"] == "suspended" else []
        enum = outer[0] if len(outer) == 2 and outer[1]["base"] == "each" and \
            outer[1]["path"] == "" else None
        want = (enum["label"] if v34 else enum["base"]) if enum else None
        have = g.get("enumerator")
        chk(w + " enumerator", want, have if v34 or have is None else have.split("#")[-1])
        if t["status"] == "terminated":
            chk(w + " not shown by bt --fibers", False, g["fiber"] in frames_of)
        elif t["name"] != "main-root":
            frames(w, t["frames"], frames_of.get(g["fiber"], []))
    for t in threads:
        roots = [f for f in listed["fibers"] if f["root"] and thread_name(f) == t["name"]]
        chk("thread %s: root fibers" % t["name"], 1, len(roots))
        cur = [f for f in shown["fibers"] if f["current"] and thread_name(f) == t["name"]]
        chk("thread %s: current fibers" % t["name"], 1, len(cur))
        if len(cur) == 1:
            frames("thread %s's current fiber" % t["name"], t["frames"], cur[0]["frames"])
    suspended = sum(1 for f in listed["fibers"] if f["status"] == "suspended" and f["chain"] is None)
    chk("suspended fibers outside the chains",
        sum(1 for f in fibers if f["status"] == "suspended" and not f["name"].endswith("-root")) + many,
        suspended)
    chk("bt --fibers: fibers shown", shown.get("found") - 1, len(shown["fibers"]))
    for b in bad[:40]:
        print(b)
    print("%s: %d fibers, %d frames, %d mismatches" % (version, listed.get("found"), nframes, len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
