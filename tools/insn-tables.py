#!/usr/bin/env python3
"""Generate lib/vm/vm/insn-tables.c: the YARV instruction tables of the Rubies
whose GC finds an iseq's VALUE operands by decoding its instructions
(rb_iseq_each_value, 2.7 to 3.2): per instruction its length in words and
its operand types.

Input: unpacked Ruby source trees (a release tarball carries the generated
insns.inc and insns_info.inc), each given as its own directory; the version
comes from the tree's version.h and include/ruby/version.h.  Read from
insns_info.inc: the operand type letters (enum ruby_insn_type_chars), the
lengths (insn_len's table, rb_vm_insn_len_info from 2.8 on) and the
operand types (insn_op_types' strings and offsets, rb_vm_insn_op_base and
rb_vm_insn_op_offset from 2.8 on); from insns.inc the instruction names.
The operand types are written as rbi_insn_op letters (insn-tables.h) by
their TS_ names, so a letter Ruby renames or adds cannot be misread: an
unknown TS_ name stops the script.  Ruby's own letters are kept too: from
3.0 on libruby exports its tables "for debuggers" (rb_vm_insn_len_info,
rb_vm_insn_op_base, rb_vm_insn_op_offset), and heap-dump checks them
against these.

Checked here, else the script fails: every table has VM_INSTRUCTION_SIZE
entries (the names' count), every length is 1 + the operand count, and
the second half (trace_X) has the operands of the first (X), which is what
rb_vm_insn_addr2insn's folding of a traced instruction onto its plain one
relies on.

usage: insn-tables.py RUBYSRC... > lib/vm/vm/insn-tables.c
"""
import os
import re
import sys

# TS_ names (vm_core.h / insns_info.inc) -> rbi_insn_op letters.
OPS = {
    "TS_VALUE": "V", "TS_ISEQ": "S", "TS_CDHASH": "H", "TS_IC": "K",
    "TS_IVC": "A", "TS_ISE": "T", "TS_ICVARC": "R", "TS_CALLDATA": "C",
    "TS_ID": "I", "TS_OFFSET": "O", "TS_LINDEX": "L", "TS_NUM": "N",
    "TS_FUNCPTR": "F", "TS_BUILTIN": "B", "TS_GENTRY": "G", "TS_VARIABLE": ".",
}


def fail(msg):
    sys.exit("insn-tables.py: " + msg)


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def version(src):
    teeny = re.search(r"#define RUBY_VERSION_TEENY (\d+)", read(os.path.join(src, "version.h")))
    inc = read(os.path.join(src, "include/ruby/version.h"))
    major = re.search(r"#define RUBY_API_VERSION_MAJOR (\d+)", inc)
    minor = re.search(r"#define RUBY_API_VERSION_MINOR (\d+)", inc)
    if not (teeny and major and minor):
        fail(f"{src}: no version")
    return int(major[1]), int(minor[1]), int(teeny[1])


def ints(body):
    return [int(x) for x in re.findall(r"\d+", body)]


def strings(body):
    """The C string literals of BODY, concatenated, "\\0" decoded."""
    out = ""
    for lit in re.findall(r'"((?:[^"\\]|\\.)*)"', body):
        out += lit.replace("\\0", "\0")
    if "\\" in out:
        fail("an escape other than \\0 in the operand strings")
    return out


def after(text, anchor, what):
    i = text.find(anchor)
    if i < 0:
        fail(f"no {what} ({anchor!r})")
    return text[i + len(anchor):]


def tables(src):
    info = read(os.path.join(src, "insns_info.inc"))
    names = re.findall(r"^\s*BIN\((\w+)\),\s*$", read(os.path.join(src, "insns.inc")), re.M)
    enum = after(info, "enum ruby_insn_type_chars {", "operand type letters")
    letters = {}
    for name, ch in re.findall(r"(TS_\w+)\s*=\s*'(.)'", enum.split("}", 1)[0]):
        if name not in OPS:
            fail(f"{src}: unknown operand type {name}")
        letters[ch] = OPS[name]
    if "const uint8_t rb_vm_insn_len_info[] = {" in info:
        lens = ints(after(info, "const uint8_t rb_vm_insn_len_info[] = {", "lengths").split("}", 1)[0])
        base = strings(after(info, "const char rb_vm_insn_op_base[] =", "operands").split(";", 1)[0])
        offs = ints(after(info, "const unsigned short rb_vm_insn_op_offset[] = {",
                          "operand offsets").split("}", 1)[0])
    else:
        body = after(info, "\ninsn_len(VALUE i)\n", "insn_len")
        lens = ints(after(body, "t[] = {", "lengths").split("}", 1)[0])
        body = after(info, "\ninsn_op_types(VALUE i)\n", "insn_op_types")
        base = strings(after(body, "x[] =", "operands").split(";", 1)[0])
        offs = ints(after(body, "y[] = {", "operand offsets").split("}", 1)[0])
    n = len(names)
    if not n or n % 2 or len(lens) != n or len(offs) != n:
        fail(f"{src}: {n} names, {len(lens)} lengths, {len(offs)} operand offsets")
    ops, raw = [], []
    for i in range(n):
        if offs[i] >= len(base):
            fail(f"{src}: {names[i]}'s operands past the strings")
        s = base[offs[i]:].split("\0", 1)[0]
        if any(c not in letters for c in s):
            fail(f"{src}: {names[i]} has an unknown operand type in {s!r}")
        ops.append("".join(letters[c] for c in s))
        if any(c in '"\\' for c in s):
            fail(f"{src}: {names[i]}'s operand letters {s!r} need escaping")
        raw.append(s)
        if lens[i] != 1 + len(s):
            fail(f"{src}: {names[i]} is {lens[i]} words with {len(s)} operands")
    half = n // 2
    for i in range(half):
        if names[half + i] != "trace_" + names[i] or ops[half + i] != ops[i]:
            fail(f"{src}: {names[half + i]} is not {names[i]} traced")
    return names, lens, ops, raw


def main():
    if len(sys.argv) < 2:
        fail("usage: insn-tables.py RUBYSRC... > insn-tables.c")
    out = ["/* Generated by tools/insn-tables.py from the insns.inc and insns_info.inc",
           "   of Ruby's release sources; do not edit. */",
           '#include "vm/vm/insn-tables.h"', ""]
    entries = []
    for src in sys.argv[1:]:
        (ma, mi, te) = version(src)
        names, lens, ops, raw = tables(src)
        tag = f"{ma}_{mi}_{te}"
        out.append(f"/* {ma}.{mi}.{te}: {len(names)} instructions, the second half traced. */")
        out.append(f"static const struct rbi_insn insns_{tag}[] = {{")
        for name, ln, op, r in zip(names, lens, ops, raw):
            out.append(f'\t{{ {ln}, "{op}", "{r}" }},{" " * max(1, 8 - 2 * len(op))}/* {name} */')
        out.append("};")
        out.append("")
        entries.append(f"\t{{ {ma}, {mi}, {te}, {len(names)}, insns_{tag} }},")
    out.append("const struct rbi_insn_table rbi_insn_tables[] = {")
    out += entries
    out.append("};")
    out.append(f"const size_t rbi_insn_tables_n = {len(entries)};")
    print("\n".join(out))


main()
