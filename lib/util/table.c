/* table.c: hash tables for caches and interning (see table.h). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "util/table.h"

#define MAP_MIN 64

static int map_grow(struct rbi_map *m)
{
	size_t cap = m->cap ? m->cap * 2 : MAP_MIN;
	struct rbi_map_entry *e = calloc(cap, sizeof(*e));

	if (!e)
		return rbi_fail(RBI_NOMEM, "out of memory");
	for (size_t i = 0; i < m->cap; i++) {
		const struct rbi_map_entry *o = &m->e[i];
		size_t j;

		if (!(o->k[0] | o->k[1] | o->k[2]))
			continue;
		for (j = rbi_hash3(o->k[0], o->k[1], o->k[2]) & (cap - 1);
		     e[j].k[0] | e[j].k[1] | e[j].k[2]; j = (j + 1) & (cap - 1))
			;
		e[j] = *o;
	}
	free(m->e);
	m->e = e;
	m->cap = cap;
	return RBI_OK;
}

int rbi_map_put(struct rbi_map *m, uint64_t a, uint64_t b, uint64_t c, uint64_t v)
{
	int rc;

	if (!(a | b | c))
		return rbi_fail(RBI_INVAL, "the empty key");
	if ((m->n + 1) * 2 > m->cap && (rc = map_grow(m)))
		return rc;
	for (size_t i = rbi_hash3(a, b, c) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		struct rbi_map_entry *e = &m->e[i];

		if (e->k[0] == a && e->k[1] == b && e->k[2] == c) {
			e->v = v;
			return RBI_OK;
		}
		if (!(e->k[0] | e->k[1] | e->k[2])) {
			*e = (struct rbi_map_entry){ { a, b, c }, v };
			m->n++;
			return RBI_OK;
		}
	}
}

void rbi_map_clear(struct rbi_map *m)
{
	if (m->e)
		memset(m->e, 0, m->cap * sizeof(*m->e));
	m->n = 0;
}

void rbi_map_free(struct rbi_map *m)
{
	free(m->e);
	memset(m, 0, sizeof(*m));
}

/* Eight bytes a step: hashing every symbol name of a libruby with its
   .symtab (16,000 of them) byte by byte took 1 ms of a 3.6 ms command. */
uint64_t rbi_str_hash(const char *s, size_t len)
{
	uint64_t h = 0, w;
	size_t n = len;

	for (; n >= 8; s += 8, n -= 8) {
		memcpy(&w, s, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	w = 0;
	memcpy(&w, s, n);
	return rbi_hash3(h, w, len);
}

static int strtab_grow(struct rbi_strtab *t)
{
	size_t cap = t->cap ? t->cap * 2 : MAP_MIN;
	char **v = calloc(cap, sizeof(*v));

	if (!v)
		return RBI_NOMEM;
	for (size_t i = 0; i < t->cap; i++) {
		size_t j;

		if (!t->v[i])
			continue;
		for (j = rbi_str_hash(t->v[i], strlen(t->v[i])) & (cap - 1); v[j];
		     j = (j + 1) & (cap - 1))
			;
		v[j] = t->v[i];
	}
	free(t->v);
	t->v = v;
	t->cap = cap;
	return RBI_OK;
}

const char *rbi_strtab_intern(struct rbi_strtab *t, const char *s, size_t len)
{
	size_t i;

	if ((t->n + 1) * 2 > t->cap && strtab_grow(t))
		return NULL;
	for (i = rbi_str_hash(s, len) & (t->cap - 1); t->v[i]; i = (i + 1) & (t->cap - 1))
		if (!strncmp(t->v[i], s, len) && t->v[i][len] == '\0')
			return t->v[i];
	if (!(t->v[i] = malloc(len + 1)))
		return NULL;
	memcpy(t->v[i], s, len);
	t->v[i][len] = '\0';
	t->n++;
	t->bytes += len + 1;
	return t->v[i];
}

void rbi_strtab_free(struct rbi_strtab *t)
{
	for (size_t i = 0; i < t->cap; i++)
		free(t->v[i]);
	free(t->v);
	memset(t, 0, sizeof(*t));
}

const struct rbi_sample_frame *rbi_frametab_intern(struct rbi_frametab *t,
						   rbi_frame_kind kind,
						   const char *label,
						   const char *path, int line,
						   int first_line)
{
	struct rbi_sample_frame *f;
	const char *l, *p = NULL;
	uint64_t v, c;

	if (!label)
		label = "(unknown)";
	if (!(l = rbi_strtab_intern(&t->strs, label, strlen(label))) ||
	    (path && !(p = rbi_strtab_intern(&t->strs, path, strlen(path)))))
		return NULL;
	c = (uint64_t)(uint32_t)line | (uint64_t)(kind & 0xff) << 32 |
	    (uint64_t)((uint32_t)first_line & 0xffffff) << 40;
	if (rbi_map_get(&t->idx, (uintptr_t)l, (uintptr_t)p, c, &v))
		return t->v[v];
	if (!RBI_GROW(t->v, t->cap, t->n + 1, MAP_MIN))
		return NULL;
	if (!(f = calloc(1, sizeof(*f))))
		return NULL;
	*f = (struct rbi_sample_frame){
		.id = (uint32_t)t->n, .kind = kind, .label = l, .path = p,
		.line = line, .first_line = first_line,
	};
	if (rbi_map_put(&t->idx, (uintptr_t)l, (uintptr_t)p, c, t->n)) {
		free(f);
		return NULL;
	}
	t->v[t->n++] = f;
	return f;
}

void rbi_frametab_free(struct rbi_frametab *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i]);
	free(t->v);
	rbi_map_free(&t->idx);
	rbi_strtab_free(&t->strs);
	memset(t, 0, sizeof(*t));
}
