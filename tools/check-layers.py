#!/usr/bin/env python3
"""check-layers.py BUILDDIR: no dependency cycle between the library's folders.

ARCHITECTURE.md: each layer only calls the ones below it, "no cycle between
folders, checked at symbol level".  This reads every object of the shared
library (BUILDDIR/compile_commands.json says which source made which object),
maps each symbol an object defines to its folder (lib/mem, lib/vm, ...;
lib/session.c is a folder of its own, "session"), and for each symbol an
object uses but does not define draws an edge from its folder to the folder
that defines it.  A strongly connected set of more than one folder is a cycle:
each is printed with the symbols that close it.  And the session is above
the layers: a folder calling into lib/session.c fails unless listed, with
its reason, in UP_INTO_SESSION.  Two rules are read from the sources: only
lib/mem and the session include struct rbi_target's header, and only
lib/arch names a machine (MACHINE).

Output is TAP (tests/run and `meson test -C build layers` count it); exit 1
on a cycle.  --dot prints the folder graph instead (graphviz); --root=DIR
names the source tree when it is not this script's.
"""
import json
import os
import re
import subprocess
import sys

# The session (lib/session.c) sits above the layers it ties together, and
# "the layers never call up into it": the folders that do today, and why.
# A new edge into the session fails until it is fixed or listed here.
UP_INTO_SESSION = {}

# struct rbi_target is lib/mem's (lib/mem/target.h): the compiler keeps the
# layers above out of its fields as long as they do not include its header;
# they ask its accessors (lib/internal.h).  lib/session.c, which opens and
# ends targets, may.
TARGET_HEADER = re.compile(r'^\s*#\s*include\s+"mem/target\.h"')

# A machine is named in lib/arch alone (ARCHITECTURE: "nothing else names a
# machine"): its kernel's register structs and requests, its e_machine, the
# compiler's macro for it, the decoder of its code.
MACHINE = re.compile(r'user_regs_struct|user_pt_regs|PTRACE_GETREGS\b|\bEM_(X86_64|AARCH64)\b|'
                     r'__(x86_64|aarch64|i386)__|DWARF_X86|X86_64_|Zydis')

# Sources generated into the build tree, and the folder they belong to.
GENERATED = {"flamegraph-js.c": "out"}
LIBRARY = "libruby-introspect.so"


def folder_of(src, root):
    base = os.path.basename(src)
    if base in GENERATED:
        return GENERATED[base]
    rel = os.path.relpath(src, root)
    parts = rel.split(os.sep)
    if parts[0] != "lib":
        return None
    if len(parts) == 2:                 # lib/session.c
        return os.path.splitext(parts[1])[0]
    return "/".join(parts[1:-1])        # lib/mem, and lib/vm's rooms: vm/heap


def objects(build):
    """(object path, folder) of every object linked into the library."""
    with open(os.path.join(build, "compile_commands.json")) as f:
        cmds = json.load(f)
    out = []
    for c in cmds:
        obj = c.get("output", "")
        if not os.path.basename(os.path.dirname(obj)).startswith(LIBRARY):
            continue
        src = c["file"]
        if not os.path.isabs(src):
            src = os.path.normpath(os.path.join(c["directory"], src))
        out.append((os.path.join(c["directory"], obj), src))
    return out


def nm(path):
    """(defined, undefined) global symbol names of one object."""
    r = subprocess.run(["nm", "-g", "--format=posix", path], capture_output=True,
                       text=True, check=True)
    defined, undefined = set(), set()
    for line in r.stdout.splitlines():
        f = line.split()
        if len(f) < 2:
            continue
        # "U": used, defined elsewhere; a weak "w"/"v" without a value too.
        if f[1] == "U" or (f[1] in ("w", "v") and len(f) == 2):
            undefined.add(f[0])
        else:
            defined.add(f[0])
    return defined, undefined


def lines_matching(root, pattern, but):
    """file:line of each line of the library's sources, in folders other
    than BUT, that PATTERN matches."""
    found = []
    lib = os.path.join(root, "lib")
    for folder in sorted(os.listdir(lib)) if os.path.isdir(lib) else []:
        path = os.path.join(lib, folder)
        if folder == but or not os.path.isdir(path):
            continue
        for name in sorted(os.listdir(path)):
            if not name.endswith((".c", ".h")):
                continue
            with open(os.path.join(path, name), encoding="utf-8") as f:
                for i, line in enumerate(f, 1):
                    if pattern.search(line):
                        found.append("lib/%s/%s:%d" % (folder, name, i))
    return found


def reaching_into_target(root):
    """Sources above lib/mem (lib/session.c, which makes targets, aside)
    that include struct rbi_target's header."""
    return lines_matching(root, TARGET_HEADER, "mem")


def naming_machines(root):
    """Sources outside lib/arch that name a machine's registers, its
    kernel's structs or the machine it is built for."""
    return lines_matching(root, MACHINE, "arch")


def sccs(nodes, edges):
    """Tarjan's strongly connected components of the graph."""
    index, low, stack, on, comps, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            comps.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return comps


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    dot = "--dot" in sys.argv
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    for a in sys.argv[1:]:
        if a.startswith("--root="):     # the sources' tree (the self-test's)
            root = os.path.abspath(a[len("--root="):])
    if len(args) != 1:
        sys.stderr.write(__doc__)
        return 2
    build = os.path.abspath(args[0])
    n = 0

    def tap(ok, desc):
        nonlocal n
        n += 1
        print(("ok" if ok else "not ok") + " %d - %s" % (n, desc))

    try:
        objs = objects(build)
    except (OSError, ValueError) as e:
        tap(False, "read %s/compile_commands.json: %s" % (build, e))
        print("1..%d" % n)
        return 1
    owner, uses, folders, unknown = {}, [], set(), []
    for obj, src in objs:
        fo = folder_of(src, root)
        if fo is None:
            unknown.append(src)
            continue
        folders.add(fo)
        d, u = nm(obj)
        for s in d:
            owner[s] = fo
        uses.append((fo, u))
    edges, why = {}, {}
    for fo, u in uses:
        for s in u:
            to = owner.get(s)
            if to and to != fo:
                edges.setdefault(fo, set()).add(to)
                why.setdefault((fo, to), set()).add(s)
    if dot:
        print("digraph layers {")
        for (a, b), syms in sorted(why.items()):
            print('  "%s" -> "%s" [label="%d"];' % (a, b, len(syms)))
        print("}")
        return 0
    tap(len(objs) > 0 and not unknown,
        "%d objects of the library, each in a folder of lib/ (%d folders)%s"
        % (len(objs), len(folders), "; unknown: " + ", ".join(unknown) if unknown else ""))
    up = sorted(a for a in edges if "session" in edges[a] and a != "session")
    new_up = [a for a in up if a not in UP_INTO_SESSION]
    tap(not new_up, "no layer calls up into the session (lib/session.c) but those listed")
    for a in up:
        syms = sorted(why[(a, "session")])
        print("#   %s -> session: %s%s" % (a, ", ".join(syms),
              "" if a in UP_INTO_SESSION else "  (new: not in UP_INTO_SESSION)"))
    reach = reaching_into_target(root)
    tap(not reach, "only lib/mem and the session see struct rbi_target's fields "
        "(lib/mem/target.h): the folders above ask its accessors")
    for r in reach:
        print("#   " + r)
    machines = naming_machines(root)
    tap(not machines, "only lib/arch names a machine (registers, kernel structs, code decoder, "
        "e_machine)")
    for m in machines:
        print("#   " + m)
    cycles = [c for c in sccs(folders, edges) if len(c) > 1]
    tap(not cycles, "no dependency cycle between the library's folders at symbol level")
    for c in cycles:
        print("# cycle between %s:" % ", ".join(c))
        for a in c:
            for b in c:
                if (a, b) in why:
                    syms = sorted(why[(a, b)])
                    print("#   %s -> %s: %s%s" % (a, b, ", ".join(syms[:6]),
                                                " (+%d)" % (len(syms) - 6) if len(syms) > 6 else ""))
    print("1..%d" % n)
    return 1 if cycles or new_up or unknown or reach or machines or not objs else 0


if __name__ == "__main__":
    sys.exit(main())
