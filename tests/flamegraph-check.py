"""flamegraph-check.py DOM ZOOM UP SEARCH: what tests/flamegraph-harness.js saw in Chromium.

DOM is the document Chromium dumped (--dump-dom) after the harness hovered and clicked the
frame drawn furthest right matching ZOOM (a last child, whose end is its caller's), searched
SEARCH, clicked the widest greyed ancestor matching UP, reset the zoom and reset the search.
The expectations come from the flame graph's own
geometry as it was drawn (each frame's x, width and row before any click), never from the
script's code: after a zoom into F every ancestor of F (one a row, down to "all") stays drawn,
greyed and full width, F and what it called fill the width in proportion, everything else is
hidden; the search colours the visible matches and its "Matched" share is the union of their
widths within the zoomed frame; the resets bring back the drawing as it was.

Prints one line a step, "ok STEP what was checked" or "not ok STEP what differed"; exit 1 if
any step differed."""
import html
import json
import math
import re
import sys

XPAD = 10.0
FONT_SIZE, FONT_WIDTH = 12, 0.59
EPS = 0.02              # the SVG rounds x and width to 2 decimals
MATCH_FILL = "rgb(230,0,230)"
TITLE = re.compile(r"^(.*) \([\d.]+ ms, \d+ samples?, [\d.]+%\)$", re.S)

dom_path, zoom_re, up_re, term = sys.argv[1:5]
dom = open(dom_path, encoding="utf-8", errors="replace").read()
m = re.search(r'<desc id="rbi-harness">(\{.*?)</desc>', dom, re.S)
if not m:
    print("not ok harness: no result in the dumped document (did the page load?)")
    sys.exit(1)
out = json.loads(html.unescape(m.group(1)))
full = out["width"] - 2 * XPAD
steps = {s["step"]: s for s in out["steps"]}
drawn = steps["loaded"]["frames"]       # the geometry before any click
failed = False


def name(f):
    t = TITLE.match(f["title"])
    return t.group(1) if t else f["title"]


def within(inner, outer):
    return outer["x"] - EPS <= inner["x"] and inner["x"] + inner["w"] <= outer["x"] + outer["w"] + EPS


def ancestors(i):
    """The frames below frame I (larger y) whose span holds I's: its callers."""
    t = drawn[i]
    return [j for j, f in enumerate(drawn) if f["y"] > t["y"] and within(t, f)]


def subtree(i):
    t = drawn[i]
    return [j for j, f in enumerate(drawn) if f["y"] <= t["y"] and within(f, t)]


def visible(f):
    return f["display"] != "none" and "hide" not in f["cls"].split()


def text_fits(f):
    """The label is the name, cut with ".." to what the frame's width holds (12 px Verdana,
    0.59 em a character, 3 px padding), none under 3 characters."""
    n, t = name(f), f["text"]
    # As the script computes it: floor of the quotient, which // is not where the quotient
    # rounds up to a whole number (a width of 257.88 fits 36 characters, not 35).
    fit = math.floor((f["w"] - 3) / (FONT_SIZE * FONT_WIDTH))
    return t == ("" if fit < 3 else n if len(n) <= fit else n[:fit - 2] + "..")


def near(a, b, slack=0.05):
    return abs(a - b) <= slack


def matched_share(root):
    """The share (%) of ROOT's width its matching frames cover, nested ones once; 100 if ROOT
    or one of its callers matches (they are all full width then)."""
    rx = re.compile(term)
    if root is not None and any(rx.search(name(drawn[j])) for j in ancestors(root) + [root]):
        return 100.0
    span = drawn[root] if root is not None else {"x": XPAD, "w": full}
    spans = sorted((f["x"], f["x"] + f["w"]) for f in drawn
                   if rx.search(name(f)) and within(f, span))
    covered, end = 0.0, -1.0
    for a, b in spans:       # their union: nested ones, and rounding's overlaps, once
        if b > end:
            covered += b - max(a, end)
            end = b
    return 100 * covered / span["w"]


def report(step, problems, what):
    global failed
    if problems:
        failed = True
        print("not ok %s: %s%s" % (step, "; ".join(problems[:5]),
                                   " (and %d more)" % (len(problems) - 5) if len(problems) > 5 else ""))
    else:
        print("ok %s: %s" % (step, what))


def check_zoomed(s, root):
    """Frames as a zoom into ROOT draws them; returns problems and a description."""
    p = []
    frames = s["frames"]
    up, down = set(ancestors(root)), set(subtree(root))
    rows = {f["y"] for f in drawn if f["y"] > drawn[root]["y"]}
    if len(up) != len(rows):
        p.append("%d callers for %d rows below the frame" % (len(up), len(rows)))
    ratio = full / drawn[root]["w"]
    hidden = 0
    for j, f in enumerate(frames):
        d = drawn[j]
        if j in up:
            if not visible(f):
                p.append("caller %r hidden" % name(f))
            elif "parent" not in f["cls"].split() or float(f["opacity"]) >= 1:
                p.append("caller %r not greyed (class %r, opacity %s)" % (name(f), f["cls"], f["opacity"]))
            if not (near(f["x"], XPAD) and near(f["w"], full)):
                p.append("caller %r at x %s width %s, want full width" % (name(f), f["x"], f["w"]))
            if not f["text"]:
                p.append("caller %r drawn without its name" % name(f))
        elif j in down:
            x, w = XPAD + (d["x"] - drawn[root]["x"]) * ratio, d["w"] * ratio
            if not visible(f) or "parent" in f["cls"].split():
                p.append("%r hidden or greyed in the zoomed frame" % name(f))
            if not (near(f["x"], x, 0.05 + EPS * ratio) and near(f["w"], w, 0.05 + EPS * ratio)):
                p.append("%r at x %s width %s, want %.2f %.2f" % (name(f), f["x"], f["w"], x, w))
        elif visible(f):
            p.append("%r outside the zoomed frame is drawn" % name(f))
        else:
            hidden += 1
        if visible(f) and not text_fits(f):
            p.append("%r labelled %r" % (name(f), f["text"]))
    if "hide" in s["unzoom"]["cls"].split():
        p.append("no Reset Zoom button")
    return p, "%r full width, %d callers greyed at full width (one a row), %d frames in it, %d hidden" % (
        name(drawn[root]), len(up), len(down), hidden)


def check_search(s, root):
    p = []
    rx = re.compile(term)
    for f in s["frames"]:
        want = MATCH_FILL if visible(f) and rx.search(name(f)) else f["fill0"]
        if f["fill"] != want:
            p.append("%r filled %s, want %s" % (name(f), f["fill"], want))
    got = re.match(r"Matched: ([\d.]+)%$", s["matched"]["text"])
    want = matched_share(root)
    if not got or "hide" in s["matched"]["cls"].split():
        p.append("matched share shown as %r" % s["matched"]["text"])
    elif abs(float(got.group(1)) - want) > 0.15:
        p.append("matched %s %%, want %.1f %%" % (got.group(1), want))
    if s["search"]["text"] != "Reset Search":
        p.append("search button says %r" % s["search"]["text"])
    return p, "matches coloured, matched %.1f %%" % want


def check_drawn(s):
    p = []
    for f in s["frames"]:
        if not visible(f) or "parent" in f["cls"].split():
            p.append("%r hidden or greyed" % name(f))
        if f["x"] != f["x0"] or f["w"] != f["w0"]:
            p.append("%r at x %s width %s, drawn at %s %s" % (name(f), f["x"], f["w"], f["x0"], f["w0"]))
        if not text_fits(f):
            p.append("%r labelled %r" % (name(f), f["text"]))
    if "hide" not in s["unzoom"]["cls"].split():
        p.append("Reset Zoom still shown")
    return p


if "zoom" not in steps or not re.search(zoom_re, name(drawn[steps["zoom"]["target"]])):
    print("not ok zoom: %s" % out.get("error", "no frame matching %r clicked" % zoom_re))
    sys.exit(1)
zoom = steps["zoom"]["target"]


def hover(s):
    return [] if s["details"]["text"] == drawn[zoom]["title"] else \
        ["details %r, want %r" % (s["details"]["text"], drawn[zoom]["title"])], \
        "details show %r" % s["details"]["text"]


def zoomed(s):
    p, what = check_zoomed(s, zoom)
    if s["details"]["text"].strip():
        p.append("details %r after the pointer left" % s["details"]["text"])
    return p, what


def searched(s):
    p, _ = check_zoomed(s, zoom)
    q, what = check_search(s, zoom)
    return p + q, "in the zoom on %r: %s" % (name(drawn[zoom]), what)


def zoomed_out(s):
    outer = s["target"]
    p = [] if outer in ancestors(zoom) and re.search(up_re, name(drawn[outer])) else \
        ["clicked %r, not a caller matching %r" % (name(drawn[outer]), up_re)]
    q, what = check_zoomed(s, outer)
    r, swhat = check_search(s, outer)
    return p + q + r, "clicking the greyed caller: %s; search kept, %s" % (what, swhat)


def zoom_reset(s):
    q, what = check_search(s, None)
    return check_drawn(s) + q, "every frame back where it was drawn; search kept, %s" % what


def search_reset(s):
    p = check_drawn(s)
    p += ["%r filled %s, drawn %s" % (name(f), f["fill"], f["fill0"])
          for f in s["frames"] if f["fill"] != f["fill0"]]
    if "hide" not in s["matched"]["cls"].split() or s["search"]["text"] != "Search":
        p.append("search not reset (matched %r, button %r)" % (s["matched"]["text"], s["search"]["text"]))
    return p, "colours and the Search button as drawn"


for step, judge in (("hover", hover), ("zoom", zoomed), ("search", searched),
                    ("zoom-out", zoomed_out), ("reset-zoom", zoom_reset),
                    ("reset-search", search_reset)):
    if step in steps:
        report(step, *judge(steps[step]))
    else:
        report(step, ["not reached: %s" % out.get("error", "?")], "")

sys.exit(1 if failed else 0)
