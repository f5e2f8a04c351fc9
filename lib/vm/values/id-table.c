/* id-table.c: looking a name up in an rb_id_table (id_table.c, 2.4-3.4):
 * { int capa; int num; int used; item_t *items }, an open-addressed array
 * of capa items { id_key_t key; int collision; VALUE val }, the key an
 * ID's serial (0: an empty item).  The table is scanned whole rather than
 * probed: Ruby's probe sequence is its own business, and a scan of a few
 * hundred items costs one read.  Classes' constant tables and the global
 * variable table are such tables. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "vm/values/values.h"

/* Items read at most: Object's constant table holds a few thousand. */
#define ITEMS_MAX (1u << 20)
#define KEY_NAME_MAX 256

int rbi_vm_id_table_foreach(struct rbi_target *t, const struct rbi_vm *vm, uint64_t table,
			    rbi_vm_id_table_fn fn, void *arg)
{
	const struct rbi_layout *l = vm->layout;
	uint64_t items, isize = l->id_item_size;
	uint8_t *buf = NULL;
	size_t buf_cap = 0;
	int32_t capa;
	int rc;

	if (l->id_table_capa == RBI_ABSENT || l->id_table_items == RBI_ABSENT ||
	    isize == RBI_ABSENT || l->id_item_key == RBI_ABSENT || l->id_item_val == RBI_ABSENT ||
	    l->id_item_key + 4 > isize || l->id_item_val + 8 > isize)
		return rbi_fail(RBI_UNSUPPORTED, "this Ruby's layout has no rb_id_table");
	if (!table)
		return RBI_OK;
	if ((rc = rbi_read(t, table + l->id_table_capa, &capa, sizeof(capa))) ||
	    (rc = rbi_read_u64(t, table + l->id_table_items, &items)))
		return rc;
	if (capa < 0 || (uint32_t)capa > ITEMS_MAX || (capa && (!items || (items & 7))))
		return rbi_fail(RBI_CORRUPT, "an rb_id_table at 0x%" PRIx64 " claims %" PRId32
				" items at 0x%" PRIx64, table, capa, items);
	if (!RBI_GROW(buf, buf_cap, (size_t)capa * isize, 1))
		return rbi_fail(RBI_NOMEM, "out of memory");
	if (capa && (rc = rbi_read(t, items, buf, (size_t)capa * isize))) {
		free(buf);
		return rc;
	}
	for (int32_t i = 0; i < capa && !rc; i++) {
		const uint8_t *item = buf + (size_t)i * isize;
		uint32_t key = rbi_get_u32(item, l->id_item_key);

		if (key)
			rc = fn(key, rbi_get_u64(item, l->id_item_val), arg);
	}
	free(buf);
	return rc;
}

struct find {
	struct rbi_target *t;
	const struct rbi_vm *vm;
	const char *name;
	uint64_t *value;
	char *names;
	size_t cap, used;
};

static int find_item(uint32_t serial, uint64_t value, void *arg)
{
	struct find *f = arg;
	char key_name[KEY_NAME_MAX];
	int n;

	if (rbi_vm_serial_name(f->t, f->vm, serial, key_name, sizeof(key_name), NULL))
		return RBI_OK;
	if (!strcmp(key_name, f->name)) {
		*f->value = value;
		return RBI_ITER_END;
	}
	if (f->names && f->used < f->cap) {
		n = snprintf(f->names + f->used, f->cap - f->used, "%s%s", f->used ? ", " : "",
			     key_name);
		f->used += n > 0 ? (size_t)n : 0;
	}
	return RBI_OK;
}

int rbi_vm_id_table_find(struct rbi_target *t, const struct rbi_vm *vm, uint64_t table,
			 const char *name, uint64_t *value, char *names, size_t cap)
{
	struct find f = { t, vm, name, value, names, cap, 0 };
	int rc;

	if (names && cap)
		names[0] = '\0';
	rc = rbi_vm_id_table_foreach(t, vm, table, find_item, &f);
	if (rc == RBI_ITER_END)
		return RBI_OK;          /* found: find_item stopped the walk */
	return rc ? rc : rbi_fail(RBI_ITER_END, "no \"%s\"", name);
}
