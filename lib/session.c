/* session.c: the target a caller opens (rbi_target): a memory backend and
 * what the layers learned from it (images, the located VM), opened,
 * refreshed and closed here.  It sits above the layers and owns their
 * results; none of them calls up into it: what a layer needs of the
 * session it is handed (rbi_profile_record's openers). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "mem/target.h"
#include "profile/profile.h"
#include "vm/vm.h"

static void target_free(struct rbi_target *t)
{
	if (!t)
		return;
	rbi_pause_free(t->pause);       /* never leave it stopped */
	rbi_vm_free(t->vm);
	free(t->seed);
	rbi_images_free(t->images);
	rbi_region_list_free(&t->regions);
	rbi_cache_free(&t->cache);
	rbi_diag_free(&t->diag);
	free(t->sysroot);
	free(t->layout_cache);
	free(t->ruby_version);
	free(t);
}

/* The caller's backend OPS into DST by the ABI rule (RBI_COPY_IN: what
   its size holds; the members appended since are NULL).  0.1-0.7 had a
   version number where the size is (ruby-introspect.h): 1-3 are read as
   the size of that version.  RBI_INVAL if it does not reach CLOSE. */
static int ops_copy(struct rbi_mem_ops *dst, const struct rbi_mem_ops *ops)
{
	static const size_t by_version[] = {
		[1] = offsetof(struct rbi_mem_ops, signal),
		[2] = offsetof(struct rbi_mem_ops, registers),
		[3] = offsetof(struct rbi_mem_ops, registers) + sizeof(ops->registers),
	};
	size_t size = ops->size;

	if (size < RBI_ARRAY_SIZE(by_version))
		size = by_version[size];
	if (size < offsetof(struct rbi_mem_ops, close) + sizeof(ops->close))
		return rbi_fail(RBI_INVAL, "memory backend's size %u is too small for "
				"its required members", ops->size);
	*dst = (struct rbi_mem_ops){ 0 };
	rbi_copy_sized(dst, sizeof(*dst), ops, size);
	return RBI_OK;
}

static int target_new(const struct rbi_mem_ops *ops, void *be,
		      const struct rbi_open_opts *opts, struct rbi_target **out)
{
	struct rbi_target *t = calloc(1, sizeof(*t));
	int rc;

	if (!t)
		return rbi_fail(RBI_NOMEM, "out of memory");
	if ((rc = ops_copy(&t->ops_own, ops))) {
		free(t);
		return rc;
	}
	t->ops = &t->ops_own;
	t->be = be;
	if ((opts && RBI_HAS_FIELD(opts, sysroot) &&
	     opts->sysroot && !(t->sysroot = strdup(opts->sysroot))) ||
	    (opts && RBI_HAS_FIELD(opts, ruby_version) && opts->ruby_version &&
	     !(t->ruby_version = strdup(opts->ruby_version))) ||
	    (opts && RBI_HAS_FIELD(opts, layout_cache) && opts->layout_cache &&
	     !(t->layout_cache = strdup(opts->layout_cache)))) {
		target_free(t);
		return rbi_fail(RBI_NOMEM, "out of memory");
	}
	*out = t;
	return RBI_OK;
}

RBI_EXPORT int rbi_target_open_ops(const struct rbi_mem_ops *ops, void *be,
				   const struct rbi_open_opts *opts,
				   rbi_target **out)
{
	if (!ops || !out || !ops->read || !ops->region)
		return rbi_fail(RBI_INVAL, "memory backend lacks required members");
	int rc = target_new(ops, be, opts, out);
	if (rc == RBI_OK && opts && RBI_HAS_FIELD(opts, pid))
		(*out)->pid = opts->pid;
	return rc;
}

RBI_EXPORT int rbi_target_open_pid(pid_t pid, const struct rbi_open_opts *opts,
				   rbi_target **out)
{
	return rbi_target_open_pid_seeded(pid, opts, NULL, out);
}

int rbi_target_open_pid_seeded(pid_t pid, const struct rbi_open_opts *opts,
			       struct rbi_layout_seed *seed, rbi_target **out)
{
	const struct rbi_mem_ops *ops;
	void *be;
	int rc;

	if (!out || pid <= 0) {
		free(seed);
		return rbi_fail(RBI_INVAL, "invalid process id %d", (int)pid);
	}
	rc = rbi_mem_live_open(pid, &ops, &be);
	if (rc) {
		free(seed);
		return rc;
	}
	rc = target_new(ops, be, opts, out);
	if (rc) {
		ops->close(be);
		free(seed);
		return rc;
	}
	(*out)->pid = pid;
	(*out)->live = true;
	(*out)->seed = seed;
	return RBI_OK;
}

struct rbi_layout_seed *rbi_target_layout_seed(rbi_target *t)
{
	struct rbi_layout_seed *seed;

	if (!t || !t->vm || t->vm->layout != &t->vm->dwarf_layout || !t->vm->image ||
	    !t->vm->image->build_id.len || !(seed = malloc(sizeof(*seed))))
		return NULL;
	seed->build_id = t->vm->image->build_id;
	seed->layout = t->vm->dwarf_layout;
	seed->pid = t->pid;
	return seed;
}

RBI_EXPORT int rbi_target_open_core(const char *path,
				    const struct rbi_open_opts *opts,
				    rbi_target **out)
{
	const struct rbi_mem_ops *ops;
	struct rbi_diag diag = { 0 };
	pid_t pid = 0;
	void *be;
	int rc;

	if (!path || !out)
		return rbi_fail(RBI_INVAL, "no core file given");
	rc = rbi_mem_core_open(path, opts, &diag, &pid, &ops, &be);
	if (rc) {
		rbi_diag_free(&diag);
		return rc;
	}
	rc = target_new(ops, be, opts, out);
	if (rc) {
		ops->close(be);
		rbi_diag_free(&diag);
		return rc;
	}
	(*out)->pid = pid;
	(*out)->diag = diag;
	return RBI_OK;
}

RBI_EXPORT void rbi_target_free(rbi_target *t)
{
	if (!t)
		return;
	if (t->ops && t->ops->close)
		t->ops->close(t->be);
	target_free(t);
}

/* The name 0.1-0.7 gave it, still exported in LIBRUBY_INTROSPECT_0.1 so
   that programs linked then keep working. */
RBI_EXPORT void rbi_target_close(rbi_target *t) __attribute__((alias("rbi_target_free")));

RBI_EXPORT int32_t rbi_target_host_tid(rbi_target *t, int32_t tid)
{
	int32_t host = 0;

	return t && rbi_target_task(t, tid, &host) == 1 ? host : 0;
}

RBI_EXPORT const char *rbi_target_warning(const rbi_target *t, size_t index)
{
	if (!t || index >= t->diag.n)
		return NULL;
	return t->diag.msgs[index];
}

/* Do A and B map the same files at the same places?  Anonymous regions
   come and go with every allocation; a change in the files mapped (a
   dlopen, an exec) is what makes the images and the VM's location stale. */
static bool same_files(const struct rbi_region_list *a, const struct rbi_region_list *b)
{
	size_t i = 0, j = 0;

	for (;; i++, j++) {
		while (i < a->n && !a->v[i].path)
			i++;
		while (j < b->n && !b->v[j].path)
			j++;
		if (i == a->n || j == b->n)
			return i == a->n && j == b->n;
		const struct rbi_region *x = &a->v[i], *y = &b->v[j];

		if (x->start != y->start || x->end != y->end ||
		    x->file_offset != y->file_offset || x->prot != y->prot ||
		    strcmp(x->path, y->path))
			return false;
	}
}

RBI_EXPORT int rbi_target_refresh(rbi_target *t)
{
	struct rbi_region_list before;
	const struct rbi_region_list *now;
	int rc;

	if (!t)
		return rbi_fail(RBI_INVAL, "no target");
	if (t->ops->flags & RBI_MEM_STATIC)
		return RBI_OK;
	rbi_cache_clear(&t->cache);
	before = t->regions;
	t->regions = (struct rbi_region_list){ 0 };
	if (t->ops->refresh)
		t->ops->refresh(t->be);
	/* The images and the VM (found by symbols, DWARF and decoding code:
	   most of a command's time) stay while the same files are mapped. */
	rc = rbi_regions(t, &now);
	if (rc || !same_files(&before, now)) {
		rbi_vm_free(t->vm);
		t->vm = NULL;
		rbi_images_free(t->images);
		t->images = NULL;
	}
	rbi_region_list_free(&before);
	/* Tell a process that is gone (or a zombie) now, not at the next
	   read: its region list is what any next call needs first. */
	if (t->live && (rc == RBI_GONE || rc == RBI_ZOMBIE))
		return rc;
	return RBI_OK;
}

/* The recording loop is lib/profile's; the targets it opens are the
   session's, handed down to it. */
RBI_EXPORT int rbi_profile_record(rbi_profile *p, pid_t pid, const struct rbi_record_opts *opts)
{
	static const struct rbi_record_targets targets = {
		.open_pid = rbi_target_open_pid_seeded,
		.layout_seed = rbi_target_layout_seed,
		.free_target = rbi_target_free,
	};

	return rbi_record_run(p, pid, opts, &targets);
}
