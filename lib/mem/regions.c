/* regions.c: a sorted snapshot of the backend's address-space regions. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "mem/target.h"

/* No real process has more mappings than this (vm.max_map_count defaults
   to 65530); a backend claiming more is broken. */
#define REGIONS_MAX (1u << 20)

void rbi_region_list_free(struct rbi_region_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free((char *)l->v[i].path);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

static int region_cmp(const void *a, const void *b)
{
	const struct rbi_region *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static int regions_load(struct rbi_target *t, struct rbi_region_list *l)
{
	size_t cap = 0;

	for (size_t i = 0; i < REGIONS_MAX; i++) {
		struct rbi_region r;
		unsigned before = rbi_fail_count();
		int rc = rbi_fail_unexplained(before, t->ops->region(t->be, i, &r),
					      "listing the target's memory regions");

		if (rc == RBI_ITER_END)
			break;
		if (rc)
			return rc;
		if (r.end <= r.start)
			continue;
		if (!RBI_GROW(l->v, cap, l->n + 1, 64))
			return rbi_fail(RBI_NOMEM, "out of memory");
		if (r.path && !(r.path = strdup(r.path)))
			return rbi_fail(RBI_NOMEM, "out of memory");
		l->v[l->n++] = r;
	}
	qsort(l->v, l->n, sizeof(*l->v), region_cmp);
	return RBI_OK;
}

int rbi_regions(struct rbi_target *t, const struct rbi_region_list **out)
{
	if (!t->regions.v) {
		int rc = regions_load(t, &t->regions);

		if (rc) {
			rbi_region_list_free(&t->regions);
			return rc;
		}
	}
	*out = &t->regions;
	return RBI_OK;
}

const struct rbi_region *rbi_region_find(const struct rbi_region_list *l,
					 uint64_t addr)
{
	size_t lo = 0, hi = l->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < l->v[mid].start)
			hi = mid;
		else if (addr >= l->v[mid].end)
			lo = mid + 1;
		else
			return &l->v[mid];
	}
	return NULL;
}
