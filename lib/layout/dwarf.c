/* dwarf.c: struct layouts from DWARF (libdw).
 *
 * One pass over the top-level DIEs of every CU finds the structs the field
 * list names (some are private to one .c file: rb_ractor_struct lives in
 * ractor.c's CU), and the enumerators it names, then each member path is
 * resolved through nested and anonymous structs and unions. */
#include <dwarf.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "layout/layout.h"

/* Distinct struct names in the field list; more than enough room. */
/* Nesting of anonymous members and member paths in Ruby's structs is
   shallow; a deeper chain means a cycle in broken DWARF. */
#define DEPTH_MAX 8

struct found {
	const char *name;
	Dwarf_Die die;
	bool have;
	bool enumerator;        /* NAME is an enumerator, DIE it */
};

/* Strip typedefs and qualifiers down to the underlying type. */
static bool die_type(Dwarf_Die *die, Dwarf_Die *out)
{
	Dwarf_Attribute a;
	Dwarf_Die cur = *die;

	for (int i = 0; i < DEPTH_MAX * 2; i++) {
		if (!dwarf_attr_integrate(&cur, DW_AT_type, &a) ||
		    !dwarf_formref_die(&a, out))
			return false;
		switch (dwarf_tag(out)) {
		case DW_TAG_typedef:
		case DW_TAG_const_type:
		case DW_TAG_volatile_type:
		case DW_TAG_atomic_type:
			cur = *out;
			continue;
		default:
			return true;
		}
	}
	return false;
}

static bool is_aggregate(Dwarf_Die *d)
{
	int tag = dwarf_tag(d);

	return tag == DW_TAG_structure_type || tag == DW_TAG_union_type;
}

static bool member_offset(Dwarf_Die *m, Dwarf_Word *off)
{
	Dwarf_Attribute a;

	*off = 0;
	if (!dwarf_attr(m, DW_AT_data_member_location, &a))
		return true;    /* union members */
	return dwarf_formudata(&a, off) == 0;
}

/* Bit offset of a bitfield member within its containing struct. */
static bool member_bit_offset(Dwarf_Die *m, Dwarf_Word *bits)
{
	Dwarf_Attribute a;
	Dwarf_Word byte_off, byte_size, bit_size, old;

	if (dwarf_attr(m, DW_AT_data_bit_offset, &a))
		return dwarf_formudata(&a, bits) == 0;
	if (!member_offset(m, &byte_off))
		return false;
	/* DWARF 2/3: DW_AT_bit_offset counts from the most significant bit
	   of the storage unit (little-endian: convert). */
	if (dwarf_attr(m, DW_AT_bit_offset, &a) && dwarf_formudata(&a, &old) == 0 &&
	    dwarf_attr(m, DW_AT_byte_size, &a) && dwarf_formudata(&a, &byte_size) == 0 &&
	    dwarf_attr(m, DW_AT_bit_size, &a) && dwarf_formudata(&a, &bit_size) == 0) {
		*bits = byte_off * 8 + byte_size * 8 - old - bit_size;
		return true;
	}
	*bits = byte_off * 8;
	return true;
}

/* Find member NAME (a single path component) in aggregate AGG, looking
   through anonymous members.  *OFF accumulates byte offsets. */
static bool find_member(Dwarf_Die *agg, const char *name, size_t namelen,
			Dwarf_Die *out, Dwarf_Word *off, int depth)
{
	Dwarf_Die m;

	if (depth > DEPTH_MAX || dwarf_child(agg, &m) != 0)
		return false;
	do {
		const char *mn;
		Dwarf_Word o;
		Dwarf_Die t;

		if (dwarf_tag(&m) != DW_TAG_member || !member_offset(&m, &o))
			continue;
		mn = dwarf_diename(&m);
		if (mn && strlen(mn) == namelen && !memcmp(mn, name, namelen)) {
			*out = m;
			*off += o;
			return true;
		}
		if (!mn && die_type(&m, &t) && is_aggregate(&t)) {
			Dwarf_Word inner = 0;

			if (find_member(&t, name, namelen, out, &inner, depth + 1)) {
				*off += o + inner;
				return true;
			}
		}
	} while (dwarf_siblingof(&m, &m) == 0);
	return false;
}

/* Resolve "a.b.c" in STRUCT_DIE to a byte (or, for BIT, bit) offset. */
static uint32_t resolve(Dwarf_Die *struct_die, const char *path, int kind)
{
	Dwarf_Die agg = *struct_die, m;
	Dwarf_Word off = 0;
	const char *p = path;

	if (kind == RBI_FIELD_SIZE) {
		Dwarf_Word size;

		return dwarf_aggregate_size(struct_die, &size) == 0 && size < RBI_ABSENT
		       ? (uint32_t)size : RBI_ABSENT;
	}
	for (int depth = 0; *p && depth < DEPTH_MAX; depth++) {
		size_t n = strcspn(p, ".");
		if (!find_member(&agg, p, n, &m, &off, 0))
			return RBI_ABSENT;
		p += n;
		if (*p == '.') {
			p++;
			if (!die_type(&m, &agg) || !is_aggregate(&agg))
				return RBI_ABSENT;
			continue;
		}
		if (kind == RBI_FIELD_BIT) {
			Dwarf_Word bits;
			Dwarf_Word mo;

			if (!member_offset(&m, &mo) || !member_bit_offset(&m, &bits))
				return RBI_ABSENT;
			/* OFF ends with the member's byte location MO; the
			   container starts at OFF - MO. */
			off = (off - mo) * 8 + bits;
		}
	}
	return *p || off >= RBI_ABSENT ? RBI_ABSENT : (uint32_t)off;
}

/* Record the wanted enumerators of top-level enum E. */
static void scan_enum(Dwarf_Die *e, struct found *want, size_t nwant)
{
	Dwarf_Die d;

	if (dwarf_child(e, &d) != 0)
		return;
	do {
		const char *name = dwarf_diename(&d);

		if (dwarf_tag(&d) != DW_TAG_enumerator || !name)
			continue;
		for (size_t i = 0; i < nwant; i++) {
			if (want[i].enumerator && !want[i].have && !strcmp(want[i].name, name)) {
				want[i].die = d;
				want[i].have = true;
			}
		}
	} while (dwarf_siblingof(&d, &d) == 0);
}

/* Record top-level aggregate definitions (or typedefs of them) whose name
   is wanted, and wanted enumerators.  The first complete definition wins. */
static void scan_cu(Dwarf_Die *cu, struct found *want, size_t nwant)
{
	Dwarf_Die d;

	if (dwarf_child(cu, &d) != 0)
		return;
	do {
		int tag = dwarf_tag(&d);
		const char *name;
		Dwarf_Die def;

		if (tag == DW_TAG_enumeration_type) {
			scan_enum(&d, want, nwant);
			continue;
		}
		if (tag != DW_TAG_structure_type && tag != DW_TAG_typedef &&
		    tag != DW_TAG_union_type)
			continue;
		if (!(name = dwarf_diename(&d)) || dwarf_hasattr(&d, DW_AT_declaration))
			continue;
		for (size_t i = 0; i < nwant; i++) {
			if (want[i].have || want[i].enumerator || strcmp(want[i].name, name))
				continue;
			def = d;
			if (tag == DW_TAG_typedef &&
			    (!die_type(&d, &def) || !is_aggregate(&def) ||
			     dwarf_hasattr(&def, DW_AT_declaration)))
				break;
			want[i].die = def;
			want[i].have = true;
			break;
		}
	} while (dwarf_siblingof(&d, &d) == 0);
}

/* The structs and the enumerators the field list names (at most one a
   field: WANT has room for rbi_layout_field_count). */
static size_t wanted_structs(struct found *want)
{
	size_t n = 0;

	for (size_t i = 0; i < rbi_layout_field_count; i++) {
		bool e = rbi_layout_fields[i].kind == RBI_FIELD_CONST;
		const char *s = e ? rbi_layout_fields[i].path : rbi_layout_fields[i].c_struct;
		size_t j;

		for (j = 0; j < n && (strcmp(want[j].name, s) || want[j].enumerator != e); j++)
			;
		if (j == n)
			want[n++] = (struct found){ .name = s, .enumerator = e };
	}
	return n;
}

/* An enumerator's value, if it fits a field. */
static uint32_t enumerator_value(Dwarf_Die *d)
{
	Dwarf_Attribute a;
	Dwarf_Sword v;

	if (!dwarf_attr(d, DW_AT_const_value, &a) || dwarf_formsdata(&a, &v) != 0 ||
	    v < 0 || v >= RBI_ABSENT)
		return RBI_ABSENT;
	return (uint32_t)v;
}

static bool all_found(const struct found *want, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!want[i].have)
			return false;
	return true;
}

int rbi_layout_from_dwarf(Dwarf *dw, struct rbi_layout *out)
{
	/* As many as the fields name: a fixed bound would drop the structs
	   past it without a word when the field list grows. */
	struct found *want = calloc(rbi_layout_field_count, sizeof(*want));
	size_t nwant;
	Dwarf_Off off = 0, next;
	size_t hsize;
	int rc = RBI_OK;

	if (!want)
		return rbi_fail(RBI_NOMEM, "out of memory");
	nwant = wanted_structs(want);

	while (!all_found(want, nwant) &&
	       dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;

		if (dwarf_offdie(dw, off + hsize, &cu))
			scan_cu(&cu, want, nwant);
		off = next;
	}
	memset(out, 0, sizeof(*out));
	out->source = "dwarf";
	for (size_t i = 0; i < rbi_layout_field_count; i++) {
		const struct rbi_layout_field_desc *d = &rbi_layout_fields[i];
		uint32_t *slot = (uint32_t *)((char *)out + d->offset);
		size_t j;

		bool e = d->kind == RBI_FIELD_CONST;
		const char *name = e ? d->path : d->c_struct;

		for (j = 0; j < nwant && (strcmp(want[j].name, name) || want[j].enumerator != e); j++)
			;
		if (j == nwant || !want[j].have)
			*slot = RBI_ABSENT;
		else
			*slot = e ? enumerator_value(&want[j].die)
				  : resolve(&want[j].die, d->path, d->kind);
	}
	if (out->vm_size == RBI_ABSENT || out->thread_size == RBI_ABSENT ||
	    out->cfp_size == RBI_ABSENT || out->ec_size == RBI_ABSENT)
		rc = rbi_fail(RBI_NO_LAYOUT, "DWARF does not describe Ruby's VM "
			      "structs (rb_vm_struct, rb_thread_struct)");
	free(want);
	return rc;
}
