#!/usr/bin/env python3
"""churn-check.py PROGRAM BT.json...: every stack `rbinspect --json bt` printed
as real (no error) for testdata/programs/PROGRAM.rb (thread-churn, churn,
compact or recurse) is one that program can have: its outermost frame is where a thread
of it starts, and every frame is one its caller can call (the program's own
structure, below); and every frame of it is named as the target would name
it: every method these programs run belongs to a named class or module, so
its label is qualified ("Churner3#deep", "Integer#times"), never bare
("deep") nor an unknown method (a class or method entry read while
GC.compact moved it).  A stack with an error is marked, not printed as
real, and has no frames: a stack is never cut after the frames read before
something failed.

Prints each impossible stack and each bare label and exits 1 if there is
one; prints "STACKS ERRORS" (stacks checked, stacks marked) on success."""
import json
import re
import sys

# Labels without their class (Ruby 3.4 qualifies them, older ones do not):
# "block in Churn.short_life" -> "block in short_life".
QUAL = re.compile(r"[A-Z][\w:]*[#.](?=\S)")

# Per program: where its threads start, and caller -> what it can call.  Where
# Ruby defines a core method in Ruby (<internal:numeric>, <internal:kernel>:
# Integer#times and Kernel#loop from 3.3, Integer#zero? from 3.1) its own calls
# are frames too: 3.3's times and loop ask block_given?, and times calls i.succ
# (an instruction the interpreter runs without a frame; YJIT may call it).
PROGRAMS = {
    "thread-churn": ({"<main>", "block in <main>", "block (3 levels) in <main>"}, {
        "<main>": {"loop"},
        "loop": {"block in <main>", "block_given?"},
        "block in <main>": {"each_index", "pass", "short_life"},
        "block (3 levels) in <main>": {"short_life"},
        "each_index": {"block (2 levels) in <main>"},
        "block (2 levels) in <main>": {"alive?", "join", "new"},
        "new": {"initialize"},
        "short_life": {"times"},
        "times": {"block in short_life", "block_given?", "succ"},
    }),
    # The main thread's loop: Object.new, "s#{i}", i % 4, .zero?, GC.compact,
    # GC.respond_to?.
    "churn": ({"<main>"}, {
        "<main>": {"new", "to_s", "%", "zero?", "compact", "respond_to?"},
        "new": {"initialize"},
    }),
    # The main thread compacts; each worker defines a class (eval of a class body:
    # Class#inherited, Module#const_added and #method_added as Ruby calls them) and
    # runs it.  Its classes' numbers are left out (ChurnerN).
    "compact": ({"<main>", "block (2 levels) in <main>"}, {
        "<main>": {"loop", "puts", "inherited", "const_added", "<class:ChurnerN>"},
        "puts": {"puts", "write"},              # READY: Kernel#puts, IO#puts, IO#write
        "loop": {"block in <main>", "block (3 levels) in <main>", "block_given?"},
        # define's "Churner#{k}": 2.7 calls k.to_s with a frame.
        "block in <main>": {"compact", "sleep", "eval", "synchronize", "to_s"},
        "synchronize": {"block (2 levels) in <main>"},
        "block (2 levels) in <main>": {"loop"},
        "block (3 levels) in <main>": {"block in <main>", "call", "new", "deep"},
        "call": {"block in <main>"},
        "eval": {"<main>"},
        "<class:ChurnerN>": {"method_added"},
        "new": {"initialize"},
        "deep": {"deep", "churn", "zero?"},
        "churn": {"times"},
        "times": {"block in churn", "block_given?", "succ"},
        "block in churn": {"even?", "to_s", "size", "%", "*", "[]="},
    }),
    # Object#r recursing 0 to 59 deep, over and over (Integer#zero? a frame from
    # 3.1, Kernel#loop Ruby code from 3.3).
    "recurse": ({"<main>"}, {
        "<main>": {"loop", "write"},
        "loop": {"block in <main>", "block_given?"},
        "block in <main>": {"r"},
        "r": {"r", "zero?"},
    }),
}
# Frames of these programs' threads before a method runs in them.
BARE_OK = re.compile(r"(block (\(\d+ levels\) )?in )?<[^>]*>$")


def plain(label):
    return re.sub(r"Churner\d+", "ChurnerN", QUAL.sub("", label or ""))


def bare(label):
    """A method's label without its class or module (or none: an unknown method)."""
    return label is None or not (BARE_OK.match(label) or QUAL.search(label))


def impossible(frames, roots, calls):
    labels = [plain(f.get("label")) for f in reversed(frames)]  # outermost first
    if not labels:
        return None
    if labels[0] not in roots:
        return "starts in %s" % labels[0]
    for caller, callee in zip(labels, labels[1:]):
        if callee not in calls.get(caller, ()):
            return "%s calls %s" % (caller, callee)
    return None


def main():
    roots, calls = PROGRAMS[sys.argv[1]]
    bad = checked = marked = cut = 0
    bare_labels = []
    for path in sys.argv[2:]:
        with open(path) as f:
            text = f.read()
        dec = json.JSONDecoder()
        pos = 0
        while pos < len(text):
            while pos < len(text) and text[pos].isspace():
                pos += 1
            if pos >= len(text):
                break
            doc, pos = dec.raw_decode(text, pos)
            for th in doc.get("threads", []):
                # Frames shown before an error are printed as read: named right too.
                bare_labels += [fr.get("label") for fr in th.get("frames") or []
                                if bare(fr.get("label"))]
                if th.get("error") is not None:
                    marked += 1
                    if th.get("frames"):
                        cut += 1
                        print("%s: a stack cut after %d frames (%s): %s" % (
                            path, len(th["frames"]), th["error"],
                            " <- ".join(fr.get("label") or "?" for fr in th["frames"])))
                    continue
                checked += 1
                why = impossible(th.get("frames") or [], roots, calls)
                if why:
                    bad += 1
                    print("%s: impossible stack (%s): %s" % (
                        path, why, " <- ".join(fr.get("label") or "?"
                                              for fr in th["frames"])))
    for label in sorted(set(map(str, bare_labels))):
        print("a bare label, its class left out (read while it moved?): %s (%d times)"
              % (label, sum(1 for b in bare_labels if str(b) == label)))
    if bad or bare_labels or cut:
        return 1
    print(checked, marked)
    return 0


if __name__ == "__main__":
    sys.exit(main())
