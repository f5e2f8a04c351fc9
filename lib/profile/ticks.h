/* ticks.h: a recording's clock (ticks.c). */
#ifndef RBI_PROFILE_TICKS_H
#define RBI_PROFILE_TICKS_H

#include <stdint.h>

struct rbi_ticks {
	uint64_t period;        /* the mean interval, ns */
	uint64_t due;           /* when the next tick is due */
	uint64_t last;          /* when the previous one was taken */
	uint64_t late;          /* ticks taken more than a period after due */
	uint64_t missed;        /* the periods they came late */
};

/* The clock of a recording at PERIOD ns, started at NOW: a tick is due. */
void rbi_ticks_start(struct rbi_ticks *t, uint64_t period, uint64_t now);

/* A tick taken at NOW (it was due): a late one is counted, and so are the
   ticks it missed; returns the time its samples do not stand for (the
   missed ticks' periods; 0 if it was on time). */
uint64_t rbi_ticks_take(struct rbi_ticks *t, uint64_t now);

/* Schedule the next tick, due 0.5 to 1.5 periods (JITTER 0 to 1) after the
   one taken. */
void rbi_ticks_next(struct rbi_ticks *t, double jitter);

/* What a sample weighs: STANDS (its INTERVAL, or the CPU time its thread
   used during it) less the share of it that SKIP, the missed part of the
   interval, takes. */
uint64_t rbi_ticks_weight(uint64_t stands, uint64_t interval, uint64_t skip);

/* The sampler's side: the next sample of S stands for its interval less NS
   (a tick the recording took late: rbi_ticks_take); added up until a
   sample is delivered. */
struct rbi_sampler;
void rbi_sampler_skip(struct rbi_sampler *s, uint64_t ns);

#endif
