/*
 * The clocks vigil reads: the wall clock, for timestamps a person or an
 * agent reads (a notification's `at`, a log line), and the monotonic clock,
 * for measuring spans that must not jump when the wall clock is set (a
 * rate-limit window, a Lua call's time limit). One place, so a reader sees
 * which clock each module uses by the name it calls. The engine's loop has
 * its own cached monotonic time (uv_now); modules that run on the loop use
 * that instead, and the ones here are for code that has no loop at hand.
 */
#ifndef VIGIL_CLOCK_H
#define VIGIL_CLOCK_H

#include <stdint.h>

/* Wall clock, ms since the epoch. */
int64_t clock_now_ms(void);

/* CLOCK_MONOTONIC in ns, and in ms: only differences mean anything. */
uint64_t clock_mono_ns(void);
uint64_t clock_mono_ms(void);

#endif
