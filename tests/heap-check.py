#!/usr/bin/env python3
"""heap-check.py TRUTH DUMP [--values] [--roots] [--gc] [--alloc] [--unread TYPE|KIND,...] [--need TYPE,...]
[--skip KIND,...] [--genivar FILE] [--genivar-unread]:
rbinspect heap-dump's file
(DUMP, gzip if it ends in .gz) against the target's own ObjectSpace.dump_all (TRUTH), both
one JSON object per line.

Every object dump_all wrote (its ROOT and SHAPE lines aside) must be in DUMP at its address
with its type, class and shape_id (3.3+), an IMEMO with its imemo_type and a T_DATA with
its struct; Strings with their bytesize, embedded and fstring flags and, with --values,
their value; Arrays with their length, shared and embedded flags and their references;
classes and modules with their name, real class name and singleton flag; Objects with
their ivars, embedded flag and references, Hashes with their size, default and
references, Structs, Strings, Floats, Bignums, Symbols, Rationals, Complexes, Regexps,
MatchData, Files, classes, modules and include wrappers (ICLASS) with their references
(references as multisets), except for the types given to --unread
(OBJECT,HASH,STRUCT,RATIONAL,...,CLASS,MODULE,ICLASS): those must have neither ivars, size nor
references (the dump says it cannot read them).  With --genivar-unread (heap-dump said
it did not find the table of generic instance variables, which dump_all marks first), an
object DUMP writes without references is outside the 0.1 % budget but within 1 % of its
type.  --genivar FILE: the addresses of the objects with generic instance variables
(heap.rb writes them), whose references must be dump_all's, in its order, each (but
those of types and kinds whose own references are not read, and, with --genivar-unread,
those written without): how many is printed with their types
("generic ivars 15/15 (15 in order; ARRAY 1, DATA 2, HASH 1, STRING 10, STRUCT 1)").  The share of each type's references that match is printed
("references MATCH 5/5"); each type given to --need must have objects with references
in the truth that DUMP gives the same (the program made them: no vacuous pass).  Procs,
Bindings, Methods, Threads and Fibers, Times, ARGF, Monitors, autoload's data, Queues and
3.4's list of registered objects (DATA whose "struct" is "proc", "binding", "method",
"VM/thread", "fiber", "time", "ARGF", "monitor", "autoload_const", "autoload_i",
"autoload_data", "autoload", "autoload_table", "queue", "sized_queue", "VM/pin_array_list";
not the Thread and Fiber that ran dump_all, which TRUTH.running names when the program
wrote it: "fiber running dump_all, not compared: 1") and environments and method entries,
lexical scopes, special variables, throw data, constant caches, call caches, call infos,
ifuncs and memos (IMEMO whose "imemo_type" is "env", "ment", "cref", "svar", "throw_data",
"constcache", "iseq", "callcache", "callinfo", "ifunc", "memo"), and any other DATA DUMP
gives references for (one whose type marks nothing or declares its marking, 3.3+: "other
io_buffer 3/3"), with their references (a closure's hold on what it captured; how many
match is printed per kind, and how many of those in the same order:
"references env 120/120 (120 in order)"); every other DATA and IMEMO, and the kinds given
to --unread ("iseq" where heap-dump cannot read them), must have none in
DUMP (never a part given as all), and each that has references in the truth is a
difference (within the budget below) unless its kind is given to --unread.  Objects only DUMP has were allocated after the truth was written (by the dump itself, by printing
READY): allowed, and references to them left out of the comparison (a class whose method
those calls used also refers to its method entry in the call cache: a difference, within
the budget).  At most
0.1 % of the truth's objects may differ, and each kind of difference is listed (up to 5
examples).

SHAPE lines (3.3+): every shape the truth has must be in DUMP with the same id and the
same fields, all of them; shapes DUMP has beyond them were made after the truth was
written (counted), and a truth's shape that is their parent may have them as edges too
(its "edges" the truth's plus those, its "memsize" no less).  No budget: a shape differs
or not.

ROOT lines: DUMP's global_tbl, global_list (2.7-3.3) and finalizers (up to 3.3) must hold
what the truth's do (3.4's objspace root, which its dump_all does not write, is only
checked to point at objects of DUMP), as multisets (objects the truth does not have aside: allocated after it), its vm a part of the truth's (the
VM's fields it reads); its machine_context (read while the
program sleeps, not while it dumps) only has to be there and point at objects of DUMP.
The objects reachable from each file's roots through its own references are counted and
printed, with how many of those the truth reaches DUMP reaches too (DUMP lacks the
references of most T_DATA and IMEMOs: a share, not an equality).

With --gc: each object's "flags" as the truth's, and its "memsize" where DUMP has one
as the truth's, in the 0.1 % budget; DUMP must have a memsize for 99 % of the truth's
objects of the types in MEMSIZE_TYPES (not for those with generic instance variables,
nor Strings in other encodings); the share that match is printed per type ("memsize
STRING 9260/9260").
Allocation sites (ObjectSpace.trace_object_allocations): every object either file has
"file", "line", "method" or "generation" for must have the same four in both (a key left out
the same); how many match is printed ("allocation sites 5000/5000").  With --alloc the
truth must have some (the program traced: no vacuous pass) and every one must match.

--skip: DATA and IMEMO kinds not compared at all (the truth's have moved on since:
crash.sh's Threads and Fibers).

Exit 0 when it holds, 1 with the differences on stderr."""
import gzip
import json
import sys
from collections import Counter, defaultdict

# The types whose references DUMP gives (but for --unread), as multisets.
REFERENCED = ("OBJECT", "HASH", "STRUCT", "STRING", "FLOAT", "BIGNUM", "SYMBOL",
              "RATIONAL", "COMPLEX", "REGEXP", "MATCH", "FILE", "CLASS", "MODULE", "ICLASS")
# The types whose memsize DUMP gives, but for a few objects (see above).
MEMSIZE_TYPES = ("STRING", "ARRAY", "OBJECT", "HASH", "STRUCT", "FLOAT", "SYMBOL",
                 "RATIONAL", "COMPLEX", "FILE", "BIGNUM", "REGEXP", "MATCH")
# dump_all's keys of an allocation site (objspace_dump.c dump_object).
ALLOC_KEYS = ("file", "line", "method", "generation")
# The kinds of DATA ("struct") and IMEMO ("imemo_type") objects whose references DUMP has.
READ_KINDS = {"DATA": ("struct", {"proc", "binding", "method", "time", "ARGF", "monitor",
                                  "autoload_const", "autoload_i", "autoload_data", "autoload",
                                  "autoload_table", "VM/pin_array_list", "queue",
                                  "sized_queue", "VM/thread", "fiber", "ractor",
                                  "random", "random/MT", "backtrace", "frame_info",
                                  "marshal_compat_table", "enumerator", "dir"}),
              "IMEMO": ("imemo_type", {"env", "ment", "cref", "svar", "throw_data", "constcache",
                                        "iseq", "callcache", "callinfo", "ifunc", "memo"})}


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    objs, roots, shapes = {}, {}, {}
    with opener(path, "rt", encoding="utf-8", errors="surrogateescape") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                o = json.loads(line)
            except ValueError as e:
                sys.exit("%s:%d: not JSON: %s" % (path, n, e))
            if o.get("type") == "SHAPE":
                shapes[o["id"]] = o
                continue
            if o.get("type") == "ROOT":
                roots.setdefault(o["root"], []).extend(o.get("references", []))
                continue
            objs[o["address"]] = o
    return objs, roots, shapes


def running_objects(path, truth):
    """The Thread and Fiber that ran dump_all, named in PATH.running (heap.rb writes it):
    its Fiber (the Thread's first reference, when that is a Fiber) and, where the line
    says "ec" (thread_mark marks the execution context itself), the Thread: their
    execution context was then in dump_all, not where the program sleeps, so their
    references are not compared."""
    try:
        with open(path + ".running") as f:
            words = f.read().split()
    except OSError:
        return set()
    if not words or words[0] not in truth:
        return set()
    got = {words[0]} if "ec" in words[1:] else set()
    refs = truth[words[0]].get("references", [])
    if refs and truth.get(refs[0], {}).get("struct") == "fiber":
        got.add(refs[0])
    return got


def check_shapes(truth, ours, diffs):
    new = {i: s for i, s in ours.items() if i not in truth}
    new_children = Counter(s.get("parent_id") for s in new.values())
    for i, t in truth.items():
        o = ours.get(i)
        if o is None:
            diffs["SHAPE missing"].append("id %d (%s)" % (i, t.get("shape_type")))
            continue
        grown = new_children.get(i, 0)
        for key in sorted(set(t) | set(o)):
            if grown and key == "edges" and o.get(key) == t.get(key, 0) + grown:
                continue
            if grown and key == "memsize" and o.get(key, 0) >= t.get(key, 0):
                continue
            if t.get(key) != o.get(key):
                diffs["SHAPE %s" % key].append("id %d: %r, dumped %r" % (i, t.get(key), o.get(key)))
    return "shapes: truth %d, dump %d (%d made after the truth)" % (len(truth), len(ours), len(new))


def reachable(objs, roots):
    seen = set()
    todo = [a for refs in roots.values() for a in refs]
    while todo:
        a = todo.pop()
        if a in seen or a not in objs:
            continue
        seen.add(a)
        todo.extend(objs[a].get("references", []))
    return seen


def check_roots(truth, troots, ours, oroots, diffs):
    for name in ("global_tbl", "global_list", "finalizers"):
        t = Counter(troots.get(name, []))
        o = Counter(a for a in oroots.get(name, []) if a in truth)
        for a in (t - o).elements():
            diffs["%s missing" % name].append(a)
        for a in (o - t).elements():
            diffs["%s extra" % name].append(a)
    for a in set(oroots.get("vm", [])) - set(troots.get("vm", [])):
        if a in truth:
            diffs["vm root not in the truth's"].append(a)
    if not oroots.get("machine_context"):
        diffs["machine_context"].append("no machine_context ROOT line")
    for name, refs in oroots.items():
        for a in refs:
            if a not in ours:
                diffs["%s root not an object of the dump" % name].append(a)
    rt, ro = reachable(truth, troots), reachable(ours, oroots)
    return "reachable from the roots: truth %d, dump %d, %d of the truth's (%.1f %%)" % (
        len(rt), len(ro), len(rt & ro), 100.0 * len(rt & ro) / max(len(rt), 1))


def gc_check(t, o, addr, diffs, rates, genivar):
    typ = t.get("type")
    for key in ("flags", "memsize"):
        if key == "memsize" and "memsize" not in o:
            # (one with generic instance variables may be left out whatever its type)
            rates["memsize left out of " + typ][0] += addr not in genivar
            continue
        r = rates["%s %s" % (key, typ)]
        r[1] += 1
        if t.get(key) == o.get(key):
            r[0] += 1
        else:
            diffs["%s %s" % (typ, key)].append("%s: %r, dumped %r" % (addr, t.get(key), o.get(key)))


def option_set(args, name):
    """The comma list after NAME in ARGS, both taken out of ARGS."""
    if name not in args:
        return set()
    i = args.index(name)
    got = set(filter(None, args[i + 1].split(","))) if i + 1 < len(args) else set()
    del args[i:i + 2]
    return got


def main():
    args = sys.argv[1:]
    values = "--values" in args
    want_roots = "--roots" in args
    want_gc = "--gc" in args
    want_alloc = "--alloc" in args
    args = [a for a in args if a not in ("--values", "--roots", "--gc", "--alloc")]
    unread, need = option_set(args, "--unread"), option_set(args, "--need")
    skip = option_set(args, "--skip")
    genivar_unread = "--genivar-unread" in args
    args = [a for a in args if a != "--genivar-unread"]
    genivar = None
    if "--genivar" in args:
        i = args.index("--genivar")
        if i + 1 >= len(args):
            sys.exit(__doc__)
        with open(args[i + 1]) as f:
            genivar = [line.strip() for line in f if line.strip()]
        del args[i:i + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    (truth, troots, tshapes), (ours, oroots, oshapes) = load(args[0]), load(args[1])
    running = running_objects(args[0], truth)
    diffs = defaultdict(list)
    shapes = check_shapes(tshapes, oshapes, diffs) if tshapes or oshapes else None
    reach = check_roots(truth, troots, ours, oroots, diffs) if want_roots else None

    def same(what, t, o, key, addr):
        if t.get(key) != o.get(key):
            diffs["%s %s" % (what, key)].append(
                "%s: %r, dumped %r" % (addr, t.get(key), o.get(key)))

    def refs_before(t, o):
        """O's references but those to objects allocated after the truth was written
        (stdout's write lock, made to print READY; the call and constant caches of the
        code that runs after dump_all), which DUMP only has."""
        return [a for a in o.get("references", []) if a in truth or a not in ours or
                a in t.get("references", [])]

    rates = defaultdict(lambda: [0, 0])    # "memsize TYPE" / "flags TYPE": [same, compared]
    with_refs = Counter()       # per type: objects with references in the truth, the same
    left_out = Counter()        # per type: objects written without their references
    genivar_set = set(genivar or ())
    kinds = defaultdict(lambda: [0, 0, 0])  # "env", "proc": references [same, compared, in order]
    skipped = Counter()         # per kind: running dump_all, not compared
    for addr, t in truth.items():
        o = ours.get(addr)
        if o is None:
            diffs["missing"].append("%s (%s)" % (addr, t.get("type")))
            continue
        if want_gc:
            gc_check(t, o, addr, diffs, rates, genivar_set)
        same("object", t, o, "type", addr)
        same("object", t, o, "class", addr)
        same("object", t, o, "shape_id", addr)
        same("object", t, o, "imemo_type", addr)
        same("object", t, o, "struct", addr)
        if any(k in t or k in o for k in ALLOC_KEYS):
            r = rates["allocation sites"]
            r[1] += 1
            if all(t.get(k) == o.get(k) for k in ALLOC_KEYS):
                r[0] += 1
            else:
                diffs["allocation site"].append("%s (%s): %r, dumped %r" % (
                    addr, t.get("type"), [t.get(k) for k in ALLOC_KEYS],
                    [o.get(k) for k in ALLOC_KEYS]))
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
        elif typ in ("OBJECT", "HASH"):
            for key in {"OBJECT": ("ivars", "embedded"), "HASH": ("size", "default")}[typ]:
                same(typ, t, o, key, addr)
        elif typ in ("CLASS", "MODULE"):
            for key in ("name", "real_class_name", "singleton"):
                same(typ, t, o, key, addr)
        if typ in REFERENCED and typ not in unread:
            r = rates["references " + typ]
            r[1] += 1
            trefs, orefs = t.get("references", []), refs_before(t, o)
            if Counter(trefs) == Counter(orefs):
                r[0] += 1
                with_refs[typ] += bool(t.get("references"))
            else:
                kind = "left out" if "references" not in o else "differ"
                left_out[typ] += kind == "left out"
                diffs["%s references %s" % (typ, kind)].append("%s: %r, dumped %r" % (
                    addr, t.get("references"), o.get("references")))
        if typ in READ_KINDS:
            key, read = READ_KINDS[typ]
            kind = t.get(key)
            if kind in skip:
                pass
            elif kind in read and kind not in unread and addr in running:
                skipped[kind] += 1
            elif kind not in unread and (kind in read or ("references" in o and
                                                          typ == "DATA")):
                # A kind read by name, or another DATA whose marking is data (none;
                # 3.3+'s declarative marking): "other KIND".
                k = kinds[kind if kind in read else "other " + str(kind)]
                k[1] += 1
                trefs, orefs = t.get("references", []), refs_before(t, o)
                if Counter(trefs) == Counter(orefs):
                    k[0] += 1
                    k[2] += trefs == orefs
                else:
                    diffs["%s %s references" % (typ, kind)].append("%s: %r, dumped %r" % (
                        addr, t.get("references"), o.get("references")))
            elif "references" in o:
                diffs["%s %s references (unread)" % (typ, kind)].append(
                    "%s: dumped %r" % (addr, o["references"]))
            elif t.get("references") and kind not in unread:
                # Unknown where dump_all has some: a difference like any other.
                diffs["%s %s references unknown" % (typ, kind)].append(addr)

    # The objects with generic instance variables: dump_all lists those first.
    gen = None
    if genivar is not None:
        gen = [0, 0, 0, 0]      # same, compared, in order, written without references
        gen_types = Counter()
        for addr in genivar:
            t, o = truth.get(addr), ours.get(addr)
            if t is None or o is None:
                continue
            typ = t.get("type")
            key, read = READ_KINDS.get(typ, (None, ()))
            if typ in unread or (key and (t.get(key) not in read or t.get(key) in unread)) or \
                    (not key and typ not in REFERENCED and typ != "ARRAY"):
                continue        # the type's own references are not read
            gen[1] += 1
            trefs, orefs = t.get("references", []), refs_before(t, o)
            if "references" not in o and genivar_unread:
                gen[3] += 1
            elif Counter(trefs) == Counter(orefs):
                gen[0] += 1
                gen[2] += trefs == orefs
                gen_types[typ] += 1
                if trefs != orefs:
                    diffs["generic ivars out of order"].append("%s (%s): %r, dumped %r" % (
                        addr, typ, trefs, orefs))
            else:
                diffs["generic ivars references"].append("%s (%s): %r, dumped %r" % (
                    addr, typ, trefs, o.get("references")))

    # Failures whatever the budget: the roots, the shapes, and what would make the
    # comparison vacuous.
    left_out_ok = 0
    # (The roots' own keys: a DATA type may have "root" in its name, yjit_root.)
    hard = [k for k in diffs
            if k.endswith(" root not an object of the dump") or
            k.startswith(("vm root ", "global_tbl", "global_list", "finalizers",
                          "machine_context", "SHAPE"))]
    hard += [k for k in diffs if k.startswith("generic ivars")]
    if gen is not None and not gen[0]:
        diffs["no generic ivars the same"].append("(none in %s?)" % "--genivar's file")
        hard.append("no generic ivars the same")
    if want_alloc and not rates["allocation sites"][1]:
        diffs["no allocation sites"].append("(none in the truth?)")
        hard.append("no allocation sites")
    if want_alloc and "allocation site" in diffs:
        hard.append("allocation site")
    for typ in sorted(need - unread):
        if not with_refs[typ]:
            diffs["no %s with references the same" % typ].append("(none in the truth?)")
            hard.append("no %s with references the same" % typ)
    # Written without references: objects with generic instance variables (dump_all
    # marks those first, from a table heap-dump did not find: --genivar-unread).  They
    # have their own budget, 1 % of their type; else they are differences as any other.
    for typ, n in left_out.items() if genivar_unread else ():
        if n * 100 > rates["references " + typ][1]:
            hard.append("%s references left out" % typ)
        else:
            left_out_ok += n
    for typ in [t for t in MEMSIZE_TYPES if t not in unread] if want_gc else ():
        left = rates.get("memsize left out of " + typ, [0])[0]
        n = rates.get("flags " + typ, [0, 0])[1]
        if left * 100 > n:
            diffs["memsize left out"].append("of %d of %d %ss" % (left, n, typ))
            hard.append("memsize left out")
    # Shapes are not objects: their differences are outside the budget (and fail).
    total = sum(len(v) for k, v in diffs.items() if not k.startswith("SHAPE")) - left_out_ok
    limit = len(truth) // 1000
    for what, v in sorted(diffs.items()):
        print("%s: %d, e.g. %s" % (what, len(v), "; ".join(v[:5])), file=sys.stderr)
    print("%d objects in the truth, %d dumped, %d differences (at most %d allowed; and %d "
          "written without their references)%s%s" %
          (len(truth), len(ours), total, limit, left_out_ok, "; " + shapes if shapes else "",
           "; " + reach if reach else ""))
    if "allocation sites" in rates:
        print("allocation sites %d/%d" % tuple(rates["allocation sites"]))
    if gen is not None:
        print("generic ivars %d/%d (%d in order; %s)%s" % (
            gen[0], gen[1], gen[2], ", ".join("%s %d" % kv for kv in sorted(gen_types.items())),
            "; %d written without references" % gen[3] if gen[3] else ""))
    print("references " + "; ".join(["%s %d/%d (%d in order)" % (k, v[0], v[1], v[2])
                                     for k, v in sorted(kinds.items())] +
                                    ["%s running dump_all, not compared: %d" % (k, n)
                                     for k, n in sorted(skipped.items())]))
    if rates:
        print("; ".join("%s %d/%d" % (k, v[0], v[1]) for k, v in sorted(rates.items())
                        if not k.startswith(("memsize left", "allocation"))))

    sys.exit(0 if total <= limit and not hard and len(truth) > 1000 else 1)


main()
