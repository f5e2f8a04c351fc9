/* list.c: walking ccan lists (Ruby's thread and ractor lists) safely.
 *
 * A list of a live process can change under the walk: a thread ends and
 * its node is unlinked between our reads of two links, and the walk sees
 * a node whose prev does not point back (or a freed node).  So the list
 * is first read whole, every link checked, and only a list read whole is
 * delivered; a live list that broke under the walk is read again, afresh,
 * a bounded number of times.  A core's list that breaks is broken. */
#include <inttypes.h>
#include <stdlib.h>
#include <time.h>

#include "vm/values/values.h"

/* Fresh reads of a live list that keeps changing under the walk. */
#define LIVE_ATTEMPTS 20
#define RETRY_SLEEP_NS 1000000L

/* The elements of the list at HEAD into *V (*N of them, *CAP allocated),
   in one pass; RBI_CORRUPT if a link does not hold. */
static int read_list(struct rbi_target *t, uint64_t head, uint32_t node_off, size_t max,
		     uint64_t **v, size_t *n, size_t *cap)
{
	uint64_t prev = head, node;
	int rc = rbi_read_u64(t, head, &node);

	*n = 0;
	if (rc)
		return rc;
	for (size_t i = 0; i <= max; i++) {
		uint64_t back;

		if (node == head)
			return RBI_OK;
		if (i == max || node == 0 || (node & 7))
			break;
		/* A node whose prev is not where we came from is torn or not a
		   list node: stop rather than wander. */
		if ((rc = rbi_read_u64(t, node + 8, &back)))
			return rc;
		if (back != prev)
			break;
		if (!RBI_GROW(*v, *cap, *n + 1, 16))
			return rbi_fail(RBI_NOMEM, "out of memory");
		(*v)[(*n)++] = node - node_off;
		prev = node;
		if ((rc = rbi_read_u64(t, node, &node)))
			return rc;
	}
	return rbi_fail(RBI_CORRUPT, "list at 0x%" PRIx64 " is broken or longer "
			"than %zu elements", head, max);
}

/* The list walk, read at most ATTEMPTS times while it breaks under it. */
static int list_walk(struct rbi_target *t, uint64_t head, uint32_t node_off, size_t max,
		     unsigned attempts, rbi_list_fn fn, void *arg)
{
	uint64_t *v = NULL;
	size_t n = 0, cap = 0;
	int rc;

	for (unsigned attempt = 1;; attempt++) {
		rc = read_list(t, head, node_off, max, &v, &n, &cap);
		if (rc != RBI_CORRUPT || !rbi_target_is_live(t) || attempt >= attempts)
			break;
		rbi_target_forget(t);
		/* On a loaded machine a walk preempted half way meets a list
		   that moved on: from the third attempt on, start the next
		   after a short sleep, with a fresh time slice (at most
		   LIVE_ATTEMPTS * RETRY_SLEEP_NS in all). */
		if (attempt >= 2)
			nanosleep(&(struct timespec){ .tv_nsec = RETRY_SLEEP_NS }, NULL);
	}
	for (size_t i = 0; rc == RBI_OK && i < n; i++)
		rc = fn(t, v[i], arg);
	free(v);
	return rc;
}

int rbi_list_walk(struct rbi_target *t, uint64_t head, uint32_t node_off,
		  size_t max, rbi_list_fn fn, void *arg)
{
	return list_walk(t, head, node_off, max, LIVE_ATTEMPTS, fn, arg);
}

int rbi_list_walk_once(struct rbi_target *t, uint64_t head, uint32_t node_off,
		       size_t max, rbi_list_fn fn, void *arg)
{
	return list_walk(t, head, node_off, max, 1, fn, arg);
}
