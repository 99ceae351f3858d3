/*
 * Unit tests of coalescing by fingerprint, on a fake clock: a repeat within
 * the window is counted, not notified; a series is summarised once, when it
 * has been quiet for summary_after_ms, with its count, span and last line;
 * a failure that comes back after the window is notified again and carries
 * the series; a full table evicts the oldest entry and hands its series
 * back; window 0 turns coalescing off.
 */
#include <string.h>

#include "check.h"
#include "pipeline/coalesce.h"

#define FP_A 0xaaaa
#define FP_B 0xbbbb

/* Judges an incident of fingerprint fp at now (wall = now + 1e12). */
static CoalesceVerdict
judge(Coalescer *c, uint64_t now, uint64_t fp, uint64_t id, CoalesceSummary *prior)
{
  char line[32];
  int len = snprintf(line, sizeof line, "crash %llu", (unsigned long long)id);
  return coalesce_judge(c, now, (int64_t)now + 1000000000000, fp, id, 0, 1, id * 10, 1, line,
                        (size_t)len, prior);
}

TEST(a_crash_loop_is_one_notification_and_one_summary)
{
  Coalescer c;
  coalesce_init(&c, 300000, 10000, 256);
  CoalesceSummary prior;
  /* 40 identical crashes, 1.5 s apart. */
  int notified = 0;
  for (uint64_t i = 0; i < 40; i++) {
    uint64_t now = 1000 + i * 1500;
    if (judge(&c, now, FP_A, i + 1, &prior) == kCoalesceNotify)
      notified++;
    CHECK_INT(prior.repeats, 0);
    /* No summary is due while the loop goes on. */
    CoalesceSummary s;
    CHECK(!coalesce_take_due(&c, now, false, &s));
  }
  CHECK_INT(notified, 1);
  CHECK_INT(c.coalesced_total, 39);
  CHECK_INT(coalesce_unreported(&c), 39);
  uint64_t last = 1000 + 39 * 1500;
  /* The summary is due 10 s after the last repeat, not before. */
  CHECK_INT(coalesce_deadline(&c), last + 10000);
  CoalesceSummary s;
  CHECK(!coalesce_take_due(&c, last + 9999, false, &s));
  CHECK(coalesce_take_due(&c, last + 10000, false, &s));
  CHECK_INT(s.repeats, 39);
  CHECK_INT(s.incident_id, 1);
  /* From the notified crash to the last repeat: the 39 came in 39 gaps. */
  CHECK_INT(s.span_ms, 39 * 1500);
  CHECK_INT(s.last_seq, 400);
  CHECK_STR(s.last_line, "crash 40");
  coalesce_summary_free(&s);
  /* Reported once: nothing more is due, nothing is unreported. */
  CHECK(!coalesce_take_due(&c, last + 100000, true, &s));
  CHECK_INT(coalesce_unreported(&c), 0);
  CHECK_INT(coalesce_deadline(&c), UINT64_MAX);
  coalesce_free(&c);
}

TEST(a_different_crash_inside_the_loop_is_notified_at_once)
{
  Coalescer c;
  coalesce_init(&c, 300000, 10000, 256);
  CHECK_INT(judge(&c, 0, FP_A, 1, NULL), kCoalesceNotify);
  CHECK_INT(judge(&c, 1000, FP_A, 2, NULL), kCoalesceRepeat);
  CHECK_INT(judge(&c, 1500, FP_B, 3, NULL), kCoalesceNotify);
  CHECK_INT(judge(&c, 2000, FP_A, 4, NULL), kCoalesceRepeat);
  CHECK_INT(judge(&c, 2500, FP_B, 5, NULL), kCoalesceRepeat);
  /* Two series, each summarised on its own. */
  CoalesceSummary s;
  CHECK(coalesce_take_due(&c, 0, true, &s));
  CHECK_INT(s.repeats, 2);
  CHECK_INT(s.fingerprint, FP_A);
  coalesce_summary_free(&s);
  CHECK(coalesce_take_due(&c, 0, true, &s));
  CHECK_INT(s.repeats, 1);
  CHECK_INT(s.fingerprint, FP_B);
  coalesce_summary_free(&s);
  CHECK(!coalesce_take_due(&c, 0, true, &s));
  coalesce_free(&c);
}

TEST(after_the_window_the_failure_is_notified_again_with_its_series)
{
  Coalescer c;
  coalesce_init(&c, 60000, 10000, 256);
  CoalesceSummary prior;
  CHECK_INT(judge(&c, 0, FP_A, 1, &prior), kCoalesceNotify);
  /* Repeats every 5 s: never quiet for 10 s, so no summary. */
  for (uint64_t t = 5000; t < 60000; t += 5000)
    CHECK_INT(judge(&c, t, FP_A, t, &prior), kCoalesceRepeat);
  /* At 60 s the window (counted from the notification) has run out. */
  CHECK_INT(judge(&c, 60000, FP_A, 99, &prior), kCoalesceNotify);
  CHECK_INT(prior.repeats, 11);
  CHECK_INT(prior.span_ms, 55000);
  CHECK_INT(prior.incident_id, 1);
  coalesce_summary_free(&prior);
  /* The window restarts from the new notification. */
  CHECK_INT(judge(&c, 65000, FP_A, 100, &prior), kCoalesceRepeat);
  CoalesceSummary s;
  CHECK(coalesce_take_due(&c, 75000, false, &s));
  CHECK_INT(s.repeats, 1);
  CHECK_INT(s.incident_id, 99);
  coalesce_summary_free(&s);
  coalesce_free(&c);
}

TEST(the_span_of_a_series_counts_from_the_occurrence_it_follows)
{
  Coalescer c;
  coalesce_init(&c, 300000, 10000, 256);
  /* Two crashes 3.2 s apart: "repeated 1 time in 3.2s", not in 0ms. */
  CHECK_INT(judge(&c, 1000, FP_A, 1, NULL), kCoalesceNotify);
  CHECK_INT(judge(&c, 4200, FP_A, 2, NULL), kCoalesceRepeat);
  CoalesceSummary s;
  CHECK(coalesce_take_due(&c, 14200, false, &s));
  CHECK_INT(s.repeats, 1);
  CHECK_INT(s.span_ms, 3200);
  CHECK_INT(s.first_wall, 1000 + 1000000000000);
  CHECK_INT(s.last_wall, 4200 + 1000000000000);
  coalesce_summary_free(&s);
  /* A later series, after that summary: from its last repeat on. */
  CHECK_INT(judge(&c, 30000, FP_A, 3, NULL), kCoalesceRepeat);
  CHECK_INT(judge(&c, 31000, FP_A, 4, NULL), kCoalesceRepeat);
  CHECK(coalesce_take_due(&c, 41000, false, &s));
  CHECK_INT(s.repeats, 2);
  CHECK_INT(s.span_ms, 31000 - 4200);
  coalesce_summary_free(&s);
  coalesce_free(&c);
}

TEST(a_full_table_evicts_the_oldest_and_hands_back_its_series)
{
  Coalescer c;
  coalesce_init(&c, 300000, 10000, 2);
  CHECK_INT(judge(&c, 0, 1, 1, NULL), kCoalesceNotify);
  CHECK_INT(judge(&c, 10, 1, 2, NULL), kCoalesceRepeat);
  CHECK_INT(judge(&c, 20, 2, 3, NULL), kCoalesceNotify);
  CoalesceSummary s;
  CHECK(!coalesce_take_evicted(&c, &s));
  /* A third fingerprint: the one notified first goes, its repeat handed back. */
  CHECK_INT(judge(&c, 30, 3, 4, NULL), kCoalesceNotify);
  CHECK_INT(c.evicted, 1);
  CHECK(coalesce_take_evicted(&c, &s));
  CHECK_INT(s.fingerprint, 1);
  CHECK_INT(s.repeats, 1);
  coalesce_summary_free(&s);
  CHECK(!coalesce_take_evicted(&c, &s));
  /* Evicted, it is new again. */
  CHECK_INT(judge(&c, 40, 1, 5, NULL), kCoalesceNotify);
  coalesce_free(&c);
}

TEST(the_table_grows_with_the_fingerprints_and_still_evicts_at_its_bound)
{
  /* A monitor with one incident holds a small table, not the bound's 256
   * entries; past the first allocation every fingerprint is still known
   * (its repeat coalesced), and at the bound the oldest goes, as before. */
  Coalescer c;
  coalesce_init(&c, 300000, 10000, 20);
  CHECK_INT(judge(&c, 0, 1000, 1, NULL), kCoalesceNotify);
  CHECK(c.cap < 20);
  for (uint64_t i = 1; i < 20; i++)
    CHECK_INT(judge(&c, i, 1000 + i, i + 1, NULL), kCoalesceNotify);
  for (uint64_t i = 0; i < 20; i++)
    CHECK_INT(judge(&c, 100 + i, 1000 + i, 100 + i, NULL), kCoalesceRepeat);
  CHECK_INT(c.cap, 20);
  CHECK_INT(c.evicted, 0);
  CHECK_INT(judge(&c, 200, 5000, 200, NULL), kCoalesceNotify);
  CHECK_INT(c.evicted, 1);
  CHECK_INT(c.count, 20);
  CoalesceSummary s;
  CHECK(coalesce_take_evicted(&c, &s)); /* the first, with its one repeat */
  CHECK_INT(s.fingerprint, 1000);
  CHECK_INT(s.repeats, 1);
  coalesce_summary_free(&s);
  coalesce_free(&c);
}

TEST(window_zero_turns_coalescing_off)
{
  Coalescer c;
  coalesce_init(&c, 0, 10000, 256);
  for (uint64_t i = 0; i < 5; i++)
    CHECK_INT(judge(&c, i, FP_A, i + 1, NULL), kCoalesceNotify);
  CHECK_INT(c.coalesced_total, 0);
  CHECK_INT(coalesce_deadline(&c), UINT64_MAX);
  coalesce_free(&c);
}

int
main(void)
{
  RUN(a_crash_loop_is_one_notification_and_one_summary);
  RUN(a_different_crash_inside_the_loop_is_notified_at_once);
  RUN(after_the_window_the_failure_is_notified_again_with_its_series);
  RUN(the_span_of_a_series_counts_from_the_occurrence_it_follows);
  RUN(a_full_table_evicts_the_oldest_and_hands_back_its_series);
  RUN(the_table_grows_with_the_fingerprints_and_still_evicts_at_its_bound);
  RUN(window_zero_turns_coalescing_off);
  return check_summary();
}
