/* stack.h: threads, fibers, frames, environments and iseqs
 * (lib/vm/stack).  Not installed. */
#ifndef RBI_VM_STACK_H
#define RBI_VM_STACK_H

#include "vm/vm/find.h"

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
/* A name of IS (its label or base label, the String STR) into BUF, as
   rbi_vm_string_cut; where the bytes cannot be read, what IS's type alone
   says ("<main>"). */
int rbi_iseq_name(struct rbi_target *t, const struct rbi_vm *vm, const struct rbi_iseq *is,
		  uint64_t str, char *buf, size_t cap, uint64_t *cut);
/* Ruby 3.4's calculate_iseq_label for IS run by a method of OWNER (0 if
   none): "Foo#bar", "block in Foo#bar", "block (2 levels) in <main>".
   *CUT: the bytes of the label that did not fit in BUF (a name longer than
   RBI_NAME_MAX counts what was not read of it), 0 if it is whole. */
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
