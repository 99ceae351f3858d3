/*
 * The per-monitor rate limit: at most max_notifications output
 * notifications in any window_ms (a sliding window over the times of the
 * admitted ones). A batch over the limit is withheld: its lines are counted
 * and the count is handed to the next admitted notification (and to the
 * ending one, which is never limited).
 *
 * Sustained overload, the way Redis judges a soft limit: withholding that
 * goes on with no clean window (no window_ms without a withheld batch) for
 * overload_ms. Unlike Hermes, an admitted delivery in between does not reset
 * it, so a steadily noisy child does reach it: one matching line every
 * 100 ms is overloaded at about 45 s.
 *
 * Time is handed in by the caller (ms of a monotonic clock), so every
 * boundary is tested with a fake clock.
 */
#ifndef VIGIL_RATELIMIT_H
#define VIGIL_RATELIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
  kRateAdmit,     /* deliver it; *withheld holds the count to report with it */
  kRateWithhold,  /* do not deliver; its lines were counted */
  kRateOverload,  /* withheld, and overload has now been reached (once) */
} RateVerdict;

typedef struct {
  size_t max;            /* rate_limit.max_notifications */
  uint64_t window;       /* rate_limit.window_ms */
  uint64_t overload;     /* rate_limit.overload_ms */
  uint64_t *stamps;      /* times of the last `max` admissions, circular; lazily allocated */
  size_t count;          /* admissions stored (<= max) */
  size_t head;           /* slot of the oldest stored admission */
  uint64_t withheld_unreported; /* lines withheld since the last admission */
  uint64_t withheld_total;      /* lines withheld ever (the wire's counters.suppressed) */
  uint64_t withheld_batches;
  bool streak;           /* withholding without a clean window */
  uint64_t streak_start;
  uint64_t last_withheld;
  bool overloaded;       /* overload was reported; stays true */
} RateLimit;

void ratelimit_init(RateLimit *rl, size_t max, uint64_t window_ms, uint64_t overload_ms);

/* Judges a batch of `lines` lines at time now. On kRateAdmit, *withheld is
 * set to the lines withheld since the last admission and that count
 * restarts. */
RateVerdict ratelimit_admit(RateLimit *rl, uint64_t now, uint64_t lines, uint64_t *withheld);

/* Withholds `lines` lines at time now without asking for admission, as a
 * withheld batch is counted (and judged for overload): for lines that
 * arrive while the window is sure to stay full until any batch they could
 * join is flushed (ratelimit_next_free). */
RateVerdict ratelimit_withhold(RateLimit *rl, uint64_t now, uint64_t lines);

/* Takes the lines withheld since the last admission (for the ending
 * notification) and restarts that count. */
uint64_t ratelimit_take_withheld(RateLimit *rl);

/* When an admission would next be possible (now if it would be now). */
uint64_t ratelimit_next_free(const RateLimit *rl, uint64_t now);

void ratelimit_free(RateLimit *rl);

#endif
