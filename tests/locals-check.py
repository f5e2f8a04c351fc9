#!/usr/bin/env python3
"""locals-check.py TRUTH THREAD INDEX FRAME_JSON [KIND]: compare `rbinspect --json
frame INDEX` (of thread THREAD, a truth name like "main") with the "local"
records the target wrote about itself (testdata/programs/lib/truth.rb).

The variables Ruby's local_variables listed there must be exactly the
non-internal locals rbinspect reports, in order (the frame's own scope
first, then the scopes around it), each with the right value: nil, true,
false, Integer (a Fixnum by value, a Bignum by its class), Float, Symbol
and String by value (a String cut short must be a prefix of the truth, with
its whole length right), anything else by its class name.  Prints one line
per mismatch and exits 1 on any.  KIND "expr" compares the "expr" records
(what @ivar, $global and Const::PATH are) instead of "local" ones.
"""
import json
import sys


def load(truth, thread, index, kind):
    want = []
    for line in open(truth, encoding="utf-8", errors="surrogateescape"):
        f = line.rstrip("\n").split("\t")
        if f[0] == kind and f[1] == thread and int(f[2]) == index:
            want.append(dict(name=f[3], cls=f[4], value=f[5]))
    return want


def text(v):
    return (v.get("value") or "").encode("utf-8", "surrogateescape")


def check_value(name, w, v, bad):
    kind, cls = v.get("kind"), w["cls"]

    def fail(why):
        bad.append("%s: %s (want %s %s, got %s)" % (name, why, cls, w["value"][:60],
                                                     json.dumps(v)[:200]))

    if cls == "NilClass":
        ok = kind == "nil"
    elif cls == "TrueClass":
        ok = kind == "true"
    elif cls == "FalseClass":
        ok = kind == "false"
    elif cls == "Integer":
        if kind == "integer":
            ok = v["value"] == int(w["value"])
        else:   # a Bignum: a heap object of class Integer
            ok = kind == "object" and v.get("class") == "Integer" and \
                abs(int(w["value"])) >= 2**62
    elif cls == "Float":
        ok = kind == "float" and float(v["value"]) == float(w["value"])
    elif cls == "Symbol":
        ok = kind == "symbol" and text(v).hex() == w["value"]
    elif cls == "String":
        want = bytes.fromhex(w["value"])
        got = text(v)
        if kind != "string":
            ok = False
        elif v.get("truncated"):
            ok = want.startswith(got) and v.get("length") == len(want) and \
                len(got) < len(want)
        else:
            ok = got == want and v.get("length") == len(want)
    else:
        ok = kind == "object" and v.get("class") == cls
    if not ok:
        fail("value differs")


def main():
    truth, thread, index, path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    kind = sys.argv[5] if len(sys.argv) > 5 else "local"
    want = load(truth, thread, index, kind)
    got = json.load(open(path, encoding="utf-8", errors="surrogateescape"))
    bad = []
    if not want:
        bad.append("the truth has no locals for %s frame %d" % (thread, index))
    if got.get("error"):
        bad.append("error: %s" % got["error"])
    if got.get("frame", {}).get("index") != index:
        bad.append("frame index %r, want %d" % (got.get("frame", {}).get("index"), index))
    locs = [l for l in got.get("locals", []) if not l["internal"]]
    names = [l["name"] for l in locs]
    if names != [w["name"] for w in want]:
        bad.append("names: want %s, got %s" % ([w["name"] for w in want], names))
    else:
        for w, l in zip(want, locs):
            check_value(w["name"], w, l["value"], bad)
    for b in bad[:40]:
        print(b)
    print("%d locals, %d mismatches" % (len(want), len(bad)))
    sys.exit(1 if bad else 0)


main()
