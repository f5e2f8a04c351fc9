#!/usr/bin/env python3
"""hostile-check.py TRUTH DUMP MIN_OBJECTS: rbinspect heap-dump --strings of
testdata/programs/hostile.rb (DUMP, gzip if it ends in .gz) against what the program
wrote of itself (TRUTH).

Every line of DUMP must be valid UTF-8 and one JSON object, at least MIN_OBJECTS of them
objects; each 7-bit String of the truth must be there with its bytesize and its value
byte for byte (control, escape, quote, backslash and NUL bytes included), each binary or
invalid UTF-8 one with its bytesize and no value; each Array of the cycle with length 3
and its references: the unit's two Strings and the next Array; the global_tbl ROOT line
must hold the cycle's first Array.  Prints a summary; exit 0 when all holds, 1 with what
differs on stderr."""
import gzip
import json
import sys


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    truth = [json.loads(line) for line in open(sys.argv[1])]
    want = {t["address"] for t in truth}
    opener = gzip.open if sys.argv[2].endswith(".gz") else open
    objs, roots, lines, nobj, bad = {}, {}, 0, 0, []
    with opener(sys.argv[2], "rb") as f:
        for n, raw in enumerate(f, 1):
            lines += 1
            try:
                o = json.loads(raw.decode("utf-8"))
            except ValueError as e:
                bad.append("line %d: %s" % (n, e))
                continue
            if not isinstance(o, dict):
                bad.append("line %d: not an object" % n)
            elif o.get("type") == "ROOT":
                roots.setdefault(o.get("root"), set()).update(o.get("references", []))
            else:
                nobj += 1
                if o.get("address") in want:
                    objs[o["address"]] = o
    ring = {t["ring"]: t["address"] for t in truth if "ring" in t}
    strings = [t for t in truth if "kind" in t]
    for t in strings:
        o = objs.get(t["address"])
        if o is None:
            bad.append("%s (%s String) not dumped" % (t["address"], t["kind"]))
            continue
        if o.get("type") != "STRING" or o.get("bytesize") != t["bytesize"]:
            bad.append("%s: %s %r bytes, want STRING %d" % (t["address"], o.get("type"),
                                                            o.get("bytesize"), t["bytesize"]))
        raw = bytes.fromhex(t["hex"])
        if all(b < 0x80 for b in raw):
            if o.get("value") != raw.decode("ascii"):
                bad.append("%s: value %r, want %r" % (t["address"], o.get("value"), raw))
        elif "value" in o:
            bad.append("%s: a %s String with a value" % (t["address"], t["kind"]))
    for i, addr in ring.items():
        o = objs.get(addr, {})
        unit = [s["address"] for s in strings[2 * i:2 * i + 2]]
        refs = unit + [ring[i + 1]] if i + 1 in ring else None
        if o.get("type") != "ARRAY" or o.get("length") != 3 or \
                (refs and o.get("references") != refs):
            bad.append("ring %d %s: %r" % (i, addr, o))
    if ring and ring[0] not in roots.get("global_tbl", set()):
        bad.append("the global_tbl ROOT line lacks the cycle's first Array %s" % ring[0])
    if nobj < int(sys.argv[3]):
        bad.append("%d objects, want at least %s" % (nobj, sys.argv[3]))
    for b in bad[:20]:
        print(b, file=sys.stderr)
    print("%d lines, %d objects, %d ROOT lines; %d Strings and %d Arrays of the truth "
          "checked; %d problems" % (lines, nobj, len(roots), len(strings),
                                    len(ring), len(bad)))
    sys.exit(1 if bad else 0)


main()
