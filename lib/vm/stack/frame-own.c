/* frame-own.c: frames kept past the callback that lent them.  A walk's
 * frames borrow their strings from the walk (its memo of labels), so
 * whoever keeps one after the callback returns (a live walk holding a
 * stack until all of it is read, the merge with native frames, the frame
 * cursor) copies it here, every string included. */
#include <stdlib.h>
#include <string.h>

#include "vm/stack/stack.h"

int rbi_dup_opt(const char **dst, const char *s)
{
	*dst = NULL;
	if (s && !(*dst = strdup(s)))
		return rbi_fail(RBI_NOMEM, "out of memory");
	return RBI_OK;
}

int rbi_frame_own(struct rbi_frame *dst, const struct rbi_frame *src)
{
	*dst = *src;
	dst->label = dst->own_label = dst->base_label = dst->path = dst->line_error = NULL;
	if (rbi_dup_opt(&dst->label, src->label) || rbi_dup_opt(&dst->own_label, src->own_label) ||
	    rbi_dup_opt(&dst->base_label, src->base_label) || rbi_dup_opt(&dst->path, src->path) ||
	    rbi_dup_opt(&dst->line_error, src->line_error)) {
		rbi_frame_disown(dst);
		return RBI_NOMEM;
	}
	return RBI_OK;
}

void rbi_frame_disown(struct rbi_frame *f)
{
	free((char *)f->label);
	free((char *)f->own_label);
	free((char *)f->base_label);
	free((char *)f->path);
	free((char *)f->line_error);
	f->label = f->own_label = f->base_label = f->path = f->line_error = NULL;
}
