/* table.h: hash tables for caches and interning (util/table.c).
 *
 *  - rbi_map: three 64-bit words -> one 64-bit word, open addressing.  The
 *    all-zero key is reserved (the empty slot): callers tag their keys.
 *  - rbi_strtab: interned strings: one copy of each, stable pointers.
 *  - rbi_frametab: interned struct rbi_sample_frame, stable pointers, dense
 *    ids (the frame's own id indexes rbi_frametab.v). */
#ifndef RBI_UTIL_TABLE_H
#define RBI_UTIL_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ruby-introspect.h"

struct rbi_map_entry {
	uint64_t k[3];
	uint64_t v;
};

struct rbi_map {
	struct rbi_map_entry *e;
	size_t cap;             /* a power of two, or 0 */
	size_t n;
};

static inline uint64_t rbi_hash3(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t h = a * 0x9e3779b97f4a7c15ull;

	h ^= (b + 0x632be59bd9b4e019ull) * 0xc2b2ae3d27d4eb4full;
	h ^= h >> 29;
	h += c * 0x165667b19e3779f9ull;
	h ^= h >> 32;
	h *= 0xd6e8feb86659fd93ull;
	h ^= h >> 32;
	return h;
}

/* A hash of the LEN bytes at S (a name: not NUL-terminated there). */
uint64_t rbi_str_hash(const char *s, size_t len);

/* True (and *V) if the key is present. */
static inline bool rbi_map_get(const struct rbi_map *m, uint64_t a, uint64_t b,
			       uint64_t c, uint64_t *v)
{
	if (!m->cap)
		return false;
	for (size_t i = rbi_hash3(a, b, c) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		const struct rbi_map_entry *e = &m->e[i];

		if (e->k[0] == a && e->k[1] == b && e->k[2] == c) {
			*v = e->v;
			return true;
		}
		if (!(e->k[0] | e->k[1] | e->k[2]))
			return false;
	}
}

/* Insert or replace.  RBI_NOMEM; RBI_INVAL for the all-zero key. */
int rbi_map_put(struct rbi_map *m, uint64_t a, uint64_t b, uint64_t c, uint64_t v);
/* Empty it (keeps its memory). */
void rbi_map_clear(struct rbi_map *m);
void rbi_map_free(struct rbi_map *m);

struct rbi_strtab {
	char **v;               /* slots, NULL = empty */
	size_t cap, n;
	size_t bytes;           /* of all strings, for bounds */
};

/* The interned copy of S[0..LEN) (a NUL is appended); NULL when out of
   memory. */
const char *rbi_strtab_intern(struct rbi_strtab *t, const char *s, size_t len);
void rbi_strtab_free(struct rbi_strtab *t);

struct rbi_frametab {
	struct rbi_sample_frame **v;    /* by id */
	size_t n, cap;
	struct rbi_map idx;
	struct rbi_strtab strs;
};

/* The interned frame with these fields (LABEL NULL: "(unknown)"), NULL when
   out of memory. */
const struct rbi_sample_frame *rbi_frametab_intern(struct rbi_frametab *t,
						   rbi_frame_kind kind,
						   const char *label,
						   const char *path, int line,
						   int first_line);
void rbi_frametab_free(struct rbi_frametab *t);

#endif
