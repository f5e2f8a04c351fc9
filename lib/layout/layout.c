/* layout.c: choosing and checking struct layouts. */
#include <stddef.h>
#include <string.h>

#include "internal.h"
#include "layout/layout.h"

#define RBI_LAYOUT_DESC_(group, field, st, path, kind)                     \
	{ #group "." #field, st, path, RBI_FIELD_##kind,                  \
	  offsetof(struct rbi_layout, group##_##field) },

const struct rbi_layout_field_desc rbi_layout_fields[] = {
	RBI_LAYOUT_FIELDS(RBI_LAYOUT_DESC_)
};
const size_t rbi_layout_field_count = RBI_ARRAY_SIZE(rbi_layout_fields);

const struct rbi_layout *rbi_layout_table(int major, int minor, int teeny)
{
	const struct rbi_layout *best = NULL;

	for (size_t i = 0; rbi_layout_tables[i]; i++) {
		const struct rbi_layout *l = rbi_layout_tables[i];

		if (l->major != major || l->minor != minor)
			continue;
		/* Tables are sorted by version: the last one that starts at or
		   before TEENY; a patch release older than every table of its
		   family cannot happen (tables start at .0). */
		if (l->min_teeny <= teeny || !best)
			best = l;
	}
	return best;
}

/* A struct larger than this is not a Ruby struct we walk: garbage DWARF. */
#define STRUCT_SIZE_MAX (1u << 20)

int rbi_layout_validate(const struct rbi_layout *l)
{
	for (size_t i = 0; i < rbi_layout_field_count; i++) {
		const struct rbi_layout_field_desc *d = &rbi_layout_fields[i];
		uint32_t v = rbi_layout_get(l, i);

		if (v == RBI_ABSENT || d->kind == RBI_FIELD_CONST)
			continue;
		if (d->kind == RBI_FIELD_SIZE) {
			if (v == 0 || v > STRUCT_SIZE_MAX)
				return rbi_fail(RBI_LAYOUT, "layout (%s): %s = %u is not a "
						"plausible struct size", l->source, d->name, v);
			continue;
		}
		/* Offsets must lie inside their struct when its size is known. */
		for (size_t j = 0; j < rbi_layout_field_count; j++) {
			const struct rbi_layout_field_desc *s = &rbi_layout_fields[j];
			uint32_t size = rbi_layout_get(l, j);
			uint32_t bytes = d->kind == RBI_FIELD_BIT ? v / 8 : v;

			if (s->kind != RBI_FIELD_SIZE || size == RBI_ABSENT ||
			    strcmp(s->c_struct, d->c_struct))
				continue;
			if (bytes >= size)
				return rbi_fail(RBI_LAYOUT, "layout (%s): %s at %u is outside "
						"%s (%u bytes)", l->source, d->name, bytes,
						d->c_struct, size);
		}
	}
	return RBI_OK;
}
