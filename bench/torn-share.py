"""torn-share.py [-v] LABEL DIR ROUNDS: bench/torn-bias.sh's row for one Ruby, from
DIR/{run,paused}.N.rbiprof and the program's truth DIR/{run,paused}.N.truth (fib-flat.rb's
"fib T" / "flat T" lines), N = 1..ROUNDS; with -v each round's figures too."""
import bisect
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import rawprofile  # noqa: E402

verbose = "-v" in sys.argv
label, d, rounds = [a for a in sys.argv[1:] if a != "-v"]
rounds = int(rounds)


def samples(path):
    """(time_ns, in fib, kept in part) of each sample."""
    stacks = [s["stack"] for s in rawprofile.load(path)[1]]
    times = [int(l.split("\t")[1]) for l in open(path) if l.startswith("s\t")]
    return [(t, any(f["label"] == "Object#fib" for f in st),
             bool(st) and st[-1]["kind"] == 4 and st[-1]["label"] == "(moving)")
            for t, st in zip(times, stacks)]


def truth(path):
    """When each phase started: (times, phase names), in order."""
    rows = [l.split() for l in open(path)]
    rows.sort(key=lambda r: int(r[1]))
    return [int(r[1]) for r in rows], [r[0] for r in rows]


def pct(k, n):
    return 100.0 * k / n if n else float("nan")


def round_figures(kind, i):
    """Of one recording: fib's share by the stacks, the same less the stacks kept in part,
    and by the truth at the same samples' times (all of them, and those not kept in part),
    %; samples, kept in part."""
    ss = samples("%s/%s.%d.rbiprof" % (d, kind, i))
    at, phase = truth("%s/%s.%d.truth" % (d, kind, i))
    ss = [s for s in ss if s[0] >= at[0]]
    real = [phase[bisect.bisect_right(at, s[0]) - 1] == "fib" for s in ss]
    still = [k for k, s in enumerate(ss) if not s[2]]
    return (pct(sum(s[1] for s in ss), len(ss)), pct(sum(ss[k][1] for k in still), len(still)),
            pct(sum(real), len(ss)), len(ss), len(ss) - len(still),
            time_share(at, phase, ss[0][0], ss[-1][0]) if ss else float("nan"))


def time_share(at, phase, t0, t1):
    """The share of [T0, T1) the program spent in fib, %."""
    fib = 0
    for k in range(bisect.bisect_right(at, t0) - 1, len(at)):
        a, b = max(at[k], t0), min(at[k + 1] if k + 1 < len(at) else t1, t1)
        if b <= a:
            break
        if phase[k] == "fib":
            fib += b - a
    return pct(fib, t1 - t0)


def mean(v):
    return sum(v) / len(v)


def se2(v):
    """Two standard errors of the mean of V, from its spread."""
    if len(v) < 2:
        return float("nan")
    m = mean(v)
    return 2 * math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1) / len(v))


run, paused = [], []
for i in range(1, rounds + 1):
    run.append(round_figures("run", i))
    paused.append(round_figures("paused", i))
    if verbose:
        r, p = run[-1], paused[-1]
        print("  round %d: fib %.2f %% (less kept in part %.2f), truth %.2f, time %.2f; "
              "paused %.2f, truth %.2f (%d and %d samples, %d kept in part)"
              % (i, r[0], r[1], r[2], r[5], p[0], p[2], r[3], p[3], r[4]))
fix = [r[0] - r[2] for r in run]
drop = [r[1] - r[2] for r in run]
pau = [p[0] - p[2] for p in paused]
ticks = [r[2] - r[5] for r in run]
print("%-12s %8d %7d %7.2f %7.2f %+7.2f %5.2f %+8.2f %5.2f %+7.2f %5.2f %+7.2f %5.2f %7.3f"
      % (label, sum(r[3] for r in run), sum(r[4] for r in run), mean([r[0] for r in run]),
         mean([r[2] for r in run]), mean(fix), se2(fix), mean(drop), se2(drop), mean(pau),
         se2(pau), mean(ticks), se2(ticks),
         mean([r[0] for r in run]) / mean([p[0] for p in paused])))
