/*
 * Unit tests of the rate limit and the sustained-overload judge, with a fake
 * clock. The seed scenario (a matching line every 100 ms) must reach
 * overload at about 45 s even though some of its batches are delivered in
 * between: Hermes restarted its overload timer at every delivery, so it
 * never fired.
 */
#include <stdio.h>

#include "check.h"
#include "pipeline/ratelimit.h"

TEST(eight_admitted_then_withheld)
{
  RateLimit rl;
  ratelimit_init(&rl, 8, 10000, 45000);
  CHECK(rl.stamps == NULL);
  uint64_t report = 99;
  for (uint64_t t = 0; t < 8; t++) {
    CHECK_INT(ratelimit_admit(&rl, t * 100, 1, &report), kRateAdmit);
    CHECK_INT(report, 0);
  }
  CHECK_INT(ratelimit_admit(&rl, 800, 1, &report), kRateWithhold);
  CHECK_INT(ratelimit_admit(&rl, 5000, 2, &report), kRateWithhold);
  CHECK_INT(rl.withheld_batches, 2);
  CHECK_INT(rl.withheld_total, 3);
  CHECK_INT(ratelimit_next_free(&rl, 5000), 10000);
  ratelimit_free(&rl);
}

TEST(admitted_again_when_the_oldest_leaves_the_window)
{
  RateLimit rl;
  ratelimit_init(&rl, 8, 10000, 45000);
  uint64_t report;
  for (uint64_t t = 0; t < 8; t++)
    CHECK_INT(ratelimit_admit(&rl, t * 100, 1, &report), kRateAdmit);
  CHECK_INT(ratelimit_next_free(&rl, 9999), 10000);
  CHECK_INT(ratelimit_admit(&rl, 9999, 1, &report), kRateWithhold);
  /* At 10000 the admission at 0 is outside (10000 - 10000, 10000]. */
  CHECK_INT(ratelimit_next_free(&rl, 10000), 10000);
  CHECK_INT(ratelimit_admit(&rl, 10000, 1, &report), kRateAdmit);
  CHECK_INT(report, 1);
  /* Full again: 100..700 and 10000 are in the window until 100 leaves. */
  CHECK_INT(ratelimit_admit(&rl, 10001, 1, &report), kRateWithhold);
  CHECK_INT(ratelimit_next_free(&rl, 10001), 10100);
  CHECK_INT(ratelimit_admit(&rl, 10100, 1, &report), kRateAdmit);
  CHECK_INT(report, 1);
  /* After a long quiet spell the whole window is free. */
  CHECK_INT(ratelimit_next_free(&rl, 100000), 100000);
  for (int i = 0; i < 8; i++)
    CHECK_INT(ratelimit_admit(&rl, 100000, 1, &report), kRateAdmit);
  CHECK_INT(ratelimit_admit(&rl, 100000, 1, &report), kRateWithhold);
  ratelimit_free(&rl);
}

TEST(suppressed_reported_on_next_admission_and_reset)
{
  RateLimit rl;
  ratelimit_init(&rl, 1, 1000, 45000);
  uint64_t report = 99;
  CHECK_INT(ratelimit_admit(&rl, 0, 2, &report), kRateAdmit);
  CHECK_INT(report, 0);
  CHECK_INT(ratelimit_admit(&rl, 100, 3, &report), kRateWithhold);
  CHECK_INT(ratelimit_admit(&rl, 200, 4, &report), kRateWithhold);
  CHECK_INT(rl.withheld_unreported, 7);
  CHECK_INT(ratelimit_admit(&rl, 1000, 5, &report), kRateAdmit);
  CHECK_INT(report, 7);
  CHECK_INT(rl.withheld_unreported, 0);
  CHECK_INT(ratelimit_admit(&rl, 2000, 1, &report), kRateAdmit);
  CHECK_INT(report, 0);
  CHECK_INT(rl.withheld_total, 7); /* the lifetime count stays */

  /* What is pending at the end goes to the ending notification. */
  CHECK_INT(ratelimit_admit(&rl, 2500, 6, &report), kRateWithhold);
  CHECK_INT(ratelimit_take_withheld(&rl), 6);
  CHECK_INT(ratelimit_take_withheld(&rl), 0);
  CHECK_INT(ratelimit_admit(&rl, 3000, 1, NULL), kRateAdmit); /* report may be NULL */
  ratelimit_free(&rl);
}

/* The seed scenario: one matching line every 100 ms, from `from` to `to`
 * (inclusive), batched 200 ms after each batch's first line, as the monitor
 * does. Returns the time of the first kRateOverload (0 if none) and counts
 * verdicts. */
typedef struct {
  uint64_t first_overload;
  int overloads;
  int admitted;
  int withheld;
  int admitted_during_streak; /* deliveries between the streak start and overload */
  uint64_t first_report;      /* the first nonzero suppressed report */
} Run;

static void
stream(RateLimit *rl, uint64_t from, uint64_t to, Run *r)
{
  bool open = false;
  uint64_t opened = 0, lines = 0;
  for (uint64_t now = from; now <= to; now += 100) {
    if (open && now >= opened + 200) {
      uint64_t report = 0;
      RateVerdict v = ratelimit_admit(rl, now, lines, &report);
      if (v == kRateAdmit) {
        r->admitted++;
        if (rl->streak && r->overloads == 0)
          r->admitted_during_streak++;
        if (report && r->first_report == 0)
          r->first_report = report;
      } else {
        r->withheld++;
      }
      if (v == kRateOverload) {
        r->overloads++;
        if (r->first_overload == 0)
          r->first_overload = now;
      }
      open = false;
      lines = 0;
    }
    if (!open) {
      open = true;
      opened = now;
    }
    lines++;
  }
}

TEST(seed_scenario_reaches_overload_at_about_45_s_once)
{
  RateLimit rl;
  ratelimit_init(&rl, 8, 10000, 45000);
  Run r = {0};
  stream(&rl, 0, 120000, &r);
  CHECK_INT(r.overloads, 1);
  CHECK(r.first_overload >= 45000);
  CHECK(r.first_overload <= 47000);
  /* Batches at 200..1600 go out; 1800..10000 (42 batches of 2 lines) are
   * withheld and reported with the delivery at 10200. */
  CHECK_INT(r.first_report, 84);
  /* Deliveries happened during the streak and did not reset it. */
  CHECK(r.admitted_during_streak >= 8 * 4);
  CHECK(rl.overloaded);
  ratelimit_free(&rl);
}

TEST(a_clean_window_restarts_the_streak)
{
  /* Max 1 per 1000 ms: a batch withheld every 999 ms with a delivery in
   * between each never leaves a clean window, and is overloaded after
   * 3000 ms of it; every 1000 ms leaves one each time and never is. */
  RateLimit rl;
  ratelimit_init(&rl, 1, 1000, 3000);
  uint64_t report;
  CHECK_INT(ratelimit_admit(&rl, 0, 1, &report), kRateAdmit);
  CHECK_INT(ratelimit_admit(&rl, 999, 1, &report), kRateWithhold);
  CHECK_INT(ratelimit_admit(&rl, 1000, 1, &report), kRateAdmit);
  CHECK_INT(ratelimit_admit(&rl, 1998, 1, &report), kRateWithhold);
  CHECK_INT(ratelimit_admit(&rl, 2000, 1, &report), kRateAdmit);
  CHECK_INT(ratelimit_admit(&rl, 2997, 1, &report), kRateWithhold);
  CHECK_INT(ratelimit_admit(&rl, 3000, 1, &report), kRateAdmit);
  CHECK_INT(ratelimit_admit(&rl, 3996, 1, &report), kRateWithhold); /* 2997 ms in */
  CHECK_INT(ratelimit_admit(&rl, 4000, 1, &report), kRateAdmit);
  CHECK_INT(ratelimit_admit(&rl, 4995, 1, &report), kRateOverload); /* 3996 ms in */
  CHECK_INT(rl.streak_start, 999);
  ratelimit_free(&rl);

  ratelimit_init(&rl, 1, 1000, 3000);
  for (uint64_t t = 0; t < 20000; t += 1000) {
    CHECK_INT(ratelimit_admit(&rl, t, 1, &report), kRateAdmit);
    CHECK_INT(ratelimit_admit(&rl, t + 999, 1, &report), kRateWithhold);
    CHECK_INT(rl.streak_start, t + 999);
  }
  CHECK(!rl.overloaded);
  ratelimit_free(&rl);

  /* The seed stream for 40 s, a quiet spell, then the stream again: the
   * second streak is timed from its own start, not from the first. */
  ratelimit_init(&rl, 8, 10000, 45000);
  Run r = {0};
  stream(&rl, 0, 40000, &r);
  CHECK_INT(r.overloads, 0);
  CHECK_INT(rl.last_withheld, 40000);
  stream(&rl, 50000, 120000, &r);
  CHECK_INT(r.overloads, 1);
  /* 50200..51600 are delivered; the streak restarts at 51800. */
  CHECK_INT(rl.streak_start, 51800);
  CHECK_INT(r.first_overload, 51800 + 45000);
  ratelimit_free(&rl);
}

TEST(overload_reached_exactly_at_overload_ms)
{
  RateLimit rl;
  ratelimit_init(&rl, 1, 1000, 3000);
  uint64_t report;
  int overloads = 0;
  for (uint64_t t = 0; t <= 3000; t += 100) {
    RateVerdict v = ratelimit_admit(&rl, t, 1, &report);
    CHECK_INT(v, t % 1000 == 0 ? kRateAdmit : kRateWithhold);
    overloads += v == kRateOverload;
  }
  CHECK_INT(overloads, 0);
  CHECK_INT(rl.streak_start, 100);
  CHECK_INT(ratelimit_admit(&rl, 3099, 1, &report), kRateWithhold);
  CHECK(!rl.overloaded);
  CHECK_INT(ratelimit_admit(&rl, 3100, 1, &report), kRateOverload);
  CHECK(rl.overloaded);
  /* Reported once; later withheld batches are plain withholds. */
  CHECK_INT(ratelimit_admit(&rl, 3200, 1, &report), kRateWithhold);
  CHECK_INT(ratelimit_admit(&rl, 4000, 1, &report), kRateAdmit);
  CHECK_INT(ratelimit_admit(&rl, 4100, 1, &report), kRateWithhold);
  ratelimit_free(&rl);
}

/* Lines withheld without a batch (a flood while the window is full, see
 * monitor__batch_line) count, report and reach overload as withheld
 * batches do. */
TEST(withholding_without_a_batch_counts_as_a_withheld_batch)
{
  RateLimit rl;
  ratelimit_init(&rl, 1, 1000, 3000);
  uint64_t report;
  CHECK_INT(ratelimit_admit(&rl, 0, 1, &report), kRateAdmit);
  int overloads = 0;
  for (uint64_t t = 100; t < 1000; t += 100)
    overloads += ratelimit_withhold(&rl, t, 2) == kRateOverload;
  CHECK_INT(overloads, 0);
  CHECK_INT(rl.withheld_total, 18);
  CHECK_INT(ratelimit_admit(&rl, 1000, 1, &report), kRateAdmit);
  CHECK_INT(report, 18);
  /* Withholding on with no clean window: overload at streak start + 3000,
   * once. */
  for (uint64_t t = 1100; t <= 4200; t += 100)
    overloads += ratelimit_withhold(&rl, t, 1) == kRateOverload;
  CHECK_INT(overloads, 1);
  CHECK(rl.overloaded);
  ratelimit_free(&rl);
}

int
main(void)
{
  RUN(eight_admitted_then_withheld);
  RUN(admitted_again_when_the_oldest_leaves_the_window);
  RUN(suppressed_reported_on_next_admission_and_reset);
  RUN(seed_scenario_reaches_overload_at_about_45_s_once);
  RUN(a_clean_window_restarts_the_streak);
  RUN(overload_reached_exactly_at_overload_ms);
  RUN(withholding_without_a_batch_counts_as_a_withheld_batch);
  return check_summary();
}
