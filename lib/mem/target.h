/* target.h: struct rbi_target, lib/mem's own.  Only lib/mem and the
 * session (lib/session.c: a target's opening, refresh and end) see its
 * fields; the layers above ask the accessors in lib/internal.h, so that
 * "lib/vm never knows where bytes came from" holds by construction. */
#ifndef RBI_MEM_TARGET_H
#define RBI_MEM_TARGET_H

#include "internal.h"

enum rbi_paused {
	RBI_NOT_PAUSED,
	RBI_PAUSED_BY_US,       /* every thread stopped by rbi_target_pause */
	RBI_PAUSED_ALREADY,     /* found stopped (a debugger holds it) */
};

struct rbi_target {
	const struct rbi_mem_ops *ops;  /* &OPS_OWN */
	struct rbi_mem_ops ops_own;     /* the caller's, by the ABI rule */
	void *be;
	pid_t pid;
	bool live;
	char *sysroot;
	char *ruby_version;     /* rbi_open_opts.ruby_version, or NULL */
	char *layout_cache;     /* rbi_open_opts.layout_cache, or NULL */
	struct rbi_cache cache;
	struct rbi_region_list regions;
	struct rbi_diag diag;
	struct rbi_image_list *images;  /* loaded on first use */
	struct rbi_vm *vm;              /* located on first use */
	struct rbi_layout_seed *seed;   /* another process's DWARF layout, used
					   if this Ruby is the same build */
	enum rbi_paused paused;         /* rbi_target_pause (mem/pause.c) */
	struct rbi_pause *pause;        /* when RBI_PAUSED_BY_US: how */
	int gone;                       /* 0, or how a read found the target
					   gone: RBI_GONE (the process exited)
					   or RBI_TRUNCATED (the core was cut
					   short).  What failed to read since
					   may have been read as absent
					   (rbi_target_gone_seen) */
	struct rbi_crash_memo crash;    /* native/crash.c */
};

#endif
