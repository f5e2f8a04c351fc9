/* crashext.c: a C extension that crashes its Ruby the way a buggy
 * extension does, for tests/integration/crash.sh.
 *
 *   RbiCrash.park_then_crash(fifo, tid_file)
 *
 * writes the calling thread's kernel tid to TID_FILE (Ruby 2.7 has no
 * Thread#native_thread_id), then waits without the GVL for a byte on FIFO
 * (its Thread#status is "sleep" meanwhile, so the program's truth writer
 * records its stack, this C method's frame included).  Then:
 *   'k'   it sends SIGSEGV to its own process (kill(2): the kernel gives it
 *         to the main thread) and waits on, so no Ruby stack moves;
 *   'n'   it calls through a NULL function pointer, in this thread (a
 *         callback never set): the fault is at pc 0, and the only trace of
 *         the caller is the return address the call pushed;
 *   'f'   it returns 1, for its Ruby caller to make the same call through
 *         Fiddle (libffi, fiddle.so and rb_nogvl under pc 0);
 *   else  it writes through a NULL pointer, in this thread.  Its stack at
 *         the crash is the recorded one.
 *
 * It declares the few functions of Ruby's C API it calls instead of
 * including ruby.h, so that it builds for Debian's binary Rubies, whose
 * headers (rubyX.Y-dev) the tests do not install.  These prototypes have
 * not changed since Ruby 2.0. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef unsigned long VALUE;
#define INT2FIX_1 ((VALUE)3)    /* the Integer 1 (INT2FIX(1)) */

VALUE rb_define_module(const char *name);
void rb_define_module_function(VALUE module, const char *name, VALUE (*func)(), int argc);
char *rb_string_value_cstr(volatile VALUE *ptr);
void *rb_thread_call_without_gvl(void *(*func)(void *), void *data1,
				 void (*ubf)(void *), void *data2);

/* The callback the 'n' crash calls: never set.  volatile, so that the
   compiler emits the call rather than a trap. */
static void (*volatile callback)(void);

/* Without the GVL: the byte, and a signal to the process for 'k'.
   Returns the byte. */
static void *wait_for_byte(void *fifo)
{
	char c = 0;
	int fd = open(fifo, O_RDONLY);

	while (fd >= 0 && read(fd, &c, 1) < 0)
		;
	if (c == 'k') {
		kill(getpid(), SIGSEGV);
		for (;;)
			pause();
	}
	return (void *)(long)c;
}

static VALUE park_then_crash(VALUE self, VALUE fifo, VALUE tid_file)
{
	const char *fifo_path = rb_string_value_cstr(&fifo);
	FILE *f = fopen(rb_string_value_cstr(&tid_file), "w");

	(void)self;
	if (f) {
		fprintf(f, "%ld\n", (long)syscall(SYS_gettid));
		fclose(f);
	}
	switch ((long)rb_thread_call_without_gvl(wait_for_byte, (void *)fifo_path, NULL, NULL)) {
	case 'n':
		callback();
		break;
	case 'f':
		return INT2FIX_1;
	}
	*(volatile int *)0 = 1;
	return 0;
}

void Init_crashext(void);
void Init_crashext(void)
{
	rb_define_module_function(rb_define_module("RbiCrash"), "park_then_crash",
				  park_then_crash, 2);
}
