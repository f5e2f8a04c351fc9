/* class.c: class and module names, for Ruby 3.4-style method labels.
 *
 * Port of vm_backtrace.c (3.4) rb_gen_method_name: "Foo::Bar#baz" for an
 * instance method, "Foo::Bar.baz" for a singleton method of a class or
 * module, plain "baz" otherwise (anonymous owners, temporary names, those
 * of set_temporary_name too).
 *
 * Where the permanent class path lives (variable.c classname):
 *  - 3.3+: RCLASS_EXT(klass)->classpath (the classext is embedded after
 *    struct RClass), and the singleton's attached object beside it;
 *  - up to 3.1: the hidden ivars __classpath__ and __attached__ in the
 *    class's ivar table (RCLASS_EXT(klass)->iv_tbl, an st_table);
 *  - 3.2 keeps class ivars in object shapes (the shape tree has to be
 *    walked to find an ivar's index): not reachable cheaply, so 3.2
 *    labels fall back to the unqualified method name, as rbspy and the
 *    OpenTelemetry profiler do for everything before 3.3. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm/values/values.h"

#define CLASSPATH_MAX 512

/* Class ivar tables hold a handful of entries. */
#define CLASS_IVARS_MAX 4096

/* The hidden class ivar ID of KLASS (<= 3.1: RCLASS_IV_TBL, an st_table)
   into *OUT. */
static bool class_ivar(struct rbi_target *t, const struct rbi_vm *vm,
		       uint64_t klass, uint64_t id, uint64_t *out)
{
	const struct rbi_layout *l = vm->layout;
	struct rbi_st_entries e = { 0 };
	uint8_t hdr[256];
	uint64_t ext, tbl, key, record;
	bool found = false;

	if (!id || l->rclass_ptr == RBI_ABSENT || l->classext_iv_tbl == RBI_ABSENT ||
	    !rbi_vm_st_layout(l) || RBI_ST_HEADER_SIZE(l) > sizeof(hdr) ||
	    rbi_read_u64(t, klass + l->rclass_ptr, &ext) || !ext || (ext & 7) ||
	    rbi_read_u64(t, ext + l->classext_iv_tbl, &tbl) || !tbl || (tbl & 7) ||
	    rbi_read(t, tbl, hdr, RBI_ST_HEADER_SIZE(l)) ||
	    rbi_vm_st_entries(t, l, hdr, CLASS_IVARS_MAX, &e)) {
		free(e.words);
		return false;
	}
	for (uint64_t i = 0; i < e.count && !found; i++) {
		if (rbi_vm_st_entry(l, &e, i, &key, &record) && key == id) {
			*out = record;
			found = true;
		}
	}
	free(e.words);
	return found;
}

/* Lookups of the class ivar IDs before a failure is taken for good.  Every
   Ruby that keeps class names in them interns them while it boots, so a
   lookup that finds none read something torn or unreadable (a Ruby still
   booting, a sampler's reads of a moving process): the next name tries
   again, and the sampler keeps no label made meanwhile. */
#define CLASS_IDS_TRIES 8

/* Is a live process's symbol table still looked for (rbi_vm_symbols_again)?
   Until then no ID has a name. */
static bool symbols_pending(const struct rbi_target *t, const struct rbi_vm *vm)
{
	return !vm->info.symbols && !vm->symbols_given_up && rbi_target_is_live(t);
}

static void class_ids(struct rbi_target *t, struct rbi_vm *vm)
{
	size_t missed = rbi_target_missed(t);

	if (vm->class_ids_looked_up)
		return;
	if (vm->layout->rclass_ptr == RBI_ABSENT || vm->k.classpath_in_classext) {
		vm->class_ids_looked_up = true;
		return;
	}
	if (rbi_vm_id_lookup(t, vm, "__classpath__", &vm->id_classpath))
		vm->id_classpath = 0;
	if (rbi_vm_id_lookup(t, vm, "__attached__", &vm->id_attached))
		vm->id_attached = 0;
	/* Reads a collecting reader only noted are no try, nor a lookup in a
	   live process whose symbol table is still looked for
	   (rbi_vm_symbols_again). */
	if (rbi_target_missed(t) != missed || symbols_pending(t, vm))
		return;
	vm->class_ids_looked_up = (vm->id_classpath && vm->id_attached) ||
				  ++vm->class_ids_tries >= CLASS_IDS_TRIES;
}

bool rbi_vm_class_names_settled(const struct rbi_target *t, const struct rbi_vm *vm)
{
	/* Not while a live process's symbol table is looked for; then: no
	   name has needed the IDs yet, or they are taken for good. */
	if (symbols_pending(t, vm))
		return false;
	return vm->class_ids_looked_up || !vm->class_ids_tries;
}

/* Is PATH a constant path ("Foo::Bar", "::Foo"): segments that are
   constant names?  (variable.c is_constant_path; a name that starts with
   a byte past ASCII is taken for an upper-case letter, as Ruby takes most
   of them.) */
static bool constant_path(const char *path)
{
	const char *p = path;

	if (!*p)
		return false;
	while (*p) {
		if (p[0] == ':' && p[1] == ':')
			p += 2;
		if (!((*p >= 'A' && *p <= 'Z') || (unsigned char)*p >= 0x80))
			return false;
		while (*p && *p != ':') {
			if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
			      (*p >= '0' && *p <= '9') || *p == '_' ||
			      (unsigned char)*p >= 0x80))
				return false;
			p++;
		}
		if (*p && (p[0] != ':' || p[1] != ':'))
			return false;
	}
	return true;
}

/* Whether the classext of KLASS, whose path is PATH, says the path is
   permanent (rb_mod_name0's test: classext->permanent_classpath, 3.3+).
   Without that bit in the layout, a constant path is taken for permanent:
   make_temporary_path builds "#<Class:0x...>::Name" and
   Module#set_temporary_name refuses constant paths; but C code names some
   classes with other words ("fatal", "ARGF.class"), which only the bit
   tells apart. */
static bool permanent_path(struct rbi_target *t, const struct rbi_layout *l, uint64_t klass,
			   const char *path)
{
	uint32_t bit = l->classext_permanent_classpath;
	uint8_t byte;

	if (bit == RBI_ABSENT)
		return constant_path(path);
	return !rbi_read(t, klass + l->rclass_classext + bit / 8, &byte, 1) &&
	       (byte & (1u << (bit % 8)));
}

/* The permanent class path of class or module KLASS into BUF; false if it
   has none we can read. */
static bool class_path(struct rbi_target *t, struct rbi_vm *vm,
		       uint64_t klass, char *buf, size_t cap, uint64_t *cut)
{
	const struct rbi_layout *l = vm->layout;
	uint64_t path;

	*cut = 0;
	if (!vm->k.classpath_in_classext) {
		/* Up to 3.1 a path under __classpath__ is always permanent. */
		class_ids(t, vm);
		return class_ivar(t, vm, klass, vm->id_classpath, &path) &&
		       rbi_vm_heap_p(vm, path) &&
		       !rbi_vm_string_cut(t, vm, path, buf, cap, cut) && buf[0];
	}
	if (l->rclass_classext == RBI_ABSENT || l->classext_classpath == RBI_ABSENT)
		return false;
	if (rbi_read_u64(t, klass + l->rclass_classext + l->classext_classpath, &path) ||
	    !rbi_vm_heap_p(vm, path) ||
	    rbi_vm_string_cut(t, vm, path, buf, cap, cut) || !buf[0])
		return false;
	return permanent_path(t, l, klass, buf);
}

static bool class_or_module(struct rbi_target *t, const struct rbi_vm *vm,
			    uint64_t v, uint64_t *flags)
{
	if (rbi_vm_obj_flags(t, vm, v, flags))
		return false;
	return (*flags & RBI_T_MASK) == RBI_T_CLASS || (*flags & RBI_T_MASK) == RBI_T_MODULE;
}

size_t rbi_vm_method_name(struct rbi_target *t, struct rbi_vm *vm,
			  uint64_t owner, const char *name, char *buf, size_t cap,
			  bool *qualified)
{
	const struct rbi_layout *l = vm->layout;
	char path[CLASSPATH_MAX];
	uint64_t flags, attached, path_cut;
	char sep = '#';
	size_t plain = (size_t)snprintf(buf, cap, "%s", name);

	*qualified = false;
	/* Classes move under GC.compact: read the one a frame's method entry
	   still names at its old address where it is now. */
	if (!owner || !class_or_module(t, vm, owner = rbi_vm_location(t, vm, owner), &flags))
		return plain;
	/* RCLASS_SINGLETON_P: only a T_CLASS carries FL_SINGLETON. */
	if ((flags & RBI_T_MASK) == RBI_T_CLASS && (flags & vm->k.fl_singleton)) {
		if (!vm->k.classpath_in_classext) {
			class_ids(t, vm);
			if (!class_ivar(t, vm, owner, vm->id_attached, &attached))
				return plain;
		} else if (l->rclass_classext == RBI_ABSENT ||
			   l->classext_attached_object == RBI_ABSENT ||
			   rbi_read_u64(t, owner + l->rclass_classext +
					l->classext_attached_object, &attached)) {
			return plain;
		}
		if (!class_or_module(t, vm, attached = rbi_vm_location(t, vm, attached), &flags))
			return plain;
		owner = attached;
		sep = '.';
	}
	if (!class_path(t, vm, owner, path, sizeof(path), &path_cut))
		return plain;
	*qualified = true;
	return (size_t)snprintf(buf, cap, "%s%c%s", path, sep, name) + path_cut;
}

/* rb_class_real: KLASS without singleton classes and include wrappers. */
#define CLASS_CHAIN_MAX 64

static bool class_super(struct rbi_target *t, const struct rbi_vm *vm,
			uint64_t klass, uint64_t *super)
{
	const struct rbi_layout *l = vm->layout;

	if (l->rclass_super != RBI_ABSENT)
		return !rbi_read_u64(t, klass + l->rclass_super, super);
	if (l->rclass_classext != RBI_ABSENT && l->classext_super != RBI_ABSENT)
		return !rbi_read_u64(t, klass + l->rclass_classext + l->classext_super,
				     super);
	return false;
}

bool rbi_vm_class_path(struct rbi_target *t, struct rbi_vm *vm, uint64_t klass,
		       char *buf, size_t cap, uint64_t *cut)
{
	uint64_t flags, unused;

	buf[0] = '\0';
	if (!class_or_module(t, vm, klass, &flags) ||
	    !class_path(t, vm, klass, buf, cap, cut ? cut : &unused)) {
		buf[0] = '\0';
		return false;
	}
	return true;
}

bool rbi_vm_class_real(struct rbi_target *t, struct rbi_vm *vm, uint64_t klass,
		       uint64_t *real)
{
	uint64_t flags;

	for (int i = 0; i < CLASS_CHAIN_MAX; i++) {
		if (rbi_vm_obj_flags(t, vm, klass, &flags))
			return false;
		if ((flags & RBI_T_MASK) == RBI_T_ICLASS ||
		    ((flags & RBI_T_MASK) == RBI_T_CLASS && (flags & vm->k.fl_singleton))) {
			if (!class_super(t, vm, klass, &klass))
				return false;
			continue;
		}
		*real = klass;
		return true;
	}
	return false;
}

bool rbi_vm_class_name(struct rbi_target *t, struct rbi_vm *vm, uint64_t klass,
		       char *buf, size_t cap)
{
	buf[0] = '\0';
	return rbi_vm_class_real(t, vm, klass, &klass) &&
	       rbi_vm_class_path(t, vm, klass, buf, cap, NULL);
}

int rbi_vm_classext(struct rbi_target *t, const struct rbi_vm *vm, uint64_t klass,
		    uint64_t *ext)
{
	const struct rbi_layout *l = vm->layout;
	int rc;

	if (l->rclass_classext != RBI_ABSENT) {
		*ext = klass + l->rclass_classext;
		return RBI_OK;
	}
	if (l->rclass_ptr == RBI_ABSENT)
		return rbi_fail(RBI_UNSUPPORTED, "this Ruby's layout has no classext");
	if ((rc = rbi_read_u64(t, klass + l->rclass_ptr, ext)))
		return rc;
	if (!*ext || (*ext & 7))
		return rbi_fail(RBI_CORRUPT, "class 0x%" PRIx64 " has no classext", klass);
	return RBI_OK;
}

/* ---- For the heap walk (heap.c) ------------------------------------------ */

bool rbi_vm_class_super(struct rbi_target *t, const struct rbi_vm *vm,
			uint64_t klass, uint64_t *super)
{
	return class_super(t, vm, klass, super);
}

bool rbi_vm_class_attached(struct rbi_target *t, struct rbi_vm *vm,
			   uint64_t sklass, uint64_t *attached)
{
	const struct rbi_layout *l = vm->layout;

	if (!vm->k.classpath_in_classext) {
		class_ids(t, vm);
		return class_ivar(t, vm, sklass, vm->id_attached, attached);
	}
	return l->rclass_classext != RBI_ABSENT &&
	       l->classext_attached_object != RBI_ABSENT &&
	       !rbi_read_u64(t, sklass + l->rclass_classext +
			     l->classext_attached_object, attached);
}
