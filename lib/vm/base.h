/* base.h: what every room of lib/vm knows of the Ruby inside a target: the
 * VM as found, its constants, the bounds on what is read.  Not installed. */
#ifndef RBI_VM_BASE_H
#define RBI_VM_BASE_H

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
	/* A live process whose symbol table was not found when it was opened
	   (read while Ruby grew it: a chunk of IDs not stored yet): the table
	   is looked for again (rbi_vm_symbols_again) from
	   SYMBOLS_MISSING_SINCE on, until found or given up. */
	uint64_t symbols_missing_since, symbols_tried_ns;
	bool symbols_given_up;
	uint64_t id_classpath, id_attached;
};

/* Ruby version gate: true if the target's Ruby is at least MAJOR.MINOR. */
static inline bool rbi_vm_ge(const struct rbi_vm *vm, int major, int minor)
{
	return vm->info.major > major ||
	       (vm->info.major == major && vm->info.minor >= minor);
}

/* Longest name (a class path, a label) we read whole. */
#define RBI_NAME_MAX 4096
/* The bytes of a text of LEN bytes (as snprintf counts it) that did not
   fit in a buffer of CAP bytes. */
static inline uint64_t rbi_cut_of(size_t len, size_t cap)
{
	return len >= cap ? len - (cap - 1) : 0;
}

#endif
