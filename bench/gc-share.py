"""gc-share.py LABEL DIR ROUNDS: bench/gc-share.sh's row for one Ruby, from DIR/MODE.N.rbiprof
and DIR/MODE.N.window (gc-time.rb's "WINDOW gc cpu marking sweeping", ms, and when stackprof
profiled the window too its samples "all gc marking sweeping"), MODE cpu and wall,
N = 1..ROUNDS."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import rawprofile  # noqa: E402

GC = 3  # RBI_FRAME_GC
label, d, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])


def shares(path):
    """Of the profile's time: under (garbage collection), (marking), (sweeping), %."""
    samples = rawprofile.load(path)[1]
    total = sum(s["weight_ns"] for s in samples) or 1
    out = []
    for want in (None, "(marking)", "(sweeping)"):
        w = sum(s["weight_ns"] for s in samples
                if any(f["kind"] == GC and (want is None or f["label"] == want)
                       for f in s["stack"]))
        out.append(100.0 * w / total)
    return out


def mean(v):
    return sum(v) / len(v) if v else float("nan")


rows = {"cpu": [], "wall": []}
stackprof = []  # per cpu round: its (gc, marking, sweeping) shares less ours, and its gc
for mode in rows:
    for i in range(1, rounds + 1):
        w = open("%s/%s.%d.window" % (d, mode, i)).read().split()
        if len(w) not in (5, 9):
            sys.exit("%s: round %d (%s): the target said no window" % (label, i, mode))
        gc, cpu, mark, sweep = map(float, w[1:5])
        truth = [100.0 * gc / cpu, 100.0 * mark / cpu if mark >= 0 else None,
                 100.0 * sweep / cpu if sweep >= 0 else None]
        ours = shares("%s/%s.%d.rbiprof" % (d, mode, i))
        rows[mode].append((truth, ours))
        if len(w) == 9 and mode == "cpu":
            n, sp_gc, sp_mark, sp_sweep = map(int, w[5:])
            sp = [100.0 * x / (n or 1) for x in (sp_gc, sp_mark, sp_sweep)]
            stackprof.append((sp[0], [a - b for a, b in zip(sp, ours)]))

t = mean([r[0][0] for r in rows["cpu"]])
c = mean([r[1][0] for r in rows["cpu"]])
tw = mean([r[0][0] for r in rows["wall"]])
wl = mean([r[1][0] for r in rows["wall"]])


def phase(k):
    if any(r[0][k] is None for r in rows["cpu"]):
        return "-"
    return "%+.2f" % mean([r[1][k] - r[0][k] for r in rows["cpu"]])


if stackprof:
    sp = "%7.2f %+7.2f %+8.2f %+8.2f" % (
        mean([s[0] for s in stackprof]), -mean([s[1][0] for s in stackprof]),
        mean([s[1][1] for s in stackprof]), mean([s[1][2] for s in stackprof]))
else:
    sp = "%7s %7s %8s %8s" % ("-", "-", "-", "-")
print("%-12s %7.2f %7.2f %+7.2f %7.3f %7.2f %+9.2f %9s %7s %s"
      % (label, t, c, c - t, c / t if t else 0, wl, wl - tw, phase(1), phase(2), sp))
