/*
 * The wall and monotonic clocks (see clock.h): thin wrappers over
 * clock_gettime, so the choice of clock and the unit conversion are made
 * once rather than at each caller.
 */
#include "base/clock.h"

#include <time.h>

/* See clock.h. */
int64_t
clock_now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* See clock.h. */
uint64_t
clock_mono_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* See clock.h. The same instant as clock_mono_ns, so spans measured in
 * either unit agree. */
uint64_t
clock_mono_ms(void)
{
  return clock_mono_ns() / 1000000u;
}
