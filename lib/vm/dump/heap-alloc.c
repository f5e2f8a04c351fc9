/* heap-alloc.c: where a heap object was allocated, as the objspace
 * extension's allocation tracer recorded it
 * (ObjectSpace.trace_object_allocations_start; ext/objspace/
 * object_tracing.c, 2.7-3.4), for dump_all's "file", "line", "method"
 * and "generation" (objspace_dump.c dump_object: looked up with
 * objspace_lookup_allocation_info, an st_lookup of the object's address).
 *
 * The tracer's state is a struct traceobj_arg that objspace.so's static
 * tmp_trace_arg points to (0 until tracing is first asked for):
 *
 *   struct traceobj_arg { int running; int keep_remains;
 *                         VALUE newobj_trace, freeobj_trace;
 *                         st_table *object_table;  -- object -> allocation_info *
 *                         st_table *str_table; struct traceobj_arg *prev; };
 *   struct allocation_info { int living; VALUE flags, klass;
 *                            const char *path; unsigned long line;
 *                            const char *class_path; VALUE mid;
 *                            size_t generation; };
 *
 * the same in 2.7, 3.1, 3.3 and 3.4 (objspace.h, object_tracing.c), and
 * not in libruby's DWARF (the layout tables come from that): their
 * offsets are constants here, checked on every target by what they must
 * hold.  MID is rb_tracearg_method_id's Symbol (or nil), PATH and
 * CLASS_PATH C strings of the tracer's own string table.
 *
 * Finding tmp_trace_arg: by its symbol where objspace.so (or a static
 * Ruby) has a .symtab.  Debian strips objspace.so of it: then every word
 * of objspace.so's writable segment (.data, .bss, GOT: a few KiB) is
 * tried as a traceobj_arg, which it is only if its newobj_trace and
 * freeobj_trace are two T_DATA of type "tracepoint" whose rb_tp_t has
 * the event RUBY_INTERNAL_EVENT_NEWOBJ and FREEOBJ and, as its data, that
 * very struct (rb_tracepoint_new(0, event, newobj_i, arg)): a pointer
 * into objspace.so's own data that two tracepoints point back at is the
 * tracer's, and no other static of objspace.so points at it.  Two
 * different structs passing would be refused, never guessed between.
 * Tracing never started: no tracepoints, so nothing is found, and no
 * object gets allocation fields (dump_all's table is then empty too). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "vm/dump/heap-object.h"

/* struct traceobj_arg and struct allocation_info (see above). */
#define TRACE_RUNNING 0
#define TRACE_KEEP_REMAINS 4
#define TRACE_NEWOBJ 8
#define TRACE_FREEOBJ 16
#define TRACE_OBJECT_TABLE 24
#define TRACE_SIZE 48
#define INFO_PATH 24
#define INFO_LINE 32
#define INFO_CLASS_PATH 40
#define INFO_MID 48
#define INFO_GENERATION 56
#define INFO_SIZE 64
/* rb_tp_t: events (a uint32) first, then its words; DATA among the
   first eight (at 32 in 2.7-3.4). */
#define TP_WORDS 9
#define EVENT_NEWOBJ 0x100000u  /* RUBY_INTERNAL_EVENT_NEWOBJ */
#define EVENT_FREEOBJ 0x200000u /* RUBY_INTERNAL_EVENT_FREEOBJ */
/* Bounds: running is a count of nested starts; a writable segment of
   more than this is no extension's; traced objects past this are a torn
   table; a path or class path longer than this is cut. */
#define RUNNING_MAX (1 << 20)
#define SCAN_MAX (1u << 20)
#define TRACED_MAX (1ull << 28)
#define ALLOC_NAME_MAX 4096
#define MID_NAME_MAX RBI_NAME_MAX

/* What one walk found of the tracer (heap_object_scratch.alloc). */
struct heap_alloc {
	int rc;                 /* RBI_OK: INDEX holds the table; RBI_ITER_END:
				   no tracer (or never started); else why not */
	char err[RBI_ERRMSG_MAX];
	uint64_t arg;           /* the struct traceobj_arg */
	struct rbi_map index;   /* (object, 0, 0) -> its allocation_info */
	struct rbi_map names;   /* (pointer or Symbol, kind, 0) -> char * */
	struct rbi_strtab strs;
};

enum { NAME_CSTR = 1, NAME_MID };

void rbi_heap_alloc_free(struct heap_alloc *a)
{
	if (!a)
		return;
	rbi_map_free(&a->index);
	rbi_map_free(&a->names);
	rbi_strtab_free(&a->strs);
	free(a);
}

/* Is V a T_DATA of type "tracepoint" for EVENT whose data is ARG? */
static bool tracepoint_of(struct rbi_target *t, const struct rbi_vm *vm, uint64_t v,
			  uint32_t event, uint64_t arg)
{
	const struct rbi_layout *l = vm->layout;
	uint8_t head[RBI_OBJ_HEAD];
	uint64_t tp[TP_WORDS], type, data;
	struct rbi_heap_slot s = { .addr = v, .size = RBI_OBJ_HEAD, .bytes = head };
	char name[16];
	bool embedded;

	if (!rbi_vm_heap_p(vm, v) || rbi_read(t, v, head, sizeof(head)))
		return false;
	s.flags = rbi_get_u64(head, 0);
	s.type = (unsigned)(s.flags & RBI_T_MASK);
	if (s.type != RBI_T_DATA || !rbi_vm_typed_data(l, &s, &type, &data, &embedded) ||
	    rbi_vm_data_type_name(t, type, name, sizeof(name)) || strcmp(name, "tracepoint"))
		return false;
	if (rbi_read(t, embedded ? v + l->rtypeddata_data : data, tp, sizeof(tp)) ||
	    (uint32_t)tp[0] != event)
		return false;
	for (size_t i = 1; i < TP_WORDS; i++)
		if (tp[i] == arg)
			return true;
	return false;
}

/* Is ARG a struct traceobj_arg (see the top)?  Its tracepoints point back
   at it, and its object table is an st_table. */
static bool tracer_at(struct rbi_target *t, const struct rbi_vm *vm, uint64_t arg)
{
	uint8_t b[TRACE_SIZE];
	uint64_t newobj, freeobj;
	uint32_t running, keep;

	if (!arg || (arg & 7) || rbi_read(t, arg, b, sizeof(b)))
		return false;
	running = rbi_get_u32(b, TRACE_RUNNING);
	keep = rbi_get_u32(b, TRACE_KEEP_REMAINS);
	newobj = rbi_get_u64(b, TRACE_NEWOBJ);
	freeobj = rbi_get_u64(b, TRACE_FREEOBJ);
	return running <= RUNNING_MAX && keep <= 1 && newobj != freeobj &&
	       rbi_get_u64(b, TRACE_OBJECT_TABLE) && !(rbi_get_u64(b, TRACE_OBJECT_TABLE) & 7) &&
	       tracepoint_of(t, vm, newobj, EVENT_NEWOBJ, arg) &&
	       tracepoint_of(t, vm, freeobj, EVENT_FREEOBJ, arg);
}

/* Is IMG objspace.so (by its file name, any directory)? */
static bool is_objspace(const struct rbi_image *img)
{
	const char *slash = img->name ? strrchr(img->name, '/') : NULL;
	const char *base = slash ? slash + 1 : img->name;

	return base && !strcmp(base, "objspace.so");
}

/* The tracer of IMG by its symbol tmp_trace_arg into *ARG (0: none yet):
   RBI_OK, RBI_ITER_END without the symbol, RBI_CORRUPT if it points at
   no tracer. */
static int by_symbol(struct rbi_target *t, const struct rbi_vm *vm, const struct rbi_image *img,
		     uint64_t *arg)
{
	uint64_t addr, size;
	bool tls;
	int rc;

	if (rbi_image_symbol(img, "tmp_trace_arg", &addr, &size, &tls) || tls || size != 8)
		return RBI_ITER_END;
	if ((rc = rbi_read_u64(t, addr, arg)))
		return rc;
	if (*arg && !tracer_at(t, vm, *arg)) {
		/* Asked for (allocation_sourcefile, _clear) but never started:
		   no tracepoints, and no objects in its table. */
		uint8_t b[TRACE_SIZE];

		if (!rbi_read(t, *arg, b, sizeof(b)) && !rbi_get_u64(b, TRACE_NEWOBJ)) {
			*arg = 0;
			return RBI_OK;
		}
		return rbi_fail(RBI_CORRUPT, "tmp_trace_arg of %s (0x%" PRIx64 ") points at "
				"no allocation tracer", img->name, *arg);
	}
	return RBI_OK;
}

/* The tracer among the words of IMG's writable segment into *ARG (0:
   none): RBI_UNSUPPORTED when two structs pass. */
static int by_scan(struct rbi_target *t, const struct rbi_vm *vm, const struct rbi_image *img,
		   uint64_t *arg)
{
	uint64_t *words;
	size_t n;
	int rc;

	*arg = 0;
	if ((rc = rbi_vm_image_words(t, img, SCAN_MAX, &words, &n)))
		return rc == RBI_ITER_END ? RBI_OK : rc;
	for (size_t i = 0; i < n; i++) {
		uint64_t w = words[i];

		/* Pointers into the image itself (GOT, relocated data) are
		   no malloc'd struct. */
		if (!w || (w & 7) || (w >= img->start && w < img->end) || w == *arg ||
		    !tracer_at(t, vm, w))
			continue;
		if (*arg) {
			free(words);
			return rbi_fail(RBI_UNSUPPORTED, "two allocation tracers in %s's data "
					"(0x%" PRIx64 ", 0x%" PRIx64 "): not guessing", img->name,
					*arg, w);
		}
		*arg = w;
	}
	free(words);
	return RBI_OK;
}

/* The tracer of the target into A->arg: objspace.so's, or a static
   Ruby's (its symbol only). */
static int find_tracer(struct rbi_target *t, const struct rbi_vm *vm, struct heap_alloc *a)
{
	struct rbi_image_list *images;
	int rc;

	a->arg = 0;
	if ((rc = rbi_images_load(t, &images)))
		return rc;
	for (size_t i = 0; i < images->n; i++) {
		const struct rbi_image *img = &images->v[i];

		if (!is_objspace(img))
			continue;
		rc = by_symbol(t, vm, img, &a->arg);
		if (rc == RBI_ITER_END)
			rc = by_scan(t, vm, img, &a->arg);
		return rc;
	}
	rc = by_symbol(t, vm, vm->image, &a->arg);
	return rc == RBI_ITER_END ? RBI_OK : rc;
}

/* Index the tracer's object table: object -> allocation_info. */
static int index_table(struct rbi_target *t, const struct rbi_vm *vm, struct heap_alloc *a)
{
	const struct rbi_layout *l = vm->layout;
	struct rbi_st_entries e = { 0 };
	uint8_t hdr[RBI_HASH_TABLE_MAX];
	uint64_t table, key, rec;
	int rc;

	if (!rbi_vm_st_layout(l) || RBI_ST_HEADER_SIZE(l) > sizeof(hdr))
		return rbi_fail(RBI_UNSUPPORTED, "this Ruby's layout lacks st_table");
	if ((rc = rbi_read_u64(t, a->arg + TRACE_OBJECT_TABLE, &table)) ||
	    (rc = rbi_read(t, table, hdr, RBI_ST_HEADER_SIZE(l))) ||
	    (rc = rbi_vm_st_entries(t, l, hdr, TRACED_MAX, &e))) {
		free(e.words);
		return rbi_fail_context(rc, "reading the allocation tracer's table: ");
	}
	for (uint64_t i = 0; i < e.count; i++) {
		if (!rbi_vm_st_entry(l, &e, i, &key, &rec) || !key)
			continue;
		if ((rc = rbi_map_put(&a->index, key, 0, 0, rec)))
			break;
	}
	free(e.words);
	return rc;
}

/* The walk's tracer, looked for at the first call. */
static struct heap_alloc *walk_alloc(struct rbi_heap_iter *it)
{
	struct heap_object_scratch *sc = rbi_heap_iter_scratch(it);
	struct rbi_target *t = rbi_heap_iter_target(it);
	const struct rbi_vm *vm = rbi_heap_iter_vm(it);
	struct heap_alloc *a;
	int rc;

	if (sc->alloc)
		return sc->alloc;
	if (!(a = calloc(1, sizeof(*a))))
		return NULL;
	rc = find_tracer(t, vm, a);
	if (!rc)
		rc = a->arg ? index_table(t, vm, a) : RBI_ITER_END;
	a->rc = rc;
	if (rc && rc != RBI_ITER_END)
		snprintf(a->err, sizeof(a->err), "%s", rbi_errmsg());
	sc->alloc = a;
	return a;
}

/* The C string at P (the tracer's), interned; NULL for 0. */
static int cstr_at(struct rbi_target *t, struct heap_alloc *a, uint64_t p, const char **out)
{
	char buf[ALLOC_NAME_MAX];
	uint64_t v;
	int rc;

	*out = NULL;
	if (!p)
		return RBI_OK;
	if (rbi_map_get(&a->names, p, NAME_CSTR, 0, &v)) {
		*out = (const char *)(uintptr_t)v;
		return RBI_OK;
	}
	if ((rc = rbi_read_cstr(t, p, buf, sizeof(buf))))
		return rbi_fail_context(rc, "reading an allocation site's path: ");
	if (!(*out = rbi_strtab_intern(&a->strs, buf, strlen(buf))))
		return rbi_fail(RBI_NOMEM, "out of memory");
	return rbi_map_put(&a->names, p, NAME_CSTR, 0, (uint64_t)(uintptr_t)*out);
}

/* rb_sym2str of MID (a static or dynamic Symbol), interned; NULL for
   nil. */
static int mid_name(struct rbi_target *t, const struct rbi_vm *vm, struct heap_alloc *a,
		    uint64_t mid, const char **out)
{
	char buf[MID_NAME_MAX];
	uint64_t v;
	int rc;

	*out = NULL;
	if (!mid || mid == vm->k.qnil)
		return RBI_OK;
	if (rbi_map_get(&a->names, mid, NAME_MID, 0, &v)) {
		*out = (const char *)(uintptr_t)v;
		return RBI_OK;
	}
	if ((rc = rbi_vm_symbol_name(t, vm, mid, buf, sizeof(buf))))
		return rbi_fail_context(rc, "naming an allocation's method: ");
	if (!(*out = rbi_strtab_intern(&a->strs, buf, strlen(buf))))
		return rbi_fail(RBI_NOMEM, "out of memory");
	return rbi_map_put(&a->names, mid, NAME_MID, 0, (uint64_t)(uintptr_t)*out);
}

RBI_EXPORT int rbi_heap_object_alloc(rbi_heap_iter *it, const struct rbi_heap_slot *s,
				     struct rbi_heap_alloc *out)
{
	struct rbi_target *t;
	const struct rbi_vm *vm;
	struct heap_alloc *a;
	uint8_t b[INFO_SIZE];
	uint64_t rec;
	int rc;

	if (!it || !s || !out)
		return rbi_fail(RBI_INVAL, "no walk, slot or result");
	*out = (struct rbi_heap_alloc){ 0 };
	if ((rc = rbi_heap_scratch_open(it)))
		return rc;
	if (!(a = walk_alloc(it)))
		return rbi_fail(RBI_NOMEM, "out of memory");
	if (a->rc == RBI_ITER_END)
		return RBI_ITER_END;
	if (a->rc)
		return rbi_fail(a->rc, "%s", a->err);
	if (!rbi_map_get(&a->index, s->addr, 0, 0, &rec))
		return RBI_ITER_END;
	t = rbi_heap_iter_target(it);
	vm = rbi_heap_iter_vm(it);
	if ((rc = rbi_read(t, rec, b, sizeof(b))))
		return rbi_fail_context(rc, "reading the allocation site of 0x%" PRIx64 ": ",
					s->addr);
	out->line = rbi_get_u64(b, INFO_LINE);
	out->generation = rbi_get_u64(b, INFO_GENERATION);
	if ((rc = cstr_at(t, a, rbi_get_u64(b, INFO_PATH), &out->file)) ||
	    (rc = cstr_at(t, a, rbi_get_u64(b, INFO_CLASS_PATH), &out->class_path)) ||
	    (rc = mid_name(t, vm, a, rbi_get_u64(b, INFO_MID), &out->method)))
		return rc;
	return RBI_OK;
}
