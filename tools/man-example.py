#!/usr/bin/env python3
"""man-example.py [--check] MANPAGE SOURCE: keep the EXAMPLES program of a
man page (the first .EX ... .EE block after ".SH EXAMPLES") equal to a C
source file.  Without --check, rewrite the block from SOURCE (escaped for
roff); with --check, exit 1 if the block does not read back as SOURCE."""
import sys


def escape(line):
    line = line.replace("\\", "\\e").replace("-", "\\-")
    line = line.replace("'", "\\(aq").replace("`", "\\(ga")
    return "\\&" + line if line.startswith((".", "'")) else line


def unescape(line):
    if line.startswith("\\&"):
        line = line[2:]
    line = line.replace("\\(aq", "'").replace("\\(ga", "`").replace("\\-", "-")
    return line.replace("\\e", "\\")


def block(lines):
    start = lines.index(".SH EXAMPLES")
    begin = lines.index(".EX", start) + 1
    return begin, lines.index(".EE", begin)


def main():
    args = [a for a in sys.argv[1:] if a != "--check"]
    page, source = args
    lines = open(page).read().split("\n")
    src = open(source).read().rstrip("\n").split("\n")
    begin, end = block(lines)
    if "--check" in sys.argv:
        if [unescape(l) for l in lines[begin:end]] != src:
            print("%s: the example differs from %s (run %s %s %s)" %
                  (page, source, sys.argv[0], page, source))
            sys.exit(1)
        return
    lines[begin:end] = [escape(l) for l in src]
    open(page, "w").write("\n".join(lines))


main()
