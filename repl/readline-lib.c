/* readline-lib.c: GNU readline, loaded with dlopen when an interactive
 * session starts.  Only the REPL on a terminal uses it, and linking it in
 * cost every one-shot command 0.15-0.2 ms of dynamic loading (readline and
 * libtinfo): a tenth of an `info`. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "readline-lib.h"

/* GNU readline's shared library version is its major version. */
#define STR_(x) #x
#define STR(x) STR_(x)
#define READLINE_SONAME "libreadline.so." STR(RL_VERSION_MAJOR)

#define SYM(field, name) { offsetof(struct readline_lib, field), #name }

static const struct {
	size_t off;
	const char *name;
} syms[] = {
	SYM(callback_handler_install, rl_callback_handler_install),
	SYM(callback_handler_remove, rl_callback_handler_remove),
	SYM(callback_read_char, rl_callback_read_char),
	SYM(callback_sigcleanup, rl_callback_sigcleanup),
	SYM(cleanup_after_signal, rl_cleanup_after_signal),
	SYM(free_line_state, rl_free_line_state),
	SYM(completion_matches, rl_completion_matches),
	SYM(using_history, using_history),
	SYM(stifle_history, stifle_history),
	SYM(read_history, read_history),
	SYM(history_get, history_get),
	SYM(add_history, add_history),
	SYM(append_history, append_history),
	SYM(write_history, write_history),
	SYM(history_truncate_file, history_truncate_file),
	SYM(readline_name, rl_readline_name),
	SYM(outstream, rl_outstream),
	SYM(attempted_completion_function, rl_attempted_completion_function),
	SYM(attempted_completion_over, rl_attempted_completion_over),
	SYM(completer_word_break_characters, rl_completer_word_break_characters),
	SYM(catch_signals, rl_catch_signals),
	SYM(line_buffer, rl_line_buffer),
	SYM(history_length, history_length),
	SYM(history_base, history_base),
};

const struct readline_lib *readline_lib(const char **why)
{
	static struct readline_lib lib;
	static char failed[256];
	static int state;       /* 0 not tried, 1 loaded, -1 failed */
	void *h;

	if (state == 0) {
		state = -1;
		/* Never closed: the session uses it until the process ends. */
		if (!(h = dlopen(READLINE_SONAME, RTLD_NOW | RTLD_LOCAL))) {
			snprintf(failed, sizeof(failed), "%s", dlerror());
			goto out;
		}
		for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
			void *p = dlsym(h, syms[i].name);

			if (!p) {
				snprintf(failed, sizeof(failed), "%s has no %s",
					 READLINE_SONAME, syms[i].name);
				dlclose(h);
				goto out;
			}
			memcpy((char *)&lib + syms[i].off, &p, sizeof(p));
		}
		state = 1;
	}
out:
	if (state < 0)
		*why = failed;
	return state > 0 ? &lib : NULL;
}
