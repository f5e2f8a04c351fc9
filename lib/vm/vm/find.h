/* find.h: finding the VM (lib/vm/vm): its image, version, layout and
 * symbol table, live or offline.  Not installed. */
#ifndef RBI_VM_FIND_H
#define RBI_VM_FIND_H

#include "vm/values/values.h"

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
/* A live process whose symbol table was not found when it was opened (read
   while Ruby grew it, as it does while it boots): look for it again (at
   most every 50 ms, for 5 s), for those who keep reading it (the sampler,
   each poll).  Without it no ID has a name: no class path on
   <= 3.1, no method name of a C frame. */
void rbi_vm_symbols_again(struct rbi_target *t, struct rbi_vm *vm);

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

/* Find Ruby and its VM in T (cached in t->vm).  rbi_ruby_info()'s work. */
int rbi_vm_get(struct rbi_target *t, struct rbi_vm **out);
void rbi_vm_free(struct rbi_vm *vm);

/* ---- Images' data (image-words.c) ---------------------------------------- */

/* The words of IMG's writable segment into *WORDS (malloc'd, *N of them):
   RBI_ITER_END when it has none, RBI_CORRUPT when it spans more than MAX
   bytes. */
int rbi_vm_image_words(struct rbi_target *t, const struct rbi_image *img, uint64_t max,
		       uint64_t **words, size_t *n);

#endif
