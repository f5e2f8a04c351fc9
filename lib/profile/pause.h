/* pause.h: stopping a live process for the length of a sample (pause.c). */
#ifndef RBI_PROFILE_PAUSE_H
#define RBI_PROFILE_PAUSE_H

#include "internal.h"

struct rbi_pause;

/* Attach to every task of PID without stopping it.  RBI_PERM (traced
   already, ptrace not allowed), RBI_GONE. */
int rbi_pause_new(pid_t pid, struct rbi_pause **out);
/* Stop every task (attaching new ones) and wait until each has stopped. */
int rbi_pause_stop(struct rbi_pause *p);
/* Let them all run again. */
void rbi_pause_resume(struct rbi_pause *p);
/* Detach (NULL-safe). */
void rbi_pause_free(struct rbi_pause *p);

#endif
