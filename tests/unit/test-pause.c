/* test-pause.c: rbi_target_pause / rbi_target_resume on a real child:
 * every thread stopped after a pause and running after the resume, the
 * process untraced again, a process stopped already left stopped,
 * nesting, closing a paused target, a pauser that dies (the kernel lets
 * the process go), a child that exits, and memory-only targets refusing.
 * TAP output. */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "tap.h"

static void *spin(void *arg)
{
	volatile unsigned long *n = arg;

	for (;;)
		(*n)++;
	return NULL;
}

/* A child with a few busy threads. */
static pid_t child_start(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		static volatile unsigned long n[3];
		pthread_t th;

		for (int i = 0; i < 3; i++)
			pthread_create(&th, NULL, spin, (void *)&n[i]);
		for (;;)
			pause();
	}
	return pid;
}

static void sleep_ms(long ms);

/* How many of PID's threads are stopped (state T, or t: a ptrace stop),
   and how many threads it has. */
static int count_stopped(pid_t pid, int *total)
{
	char path[64], stat[400], buf[512], *p;
	struct dirent *e;
	int n = 0;
	DIR *d;

	*total = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (!(d = opendir(path)))
		return -1;
	while ((e = readdir(d))) {
		FILE *f;
		size_t len;

		if (e->d_name[0] == '.')
			continue;
		snprintf(stat, sizeof(stat), "%s/%s/stat", path, e->d_name);
		if (!(f = fopen(stat, "r")))
			continue;
		len = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[len] = '\0';
		if ((p = strrchr(buf, ')')) && p[1] == ' ') {
			(*total)++;
			n += p[2] == 'T' || p[2] == 't';
		}
	}
	closedir(d);
	return n;
}

/* PID's TracerPid. */
static long tracer(pid_t pid)
{
	char path[64], line[256];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "r")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "TracerPid: %ld", &v) == 1)
			break;
	fclose(f);
	return v;
}

/* Until no thread of PID is stopped (about a second at most). */
static int wait_running(pid_t pid, int *total)
{
	int n = -1;

	for (int i = 0; i < 200 && (n = count_stopped(pid, total)) != 0; i++)
		sleep_ms(5);
	return n;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* A process that exits while traced, between two stops (record --pause
   of a program that ends): the next stop must return, not wait for ever
   on the main thread, whose end the kernel reports only once the tracer
   has taken the ends of the other threads it traces. */
static void exit_while_traced(void)
{
	struct rbi_pause *p = NULL;
	uint64_t t0, ms;
	int go[2], rc;
	pid_t pid;
	char c;

	if (pipe(go) != 0 || (pid = fork()) < 0) {
		check(0, "exit while traced: pipe and fork");
		return;
	}
	if (pid == 0) {
		static volatile unsigned long n;
		pthread_t th;

		pthread_create(&th, NULL, spin, (void *)&n);
		close(go[1]);
		(void)!read(go[0], &c, 1);
		exit(0);
	}
	close(go[0]);
	sleep_ms(50);   /* its thread runs */
	rc = rbi_pause_new(pid, &p);
	(void)!write(go[1], "x", 1);
	close(go[1]);
	sleep_ms(200);  /* it has exited: its threads' ends wait for us */
	alarm(30);      /* the old wait never returned: fail, not hang */
	t0 = rbi_now_ns();
	if (rc == RBI_OK)
		rc = rbi_pause_stop(p);
	ms = (rbi_now_ns() - t0) / 1000000;
	alarm(0);
	check(rc == RBI_OK || rc == RBI_GONE, "a process that exited while traced: the next "
	      "stop returns (%s, %llu ms)", rbi_strerror(rc), (unsigned long long)ms);
	rbi_pause_free(p);
	waitpid(pid, NULL, 0);
}

int main(void)
{
	rbi_target *t = NULL;
	int stopped = -1, total, n, rc;
	pid_t pid = child_start();

	if (pid < 0 || rbi_target_open_pid(pid, NULL, &t)) {
		printf("1..0 # SKIP cannot start or open a child: %s\n", rbi_errmsg());
		return 0;
	}
	sleep_ms(50);   /* let its threads start */

	rc = rbi_target_pause(t, &stopped);
	check(rc == RBI_OK && stopped == 1, "pause stops a running process (stopped = %d)",
	      stopped);
	n = count_stopped(pid, &total);
	check(total == 4 && n == total, "every thread is stopped once pause returns (%d of %d)",
	      n, total);
	check(rbi_target_pause(t, &stopped) == RBI_OK && stopped == 0,
	      "a second pause is a no-op");
	check(rbi_target_resume(t) == RBI_OK, "resume");
	n = wait_running(pid, &total);
	check(n == 0, "no thread is stopped after resume (%d of %d)", n, total);
	check(tracer(pid) == 0, "and nothing traces it any more (TracerPid %ld)", tracer(pid));
	check(rbi_target_resume(t) == RBI_OK, "resume when not paused does nothing");

	/* Stopped by someone else: left as it was. */
	kill(pid, SIGSTOP);
	for (int i = 0; i < 200 && count_stopped(pid, &total) != total; i++)
		sleep_ms(5);
	rc = rbi_target_pause(t, &stopped);
	check(rc == RBI_OK && stopped == 0,
	      "pause of a process stopped already sends nothing (stopped = %d)", stopped);
	rbi_target_resume(t);
	sleep_ms(50);
	n = count_stopped(pid, &total);
	check(n == total, "resume leaves a process stopped by someone else stopped (%d of %d)",
	      n, total);
	kill(pid, SIGCONT);
	wait_running(pid, &total);

	/* Closing a paused target lets the process go. */
	rbi_target *t2 = NULL;
	if (rbi_target_open_pid(pid, NULL, &t2) == RBI_OK &&
	    rbi_target_pause(t2, &stopped) == RBI_OK) {
		rbi_target_free(t2);
		n = wait_running(pid, &total);
		check(n == 0, "closing a paused target lets it run (%d of %d stopped)", n, total);
	} else {
		check(0, "open and pause again: %s", rbi_errmsg());
	}

	/* A pauser that dies (SIGKILL: no handler runs) leaves nothing stopped. */
	int ready[2];
	pid_t pauser = -1;
	char c = 0;

	if (pipe(ready) == 0 && (pauser = fork()) == 0) {
		rbi_target *t3 = NULL;

		if (rbi_target_open_pid(pid, NULL, &t3) || rbi_target_pause(t3, NULL))
			_exit(1);
		(void)!write(ready[1], "p", 1);
		for (;;)
			pause();
	}
	close(ready[1]);
	if (read(ready[0], &c, 1) == 1 && count_stopped(pid, &total) == total) {
		kill(pauser, SIGKILL);
		waitpid(pauser, NULL, 0);
		n = wait_running(pid, &total);
		check(n == 0 && tracer(pid) == 0, "a pauser killed with SIGKILL: the kernel lets "
		      "the process go (%d of %d stopped)", n, total);
	} else {
		check(0, "a pauser paused the process (%c)", c);
	}
	close(ready[0]);

	exit_while_traced();

	/* A process that is gone. */
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	check(rbi_target_pause(t, &stopped) == RBI_GONE, "pause of an exited process: RBI_GONE");
	check(rbi_target_pause(NULL, NULL) == RBI_INVAL, "pause without a target: RBI_INVAL");
	check(rbi_target_resume(NULL) == RBI_OK, "resume is NULL-safe");
	rbi_target_free(t);

	return tap_plan();
}
