/* image-words.c: the words of a loaded image's writable segment (.data,
 * .bss, what the dynamic linker relocates), read from the target at once:
 * where a stripped library's static pointers are looked for by what they
 * point at (heap-alloc.c's allocation tracer, heap-genivar.c's table of
 * generic instance variables). */
#include <inttypes.h>
#include <stdlib.h>

#include "vm/vm/find.h"

int rbi_vm_image_words(struct rbi_target *t, const struct rbi_image *img, uint64_t max,
		       uint64_t **words, size_t *n)
{
	uint64_t start, end;
	int rc;

	*words = NULL;
	*n = 0;
	if ((rc = rbi_image_writable(img, &start, &end)))
		return rc;
	start &= ~(uint64_t)7;
	if (end <= start || end - start > max)
		return rbi_fail(RBI_CORRUPT, "%s's writable segment is %" PRIu64 " bytes",
				img->name, end - start);
	*n = (size_t)(end - start) / 8;
	if (!(*words = malloc(*n * 8)))
		return rbi_fail(RBI_NOMEM, "out of memory");
	if ((rc = rbi_read(t, start, *words, *n * 8))) {
		free(*words);
		*words = NULL;
		return rbi_fail_context(rc, "reading %s's data: ", img->name);
	}
	return RBI_OK;
}
