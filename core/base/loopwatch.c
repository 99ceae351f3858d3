/*
 * The loop's turns measured (loopwatch.h). A prepare handle runs just
 * before each wait; the time since the previous one, minus what libuv
 * counted as idle in between, is the last turn's busy time. The handle is
 * unreferenced, so it keeps no loop alive and wakes nothing: an idle engine
 * has no turns to measure. Cost per turn: one uv_hrtime, one read of the
 * idle metric and one clock_gettime of the thread's CPU clock.
 */
#include "base/loopwatch.h"

#include <stdbool.h>
#include <string.h>
#include <time.h>

const unsigned loopwatch_threshold_ms[LOOPWATCH_THRESHOLDS] = {1, 5, 20, 100, 1000};

static struct {
  uv_prepare_t prepare;
  bool running;
  bool primed;          /* a first mark has been taken */
  uint64_t mark_ns;     /* wall time at the last prepare */
  uint64_t idle_ns;     /* the idle metric then */
  uint64_t cpu_ns;      /* the thread's CPU time then */
  LoopWatchStats stats;
} loopwatch;

/* The calling thread's CPU time in ns, or 0 when it cannot be read. */
static uint64_t
loopwatch_thread_cpu_ns(void)
{
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
    return 0;
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Counts one turn of busy_ns by the wall clock and cpu_ns of CPU. */
static void
loopwatch_count(uint64_t busy_ns, uint64_t cpu_ns)
{
  LoopWatchStats *s = &loopwatch.stats;
  double busy_ms = (double)busy_ns / 1e6, cpu_ms = (double)cpu_ns / 1e6;
  s->turns++;
  s->busy_ms = (uint64_t)((double)s->busy_ms + busy_ms);
  if (busy_ms > s->longest_ms)
    s->longest_ms = busy_ms;
  if (cpu_ms > s->longest_cpu_ms)
    s->longest_cpu_ms = cpu_ms;
  for (int i = 0; i < LOOPWATCH_THRESHOLDS; i++) {
    s->over[i] += busy_ms > loopwatch_threshold_ms[i];
    s->over_cpu[i] += cpu_ms > loopwatch_threshold_ms[i];
  }
}

/* Just before the loop waits: the turn since the last wait ended. */
static void
loopwatch_prepare_cb(uv_prepare_t *h)
{
  uint64_t now = uv_hrtime(), idle = uv_metrics_idle_time(h->loop);
  uint64_t cpu = loopwatch_thread_cpu_ns();
  if (loopwatch.primed) {
    uint64_t span = now - loopwatch.mark_ns, waited = idle - loopwatch.idle_ns;
    uint64_t busy = span > waited ? span - waited : 0;
    loopwatch_count(busy, cpu > loopwatch.cpu_ns ? cpu - loopwatch.cpu_ns : 0);
  }
  loopwatch.primed = true;
  loopwatch.mark_ns = now;
  loopwatch.idle_ns = idle;
  loopwatch.cpu_ns = cpu;
}

/* See loopwatch.h. */
int
loopwatch_start(uv_loop_t *loop)
{
  int rc = uv_loop_configure(loop, UV_METRICS_IDLE_TIME);
  if (rc != 0)
    return rc;
  uv_prepare_init(loop, &loopwatch.prepare);
  uv_prepare_start(&loopwatch.prepare, loopwatch_prepare_cb);
  uv_unref((uv_handle_t *)&loopwatch.prepare);
  loopwatch.running = true;
  return 0;
}

/* See loopwatch.h. */
void
loopwatch_stats(LoopWatchStats *out)
{
  *out = loopwatch.stats;
}

/* See loopwatch.h. */
void
loopwatch_stop(void)
{
  if (!loopwatch.running)
    return;
  loopwatch.running = false;
  uv_prepare_stop(&loopwatch.prepare);
  uv_close((uv_handle_t *)&loopwatch.prepare, NULL);
}
