/* vm.h: what lib/vm knows about the Ruby inside a target. */
#ifndef RBI_VM_H
#define RBI_VM_H

#include "internal.h"
#include "layout/layout.h"

/* Bounds on structures read from the target: a list longer than these is
   corrupt (or a cycle), not a real VM. */
#define RBI_RACTORS_MAX 4096
#define RBI_THREADS_MAX 65536

/* Values that are not struct offsets but still change between Ruby
   versions: special constants, flag bits, enum values.  Set once from the
   version (rbi_vm_get), so walkers read vm->k.qnil, never a version. */
struct rbi_vm_consts {
	uint64_t qnil;                  /* 0x08 (<= 3.1), 0x04 (3.2+) */
	uint64_t qundef;                /* 0x34 (<= 3.1), 0x24 (3.2+) */
	uint64_t fl_singleton;          /* FL_USER0 (<= 3.3), FL_USER1 (3.4+) */
	uint64_t elts_shared;           /* ELTS_SHARED = STR_SHARED: FL_USER2
					   (<= 3.3), FL_USER0 (3.4+) */
	uint64_t ary_shared_root;       /* RARRAY_SHARED_ROOT_FLAG: FL_USER5
					   (<= 3.1, seen in 2.7 and 3.1),
					   FL_USER12 (3.2+, past the 7-bit
					   embedded length; seen in 3.3, 3.4) */
	uint32_t tlast_op_id;           /* last operator ID (enum ruby_method_ids) */
	uint32_t rarray_embed_len_mask; /* after >> 15: 0x3 (<= 3.1), 0x7f (3.2+) */
	bool first_lineno_fixnum;       /* location.first_lineno is a Fixnum (<= 3.1) */
	bool label_skips_rescue_caller; /* 3.4+ backtraces drop the method frame
					   under a rescue/ensure frame */
	bool label_qualified;           /* 3.4+ labels are "Class#meth" */
	bool classpath_in_classext;     /* 3.3+: RCLASS_EXT(c)->classpath */
	uint32_t heap_page_align;       /* HEAP_PAGE_ALIGN: heap page bodies are
					   aligned to it and start with a
					   pointer to their struct heap_page:
					   16 KiB (<= 3.2), 64 KiB (3.3+) */
	bool heap_sorted_darray;        /* 3.4+: heap_pages.sorted is an
					   rb_darray { size, capa, data[] } */
	/* How gc.c marks a class (heap-class.c).  CLASS_MARKS_READ: the
	   families whose marking was read (2.7, 3.1, 3.3, 3.4); the others'
	   class references are unknown. */
	bool class_marks_read;
	bool class_marks_cc_tbl;        /* 3.1+: the call caches */
	bool class_marks_ext_values;    /* 3.3+: also a singleton's attached
					   object, the class variable caches'
					   crefs, the classpath and an include
					   wrapper's includer */
	/* How iseq.c marks an iseq (heap-iseq.c).  ISEQ_MARKS_READ: the
	   families whose marking was read, by the operands' mark bits (3.3,
	   3.4); ISEQ_MARKS_CC: the call caches are marked (3.3; 3.4's
	   cc_is_active takes every one for the empty cache). */
	bool iseq_marks_read;
	bool iseq_marks_cc;
	/* How gc.c marks an IMEMO callcache (heap-imemo.c): its cme_ (3.1);
	   only a super or refinement call's cme_ (3.3), then its klass
	   (3.4); unknown in the other families (none read; 2.7 has no call
	   caches).  A callinfo marks nothing where this is known. */
	enum { RBI_CC_MARKS_UNKNOWN, RBI_CC_MARKS_CME, RBI_CC_MARKS_SUPER_CME,
	       RBI_CC_MARKS_SUPER_CME_KLASS } cc_marks;
	/* ISEQ_MARKS_DECODED: 2.7 and 3.1, whose rb_iseq_mark finds the
	   operands by decoding the instructions (rb_iseq_each_value) and
	   marks no inline cache table; ISEQ_MARKS_IC_IVC: their decoding marks
	   IC and IVC operands too (3.1); ISEQ_MARKS_CI: the call infos are
	   marked (3.0+; 2.7's are no objects); ISEQ_CI_MARKABLE: only those
	   vm_ci_markable takes (3.1); ISEQ_MARKS_JIT_BODY: JIT data is marked
	   through the body's jit_unit and yjit_blocks (3.1). */
	bool iseq_marks_decoded;
	bool iseq_marks_ic_ivc;
	bool iseq_marks_ci;
	bool iseq_ci_markable;
	bool iseq_marks_jit_body;
	uint64_t callcache_unmarkable;  /* VM_CALLCACHE_UNMARKABLE: IMEMO_FL_USER0
					   (3.1), FL_FREEZE (3.3+) */
	uint64_t riclass_is_origin;     /* RICLASS_IS_ORIGIN: FL_USER5 (<= 3.1),
					   FL_USER0 (3.3+) */
	uint64_t riclass_shared_mtbl;   /* RICLASS_ORIGIN_SHARED_MTBL, which
					   gc.c tests from 3.1: FL_USER8 (3.1),
					   FL_USER3 (3.3+); 0 in 2.7 */
};

struct rbi_vm {
	struct rbi_ruby_info info;
	const struct rbi_image *image;  /* libruby or the static ruby */
	struct rbi_layout dwarf_layout; /* storage when from DWARF */
	const struct rbi_layout *layout;
	char layout_desc[160];
	char vm_via[64], symbols_via[64];
	char version_via[160];
	uint64_t main_ractor;           /* 0 before 3.0 */
	uint64_t main_thread;
	struct rbi_vm_consts k;
	/* glibc's struct pthread.tid offset (from _thread_db_pthread_tid) for
	   Rubies that keep only a pthread_t: -1 unknown, -2 not looked up. */
	int64_t pthread_tid_off;
	/* IDs of the hidden class ivars __classpath__ and __attached__ (<= 3.1
	   class names, class.c), looked up until found or CLASS_IDS_TRIES
	   lookups failed; 0 if there are none. */
	bool class_ids_looked_up;
	unsigned class_ids_tries;
	uint64_t id_classpath, id_attached;
};

/* rbi_target_layout_seed (internal.h): a layout from DWARF and the build
   it describes. */
struct rbi_layout_seed {
	struct rbi_build_id build_id;
	struct rbi_layout layout;
	pid_t pid;                      /* the process it was read for */
};

/* With VM's image and version set: choose its layout and find the VM
   (symbol, code, then a scan of libruby's data) and the symbol table. */
int rbi_vm_locate(struct rbi_target *t, struct rbi_vm *vm);

/* Which Ruby a mapped file's path tells (offline.c), without reading it:
   rbi_vm_libruby_version, libruby's file name ending in ".so.X.Y.Z";
   rbi_vm_path_family, a directory "/ruby/X.Y.0/" of Ruby's library
   (extensions, encodings: the family only), *PREFIX the length of PATH up
   to it; rbi_vm_ruby_image_name, a file named like libruby (EXE false) or
   like a ruby executable (EXE true). */
bool rbi_vm_libruby_version(const char *path, int *major, int *minor, int *teeny);
bool rbi_vm_path_family(const char *path, int *major, int *minor, size_t *prefix);
bool rbi_vm_ruby_image_name(const char *path, bool exe);

/* vm/offline.c: Ruby in a core that lacks libruby's symbols and read-only
   data (carried off its machine): the image by its name, the version from
   file names or --ruby-version, then rbi_vm_locate.  RBI_NO_LAYOUT when
   the version cannot be known (the message says what to give). */
int rbi_vm_find_offline(struct rbi_target *t, struct rbi_vm *vm,
			struct rbi_image_list *images);
/* Call FN(T, ARG, ADDR, WORD) for every 8-aligned word of IMG's writable
   data (.data, .bss) until FN returns non-zero, whose address goes to
   *AT: 1 then, else 0. */
int rbi_vm_scan_data(struct rbi_target *t, const struct rbi_image *img,
		     int (*fn)(struct rbi_target *t, void *arg, uint64_t addr, uint64_t word),
		     void *arg, uint64_t *at);

/* Object shapes (shape.c, 3.3-3.4): an object's shape id is the upper 32
   bits of its flags (shape.h SHAPE_FLAG_SHIFT); a shape's type is one of
   the layout's shape_type_* (enum shape_type). */
#define RBI_SHAPE_FLAG_SHIFT 32
/* The shape list as read: COUNT shapes of layout->shape_size bytes each,
   at ADDR in the target. */
struct rbi_shapes {
	uint8_t *list;
	size_t cap;
	uint32_t count;
	uint64_t addr;
};
/* Read the target's shape list into OUT (its buffer reused).  Errors:
   RBI_UNSUPPORTED (no shapes in this layout, or the tree not found),
   RBI_CORRUPT, RBI_NOMEM, read errors. */
int rbi_vm_shapes_read(struct rbi_target *t, const struct rbi_vm *vm, struct rbi_shapes *out);
void rbi_shapes_free(struct rbi_shapes *s);
/* Whether this Ruby's shapes and objects' shape ids can be read: its
   layout has the shape tree (3.3+; not 3.2's layouts). */
bool rbi_vm_shapes_in_layout(const struct rbi_layout *l);

/* st_tables (st.c).  The bytes of a table's header the reader needs: up
   to entries, its last member. */
#define RBI_ST_HEADER_SIZE(l) ((l)->st_table_entries + 8)
/* Whether the layout has every st_table field, each inside its struct. */
bool rbi_vm_st_layout(const struct rbi_layout *l);
struct rbi_st_entries {
	uint64_t *words;        /* COUNT entries of st_entry_size bytes */
	size_t cap;
	uint64_t count;         /* entries_bound - entries_start */
	uint64_t size;          /* num_entries: the live ones */
};
/* The entries of the table whose header (RBI_ST_HEADER_SIZE bytes) is HDR
   into OUT (its buffer reused), deleted ones included; more than MAX is
   RBI_CORRUPT.  Free OUT->words. */
int rbi_vm_st_entries(struct rbi_target *t, const struct rbi_layout *l, const uint8_t *hdr,
		      uint64_t max, struct rbi_st_entries *out);
/* st_memsize of the table whose header (RBI_ST_HEADER_SIZE bytes) is HDR:
   the table, its entries (all 2^entry_power allocated) and its bins.
   RBI_UNSUPPORTED when the layout lacks what it takes. */
int rbi_vm_st_memsize(const struct rbi_layout *l, const uint8_t *hdr, uint64_t *out);
/* Entry I of E: false if deleted, else its key and record. */
bool rbi_vm_st_entry(const struct rbi_layout *l, const struct rbi_st_entries *e, uint64_t i,
		     uint64_t *key, uint64_t *record);

/* An object as read: its address, flags and the first SIZE bytes of its
   slot; SLOT_SIZE_KNOWN when SIZE is the whole slot (a heap walk). */
struct rbi_obj_bytes {
	uint64_t addr, flags;
	const uint8_t *bytes;
	uint64_t size;
	bool slot_size_known;
};
/* An Object's instance variables (ivar.c), buffers reused between calls. */
struct rbi_ivars {
	uint64_t *values;       /* N of them, an unset one Qundef */
	uint64_t *ids;          /* N IDs, 0 where no name was found */
	size_t values_cap, ids_cap;
	uint64_t n;
	bool embedded;
	bool complex;           /* a "too complex" shape's table */
	struct rbi_st_entries st;
	struct rbi_shapes shapes;       /* read at the first need */
	bool shapes_read;
	int shapes_rc;
};
/* The shape of OBJ (3.3-3.4: the upper 32 bits of its flags) into *SHAPE,
   rb_shape's bytes, from IV's shape list read once.  RBI_UNSUPPORTED when
   this Ruby's shapes cannot be read, RBI_CORRUPT for an id past them. */
int rbi_vm_object_shape(struct rbi_target *t, const struct rbi_vm *vm,
			const struct rbi_obj_bytes *obj, struct rbi_ivars *iv,
			const uint8_t **shape);
/* The values of the instance variables of OBJ (a T_OBJECT, T_CLASS or
   T_MODULE) into IV.  RBI_UNSUPPORTED when this Ruby's cannot be read
   (3.2, a layout without RObject), RBI_CORRUPT, read errors. */
int rbi_vm_object_ivars(struct rbi_target *t, const struct rbi_vm *vm,
			const struct rbi_obj_bytes *obj, struct rbi_ivars *iv);
/* After rbi_vm_object_ivars: their IDs (KLASS: rb_class_real of OBJ's
   class, where 2.7-3.1 keep the names). */
int rbi_vm_object_ivar_ids(struct rbi_target *t, const struct rbi_vm *vm,
			   const struct rbi_obj_bytes *obj, uint64_t klass, struct rbi_ivars *iv);
void rbi_ivars_free(struct rbi_ivars *iv);

/* Find Ruby and its VM in T (cached in t->vm).  rbi_ruby_info()'s work. */
int rbi_vm_get(struct rbi_target *t, struct rbi_vm **out);
void rbi_vm_free(struct rbi_vm *vm);

/* Ruby version gate: true if the target's Ruby is at least MAJOR.MINOR. */
static inline bool rbi_vm_ge(const struct rbi_vm *vm, int major, int minor)
{
	return vm->info.major > major ||
	       (vm->info.major == major && vm->info.minor >= minor);
}

/* Where the GVL's queue of waiting threads is (thread.c): its head in
   rb_ractor_t (*RACTOR_HEAD: 3.0-3.1 threads.gvl.waitq, 3.2+
   threads.sched.readyq) or in the VM (*VM_HEAD: 2.x gvl.waitq), and the
   node in each rb_thread_t (*NODE: native_thread_data.node.gvl up to 3.1,
   sched.node.readyq from 3.2), each RBI_ABSENT where the layout lacks it;
   false when the queue cannot be read at all. */
bool rbi_vm_gvl_queue(const struct rbi_layout *l, uint32_t *node, uint32_t *ractor_head,
		      uint32_t *vm_head);
/* Whether the GVL's holder, running the context EC, was handed the GVL
   and does not run yet: 3.3+ gives it to the next thread of its queue
   (sched.running) before that thread wakes, which makes its context the
   ractor's running one (RUNNING_EC, threads.running_ec) once it runs. */
static inline bool rbi_vm_gvl_handed_on(uint64_t running_ec, uint64_t ec)
{
	return ec && running_ec != ec;
}

/* Callback for each element of a ccan list (struct list_head at HEAD, node
   at NODE_OFF inside the element).  Non-zero stops the walk and is
   returned. */
typedef int (*rbi_list_fn)(struct rbi_target *t, uint64_t elem, void *arg);
/* Read the list whole (at most MAX elements), then call FN for each:
   RBI_CORRUPT, with no call, if the list does not close or a node's prev
   does not point back.  A live process's list that changed under the read
   is read again, afresh, up to 20 times; with _once, not (a list that
   changes every few microseconds, the GVL's queue: a read that breaks
   says nothing). */
int rbi_list_walk(struct rbi_target *t, uint64_t head, uint32_t node_off,
		  size_t max, rbi_list_fn fn, void *arg);
int rbi_list_walk_once(struct rbi_target *t, uint64_t head, uint32_t node_off,
		       size_t max, rbi_list_fn fn, void *arg);

/* ---- Ruby objects (string.c) ------------------------------------------- */

/* T_xxx and imemo types we look at (ruby_value_type, imemo_type: the same
   2.6-4.0). */
enum {
	RBI_T_NONE = 0x00, RBI_T_OBJECT = 0x01, RBI_T_CLASS = 0x02, RBI_T_MODULE = 0x03,
	RBI_T_FLOAT = 0x04, RBI_T_STRING = 0x05, RBI_T_REGEXP = 0x06, RBI_T_ARRAY = 0x07,
	RBI_T_HASH = 0x08, RBI_T_STRUCT = 0x09, RBI_T_BIGNUM = 0x0a, RBI_T_FILE = 0x0b,
	RBI_T_DATA = 0x0c,
	RBI_T_MATCH = 0x0d, RBI_T_COMPLEX = 0x0e, RBI_T_RATIONAL = 0x0f,
	RBI_T_SYMBOL = 0x14, RBI_T_IMEMO = 0x1a, RBI_T_NODE = 0x1b, RBI_T_ICLASS = 0x1c,
	RBI_T_ZOMBIE = 0x1d, RBI_T_MOVED = 0x1e, RBI_T_MASK = 0x1f,
};
enum {
	RBI_IMEMO_ENV = 0, RBI_IMEMO_CREF = 1, RBI_IMEMO_SVAR = 2, RBI_IMEMO_IFUNC = 4,
	RBI_IMEMO_MENT = 6, RBI_IMEMO_ISEQ = 7,
};
#define RBI_FL_USHIFT 12
/* FL_USER(n): the flag bits each type gives its own meaning. */
#define RBI_FL_USER(n) (1ull << (RBI_FL_USHIFT + (n)))
/* VM_ENV_FLAG_LOCAL (vm_core.h 2.6-4.0): a method's or top-level environment,
   the last of a chain. */
#define RBI_VM_ENV_FLAG_LOCAL 0x2u
/* A VM stack larger than this (in VALUEs, 1 GiB; Ruby's default is 128 Ki,
   RUBY_THREAD_VM_STACK_SIZE may raise it) is garbage: every reader of
   stacks (bt, the sampler, the heap's stack roots) takes the same bound. */
#define RBI_VM_STACK_MAX (1ull << 27)
/* FL_EXIVAR (2.6-3.4): instance variables in the generic table. */
#define RBI_FL_EXIVAR (1ull << 10)
/* RBasic.klass: the word after the flags. */
#define RBI_RBASIC_KLASS 8
#define RBI_IMEMO_TYPE(flags) (((flags) >> RBI_FL_USHIFT) & 0xf)

/* Is V a pointer to a heap object (not an immediate, false or nil)? */
static inline bool rbi_vm_heap_p(const struct rbi_vm *vm, uint64_t v)
{
	return v != 0 && (v & 7) == 0 && v != vm->k.qnil;
}
/* RBasic.flags of the heap object V (RBI_CORRUPT if V is no object). */
int rbi_vm_obj_flags(struct rbi_target *t, const struct rbi_vm *vm,
		     uint64_t v, uint64_t *flags);
/* Where heap object V is: V, or, if V is a slot the GC moved it out of
   (T_MOVED: GC.compact under way, the references to it not updated yet),
   its new address, as rb_gc_location.  V when that cannot be told. */
uint64_t rbi_vm_location(struct rbi_target *t, const struct rbi_vm *vm, uint64_t v);
/* The rb_data_type_t (*TYPE) and data pointer (*DATA) of slot S if it is
   a typed T_DATA (RTypedData's typed_flag 1, or 3 for data embedded in
   the slot, 3.3+: *EMBEDDED, and *DATA is then no pointer); false for
   any other slot, or a layout without RTypedData. */
bool rbi_vm_typed_data(const struct rbi_layout *l, const struct rbi_heap_slot *s,
		       uint64_t *type, uint64_t *data, bool *embedded);
/* The wrap_struct_name of rb_data_type_t TYPE ("proc", "fiber"...) into
   BUF, NUL-terminated; RBI_CORRUPT if longer than CAP-1 bytes, a read
   error if TYPE cannot be read. */
int rbi_vm_data_type_name(struct rbi_target *t, uint64_t type, char *buf, size_t cap);
/* Longest string we copy out of the target. */
#define RBI_STRING_MAX (1u << 20)
/* The bytes of String V into BUF (CAP >= 1; NUL-terminated, cut to CAP-1
   bytes; *LEN, if not NULL, gets the copied length).  RBI_CORRUPT if V is
   not a plausible String. */
int rbi_vm_string(struct rbi_target *t, const struct rbi_vm *vm, uint64_t v,
		  char *buf, size_t cap, size_t *len);
/* rbi_vm_string, also giving the String's whole length (*FULL, which is
   more than *LEN when the copy was cut). */
int rbi_vm_string_full(struct rbi_target *t, const struct rbi_vm *vm,
		       uint64_t v, char *buf, size_t cap, size_t *len,
		       uint64_t *full);
/* rbi_vm_string for a name: the bytes of it that did not fit added to
   *CUT. */
int rbi_vm_string_cut(struct rbi_target *t, const struct rbi_vm *vm, uint64_t v,
		      char *buf, size_t cap, uint64_t *cut);
/* Bytes every heap slot has (sizeof(RVALUE) up to 3.1, the smallest size
   pool's slot from 3.2). */
#define RBI_OBJ_HEAD 40
/* Where a String's bytes or an Array's elements are. */
struct rbi_contents {
	uint64_t len;           /* bytes; elements */
	uint64_t ptr;           /* the first one, in the target */
	bool embedded;          /* inside the object's slot */
	bool shared;            /* another object's (STR_SHARED, ELTS_SHARED) */
};
/* The contents of String or Array V from SLOT, its first SIZE bytes as
   read (flags included, SIZE >= RBI_OBJ_HEAD): no read of the target.
   SLOT_SIZE (0: unknown) bounds embedded contents.  RBI_CORRUPT for
   lengths that cannot be. */
int rbi_vm_string_contents(const struct rbi_vm *vm, uint64_t v, const uint8_t *slot,
			   size_t size, size_t slot_size, struct rbi_contents *out);
int rbi_vm_array_contents(const struct rbi_vm *vm, uint64_t v, const uint8_t *slot,
			  size_t size, size_t slot_size, struct rbi_contents *out);
/* Array V: its length and the address of its first element. */
int rbi_vm_array(struct rbi_target *t, const struct rbi_vm *vm, uint64_t v,
		 uint64_t *len, uint64_t *elems);
/* Element I of array V (RBI_CORRUPT past the end). */
int rbi_vm_array_at(struct rbi_target *t, const struct rbi_vm *vm, uint64_t v,
		    uint64_t i, uint64_t *out);

/* ---- IDs (symbol.c) ----------------------------------------------------- */

/* The name of ID into BUF (NUL-terminated, cut to CAP-1); the bytes of it
   that did not fit added to *CUT (if not NULL).  RBI_NO_VM if the symbol
   table was not found, RBI_CORRUPT for an unknown ID. */
int rbi_vm_id_name(struct rbi_target *t, const struct rbi_vm *vm, uint64_t id,
		   char *buf, size_t cap, uint64_t *cut);
/* The name of the Symbol SYM into BUF, as rbi_vm_id_name: a static one
   by its ID, a dynamic one (a T_SYMBOL) by its fstr.  RBI_CORRUPT when
   SYM is neither. */
int rbi_vm_symbol_name(struct rbi_target *t, const struct rbi_vm *vm, uint64_t sym,
		       char *buf, size_t cap);
/* The same for an ID's serial (the key of an rb_id_table). */
int rbi_vm_serial_name(struct rbi_target *t, const struct rbi_vm *vm, uint64_t serial,
		       char *buf, size_t cap, uint64_t *cut);
/* FN(serial, value, ARG) for every used item of the rb_id_table at TABLE
   (0: an empty table), until FN returns non-zero, which is returned. */
typedef int (*rbi_vm_id_table_fn)(uint32_t serial, uint64_t value, void *arg);
int rbi_vm_id_table_foreach(struct rbi_target *t, const struct rbi_vm *vm, uint64_t table,
			    rbi_vm_id_table_fn fn, void *arg);
/* The value of the rb_id_table at TABLE whose key's name is NAME into
   *VALUE: RBI_OK, RBI_ITER_END if none; with NAMES (CAP bytes, or NULL),
   the names it holds, ", "-separated, cut to fit. */
int rbi_vm_id_table_find(struct rbi_target *t, const struct rbi_vm *vm, uint64_t table,
			 const char *name, uint64_t *value, char *names, size_t cap);
/* The ID named NAME (an ID interned while Ruby boots: the scan is bounded).
   RBI_ITER_END if there is none. */
int rbi_vm_id_lookup(struct rbi_target *t, const struct rbi_vm *vm,
		     const char *name, uint64_t *id);

/* ---- Classes (class.c) -------------------------------------------------- */

/* Are the names made so far final?  False once a <= 3.1 VM's class ivar
   IDs were looked for and not found, until a lookup finds them or
   CLASS_IDS_TRIES failed (class.c): names made meanwhile fall back to the
   method's own and are not to be kept. */
bool rbi_vm_class_names_settled(const struct rbi_vm *vm);

/* Ruby 3.4's gen_method_name: "Path#NAME" for an instance method of a
   named class or module OWNER, "Path.NAME" for a singleton method, else
   NAME alone.  Always succeeds (falls back to NAME); *QUALIFIED tells.
   Returns the label's length, with the bytes of a class path cut to fit
   its buffer: more than CAP - 1 when BUF holds the label's start only or
   the path was cut. */
size_t rbi_vm_method_name(struct rbi_target *t, struct rbi_vm *vm,
			uint64_t owner, const char *name, char *buf, size_t cap,
			bool *qualified);
/* The permanent path ("Foo::Bar") of class or module KLASS into BUF;
   false (and "") if it has none we can read (anonymous, or Ruby 3.2).
   *CUT (if not NULL): the bytes of it that did not fit. */
bool rbi_vm_class_path(struct rbi_target *t, struct rbi_vm *vm, uint64_t klass,
		       char *buf, size_t cap, uint64_t *cut);
/* rb_class_real(KLASS) into *REAL; false if the chain cannot be read. */
bool rbi_vm_class_real(struct rbi_target *t, struct rbi_vm *vm, uint64_t klass,
		       uint64_t *real);
/* The path of rb_class_real(KLASS): KLASS (an object's RBasic.klass)
   without singleton classes and include wrappers. */
bool rbi_vm_class_name(struct rbi_target *t, struct rbi_vm *vm, uint64_t klass,
		       char *buf, size_t cap);
/* RCLASS_EXT(KLASS) into *EXT: embedded after struct RClass from 3.3,
   pointed to by RClass.ptr before. */
int rbi_vm_classext(struct rbi_target *t, const struct rbi_vm *vm, uint64_t klass,
		    uint64_t *ext);
/* KLASS's superclass (RCLASS_SUPER) into *SUPER. */
bool rbi_vm_class_super(struct rbi_target *t, const struct rbi_vm *vm,
			uint64_t klass, uint64_t *super);
/* The value of the constant PATH ("Foo", "Foo::BAR", "::Foo") as Ruby
   resolves it in a frame whose lexical scope is CREF (rbi_vm_frame_cref)
   and whose self is SELF (constant.c); CREF 0 or a path from "::": from
   the top level.  RBI_INVAL for no such constant (the message names what
   there is) or an autoload not loaded yet, RBI_UNSUPPORTED for a layout
   without constant tables. */
int rbi_vm_constant(struct rbi_target *t, struct rbi_vm *vm, const char *path,
		    uint64_t cref, uint64_t self, uint64_t *value);
/* FN(serial, entry, ARG) for each constant whose bare name code reads in a
   frame whose lexical scope is CREF and whose self is SELF (the tables
   rbi_vm_constant looks a path's first name up in, in its order: a name
   may come more than once), until FN returns non-zero, which is
   returned. */
int rbi_vm_constant_names(struct rbi_target *t, struct rbi_vm *vm, uint64_t cref,
			  uint64_t self, rbi_vm_id_table_fn fn, void *arg);

/* What an environment's method-entry/cref slot V holds that a check looks
   for (a method entry, a cref), or 0; CAN_BE_SVAR for the method's own
   environment, whose slot may hold an svar (rbi_vm_env_find). */
typedef uint64_t (*rbi_vm_env_check)(struct rbi_target *t, struct rbi_vm *vm, uint64_t v,
				     bool can_be_svar);
/* Walk the environments from EP (its flags FLAGS, its slot ME_CREF) out
   to its method's, as rb_vm_frame_method_entry and vm_env_cref do: the
   first thing CHECK finds, into *OUT (0 if none).  RBI_CORRUPT for a
   chain that does not end. */
int rbi_vm_env_find(struct rbi_target *t, struct rbi_vm *vm, uint64_t ep, uint64_t flags,
		    uint64_t me_cref, rbi_vm_env_check check, uint64_t *out);
/* What an environment's method-entry/cref slot V holds: the internal
   object (its imemo type in *TYPE), the one inside an svar when
   CAN_BE_SVAR; 0 for anything else. */
uint64_t rbi_vm_env_slot(struct rbi_target *t, struct rbi_vm *vm, uint64_t v,
			 bool can_be_svar, unsigned *type);
/* check_method_entry (vm_insnhelper.c): V if it is a method entry, the
   one inside an svar (when CAN_BE_SVAR), else 0. */
uint64_t rbi_vm_check_method_entry(struct rbi_target *t, struct rbi_vm *vm,
				   uint64_t v, bool can_be_svar);
/* The lexical scope an iseq method entry's definition keeps
   (rb_method_iseq_t.cref), into *CREF; 0 for a method of another kind. */
int rbi_vm_cme_cref(struct rbi_target *t, const struct rbi_vm *vm, uint64_t cme,
		    uint64_t *cref);
/* The innermost lexical scope (rb_cref_t) of the frame whose control frame
   is CFP and that runs ISEQ (0 for a C frame), as vm_env_cref finds it, into
   *CREF (0: none found).  RBI_CORRUPT if CFP runs something else now. */
int rbi_vm_frame_cref(struct rbi_target *t, struct rbi_vm *vm, uint64_t cfp, uint64_t iseq,
		      uint64_t *cref);
/* rb_cref_t's words, one shape from 2.6 to 3.4: flags, refinements,
   klass_or_self (klass before 3.0), next, scope_visi. */
#define RBI_CREF_REFINEMENTS 8
#define RBI_CREF_KLASS_OR_SELF 16
#define RBI_CREF_NEXT 24
/* One lexical scope (rb_cref_t): the class or module whose constants it
   sees (CREF_CLASS; 0 if a `class << obj` scope's singleton class is not
   made yet), the scope around it (0 at the top level), and whether eval
   pushed it (constant lookup skips those). */
struct rbi_cref {
	uint64_t klass, next;
	bool pushed_by_eval;
};
/* A method entry's METHOD_ENTRY_INVALIDATED: IMEMO_FL_USER5, FL_USER9
   (method.h 3.1-3.4). */
#define RBI_METHOD_ENTRY_INVALIDATED (1ull << (RBI_FL_USHIFT + 9))
/* IMEMO_FL_USER1 and _USER3 (FL_USER5, FL_USER7) of a cref, 2.6-3.4. */
#define RBI_CREF_FL_PUSHED_BY_EVAL (1ull << (RBI_FL_USHIFT + 5))
#define RBI_CREF_FL_SINGLETON (1ull << (RBI_FL_USHIFT + 7))
bool rbi_vm_cref_read(struct rbi_target *t, struct rbi_vm *vm, uint64_t cref,
		      struct rbi_cref *out);
/* The address of rb_global_tbl's rb_id_table into *TABLE: by its symbol,
   else from the code of variable.c's exported functions that read it,
   checked by finding $stdout in it.  RBI_UNSUPPORTED if not found. */
int rbi_vm_global_table(struct rbi_target *t, const struct rbi_vm *vm, uint64_t *table);
/* The value of the global variable NAME ("$foo", global.c).  RBI_INVAL for
   no such global; RBI_UNSUPPORTED for a virtual one (a getter function
   gives its value: $~, $0...) or when the global table cannot be found. */
int rbi_vm_global(struct rbi_target *t, struct rbi_vm *vm, const char *name,
		  uint64_t *value);
/* The object singleton class SKLASS is attached to (RCLASS_ATTACHED_OBJECT:
   classext, or the hidden __attached__ ivar up to 3.1).  False if
   unreadable, and always on Ruby 3.2 (object shapes). */
bool rbi_vm_class_attached(struct rbi_target *t, struct rbi_vm *vm,
			   uint64_t sklass, uint64_t *attached);

/* ---- Images' data (image-words.c) ---------------------------------------- */

/* The words of IMG's writable segment into *WORDS (malloc'd, *N of them):
   RBI_ITER_END when it has none, RBI_CORRUPT when it spans more than MAX
   bytes. */
int rbi_vm_image_words(struct rbi_target *t, const struct rbi_image *img, uint64_t max,
		       uint64_t **words, size_t *n);

/* ---- Fibers (fiber.c) --------------------------------------------------- */

/* How far a fiber's members after its rb_context_t sit from the layout's
   offsets, in bytes (0, or +-160: the build's rb_jmpbuf_t), as checked on
   the threads' current fibers.  RBI_LAYOUT when no shift fits. */
int rbi_vm_fiber_shift(struct rbi_target *t, int32_t *shift);

/* ---- ISeqs (iseq.c) ----------------------------------------------------- */

enum rbi_iseq_type {
	RBI_ISEQ_TOP, RBI_ISEQ_METHOD, RBI_ISEQ_BLOCK, RBI_ISEQ_CLASS,
	RBI_ISEQ_RESCUE, RBI_ISEQ_ENSURE, RBI_ISEQ_EVAL, RBI_ISEQ_MAIN,
	RBI_ISEQ_PLAIN,
};

/* What we use of an rb_iseq_t and its constant body. */
struct rbi_iseq {
	uint64_t addr;
	uint32_t type;                  /* enum rbi_iseq_type */
	uint32_t iseq_size;             /* in VALUEs */
	uint64_t iseq_encoded;
	uint64_t pathobj, label, base_label;
	int first_lineno;
	uint64_t insns_info, positions, succ_index_table;
	uint32_t insns_info_size;
	uint64_t parent_iseq, local_iseq;
	uint64_t body;                  /* the rb_iseq_constant_body */
	uint32_t builtin_attrs;         /* enum rb_builtin_attr (3.3+); 0 if none */
};

/* rb_builtin_attr: a builtin method written in Ruby that backtraces show
   as a C method (3.4+: Array#each, #map, #select and Integer#times, which
   YJIT runs from <internal:array> and <internal:numeric>), at its
   caller's path and line (vm_backtrace.c, BUILTIN_ATTR_C_TRACE). */
#define RBI_BUILTIN_ATTR_C_TRACE 0x08u
static inline bool rbi_iseq_c_trace(const struct rbi_iseq *is)
{
	return is->builtin_attrs & RBI_BUILTIN_ATTR_C_TRACE;
}

/* Read and check the iseq at ADDR (an imemo_iseq with a sane body). */
int rbi_iseq_read(struct rbi_target *t, const struct rbi_vm *vm, uint64_t addr,
		  struct rbi_iseq *out);
/* Its path (pathobj, or pathobj[0]) into BUF; *CUT: the bytes of it that
   did not fit (0: BUF holds it whole). */
int rbi_iseq_path(struct rbi_target *t, const struct rbi_vm *vm,
		  const struct rbi_iseq *is, char *buf, size_t cap, uint64_t *cut);
/* The source line of the instruction before PC (what Ruby reports for a
   frame whose pc is PC); 0 if the iseq has no line table.  RBI_CORRUPT if
   PC is outside the iseq.  A line table that gives a line the VM cannot
   have (an entry past its end, a line before the first line of the code
   it was compiled from) is no error for the frame: *LINE is 0 (unknown) and BAD (CAP
   bytes) says why; else BAD is "". */
#define RBI_LINE_WHY_MAX 160
int rbi_iseq_line(struct rbi_target *t, const struct rbi_vm *vm,
		  const struct rbi_iseq *is, uint64_t pc, int *line, char *bad, size_t bad_cap);
/* rbi_iseq_line for the frame running IS at PC whose cfp->jit_return is
   JIT_RETURN.  JIT code (YJIT) pushes a frame without its pc and writes
   the pc only when it calls out, so in a frame JIT code entered, a pc
   outside the iseq is the stale one of an earlier frame in that slot: the
   line is then unknown (*LINE 0), not an error.  A pc inside the iseq is
   the line the frame last called out from. */
int rbi_iseq_frame_line(struct rbi_target *t, const struct rbi_vm *vm,
			const struct rbi_iseq *is, uint64_t pc, uint64_t jit_return, int *line,
			char *bad, size_t bad_cap);
/* Ruby 3.4's calculate_iseq_label for IS run by a method of OWNER (0 if
   none): "Foo#bar", "block in Foo#bar", "block (2 levels) in <main>".
   *CUT: the bytes of the label that did not fit in BUF (a name longer than
   RBI_NAME_MAX counts what was not read of it), 0 if it is whole. */
#define RBI_NAME_MAX 4096
/* The bytes of a text of LEN bytes (as snprintf counts it) that did not
   fit in a buffer of CAP bytes. */
static inline uint64_t rbi_cut_of(size_t len, size_t cap)
{
	return len >= cap ? len - (cap - 1) : 0;
}
/* A name of IS (its label or base label, the String STR) into BUF, as
   rbi_vm_string_cut; where the bytes cannot be read, what IS's type alone
   says ("<main>"). */
int rbi_iseq_name(struct rbi_target *t, const struct rbi_vm *vm, const struct rbi_iseq *is,
		  uint64_t str, char *buf, size_t cap, uint64_t *cut);
int rbi_iseq_label34(struct rbi_target *t, struct rbi_vm *vm,
		     const struct rbi_iseq *is, uint64_t owner,
		     char *buf, size_t cap, uint64_t *cut);

/* ---- frame-own.c: frames kept past their callback ---------------------- */

/* *DST: a copy of S (NULL for NULL); RBI_NOMEM. */
int rbi_dup_opt(const char **dst, const char *s);
/* Copy SRC into DST with every string its own: RBI_NOMEM, DST then holds
   none.  Disown frees DST's strings. */
int rbi_frame_own(struct rbi_frame *dst, const struct rbi_frame *src);
void rbi_frame_disown(struct rbi_frame *f);

#endif
