/* cmd-heap-dump.c: `heap-dump [-o FILE] [--pause] [--strings[=N]]`: every
 * object of the heap, one JSON object per line, in the format of the
 * target's own ObjectSpace.dump_all, so that the tools made for it read
 * it.  The walk streams: what it holds does not grow with the heap.
 *
 * First the ROOT lines (rbi_heap_roots_foreach): global_tbl,
 * machine_context, vm (a part of dump_all's) and vm_stack (each thread's
 * VM stack, which dump_all reaches through Thread objects).  Then, as
 * dump_all of 3.3-3.4, a SHAPE line per object shape
 * (rbi_heap_shapes_foreach; 3.2's shapes are not read: the summary says
 * so).  Written per object (rbi_heap_object_read; rbi_heap_object_gc_flags
 * and rbi_heap_object_memsize for "flags" and "memsize"): address, type,
 * shape_id (3.3-3.4), slot_size (3.2+), class, frozen; a String's embedded, fstring, shared, bytesize,
 * encoding (of the three Ruby numbers alike), coderange and, with
 * --strings, value; an Array's length, shared, embedded; a class's or
 * module's name; an Object's ivars and a Hash's size and default; the
 * references of Arrays, Objects, Hashes, Structs, Strings, Floats,
 * Bignums, Symbols, Rationals, Complexes, Regexps, MatchData, Files, Procs,
 * Bindings, Methods, Times, ARGF, Monitors, autoload's data, environments,
 * method entries, the other internal objects lib/vm/dump/heap-refs.c,
 * heap-imemo.c and heap-iseq.c read, classes, modules and include
 * wrappers; where ObjectSpace.trace_object_allocations recorded it, an
 * object's file, line, method and generation (rbi_heap_object_alloc).
 * Where this Ruby's layout lacks what Objects',
 * Hashes', Structs' and classes' are read with (3.2's object shapes; a
 * Ruby without a table from DWARF), or how its GC marks classes was not
 * read, the summary says so. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <string.h>

#include "internal.h"
#include "out/out.h"
#include "rbinspect.h"

#define USAGE "heap-dump [-o FILE] [--pause] [--strings[=N]]"
/* --strings without N: the most bytes of one String's value. */
#define STRINGS_DEFAULT 65536ul
#define STRINGS_MAX (1ul << 30)
/* An rb_data_type_t's name, read up to this (Ruby's are short words). */
#define KIND_MAX 256

/* Where dump_all's lines differ between Ruby versions (seen in the
   dumps of Debian's 2.7, 3.1, 3.3 and 3.4; 3.2 is taken to be 3.3's). */
struct dump_format {
	bool slot_size;         /* "slot_size" (3.2+: variable width slots) */
	bool array_embedded;    /* an empty Array's "embedded" too (3.2+) */
	bool imemo_class;       /* an IMEMO's klass word as its "class" (<= 3.1) */
	bool empty_value;       /* "value":"" for an empty String (<= 3.1) */
	bool class_path;        /* a class's "name" is rb_class_path of its real
				   class, anonymous ones too (<= 3.0); else its
				   own permanent name, "real_class_name" and
				   "singleton" */
	bool alloc_always;      /* an allocation site's "file" and "line" even
				   when none was recorded (<= 3.0: printf's
				   "(null)" and 0); else only those recorded */
};

static struct dump_format format_for(const struct rbi_ruby_info *ri)
{
	bool v31 = ri->major > 3 || (ri->major == 3 && ri->minor >= 1);
	bool v32 = ri->major > 3 || (ri->major == 3 && ri->minor >= 2);

	return (struct dump_format){ .slot_size = v32, .array_embedded = v32,
				     .imemo_class = !v32, .empty_value = !v32,
				     .class_path = !v31, .alloc_always = !v31 };
}

struct heap_dump {
	struct session *s;
	struct heap_walk w;
	const char *path;
	unsigned long value_max;
	struct dump_format fmt;
	FILE *f;
	struct rbi_json j;      /* the only writer of F, buffered in
				   out_buf */
	FILE *out;              /* the output; F is a staging file instead
				   while a paused process waits for it */
	uint64_t objects, unreadable;
	uint64_t objects_unread, hashes_unread, structs_unread;  /* references
						    not known */
	uint64_t classes_unread;        /* and classes, modules, wrappers */
	uint64_t genivar, genivar_unread;       /* objects with generic
					   instance variables: read, not */
	char genivar_err[256];          /* why not, the first time */
	uint64_t no_memsize, no_flags;  /* objects written without them */
	uint64_t no_kind;               /* IMEMOs and T_DATA without their kind */
	uint64_t allocs, no_alloc;      /* objects written with their allocation
					   site, without it (unreadable) */
	char alloc_err[256];            /* why, the first time */
	unsigned roots;         /* ROOT lines written */
	uint64_t shapes;        /* SHAPE lines written */
	uint64_t shapes_unnamed, shapes_no_edges;      /* written without
					   edge_name, without edges and memsize */
	char shapes_missing[256];       /* why there are none, for the summary */
	char roots_missing[512];        /* what the roots leave out, for the
					   summary */
};

/* The JSON writer's buffer (static: the file is closed before
   cmd_heap_dump returns). */
static char out_buf[1 << 18];

/* Whether O is of dump_all's type NAME: the first letter tells most
   apart without a call. */
static inline bool type_is(const struct rbi_heap_object *o, const char *name)
{
	return o->type_name[0] == name[0] && !strcmp(o->type_name, name);
}

/* rb_class_path of an anonymous class or module. */
static void anonymous_path(struct rbi_json *j, const struct rbi_heap_object *o, uint64_t k)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "#<%s:0x%016" PRIx64 ">",
		 !type_is(o, "MODULE") ? "Class" : "Module", k);
	rbi_json_cstr(j, buf);
}

/* A name cut to the 4 KiB read: "name_cut", the bytes left out (not in
   dump_all's format, which has every name whole). */
static void name_cut(struct rbi_json *j, uint64_t cut)
{
	if (cut) {
		rbi_json_key(j, "name_cut"); rbi_json_int(j, (int64_t)cut);
	}
}

static void class_name(struct heap_dump *d, struct rbi_json *j, const struct rbi_heap_slot *s,
		       const struct rbi_heap_object *o)
{
	uint64_t cut, real_cut;

	if (!type_is(o, "CLASS") && !type_is(o, "MODULE"))
		return;
	if (!o->klass)
		return;         /* dump_all names only classes with a class */
	rbi_heap_object_name_cut(d->w.it, &cut, &real_cut);
	if (d->fmt.class_path) {
		if (!o->real_class)
			return;
		rbi_json_key(j, "name");
		if (o->real_class != s->addr && o->real_class_name) {
			rbi_json_cstr(j, o->real_class_name);
			name_cut(j, real_cut);
		} else if (o->real_class == s->addr && o->name) {
			rbi_json_cstr(j, o->name);
			name_cut(j, cut);
		} else {
			anonymous_path(j, o, o->real_class);
		}
		return;
	}
	if (o->name) {
		rbi_json_key(j, "name"); rbi_json_cstr(j, o->name);
		name_cut(j, cut);
	} else if (o->real_class_name) {
		rbi_json_key(j, "real_class_name"); rbi_json_cstr(j, o->real_class_name);
		name_cut(j, real_cut);
	}
	if (o->singleton) {
		rbi_json_key(j, "singleton"); rbi_json_bool(j, true);
	}
}

/* "memsize" where it can be computed, and "flags" (dump_all names the
   ones set, in this order, and writes none when none is). */
static void gc_fields(struct heap_dump *d, struct rbi_json *j, const struct rbi_heap_slot *s)
{
#define FLAG(bit, name) { bit, name, sizeof(name) - 1 }
	static const struct { unsigned bit; const char *name; size_t len; } names[] = {
		FLAG(RBI_GC_WB_PROTECTED, "wb_protected"), FLAG(RBI_GC_OLD, "old"),
		FLAG(RBI_GC_UNCOLLECTIBLE, "uncollectible"), FLAG(RBI_GC_MARKING, "marking"),
		FLAG(RBI_GC_MARKED, "marked"), FLAG(RBI_GC_PINNED, "pinned"),
	};
#undef FLAG
	uint64_t memsize;
	unsigned flags;

	if (rbi_heap_object_memsize(d->w.it, s, &memsize) == RBI_OK) {
		rbi_json_key(j, "memsize"); rbi_json_int(j, (int64_t)memsize);
	} else {
		d->no_memsize++;
	}
	if (rbi_heap_object_gc_flags(d->w.it, s, &flags) != RBI_OK) {
		d->no_flags++;
		return;
	}
	if (!flags)
		return;
	rbi_json_key(j, "flags");
	rbi_json_object(j);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (flags & names[i].bit) {
			rbi_json_key_n(j, names[i].name, names[i].len);
			rbi_json_bool(j, true);
		}
	rbi_json_end_object(j);
}

/* An IMEMO's "imemo_type", a typed T_DATA's "struct"; what could not be
   read, counted for the summary. */
static void kind_field(struct heap_dump *d, struct rbi_json *j, const struct rbi_heap_slot *s,
		       const struct rbi_heap_object *o)
{
	bool imemo = type_is(o, "IMEMO");
	char kind[KIND_MAX];

	if (!imemo && !type_is(o, "DATA"))
		return;
	if (rbi_heap_object_kind(d->w.it, s, kind, sizeof(kind))) {
		d->no_kind++;
		return;
	}
	if (kind[0]) {
		rbi_json_key(j, imemo ? "imemo_type" : "struct");
		rbi_json_cstr(j, kind);
	}
}

/* Count the objects with generic instance variables, and why those not
   read were not (the first time). */
static void generic_ivars(struct heap_dump *d)
{
	uint64_t n;
	int rc = rbi_heap_object_generic_ivars(d->w.it, &n);

	if (rc == RBI_ITER_END)
		return;
	if (!rc) {
		d->genivar++;
		return;
	}
	if (!d->genivar_unread++)
		snprintf(d->genivar_err, sizeof(d->genivar_err), "%s", rbi_errmsg());
}

/* Where ObjectSpace.trace_object_allocations saw it allocated: dump_all's
   "file", "line", "method" and "generation" (objspace_dump.c dump_object,
   after the references). */
static void alloc_fields(struct heap_dump *d, struct rbi_json *j, const struct rbi_heap_slot *s)
{
	struct rbi_heap_alloc a;
	int rc = rbi_heap_object_alloc(d->w.it, s, &a);

	if (rc == RBI_ITER_END)
		return;
	if (rc) {
		if (!d->no_alloc++)
			snprintf(d->alloc_err, sizeof(d->alloc_err), "%s", rbi_errmsg());
		return;
	}
	if (a.file || d->fmt.alloc_always) {
		rbi_json_key(j, "file"); rbi_json_cstr(j, a.file ? a.file : "(null)");
	}
	if (a.line || d->fmt.alloc_always) {
		rbi_json_key(j, "line"); rbi_json_int(j, (int64_t)a.line);
	}
	if (a.method) {
		rbi_json_key(j, "method"); rbi_json_cstr(j, a.method);
	}
	rbi_json_key(j, "generation"); rbi_json_int(j, (int64_t)a.generation);
	d->allocs++;
}

static void object_line(struct heap_dump *d, const struct rbi_heap_slot *s,
			const struct rbi_heap_object *o)
{
	struct rbi_json *j = &d->j;

	rbi_json_restart(j);
	rbi_json_object(j);
	rbi_json_key(j, "address"); rbi_json_addr(j, s->addr);
	rbi_json_key(j, "type"); rbi_json_cstr(j, o->type_name);
	uint64_t klass = o->klass;
	uint32_t shape_id;

	if (rbi_heap_object_shape_id(d->w.it, s, &shape_id) == RBI_OK) {
		rbi_json_key(j, "shape_id"); rbi_json_int(j, shape_id);
	}

	if (d->fmt.imemo_class && type_is(o, "IMEMO"))
		klass = s->klass;
	if (d->fmt.slot_size) {
		rbi_json_key(j, "slot_size"); rbi_json_int(j, s->size);
	}
	if (klass) {
		rbi_json_key(j, "class"); rbi_json_addr(j, klass);
	}
	if (o->frozen) {
		rbi_json_key(j, "frozen"); rbi_json_bool(j, true);
	}
	if (o->embedded && (o->coderange || d->fmt.array_embedded || o->length > 0)) {
		rbi_json_key(j, "embedded"); rbi_json_bool(j, true);
	}
	if (o->fstring) {
		rbi_json_key(j, "fstring"); rbi_json_bool(j, true);
	}
	if (o->shared) {
		rbi_json_key(j, "shared"); rbi_json_bool(j, true);
	}
	if (o->length >= 0) {
		rbi_json_key(j, o->coderange ? "bytesize" : "length");
		rbi_json_int(j, o->length);
	}
	if (o->value || (d->fmt.empty_value && d->value_max && o->length == 0 && o->coderange)) {
		rbi_json_key(j, "value"); rbi_json_str(j, o->value ? o->value : "", o->value_len);
		if (o->value_cut) {
			rbi_json_key(j, "value_cut"); rbi_json_bool(j, true);
		}
	}
	/* dump_all leaves ASCII-8BIT out. */
	if (o->encoding && o->encoding_index != 0) {
		rbi_json_key(j, "encoding"); rbi_json_cstr(j, o->encoding);
	}
	if (o->coderange) {
		rbi_json_key(j, "coderange"); rbi_json_cstr(j, o->coderange);
	}
	class_name(d, j, s, o);
	kind_field(d, j, s, o);
	if (o->ivars >= 0) {
		rbi_json_key(j, "ivars"); rbi_json_int(j, o->ivars);
	}
	if (o->entries >= 0) {
		rbi_json_key(j, "size"); rbi_json_int(j, o->entries);
	}
	if (o->default_proc) {
		rbi_json_key(j, "default"); rbi_json_addr(j, o->default_proc);
	}
	if (o->nrefs) {
		rbi_json_key(j, "references");
		rbi_json_array(j);
		for (size_t i = 0; i < o->nrefs; i++)
			rbi_json_addr(j, o->refs[i]);
		rbi_json_end_array(j);
	}
	alloc_fields(d, j, s);
	gc_fields(d, j, s);
	rbi_json_end_object(j);     /* and the line's end */
}

/* A root's line as dump_all writes it (none for a root without
   references); what it could not read or leaves out, to the summary. */
static int root_line(const struct rbi_heap_root *root, void *arg)
{
	struct heap_dump *d = arg;
	size_t used = strlen(d->roots_missing);
	struct rbi_json *j = &d->j;

	if (root->error || root->note[0])
		snprintf(d->roots_missing + used, sizeof(d->roots_missing) - used, "%s%s: %s",
			 used ? "; " : "", root->name, root->error ? root->error_msg : root->note);
	if (!root->nrefs)
		return 0;
	rbi_json_restart(j);
	rbi_json_object(j);
	rbi_json_key(j, "type"); rbi_json_cstr(j, "ROOT");
	rbi_json_key(j, "root"); rbi_json_cstr(j, root->name);
	/* The references of T_DATA and internal objects other than those
	   read (Procs, Bindings, Methods, Times..., environments, method
	   entries, call caches...: lib/vm/dump/heap-object.c) are not written:
	   what they hold looks unreferenced (heap top and heap retainers
	   then start from such objects too). */
	rbi_json_key(j, "partial"); rbi_json_bool(j, true);
	rbi_json_key(j, "references");
	rbi_json_array(j);
	for (size_t i = 0; i < root->nrefs; i++)
		rbi_json_addr(j, root->refs[i]);
	rbi_json_end_array(j);
	rbi_json_end_object(j);
	d->roots++;
	return 0;
}

/* A shape's line as dump_all writes it: parent_id unless a root,
   edge_name for an IVAR. */
static int shape_line(const struct rbi_heap_shape *shape, void *arg)
{
	struct heap_dump *d = arg;
	struct rbi_json *j = &d->j;

	rbi_json_restart(j);
	rbi_json_object(j);
	rbi_json_key(j, "address"); rbi_json_addr(j, shape->addr);
	rbi_json_key(j, "type"); rbi_json_cstr(j, "SHAPE");
	rbi_json_key(j, "id"); rbi_json_int(j, shape->id);
	if (!shape->root) {
		rbi_json_key(j, "parent_id"); rbi_json_int(j, shape->parent_id);
	}
	rbi_json_key(j, "depth"); rbi_json_int(j, (int64_t)shape->depth);
	rbi_json_key(j, "shape_type"); rbi_json_cstr(j, shape->type_name);
	if (shape->edge_name) {
		rbi_json_key(j, "edge_name"); rbi_json_cstr(j, shape->edge_name);
	}
	d->shapes_unnamed += shape->edge_error != RBI_OK;
	if (shape->edges_known) {
		rbi_json_key(j, "edges"); rbi_json_int(j, (int64_t)shape->edges);
		rbi_json_key(j, "memsize"); rbi_json_int(j, (int64_t)shape->memsize);
	} else {
		d->shapes_no_edges++;
	}
	rbi_json_end_object(j);
	d->shapes++;
	return 0;
}

static int dump(struct heap_dump *d)
{
	const struct rbi_heap_slot *s;
	struct rbi_heap_object o;
	int rc;

	if ((rc = rbi_heap_roots_foreach(d->s->target, root_line, d)))
		return rc;
	rc = rbi_heap_shapes_foreach(d->s->target, shape_line, d);
	if (rc == RBI_GONE || rc == RBI_NOMEM)
		return rc;
	if (rc)
		snprintf(d->shapes_missing, sizeof(d->shapes_missing), "%s", rbi_errmsg());
	while ((rc = rbi_heap_iter_next(d->w.it, &s)) == RBI_OK) {
		if (stop_requested || interrupted())
			return EXIT_INTERRUPTED;
		rc = rbi_heap_object_read(d->w.it, s, d->value_max, &o);
		if (rc == RBI_CORRUPT && d->s->live && !d->w.paused) {
			d->unreadable++;        /* changed under the walk */
			continue;
		}
		if (rc)
			return rc;
		generic_ivars(d);
		object_line(d, s, &o);
		d->objects++;
		d->objects_unread += !o.refs_known && type_is(&o, "OBJECT");
		d->hashes_unread += !o.refs_known && type_is(&o, "HASH");
		d->structs_unread += !o.refs_known && type_is(&o, "STRUCT");
		d->classes_unread += !o.refs_known && (type_is(&o, "CLASS") ||
						       type_is(&o, "MODULE") ||
						       type_is(&o, "ICLASS"));
		if ((d->objects & 0xffff) == 0)
			heap_walk_progress(&d->w);
	}
	return rc == RBI_ITER_END ? RBI_OK : rc;
}

static int parse_args(struct heap_dump *d, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--pause")) {
			d->w.pause = true;
		} else if (!strcmp(a, "--strings")) {
			d->value_max = STRINGS_DEFAULT;
		} else if (!strncmp(a, "--strings=", 10)) {
			if (parse_count(a + 10, STRINGS_MAX, &d->value_max) || !d->value_max) {
				fprintf(stderr, "rbinspect: heap-dump: --strings=N needs a "
					"number of bytes from 1 to %lu\n", STRINGS_MAX);
				return EXIT_USAGE;
			}
		} else if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && i + 1 < argc) {
			d->path = argv[++i];
		} else if (!strncmp(a, "--output=", 9)) {
			d->path = a + 9;
		} else {
			fputs("rbinspect: heap-dump: unknown argument \"", stderr);
			rbi_out_text_cstr(stderr, a);
			fputs("\" (usage: " USAGE ")\n", stderr);
			return EXIT_USAGE;
		}
	}
	return EXIT_OK;
}

/* Where it went and how true it is, on standard error: the file is the
   format's own. */
static void summary(struct heap_dump *d)
{
	struct rbi_heap_stats st;

	rbi_heap_iter_stats(d->w.it, &st);
	fprintf(stderr, "rbinspect: heap-dump: %" PRIu64 " objects written to ", d->objects);
	rbi_out_text_cstr(stderr, strcmp(d->path, "-") ? d->path : "standard output");
	fprintf(stderr, " (%s), %u ROOT lines", !d->s->live ? "core" : d->w.paused ? "paused" :
		"running", d->roots);
	if (d->shapes)
		fprintf(stderr, ", %" PRIu64 " SHAPE lines", d->shapes);
	fputc('\n', stderr);
	if (rbi_heap_iter_garbage(d->w.it))
		fprintf(stderr, "rbinspect: heap-dump: %" PRIu64 " slots left out: garbage the "
			"GC's lazy sweep had not freed yet (unmarked, on pages it had not "
			"reached), as dump_all leaves it\n", rbi_heap_iter_garbage(d->w.it));
	if (d->shapes_missing[0]) {
		fputs("rbinspect: heap-dump: note: no SHAPE lines: ", stderr);
		rbi_out_text_cstr(stderr, d->shapes_missing);
		fputc('\n', stderr);
	}
	if (d->shapes_unnamed || d->shapes_no_edges)
		fprintf(stderr, "rbinspect: heap-dump: note: %" PRIu64 " SHAPE lines written "
			"without edge_name (its ID has no name that could be read), %" PRIu64
			" without edges and memsize (edge table unreadable)\n",
			d->shapes_unnamed, d->shapes_no_edges);
	if (d->roots_missing[0]) {
		fputs("rbinspect: heap-dump: note: roots: ", stderr);
		rbi_out_text_cstr(stderr, d->roots_missing);
		fputc('\n', stderr);
	}
	if (d->objects_unread || d->hashes_unread || d->structs_unread)
		fprintf(stderr, "rbinspect: heap-dump: note: %" PRIu64 " Objects, %" PRIu64
			" Hashes and %" PRIu64 " Structs written without references: they "
			"have generic instance variables (which dump_all lists first, from "
			"a table not found), or this Ruby's layout lacks them (DWARF of this "
			"build gives it) or its object shapes were not found\n", d->objects_unread,
			d->hashes_unread, d->structs_unread);
	if (d->genivar)
		fprintf(stderr, "rbinspect: heap-dump: %" PRIu64 " objects with generic "
			"instance variables read (listed first among their references)\n",
			d->genivar);
	if (d->genivar_unread) {
		fprintf(stderr, "rbinspect: heap-dump: note: %" PRIu64 " objects with generic "
			"instance variables written without references: ", d->genivar_unread);
		rbi_out_text_cstr(stderr, d->genivar_err);
		fputc('\n', stderr);
	}
	if (d->classes_unread)
		fprintf(stderr, "rbinspect: heap-dump: note: %" PRIu64 " classes, modules and "
			"include wrappers written without references: how this Ruby's GC "
			"marks them was not read (it was for 2.7, 3.1, 3.3 and 3.4) or its "
			"layout lacks their tables (DWARF of this build gives them)\n",
			d->classes_unread);
	if (d->no_memsize || d->no_flags)
		fprintf(stderr, "rbinspect: heap-dump: note: %" PRIu64 " objects written without "
			"memsize (computed for Strings, Arrays, Objects, Hashes, Structs, "
			"numbers, Symbols, Regexps, MatchData and Files), %" PRIu64 " without "
			"GC flags (this Ruby's layout lacks its heap pages' bitmaps)\n",
			d->no_memsize, d->no_flags);
	if (d->no_kind)
		fprintf(stderr, "rbinspect: heap-dump: note: %" PRIu64 " internal objects and "
			"T_DATA written without their imemo_type or struct (this Ruby's layout "
			"does not name the type, or its name could not be read)\n", d->no_kind);
	if (d->allocs)
		fprintf(stderr, "rbinspect: heap-dump: %" PRIu64 " objects with the allocation "
			"site ObjectSpace.trace_object_allocations recorded\n", d->allocs);
	if (d->no_alloc) {
		fprintf(stderr, "rbinspect: heap-dump: note: %" PRIu64 " objects written without "
			"their allocation site: ", d->no_alloc);
		rbi_out_text_cstr(stderr, d->alloc_err);
		fputc('\n', stderr);
	}
	if (st.moved || d->unreadable)
		fprintf(stderr, "rbinspect: heap-dump: note: approximate: %s%s%" PRIu64
			" objects changed while read were left out%s\n",
			st.moved ? st.moved_why : "", st.moved ? "; " : "", d->unreadable,
			d->s->live && !d->w.paused ? " (--pause stops the process for an "
			"exact dump)" : "");
}

int cmd_heap_dump(struct session *s, int argc, char **argv)
{
	struct heap_dump d = { .s = s, .path = "-", .w = { .s = s, .command = "heap-dump" } };
	const struct rbi_ruby_info *ri;
	struct stop_guard guard;
	int rc;

	if ((rc = parse_args(&d, argc, argv)))
		return rc;
	if (target_gone(s, "heap-dump"))
		return EXIT_GONE;
	if ((rc = rbi_ruby_info(s->target, &ri)))
		return session_failure(s, rc);
	d.fmt = format_for(ri);
	/* Before the walk: a file that cannot be made stops nothing. */
	if (!(d.out = d.f = outfile_open(d.path))) {
		fputs("rbinspect: heap-dump: cannot create ", stderr);
		rbi_out_text_cstr(stderr, d.path);
		fprintf(stderr, ": %s\n", strerror(errno));
		return EXIT_ERROR;
	}
	/* Compressing takes three times as long as the walk: a paused
	   process is let go first, its dump compressed afterwards. */
	if (d.w.pause && s->live && outfile_compressed(d.path) && !(d.f = outfile_stage())) {
		fprintf(stderr, "rbinspect: heap-dump: cannot make a temporary file: %s\n",
			strerror(errno));
		outfile_close(d.out);
		return EXIT_ERROR;
	}
	/* A dump is hundreds of MB: written 4 KiB a time (stdio's default
	   for a file), the write calls took a fifth of its time.  A 1 MiB
	   buffer measured slower than 256 KiB: the kernel's copy of each
	   write took twice the system time.  The JSON writer gathers the
	   text (a stdio call per key and value was a third of the time) and
	   writes it 256 KiB a time: stdio copying it into a buffer of its own
	   would be one more pass over every byte, so a file is unbuffered
	   (standard output is left as it is, for the commands after). */
	if (d.f != stdout)
		setvbuf(d.f, NULL, _IONBF, 0);
	rbi_json_init(&d.j, d.f);
	rbi_json_buffer(&d.j, out_buf, sizeof(out_buf));
	stop_guard_begin(&guard, STOP_ON_ALL);
	if (!(rc = heap_walk_begin(&d.w))) {
		rc = dump(&d);
		/* What was written, out before it is said to be: a full disk
		   is an error, not "N objects written". */
		rbi_json_flush(&d.j);
		if (!rc && !(ferror(d.f) || (d.f == stdout && fflush(d.f))))
			summary(&d);
		rc = heap_walk_end(&d.w, rc);
	}
	stop_guard_end(&guard);
	rbi_json_flush(&d.j);
	if (d.f != d.out && outfile_unstage(d.f, d.out) && !rc) {
		fputs("rbinspect: heap-dump: compressing into ", stderr);
		rbi_out_text_cstr(stderr, d.path);
		fprintf(stderr, " failed: %s\n", strerror(errno));
		outfile_close(d.out);
		return EXIT_ERROR;
	}
	if (outfile_close(d.out) && !rc) {
		fputs("rbinspect: heap-dump: writing ", stderr);
		rbi_out_text_cstr(stderr, d.path);
		fprintf(stderr, " failed: %s\n", strerror(errno));
		return EXIT_ERROR;
	}
	if (rc == EXIT_INTERRUPTED || stop_requested) {
		fputs("rbinspect: heap-dump: interrupted (the file is cut short)\n", stderr);
		return EXIT_INTERRUPTED;
	}
	return rc ? session_failure(s, rc) : EXIT_OK;
}
