/* heap-object.h: what heap-object.c and the readers of single objects
 * keep in a heap walk.  Not installed. */
#ifndef RBI_HEAP_OBJECT_H
#define RBI_HEAP_OBJECT_H

#include "util/table.h"
#include "vm/heap/heap-iter.h"
#include "vm/vm.h"

struct heap_page;
struct heap_alloc;               /* heap-alloc.c */
struct heap_insn_addr;          /* heap-iseq-insns.c */
struct rbi_insn_table;
struct heap_genivar;             /* heap-genivar.c */

/* Class names are read as far as objects --by-class reads them. */
#define HEAP_OBJECT_NAME_MAX RBI_NAME_MAX

/* Buffers rbi_heap_object_read hands out, valid until its next call. */
struct heap_object_scratch {
	uint64_t *refs;
	size_t refs_cap;
	uint64_t *elems;        /* a heap Array's elements as read */
	size_t elems_cap;
	char *value;
	size_t value_cap;
	struct rbi_st_entries st;       /* a Hash's table as read */
	struct rbi_ivars ivars;         /* an Object's, shapes read once */
	struct rbi_map data_kinds;      /* rb_data_type_t -> DATA_* (heap-object.c) */
	char name[HEAP_OBJECT_NAME_MAX];
	char real_name[HEAP_OBJECT_NAME_MAX];
	uint64_t name_cut, real_name_cut;       /* bytes of each left out */
	uint64_t *marks;        /* a class's marked words (heap-class.c) */
	size_t marks_cap;
	uint8_t *ccs;           /* a class's call cache entries as read */
	size_t ccs_cap;
	uint8_t jit;            /* heap-iseq.c: whether a JIT runs, looked
				   at once a walk (0: not yet) */
	/* heap-iseq-insns.c: this Ruby's instruction table and the VM's
	   instruction addresses sorted, looked up once a walk (insns_state
	   0: not yet). */
	uint8_t insns_state;
	const struct rbi_insn_table *insns;
	struct heap_insn_addr *insn_addrs;
	uint32_t insn_naddrs;
	uint64_t bits_page;     /* the struct heap_page whose bitmaps BITS
				   holds (heap-gc.c); 0: none */
	uint8_t *bits;
	size_t bits_cap;
	uint64_t current_ec;    /* heap-thread.c: GET_EC() as dump_all
				   would see it, looked up once a walk */
	bool current_ec_known;
	int32_t fiber_shift;    /* heap-thread.c: rbi_vm_fiber_shift, once a
				   walk (FIBER_SHIFT_RC its outcome) */
	int fiber_shift_rc;
	bool fiber_shift_tried;
	struct heap_alloc *alloc;       /* the allocation tracer's table
					   (heap-alloc.c), read at the first
					   rbi_heap_object_alloc of a walk */
	struct heap_genivar *genivar;   /* the table of generic instance
					   variables (heap-genivar.c), read at
					   the first object with FL_EXIVAR */
	struct heap_maybe *maybe;       /* gc_mark_maybe's test (rbi_heap_object_maybe) */
	bool maybe_tried;               /* opened (or failed to) this walk */
	bool genivar_has;       /* the last object read has generic ivars */
	int genivar_rc;         /* and they were read (RBI_OK), or why not
				   (GENIVAR_ERR) */
	uint64_t genivar_n;
	char genivar_err[RBI_ERRMSG_MAX];
};

void rbi_heap_alloc_free(struct heap_alloc *a);
void rbi_heap_genivar_free(struct heap_genivar *g);

void rbi_heap_object_scratch_free(struct heap_object_scratch *sc);

/* The object shape of the Object in slot S (3.3+: the upper 32 bits of
   its flags) into *SHAPE, rb_shape's bytes; NULL when this Ruby's shapes
   cannot be read.  RBI_CORRUPT for an id past the shapes. */
int rbi_heap_object_shape(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
		      const uint8_t **shape);

/* The heap objects among the N words at P (the slot's bytes, or a buffer
   read) as references of S, its class left out as dump_all does. */
int rbi_heap_add_refs(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
		      struct rbi_heap_object *out, const void *p, uint64_t n);

/* N words of S's WHAT (an Array's elements, an Object's instance
   variables) at ADDR in the target into the scratch buffer (*WORDS, valid
   until the next call). */
int rbi_heap_read_words(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
			const char *what, uint64_t addr, uint64_t n, const uint64_t **words);

/* The table of the Hash in slot S (its ar_table or, with
   RHASH_ST_TABLE_FLAG, its st_table's header: RBI_ST_HEADER_SIZE bytes):
   as.ar / as.st where RHash has them (up to 3.2), read into BUF, else in
   the slot right after struct RHash (3.3+).  *TABLE: NULL when the layout
   lacks what it takes. */
#define RBI_HASH_TABLE_MAX 256
int rbi_heap_hash_table(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
			uint8_t buf[RBI_HASH_TABLE_MAX], const uint8_t **table);

/* The live entries of the st_table whose header (RBI_ST_HEADER_SIZE
   bytes) is HDR as references of S: their keys (if KEYS) and records, in
   st_foreach's order; its num_entries to *SIZE. */
int rbi_heap_st_refs(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
		     struct rbi_heap_object *out, const uint8_t *hdr, bool keys, int64_t *size);

/* The most bytes of a T_DATA's struct read: rb_proc_t, rb_binding_t and
   struct METHOD are 40 or 48 bytes, struct argf's marked words end at 80. */
#define RBI_DATA_BYTES_MAX 128u
/* The first SIZE bytes (at most RBI_DATA_BYTES_MAX) of the T_DATA S's
   struct into B: in the slot where RTypedData's data pointer would be
   when EMBEDDED (3.3+), else at DATA in the target. */
int rbi_heap_data_struct(struct rbi_heap_iter *it, const struct rbi_heap_slot *s, uint64_t data,
			 bool embedded, uint8_t *b, uint64_t size);

/* heap-data.c: which of its T_DATA types (1...) the one whose
   wrap_struct_name is NAME is; 0: none. */
unsigned rbi_heap_data_kind(const char *name);
/* heap-data.c: whether data type TYPE declares its marking (3.3+
   RUBY_TYPED_DECL_MARKING): read as data whatever its name. */
bool rbi_heap_data_declared(struct rbi_heap_iter *it, uint64_t type);

/* heap-data.c: the references of a T_DATA of another type whose marking
   is data (no mark function; 3.3+'s declarative marking), TYPED false
   for an untyped RData; left unknown where it marks with C code. */
int rbi_heap_data_generic_refs(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
			       struct rbi_heap_object *out, bool typed, uint64_t type,
			       uint64_t data, bool embedded);
/* The references of the T_DATA in slot S, of heap-data.c's type KIND,
   whose data is DATA or EMBEDDED in the slot, into OUT; left unknown
   where the layout lacks what its marking reads. */
int rbi_heap_data_refs(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
		       struct rbi_heap_object *out, unsigned kind, uint64_t data, bool embedded);

/* heap-refs.c: the references of the types marked by words of their slot
   (Float, Bignum, Symbol, Rational, Complex, Regexp, MatchData) or of a
   File's rb_io_t; others, and a layout without those words, are left
   unknown. */
int rbi_heap_slot_refs(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
		       struct rbi_heap_object *out);
/* The rb_io_t of the File in slot S read into BUF, *IO pointing at it;
   NULL when the File is closed (fptr 0).  RBI_UNSUPPORTED when the
   layout lacks it. */
#define RBI_IO_MAX 512
int rbi_heap_file_io(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
		     uint8_t buf[RBI_IO_MAX], const uint8_t **io);

/* heap-memsize.c: what a Bignum, Regexp or MatchData in slot S owns
   outside it (rb_obj_memsize_of less the slot) into *OWNED;
   RBI_UNSUPPORTED for other types and layouts that lack it. */
int rbi_heap_owned(struct rbi_heap_iter *it, const struct rbi_heap_slot *s, uint64_t *owned);

/* What the GC marks of the T_CLASS, T_MODULE or T_ICLASS in slot S, its
   RBasic.klass left out, in marking order (heap-class.c): N words at
   *MARKS (the scratch's), special constants among them as Ruby passes
   them to gc_mark.  RBI_UNSUPPORTED when this Ruby's marking of classes
   is not known or its layout lacks a field it needs. */
int rbi_heap_class_marks(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
			 const uint64_t **marks, size_t *n);

/* heap-iseq.c: the references of the IMEMO iseq in slot S, as the GC
   marks them (iseq.c rb_iseq_mark_and_move), into OUT; left unknown for
   the Rubies whose marking was not read, an iseq still being compiled or
   loaded, and marks of hooks or JIT code. */
int rbi_heap_iseq_refs(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
		       struct rbi_heap_object *out);

/* heap-imemo.c: the references of the IMEMO callcache, callinfo, ifunc
   and memo in slot S into OUT (left unknown where their marking or words
   cannot be read); *MINE false for the other IMEMOs, left alone. */
int rbi_heap_imemo_refs(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
			struct rbi_heap_object *out, bool *mine);

/* heap-genivar.c: the references the generic instance variables of S
   (FL_EXIVAR set) give it, as rb_mark_generic_ivar marks them, into OUT,
   and how many it has (set, not Qundef) to *N; RBI_UNSUPPORTED (with
   why) when the table of them was not found, RBI_CORRUPT when S is not
   in it, read errors: then S's references are unknown. */
int rbi_heap_genivar_refs(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
			  struct rbi_heap_object *out, uint64_t *n);
/* What rb_generic_ivar_memsize adds to S's memsize into *SIZE; errors as
   above (then S's memsize is unknown). */
int rbi_heap_genivar_memsize(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
			     uint64_t *size);

/* The walk's gc_mark_maybe test (heap-maybe.c), opened at the first call;
   NULL when the heap's pages cannot be told. */
struct heap_maybe *rbi_heap_object_maybe(struct rbi_heap_iter *it);

/* heap-thread.c: the references of a Thread (data type "VM/thread"), a
   Fiber ("fiber") or a Ractor ("ractor") whose struct is at DATA, as
   their mark functions mark them; left unknown where a part cannot be
   read exactly (a live process not paused: its stacks move). */
enum heap_thread_kind { HEAP_THREAD, HEAP_FIBER, HEAP_RACTOR };
int rbi_heap_thread_refs(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
			 enum heap_thread_kind kind, uint64_t data, struct rbi_heap_object *out);

/* heap-iseq-insns.c: mark the VALUE operands of the iseq in slot S whose
   instructions are SIZE words at CODE (translated: label addresses, else
   instruction numbers), as iseq.c rb_iseq_each_value with each_insn_value
   does in 2.7 to 3.2, into OUT.  *KNOWN false (and nothing marked that
   counts) when an instruction does not decode, or this Ruby's
   instruction tables are not known or not found. */
int rbi_heap_iseq_operands(struct rbi_heap_iter *it, const struct rbi_heap_slot *s,
			   struct rbi_heap_object *out, uint64_t code, uint32_t size,
			   bool translated, bool *known);

/* The walk's scratch, made by rbi_heap_scratch_open: every exported
   reader of one object opens it first, so that what it calls finds it. */
int rbi_heap_scratch_open(struct rbi_heap_iter *it);
struct heap_object_scratch *rbi_heap_iter_scratch(struct rbi_heap_iter *it);

#endif
