/*
 * Sustained overload at the default settings, in real time: a child printing
 * a matching line every 100 ms is auto-stopped as `overloaded` at about 45 s
 * (rate_limit.overload_ms), the Hermes defect (an overload timer reset by
 * every delivery, so it never fires) not repeated. This is the one slow test;
 * it has its own program so ctest runs it beside the others. The boundaries
 * of the rule are in test_ratelimit (fake clock).
 */
#include <signal.h>

#include "harness.h"

TEST(matching_line_every_100ms_is_stopped_as_overloaded_at_default_settings)
{
  Harness h;
  harness_init(&h);
  h.settings.kill_grace_ms = 2000; /* the default grace, too */
  const char *patterns[] = {"^Error:"};
  MonitorSpec spec = {
      .argv = SH("while :; do echo 'Error: still failing'; sleep 0.1; done"),
      .label = "crash-loop",
      .patterns = patterns,
      .npatterns = 1,
  };
  if (harness_start(&h, &spec) && harness_wait(&h, 120000)) {
    CHECK_INT(monitor_state(h.m), kMonOverloaded);
    Notification *end = harness_ending(&h);
    if (end) {
      CHECK_INT(end->type, kNotifOverload);
      CHECK(end->suppressed > 0);
    }
    /* Never before the rule allows it. */
    CHECK(monitor_duration_ms(h.m) >= 45000);
    /* At most 8 output notifications in any 10 s: over ~46 s, at most 5 windows' worth. */
    CHECK(harness_count(&h, kNotifOutput) <= 8 * 5);
    MonitorCounters c;
    monitor_counters(h.m, &c);
    uint64_t delivered = 0, reported = 0;
    for (size_t i = 0; i < h.nnotes; i++) {
      reported += h.notes[i]->suppressed;
      if (h.notes[i]->type == kNotifOutput)
        delivered += h.notes[i]->nlines;
    }
    /* Every matched line was delivered or reported as withheld. */
    CHECK_INT(delivered + reported, c.matched);
  }
  harness_close(&h);
}

int
main(void)
{
  RUN(matching_line_every_100ms_is_stopped_as_overloaded_at_default_settings);
  return check_summary();
}
