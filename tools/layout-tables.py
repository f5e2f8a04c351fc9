#!/usr/bin/env python3
"""Generate lib/layout/tables/builtin.c: the built-in struct layout tables.

Input: a CSV of offsets per patch release (field rows, one column per
version; see ../shared/reference/ruby-offsets-x86_64-glibc.csv: struct layouts
computed from each release's headers, spot-checked against DWARF), and the
field list of lib/layout/layout.h (RBI_LAYOUT_FIELDS).  Consecutive patch
releases of one family with identical values share one table, tagged with
the first patch release it applies to (min_teeny), so a table exists per
layout change, never per release.

DWARF of a real build wins over the CSV: pass `--dwarf VERSION=FILE` (files
written by `tools/layout-dump LIBRUBY`) and that release's values
come from DWARF, with every disagreement reported on stderr.  Dumps kept
in lib/layout/tables/dwarf/VERSION.layout (beside LAYOUT_H's tables/) are
always applied, so the plain command below keeps them.  The dumps are
written by tools/layout-dump (built with the project): `layout-dump
LIBRUBY > lib/layout/tables/dwarf/VERSION.layout`.

Later patch releases (the carry-forward rule).  A dump describes one
release D, but Debian and others ship later patch releases of D's family
(3.4.11 where the dump is of 3.4.5), and fields the CSV lacks (the heap:
rb_objspace, heap_page, private to gc.c) would be absent for them.  So for
every release V after D in D's family (D the latest dump not after V),
each field takes D's DWARF value unless the CSV shows a change: when the
CSV has the field for V and its value differs from the CSV's value for D
(or the CSV lacks it for D), V keeps the CSV's value.  A field that
changed in a patch release without the CSV knowing would be wrong: the
walkers' structural checks at attach time (VM back-pointers, heap page
headers pointing back at their page) are the safety net, and DWARF of the
target itself always wins over any table.  Releases before D get nothing
from D.  The table's source string says where its values came from.

usage: layout-tables.py CSV LAYOUT_H [--dwarf 3.3.8=FILE ...] > builtin.c
"""
import csv
import glob
import os
import re
import sys

ABSENT = None

# Fields the CSV does not carry, with their value for a range of families
# (inclusive).  DWARF of a real build (--dwarf, tables/dwarf/) still wins,
# and disagreements are reported.
#   rb_iseq_constant_body.type: `enum iseq_type type` is the body's first
#     member in 2.6-4.0 (vm_core.h; DWARF of 2.7.4, 3.1.2, 3.3.8, 3.4.5).
#   rb_method_definition_struct.type: BITFIELD(rb_method_type_t, type,
#     VM_METHOD_TYPE_MINIMUM_BITS) is the struct's first member, bits 0-3
#     (method.h 2.6-4.0).
#   RClass.ptr, rb_classext_struct.iv_tbl: up to 3.1 struct RClass is
#     { basic, super, rb_classext_t *ptr, ... } and the classext starts
#     { st_table *iv_index_tbl; st_table *iv_tbl; ... } (internal.h 2.6,
#     internal/class.h 3.0-3.1; DWARF of 2.7.4 and 3.1.2).  3.1 built with
#     USE_RVARGC embeds the classext instead: its DWARF has no ptr.
#   rb_iseq_constant_body.local_table: right after insns_info (whose last
#     member, succ_index_table, the CSV has), 2.6-3.4 (vm_core.h; DWARF of
#     2.7.4, 3.1.2, 3.3.8; 3.4.5 source).  4.0 inserts a member before
#     parent_iseq: unknown without its DWARF.
#   rb_iseq_constant_body.local_table_size: after the `variable` struct,
#     which gains script_lines in 3.1 and moves with insns_info in 3.2
#     (DWARF: 232 in 2.7.4, 240 in 3.1.2, 232 in 3.3.8; 3.0 is 2.7's body,
#     3.2 and 3.4.5 are 3.3's, from their vm_core.h).  2.6 (ci/cc entries)
#     and 4.0 unknown.
#   RSymbol.fstr: { basic, hashval, fstr, id } (symbol.h 2.6-3.4; DWARF of
#     2.7.4, 3.1.2, 3.3.8).  RFloat.float_value: { basic, double } since 1.9.
#   RString.as.heap.aux.capa, RArray.as.heap.aux.capa: the capacity of a
#     buffer the object owns; { basic, [len,] ptr, aux } for String (len
#     moved out of `heap` in 3.2 without moving aux) and { basic, len, aux,
#     ptr } for Array (include/ruby/internal/core/rstring.h, rarray.h
#     2.6-3.4; DWARF of 2.7.4, 3.1.2, 3.3.8, 3.4.5).
#   RTypedData: { basic, type, typed_flag, data } (include/ruby/internal/
#     core/rtypeddata.h 2.6-3.4, ruby.h before; DWARF of 2.7.4, 3.1.2, 3.3.8,
#     3.4.5).  4.0 reworks it.  rb_fiber_struct (cont.c) is taken from the
#     dumps only: its members move between every release.
#   rb_env_t { flags, iseq, ep, env, env_size }, rb_proc_t { block, ... },
#     struct rb_block { as { captured { self, ep, code }, symbol, proc },
#     type }: unchanged 2.7-3.4 (vm_core.h of 2.7.4, 3.1.2, 3.3.8, 3.4.5
#     read, and their DWARF; 3.0 and 3.2 sit between identical neighbours).
#     rb_binding_t { block, pathobj, first_lineno } the same.
#   struct METHOD (proc.c) { recv, klass, iclass, me } in 2.7 and 3.1 (3.0
#     between them); 3.3 and 3.4 put owner before me (3.2 unread: absent).
#   rb_method_definition_struct's body members (iseq.iseqptr, iseq.cref,
#     attr.location, bmethod.proc, bmethod.hooks, alias.original_me,
#     refined.orig_me): 8 or 16, the same in 2.7.4, 3.1.2, 3.3.8 and 3.4.5
#     (DWARF); iseq_overload (bit 4) is new in 3.1, refined.owner (16) gone
#     in 3.3.  Only for those families: 3.0 and 3.2 are not known to have
#     either change or not, and a wrong absence would drop a reference.
#   rb_iseq_constant_body.builtin_attrs: new in 3.3 (before it, a bool
#     builtin_inline_p), 260 in 3.3 and 3.4 (DWARF of 3.3.8 and 3.4.5, which
#     share the body up to it); its C_TRACE bit is 3.4's.  4.0 unknown.
# Structs of a family a dump's values are not carried forward for (the
# carry-forward rule in the docstring): they changed within the family
# where the CSV cannot show it.
#   3.4 rb_class_cc_entries_entry: { argc, flag, cc } in 3.4.5 (DWARF),
#     { cc, argc, flag } in Debian's 3.4.11 (OBSERVED); which release
#     between them changed it is not known, so 3.4.6-3.4.10 have no value
#     without their own DWARF.
NOT_CARRIED = {((3, 4), "rb_class_cc_entries_entry")}

# Values of a release read from that release itself, where neither its
# DWARF nor its source could be had: applied after the carry-forward, a
# table of their own from that release on.  DWARF of the release (--dwarf,
# tables/dwarf/) still wins, disagreements reported.
#   3.4.11 rb_class_cc_entries_entry: { cc, argc, flag }, 16 bytes, in
#     Debian's 3.4.11-1~exp1 (libruby-3.4.so.3.4.11, build-id d9c7dd45...;
#     its source package, the mirror's current ruby3.4, is a 404 there and
#     it has no -dbgsym on the mirror).  Read in a live process of it
#     (testdata/programs/heap.rb) against its own ObjectSpace.dump_all:
#     with cc at 0 and 16-byte entries, every call cache the truth has in
#     classes' references (878, in 809 entry lists, 63 of them 2 or 3
#     long: the stride) is an imemo_callcache where heap-dump reads it,
#     and CLASS 760/762, MODULE 44/44, ICLASS 54/54 have dump_all's
#     references (the 2: call caches made after dump_all ran); the rest
#     of what heap-class.c reads (classext, m_tbl, const entries, cvar
#     entries, rb_class_cc_entries) matched with 3.4.5's values.  Its
#     machine code agrees: vm_ccs_push, inlined at 0x2a6dc4 of that
#     libruby (after the cc_tbl lookup), reads len at 4, capa at 0 and
#     entries at 16, scales the index by 16, stores the cc at +0, argc
#     (the packed ci's bits 1-15) at +8 and flag (bits 16-31) at +12; at
#     the same place 3.4.5's DWARF build stores argc at +0, flag at +4 and
#     cc at +8.  The struct has no ci in 3.4 (3.4.5's vm_callinfo.h): ci
#     stays absent.
OBSERVED = {
    "3.4.11": {("rb_class_cc_entries_entry", ""): 16,
               ("rb_class_cc_entries_entry", "cc"): 0},
}

# A value is one (first, last, offset) range or a list of them.
DEFAULTS = {
    ("rb_iseq_constant_body", "type"): ("2.6", "4.0", 0),
    ("rb_method_definition_struct", "type"): ("2.6", "4.0", 0),
    ("RClass", "ptr"): ("2.6", "3.1", 24),
    ("rb_classext_struct", "iv_tbl"): ("2.6", "3.1", 8),
    ("rb_iseq_constant_body", "local_table"): [("2.6", "3.1", 152),
                                               ("3.2", "3.4", 144)],
    ("rb_iseq_constant_body", "local_table_size"): [("2.7", "3.0", 232),
                                                    ("3.1", "3.1", 240),
                                                    ("3.2", "3.4", 232)],
    ("RSymbol", "fstr"): ("2.6", "3.4", 24),
    ("RFloat", "float_value"): ("2.6", "4.0", 16),
    ("RString", "as.heap.aux.capa"): ("2.6", "3.4", 32),
    ("RArray", "as.heap.aux.capa"): ("2.6", "3.4", 24),
    ("RTypedData", "type"): ("2.6", "3.4", 16),
    ("RTypedData", "typed_flag"): ("2.6", "3.4", 24),
    ("RTypedData", "data"): ("2.6", "3.4", 32),
    ("rb_iseq_constant_body", "builtin_attrs"): ("3.3", "3.4", 260),
    ("rb_env_t", "iseq"): ("2.7", "3.4", 8),
    ("rb_env_t", "ep"): ("2.7", "3.4", 16),
    ("rb_env_t", "env"): ("2.7", "3.4", 24),
    ("rb_env_t", "env_size"): ("2.7", "3.4", 32),
    ("rb_proc_t", "block"): ("2.7", "3.4", 0),
    ("rb_block", "as"): ("2.7", "3.4", 0),
    ("rb_block", "type"): ("2.7", "3.4", 24),
    ("rb_block", "as.captured.self"): ("2.7", "3.4", 0),
    ("rb_block", "as.captured.ep"): ("2.7", "3.4", 8),
    ("rb_block", "as.captured.code"): ("2.7", "3.4", 16),
    ("rb_binding_t", "block"): ("2.7", "3.4", 0),
    ("rb_binding_t", "pathobj"): ("2.7", "3.4", 32),
    ("METHOD", "recv"): [("2.7", "3.1", 0), ("3.3", "3.4", 0)],
    ("METHOD", "klass"): [("2.7", "3.1", 8), ("3.3", "3.4", 8)],
    ("METHOD", "iclass"): [("2.7", "3.1", 16), ("3.3", "3.4", 16)],
    ("METHOD", "owner"): ("3.3", "3.4", 24),
    ("METHOD", "me"): [("2.7", "3.1", 24), ("3.3", "3.4", 32)],
    ("rb_method_definition_struct", "iseq_overload"): [("3.1", "3.1", 4), ("3.3", "3.4", 4)],
    ("rb_method_definition_struct", "body.refined.owner"): [("2.7", "2.7", 16),
                                                            ("3.1", "3.1", 16)],
    ("rb_method_definition_struct", "body.iseq.iseqptr"): [("2.7", "2.7", 8), ("3.1", "3.1", 8), ("3.3", "3.4", 8)],
    ("rb_method_definition_struct", "body.iseq.cref"): [("2.7", "2.7", 16), ("3.1", "3.1", 16), ("3.3", "3.4", 16)],
    ("rb_method_definition_struct", "body.attr.location"): [("2.7", "2.7", 16), ("3.1", "3.1", 16), ("3.3", "3.4", 16)],
    ("rb_method_definition_struct", "body.bmethod.proc"): [("2.7", "2.7", 8), ("3.1", "3.1", 8), ("3.3", "3.4", 8)],
    ("rb_method_definition_struct", "body.bmethod.hooks"): [("2.7", "2.7", 16), ("3.1", "3.1", 16), ("3.3", "3.4", 16)],
    ("rb_method_definition_struct", "body.alias.original_me"): [("2.7", "2.7", 8), ("3.1", "3.1", 8), ("3.3", "3.4", 8)],
    ("rb_method_definition_struct", "body.refined.orig_me"): [("2.7", "2.7", 8), ("3.1", "3.1", 8), ("3.3", "3.4", 8)],
}


def vkey(v):
    return tuple(int(x) for x in v.split("."))


def family(v):
    return tuple(int(x) for x in v.split(".")[:2])


def default_for(key, v):
    d = DEFAULTS.get(key, [])
    for first, last, value in d if isinstance(d, list) else [d]:
        if family(first) <= family(v) <= family(last):
            return value
    return ABSENT



def layout_fields(header):
    text = open(header).read()
    body = text[text.index("#define RBI_LAYOUT_FIELDS(X)"):]
    body = body[:body.index("#define RBI_LAYOUT_MEMBER_")]
    pat = re.compile(r'X\((\w+),\s*(\w+),\s*"([^"]*)",\s*"([^"]*)",\s*(\w+)\)')
    return [m.groups() for m in pat.finditer(body)]


def csv_key(name):
    """Map a CSV row name to (struct, member path, kind)."""
    m = re.fullmatch(r"sizeof\((\w+)\)", name)
    if m:
        return (m.group(1), "", "SIZE")
    struct, _, path = name.partition(".")
    # bindgen renames Rust keywords (self_, as_, pub_, super_).
    path = ".".join(p.rstrip("_") if p != "_bitfield_1" else p
                    for p in path.split("."))
    if path == "_bitfield_1":
        return (struct, "status", "BIT")
    return (struct, path, "OFF")


def read_csv(path):
    rows = list(csv.reader(open(path)))
    versions = rows[0][1:]
    table = {v: {} for v in versions}
    for row in rows[1:]:
        struct, member, kind = csv_key(row[0])
        for v, cell in zip(versions, row[1:]):
            if cell == "":
                continue
            value = int(cell)
            if kind == "BIT":
                value *= 8      # status is bits 0-1 of the bitfield unit
            table[v][(struct, member)] = value
    return versions, table


def read_dump(path):
    """tools/layout-dump output: 'group.field value' lines."""
    values = {}
    for line in open(path):
        name, value = line.split()
        values[name] = None if value == "absent" else int(value)
    return values


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        sys.exit(__doc__)
    fields = layout_fields(args[1])
    versions, table = read_csv(args[0])
    dwarf = {}
    kept = os.path.join(os.path.dirname(args[1]), "tables", "dwarf", "*.layout")
    for path in sorted(glob.glob(kept)):
        dwarf[os.path.basename(path)[:-len(".layout")]] = read_dump(path)
    rest = args[2:]
    while rest:
        if rest[0] != "--dwarf" or len(rest) < 2:
            sys.exit(__doc__)
        ver, _, path = rest[1].partition("=")
        dwarf[ver] = read_dump(path)
        rest = rest[2:]

    def carried_from(v):
        """The latest dumped release of v's family before v, or None."""
        older = [d for d in dwarf if family(d) == family(v) and
                 vkey(d) < vkey(v)]
        return max(older, key=vkey) if older else None

    def csv_for(v):
        """The CSV's values for v, else (a release it lacks, as OBSERVED's
        may be) for the latest release of v's family before v it has."""
        if v in table:
            return table[v]
        older = [c for c in table if family(c) == family(v) and
                 vkey(c) < vkey(v)]
        return table[max(older, key=vkey)] if older else {}

    def values_for(v):
        vals, src = [], "offsets of %s from its headers" % v
        known = csv_for(v)
        for g, f, st, path, kind in fields:
            val = known.get((st, path), ABSENT)
            if val is ABSENT:
                val = default_for((st, path), v)
            vals.append(val)
        if v in dwarf:
            src = "DWARF of a %s build" % v
            for i, (g, f, st, path, kind) in enumerate(fields):
                d = dwarf[v].get("%s.%s" % (g, f), ABSENT)
                if vals[i] is not None and d != vals[i]:
                    print("layout %s %s.%s: csv %s, dwarf %s" %
                          (v, g, f, vals[i], d), file=sys.stderr)
                vals[i] = d
        elif carried_from(v):
            d = carried_from(v)
            src = "DWARF of a %s build, carried forward" % d
            known_d = table.get(d, {})
            for i, (g, f, st, path, kind) in enumerate(fields):
                csv_v = known.get((st, path), ABSENT)
                if csv_v is not ABSENT and csv_v != known_d.get((st, path), ABSENT):
                    continue        # the CSV shows a change since d
                if (family(v), st) in NOT_CARRIED:
                    continue
                vals[i] = dwarf[d].get("%s.%s" % (g, f), ABSENT)
        seen = OBSERVED.get(v, {})
        for i, (g, f, st, path, kind) in enumerate(fields):
            if (st, path) not in seen:
                continue
            if v in dwarf:
                if vals[i] != seen[(st, path)]:
                    print("layout %s %s.%s: observed %s, dwarf %s" %
                          (v, g, f, seen[(st, path)], vals[i]),
                          file=sys.stderr)
                continue
            vals[i] = seen[(st, path)]
        return vals, src

    all_versions = list(versions) + [v for v in list(dwarf) + list(OBSERVED)
                                     if v not in versions]
    all_versions = list(dict.fromkeys(all_versions))
    all_versions.sort(key=lambda v: tuple(int(x) for x in v.split(".")))
    groups = []     # (family, first version, last version, values, sources)
    for v in all_versions:
        vals, src = values_for(v)
        fam = ".".join(v.split(".")[:2])
        if groups and groups[-1][0] == fam and groups[-1][3] == vals:
            groups[-1][2] = v
            groups[-1][4].add(src)
            continue
        groups.append([fam, v, v, vals, {src}])

    out = sys.stdout
    out.write("/* Generated by tools/layout-tables.py: do not edit. */\n")
    out.write('#include "layout/layout.h"\n\n')
    names = []
    for fam, first, last, vals, srcs in groups:
        major, minor, teeny = (int(x) for x in first.split("."))
        name = "layout_%s" % first.replace(".", "_")
        names.append(name)
        rng = first if first == last else "%s-%s" % (first, last)
        dw = sorted(s for s in srcs if s.startswith("DWARF"))
        if dw and dw[-1].endswith("carried forward"):
            # "DWARF of a 3.4.5 build, carried forward" (+ the 3.4.5 dump).
            why = ("%s where the offsets from headers show no change" %
                   dw[-1])
        else:
            why = dw[0] if dw else ("offsets from headers, never checked "
                                    "against a real build")
        seen = [v for v in OBSERVED if v not in dwarf and
                 vkey(first) <= vkey(v) <= vkey(last)]
        for v in seen:
            why += "; %s as read in a live %s" % (
                ", ".join(sorted({st for st, path in OBSERVED[v]})), v)
        desc = "table %s (%s)" % (rng, why)
        out.write("static const struct rbi_layout %s = {\n" % name)
        out.write('\t.source = "%s",\n' % desc)
        out.write("\t.checked = %s,\n" % ("true" if dw else "false"))
        out.write("\t.major = %d, .minor = %d, .min_teeny = %d,\n" %
                  (major, minor, teeny))
        for (g, f, st, path, kind), val in zip(fields, vals):
            out.write("\t.%s_%s = %s,\n" %
                      (g, f, "RBI_ABSENT" if val is None else val))
        out.write("};\n\n")
    out.write("const struct rbi_layout *const rbi_layout_tables[] = {\n")
    for n in names:
        out.write("\t&%s,\n" % n)
    out.write("\tNULL,\n};\n")


main()
