"""torn-share.py LABEL DIR ROUNDS: bench/torn-bias.sh's figures for one Ruby, from
DIR/run.N.rbiprof (unpaused) and DIR/paused.N.rbiprof, N = 1..ROUNDS: one table row."""
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import rawprofile  # noqa: E402

label, d, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])


def stacks(kind):
    out = []
    for i in range(1, rounds + 1):
        out += [s["stack"] for s in rawprofile.load("%s/%s.%d.rbiprof" % (d, kind, i))[1]]
    return out


def fib(st):
    return any(f["label"] == "Object#fib" for f in st)


def moved(st):
    return bool(st) and st[-1]["kind"] == 4 and st[-1]["label"] == "(moving)"


run, paused = stacks("run"), stacks("paused")
kept = [s for s in run if not moved(s)]
share = lambda ss: 100.0 * sum(map(fib, ss)) / len(ss) if ss else 0.0      # noqa: E731
f, dr, p = share(run), share(kept), share(paused)
# Two standard errors of the difference of two independent binomial shares.
se2 = 2 * math.sqrt(f * (100 - f) / max(len(run), 1) + p * (100 - p) / max(len(paused), 1))
print("%-12s %8d %8d %8.2f %9.2f %9.2f %+8.2f %+7.2f %8.3f %8.2f"
      % (label, len(run), len(run) - len(kept), f, dr, p, f - p, dr - p, f / p if p else 0, se2))
