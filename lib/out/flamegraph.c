/* flamegraph.c: an interactive flame graph as one self-contained SVG.
 *
 * Stacks grow upwards from an "all" frame; siblings are sorted by name, a
 * frame's width is its share of the time (the weights of its samples: wall
 * or CPU time, as the profile's mode, named in the title).  Every frame is
 * a <g> with a <title> ("NAME (T ms, N samples, P%)": the hover text, and
 * what the search matches), a <rect> and a <text> cut to fit.  The script
 * (lib/out/flamegraph.js, built in) adds hover details, click to zoom and
 * search with the matched share; nothing is loaded from elsewhere.  Names
 * are target strings: XML-escaped, invalid bytes as \xNN.  Frames narrower
 * than a tenth of a pixel are left out, as flamegraph.pl does. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "out/render.h"

extern const char rbi_flamegraph_js[];

#define WIDTH 1200.0
#define XPAD 10.0
#define FRAME_H 16
#define FONT_SIZE 12
#define FONT_WIDTH 0.59
#define TOP_PAD (FONT_SIZE * 4)
#define BOTTOM_PAD (FONT_SIZE * 2 + 10)
#define MIN_WIDTH 0.1
#define DEPTH_MAX 4096

struct fnode {
	const struct rbi_sample_frame *f;       /* NULL: the root ("all") */
	uint64_t total;                         /* ns */
	uint64_t samples;
	uint32_t parent, first, next;           /* children as a list */
	uint32_t depth;
	double x;
};

struct fg {
	struct fnode *v;
	size_t n, cap;
	struct rbi_map idx;                     /* (parent + 1, frame id + 1, 1) -> node */
	struct rbi_names names;
	uint32_t max_depth;
	int rc;
};

static long node_get(struct fg *g, uint32_t parent, const struct rbi_sample_frame *f)
{
	uint64_t v;

	if (rbi_map_get(&g->idx, parent + 1ull, f->id + 1ull, 1, &v))
		return (long)v;
	if (!RBI_GROW(g->v, g->cap, g->n + 1, 1024))
		return -1;
	if (rbi_map_put(&g->idx, parent + 1ull, f->id + 1ull, 1, g->n))
		return -1;
	g->v[g->n] = (struct fnode){
		.f = f, .parent = parent, .first = UINT32_MAX, .next = g->v[parent].first,
		.depth = g->v[parent].depth + 1,
	};
	g->v[parent].first = (uint32_t)g->n;
	if (g->v[g->n].depth > g->max_depth)
		g->max_depth = g->v[g->n].depth;
	return (long)g->n++;
}

static int add_stack(const struct rbi_sample_frame *const *frames, size_t n,
		     uint64_t count, uint64_t weight_ns, void *arg)
{
	struct fg *g = arg;
	uint32_t node = 0;

	g->v[0].total += weight_ns;
	g->v[0].samples += count;
	for (size_t i = 0; i < n && i < DEPTH_MAX; i++) {
		long c = node_get(g, node, frames[i]);

		if (c < 0) {
			g->rc = rbi_fail(RBI_NOMEM, "out of memory");
			return 1;
		}
		node = (uint32_t)c;
		g->v[node].total += weight_ns;
		g->v[node].samples += count;
	}
	return 0;
}

static const char *name_of(struct fg *g, const struct fnode *n)
{
	return n->f ? rbi_names_get(&g->names, n->f) : "all";
}

static int by_name(const void *a, const void *b, void *arg)
{
	struct fg *g = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	const char *p = name_of(g, &g->v[x]), *q = name_of(g, &g->v[y]);

	return strcmp(p ? p : "", q ? q : "");
}

/* Lay out children left to right, sorted by name; iterative (deep stacks). */
static int layout(struct fg *g)
{
	uint32_t *kids = NULL, *stack = malloc(g->n * sizeof(*stack));
	size_t sp = 0, cap = 0;

	if (!stack)
		return rbi_fail(RBI_NOMEM, "out of memory");
	g->v[0].x = 0;
	stack[sp++] = 0;
	while (sp) {
		struct fnode *n = &g->v[stack[--sp]];
		size_t k = 0;
		double x = n->x;

		for (uint32_t c = n->first; c != UINT32_MAX; c = g->v[c].next) {
			if (!RBI_GROW(kids, cap, k + 1, 64)) {
				free(kids);
				free(stack);
				return rbi_fail(RBI_NOMEM, "out of memory");
			}
			kids[k++] = c;
		}
		if (k)          /* KIDS is NULL for a leaf */
			qsort_r(kids, k, sizeof(*kids), by_name, g);
		for (size_t i = 0; i < k; i++) {
			g->v[kids[i]].x = x;
			x += (double)g->v[kids[i]].total;
			stack[sp++] = kids[i];
		}
	}
	free(kids);
	free(stack);
	return RBI_OK;
}

/* A colour from the name, in the frame kind's palette. */
static void color(const struct fnode *n, const char *name, int rgb[3])
{
	uint64_t h = 0xcbf29ce484222325ull;
	double v1, v2, v3;

	for (const unsigned char *s = (const unsigned char *)name; *s; s++)
		h = (h ^ *s) * 0x100000001b3ull;
	v1 = (double)(h & 0xffff) / 65535.0;
	v2 = (double)((h >> 16) & 0xffff) / 65535.0;
	v3 = (double)((h >> 32) & 0xffff) / 65535.0;
	switch (n->f ? n->f->kind : RBI_FRAME_OTHER) {
	case RBI_FRAME_RUBY:            /* warm */
		rgb[0] = 205 + (int)(50 * v3);
		rgb[1] = (int)(230 * v1);
		rgb[2] = (int)(55 * v2);
		break;
	case RBI_FRAME_CFUNC:           /* aqua */
		rgb[0] = 50 + (int)(60 * v1);
		rgb[1] = 165 + (int)(55 * v1);
		rgb[2] = 165 + (int)(55 * v2);
		break;
	case RBI_FRAME_NATIVE:          /* red-orange, as native code in
					   perf's flame graphs */
		rgb[0] = 200 + (int)(55 * v1);
		rgb[1] = 80 + (int)(60 * v2);
		rgb[2] = 40 + (int)(30 * v3);
		break;
	case RBI_FRAME_GC:              /* purple-grey */
		rgb[0] = 150 + (int)(30 * v1);
		rgb[1] = 130 + (int)(30 * v1);
		rgb[2] = 200 + (int)(40 * v2);
		break;
	default:                        /* made-up: green-grey */
		rgb[0] = 160 + (int)(40 * v1);
		rgb[1] = 190 + (int)(40 * v1);
		rgb[2] = 150 + (int)(30 * v2);
		break;
	}
}

/* NAME cut to CHARS characters ("..": cut), at a UTF-8 boundary. */
static void cut_text(FILE *f, const char *name, double width)
{
	size_t fit = (size_t)((width - 3) / (FONT_SIZE * FONT_WIDTH));
	size_t len = strlen(name), chars = 0, i;

	if (width - 3 < 3 * FONT_SIZE * FONT_WIDTH)
		return;
	for (i = 0; i < len; i++)
		chars += ((unsigned char)name[i] & 0xc0) != 0x80;
	if (chars <= fit) {
		rbi_out_xml(f, name, len);
		return;
	}
	chars = 0;
	for (i = 0; i < len; i++) {
		if (((unsigned char)name[i] & 0xc0) != 0x80 && chars++ == fit - 2)
			break;
	}
	rbi_out_xml(f, name, i);
	fputs("..", f);
}

static void header(FILE *f, rbi_profile *p, int height)
{
	const char *target = rbi_profile_meta(p, "command");
	const char *ruby = rbi_profile_meta(p, "ruby");
	const char *pid = rbi_profile_meta(p, "pid");

	fprintf(f, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<!DOCTYPE svg PUBLIC \"-//W3C//DTD SVG 1.1//EN\" "
		"\"http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd\">\n"
		"<svg version=\"1.1\" width=\"%.0f\" height=\"%d\" viewBox=\"0 0 %.0f %d\" "
		"xmlns=\"http://www.w3.org/2000/svg\">\n"
		"<!-- Flame graph by rbinspect: hover for details, click to zoom, "
		"Ctrl-F or ?s=REGEX to search. -->\n"
		"<defs><linearGradient id=\"background\" y1=\"0\" y2=\"1\" x1=\"0\" x2=\"0\">"
		"<stop stop-color=\"#eeeeee\" offset=\"5%%\"/><stop stop-color=\"#eeeeb0\" "
		"offset=\"95%%\"/></linearGradient></defs>\n"
		"<style type=\"text/css\">\n"
		"text { font-family: Verdana, sans-serif; font-size: %dpx; fill: rgb(0,0,0); }\n"
		"#title { text-anchor: middle; font-size: %dpx; }\n"
		"#search, #unzoom { cursor: pointer; }\n"
		"#search.active { fill: rgb(160,0,160); }\n"
		"#matched { text-anchor: end; }\n"
		"#frames > *:hover { stroke: black; stroke-width: 0.5; cursor: pointer; }\n"
		".hide { display: none; }\n"
		".parent { opacity: 0.5; }\n"
		"</style>\n"
		"<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n"
		"<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"url(#background)\"/>\n",
		WIDTH, height, WIDTH, height, FONT_SIZE, FONT_SIZE + 5, rbi_flamegraph_js);
	fprintf(f, "<text id=\"title\" x=\"%.0f\" y=\"%d\">", WIDTH / 2, FONT_SIZE * 2);
	fprintf(f, "Flame graph of %s time", !strcmp(rbi_profile_mode(p), "cpu") ? "CPU" : "wall");
	if (pid) {
		fputs(": process ", f);
		rbi_out_xml(f, pid, strlen(pid));
	}
	if (ruby) {
		fputs(", Ruby ", f);
		rbi_out_xml(f, ruby, strlen(ruby));
	}
	fputs("</text>\n", f);
	if (target) {
		fprintf(f, "<text id=\"subtitle\" x=\"%.0f\" y=\"%d\" style=\"text-anchor: middle\">",
			WIDTH / 2, FONT_SIZE * 2 + FONT_SIZE + 2);
		rbi_out_xml(f, target, strlen(target) > 160 ? 160 : strlen(target));
		fputs("</text>\n", f);
	}
	fprintf(f, "<text id=\"details\" x=\"%.0f\" y=\"%d\"> </text>\n", XPAD, height - 17);
	fprintf(f, "<text id=\"unzoom\" class=\"hide\" x=\"%.0f\" y=\"%d\">Reset Zoom</text>\n",
		XPAD, FONT_SIZE * 2);
	fprintf(f, "<text id=\"search\" x=\"%.0f\" y=\"%d\">Search</text>\n",
		WIDTH - XPAD - 100, FONT_SIZE * 2);
	fprintf(f, "<text id=\"matched\" class=\"hide\" x=\"%.0f\" y=\"%d\"> </text>\n",
		WIDTH - XPAD, height - 17);
}

int rbi_render_flamegraph(rbi_profile *p, const struct rbi_profile_view *v, FILE *f)
{
	struct fg g = { .cap = 1024 };
	double scale;
	int height, rc;

	if (!(g.v = malloc(g.cap * sizeof(*g.v))))
		return rbi_fail(RBI_NOMEM, "out of memory");
	g.v[0] = (struct fnode){ .first = UINT32_MAX, .next = UINT32_MAX };
	g.n = 1;
	rc = rbi_profile_foreach_stack(p, v, add_stack, &g);
	if (rc >= 0)
		rc = g.rc;
	if (!rc)
		rc = layout(&g);
	if (rc)
		goto out;
	height = (int)(g.max_depth + 1) * FRAME_H + TOP_PAD + BOTTOM_PAD;
	scale = g.v[0].total ? (WIDTH - 2 * XPAD) / (double)g.v[0].total : 0;
	header(f, p, height);
	fputs("<g id=\"frames\">\n", f);
	for (size_t i = 0; i < g.n; i++) {
		const struct fnode *n = &g.v[i];
		double x = XPAD + n->x * scale, w = (double)n->total * scale;
		int y = height - BOTTOM_PAD - (int)(n->depth + 1) * FRAME_H;
		const char *name = name_of(&g, n);
		int rgb[3];

		if (w < MIN_WIDTH && i)
			continue;
		if (!name) {
			rc = rbi_fail(RBI_NOMEM, "out of memory");
			goto out;
		}
		color(n, name, rgb);
		fputs("<g><title>", f);
		rbi_out_xml(f, name, strlen(name));
		fprintf(f, " (%.2f ms, %" PRIu64 " sample%s, %.2f%%)</title>",
			(double)n->total / 1e6, n->samples, n->samples == 1 ? "" : "s",
			g.v[0].total ? 100.0 * (double)n->total / (double)g.v[0].total : 0.0);
		fprintf(f, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" "
			"fill=\"rgb(%d,%d,%d)\" rx=\"2\" ry=\"2\"/>", x, y, w, FRAME_H - 1,
			rgb[0], rgb[1], rgb[2]);
		fprintf(f, "<text x=\"%.2f\" y=\"%.1f\">", x + 3, y + FRAME_H - 4.5);
		cut_text(f, name, w);
		fputs("</text></g>\n", f);
	}
	fputs("</g>\n</svg>\n", f);
out:
	free(g.v);
	rbi_map_free(&g.idx);
	rbi_names_free(&g.names);
	return rc;
}
