/* style.c: color on a terminal, and only there (and never with NO_COLOR,
 * https://no-color.org, unless --color=always asks for it). */
#include <stdlib.h>
#include <unistd.h>

#include "rbinspect.h"

void style_resolve(struct session *s)
{
	const char *no_color = getenv("NO_COLOR");

	switch (s->color_mode) {
	case COLOR_ALWAYS: s->color = true; break;
	case COLOR_NEVER: s->color = false; break;
	default:
		s->color = isatty(fileno(s->out)) && !(no_color && *no_color);
		break;
	}
}

void style_begin(struct session *s, enum style st)
{
	static const char *const sgr[] = {
		[STYLE_HEADER] = "\033[1m",     /* bold */
		[STYLE_LABEL] = "\033[33m",     /* yellow */
		[STYLE_NAME] = "\033[32m",      /* green */
		[STYLE_ERROR] = "\033[31m",     /* red */
		[STYLE_DIM] = "\033[2m",        /* faint */
	};

	if (s->color)
		fputs(sgr[st], s->out);
}

void style_end(struct session *s)
{
	if (s->color)
		fputs("\033[0m", s->out);
}
