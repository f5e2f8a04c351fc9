/* test-profile.c: profiles and their encoders, on a profile built by hand
 * (no target): folded (exact), the raw form (round trip, bad input),
 * flame graph SVG (escaping, script), pprof (gunzipped and decoded here),
 * callgrind, speedscope; every format's total against the weights, both
 * modes' labels, the lost-stacks warning, the image signature record
 * follows exec by; and the hash tables under them.  The real
 * consumers (Chromium, pprof, callgrind_annotate, speedscope's schema) are
 * run by tests/integration/profile.sh. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "ruby-introspect.h"
#include "profile/profile.h"
#include "util/table.h"
#include "tap.h"

static const struct rbi_sample_frame f_main = {
	.id = 0, .kind = RBI_FRAME_RUBY, .label = "<main>", .path = "/app/main.rb",
	.line = 3, .first_line = 1,
};
static const struct rbi_sample_frame f_hot = {
	.id = 1, .kind = RBI_FRAME_RUBY, .label = "Hot#spin", .path = "/app/hot.rb",
	.line = 12, .first_line = 10,
};
/* A hostile name: the folded separator, a newline, markup, a quote and a
   byte that is not UTF-8. */
static const struct rbi_sample_frame f_evil = {
	.id = 2, .kind = RBI_FRAME_RUBY, .label = "Cold;walk\n<b>\"x\"\xff", .path = "/app/cold.rb",
	.line = 7, .first_line = 5,
};
static const struct rbi_sample_frame f_sleep = {
	.id = 3, .kind = RBI_FRAME_CFUNC, .label = "Kernel#sleep",
};

/* N samples of THREAD in FIBER (0: unknown; thread 1's root fiber is 0xf100),
   each weighing WEIGHT_US. */
static void add(rbi_profile *p, const struct rbi_sample_frame *leaf, rbi_sample_state state,
		int n, unsigned thread, uint64_t fiber, uint64_t weight_us)
{
	const struct rbi_sample_frame *frames[2] = { &f_main, leaf };

	for (int i = 0; i < n; i++) {
		struct rbi_sample s = {
			.pid = 42, .time_ns = 1000000ull * (uint64_t)i, .thread_number = thread,
			.thread = 0x1000 * thread, .tid = 100 + (int)thread,
			.thread_name = thread == 1 ? NULL : "worker", .main = thread == 1,
			.state = state, .status = RBI_OK, .nframes = 2, .frames = frames,
			.fiber = fiber, .root_fiber = fiber == 0xf100, .weight_ns = weight_us * 1000,
		};
		rbi_profile_add(p, &s);
	}
}

/* Render P in FORMAT into a malloc'd buffer (*LEN bytes). */
static char *render(rbi_profile *p, rbi_profile_format format, uint32_t flags, size_t *len)
{
	struct rbi_profile_view v = { .size = sizeof(v), .flags = flags };
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	int rc = rbi_profile_write(p, format, &v, f);

	fclose(f);
	if (rc) {
		printf("# write %s: %s\n", rbi_profile_format_name(format), rbi_errmsg());
		free(buf);
		return NULL;
	}
	if (len)
		*len = n;
	return buf;
}

static void test_folded(rbi_profile *p)
{
	char *out = render(p, RBI_FORMAT_FOLDED, 0, NULL);
	const char *want =
		"<main> (/app/main.rb:3);Cold\\x3bwalk\\n<b>\"x\"\\xff (/app/cold.rb:7) 50000\n"
		"<main> (/app/main.rb:3);Hot#spin (/app/hot.rb:12) 80000\n";

	ok(out && !strcmp(out, want), "folded: sorted stacks, ';' newline and bad bytes escaped, "
	   "microseconds");
	if (out && strcmp(out, want))
		printf("# got:\n%s", out);
	free(out);
	out = render(p, RBI_FORMAT_FOLDED, RBI_VIEW_IDLE | RBI_VIEW_THREADS | RBI_VIEW_NO_LINES, NULL);
	ok(out && strstr(out, "thread 2 \"worker\" tid 102;<main> (/app/main.rb);Kernel#sleep;"
			    "(sleeping) 50000\n"), "folded --idle --threads --no-lines: thread root, "
	   "state leaf, no lines");
	free(out);
	out = render(p, RBI_FORMAT_FOLDED, RBI_VIEW_FIBERS, NULL);
	want = "Fiber 0xf100 (root of thread 1);<main> (/app/main.rb:3);Hot#spin (/app/hot.rb:12) 80000\n"
	       "Fiber 0xf200 (thread 1);<main> (/app/main.rb:3);Cold\\x3bwalk\\n<b>\"x\"\\xff "
	       "(/app/cold.rb:7) 50000\n";
	ok(out && !strcmp(out, want), "folded --fibers: a root frame per fiber");
	if (out && strcmp(out, want))
		printf("# got:\n%s", out);
	free(out);
	out = render(p, RBI_FORMAT_FOLDED, RBI_VIEW_FIBERS | RBI_VIEW_THREADS | RBI_VIEW_IDLE, NULL);
	ok(out && strstr(out, "thread 1 (main) tid 101;Fiber 0xf200 (thread 1);<main>") &&
	   strstr(out, "thread 2 \"worker\" tid 102;(fiber unknown);<main> (/app/main.rb:3);"
		  "Kernel#sleep;(sleeping) 50000\n"),
	   "folded --fibers --threads: the fiber inside its thread; an unknown one said so");
	free(out);
	out = render(p, RBI_FORMAT_FOLDED, RBI_VIEW_GVL, NULL);
	ok(out && !strstr(out, "Cold") && strstr(out, "Hot#spin (/app/hot.rb:12) 80000\n"),
	   "folded --gvl: only samples holding the GVL");
	free(out);
}

static void test_raw(rbi_profile *p)
{
	char *a, *b;
	size_t na, nb;
	rbi_profile *q = NULL;
	FILE *f;
	int rc;

	a = render(p, RBI_FORMAT_RAW, 0, &na);
	f = fmemopen(a, na, "r");
	rc = rbi_profile_load(f, &q);
	fclose(f);
	ok(rc == RBI_OK, "raw: loads what it saved (%s)", rc ? rbi_errmsg() : "ok");
	b = q ? render(q, RBI_FORMAT_RAW, 0, &nb) : NULL;
	ok(b && na == nb && !memcmp(a, b, na), "raw: saved again, byte for byte the same");
	free(b);
	b = q ? render(q, RBI_FORMAT_FOLDED, 0, NULL) : NULL;
	ok(b && strstr(b, "Hot#spin (/app/hot.rb:12) 80000\n"),
	   "raw: the loaded profile renders, with its weights");
	free(b);
	b = q ? render(q, RBI_FORMAT_FOLDED, RBI_VIEW_FIBERS, NULL) : NULL;
	ok(b && strstr(b, "Fiber 0xf200 (thread 1);<main> (/app/main.rb:3);Cold"),
	   "raw: fibers survive the round trip");
	free(b);
	rbi_profile_free(q);
	/* Cut short, mid-line or at a line's end: what it holds, marked incomplete. */
	for (int mid = 0; mid < 2; mid++) {
		size_t keep = na / 2;

		while (!mid && keep > 0 && a[keep - 1] != '\n')
			keep--;
		f = fmemopen(a, keep, "r");
		rc = rbi_profile_load(f, &q);
		fclose(f);
		ok(rc == RBI_OK && rbi_profile_sample_count(q) > 0 &&
		   rbi_profile_sample_count(q) < rbi_profile_sample_count(p) &&
		   strstr(rbi_profile_meta(q, "incomplete") ? rbi_profile_meta(q, "incomplete") : "",
			  mid ? "cut short" : "no closing figures"),
		   "raw: cut %s, it loads what it holds, marked incomplete",
		   mid ? "mid-line" : "at a line's end");
		rbi_profile_free(q);
	}

	free(a);

	/* Version 1 (before fibers) still loads: its samples' fibers are unknown,
	   each weighs a period (no rate: 10 ms). */
	static const char v1[] = "rbinspect-profile 1\nf\t0\t1\t3\t1\tx\t\n"
		"t\t0\t42\t1\t101\t1\t4096\t\nn\t1\t0\t0\ns\t5\t1\t0\t0\t0\n";
	f = fmemopen((void *)v1, strlen(v1), "r");
	rc = rbi_profile_load(f, &q);
	fclose(f);
	b = rc ? NULL : render(q, RBI_FORMAT_FOLDED, RBI_VIEW_FIBERS, NULL);
	ok(b && !strcmp(b, "(fiber unknown);x 10000\n"),
	   "raw: version 1 loads, fibers unknown, a period per sample (%s)",
	   b ? "ok" : rbi_errmsg());
	free(b);
	rbi_profile_free(q);

	/* Version 3's figures (no ticks missed) load as before; version 4's
	   carry the ticks missed. */
	static const char v3[] = "rbinspect-profile 3\nx\t9\t8\t7\t6\t5\t4\t3\t2\t1\t10\n";
	static const char v4[] = "rbinspect-profile 4\nx\t9\t8\t7\t6\t5\t4\t3\t2\t1\t10\t11\n";
	for (int v = 3; v <= 4; v++) {
		struct rbi_sample_stats st = { 0 };

		f = fmemopen((void *)(v == 3 ? v3 : v4), strlen(v == 3 ? v3 : v4), "r");
		rc = rbi_profile_load(f, &q);
		fclose(f);
		if (!rc)
			rbi_profile_stats(q, &st);
		ok(!rc && st.samples == 9 && st.late == 10 && st.missed == (v == 3 ? 0 : 11),
		   "raw: version %d's closing figures load, %s ticks missed", v, v == 3 ? "no" : "11");
		rbi_profile_free(q);
	}

	static const char *const bad[] = {
		"",
		"not a profile\n",
		"rbinspect-profile 1\nf\t0\t1\t3\t1\tx\n",              /* fields missing */
		"rbinspect-profile 1\nn\t1\t0\t0\n",                     /* no such frame */
		"rbinspect-profile 1\nf\t0\t1\t3\t1\tx\t\nn\t1\t5\t0\n", /* parent after child */
		"rbinspect-profile 1\nf\t1\t1\t3\t1\tx\t\n",             /* ids out of order */
		"rbinspect-profile 1\nf\t0\t1\t3\t1\tx\\q\t\n",          /* bad escape */
		"rbinspect-profile 1\ns\t1\t0\t0\t0\t0\n",               /* no such thread */
		"rbinspect-profile 1\nt\t0\t42\t1\t101\t1\t4096\t\n"    /* fibers in version 1 */
		"u\t0\t0\t61696\t1\n",
		"rbinspect-profile 2\nt\t0\t42\t1\t101\t1\t4096\t\n"    /* no such fiber */
		"s\t1\t0\t0\t0\t0\t0\n",
		"rbinspect-profile 2\nt\t0\t42\t1\t101\t1\t4096\t\n"    /* another thread's */
		"t\t1\t42\t2\t102\t0\t8192\t\nu\t0\t1\t61696\t0\ns\t1\t0\t0\t0\t0\t0\n",
		"rbinspect-profile 2\nt\t0\t42\t1\t101\t1\t4096\t\n"    /* fiber 0 */
		"u\t0\t0\t0\t1\n",
		"rbinspect-profile 3\nf\t0\t1\t3\t1\tx\t\n"             /* no weight */
		"t\t0\t42\t1\t101\t1\t4096\t\nn\t1\t0\t0\ns\t5\t1\t0\t0\t0\t\n",
		"rbinspect-profile 3\nf\t0\t1\t3\t1\tx\t\n"             /* a weight of days */
		"t\t0\t42\t1\t101\t1\t4096\t\nn\t1\t0\t0\ns\t5\t1\t0\t0\t0\t\t999999999999999\n",
		"rbinspect-profile 4\nx\t9\t8\t7\t6\t5\t4\t3\t2\t1\t10\n",  /* no ticks missed */
		"rbinspect-profile 4\nx\t9\t8\t7\t6\t5\t4\t3\t2\t1\t10\t0\n"  /* figures twice */
		"x\t9\t8\t7\t6\t5\t4\t3\t2\t1\t10\t0\n",
		"rbinspect-profile 5\n",                                  /* a newer format */
		"rbinspect-profile 04\n",
		"rbinspect-profile 4\nff\t0\t1\t3\t1\tx\t\n",             /* a longer tag */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		q = NULL;
		f = fmemopen((void *)bad[i], strlen(bad[i]) ? strlen(bad[i]) : 1, "r");
		rc = rbi_profile_load(f, &q);
		fclose(f);
		ok(rc == RBI_CORRUPT && !q, "raw: bad input %zu refused: %s", i, rbi_errmsg());
		rbi_profile_free(q);
	}
}

static void test_flamegraph(rbi_profile *p)
{
	char *out = render(p, RBI_FORMAT_FLAMEGRAPH, 0, NULL);

	ok(out && strstr(out, "<svg ") && strstr(out, "</svg>"), "flamegraph: an SVG document");
	ok(out && strstr(out, "function search(") && strstr(out, "<![CDATA["),
	   "flamegraph: the search/zoom script is built in");
	ok(out && strstr(out, "<title>Hot#spin (/app/hot.rb:12) (80.00 ms, 80 samples, "
			    "61.54%)</title>"),
	   "flamegraph: frame title with time, samples and share of the time");
	ok(out && strstr(out, ">Flame graph of wall time"), "flamegraph: the title names the mode");
	ok(out && strstr(out, "Cold;walk\\n&lt;b&gt;&quot;x&quot;\\xff") && !strstr(out, "<b>"),
	   "flamegraph: names XML-escaped, bad bytes visible");
	ok(out && !strstr(out, "href=") && !strstr(out, "src=") && !strstr(out, "url(http"),
	   "flamegraph: loads nothing from elsewhere");
	free(out);
}

/* ---- A little protobuf reader for the pprof check ------------------------- */

static int varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; *p < end && shift < 64; shift += 7) {
		uint8_t b = *(*p)++;

		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 0;
	}
	return -1;
}

struct pprof_seen {
	int strings, samples, functions, locations;
	uint64_t value_sum, time_sum;
	bool hot, evil_clean, cpu, wall;
	bool bidi_raw;          /* a string holds a bidirectional control */
	bool bidi_escaped;      /* a string holds one escaped: \u{202e} */
};

static bool has_bidi(const char *s, size_t n);

static int pb_walk(const uint8_t *p, const uint8_t *end, struct pprof_seen *s)
{
	while (p < end) {
		uint64_t key, v, len;

		if (varint(&p, end, &key))
			return -1;
		if ((key & 7) == 0) {
			if (varint(&p, end, &v))
				return -1;
			continue;
		}
		if ((key & 7) != 2 || varint(&p, end, &len) || len > (uint64_t)(end - p))
			return -1;
		switch (key >> 3) {
		case 6:
			s->strings++;
			if (len == 8 && !memcmp(p, "Hot#spin", 8))
				s->hot = true;
			s->cpu |= len == 3 && !memcmp(p, "cpu", 3);
			s->wall |= len == 4 && !memcmp(p, "wall", 4);
			s->bidi_raw |= has_bidi((const char *)p, len);
			s->bidi_escaped |= len > 8 && memmem(p, len, "\\u{202e}", 8);
			if (len > 9 && !memcmp(p, "Cold;walk", 9))
				s->evil_clean = !memchr(p, '\n', len) && !memchr(p, 0xff, len);
			break;
		case 2: {
			/* Sample: field 2 = packed values. */
			const uint8_t *q = p, *qe = p + len;

			s->samples++;
			while (q < qe) {
				uint64_t k, l, x;

				if (varint(&q, qe, &k) || varint(&q, qe, &l) || l > (uint64_t)(qe - q))
					return -1;
				if ((k >> 3) == 2) {
					const uint8_t *r = q;

					if (!varint(&r, q + l, &x))
						s->value_sum += x;      /* the count */
					if (!varint(&r, q + l, &x))
						s->time_sum += x;       /* the time */
				}
				q += l;
			}
			break;
		}
		case 4: s->locations++; break;
		case 5: s->functions++; break;
		}
		p += len;
	}
	return 0;
}

/* P in pprof through FLAGS, gunzipped and walked into S; false if it is
   not gzip, or not protobuf. */
static bool pprof_read(rbi_profile *p, uint32_t flags, struct pprof_seen *s)
{
	size_t n;
	char *gz = render(p, RBI_FORMAT_PPROF, flags, &n);
	uint8_t *raw = malloc(1 << 20);
	z_stream z = { .next_in = (Bytef *)gz, .avail_in = (uInt)n, .next_out = raw,
		       .avail_out = 1 << 20 };
	int zrc = -1;
	bool good;

	if (gz && n > 2 && (uint8_t)gz[0] == 0x1f && (uint8_t)gz[1] == 0x8b && raw &&
	    inflateInit2(&z, 15 + 16) == Z_OK) {
		zrc = inflate(&z, Z_FINISH);
		inflateEnd(&z);
	}
	good = zrc == Z_STREAM_END && !pb_walk(raw, raw + z.total_out, s);
	free(gz);
	free(raw);
	return good;
}

static void test_pprof(rbi_profile *p)
{
	struct pprof_seen s = { 0 };

	ok(pprof_read(p, RBI_VIEW_IDLE, &s), "pprof: gzipped protobuf");
	ok(s.samples == 3 && s.value_sum == 105 && s.time_sum == 180000000,
	   "pprof: 3 stacks, 105 samples, 180 ms (got %d, %llu, %llu)",
	   s.samples, (unsigned long long)s.value_sum, (unsigned long long)s.time_sum);
	ok(s.wall && !s.cpu, "pprof: a wall-time profile's sample type is wall");
	ok(s.hot && s.functions == 5 && s.locations == 5,
	   "pprof: functions and locations (%d, %d), names in the string table",
	   s.functions, s.locations);
	ok(s.evil_clean, "pprof: names escaped to clean UTF-8");
}

static void test_callgrind(rbi_profile *p)
{
	char *out = render(p, RBI_FORMAT_CALLGRIND, 0, NULL);

	ok(out && strstr(out, "# callgrind format\n") && strstr(out, "events: wall_ns Samples\n") &&
	   strstr(out, "summary: 130000000 100\n"), "callgrind: header and total");
	ok(out && strstr(out, "\nfl=(2)\nfn=(2)\n12 80000000 80\n"),
	   "callgrind: self cost on its line");
	ok(out && strstr(out, "fn=(1) <main>\ncfl=(2) /app/hot.rb\ncfn=(2) Hot#spin\n"
			    "calls=80 10\n3 80000000 80\n"),
	   "callgrind: the call from <main> line 3 with inclusive cost");
	ok(out && !strstr(out, "walk\n<"), "callgrind: names on one line");
	free(out);
}

static void test_speedscope(rbi_profile *p)
{
	char *out = render(p, RBI_FORMAT_SPEEDSCOPE, RBI_VIEW_IDLE, NULL);

	ok(out && strstr(out, "\"$schema\":\"https://www.speedscope.app/file-format-schema.json\""),
	   "speedscope: schema");
	ok(out && strstr(out, "\"type\":\"sampled\"") && strstr(out, "\"unit\":\"nanoseconds\"") &&
	   strstr(out, "\"name\":\"thread 2 \\\"worker\\\" tid 102 (wall time)\""),
	   "speedscope: one sampled profile per thread");
	ok(out && strstr(out, "\"name\":\"Cold;walk\\n<b>\\\"x\\\"\\u00ff\""),
	   "speedscope: names JSON-escaped");
	free(out);
}

static int sum_weights(const struct rbi_sample_frame *const *frames, size_t n, uint64_t count,
		       uint64_t weight_ns, void *arg)
{
	*(uint64_t *)arg += weight_ns;
	return 0;
}

/* The sum of every number after KEY in S. */
static double sum_after(const char *s, const char *key)
{
	double sum = 0;

	for (const char *q = s; q && (q = strstr(q, key)); q += strlen(key))
		sum += strtod(q + strlen(key), NULL);
	return sum;
}

/* The total time, in ns, that P's rendering in FORMAT through FLAGS shows. */
static double format_total(rbi_profile *p, rbi_profile_format format, uint32_t flags)
{
	struct pprof_seen s = { 0 };
	double total = -1;
	char *out;

	if (format == RBI_FORMAT_PPROF)
		return pprof_read(p, flags, &s) ? (double)s.time_sum : -1;
	if (!(out = render(p, format, flags, NULL)))
		return -1;
	switch (format) {
	case RBI_FORMAT_FOLDED:         /* microseconds at each line's end */
		total = 0;
		for (char *l = out, *nl; (nl = strchr(l, '\n')); l = nl + 1)
			total += 1000 * strtod(memrchr(l, ' ', (size_t)(nl - l)), NULL);
		break;
	case RBI_FORMAT_FLAMEGRAPH:
		total = 1e6 * sum_after(out, "<title>all (");
		break;
	case RBI_FORMAT_SPEEDSCOPE:
		total = sum_after(out, "\"endValue\":");
		break;
	case RBI_FORMAT_CALLGRIND:
		total = sum_after(out, "\ntotals: ");
		break;
	default:
		break;
	}
	free(out);
	return total;
}

/* Every format's total is the time its samples stand for (the sum of their
   weights), whatever the view: not a count of samples times a period.
   IN_ORDER: P keeps its samples one by one (not aggregated), so the formats
   that need them in order are checked too. */
static void test_totals(rbi_profile *p, const char *what, bool in_order)
{
	static const rbi_profile_format formats[] = {
		RBI_FORMAT_FOLDED, RBI_FORMAT_FLAMEGRAPH, RBI_FORMAT_SPEEDSCOPE,
		RBI_FORMAT_PPROF, RBI_FORMAT_CALLGRIND,
	};
	static const uint32_t views[] = { 0, RBI_VIEW_IDLE, RBI_VIEW_GVL | RBI_VIEW_THREADS };

	for (size_t v = 0; v < sizeof(views) / sizeof(views[0]); v++) {
		struct rbi_profile_view view = { .size = sizeof(view), .flags = views[v] };
		uint64_t want = 0;

		rbi_profile_foreach_stack(p, &view, sum_weights, &want);
		for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
			if (!in_order && rbi_profile_format_in_order(formats[i]))
				continue;
			double got = format_total(p, formats[i], views[v]);

			/* Folded rounds each line to a microsecond, the flame
			   graph's title to 10 us. */
			ok(want > 0 && got >= (double)want - 1e4 && got <= (double)want + 1e4,
			   "%s %s, view %u: total %.0f ns is the weights' %llu ns", what,
			   rbi_profile_format_name(formats[i]), views[v], got,
			   (unsigned long long)want);
		}
	}
}

/* Sample I of a fixed mix: six stacks over three threads (one in another
   process, from the 200th sample on), two fibers, every state, with
   weights that vary from sample to sample. */
static void add_mixed(rbi_profile *p, unsigned i)
{
	static const struct rbi_sample_frame f_hot2 = {
		.id = 4, .kind = RBI_FRAME_RUBY, .label = "Hot#spin", .path = "/app/hot.rb",
		.line = 14, .first_line = 10,
	};
	const struct rbi_sample_frame *stacks[][3] = {
		{ &f_main, &f_hot, NULL }, { &f_main, &f_hot2, NULL }, { &f_main, &f_evil, &f_hot },
		{ &f_main, &f_sleep, NULL }, { &f_main, NULL, NULL }, { &f_main, &f_evil, &f_hot2 },
	};
	unsigned k = (i * 7 + i / 5) % 6, thread = 1 + (i % 3 == 2 && i >= 200) + (i % 3 == 1);
	size_t n = 0;

	while (n < 3 && stacks[k][n])
		n++;
	struct rbi_sample s = {
		.pid = thread == 3 ? 43 : 42, .time_ns = 1000000ull * i, .thread_number = thread,
		.thread = 0x1000 * thread, .tid = 100 + (int)thread,
		.thread_name = thread == 2 ? "worker" : NULL, .main = thread != 2,
		.state = (rbi_sample_state)((i / 3) % (RBI_STATE_UNKNOWN + 1)), .gc = i % 11 == 0,
		.status = RBI_OK, .nframes = n, .frames = stacks[k],
		.fiber = thread == 1 && i % 4 == 0 ? 0xf200 : 0xf100 * thread,
		.root_fiber = !(thread == 1 && i % 4 == 0), .weight_ns = 1000000 + (i * 7919) % 50000,
	};
	rbi_profile_add(p, &s);
}

/* An aggregated profile: its records do not grow with the samples, and
   every format that needs no order renders it byte for byte as the same
   samples kept one by one, through every view; what needs the order
   refuses it. */
static void test_aggregated(void)
{
	static const rbi_profile_format formats[] = {
		RBI_FORMAT_FOLDED, RBI_FORMAT_FLAMEGRAPH, RBI_FORMAT_PPROF, RBI_FORMAT_CALLGRIND,
	};
	static const uint32_t views[] = {
		0, RBI_VIEW_IDLE, RBI_VIEW_THREADS | RBI_VIEW_FIBERS, RBI_VIEW_GVL | RBI_VIEW_NO_LINES,
		RBI_VIEW_THREADS | RBI_VIEW_IDLE | RBI_VIEW_NO_LINES,
	};
	rbi_profile *each = NULL, *agg = NULL, *loaded = NULL;
	size_t records = 0, n;
	char *raw;
	FILE *f;

	if (rbi_profile_new(&each) || rbi_profile_new(&agg) || rbi_profile_aggregate(agg)) {
		ok(false, "aggregated: two profiles");
		rbi_profile_free(each);
		rbi_profile_free(agg);
		return;
	}
	for (rbi_profile **q = (rbi_profile *[]){ each, agg, NULL }; *q; q++) {
		rbi_profile_set_meta(*q, "rate", "1000");
		rbi_profile_set_meta(*q, "duration", "12.0");
	}
	/* 1,200 samples, then 12,000: the same records. */
	for (unsigned i = 0; i < 12000; i++) {
		add_mixed(each, i);
		add_mixed(agg, i);
		if (i + 1 == 1200)
			records = rbi_profile_nrecords(agg);
	}
	ok(records > 6 && records < 300 && rbi_profile_nrecords(agg) == records &&
	   rbi_profile_nrecords(each) == 12000,
	   "aggregated: %zu records after 1200 samples and after 12000 (one by one: %zu)",
	   records, rbi_profile_nrecords(each));
	ok(rbi_profile_sample_count(agg) == 12000 && rbi_profile_sample_count(each) == 12000,
	   "aggregated: every sample counted");
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		for (size_t v = 0; v < sizeof(views) / sizeof(views[0]); v++) {
			size_t na = 0, nb = 0;
			char *a = render(each, formats[i], views[v], &na);
			char *b = render(agg, formats[i], views[v], &nb);

			ok(a && b && na == nb && !memcmp(a, b, na),
			   "aggregated: %s, view %u, byte for byte as one by one (%zu bytes)",
			   rbi_profile_format_name(formats[i]), views[v], na);
			free(a);
			free(b);
		}
	test_totals(agg, "aggregated:", false);

	/* What needs every sample in order refuses it, and says why. */
	f = fopen("/dev/null", "w");
	ok(rbi_profile_write(agg, RBI_FORMAT_RAW, NULL, f) == RBI_UNSUPPORTED &&
	   rbi_profile_write(agg, RBI_FORMAT_SPEEDSCOPE, NULL, f) == RBI_UNSUPPORTED &&
	   rbi_profile_format_in_order(RBI_FORMAT_RAW) &&
	   rbi_profile_format_in_order(RBI_FORMAT_SPEEDSCOPE) &&
	   !rbi_profile_format_in_order(RBI_FORMAT_PPROF),
	   "aggregated: no raw form, no speedscope: %s", rbi_errmsg());
	fclose(f);
	struct rbi_profile_view range = { .size = sizeof(range), .first_sample = 1 };
	ok(rbi_profile_foreach_stack(agg, &range, sum_weights, &(uint64_t){ 0 }) == RBI_UNSUPPORTED &&
	   rbi_profile_aggregate(each) == RBI_INVAL && rbi_profile_aggregate(agg) == RBI_OK,
	   "aggregated: no range of samples; a profile that keeps them one by one stays so");

	/* The raw form loaded aggregated (report) renders as the profile saved. */
	raw = render(each, RBI_FORMAT_RAW, 0, &n);
	f = raw ? fmemopen(raw, n, "r") : NULL;
	if (f) {
		rbi_profile_load_aggregated(f, &loaded);
		fclose(f);
	}
	ok(loaded && rbi_profile_nrecords(loaded) == records &&
	   rbi_profile_sample_count(loaded) == 12000,
	   "aggregated: the raw form loads into %zu records", loaded ? rbi_profile_nrecords(loaded) : 0);
	for (size_t i = 0; loaded && i < sizeof(formats) / sizeof(formats[0]); i++) {
		size_t na = 0, nb = 0;
		char *a = render(each, formats[i], RBI_VIEW_IDLE | RBI_VIEW_FIBERS, &na);
		char *b = render(loaded, formats[i], RBI_VIEW_IDLE | RBI_VIEW_FIBERS, &nb);

		ok(a && b && na == nb && !memcmp(a, b, na),
		   "aggregated: %s of the raw form loaded aggregated, byte for byte",
		   rbi_profile_format_name(formats[i]));
		free(a);
		free(b);
	}
	free(raw);
	rbi_profile_free(loaded);
	rbi_profile_free(each);
	rbi_profile_free(agg);
}

/* A profile of CPU time: labelled so in every format that can say it, its
   idle samples kept by every view (each used CPU), and its mode and
   weights kept by the raw form. */
static void test_cpu_mode(void)
{
	struct pprof_seen s = { 0 };
	rbi_profile *p, *q = NULL;
	char *a, *b;
	size_t na;
	FILE *f;

	if (rbi_profile_new(&p)) {
		ok(false, "cpu: a profile");
		return;
	}
	rbi_profile_set_meta(p, "rate", "100");
	rbi_profile_set_meta(p, "mode", "cpu");
	add(p, &f_hot, RBI_STATE_GVL, 10, 1, 0xf100, 7000);
	add(p, &f_sleep, RBI_STATE_SLEEPING, 3, 2, 0, 333);
	a = render(p, RBI_FORMAT_FOLDED, 0, NULL);
	ok(a && strstr(a, "Kernel#sleep 999\n") && strstr(a, "Hot#spin (/app/hot.rb:12) 70000\n"),
	   "cpu: the default view keeps the samples of a thread that then slept");
	free(a);
	ok(pprof_read(p, 0, &s) && s.cpu && !s.wall && s.time_sum == 70999000,
	   "cpu: pprof's sample type is cpu, its values the CPU time");
	a = render(p, RBI_FORMAT_SPEEDSCOPE, 0, NULL);
	ok(a && strstr(a, "tid 101 (CPU time)\"") && strstr(a, "\"unit\":\"nanoseconds\""),
	   "cpu: speedscope's profiles say CPU time, in nanoseconds");
	free(a);
	a = render(p, RBI_FORMAT_FLAMEGRAPH, 0, NULL);
	ok(a && strstr(a, ">Flame graph of CPU time"), "cpu: the flame graph's title says CPU time");
	free(a);
	a = render(p, RBI_FORMAT_CALLGRIND, 0, NULL);
	ok(a && strstr(a, "events: cpu_ns Samples\n"), "cpu: callgrind's event is cpu_ns");
	free(a);
	test_totals(p, "cpu:", true);

	a = render(p, RBI_FORMAT_RAW, 0, &na);
	f = a ? fmemopen(a, na, "r") : NULL;
	if (f) {
		rbi_profile_load(f, &q);
		fclose(f);
	}
	ok(q && rbi_profile_meta(q, "mode") && !strcmp(rbi_profile_meta(q, "mode"), "cpu"),
	   "cpu: the raw form keeps the mode");
	free(a);
	a = render(p, RBI_FORMAT_FOLDED, RBI_VIEW_IDLE, NULL);
	b = q ? render(q, RBI_FORMAT_FOLDED, RBI_VIEW_IDLE, NULL) : NULL;
	ok(a && b && !strcmp(a, b), "cpu: the raw form keeps the weights");
	free(a);
	free(b);
	rbi_profile_free(q);
	rbi_profile_free(p);
}

/* Most stacks lost: said in the metadata, and kept by the raw form; a
   few lost: nothing said. */
static void test_lost(void)
{
	struct rbi_sample_stats few = { .samples = 100, .stacks = 90, .errors = 6, .torn = 4 };
	struct rbi_sample_stats many = { .samples = 100, .stacks = 70, .errors = 20, .torn = 10 };
	rbi_profile *p, *q = NULL;
	const char *w;
	size_t n;
	char *raw;
	FILE *f;

	if (rbi_profile_new(&p)) {
		ok(false, "lost: a profile");
		return;
	}
	rbi_profile_add_stats(p, &few);
	rbi_profile_warn_lost(p);
	ok(!rbi_profile_meta(p, "warning"), "lost: 10%% of the stacks lost: no warning");
	rbi_profile_add_stats(p, &many);
	rbi_profile_warn_lost(p);
	ok(!rbi_profile_meta(p, "warning"), "lost: a fifth lost (40 of 200): no warning");
	rbi_profile_add_stats(p, &many);
	rbi_profile_warn_lost(p);
	w = rbi_profile_meta(p, "warning");
	ok(w && strstr(w, "23% of the stacks could not be read (46 errors, 24 torn, of 300)"),
	   "lost: 23%% lost, warned: %s", w ? w : "no warning");
	raw = render(p, RBI_FORMAT_RAW, 0, &n);
	f = raw ? fmemopen(raw, n, "r") : NULL;
	if (f) {
		rbi_profile_load(f, &q);
		fclose(f);
	}
	ok(q && rbi_profile_meta(q, "warning") && !strcmp(rbi_profile_meta(q, "warning"), w),
	   "lost: the raw form keeps the warning for report");
	free(raw);
	rbi_profile_free(q);
	rbi_profile_free(p);
}

/* A /proc/PID/stat line of COMM, with STARTCODE and STARTSTACK (fields
   26 and 28), the others their own field numbers. */
static void stat_line(char *buf, size_t cap, const char *comm, uint64_t code, uint64_t stack)
{
	int n = snprintf(buf, cap, "4242 (%s) R", comm);

	for (int field = 4; field <= 52; field++)
		n += snprintf(buf + n, cap - (size_t)n, " %llu", (unsigned long long)
			      (field == 26 ? code : field == 28 ? stack : (uint64_t)field));
	snprintf(buf + n, cap - (size_t)n, "\n");
}

/* What record follows an exec by: a process's image changes with its
   name, its code's or its stack's start; hidden fields tell nothing. */
static void test_image(void)
{
	char a[1024], b[1024];
	uint64_t ia;

	stat_line(a, sizeof(a), "ru by) x", 0x5555000, 0x7ffd000);
	ia = rbi_proc_stat_image(a);
	stat_line(b, sizeof(b), "ru by) x", 0x5555000, 0x7ffd000);
	ok(ia && ia == rbi_proc_stat_image(b), "image: the same process, the same image");
	stat_line(b, sizeof(b), "ru by) x", 0x5555000, 0x7ffe000);
	ok(rbi_proc_stat_image(b) && rbi_proc_stat_image(b) != ia, "image: another stack, another image");
	stat_line(b, sizeof(b), "ru by) x", 0x5556000, 0x7ffd000);
	ok(rbi_proc_stat_image(b) != ia, "image: another start of code, another image");
	stat_line(b, sizeof(b), "bundle", 0x5555000, 0x7ffd000);
	ok(rbi_proc_stat_image(b) != ia, "image: another name, another image");
	stat_line(b, sizeof(b), "ru by) x", 0, 0);
	ok(!rbi_proc_stat_image(b) && !rbi_proc_stat_image("4242 (x) R 1 2") &&
	   !rbi_proc_stat_image("garbage"), "image: hidden fields, a short or bad line: unknown");
}

/* Every bidirectional control (U+061C ARABIC LETTER MARK, U+200E/F the
   marks, U+202A-E the embeddings and overrides, U+2066-9 the isolates),
   which would reorder what a reader sees: one after each "x" of a name. */
static const char bidi_label[] = "ok" "\xd8\x9c" "x" "\xe2\x80\x8e" "x" "\xe2\x80\x8f" "x" "\xe2\x80\xaa" "x" "\xe2\x80\xab" "x" "\xe2\x80\xac" "x" "\xe2\x80\xad" "x" "\xe2\x80\xae" "x" "\xe2\x81\xa6" "x" "\xe2\x81\xa7" "x" "\xe2\x81\xa8" "x" "\xe2\x81\xa9" "x";

/* The raw bytes of a bidirectional control in S (N bytes)? */
static bool has_bidi(const char *s, size_t n)
{
	for (size_t i = 0; i + 1 < sizeof(bidi_label); i++)
		if ((unsigned char)bidi_label[i] >= 0xc0) {
			size_t len = (unsigned char)bidi_label[i] >= 0xe0 ? 3 : 2;

			if (memmem(s, n, bidi_label + i, len))
				return true;
		}
	return false;
}

/* The name with every bidirectional control: escaped in every format,
   never written raw (pprof's strings too, gunzipped). */
static void test_bidi(void)
{
	static const struct rbi_sample_frame f_bidi = {
		.id = 0, .kind = RBI_FRAME_RUBY, .label = bidi_label,
		.path = "/app/b.rb", .line = 1, .first_line = 1,
	};
	static const struct {
		rbi_profile_format format;
		const char *want;
	} cases[] = {
		{ RBI_FORMAT_FOLDED, "ok\\u{61c}x\\u{200e}x\\u{200f}x\\u{202a}x\\u{202b}x\\u{202c}x\\u{202d}x\\u{202e}x\\u{2066}x\\u{2067}x\\u{2068}x\\u{2069}x" },
		{ RBI_FORMAT_FLAMEGRAPH, "ok\\u{61c}x\\u{200e}x\\u{200f}x\\u{202a}x\\u{202b}x\\u{202c}x\\u{202d}x\\u{202e}x\\u{2066}x\\u{2067}x\\u{2068}x\\u{2069}x" },
		{ RBI_FORMAT_CALLGRIND, "ok\\u{61c}x\\u{200e}x\\u{200f}x\\u{202a}x\\u{202b}x\\u{202c}x\\u{202d}x\\u{202e}x\\u{2066}x\\u{2067}x\\u{2068}x\\u{2069}x" },
		{ RBI_FORMAT_SPEEDSCOPE, "ok\\u061cx\\u200ex\\u200fx\\u202ax\\u202bx\\u202cx\\u202dx\\u202ex\\u2066x\\u2067x\\u2068x\\u2069x" },
	};
	const struct rbi_sample_frame *frames[1] = { &f_bidi };
	struct pprof_seen s = { 0 };
	struct rbi_sample smp = {
		.pid = 42, .thread_number = 1, .thread = 0x1000, .main = 1,
		.state = RBI_STATE_GVL, .status = RBI_OK, .nframes = 1, .frames = frames,
	};
	rbi_profile *p;

	if (rbi_profile_new(&p) || rbi_profile_add(p, &smp)) {
		ok(false, "bidi: a profile");
		rbi_profile_free(p);
		return;
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n;
		char *out = render(p, cases[i].format, 0, &n);

		ok(out && strstr(out, cases[i].want) && !has_bidi(out, n),
		   "%s: bidirectional controls escaped", rbi_profile_format_name(cases[i].format));
		free(out);
	}
	ok(pprof_read(p, 0, &s) && s.bidi_escaped && !s.bidi_raw,
	   "pprof: bidirectional controls escaped in its strings");
	rbi_profile_free(p);
}

static void test_tables(void)
{
	struct rbi_map m = { 0 };
	struct rbi_strtab st = { 0 };
	struct rbi_frametab ft = { 0 };
	bool all = true;
	uint64_t v;

	for (uint64_t i = 1; i <= 100000; i++)
		all &= rbi_map_put(&m, i * 8, i, 0, i * 3) == RBI_OK;
	for (uint64_t i = 1; i <= 100000; i++)
		all &= rbi_map_get(&m, i * 8, i, 0, &v) && v == i * 3;
	ok(all && m.n == 100000 && !rbi_map_get(&m, 8, 2, 0, &v), "map: 100000 keys in and out");
	ok(rbi_map_put(&m, 0, 0, 0, 1) == RBI_INVAL, "map: the empty key is refused");
	rbi_map_free(&m);
	const char *a = rbi_strtab_intern(&st, "abc", 3), *b = rbi_strtab_intern(&st, "abcd", 3);
	ok(a && a == b && !strcmp(a, "abc") && rbi_strtab_intern(&st, "ab", 2) != a,
	   "strtab: one copy per string");
	rbi_strtab_free(&st);
	const struct rbi_sample_frame *x = rbi_frametab_intern(&ft, RBI_FRAME_RUBY, "m", "p", 1, 1);
	const struct rbi_sample_frame *y = rbi_frametab_intern(&ft, RBI_FRAME_RUBY, "m", "p", 2, 1);
	const struct rbi_sample_frame *z = rbi_frametab_intern(&ft, RBI_FRAME_RUBY, "m", "p", 1, 1);
	const struct rbi_sample_frame *u = rbi_frametab_intern(&ft, RBI_FRAME_CFUNC, NULL, NULL, 0, 0);
	ok(x && y && x == z && x != y && x->id == 0 && y->id == 1 && u && !strcmp(u->label, "(unknown)"),
	   "frametab: interned by content, dense ids");
	rbi_frametab_free(&ft);
}

int main(void)
{
	rbi_profile *p;

	test_tables();
	test_bidi();
	if (rbi_profile_new(&p)) {
		printf("not ok 1 - profile_new\n1..1\n");
		return 1;
	}
	rbi_profile_set_meta(p, "rate", "1000");
	rbi_profile_set_meta(p, "pid", "42");
	add(p, &f_hot, RBI_STATE_GVL, 80, 1, 0xf100, 1000);
	add(p, &f_evil, RBI_STATE_RUNNING, 20, 1, 0xf200, 2500);
	add(p, &f_sleep, RBI_STATE_SLEEPING, 5, 2, 0, 10000);
	ok(rbi_profile_sample_count(p) == 105, "profile: 105 samples kept");
	test_folded(p);
	test_raw(p);
	test_flamegraph(p);
	test_pprof(p);
	test_callgrind(p);
	test_speedscope(p);
	test_totals(p, "wall:", true);
	rbi_profile_free(p);
	test_aggregated();
	test_cpu_mode();
	test_lost();
	test_image();
	return tap_plan();
}
