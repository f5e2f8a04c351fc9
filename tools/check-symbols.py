#!/usr/bin/env python3
"""check-symbols.py BUILDDIR: the library's exported symbols against the
rule of lib/libruby-introspect.sym (the version script).

The rule: node LIBRUBY_INTROSPECT_<major>.<minor> holds the functions first
exported by version <major>.<minor> of the library; nodes come in order,
minors consecutive from <major>.1 (0.1 for 0.x), each inheriting the one
before; a node is never edited once a newer one exists; and the project's
version (meson.build) is <major>.<minor>.<patch> of the newest node: a
release that adds a function adds its node and raises the minor version.

Checked here, TAP (`meson test -C build symbols`):
  - the nodes are named, ordered and chained as the rule says, and the
    newest is meson's major.minor;
  - no symbol is listed twice, and every listed one is exported by the
    built library under its node's version (nm -D): no stale entries;
  - everything the library exports is listed (nothing leaks out through
    RBI_EXPORT without a node) and declared in include/ruby-introspect.h;
  - every global symbol defined by the library's objects, exported or
    not, has the rbi_ prefix: the CLI and tests link those objects
    statically, where another name can collide;
  - the man pages' .TH lines name the project's version.
"""
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SYMFILE = os.path.join(ROOT, "lib", "libruby-introspect.sym")
HEADER = os.path.join(ROOT, "include", "ruby-introspect.h")
NODE = re.compile(r"^LIBRUBY_INTROSPECT_(\d+)\.(\d+)$")

n = 0
failed = 0


def result(ok, what, details=()):
    global n, failed
    n += 1
    if not ok:
        failed += 1
    print(("ok %d - %s" if ok else "not ok %d - %s") % (n, what))
    for d in ([] if ok else list(details)[:20]):
        print("# " + d)


def parse_map(text):
    """[(node, [symbols], parent or None, has_local_star)] in file order."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    nodes = []
    for m in re.finditer(r"(\S+)\s*\{(.*?)\}\s*([^;\s]*)\s*;", text, re.S):
        name, body, parent = m.group(1), m.group(2), m.group(3) or None
        syms, local_star, section = [], False, None
        for tok in re.findall(r"[^\s;]+:|[^\s;]+", body):
            if tok.endswith(":"):
                section = tok[:-1]
            elif section == "local":
                local_star |= tok == "*"
            else:
                syms.append(tok)
        nodes.append((name, syms, parent, local_star))
    return nodes


def project_version(build):
    with open(os.path.join(build, "meson-info", "intro-projectinfo.json")) as f:
        return json.load(f)["version"]


def library(build):
    with open(os.path.join(build, "meson-info", "intro-targets.json")) as f:
        for t in json.load(f):
            if t["type"] == "shared library" and t["name"] == "ruby-introspect":
                return t["filename"][0]
    sys.exit("Bail out! no ruby-introspect shared library in " + build)


def objects(build):
    with open(os.path.join(build, "compile_commands.json")) as f:
        cmds = json.load(f)
    return [os.path.join(c["directory"], c["output"]) for c in cmds
            if os.path.basename(os.path.dirname(c.get("output", ""))).startswith(
                "libruby-introspect.so")]


def nm(args):
    return subprocess.run(["nm"] + args, capture_output=True, text=True,
                          check=True).stdout.splitlines()


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: check-symbols.py BUILDDIR")
    build = sys.argv[1]
    version = project_version(build)
    major, minor = (int(x) for x in version.split(".")[:2])
    with open(SYMFILE) as f:
        nodes = parse_map(f.read())

    # Names, order, chain, newest = meson's version.
    bad = []
    want_minor = 1
    prev = None
    for name, _, parent, _ in nodes:
        m = NODE.match(name)
        if not m:
            bad.append("%s: not LIBRUBY_INTROSPECT_<major>.<minor>" % name)
            continue
        if int(m.group(1)) != major or int(m.group(2)) != want_minor:
            bad.append("%s: expected LIBRUBY_INTROSPECT_%d.%d here" % (name, major, want_minor))
        if parent != prev:
            bad.append("%s inherits %s, expected %s" % (name, parent, prev))
        want_minor = int(m.group(2)) + 1 if m else want_minor + 1
        prev = name
    result(not bad and nodes, "the %d nodes are LIBRUBY_INTROSPECT_%d.1 on, in order, "
           "each inheriting the one before" % (len(nodes), major), bad)
    newest = nodes[-1][0] if nodes else None
    result(newest == "LIBRUBY_INTROSPECT_%d.%d" % (major, minor),
           "the newest node (%s) is the project's version %s" % (newest, version),
           ["a release that adds functions adds a node and raises the minor version "
            "in meson.build; one that adds none adds no node"])
    result(bool(nodes) and nodes[0][3] and not any(l for _, _, _, l in nodes[1:]),
           "the first node alone hides everything else (local: *)")

    # Each symbol once; each exported under its node.
    listed = {}
    twice = []
    for name, syms, _, _ in nodes:
        for s in syms:
            if s in listed:
                twice.append("%s in %s and %s" % (s, listed[s], name))
            listed[s] = name
    result(not twice, "no symbol is listed in two nodes (%d listed)" % len(listed), twice)

    lib = os.path.join(build, library(build))
    exported = {}
    for line in nm(["-D", "--defined-only", lib]):
        f = line.split()
        if len(f) < 3 or f[1] == "A":
            continue
        sym, _, ver = f[2].partition("@")
        exported[sym] = ver.lstrip("@")
    wrong = ["%s: exported as %s, listed in %s" % (s, exported.get(s, "nothing"), node)
             for s, node in sorted(listed.items()) if exported.get(s) != node]
    result(not wrong, "every listed symbol is exported under its node's version", wrong)
    unlisted = sorted(s for s in exported if s not in listed)
    result(not unlisted, "everything exported is listed in a node (%d exported)"
           % len(exported), unlisted)

    with open(HEADER) as f:
        header = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
    undeclared = sorted(s for s in exported if not re.search(r"\b%s\s*\(" % re.escape(s),
                                                              header))
    result(not undeclared, "everything exported is declared in ruby-introspect.h",
           undeclared)

    # The prefix, on every object of the library.
    unprefixed = []
    for o in objects(build):
        for line in nm(["-g", "--defined-only", "--format=posix", o]):
            f = line.split()
            # ASan's one-definition-rule indicators are the compiler's.
            if len(f) >= 2 and not f[0].startswith(("rbi_", "__odr_asan.")):
                unprefixed.append("%s: %s" % (os.path.basename(o), f[0]))
    result(not unprefixed, "every global symbol of the library's objects has the rbi_ "
           "prefix", unprefixed)

    stale = []
    for page in ("man/rbinspect.1", "man/libruby-introspect.3"):
        with open(os.path.join(ROOT, page)) as f:
            th = f.readline()
        if not re.search(r'"(rbinspect|libruby-introspect) %s"' % re.escape(version), th):
            stale.append("%s: %s" % (page, th.strip()))
    result(not stale, "the man pages carry the project's version %s" % version, stale)

    print("1..%d" % n)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
