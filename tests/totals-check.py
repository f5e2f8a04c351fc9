"""totals-check.py RAW STATS BASE: a recording's accounting, end to end.
totals-check.py --aggregated STATS FILE: the same for a recording kept aggregated.

RAW is the raw profile of one process (no exec), STATS what `record` said on stderr, BASE the
prefix of RAW rendered with --idle in every format (BASE.folded, .speedscope.json, .pb.gz,
.callgrind, .svg) and BASE.active.pb.gz without it.  Every figure must agree: the summary's
with the raw profile's closing figures; a thread's weights and the missed ticks with the time
recorded; the raw profile's stacks with its sample lines; each format's sample count and time
with those lines (the flame graph and folded stacks round); the stacks kept in part (the
sampler's "(moving)" leaf) alike in the summary, the raw profile's samples, the folded stacks
and speedscope.  With --aggregated, FILE is what `record --idle` wrote in a format that needs
no sample kept (.pb.gz, .callgrind or .svg: the recording summed them as they came), and its
sample count must be the summary's stacks.  Prints what differs; exit 1 if anything does."""
import gzip
import json
import re
import sys

import rawprofile

IDLE_STATES = (2, 3)    # rbi_sample_state WAITING, SLEEPING (GVL_WAIT, 5, is active)
OTHER, MOVING = 4, "(moving)"   # the leaf of a stack kept in part

bad = []


def agree(what, got, want, slack=0):
    if abs(got - want) > slack:
        bad.append("%s: %s, want %s" % (what, got, want))


def summary(stats_path):
    """The figures `record` printed on stderr (samples, stacks, idle, errors, torn, retries,
    moving: stacks kept in part, late, missed); None if it printed none."""
    stats = open(stats_path).read()
    m = re.search(r"samples: (\d+) in [0-9.]+ s at \S+ Hz: (\d+) stacks, (\d+) ", stats)
    e = re.search(r"errors: (\d+), torn: (\d+) \(stacks re-read: (\d+), kept in part: (\d+)\), "
                  r"late: (\d+) \(ticks missed: (\d+), [0-9.]+ ms in no sample\)", stats)
    if not m or not e:
        bad.append("no summary in %s" % stats_path)
        return None
    return dict(zip(("samples", "stacks", "idle", "errors", "torn", "retries", "moving",
                     "late", "missed"), map(int, m.groups() + e.groups())))


def pb_fields(b):
    """(field, wire type, value) of one protobuf message: varints and bytes only."""
    i = 0
    while i < len(b):
        v, i = varint(b, i)
        f, t = v >> 3, v & 7
        if t == 0:
            v, i = varint(b, i)
        elif t == 2:
            ln, i = varint(b, i)
            v, i = b[i:i + ln], i + ln
        else:
            raise ValueError("wire type %d" % t)
        yield f, t, v


def varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7f) << shift
        shift += 7
        if not c & 0x80:
            return v, i


def pprof_totals(path):
    """Sums of the two sample values (samples/count, time/nanoseconds)."""
    tot = [0, 0]
    for f, _, v in pb_fields(gzip.open(path).read()):
        if f != 2:              # Profile.sample
            continue
        vals = []
        for sf, st, sv in pb_fields(v):
            if sf == 2 and st == 2:     # Sample.value, packed
                j = 0
                while j < len(sv):
                    val, j = varint(sv, j)
                    vals.append(val)
            elif sf == 2:
                vals.append(sv)
        tot[0] += vals[0]
        tot[1] += vals[1]
    return tot


def callgrind_totals(path):
    """(samples, nanoseconds) of callgrind's "totals: NANOSECONDS SAMPLES"; None if none."""
    cg = re.search(r"^totals: (\d+) (\d+)$", open(path).read(), re.M)
    if not cg:
        bad.append("callgrind: no totals line")
        return None
    return int(cg.group(2)), int(cg.group(1))


def flamegraph_totals(path):
    """(samples, milliseconds) of the root's hover text, "all (T ms, N samples, 100.00%)";
    None if none."""
    fg = re.search(r"<title>[^<]*\(([0-9.]+) ms, (\d+) samples?, 100\.00%\)</title>",
                   open(path).read())
    if not fg:
        bad.append("flame graph: no root frame")
        return None
    return int(fg.group(2)), float(fg.group(1))


def finish(line):
    for b in bad:
        print(b)
    print(line)
    sys.exit(1 if bad else 0)


def check_aggregated(stats_path, path):
    """An aggregated recording: every stack the summary counts is a sample of PATH."""
    st = summary(stats_path)
    name = path.rsplit("/", 1)[-1]
    if path.endswith(".pb.gz"):
        got = pprof_totals(path)
    elif path.endswith(".callgrind"):
        got = callgrind_totals(path)
    else:
        got = flamegraph_totals(path)
    if st and got:
        agree("%s samples" % name, got[0], st["stacks"])
    finish("%d stacks of %d ticks (%d missed), %d idle threads skipped, %d errors, %d torn: "
           "%s samples in %s" % tuple([st[k] if st else -1 for k in
                                       ("stacks", "samples", "missed", "idle", "errors", "torn")] +
                                      [got[0] if got else "no", name]))


if sys.argv[1] == "--aggregated":
    check_aggregated(*sys.argv[2:4])
raw, stats_path, base = sys.argv[1:4]
meta, samples, _ = rawprofile.load(raw)
x = None
for line in open(raw, encoding="utf-8", errors="surrogateescape"):
    if line.startswith("x\t"):
        x = dict(zip(("samples", "stacks", "idle", "errors", "torn", "retries", "rescans",
                      "total_ns", "max_ns", "late", "missed"), map(int, line.split("\t")[1:])))
if x is None:
    sys.exit("%s: no closing figures" % raw)
n = len(samples)
weight = sum(s["weight_ns"] for s in samples)
active = [s for s in samples if s["state"] not in IDLE_STATES]


def moved(stack):
    """A stack of which only the outer part held still: the sampler's leaf."""
    return bool(stack) and stack[-1]["kind"] == OTHER and stack[-1]["label"] == MOVING


# Kept in part: not a figure of the raw profile's own, but its samples say it.
moving = [s for s in samples if moved(s["stack"])]
x["moving"] = len(moving)

# The summary says what the raw profile keeps.
st = summary(stats_path)
for k in st or ():
    agree("summary " + k, st[k], x[k])
# Every stack delivered is a sample line; every tick due was taken or missed.  Ticks come
# at random intervals of 0.5 to 1.5 periods (4 periods' deviation in 200 ticks) and each
# late one's missed ticks are whole periods (up to one lost): the slack.
agree("sample lines", n, x["stacks"])
due = float(meta["duration"]) * float(meta["rate"])
agree("ticks taken and missed (%.0f due)" % due, x["samples"] + x["missed"], round(due),
      x["late"] + due / 10 + 5)

# The time recorded: a thread read at every tick (none skipped as idle: --idle) stands for the
# whole window but the periods its late ticks missed (ticks.c: a late tick's samples do not
# stand for the gap), so its weights plus the missed ticks' periods are the duration: slack
# for the first and last ticks, the late ticks' fractions of a period and stacks lost (their
# time is in no sample).
period = 1e9 / float(meta["rate"])
by_thread = {}
for s in samples:
    by_thread[s["thread"]] = by_thread.get(s["thread"], 0) + s["weight_ns"]
if by_thread and meta.get("mode", "wall") == "wall" and not x["idle"]:
    agree("the longest thread's weights and the missed ticks' periods, in ms",
          round((max(by_thread.values()) + x["missed"] * period) / 1e6),
          round(float(meta["duration"]) * 1e3),
          (3 + x["late"] + 2.5 * (x["errors"] + x["torn"])) * period / 1e6 + 10)

# Folded: microseconds, each line rounded down.
lines = [l for l in open(base + ".folded") if l.strip()]
us = sum(int(l.rsplit(" ", 1)[1]) for l in lines)
agree("folded microseconds", us, weight // 1000, len(lines))
# The stacks kept in part alike: the same leaf, the same time (each --idle stack's state
# frame above it).
lm = [l for l in lines if re.search(r";\(moving\)(;\([a-zA-Z ]+\))? \d+$", l)]
agree("folded microseconds kept in part", sum(int(l.rsplit(" ", 1)[1]) for l in lm),
      sum(s["weight_ns"] for s in moving) // 1000, len(lm))

# speedscope: one profile a thread, every sample with its weight.
sp = json.load(open(base + ".speedscope.json"))
agree("speedscope samples", sum(len(p["samples"]) for p in sp["profiles"]), n)
agree("speedscope weights", sum(sum(p["weights"]) for p in sp["profiles"]), weight)
names = [f["name"] for f in sp["shared"]["frames"]]
agree("speedscope samples kept in part",
      sum(1 for p in sp["profiles"] for st in p["samples"]
          if any(names[k] == MOVING for k in st[-2:])), len(moving))

c, t = pprof_totals(base + ".pb.gz")
agree("pprof samples", c, n)
agree("pprof time", t, weight)
c, t = pprof_totals(base + ".active.pb.gz")
agree("pprof samples (active only)", c, len(active))
agree("pprof time (active only)", t, sum(s["weight_ns"] for s in active))

cg = callgrind_totals(base + ".callgrind")
if cg:
    agree("callgrind samples", cg[0], n)
    agree("callgrind time", cg[1], weight)

fg = flamegraph_totals(base + ".svg")
if fg:
    agree("flame graph samples", fg[0], n)
    agree("flame graph time (10 us)", round(fg[1] * 100), round(weight / 1e4), 1)

finish("%d samples (%d active), %.3f s, %d ticks (%d missed), %d idle threads skipped, "
       "%d errors, %d torn (%d kept in part), %d late"
       % (n, len(active), weight / 1e9, x["samples"], x["missed"], x["idle"], x["errors"],
          x["torn"], x["moving"], x["late"]))
