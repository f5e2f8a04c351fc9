#!/usr/bin/env python3
# embed.py NAME INPUT OUTPUT: write OUTPUT, a C file defining
#   const char NAME[] = "...contents of INPUT...";
# so a text file (lib/out/flamegraph.js) is built into the library.
import sys


def main():
    name, src, dst = sys.argv[1:4]
    data = open(src, "rb").read()
    out = [f"/* Generated from {src.split('/')[-1]} by tools/embed.py. */\n",
           f"extern const char {name}[];\n", f"const char {name}[] =\n"]
    for line in data.splitlines(keepends=True):
        s = "".join(c if 0x20 <= b < 0x7f and c not in '"\\?' else f"\\{b:03o}"
                    for b, c in ((b, chr(b)) for b in line))
        out.append(f'\t"{s}"\n')
    out.append('\t"";\n')
    open(dst, "w").write("".join(out))


if __name__ == "__main__":
    main()
