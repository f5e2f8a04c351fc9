/* readline-lib.h: GNU readline, loaded when an interactive session starts
 * (readline-lib.c). */
#ifndef RBINSPECT_READLINE_LIB_H
#define RBINSPECT_READLINE_LIB_H

#include <stdio.h>
#include <readline/history.h>
#include <readline/readline.h>

/* What the session uses of readline and its history library: functions,
   and the addresses of variables.  Typed after the declarations in the
   headers, so a call is checked as a direct one would be. */
struct readline_lib {
	__typeof__(&rl_callback_handler_install) callback_handler_install;
	__typeof__(&rl_callback_handler_remove) callback_handler_remove;
	__typeof__(&rl_callback_read_char) callback_read_char;
	__typeof__(&rl_callback_sigcleanup) callback_sigcleanup;
	__typeof__(&rl_cleanup_after_signal) cleanup_after_signal;
	__typeof__(&rl_free_line_state) free_line_state;
	__typeof__(&rl_completion_matches) completion_matches;
	__typeof__(&using_history) using_history;
	__typeof__(&stifle_history) stifle_history;
	__typeof__(&read_history) read_history;
	__typeof__(&history_get) history_get;
	__typeof__(&add_history) add_history;
	__typeof__(&append_history) append_history;
	__typeof__(&write_history) write_history;
	__typeof__(&history_truncate_file) history_truncate_file;
	__typeof__(&rl_readline_name) readline_name;
	__typeof__(&rl_outstream) outstream;
	__typeof__(&rl_attempted_completion_function) attempted_completion_function;
	__typeof__(&rl_attempted_completion_over) attempted_completion_over;
	__typeof__(&rl_completer_word_break_characters) completer_word_break_characters;
	__typeof__(&rl_catch_signals) catch_signals;
	__typeof__(&rl_line_buffer) line_buffer;
	__typeof__(&history_length) history_length;
	__typeof__(&history_base) history_base;
};

/* readline, loaded on the first call; NULL (and *WHY says why) if it
   cannot be. */
const struct readline_lib *readline_lib(const char **why);

#endif
