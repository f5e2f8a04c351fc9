/* record.c: rbi_profile_record's sampling loop (rbi_record_run).
 *
 * One tick samples every process, on the clock of ticks.c: due at random
 * intervals, a late one's missed ticks counted and left out of its samples'
 * weights (rbi_sampler_skip).  The loop sleeps with clock_nanosleep, so a
 * signal (the caller's stop flag) ends the sleep at once.
 *
 * With RBI_RECORD_SUBPROCESSES the descendants of the process are listed
 * every 100 ms (/proc/PID/task/TID/children, else a scan of /proc).  Each
 * new one is opened by a helper thread, since finding a VM can take a
 * while (DWARF) and the loop must keep its pace.  A forked worker runs the
 * same libruby as its parent: it gets the struct layout a process sampled
 * already read from DWARF (targets->layout_seed, used only for the same
 * build-id), so opening it is a matter of milliseconds, not the 0.1 s of
 * CPU (seconds on a loaded machine) that reading DWARF again costs, which
 * left a short recording with workers never sampled.  One that does not run
 * Ruby (yet: a shell, a child about to exec) is tried again later, backing
 * off, and at once after it ran another program.
 *
 * A process sampled that runs another program (exec: `bundle exec`, a
 * script that execs ruby) is followed: before each tick, and again when a
 * tick lost stacks (the old addresses no longer read), /proc/PID/stat
 * says whether its image changed (rbi_proc_stat_image: name, code and
 * stack addresses, which ASLR moves at every exec), and the 16 random
 * bytes the kernel wrote for the program (AT_RANDOM) whether they are
 * new: an exec of the same program with the same arguments and
 * randomization off (setarch -R) moves nothing else.  A tick reads the
 * process a few microseconds after the check, so an exec in between can
 * still give it stacks read from the new program at the old addresses
 * (torn or lost, mostly).  Its sampler and target
 * are dropped, its figures kept, the metadata "exec.N" marks the moment,
 * and it is opened again like a new process: the new program's VM once it
 * has one, or nothing until it runs Ruby again or exits.
 *
 * The loop runs as a real-time thread where it may (wakeup.c): its ticks
 * then read the stacks at their time, not at the next system call of a
 * thread sharing its CPU. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "profile/profile.h"
#include "profile/ticks.h"
#include "profile/wakeup.h"

#define DEFAULT_RATE 100.0
#define SCAN_NS 100000000ull            /* descendants listed this often */
#define RETRY_MIN_NS 10000000ull        /* not-yet-Ruby processes retried, */
#define RETRY_MAX_NS 1000000000ull      /* backing off */
#define PROCS_MAX 4096

enum proc_state {
	PROC_NEW,               /* to be opened (when due) */
	PROC_OPENING,           /* the helper has it */
	PROC_OPENED,            /* the helper is done: T or RC */
	PROC_SAMPLING,          /* S samples it */
	PROC_DEAD,              /* exited */
};

struct proc {
	pid_t pid;
	enum proc_state state;
	rbi_target *t;
	struct rbi_layout_seed *seed;   /* PROC_OPENING: for the helper */
	int rc;                         /* PROC_OPENED without T: why */
	rbi_sampler *s;
	struct rbi_map fmap;            /* sampler frame -> profile frame */
	bool counted;                   /* its figures are in the profile */
	int stat_fd;                    /* PROC_SAMPLING: /proc/PID/stat ... */
	uint64_t image;                 /* ... and rbi_proc_stat_image of it */
	uint64_t at_random, nonce;      /* rbi_proc_at_random, rbi_proc_exec_nonce */
	uint64_t lost;                  /* stacks S lost so far (errors, torn) */
	bool execed;                    /* to be opened again after an exec */
	unsigned exec_unnamed;          /* its exec.N whose command was not
					   readable yet (mid-exec) ... */
	uint64_t exec_ns;               /* ... and when it was seen */
	uint64_t retry_at, backoff;
	char exe[256];                  /* /proc/PID/exe when last tried */
};

/* RBI_SAMPLER_NATIVE: how the stacks kept were read. */
struct native_tally {
	uint64_t merged;        /* native frames merged with the Ruby ones */
	uint64_t ruby_only;     /* the Ruby frames alone ... */
	char why[256];          /* ... and the first reason for it */
	uint64_t stopped_ns, stopped_max_ns;    /* threads held, in all */
};

struct rec {
	rbi_profile *p;
	const struct rbi_record_opts *o;
	const struct rbi_record_targets *targets;
	struct rbi_open_opts open;
	/* PROCS and each proc's STATE, T, SEED and RC are shared with the helper
	   under MU; the rest is the loop's. */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t helper;
	bool helper_started, quit;
	struct proc *procs;
	size_t n, cap;
	bool meta_done;
	bool sampled;           /* some process got as far as sampling */
	unsigned execs;         /* exec.N metadata written */
	uint64_t start;         /* when sampling started */
	int root_rc;            /* why the root process could not be opened */
	uint64_t rng;
	struct native_tally native;
};

static double uniform(struct rec *r)
{
	/* xorshift64*: enough to spread ticks. */
	r->rng ^= r->rng >> 12;
	r->rng ^= r->rng << 25;
	r->rng ^= r->rng >> 27;
	return (double)((r->rng * 0x2545f4914f6cdd1dull) >> 11) / 9007199254740992.0;
}

static bool alive(pid_t pid)
{
	return kill(pid, 0) == 0 || errno == EPERM;
}

static bool proc_known(struct rec *r, pid_t pid)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->procs[i].pid == pid)
			return true;
	return false;
}

/* Add PID (under the lock: the array may move). */
static bool proc_add(struct rec *r, pid_t pid)
{
	bool ok = false;

	pthread_mutex_lock(&r->mu);
	if (r->n < PROCS_MAX) {
		if (!RBI_GROW(r->procs, r->cap, r->n + 1, 8))
			goto out;
		memset(&r->procs[r->n], 0, sizeof(r->procs[r->n]));
		r->procs[r->n].stat_fd = -1;
		r->procs[r->n++].pid = pid;
		ok = true;
	}
out:
	pthread_mutex_unlock(&r->mu);
	return ok;
}

static void proc_close(struct rec *r, struct proc *p)
{
	struct rbi_sample_stats st;

	if (p->s && !p->counted) {
		rbi_sampler_stats(p->s, &st);
		rbi_profile_add_stats(r->p, &st);
		p->counted = true;
	}
	rbi_sampler_free(p->s);
	r->targets->free_target(p->t);
	free(p->seed);
	p->seed = NULL;
	rbi_map_free(&p->fmap);
	if (p->stat_fd >= 0)
		close(p->stat_fd);
	p->stat_fd = -1;
	p->s = NULL;
	p->t = NULL;
}

/* The image of P's process now (0 if unknown). */
static uint64_t proc_image(struct proc *p)
{
	char buf[1024];
	ssize_t n;

	if (p->stat_fd < 0 || (n = pread(p->stat_fd, buf, sizeof(buf) - 1, 0)) <= 0)
		return 0;
	buf[n] = '\0';
	return rbi_proc_stat_image(buf);
}

static void read_file(const char *path, char *buf, size_t cap, bool nul_to_space)
{
	size_t n = 0;
	FILE *f;

	buf[0] = '\0';
	if (!(f = fopen(path, "re")))
		return;
	n = fread(buf, 1, cap - 1, f);
	fclose(f);
	buf[n] = '\0';
	for (size_t i = 0; nul_to_space && i + 1 < n; i++)
		if (!buf[i])
			buf[i] = ' ';
}

static void set_meta_once(struct rec *r, struct proc *p)
{
	const struct rbi_ruby_info *info;
	char buf[4096], path[64];

	if (r->meta_done || rbi_ruby_info(p->t, &info))
		return;
	r->meta_done = true;
	rbi_profile_set_meta(r->p, "ruby", info->version);
	rbi_profile_set_meta(r->p, "ruby_description", info->description);
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)p->pid);
	read_file(path, buf, sizeof(buf), true);
	if (buf[0])
		rbi_profile_set_meta(r->p, "command", buf);
}

static void read_exe(pid_t pid, char *buf, size_t cap)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, buf, cap - 1);
	buf[n > 0 ? n : 0] = '\0';
}

/* Open PID's target and find its VM (slow with DWARF, unless SEED, taken,
   has its layout). */
static int open_target(struct rec *r, pid_t pid, struct rbi_layout_seed *seed,
		       rbi_target **out)
{
	const struct rbi_ruby_info *info;
	int rc;

	*out = NULL;
	if ((rc = r->targets->open_pid(pid, &r->open, seed, out)))
		return rc;
	if ((rc = rbi_ruby_info(*out, &info))) {
		r->targets->free_target(*out);
		*out = NULL;
	}
	return rc;
}

static void *helper_main(void *arg)
{
	struct rec *r = arg;

	pthread_mutex_lock(&r->mu);
	while (!r->quit) {
		size_t i;

		for (i = 0; i < r->n && r->procs[i].state != PROC_OPENING; i++)
			;
		if (i == r->n) {
			pthread_cond_wait(&r->cv, &r->mu);
			continue;
		}
		pid_t pid = r->procs[i].pid;
		struct rbi_layout_seed *seed = r->procs[i].seed;
		rbi_target *t;

		r->procs[i].seed = NULL;
		pthread_mutex_unlock(&r->mu);
		int rc = open_target(r, pid, seed, &t);
		pthread_mutex_lock(&r->mu);
		/* Look it up again: the array may have moved. */
		for (i = 0; i < r->n && r->procs[i].pid != pid; i++)
			;
		r->procs[i].t = t;
		r->procs[i].rc = rc;
		r->procs[i].state = PROC_OPENED;
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

/* P's state, which the helper moves on (PROC_OPENING to PROC_OPENED) and
   reads for every process while it looks for work: read and written under
   the lock, by the loop too. */
static enum proc_state state_of(struct rec *r, const struct proc *p)
{
	enum proc_state st;

	pthread_mutex_lock(&r->mu);
	st = p->state;
	pthread_mutex_unlock(&r->mu);
	return st;
}

static void set_state(struct rec *r, struct proc *p, enum proc_state st)
{
	pthread_mutex_lock(&r->mu);
	p->state = st;
	pthread_mutex_unlock(&r->mu);
}

/* A copy of the DWARF layout of a process sampled (the helper cannot read
   it there: the loop may close that process meanwhile), or NULL.  Under
   the lock (the states). */
static struct rbi_layout_seed *seed_of_sampled(struct rec *r)
{
	struct rbi_layout_seed *seed = NULL;

	for (size_t i = 0; !seed && i < r->n; i++)
		if (r->procs[i].state == PROC_SAMPLING)
			seed = r->targets->layout_seed(r->procs[i].t);
	return seed;
}

/* Hand P to the helper. */
static void proc_submit(struct rec *r, size_t i)
{
	pthread_mutex_lock(&r->mu);
	free(r->procs[i].seed);
	r->procs[i].seed = seed_of_sampled(r);
	if (!r->helper_started && !r->quit)
		r->helper_started = pthread_create(&r->helper, NULL, helper_main, r) == 0;
	if (r->helper_started) {
		r->procs[i].state = PROC_OPENING;
		pthread_cond_signal(&r->cv);
	}
	pthread_mutex_unlock(&r->mu);
}

/* The metadata exec.N: at NOW, P's process ran what its command line
   says; false if it could not be read (the exec under way). */
static bool exec_meta(struct rec *r, struct proc *p, unsigned n, uint64_t now)
{
	char key[32], cmd[256], buf[384], path[64];

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)p->pid);
	read_file(path, cmd, sizeof(cmd), true);
	snprintf(buf, sizeof(buf), "%.3f s: process %d ran %s", (double)(now - r->start) / 1e9,
		 (int)p->pid, cmd[0] ? cmd : "another program");
	snprintf(key, sizeof(key), "exec.%u", n);
	rbi_profile_set_meta(r->p, key, buf);
	return cmd[0] != '\0';
}

/* P's target is open (or failed): make its sampler, or plan a retry. */
static void proc_opened(struct rec *r, struct proc *p, int rc, uint64_t now)
{
	struct rbi_sampler_opts so = {
		.size = sizeof(so),
		.flags = r->o->flags & (RBI_SAMPLER_IDLE | RBI_SAMPLER_PAUSE | RBI_SAMPLER_NATIVE |
					RBI_SAMPLER_CPU),
		.max_frames = r->o->max_frames,
	};

	if (!rc)
		rc = rbi_sampler_new(p->t, &so, &p->s);
	if (!rc) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/stat", (int)p->pid);
		p->stat_fd = open(path, O_RDONLY | O_CLOEXEC);
		p->image = proc_image(p);
		p->at_random = rbi_proc_at_random((int)p->pid);
		p->nonce = rbi_proc_exec_nonce((int)p->pid, p->at_random);
		p->lost = 0;
		p->counted = false;
		set_state(r, p, PROC_SAMPLING);
		r->sampled = true;
		set_meta_once(r, p);
		if (p->exec_unnamed)
			exec_meta(r, p, p->exec_unnamed, p->exec_ns);
		p->exec_unnamed = 0;
		return;
	}
	r->targets->free_target(p->t);
	p->t = NULL;
	p->rc = rc;
	if (p == &r->procs[0])
		r->root_rc = rc;
	if (rc == RBI_NO_PROCESS || rc == RBI_ZOMBIE || rc == RBI_GONE || !alive(p->pid)) {
		set_state(r, p, PROC_DEAD);
		return;
	}
	set_state(r, p, PROC_NEW);
	p->backoff = p->backoff ? p->backoff * 2 : RETRY_MIN_NS;
	if (p->backoff > RETRY_MAX_NS)
		p->backoff = RETRY_MAX_NS;
	p->retry_at = now + p->backoff;
	read_exe(p->pid, p->exe, sizeof(p->exe));
}

/* Whether P's process runs another program than when it was opened; if
   so, mark the moment and drop what read the old one, to open it again. */
static bool proc_execed(struct rec *r, struct proc *p, uint64_t now)
{
	uint64_t image = proc_image(p), nonce = rbi_proc_exec_nonce((int)p->pid, p->at_random);

	/* The stat line's image, and for an exec that left it alone (ASLR
	   off, the same program and arguments) the kernel's random bytes;
	   either one unreadable tells nothing. */
	if ((!image || !p->image || image == p->image) &&
	    (!nonce || !p->nonce || nonce == p->nonce))
		return false;
	/* Seen this early, the new command line may not be there yet: then
	   it is written once the new program is opened. */
	if (r->execs < 100 && !exec_meta(r, p, ++r->execs, now)) {
		p->exec_unnamed = r->execs;
		p->exec_ns = now;
	}
	proc_close(r, p);
	set_state(r, p, PROC_NEW);
	p->execed = true;
	p->backoff = 0;
	p->retry_at = now;
	return true;
}

/* Time to try a process that was not Ruby again: when its back-off is
   over, or at once after it ran another program (exec). */
static bool proc_due(struct proc *p, uint64_t now)
{
	char exe[sizeof(p->exe)];

	if (now >= p->retry_at)
		return true;
	read_exe(p->pid, exe, sizeof(exe));
	return strcmp(exe, p->exe) != 0;
}

/* Children of PID from /proc/PID/task/ * /children; false if unsupported. */
static bool children_of(pid_t pid, pid_t *out, size_t *n, size_t max)
{
	char path[64];
	struct rbi_proc_tasks dir;
	bool any = false;
	int tid;

	if (rbi_proc_tasks_open(&dir, (int)pid))
		return true;    /* gone: no children, not unsupported */
	while (*n < max && (tid = rbi_proc_tasks_next(&dir))) {
		FILE *f;
		long c;

		snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, tid);
		if (!(f = fopen(path, "re")))
			continue;
		any = true;
		while (*n < max && fscanf(f, "%ld", &c) == 1)
			out[(*n)++] = (pid_t)c;
		fclose(f);
	}
	rbi_proc_tasks_close(&dir);
	return any;
}

/* Every process whose parent is PID, by scanning /proc. */
static void children_scan(pid_t pid, pid_t *out, size_t *n, size_t max)
{
	struct dirent *d;
	DIR *dir = opendir("/proc");

	if (!dir)
		return;
	while ((d = readdir(dir)) && *n < max) {
		char path[64], *p;
		long c = strtol(d->d_name, &p, 10);
		int ppid;

		if (*p || c <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/stat", c);
		if (rbi_proc_stat(path, NULL, &ppid))
			continue;
		if (ppid == pid)
			out[(*n)++] = (pid_t)c;
	}
	closedir(dir);
}

/* Add descendants not known yet. */
static void scan_descendants(struct rec *r, pid_t root)
{
	pid_t queue[PROCS_MAX];
	size_t head = 0, n = 0;

	queue[n++] = root;
	while (head < n) {
		pid_t pid = queue[head++];
		size_t before = n;

		if (!children_of(pid, queue, &n, PROCS_MAX))
			children_scan(pid, queue, &n, PROCS_MAX);
		for (size_t i = before; i < n; i++)
			if (!proc_known(r, queue[i]))
				proc_add(r, queue[i]);
	}
}

static void native_count(struct native_tally *n, const struct rbi_sample *s)
{
	n->stopped_ns += s->stopped_ns;
	if (s->stopped_ns > n->stopped_max_ns)
		n->stopped_max_ns = s->stopped_ns;
	if (s->status != RBI_OK)
		return;
	if (s->native) {
		n->merged++;
	} else {
		if (!n->ruby_only++)
			snprintf(n->why, sizeof(n->why), "%s", s->native_unmerged ?
				 s->native_unmerged : "unknown");
	}
}

static void native_meta(rbi_profile *p, const struct native_tally *n)
{
	char buf[64];
	uint64_t held = n->merged + n->ruby_only;

	rbi_profile_set_meta(p, "native", "yes");
	snprintf(buf, sizeof(buf), "%" PRIu64, n->merged);
	rbi_profile_set_meta(p, "native_merged", buf);
	snprintf(buf, sizeof(buf), "%" PRIu64, n->ruby_only);
	rbi_profile_set_meta(p, "native_ruby_only", buf);
	if (n->ruby_only)
		rbi_profile_set_meta(p, "native_ruby_only_why", n->why);
	snprintf(buf, sizeof(buf), "%.3f", held ? (double)n->stopped_ns / (double)held / 1e6 : 0.0);
	rbi_profile_set_meta(p, "native_stop_mean_ms", buf);
	snprintf(buf, sizeof(buf), "%.3f", (double)n->stopped_max_ns / 1e6);
	rbi_profile_set_meta(p, "native_stop_max_ms", buf);
}

/* ARG: { the recording, the process sampled }. */
static int add_sample(const struct rbi_sample *s, void *arg)
{
	struct rec *r = ((void **)arg)[0];
	struct proc *p = ((void **)arg)[1];
	int rc = rbi_profile_add_mapped(r->p, s, &p->fmap);

	if (r->o->flags & RBI_SAMPLER_NATIVE)
		native_count(&r->native, s);
	return rc < 0 ? rc : 0;
}

static void sleep_until(uint64_t due)
{
	struct timespec ts = {
		.tv_sec = (time_t)(due / 1000000000u),
		.tv_nsec = (long)(due % 1000000000u),
	};

	/* EINTR: a signal, maybe the stop flag; the loop looks. */
	clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

static void start_meta(struct rec *r, pid_t pid, double rate)
{
	char buf[64];
	time_t now = time(NULL);
	struct timespec ts;
	struct tm tm;

	snprintf(buf, sizeof(buf), "%d", (int)pid);
	rbi_profile_set_meta(r->p, "pid", buf);
	snprintf(buf, sizeof(buf), "%g", rate);
	rbi_profile_set_meta(r->p, "rate", buf);
	rbi_profile_set_meta(r->p, "mode", r->o->flags & RBI_SAMPLER_CPU ? "cpu" : "wall");
	if (gmtime_r(&now, &tm)) {
		strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
		rbi_profile_set_meta(r->p, "start", buf);
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(buf, sizeof(buf), "%" PRIu64,
		 (uint64_t)((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec));
	rbi_profile_set_meta(r->p, "start_unix_ns", buf);
}

/* One look at every process not sampled yet.  Returns whether one is
   alive (sampled, being opened, or to be tried again). */
static bool tend(struct rec *r, uint64_t now, bool *any_sampling)
{
	bool any_alive = false;

	*any_sampling = false;
	for (size_t i = 0; i < r->n; i++) {
		struct proc *p = &r->procs[i];
		enum proc_state st;

		st = state_of(r, p);
		if (st == PROC_OPENED)
			proc_opened(r, p, p->rc, now);
		else if (st == PROC_NEW && proc_due(p, now))
			proc_submit(r, i);
		st = state_of(r, p);
		any_alive |= st != PROC_DEAD;
		/* One that ran another program is sampled again once open. */
		*any_sampling |= st == PROC_SAMPLING || (p->execed && st != PROC_DEAD);
	}
	return any_alive;
}

/* The profile's "duration": NS, the window sampled, in seconds. */
static void set_duration(rbi_profile *p, uint64_t ns)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "%.3f", (double)ns / 1e9);
	rbi_profile_set_meta(p, "duration", buf);
}

int rbi_record_run(rbi_profile *p, pid_t pid, const struct rbi_record_opts *opts,
		   const struct rbi_record_targets *targets)
{
	struct rbi_record_opts oc = { 0 };      /* OPTS as far as its size reaches */
	const struct rbi_record_opts *o = &oc;
	struct rec r = { .p = p, .o = o, .targets = targets };
	uint64_t start = 0, next_scan = 0, next_progress, stop_at = 0, skip;
	uint64_t progress_every, end;
	struct rbi_ticks ticks = { 0 };
	struct rbi_sample_stats st = { 0 }, qst;
	struct rbi_wakeup wakeup = { 0 };
	char wakeup_buf[96];
	bool sampling;
	double rate;
	int rc = RBI_OK;
	rbi_target *t;

	if (!p || !opts || pid <= 0)
		return rbi_fail(RBI_INVAL, "no profile, options or process");
	RBI_COPY_IN(&oc, opts);
	rate = o->rate > 0 ? o->rate : DEFAULT_RATE;
	if (rate > 1e6)
		return rbi_fail(RBI_INVAL, "rate %g is above 1 MHz", rate);
	r.open.size = sizeof(r.open);
	RBI_COPY_IN(&r.open, o->open);
	r.rng = rbi_now_ns() ^ ((uint64_t)getpid() << 32) ^ 0x9e3779b97f4a7c15ull;
	pthread_mutex_init(&r.mu, NULL);
	pthread_cond_init(&r.cv, NULL);
	start_meta(&r, pid, rate);
	if (!proc_add(&r, pid)) {
		rc = rbi_fail(RBI_NOMEM, "out of memory");
		goto out;
	}
	/* The first process is opened here, so its errors (permission, not
	   Ruby) come back at once; the clock starts after it. */
	rc = open_target(&r, pid, NULL, &t);
	r.procs[0].t = t;
	proc_opened(&r, &r.procs[0], rc, rbi_now_ns());
	if (rc && (state_of(&r, &r.procs[0]) == PROC_DEAD ||
		   !(o->flags & (RBI_RECORD_WAIT | RBI_RECORD_SUBPROCESSES))))
		goto out;
	rc = RBI_OK;
	start = r.start = rbi_now_ns();
	if (o->duration > 0)
		stop_at = start + (uint64_t)(o->duration * 1e9);
	progress_every = (uint64_t)((o->progress_interval > 0 ? o->progress_interval : 1.0) * 1e9);
	next_progress = start + progress_every;
	rbi_ticks_start(&ticks, (uint64_t)(1e9 / rate), start);
	rbi_wakeup_raise(&wakeup);
	for (;;) {
		uint64_t now = rbi_now_ns();

		if ((o->stop && *o->stop) || (stop_at && now >= stop_at))
			break;
		if ((o->flags & RBI_RECORD_SUBPROCESSES) && now >= next_scan) {
			scan_descendants(&r, pid);
			next_scan = now + SCAN_NS;
		}
		if (!tend(&r, now, &sampling))
			break;          /* every process has exited */
		if (!sampling && !(o->flags & (RBI_RECORD_WAIT | RBI_RECORD_SUBPROCESSES)))
			break;
		if (ticks.due > now) {
			sleep_until(stop_at && stop_at < ticks.due ? stop_at : ticks.due);
			continue;
		}
		skip = rbi_ticks_take(&ticks, now);
		for (size_t i = 0; i < r.n; i++) {
			struct proc *q = &r.procs[i];
			void *arg[2] = { &r, q };
			int src;

			if (state_of(&r, q) != PROC_SAMPLING || proc_execed(&r, q, now))
				continue;
			rbi_sampler_skip(q->s, skip);
			src = rbi_sampler_sample(q->s, add_sample, arg);
			if (src == RBI_GONE) {
				set_state(&r, q, PROC_DEAD);
				proc_close(&r, q);
			} else if (src) {
				rc = src;
				goto out;
			} else {
				/* Stacks lost: maybe the process runs another program. */
				rbi_sampler_stats(q->s, &qst);
				if (qst.errors + qst.torn > q->lost)
					proc_execed(&r, q, now);
				q->lost = qst.errors + qst.torn;
			}
		}
		rbi_wakeup_tick(&wakeup, now, rbi_now_ns());
		rbi_ticks_next(&ticks, uniform(&r));
		if (o->progress && now >= next_progress) {
			struct rbi_sample_stats live = {
				.late = ticks.late, .missed = ticks.missed,
			};

			next_progress = now + progress_every;
			for (size_t i = 0; i < r.n; i++) {
				if (state_of(&r, &r.procs[i]) != PROC_SAMPLING)
					continue;
				rbi_sampler_stats(r.procs[i].s, &qst);
				rbi_sample_stats_sum(&live, &qst);
			}
			rbi_profile_set_live_stats(p, &live);
			if (o->progress(p, o->progress_arg))
				break;
		}
	}
out:
	/* The window the ticks cover ends here: closing the processes (freeing
	   a DWARF layout takes tens of ms on a slow machine) is not in it. */
	end = rbi_now_ns();
	if (start)
		rbi_profile_set_meta(p, "wakeup", rbi_wakeup_state(&wakeup, wakeup_buf,
								   sizeof(wakeup_buf)));
	rbi_wakeup_lower(&wakeup);
	rbi_profile_set_live_stats(p, &(struct rbi_sample_stats){ 0 });
	pthread_mutex_lock(&r.mu);
	r.quit = true;
	pthread_cond_signal(&r.cv);
	pthread_mutex_unlock(&r.mu);
	if (r.helper_started)
		pthread_join(r.helper, NULL);
	for (size_t i = 0; i < r.n; i++)
		proc_close(&r, &r.procs[i]);
	st.late = ticks.late;
	st.missed = ticks.missed;
	rbi_profile_add_stats(p, &st);
	set_duration(p, start ? end - start : 0);
	if (o->flags & RBI_SAMPLER_NATIVE)
		native_meta(p, &r.native);
	rbi_profile_warn_lost(p);
	/* A command started by record is not Ruby yet when first tried; only
	   a root that was never sampled at all is an error. */
	if (!rc && !r.sampled && r.root_rc) {
		/* Never got to sample anything: say why. */
		rc = r.root_rc;
		if (r.n && r.procs[0].state == PROC_DEAD && rc != RBI_NOT_RUBY)
			rc = rbi_fail(RBI_GONE, "process %d exited before it could be "
				      "sampled", (int)pid);
	}
	free(r.procs);
	pthread_mutex_destroy(&r.mu);
	pthread_cond_destroy(&r.cv);
	return rc;
}
