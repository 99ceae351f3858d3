/*
 * The cost of a Lua policy per notification, against the built-in C
 * envelope measured in the same run. For each bundled policy it formats the
 * same output notification (10 realistic lines, one matched) the way the
 * engine does: policy format (and route, where the policy has one), the
 * body check, the frame. It prints microseconds per notification and the
 * ratio to the C envelope. Lua is called per notification, never per line,
 * and a monitor sends at most rate_limit.max_notifications (8) per 10 s, so
 * even the slowest policy costs far less than a line of output does.
 *
 *   policy [--calls 20000]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/deliver.h"
#include "engine/engine.h"
#include "policy/policy.h"
#include "render/envelope.h"
#include "policy/policy.h"

static double
policy_bench_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The notification every policy formats. */
static Notification *
policy_bench_notification(void)
{
  Notification *n = notification_new(kNotifOutput, "mon_3k2j9x0a1b2c", "dev-server", kModeIdle);
  for (int i = 0; i < 10; i++) {
    char line[160];
    int len = i == 6 ? snprintf(line, sizeof line,
                                "Error: connect ECONNREFUSED 127.0.0.1:5432 (pool main, attempt %d)", i)
                     : snprintf(line, sizeof line,
                                "2026-11-21T10:00:%02d.123Z INFO  [http] GET /api/v1/users/%d 200 "
                                "12.%dms ua=\"Mozilla/5.0\"",
                                i, 1000 + i, i);
    notification_add_line(n, (uint64_t)(41 + i), i == 6 ? 1 : 0, i == 6 ? 0 : -1, false, line,
                          (size_t)len);
  }
  n->batch = 3;
  n->state = kMonRunning;
  return n;
}

int
main(int argc, char **argv)
{
  long calls = 20000;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--calls") == 0 && i + 1 < argc)
      calls = atol(argv[++i]);
    else {
      fprintf(stderr, "usage: policy [--calls 20000]\n");
      return 2;
    }
  }
  Notification *n = policy_bench_notification();

  /* The built-in C envelope. */
  double t0 = policy_bench_now();
  size_t bytes = 0;
  for (long i = 0; i < calls; i++) {
    StrBuf text = STRBUF_INIT;
    envelope_render(n, &text);
    bytes += text.len;
    strbuf_free(&text);
  }
  double c_us = (policy_bench_now() - t0) / (double)calls * 1e6;
  printf("policy: %ld notifications of 10 lines each, formatted the way the engine does\n", calls);
  printf("  %-16s %8.2f us per notification  (1.00x)\n", "C envelope", c_us);

  PolicySet *ps = engine_policies_for(NULL);
  static const char *const names[] = {"envelope", "xml", "system_message", "events",
                                      "errors_live"};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
    VigilError err = VIGIL_ERROR_INIT;
    Policy *p = policyset_get(ps, names[k], &err);
    if (p == NULL) {
      printf("  %-16s %s\n", names[k], err.msg);
      continue;
    }
    long failed = 0;
    t0 = policy_bench_now();
    for (long i = 0; i < calls; i++) {
      DeliveryMode mode = n->mode;
      bool drop = false;
      if (policy_has_route(p) && policy_route(p, n, &mode, &drop, &err) < 0)
        failed++;
      StrBuf text = STRBUF_INIT;
      if (deliver_policy_text(p, n, &text, &err) != 0)
        failed++;
      bytes += text.len;
      strbuf_free(&text);
      error_clear(&err);
    }
    double us = (policy_bench_now() - t0) / (double)calls * 1e6;
    printf("  %-16s %8.2f us per notification  (%.2fx the C envelope)%s\n", names[k], us,
           us / c_us, failed ? "  SOME CALLS FAILED" : "");
  }
  printf("  (at the default rate limit a monitor sends at most 8 notifications per 10 s)\n");
  policyset_free(ps);
  notification_free(n);
  return bytes > 0 ? 0 : 1;
}
