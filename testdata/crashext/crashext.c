/* crashext.c: a C extension that crashes its Ruby the way a buggy
 * extension does, for tests/integration/crash.sh.
 *
 *   RbiCrash.park_then_segv(fifo, tid_file)
 *
 * writes the calling thread's kernel tid to TID_FILE (Ruby 2.7 has no
 * Thread#native_thread_id), then waits without the GVL for a byte on FIFO
 * (its Thread#status is "sleep" meanwhile, so the program's truth writer
 * records its stack, this C method's frame included), then writes through
 * a NULL pointer.  The stack at the crash is exactly the recorded one.
 *
 * It declares the few functions of Ruby's C API it calls instead of
 * including ruby.h, so that it builds for Debian's binary Rubies, whose
 * headers (rubyX.Y-dev) the tests do not install.  These prototypes have
 * not changed since Ruby 2.0. */
#include <fcntl.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef unsigned long VALUE;

VALUE rb_define_module(const char *name);
void rb_define_module_function(VALUE module, const char *name, VALUE (*func)(), int argc);
char *rb_string_value_cstr(volatile VALUE *ptr);
void *rb_thread_call_without_gvl(void *(*func)(void *), void *data1,
				 void (*ubf)(void *), void *data2);

static void *wait_for_byte(void *fifo)
{
	char c;
	int fd = open(fifo, O_RDONLY);

	while (fd >= 0 && read(fd, &c, 1) < 0)
		;
	return NULL;
}

static VALUE park_then_segv(VALUE self, VALUE fifo, VALUE tid_file)
{
	const char *fifo_path = rb_string_value_cstr(&fifo);
	FILE *f = fopen(rb_string_value_cstr(&tid_file), "w");

	(void)self;
	if (f) {
		fprintf(f, "%ld\n", (long)syscall(SYS_gettid));
		fclose(f);
	}
	rb_thread_call_without_gvl(wait_for_byte, (void *)fifo_path, NULL, NULL);
	*(volatile int *)0 = 1;
	return 0;
}

void Init_crashext(void);
void Init_crashext(void)
{
	rb_define_module_function(rb_define_module("RbiCrash"), "park_then_segv",
				  park_then_segv, 2);
}
