/* cmd-session.c: the session's own commands: `set`, `refresh`, `quit`. */
#include <stdlib.h>
#include <string.h>

#include "rbinspect.h"

static const char *const color_names[] = {
	[COLOR_AUTO] = "auto", [COLOR_ALWAYS] = "on", [COLOR_NEVER] = "off",
};

static int on_off(const char *v, bool *out)
{
	if (!strcmp(v, "on") || !strcmp(v, "true") || !strcmp(v, "1"))
		*out = true;
	else if (!strcmp(v, "off") || !strcmp(v, "false") || !strcmp(v, "0"))
		*out = false;
	else
		return -1;
	return 0;
}

static void show_settings(struct session *s)
{
	fprintf(s->out, "color       %s (%s now)\n", color_names[s->color_mode],
		s->color ? "on" : "off");
	if (s->max_frames)
		fprintf(s->out, "max-frames  %zu\n", s->max_frames);
	else
		fputs("max-frames  0 (all)\n", s->out);
	fprintf(s->out, "json        %s\n", s->json ? "on" : "off");
	fprintf(s->out, "native      %s\n", s->native ? "on" : "off");
}

int cmd_set(struct session *s, int argc, char **argv)
{
	const char *key = argc > 1 ? argv[1] : NULL, *val = argc > 2 ? argv[2] : NULL;
	bool b;

	if (argc == 1) {
		show_settings(s);
		return EXIT_OK;
	}
	if (argc != 3)
		goto usage;
	if (!strcmp(key, "color")) {
		if (!strcmp(val, "auto"))
			s->color_mode = COLOR_AUTO;
		else if (!on_off(val, &b))
			s->color_mode = b ? COLOR_ALWAYS : COLOR_NEVER;
		else
			goto usage;
		style_resolve(s);
	} else if (!strcmp(key, "max-frames")) {
		unsigned long v;

		if (parse_count(val, SIZE_MAX / 2, &v))
			goto usage;
		s->max_frames = (size_t)v;
	} else if (!strcmp(key, "native")) {
		if (on_off(val, &b))
			goto usage;
		s->native = b;
	} else if (!strcmp(key, "json")) {
		if (on_off(val, &b))
			goto usage;
		s->json = b;
	} else {
		goto usage;
	}
	return EXIT_OK;
usage:
	fputs("rbinspect: set: usage: set [color on|off|auto | max-frames N | "
	      "native on|off | json on|off]\n", stderr);
	return EXIT_USAGE;
}

int cmd_refresh(struct session *s, int argc, char **argv)
{
	int rc;

	if (argc > 1) {
		fputs("rbinspect: refresh: takes no arguments\n", stderr);
		return EXIT_USAGE;
	}
	if ((rc = target_gone(s, "refresh")))
		return rc;
	if (!s->live) {
		fputs("a core file does not change: nothing to refresh\n", s->out);
		return EXIT_OK;
	}
	if ((rc = rbi_target_refresh(s->target)))
		return session_failure(s, rc);
	fprintf(s->out, "%s: re-read from now on\n", s->what);
	return EXIT_OK;
}

int cmd_quit(struct session *s, int argc, char **argv)
{
	s->quit = true;
	return EXIT_OK;
}
