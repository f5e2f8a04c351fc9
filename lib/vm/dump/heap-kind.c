/* heap-kind.c: what kind of internal object a heap object is, as
 * ObjectSpace.dump_all names it (objspace_dump.c dump_object): an IMEMO's
 * "imemo_type" (rb_imemo_name: the enumerator's name without "imemo_"),
 * a typed T_DATA's "struct" (its rb_data_type_t's wrap_struct_name).
 * The IMEMO types are enumerators of enum imemo_type, appended to from
 * one Ruby to the next (callinfo and callcache 3.0, constcache 3.1): the
 * layout gives their values, so a Ruby that renumbers them is read right
 * from its DWARF, never named by another's numbers. */
#include <inttypes.h>
#include <stdio.h>

#include "vm/heap/heap-iter.h"

/* The name of IMEMO type TYPE in layout L, NULL if L names none so. */
static const char *imemo_type_name(const struct rbi_layout *l, unsigned type)
{
	const struct { uint32_t value; const char *name; } names[] = {
		{ l->imemo_type_env, "env" }, { l->imemo_type_cref, "cref" },
		{ l->imemo_type_svar, "svar" }, { l->imemo_type_throw_data, "throw_data" },
		{ l->imemo_type_ifunc, "ifunc" }, { l->imemo_type_memo, "memo" },
		{ l->imemo_type_ment, "ment" }, { l->imemo_type_iseq, "iseq" },
		{ l->imemo_type_tmpbuf, "tmpbuf" }, { l->imemo_type_ast, "ast" },
		{ l->imemo_type_parser_strterm, "parser_strterm" },
		{ l->imemo_type_callinfo, "callinfo" }, { l->imemo_type_callcache, "callcache" },
		{ l->imemo_type_constcache, "constcache" },
	};

	for (size_t i = 0; i < RBI_ARRAY_SIZE(names); i++)
		if (names[i].value != RBI_ABSENT && names[i].value == type)
			return names[i].name;
	return NULL;
}

RBI_EXPORT int rbi_heap_object_kind(rbi_heap_iter *it, const struct rbi_heap_slot *s, char *buf,
				    size_t cap)
{
	const struct rbi_layout *l;
	uint64_t type, data;
	const char *name;
	bool embedded;

	if (!it || !s || !buf || !cap)
		return rbi_fail(RBI_INVAL, "no walk, slot or buffer");
	buf[0] = '\0';
	l = rbi_heap_iter_vm(it)->layout;
	if (s->type == RBI_T_IMEMO) {
		if (!(name = imemo_type_name(l, (unsigned)RBI_IMEMO_TYPE(s->flags))))
			return rbi_fail(RBI_UNSUPPORTED, "IMEMO type %u of 0x%" PRIx64 " is not "
					"named by this Ruby's layout", (unsigned)RBI_IMEMO_TYPE(s->flags),
					s->addr);
		snprintf(buf, cap, "%s", name);
		return RBI_OK;
	}
	if (!rbi_vm_typed_data(l, s, &type, &data, &embedded))
		return RBI_OK;
	return rbi_vm_data_type_name(rbi_heap_iter_target(it), type, buf, cap);
}
