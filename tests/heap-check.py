#!/usr/bin/env python3
"""heap-check.py TRUTH DUMP [--values] [--unread TYPE,...]: rbinspect heap-dump's file
(DUMP, gzip if it ends in .gz) against the target's own ObjectSpace.dump_all (TRUTH), both
one JSON object per line.

Every object dump_all wrote (its ROOT lines aside) must be in DUMP at its address with its
type and class; Strings with their bytesize, embedded and fstring flags and, with --values,
their value; Arrays with their length, shared and embedded flags and their references;
classes and modules with their name, real class name and singleton flag; Objects with
their ivars, embedded flag and references, Hashes with their size, default and
references, Structs with their references (references as multisets), except for the
types given to --unread (OBJECT,HASH,STRUCT): those must have neither ivars, size nor
references (the dump says it cannot read them).  Objects only DUMP has were allocated
after the truth was written (by the dump itself, by printing READY): allowed.  At most
0.1 % of the truth's objects may differ, and each kind of difference is listed (up to 5
examples).  Exit 0 when it holds, 1 with the differences on stderr."""
import gzip
import json
import sys
from collections import defaultdict


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    objs = {}
    with opener(path, "rt", encoding="utf-8", errors="surrogateescape") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                o = json.loads(line)
            except ValueError as e:
                sys.exit("%s:%d: not JSON: %s" % (path, n, e))
            # ROOT lines, and the object shapes of 3.3+ (not heap objects): not
            # dumped yet.
            if o.get("type") in ("ROOT", "SHAPE"):
                continue
            objs[o["address"]] = o
    return objs


def main():
    args = sys.argv[1:]
    values = "--values" in args
    args = [a for a in args if a != "--values"]
    unread = set()
    if "--unread" in args:
        i = args.index("--unread")
        unread = set(filter(None, args[i + 1].split(","))) if i + 1 < len(args) else set()
        del args[i:i + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    truth, ours = load(args[0]), load(args[1])
    diffs = defaultdict(list)

    def same(what, t, o, key, addr):
        if t.get(key) != o.get(key):
            diffs["%s %s" % (what, key)].append(
                "%s: %r, dumped %r" % (addr, t.get(key), o.get(key)))

    for addr, t in truth.items():
        o = ours.get(addr)
        if o is None:
            diffs["missing"].append("%s (%s)" % (addr, t.get("type")))
            continue
        same("object", t, o, "type", addr)
        same("object", t, o, "class", addr)
        typ = t.get("type")
        if typ == "STRING":
            for key in ("bytesize", "embedded", "fstring", "shared"):
                same("STRING", t, o, key, addr)
            if values and "value" in t:
                same("STRING", t, o, "value", addr)
        elif typ == "ARRAY":
            for key in ("length", "shared", "embedded", "references"):
                same("ARRAY", t, o, key, addr)
        elif typ in unread:
            for key in ("ivars", "size", "references"):
                if key in o:
                    diffs["%s %s (unread)" % (typ, key)].append("%s: dumped %r" % (addr, o[key]))
        elif typ in ("OBJECT", "HASH", "STRUCT"):
            for key in {"OBJECT": ("ivars", "embedded"), "HASH": ("size", "default")}.get(typ, ()):
                same(typ, t, o, key, addr)
            if sorted(t.get("references", [])) != sorted(o.get("references", [])):
                diffs["%s references" % typ].append("%s: %r, dumped %r" % (
                    addr, t.get("references"), o.get("references")))
        elif typ in ("CLASS", "MODULE"):
            for key in ("name", "real_class_name", "singleton"):
                same(typ, t, o, key, addr)

    total = sum(len(v) for v in diffs.values())
    limit = len(truth) // 1000
    for what, v in sorted(diffs.items()):
        print("%s: %d, e.g. %s" % (what, len(v), "; ".join(v[:5])), file=sys.stderr)
    print("%d objects in the truth, %d dumped, %d differences (at most %d allowed)" %
          (len(truth), len(ours), total, limit))
    sys.exit(0 if total <= limit and len(truth) > 1000 else 1)


main()
