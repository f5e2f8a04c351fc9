/* heap-data.c: the references dump_all lists for T_DATA objects of the
 * types below, which their rb_data_type_t's wrap_struct_name tells apart
 * (heap-object.c's data_kind), each as its dmark function marks them
 * (reached from gc_mark_children's T_DATA case, 2.7-3.3;
 * rb_gc_mark_children, 3.4):
 *   "time"            time.c time_mark: timew (when not a Fixnum), then
 *                     vtm.year, vtm.subsecx, vtm.utc_offset, vtm.zone
 *   "ARGF"            io.c argf_mark: filename, current_file, argv,
 *                     inplace, encs.ecopts
 *   "monitor"         ext/monitor/monitor.c monitor_mark: owner, mutex
 *   "autoload_const"  variable.c autoload_c_mark (2.7-3.1: mod, ad) and
 *                     autoload_const_mark (3.2+: module,
 *                     autoload_data_value), then value, file
 *   "autoload_i"      variable.c autoload_i_mark (2.7-3.1): feature
 *   "autoload_data"   variable.c autoload_data_mark (3.2+): feature, mutex
 *   "autoload",       variable.c autoload_mark (2.7-3.1) and
 *   "autoload_table"  autoload_table_mark (3.2+): rb_mark_tbl_no_pin of
 *                     its st_table, the values of its entries in
 *                     st_foreach's order
 *   "queue",          thread_sync.c queue_mark and szqueue_mark (whose
 *   "sized_queue"     struct begins with a queue's): que, the Array
 *   "random",         random.c random_mark / rb_random_mark: the seed
 *   "random/MT"
 *   "frame_info"      vm_backtrace.c location_mark: btobj
 *   "backtrace"       vm_backtrace.c backtrace_mark: per location (2.7:
 *                     an iseq one's iseq; 3.1, 3.3: the iseq, a cfunc
 *                     one's where set; 3.4: cme, then iseq where set),
 *                     then strary, locary; the locations an array the
 *                     struct points at (2.7, 3.1) or ends in (3.3+)
 *   "enumerator"      enumerator.c enumerator_mark (up to 3.1; 3.3+
 *                     declare it: rbi_heap_data_generic_refs): obj, args,
 *                     fib, dst, lookahead, feedvalue, stop_exc, size, procs
 *   "dir"             dir.c dir_mark (the same): path
 *   "marshal_compat_table"  marshal.c marshal_compat_table_mark (3.4; an
 *                     untyped RData before): per entry of its st_table,
 *                     the marshal_compat_t's newclass, oldclass
 *   "VM/pin_array_list"  vm.c pin_array_list_mark (3.4: what C code
 *                     registered, rb_vm_register_global_object, in
 *                     buckets of 1024): next, then array[0, len)
 * each only if it is a heap object and not the object's class.  Offsets
 * come from the layout (struct time_object, argf, autoload_const,
 * autoload_data_i, autoload_data, rb_queue of libruby's DWARF), but those of
 * struct rb_monitor { long count; VALUE owner; VALUE mutex; }, which
 * lives in monitor.so, unchanged since monitor.c was written (2.7) to
 * 3.4.  A layout without a word leaves the object's references unknown. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "vm/dump/heap-object.h"

/* The types, numbered from 1 (rbi_heap_data_kind). */
enum { KIND_TIME = 1, KIND_ARGF, KIND_MONITOR, KIND_AUTOLOAD_CONST, KIND_AUTOLOAD_I,
       KIND_AUTOLOAD_DATA, KIND_AUTOLOAD_TABLE, KIND_AUTOLOAD_TABLE_2, KIND_PIN_ARRAY_LIST,
       KIND_QUEUE, KIND_SIZED_QUEUE, KIND_RANDOM, KIND_RANDOM_MT, KIND_FRAME_INFO,
       KIND_BACKTRACE, KIND_MARSHAL_COMPAT, KIND_ENUMERATOR, KIND_DIR };

static const char *const names[] = {
	[KIND_TIME] = "time", [KIND_ARGF] = "ARGF", [KIND_MONITOR] = "monitor",
	[KIND_AUTOLOAD_CONST] = "autoload_const", [KIND_AUTOLOAD_I] = "autoload_i",
	[KIND_AUTOLOAD_DATA] = "autoload_data", [KIND_AUTOLOAD_TABLE] = "autoload",
	[KIND_AUTOLOAD_TABLE_2] = "autoload_table", [KIND_PIN_ARRAY_LIST] = "VM/pin_array_list",
	[KIND_QUEUE] = "queue", [KIND_SIZED_QUEUE] = "sized_queue",
	[KIND_RANDOM] = "random", [KIND_RANDOM_MT] = "random/MT",
	[KIND_FRAME_INFO] = "frame_info", [KIND_BACKTRACE] = "backtrace",
	[KIND_MARSHAL_COMPAT] = "marshal_compat_table", [KIND_ENUMERATOR] = "enumerator",
	[KIND_DIR] = "dir",
};

/* struct rb_monitor's owner and mutex. */
#define MONITOR_OWNER 8
#define MONITOR_MUTEX 16
/* rb_random_t's seed, first in every generator's struct (2.7-3.4). */
#define RANDOM_SEED 0
/* The most words a type marks of its struct. */
#define WORDS_MAX 9
/* rb_data_type_t (2.7-3.4): function.dmark and flags; RUBY_TYPED_DECL_MARKING
   (RUBY_FL_USER2, 3.3+) and RUBY_REF_END.  struct RData: dmark, data. */
#define TYPE_DMARK 8
#define TYPE_FLAGS 64
#define TYPED_DECL_MARKING (1ull << (RBI_FL_USHIFT + 2))
#define REF_END UINT64_MAX
#define RDATA_DMARK 16
#define RDATA_DATA 32
/* Words a declarative marking lists at most (Ruby's own list a handful). */
#define DECL_REFS_MAX 64
/* Marshal compat entries read at most (Ruby defines a handful). */
#define COMPAT_MAX (1u << 16)
/* Locations of one backtrace read at most (Ruby's stack: some thousands). */
#define BACKTRACE_MAX (1u << 20)
/* MARK_OBJECT_ARY_BUCKET_SIZE (vm.c): a pin_array_list's capacity. */
#define PIN_BUCKET 1024

unsigned rbi_heap_data_kind(const char *name)
{
	for (unsigned k = 1; k < RBI_ARRAY_SIZE(names); k++)
		if (!strcmp(name, names[k]))
			return k;
	return 0;
}

/* The words KIND marks of its struct, as offsets in it in marking order,
   into OFFS (*N of them); false when the layout lacks one. */
static bool kind_words(const struct rbi_layout *l, unsigned kind, uint32_t offs[WORDS_MAX],
		       size_t *n)
{
	/* Which of autoload_const's two namings this Ruby has. */
	uint32_t module = l->autoload_const_mod != RBI_ABSENT ? l->autoload_const_mod :
			  l->autoload_const_module,
		 data = l->autoload_const_ad != RBI_ABSENT ? l->autoload_const_ad :
			l->autoload_const_data_value;
	const uint32_t time[] = { l->time_timew, l->time_year, l->time_subsecx,
				  l->time_utc_offset, l->time_zone },
		       argf[] = { l->argf_filename, l->argf_current_file, l->argf_argv,
				  l->argf_inplace, l->argf_encs_ecopts },
		       monitor[] = { MONITOR_OWNER, MONITOR_MUTEX },
		       ac[] = { module, data, l->autoload_const_value, l->autoload_const_file },
		       ai[] = { l->autoload_i_feature },
		       ad[] = { l->autoload_data_feature, l->autoload_data_mutex },
		       queue[] = { l->queue_que }, seed[] = { RANDOM_SEED },
		       frame_info[] = { l->frame_info_btobj },
		       enumerator[] = { l->enumerator_obj, l->enumerator_args, l->enumerator_fib,
					l->enumerator_dst, l->enumerator_lookahead,
					l->enumerator_feedvalue, l->enumerator_stop_exc,
					l->enumerator_size, l->enumerator_procs },
		       dir[] = { l->dir_path };
	const struct { const uint32_t *offs; size_t n; } words[] = {
		[KIND_TIME] = { time, RBI_ARRAY_SIZE(time) },
		[KIND_ARGF] = { argf, RBI_ARRAY_SIZE(argf) },
		[KIND_MONITOR] = { monitor, RBI_ARRAY_SIZE(monitor) },
		[KIND_AUTOLOAD_CONST] = { ac, RBI_ARRAY_SIZE(ac) },
		[KIND_AUTOLOAD_I] = { ai, RBI_ARRAY_SIZE(ai) },
		[KIND_AUTOLOAD_DATA] = { ad, RBI_ARRAY_SIZE(ad) },
		[KIND_QUEUE] = { queue, RBI_ARRAY_SIZE(queue) },
		[KIND_SIZED_QUEUE] = { queue, RBI_ARRAY_SIZE(queue) },
		[KIND_RANDOM] = { seed, 1 }, [KIND_RANDOM_MT] = { seed, 1 },
		[KIND_FRAME_INFO] = { frame_info, 1 },
		[KIND_ENUMERATOR] = { enumerator, RBI_ARRAY_SIZE(enumerator) },
		[KIND_DIR] = { dir, 1 },
	};

	if (kind >= RBI_ARRAY_SIZE(words) || !words[kind].offs)
		return false;
	for (size_t i = 0; i < words[kind].n; i++)
		if (words[kind].offs[i] == RBI_ABSENT || words[kind].offs[i] > RBI_DATA_BYTES_MAX - 8)
			return false;
	memcpy(offs, words[kind].offs, words[kind].n * sizeof(*offs));
	*n = words[kind].n;
	return true;
}

/* An autoload table's references: the values of the st_table at DATA. */
static int table_refs(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
		      struct rbi_heap_object *out, uint64_t data)
{
	const struct rbi_layout *l = rbi_heap_iter_vm(it)->layout;
	uint8_t hdr[RBI_DATA_BYTES_MAX];
	int64_t size;
	int rc;

	if (l->st_table_entries == RBI_ABSENT || RBI_ST_HEADER_SIZE(l) > sizeof(hdr))
		return RBI_OK;
	if ((rc = rbi_read(rbi_heap_iter_target(it), data, hdr, RBI_ST_HEADER_SIZE(l))))
		return rbi_fail_context(rc, "reading the table of 0x%" PRIx64 ": ", s->addr);
	if ((rc = rbi_heap_st_refs(it, s, out, hdr, false, &size)))
		return rc;
	out->refs = rbi_heap_iter_scratch(it)->refs;
	out->refs_known = true;
	return RBI_OK;
}

/* Whether location entry E (btloc_size bytes) marks its iseq, as
   location_mark_entry decides: every entry's in 3.4 (where one is set),
   2.7's of type ISEQ or ISEQ_CALCED, 3.1's and 3.3's of type ISEQ or
   CFUNC (where one is set). */
static uint64_t location_iseq(const struct rbi_layout *l, const uint8_t *e)
{
	uint32_t type;

	if (l->btloc_cme != RBI_ABSENT)
		return rbi_get_u64(e, l->btloc_iseq);
	type = rbi_get_u32(e, l->btloc_type);
	if (l->btloc_body_iseq != RBI_ABSENT)
		return type == 1 || type == 2 ? rbi_get_u64(e, l->btloc_body_iseq) : 0;
	return type == 1 || type == 2 ? rbi_get_u64(e, l->btloc_iseq) : 0;
}

/* Whether the layout has what backtrace_refs reads. */
static bool backtrace_layout(const struct rbi_layout *l)
{
	const uint32_t words[] = { l->backtrace_size, l->backtrace_strary, l->backtrace_locary,
				   l->backtrace_backtrace };

	for (size_t i = 0; i < RBI_ARRAY_SIZE(words); i++)
		if (words[i] == RBI_ABSENT || words[i] > RBI_DATA_BYTES_MAX - 8)
			return false;
	if (l->btloc_size == RBI_ABSENT || !l->btloc_size || l->btloc_size % 8)
		return false;
	if (l->btloc_cme != RBI_ABSENT)
		return l->btloc_iseq != RBI_ABSENT;
	return l->btloc_type != RBI_ABSENT &&
	       (l->btloc_iseq != RBI_ABSENT || l->btloc_body_iseq != RBI_ABSENT);
}

/* The N location entries of the backtrace whose struct's head is HDR
   into *OUT (malloc'd): where the struct points (2.7, 3.1) or at its end
   (3.3+, in the slot when EMBEDDED). */
static int read_locations(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
			  uint64_t data, bool embedded, const uint8_t *hdr, uint64_t n,
			  uint8_t **out)
{
	const struct rbi_layout *l = rbi_heap_iter_vm(it)->layout;
	const uint64_t bytes = n * l->btloc_size;
	const uint64_t at = l->rtypeddata_data + l->backtrace_backtrace;
	uint64_t locs;
	int rc = RBI_OK;

	if (!(*out = malloc(bytes)))
		return rbi_fail(RBI_NOMEM, "out of memory");
	if (l->backtrace_backtrace < l->backtrace_locary) {     /* a pointer */
		if (!(locs = rbi_get_u64(hdr, l->backtrace_backtrace)))
			rc = rbi_fail(RBI_CORRUPT, "0x%" PRIx64 " has no locations", s->addr);
		else
			rc = rbi_read(rbi_heap_iter_target(it), locs, *out, bytes);
	} else if (!embedded) {
		rc = rbi_read(rbi_heap_iter_target(it), data + l->backtrace_backtrace, *out, bytes);
	} else if (at + bytes > s->size) {
		rc = rbi_fail(RBI_CORRUPT, "0x%" PRIx64 " is too small for its locations", s->addr);
	} else {
		memcpy(*out, (const uint8_t *)s->bytes + at, bytes);
	}
	if (rc) {
		free(*out);
		*out = NULL;
		return rbi_fail_context(rc, "reading the locations of 0x%" PRIx64 ": ", s->addr);
	}
	return RBI_OK;
}

/* A Thread::Backtrace's references (see the top). */
static int backtrace_refs(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
			  struct rbi_heap_object *out, uint64_t data, bool embedded)
{
	const struct rbi_layout *l = rbi_heap_iter_vm(it)->layout;
	const uint32_t words[] = { l->backtrace_size, l->backtrace_strary, l->backtrace_locary,
				   l->backtrace_backtrace };
	uint8_t hdr[RBI_DATA_BYTES_MAX], *locs = NULL;
	uint64_t end = 0, n;
	int rc;

	if (!backtrace_layout(l))
		return RBI_OK;
	if (!embedded && !data) {
		out->refs_known = true;
		return RBI_OK;
	}
	for (size_t i = 0; i < RBI_ARRAY_SIZE(words); i++)
		end = words[i] + 8ull > end ? words[i] + 8ull : end;
	if ((rc = rbi_heap_data_struct(it, s, data, embedded, hdr, end)))
		return rc;
	n = rbi_get_u32(hdr, l->backtrace_size);
	if (n > BACKTRACE_MAX)
		return rbi_fail(RBI_CORRUPT, "0x%" PRIx64 " holds %" PRIu64 " locations",
				s->addr, n);
	if (n && (rc = read_locations(it, s, data, embedded, hdr, n, &locs)))
		return rc;
	for (uint64_t i = 0; !rc && i < n; i++) {
		const uint8_t *e = locs + i * l->btloc_size;
		uint64_t iseq = location_iseq(l, e);

		if (l->btloc_cme != RBI_ABSENT)
			rc = rbi_heap_add_refs(it, s, out, e + l->btloc_cme, 1);
		if (!rc && iseq)
			rc = rbi_heap_add_refs(it, s, out, (const uint8_t *)&iseq, 1);
	}
	free(locs);
	if (rc || (rc = rbi_heap_add_refs(it, s, out, hdr + l->backtrace_strary, 1)) ||
	    (rc = rbi_heap_add_refs(it, s, out, hdr + l->backtrace_locary, 1)))
		return rc;
	out->refs = rbi_heap_iter_scratch(it)->refs;
	out->refs_known = true;
	return RBI_OK;
}

/* Marshal's compat table's references (see the top). */
static int marshal_compat_refs(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
			       struct rbi_heap_object *out, uint64_t data)
{
	struct rbi_target *t = rbi_heap_iter_target(it);
	const struct rbi_layout *l = rbi_heap_iter_vm(it)->layout;
	struct rbi_st_entries e = { 0 };
	uint8_t hdr[RBI_DATA_BYTES_MAX];
	uint64_t key, compat, classes[2];
	int rc;

	if (!rbi_vm_st_layout(l) || RBI_ST_HEADER_SIZE(l) > sizeof(hdr))
		return RBI_OK;
	if (!data) {
		out->refs_known = true;
		return RBI_OK;
	}
	if (!(rc = rbi_read(t, data, hdr, RBI_ST_HEADER_SIZE(l))))
		rc = rbi_vm_st_entries(t, l, hdr, COMPAT_MAX, &e);
	for (uint64_t i = 0; !rc && i < e.count; i++)
		if (rbi_vm_st_entry(l, &e, i, &key, &compat) &&
		    !(rc = rbi_read(t, compat, classes, sizeof(classes))))
			rc = rbi_heap_add_refs(it, s, out, (const uint8_t *)classes, 2);
	free(e.words);
	if (rc)
		return rbi_fail_context(rc, "reading the table of 0x%" PRIx64 ": ", s->addr);
	out->refs = rbi_heap_iter_scratch(it)->refs;
	out->refs_known = true;
	return RBI_OK;
}

/* A pin_array_list's references: its next bucket, then its values. */
static int pin_list_refs(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
			 struct rbi_heap_object *out, uint64_t data, bool embedded)
{
	const struct rbi_layout *l = rbi_heap_iter_vm(it)->layout;
	uint8_t b[RBI_DATA_BYTES_MAX], *values;
	uint64_t end = 0, len, array;
	const uint32_t offs[] = { l->pin_array_list_next, l->pin_array_list_len,
				  l->pin_array_list_array };
	int rc;

	for (size_t i = 0; i < RBI_ARRAY_SIZE(offs); i++) {
		if (offs[i] == RBI_ABSENT || offs[i] > RBI_DATA_BYTES_MAX - 8)
			return RBI_OK;  /* unknown */
		end = offs[i] + 8ull > end ? offs[i] + 8ull : end;
	}
	if (!embedded && !data) {
		out->refs_known = true;
		return RBI_OK;
	}
	if ((rc = rbi_heap_data_struct(it, s, data, embedded, b, end)) ||
	    (rc = rbi_heap_add_refs(it, s, out, b + l->pin_array_list_next, 1)))
		return rc;
	len = rbi_get_u64(b, l->pin_array_list_len);
	array = rbi_get_u64(b, l->pin_array_list_array);
	if (len > PIN_BUCKET || (len && !array))
		return rbi_fail(RBI_CORRUPT, "0x%" PRIx64 " holds %" PRIu64 " values", s->addr,
				len);
	if (len) {
		if (!(values = malloc(len * 8)))
			return rbi_fail(RBI_NOMEM, "out of memory");
		if (!(rc = rbi_read(rbi_heap_iter_target(it), array, values, len * 8)))
			rc = rbi_heap_add_refs(it, s, out, values, len);
		free(values);
		if (rc)
			return rbi_fail_context(rc, "reading the values of 0x%" PRIx64 ": ",
						s->addr);
	}
	out->refs = rbi_heap_iter_scratch(it)->refs;
	out->refs_known = true;
	return RBI_OK;
}

bool rbi_heap_data_declared(struct rbi_heap_iter *it, uint64_t type)
{
	uint64_t flags;

	return rbi_vm_ge(rbi_heap_iter_vm(it), 3, 3) &&
	       !rbi_read_u64(rbi_heap_iter_target(it), type + TYPE_FLAGS, &flags) &&
	       (flags & TYPED_DECL_MARKING);
}

/* A T_DATA of any other type whose marking is data, not code: no mark
   function (dmark NULL: nothing marked), or 3.3+'s declarative marking
   (its type's flags RUBY_TYPED_DECL_MARKING: dmark points at the offsets
   in the struct of the words to mark, ended by RUBY_REF_END).  gc.c walks
   that list as `for (offset = *list; offset != END; offset = *list++)`,
   which marks the first word twice: so does dump_all, and so do we.  An
   untyped RData (TYPED false) has its dmark in the slot.  A mark function
   of C code leaves the references unknown. */
int rbi_heap_data_generic_refs(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
			       struct rbi_heap_object *out, bool typed, uint64_t type,
			       uint64_t data, bool embedded)
{
	struct rbi_target *t = rbi_heap_iter_target(it);
	const struct rbi_vm *vm = rbi_heap_iter_vm(it);
	uint64_t dmark, flags = 0, offs[DECL_REFS_MAX + 1], end = 0;
	uint8_t b[RBI_DATA_BYTES_MAX];
	size_t n = 0;
	int rc;

	if (typed) {
		if ((rc = rbi_read_u64(t, type + TYPE_DMARK, &dmark)) ||
		    (rc = rbi_read_u64(t, type + TYPE_FLAGS, &flags)))
			return rbi_fail_context(rc, "reading the data type of 0x%" PRIx64 ": ",
						s->addr);
	} else {
		if (s->size < RDATA_DATA + 8)
			return RBI_OK;
		dmark = rbi_get_u64(s->bytes, RDATA_DMARK);
		data = rbi_get_u64(s->bytes, RDATA_DATA);
		embedded = false;
	}
	if (!dmark || (!embedded && !data)) {
		out->refs_known = true;  /* nothing marked */
		return RBI_OK;
	}
	if (!typed || !(flags & TYPED_DECL_MARKING) || !rbi_vm_ge(vm, 3, 3))
		return RBI_OK;          /* C code: unknown */
	if ((rc = rbi_read(t, dmark, offs, sizeof(offs))) && rc != RBI_PARTIAL)
		return rbi_fail_context(rc, "reading the marking of 0x%" PRIx64 ": ", s->addr);
	for (; n <= DECL_REFS_MAX && offs[n] != REF_END; n++) {
		if (n == DECL_REFS_MAX || offs[n] > RBI_DATA_BYTES_MAX - 8 || (offs[n] & 7))
			return RBI_OK;  /* not a list we can follow: unknown */
		end = offs[n] + 8 > end ? offs[n] + 8 : end;
	}
	if (n && (rc = rbi_heap_data_struct(it, s, data, embedded, b, end)))
		return rc;
	for (size_t i = 0; i < n; i++)
		for (unsigned twice = 0; twice < (i ? 1u : 2u); twice++)   /* see above */
			if ((rc = rbi_heap_add_refs(it, s, out, b + offs[i], 1)))
				return rc;
	out->refs = rbi_heap_iter_scratch(it)->refs;
	out->refs_known = true;
	return RBI_OK;
}

int rbi_heap_data_refs(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
		       struct rbi_heap_object *out, unsigned kind, uint64_t data, bool embedded)
{
	const struct rbi_layout *l = rbi_heap_iter_vm(it)->layout;
	uint32_t offs[WORDS_MAX];
	uint8_t b[RBI_DATA_BYTES_MAX];
	uint64_t end = 0;
	size_t n;
	int rc;

	if (kind == KIND_AUTOLOAD_TABLE || kind == KIND_AUTOLOAD_TABLE_2) {
		if (embedded)
			return RBI_OK;  /* not a type that embeds: unknown */
		if (!data) {
			out->refs_known = true;
			return RBI_OK;
		}
		return table_refs(it, s, out, data);
	}
	if (kind == KIND_PIN_ARRAY_LIST)
		return pin_list_refs(it, s, out, data, embedded);
	if (kind == KIND_BACKTRACE)
		return backtrace_refs(it, s, out, data, embedded);
	if (kind == KIND_MARSHAL_COMPAT)
		return embedded ? RBI_OK : marshal_compat_refs(it, s, out, data);
	if (!kind_words(l, kind, offs, &n))
		return RBI_OK;
	if (!embedded && !data) {
		out->refs_known = true;  /* no data: nothing marked */
		return RBI_OK;
	}
	for (size_t i = 0; i < n; i++)
		if (offs[i] + 8ull > end)
			end = offs[i] + 8ull;
	if ((rc = rbi_heap_data_struct(it, s, data, embedded, b, end)))
		return rc;
	for (size_t i = 0; i < n; i++)
		if ((rc = rbi_heap_add_refs(it, s, out, b + offs[i], 1)))
			return rc;
	out->refs = rbi_heap_iter_scratch(it)->refs;
	out->refs_known = true;
	return RBI_OK;
}
