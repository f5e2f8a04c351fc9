#!/usr/bin/env python3
"""bt-check.py TRUTH BT_JSON [--tid-ns]: compare `rbinspect --json bt` with
the target's own truth (testdata/programs/lib/truth.rb format).

Per thread, in Thread.list order: the name ("main" is the main thread,
"thread-N" an unnamed one), the kernel tid (when the truth has one),
sleep/run status, and every frame: Location#label against own_label,
#path, #lineno and #base_label.  On Ruby 3.4+ `label` must also equal the
target's label (3.4 style is the target's own there).  Prints one line per
mismatch (at most 40) and a summary; exits 1 on any mismatch.

--tid-ns: the truth's tids are namespace tids (tools/run-in-ns.sh): skip.
--offline: a core read without libruby's files.  The labels of frames whose
base label Ruby keeps in libruby's read-only data (OFFLINE_UNKNOWN: the
"<main>" of the main script), which such a core does not hold, must be
unknown (null) or right, never something else ("block in <main>" is a heap
string before 3.4); every other field must match.
"""
import json
import sys

# Base labels Ruby makes from C string literals in libruby's .rodata.
OFFLINE_UNKNOWN = {"<main>"}


def clean(s):
    # truth.rb replaces tabs and newlines inside fields by spaces.
    return None if s is None else s.replace("\t", " ").replace("\n", " ")


def load_truth(path):
    threads, version = [], ""
    for line in open(path, encoding="utf-8", errors="surrogateescape"):
        f = line.rstrip("\n").split("\t")
        if f[0] == "ruby_version":
            version = f[1]
        elif f[0] == "thread":
            threads.append(dict(name=f[1], tid=f[2], status=f[3], frames=[]))
        elif f[0] == "frame":
            threads[-1]["frames"].append(
                dict(label=f[3], path=f[4], line=int(f[5]), base=f[6]))
    return version, threads


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    tid_ns = "--tid-ns" in sys.argv
    offline = "--offline" in sys.argv
    version, truth = load_truth(args[0])
    got = json.load(open(args[1], encoding="utf-8", errors="surrogateescape"))
    # bt shows the thread that crashed first: compare in Ruby's own order.
    got = sorted(got["threads"], key=lambda t: t.get("number", 0))
    v34 = tuple(int(x) for x in version.split(".")[:2]) >= (3, 4)
    bad, frames = [], 0

    def chk(where, want, have):
        if want != have:
            bad.append("%s: want %r, got %r" % (where, want, have))

    chk("thread count", len(truth), len(got))
    for i, (t, g) in enumerate(zip(truth, got)):
        w = "thread %d (%s)" % (i + 1, t["name"])
        chk(w + " error", None, g.get("error"))
        if t["name"] == "main":
            chk(w + " main", True, g.get("main"))
        elif t["name"].startswith("thread-"):
            chk(w + " name", None, g.get("name"))
        else:
            chk(w + " name", t["name"], clean(g.get("name")))
        if t["tid"] != "-" and not tid_ns:
            chk(w + " tid", int(t["tid"]), g.get("tid"))
        want_status = {"sleep": ("stopped", "stopped_forever"), "run": ("runnable",)}
        if t["status"] in want_status and g.get("status") not in want_status[t["status"]]:
            bad.append("%s status: want %s, got %s" % (w, t["status"], g.get("status")))
        gf = g.get("frames", [])
        if t["status"] == "run" and not t["frames"]:
            continue    # a busy thread recorded before it ran: nothing to compare
        chk(w + " frame count", len(t["frames"]), len(gf))
        for j, (tf, f) in enumerate(zip(t["frames"], gf)):
            frames += 1
            fw = "%s frame %d" % (w, j)
            chk(fw + " path", tf["path"], clean(f["path"]))
            chk(fw + " line", tf["line"], f["line"])
            if offline and tf["base"] in OFFLINE_UNKNOWN:
                want = {"own_label": tf["label"], "base_label": tf["base"],
                        "label": tf["label"] if v34 else f["label"]}
                for key, value in want.items():
                    if f[key] is not None:
                        chk(fw + " " + key + " (unknown or right)", value, clean(f[key]))
                continue
            chk(fw + " label", tf["label"], clean(f["own_label"]))
            chk(fw + " base_label", tf["base"], clean(f["base_label"]))
            if v34:
                chk(fw + " 3.4 label", tf["label"], clean(f["label"]))
    for b in bad[:40]:
        print(b)
    print("%s %s: %d threads, %d frames, %d mismatches"
          % (version, args[1], len(truth), frames, len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
