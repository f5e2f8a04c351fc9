/* vm.h: everything lib/vm offers the layers above it (lib/native,
 * lib/profile, the session): its rooms' headers, each including the rooms
 * below it (values, vm, stack, eval; the heap walk's API is the public
 * header's).  A file inside lib/vm includes its own room's header.  Not
 * installed. */
#ifndef RBI_VM_H
#define RBI_VM_H

#include "vm/eval/eval.h"

#endif
