/* owned.c: frames kept past the callback that lent them.  A walk's frames
 * borrow their strings from the walk (its memo of labels, the images'
 * symbol tables), so whoever keeps one after the callback returns (the
 * merge, which reads the whole Ruby stack before it interleaves; the
 * frame cursor) copies it here, every string included. */
#include "native/native.h"

static int dup_opt(const char **dst, const char *s)
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
	if (dup_opt(&dst->label, src->label) || dup_opt(&dst->own_label, src->own_label) ||
	    dup_opt(&dst->base_label, src->base_label) || dup_opt(&dst->path, src->path) ||
	    dup_opt(&dst->line_error, src->line_error)) {
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

int rbi_native_frame_own(struct rbi_native_frame *dst, const struct rbi_native_frame *src)
{
	*dst = *src;
	dst->module = dst->function = dst->file = NULL;
	if (dup_opt(&dst->module, src->module) || dup_opt(&dst->function, src->function) ||
	    dup_opt(&dst->file, src->file)) {
		rbi_native_frame_disown(dst);
		return RBI_NOMEM;
	}
	return RBI_OK;
}

void rbi_native_frame_disown(struct rbi_native_frame *f)
{
	free((char *)f->module);
	free((char *)f->function);
	free((char *)f->file);
	f->module = f->function = f->file = NULL;
}
