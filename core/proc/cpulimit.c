/*
 * The duty-cycle CPU limiter (see cpulimit.h): a pure controller and the
 * libuv timer that feeds it.
 */
#include "proc/cpulimit.h"

#include <stdlib.h>

#include "base/memory.h"

struct CpuLimit {
  uv_timer_t timer;
  CpuLimitState state;
  CpuLimitOps ops;
  void *ctx;
  uint64_t pauses;
};

void
cpulimit_state_init(CpuLimitState *s, double cores)
{
  *s = (CpuLimitState){.cores = cores};
}

/* See cpulimit.h. */
CpuLimitStep
cpulimit_step(CpuLimitState *s, uint64_t now_ns, uint64_t usage_ns)
{
  const double period_ns = CPULIMIT_PERIOD_MS * 1e6;
  if (!s->primed) {
    s->primed = true;
    s->last_ns = now_ns;
    s->last_usage_ns = usage_ns;
    s->paused = false;
    return (CpuLimitStep){false, CPULIMIT_PERIOD_MS};
  }
  uint64_t elapsed = now_ns > s->last_ns ? now_ns - s->last_ns : 0;
  uint64_t used = usage_ns > s->last_usage_ns ? usage_ns - s->last_usage_ns : 0;
  s->last_ns = now_ns;
  s->last_usage_ns = usage_ns;
  double debt = (double)s->debt_ns + (double)used - s->cores * (double)elapsed;
  double floor = -s->cores * period_ns;
  if (debt < floor)
    debt = floor;
  /* Far beyond anything a real process can use, but keeps the cast defined. */
  if (debt > 1e18)
    debt = 1e18;
  s->debt_ns = (int64_t)debt;
  if (s->debt_ns <= 0) {
    s->paused = false;
    return (CpuLimitStep){false, CPULIMIT_PERIOD_MS};
  }
  double pause_ms = (double)s->debt_ns / s->cores / 1e6;
  uint64_t next = pause_ms < 1 ? 1 : pause_ms > CPULIMIT_MAX_PAUSE_MS ? CPULIMIT_MAX_PAUSE_MS
                                                                       : (uint64_t)pause_ms;
  s->paused = true;
  return (CpuLimitStep){true, next};
}

/* One sample: ask the controller, pause or resume, and re-arm. */
static void
cpulimit_tick(uv_timer_t *t)
{
  CpuLimit *cl = t->data;
  uint64_t usage = 0;
  if (!cl->ops.usage_ns(cl->ctx, &usage)) {
    /* Nothing to measure (every process is gone): run, and look again. */
    if (cl->state.paused)
      cl->ops.pause(cl->ctx, false);
    cl->state.paused = false;
    uv_timer_start(&cl->timer, cpulimit_tick, CPULIMIT_PERIOD_MS, 0);
    return;
  }
  bool was = cl->state.paused;
  CpuLimitStep step = cpulimit_step(&cl->state, uv_hrtime(), usage);
  if (step.pause != was) {
    cl->ops.pause(cl->ctx, step.pause);
    cl->pauses += step.pause;
  } else if (step.pause) {
    /* Still paused: pause again, which also catches processes forked just
     * before the last pause (SIGSTOP reaches only those it finds). */
    cl->ops.pause(cl->ctx, true);
  }
  uv_timer_start(&cl->timer, cpulimit_tick, step.next_ms, 0);
}

CpuLimit *
cpulimit_start(uv_loop_t *loop, double cores, const CpuLimitOps *ops, void *ctx)
{
  CpuLimit *cl = xcalloc(1, sizeof *cl);
  cpulimit_state_init(&cl->state, cores);
  cl->ops = *ops;
  cl->ctx = ctx;
  uv_timer_init(loop, &cl->timer);
  cl->timer.data = cl;
  uv_timer_start(&cl->timer, cpulimit_tick, 0, 0);
  return cl;
}

static void
cpulimit_closed(uv_handle_t *h)
{
  free(h->data);
}

void
cpulimit_stop(CpuLimit *cl)
{
  if (cl == NULL)
    return;
  if (cl->state.paused)
    cl->ops.pause(cl->ctx, false);
  cl->state.paused = false;
  uv_timer_stop(&cl->timer);
  if (!uv_is_closing((uv_handle_t *)&cl->timer))
    uv_close((uv_handle_t *)&cl->timer, cpulimit_closed);
}

uint64_t
cpulimit_pauses(const CpuLimit *cl)
{
  return cl->pauses;
}
