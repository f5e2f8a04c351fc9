/* owned.c: native frames kept past the callback that lent them (their
 * strings are the images' symbol tables'): the merge, which reads the
 * whole stack before it interleaves, and the frame cursor copy them here.
 * Ruby frames are copied by lib/vm (frame-own.c). */
#include "native/native.h"

int rbi_native_frame_own(struct rbi_native_frame *dst, const struct rbi_native_frame *src)
{
	*dst = *src;
	dst->module = dst->function = dst->file = NULL;
	if (rbi_dup_opt(&dst->module, src->module) || rbi_dup_opt(&dst->function, src->function) ||
	    rbi_dup_opt(&dst->file, src->file)) {
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
