/* bt-native.c: `bt --native`: a thread's native frames merged with its
 * Ruby frames (rbi_native_foreach), as text or JSON.
 *
 * Text, innermost first, one numbered line per frame:
 *   #0  0x00007f0c2a4e1d71 in __futex_abstimed_wait_common+0x171 (libc.so.6)
 *   #5  0x00007f0c2a9b6e40 in libruby.so.3.1+0x1b6e3f
 *   #6  0x00007f0c2a8a11d1 in rb_f_sleep+0x51 (libruby.so.3.1) at process.c:4890
 *         x.rb:12:in 'Kernel#sleep'          (the C method on its C function)
 *   #7  x.rb:12:in 'Lab::Sleeper#nap'        (a Ruby frame)
 * An unnamed native frame is MODULE+OFFSET (an ELF address of MODULE, as
 * addr2line takes it), never a guessed name.  With --locals each Ruby
 * frame is followed by its self and locals, read after the stacks (a live
 * thread is held only while its two stacks are read, so they are read as
 * plain `bt --locals` reads them: while it runs). */
#include <inttypes.h>
#include <string.h>

#include "out/out.h"
#include "rbinspect.h"

struct native_ctx {
	struct session *s;
	struct rbi_json *j;     /* NULL: text */
	size_t max, count;
	bool locals;            /* --locals: under each Ruby frame */
	size_t max_value;
	bool truncated;
	const struct rbi_native_info *info;     /* filled before the first frame */
	bool ruby_heading;      /* unmerged text: "Ruby frames:" printed */
};

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

static void native_text(struct session *s, const struct rbi_native_frame *n)
{
	FILE *out = s->out;

	if (n->inlined) {
		fputs("[inlined] ", out);
	} else {
		fprintf(out, "0x%016" PRIx64 " in ", n->pc);
		if (n->signal_trampoline) {
			fputs("<signal handler called>\n", out);
			return;
		}
	}
	style_begin(s, STYLE_NAME);
	if (n->function) {
		rbi_out_text_cstr(out, n->function);
		if (!n->inlined)
			fprintf(out, "+0x%" PRIx64, n->function_offset);
	} else if (n->module) {
		rbi_out_text_cstr(out, base_name(n->module));
		fprintf(out, "+0x%" PRIx64, n->module_offset);
	} else {
		fputs("??", out);
	}
	style_end(s);
	if (n->function && n->module) {
		fputs(" (", out);
		rbi_out_text_cstr(out, base_name(n->module));
		fputc(')', out);
	}
	if (n->file) {
		fputs(" at ", out);
		rbi_out_text_cstr(out, n->file);
		if (n->line)
			fprintf(out, ":%d", n->line);
	}
	if (n->found_by_scan)
		fputs(" [found by scanning the stack]", out);
	fputc('\n', out);
}

static void native_json(struct rbi_json *j, const struct rbi_native_frame *n)
{
	rbi_json_object(j);
	rbi_json_key(j, "pc"); rbi_json_addr(j, n->pc);
	rbi_json_key(j, "module"); rbi_json_cstr(j, n->module);
	rbi_json_key(j, "module_offset"); rbi_json_addr(j, n->module_offset);
	rbi_json_key(j, "function"); rbi_json_cstr(j, n->function);
	rbi_json_key(j, "function_offset"); rbi_json_int(j, (int64_t)n->function_offset);
	rbi_json_key(j, "file"); rbi_json_cstr(j, n->file);
	rbi_json_key(j, "line"); rbi_json_int(j, n->line);
	rbi_json_key(j, "inlined"); rbi_json_bool(j, n->inlined);
	rbi_json_key(j, "signal_trampoline"); rbi_json_bool(j, n->signal_trampoline);
	rbi_json_key(j, "found_by_scan"); rbi_json_bool(j, n->found_by_scan);
	rbi_json_end_object(j);
}

static int mixed_frame(const struct rbi_mixed_frame *f, void *arg)
{
	struct native_ctx *c = arg;
	FILE *out = c->s->out;
	bool stop = false;

	if (interrupted())
		return -1;
	if (c->max && c->count == c->max) {
		c->truncated = true;
		return 1;
	}
	c->count++;
	if (c->j) {
		rbi_json_object(c->j);
		rbi_json_key(c->j, "index"); rbi_json_int(c->j, (int64_t)f->index);
		rbi_json_key(c->j, "native");
		if (f->native)
			native_json(c->j, f->native);
		else
			rbi_json_null(c->j);
		rbi_json_key(c->j, "ruby");
		if (f->ruby) {
			rbi_json_object(c->j);
			frame_json_fields(c->s, c->j, f->ruby);
			stop = c->locals && frame_locals(c->s, c->j, f->ruby, c->max_value);
			rbi_json_end_object(c->j);
		} else {
			rbi_json_null(c->j);
		}
		rbi_json_end_object(c->j);
		return stop ? -1 : 0;
	}
	if (f->index == 0 && c->info->unmerged) {
		fputs("(native and Ruby frames not merged: ", out);
		rbi_out_text_cstr(out, c->info->unmerged);
		fputs(")\n", out);
	}
	if (c->info->unmerged && !f->native && !c->ruby_heading) {
		fputs("Ruby frames:\n", out);
		c->ruby_heading = true;
	}
	fprintf(out, "#%-3zu ", f->index);
	if (f->native)
		native_text(c->s, f->native);
	if (f->ruby) {
		if (f->native)
			fputs("        ", out);
		frame_line_text(c->s, f->ruby);
		if (c->locals && frame_locals(c->s, NULL, f->ruby, c->max_value))
			return -1;
	}
	return 0;
}

int bt_native(struct session *s, struct rbi_json *j, const struct rbi_thread *th,
	      size_t max, bool locals, size_t max_value, bool *truncated)
{
	struct rbi_native_info info;
	struct native_ctx c = { .s = s, .j = j, .max = max, .locals = locals,
				.max_value = max_value, .info = &info };
	int rc;

	if (j) {
		rbi_json_key(j, "frames");
		rbi_json_array(j);
	}
	rc = rbi_native_foreach(s->target, th, max ? max + 1 : 0, mixed_frame, &c, &info);
	if (j) {
		rbi_json_end_array(j);
		rbi_json_key(j, "merged");
		rbi_json_bool(j, rc == RBI_OK && !info.unmerged);
		rbi_json_key(j, "unmerged_reason"); rbi_json_cstr(j, info.unmerged);
		rbi_json_key(j, "native_cut"); rbi_json_bool(j, info.cut);
		rbi_json_key(j, "stopped_ns"); rbi_json_int(j, (int64_t)info.stopped_ns);
	}
	*truncated = c.truncated;
	return rc < 0 && interrupted() ? 2 : rc;
}
