#!/usr/bin/env python3
"""native-check.py BT_NATIVE_JSON GDB_OUT: compare the native frames of
`rbinspect --json bt --native` with gdb's `thread apply all bt` on the same
target (run with `set print frame-info location-and-address`, so every
frame line has its address).

Per Ruby thread (matched by kernel tid): the two stacks have the same
frames, innermost first: the same pcs in the same order, the signal
trampoline where gdb says "<signal handler called>", and the same function
names wherever both name one (gdb's "??" is unnamed).  gdb may list more
frames in one place only: the tail calls it infers from DWARF call-site
information (a frame with a source position whose pc no unwinder sees).
Names compare without symbol versions and without the "__GI_"/leading
underscores glibc's aliases add (gdb names a function by any alias at its
address).  Also: the thread is merged, and has native frames.  Prints one
line per mismatch (at most 40) and a summary; exits 1 on any mismatch, 2
when gdb itself could not unwind (a frame at pc 0: it lost the stack).
"""
import json
import re
import sys

THREAD = re.compile(r"^Thread \d+ \(.*?LWP (\d+)")
FRAME = re.compile(r"^#(\d+)\s+(?:(0x[0-9a-f]+) in )?(\S+)")


def norm(name):
    if name is None or name == "??":
        return None
    name = name.split("@")[0]
    if name.startswith("__GI_"):
        name = name[5:]
    return name.lstrip("_")


def load_gdb(path):
    threads, cur = {}, None
    for line in open(path, encoding="utf-8", errors="replace"):
        m = THREAD.match(line)
        if m:
            cur = threads.setdefault(int(m.group(1)), [])
            continue
        m = FRAME.match(line)
        if m and cur is not None:
            if line.split(None, 1)[1].startswith("<signal handler called>"):
                cur.append(dict(pc=None, name=None, sig=True, located=False))
            else:
                cur.append(dict(pc=int(m.group(2), 16) if m.group(2) else None,
                                name=norm(m.group(3)), sig=False,
                                located=" at " in line))
    return threads


def ours(th):
    out = []
    for f in th["frames"]:
        n = f["native"]
        if n is None:
            continue
        out.append(dict(pc=int(n["pc"], 16), name=norm(n["function"]),
                        sig=n["signal_trampoline"], inlined=n["inlined"]))
    return out


def compare(tid, mine, theirs, errs):
    i = 0
    for k, g in enumerate(theirs):
        m = mine[i] if i < len(mine) else None
        same = m is not None and (m["sig"] and g["sig"] or
                                  not m["sig"] and not g["sig"] and m["pc"] == g["pc"])
        if same:
            if m["name"] and g["name"] and m["name"] != g["name"]:
                errs.append(f"tid {tid} gdb #{k}: {g['name']}, ours {m['name']}")
            i += 1
        elif not g["located"]:
            errs.append(f"tid {tid} gdb #{k} {g['name']} at {g['pc']:#x} is not ours "
                        f"({m['name'] if m else 'none'} at {m['pc'] if m else 0:#x})"
                        if g["pc"] else f"tid {tid} gdb #{k}: {g}")
            return
    if i < len(mine):
        errs.append(f"tid {tid}: {len(mine) - i} frames of ours past gdb's last, from "
                    f"{mine[i]['name']} at {mine[i]['pc']:#x}")


def main():
    data = json.load(open(sys.argv[1]))
    gdb = load_gdb(sys.argv[2])
    errs, checked = [], 0
    lost = [tid for tid, frames in gdb.items() if any(f["pc"] == 0 for f in frames)]
    if lost:
        print(f"gdb lost the stack of tid {lost[0]} (a frame at pc 0)")
        return 2
    for th in data["threads"]:
        tid = th.get("tid")
        if th.get("error"):
            errs.append(f"thread {th.get('number')}: {th['error']}")
            continue
        if not th.get("merged"):
            errs.append(f"tid {tid}: not merged: {th.get('unmerged_reason')}")
        mine = ours(th)
        if not mine:
            errs.append(f"tid {tid}: no native frames")
            continue
        if tid not in gdb:
            errs.append(f"tid {tid}: gdb lists no such thread")
            continue
        compare(tid, mine, gdb[tid], errs)
        checked += 1
    for e in errs[:40]:
        print(e)
    print(f"{checked} threads compared with gdb, {len(errs)} mismatches")
    return 1 if errs or not checked else 0


if __name__ == "__main__":
    sys.exit(main())
