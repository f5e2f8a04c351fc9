/* eval.h: what `p` evaluates (lib/vm/eval): constants, lexical scopes,
 * globals.  Not installed. */
#ifndef RBI_VM_EVAL_H
#define RBI_VM_EVAL_H

#include "vm/stack/stack.h"

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

#endif
