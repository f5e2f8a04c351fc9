/* values.h: reading Ruby values (lib/vm/values): objects, strings, arrays,
 * IDs, classes, shapes, st and id tables, instance variables, lists.  Not installed. */
#ifndef RBI_VM_VALUES_H
#define RBI_VM_VALUES_H

#include "vm/base.h"

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

/* Are the names made so far final?  False while a live process's symbol
   table is still looked for (rbi_vm_symbols_again: no ID has a name yet),
   and once a <= 3.1 VM's class ivar IDs were looked for and not found,
   until a lookup finds them or CLASS_IDS_TRIES failed (class.c): names
   made meanwhile fall back to the method's own (or none) and are not to
   be kept. */
bool rbi_vm_class_names_settled(const struct rbi_target *t, const struct rbi_vm *vm);

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

/* The object singleton class SKLASS is attached to (RCLASS_ATTACHED_OBJECT:
   classext, or the hidden __attached__ ivar up to 3.1).  False if
   unreadable, and always on Ruby 3.2 (object shapes). */
bool rbi_vm_class_attached(struct rbi_target *t, struct rbi_vm *vm,
			   uint64_t sklass, uint64_t *attached);

#endif
