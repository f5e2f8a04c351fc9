/* heapdiff.c: heap dumps compared (see heapdiff.h).
 *
 * A dump is read as it streams (heapfile/dumpfile.c).  Of a dump that is only looked up
 * just its addresses are kept; the dump whose objects are counted is
 * tallied by type and class as it is read, and its classes' names are
 * taken from its own CLASS and MODULE lines.  Memory grows with the
 * objects of the dumps looked up (a hash entry each), never with their
 * lines. */
#include <inttypes.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "heapfile/dumpfile.h"
#include "heapfile/heapdiff.h"
#include "internal.h"
#include "util/table.h"

struct heapdiff_state {
	struct rbi_strtab strings;      /* type and class names */
	struct rbi_map seen;            /* (address, 0, dump + 1) -> 1 */
	struct rbi_map names;           /* (class, 0, dump + 1) -> its name */
	struct rbi_map rows;            /* (type, class, side) -> row index */
};

/* One object line, as much of it as the comparison needs. */
struct line {
	uint64_t addr, klass, bytes;
	const char *type;       /* interned */
	const char *name;       /* a class's or module's own name, interned */
};

typedef int (*line_fn)(const struct line *l, void *arg);

static const char *str_field(struct heapdiff_state *st, struct json_object *o, const char *key)
{
	const char *s = rbi_dumpfile_str(o, key);

	return s ? rbi_strtab_intern(&st->strings, s, strlen(s)) : NULL;
}

struct each_object {
	struct heapdiff_state *st;
	const char *path;
	line_fn fn;
	void *arg;
};

/* One line of the dump: FN for an object, nothing for a line that is no
   object (ROOT, SHAPE: no address of the heap). */
static int object_line(struct json_object *o, uint64_t lineno, void *arg)
{
	struct each_object *e = arg;
	struct line l = { .addr = rbi_dumpfile_hex(o, "address"),
			  .klass = rbi_dumpfile_hex(o, "class"),
			  .bytes = rbi_dumpfile_bytes(o), .type = str_field(e->st, o, "type") };

	if (!l.type || !strcmp(l.type, "ROOT") || !strcmp(l.type, "SHAPE"))
		return RBI_OK;
	if (!l.addr)
		return rbi_fail(RBI_CORRUPT, "%s:%" PRIu64 ": an object without an address",
				e->path, lineno);
	if (!strcmp(l.type, "CLASS") || !strcmp(l.type, "MODULE"))
		l.name = str_field(e->st, o, "name");
	return e->fn(&l, e->arg);
}

/* Call FN for every object line of the dump at PATH. */
static int each_object(struct heapdiff_state *st, const char *path, line_fn fn, void *arg)
{
	struct each_object e = { .st = st, .path = path, .fn = fn, .arg = arg };

	return rbi_dumpfile_each(path, object_line, &e);
}

/* ---- what each pass does ------------------------------------------------- */

struct pass {
	struct heapdiff_state *st;
	struct heapdiff *d;
	int dump;               /* this file's index */
	int not_in, in;         /* tally objects not in dump NOT_IN and (if not
				   -1) in dump IN */
	int side;               /* 0: added, 1: died; -1: none */
	bool remember;          /* keep its addresses */
};

static bool seen(const struct heapdiff_state *st, int dump, uint64_t addr)
{
	uint64_t v;

	return rbi_map_get(&st->seen, addr, 0, (uint64_t)dump + 1, &v);
}

static int tally(struct pass *p, const struct line *l)
{
	struct heapdiff_row **v = p->side ? &p->d->died : &p->d->added;
	size_t *n = p->side ? &p->d->ndied : &p->d->nadded;
	uint64_t i;

	if (!rbi_map_get(&p->st->rows, (uint64_t)(uintptr_t)l->type, l->klass,
			 (uint64_t)p->side + 1, &i)) {
		size_t cap = *n;        /* grown one at a time: rows are few */

		i = *n;
		if (!RBI_GROW(*v, cap, i + 1, 64) ||
		    rbi_map_put(&p->st->rows, (uint64_t)(uintptr_t)l->type, l->klass,
				(uint64_t)p->side + 1, i))
			return rbi_fail(RBI_NOMEM, "out of memory");
		(*v)[i] = (struct heapdiff_row){ .type = l->type, .klass = l->klass };
		(*n)++;
	}
	(*v)[i].count++;
	(*v)[i].bytes += l->bytes;
	return RBI_OK;
}

static int pass_line(const struct line *l, void *arg)
{
	struct pass *p = arg;
	int rc;

	p->d->objects[p->dump]++;
	if (l->name && (rc = rbi_map_put(&p->st->names, l->addr, 0, (uint64_t)p->dump + 1,
					 (uint64_t)(uintptr_t)l->name)))
		return rc;
	if (p->remember &&
	    (rc = rbi_map_put(&p->st->seen, l->addr, 0, (uint64_t)p->dump + 1, 1)))
		return rc;
	if (p->side < 0 || seen(p->st, p->not_in, l->addr) ||
	    (p->in >= 0 && !seen(p->st, p->in, l->addr)))
		return RBI_OK;
	return tally(p, l);
}

/* Read dump DUMP at PATH: keep its addresses (REMEMBER), and tally into
   SIDE (-1: none) its objects not in dump NOT_IN and, unless IN is -1,
   in dump IN. */
static int run_pass(struct heapdiff_state *st, struct heapdiff *d, const char *path,
		    int dump, bool remember, int side, int not_in, int in)
{
	struct pass p = { .st = st, .d = d, .dump = dump, .side = side,
			  .not_in = not_in, .in = in, .remember = remember };

	d->objects[dump] = 0;
	return each_object(st, path, pass_line, &p);
}

/* ---- results ---------------------------------------------------------- */

static int cmp_row(const void *a, const void *b)
{
	const struct heapdiff_row *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return strcmp(x->type, y->type);
}

/* Each row's class name, from the dump its objects are in. */
static void finish_rows(struct heapdiff_state *st, struct heapdiff_row *v, size_t n, int dump)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t name;

		if (v[i].klass && rbi_map_get(&st->names, v[i].klass, 0, (uint64_t)dump + 1, &name))
			v[i].class_name = (const char *)(uintptr_t)name;
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_row);
}

int rbi_heapdiff_run(const char *const *paths, size_t n, struct heapdiff *out)
{
	struct heapdiff_state *st;
	int rc;

	*out = (struct heapdiff){ 0 };
	if (n != 2 && n != 3)
		return rbi_fail(RBI_INVAL, "two or three dumps, not %zu", n);
	if (!(st = calloc(1, sizeof(*st))))
		return rbi_fail(RBI_NOMEM, "out of memory");
	out->state = st;
	if (n == 2) {
		/* A's addresses; B's objects not in A, and B's addresses; A's
		   objects not in B. */
		if ((rc = run_pass(st, out, paths[0], 0, true, -1, -1, -1)) ||
		    (rc = run_pass(st, out, paths[1], 1, true, 0, 0, -1)) ||
		    (rc = run_pass(st, out, paths[0], 0, false, 1, 1, -1)))
			return rc;
		finish_rows(st, out->added, out->nadded, 1);
		finish_rows(st, out->died, out->ndied, 0);
		return RBI_OK;
	}
	/* Made between A and B, alive in C. */
	if ((rc = run_pass(st, out, paths[0], 0, true, -1, -1, -1)) ||
	    (rc = run_pass(st, out, paths[2], 2, true, -1, -1, -1)) ||
	    (rc = run_pass(st, out, paths[1], 1, false, 0, 0, 2)))
		return rc;
	finish_rows(st, out->added, out->nadded, 1);
	return RBI_OK;
}

void rbi_heapdiff_free(struct heapdiff *d)
{
	if (d->state) {
		rbi_strtab_free(&d->state->strings);
		rbi_map_free(&d->state->seen);
		rbi_map_free(&d->state->names);
		rbi_map_free(&d->state->rows);
		free(d->state);
	}
	free(d->added);
	free(d->died);
	*d = (struct heapdiff){ 0 };
}
