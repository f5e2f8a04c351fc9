"""rawprofile.py: what the profile checks share: reading rbinspect's raw profile (the form
lib/profile/profile.c writes, versions 1 to 4), and comparing a sampled stack's Ruby frames
with a program's own caller_locations."""
import re

RUBY, CFUNC, NATIVE = 1, 2, 5


def unescape(s):
    if s == "":
        return None
    return re.sub(r"\\(x[0-9a-fA-F]{2}|.)", lambda m: {
        "\\": "\\", "t": "\t", "r": "\r", "n": "\n"}.get(m.group(1), None)
        or chr(int(m.group(1)[1:], 16)), s)


def load(path):
    """(meta, samples, fibers): samples as dicts with "stack" (frames outermost first, each
    a dict of kind, line, label, path), "thread", "state" (rbi_sample_state), "fiber" (an
    index into fibers, None if unknown) and "weight_ns" (None before version 3); fibers as dicts of thread, fiber (the rb_fiber_t) and root."""
    meta, frames, nodes, fibers, samples = {}, {}, {0: None}, [], []
    for line in open(path, encoding="utf-8", errors="surrogateescape"):
        f = line.rstrip("\n").split("\t")
        if f[0] == "m":
            meta[f[1]] = unescape(f[2])
        elif f[0] == "f":
            frames[int(f[1])] = dict(kind=int(f[2]), line=int(f[3]),
                                     label=unescape(f[5]) or "", path=unescape(f[6]) or "")
        elif f[0] == "u":
            fibers.append(dict(thread=int(f[2]), fiber=int(f[3]), root=f[4] == "1"))
        elif f[0] == "n":
            nodes[int(f[1])] = (int(f[2]), int(f[3]))
        elif f[0] == "s":
            node, stack = int(f[2]), []
            while node:
                parent, frame = nodes[node]
                stack.append(frames[frame])
                node = parent
            samples.append(dict(stack=stack[::-1], thread=int(f[3]), state=int(f[4]),
                                fiber=int(f[6]) if len(f) > 6 and f[6] else None,
                                weight_ns=int(f[7]) if len(f) > 7 else None))
    return meta, samples, fibers


def base(label):
    return re.split(r"[#.]", label)[-1]


def ruby_mismatch(ruby, want):
    """Where RUBY (a stack's Ruby frames and C methods, innermost first) differs from WANT
    (the program's caller_locations, innermost first, as [base_label, path, lineno]): C
    methods compared by name, Ruby frames by path and line.  None if they are the same."""
    for k in range(max(len(want), len(ruby))):
        w = want[k] if k < len(want) else None
        f = ruby[k] if k < len(ruby) else None
        if w is None or f is None:
            return "Ruby frame %d: want %s, got %s" % (k, w, f and f["label"])
        if f["kind"] == RUBY and (f["path"], str(f["line"])) != (w[1], w[2]):
            return "Ruby frame %d: want %s:%s, got %s:%s" % (k, w[1], w[2], f["path"], f["line"])
        if f["kind"] == CFUNC and base(f["label"]) != w[0]:
            return "C frame %d: want %s, got %s" % (k, w[0], base(f["label"]))
    return None
