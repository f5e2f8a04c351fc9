/* list.c: walking ccan lists (Ruby's thread and ractor lists) safely. */
#include <inttypes.h>

#include "vm/vm.h"

int rbi_list_walk(struct rbi_target *t, uint64_t head, uint32_t node_off,
		  size_t max, rbi_list_fn fn, void *arg)
{
	uint64_t prev = head, node;
	int rc = rbi_read_u64(t, head, &node);

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
		if ((rc = fn(t, node - node_off, arg)))
			return rc;
		prev = node;
		if ((rc = rbi_read_u64(t, node, &node)))
			return rc;
	}
	return rbi_fail(RBI_CORRUPT, "list at 0x%" PRIx64 " is broken or longer "
			"than %zu elements", head, max);
}
