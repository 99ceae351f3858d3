/*
 * The per-monitor rate limit and sustained-overload judge (see ratelimit.h).
 * The sliding window keeps only the times of the last `max` admissions, in
 * a ring: when all of them lie in the window the limit is reached, and any
 * older admission lies outside it anyway.
 *
 * Overload is a streak of withheld batches: it starts at a withheld batch
 * that follows no other within a window, and every withheld batch within a
 * window of the previous one extends it. Admitted deliveries in between do
 * not end it: that is the bug in Hermes, whose timer restarts at every
 * delivery, so a child that is noisy all the time, and so is let through
 * now and then, never counts as overloaded.
 */
#include "pipeline/ratelimit.h"

#include <stdlib.h>
#include <string.h>

#include "base/memory.h"

/* now - since, or 0 if the clock handed in went backwards. */
static uint64_t
ratelimit_elapsed(uint64_t now, uint64_t since)
{
  return now > since ? now - since : 0;
}

/* Sets up a limit of max admissions (at least 1) per window_ms and an
 * overload after overload_ms. Allocates nothing. */
void
ratelimit_init(RateLimit *rl, size_t max, uint64_t window_ms, uint64_t overload_ms)
{
  memset(rl, 0, sizeof *rl);
  rl->max = max ? max : 1;
  rl->window = window_ms;
  rl->overload = overload_ms;
}

/* Forgets the stored admissions that have left the window (now - window,
 * now]: an admission at s is outside once s + window <= now. */
static void
ratelimit_expire(RateLimit *rl, uint64_t now)
{
  while (rl->count > 0 && ratelimit_elapsed(now, rl->stamps[rl->head]) >= rl->window) {
    rl->head = (rl->head + 1) % rl->max;
    rl->count--;
  }
}

/* Judges a batch of `lines` lines at now. Admitted: its time is recorded,
 * *withheld (if not NULL) gets the lines withheld since the last admission,
 * and that count restarts. Withheld: its lines are counted and the overload
 * streak advances; kRateOverload is returned by the one withheld batch at
 * which the streak first lasts overload_ms, kRateWithhold by all others. */
RateVerdict
ratelimit_admit(RateLimit *rl, uint64_t now, uint64_t lines, uint64_t *withheld)
{
  if (rl->stamps == NULL)
    rl->stamps = xmalloc(rl->max * sizeof *rl->stamps);
  ratelimit_expire(rl, now);
  if (rl->count < rl->max) {
    rl->stamps[(rl->head + rl->count) % rl->max] = now;
    rl->count++;
    if (withheld)
      *withheld = rl->withheld_unreported;
    rl->withheld_unreported = 0;
    return kRateAdmit;
  }

  return ratelimit_withhold(rl, now, lines);
}

/* See ratelimit.h. */
RateVerdict
ratelimit_withhold(RateLimit *rl, uint64_t now, uint64_t lines)
{
  rl->withheld_unreported += lines;
  rl->withheld_total += lines;
  rl->withheld_batches++;
  /* A full window with nothing withheld is a clean window: the child was
   * within its limit for a while, so the streak starts over. */
  if (!rl->streak || ratelimit_elapsed(now, rl->last_withheld) >= rl->window) {
    rl->streak = true;
    rl->streak_start = now;
  }
  rl->last_withheld = now;
  if (!rl->overloaded && ratelimit_elapsed(now, rl->streak_start) >= rl->overload) {
    rl->overloaded = true;
    return kRateOverload;
  }
  return kRateWithhold;
}

/* Returns the lines withheld since the last admission and restarts that
 * count; for the ending notification, which is never limited. */
uint64_t
ratelimit_take_withheld(RateLimit *rl)
{
  uint64_t n = rl->withheld_unreported;
  rl->withheld_unreported = 0;
  return n;
}

/* When the next admission could happen: now if the window has room, else
 * the moment the oldest stored admission leaves it. Changes nothing. */
uint64_t
ratelimit_next_free(const RateLimit *rl, uint64_t now)
{
  if (rl->stamps == NULL || rl->count < rl->max)
    return now;
  /* The stored admissions are in time order, so if the oldest is still in
   * the window, all `max` are, and the window has room when it leaves. */
  uint64_t oldest = rl->stamps[rl->head];
  if (ratelimit_elapsed(now, oldest) >= rl->window)
    return now;
  return oldest + rl->window;
}

/* Frees the stored admission times; the counters stay readable. */
void
ratelimit_free(RateLimit *rl)
{
  free(rl->stamps);
  rl->stamps = NULL;
  rl->count = 0;
  rl->head = 0;
}
