/*
 * A log line said once per window, the rest counted (logrepeat.h). The
 * window's timer starts at its first occurrence and is unref'd: a count
 * waiting to be told never holds an exiting engine up, and logrepeat_free
 * tells it instead.
 */
#include "base/logrepeat.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/memory.h"

struct LogRepeat {
  uv_timer_t timer;
  char module[32], verb[32], noun[64];
  char reason[256];     /* the latest occurrence's */
  uint64_t window_ms;
  uint64_t opened_ms;   /* the loop's time the window opened */
  bool open;            /* a window is open */
  uint64_t count;       /* occurrences after the window's first */
};

/* Logs the count of the window, if any, over elapsed_ms. */
static void
logrepeat_tell(LogRepeat *r, uint64_t elapsed_ms)
{
  if (r->count == 0)
    return;
  uint64_t s = (elapsed_ms + 999) / 1000;
  LOG_WARN(r->module, "%s %" PRIu64 " more %s in the last %" PRIu64 " s: %s", r->verb, r->count,
           r->noun, s > 0 ? s : 1, r->reason);
  r->count = 0;
}

/* The window ends: its count is told and the next window opens, or, when
 * nothing was counted, the window closes. */
static void
logrepeat_on_timer(uv_timer_t *t)
{
  LogRepeat *r = t->data;
  if (r->count == 0) {
    r->open = false;
    return;
  }
  logrepeat_tell(r, r->window_ms);
  r->opened_ms = uv_now(t->loop);
  uv_timer_start(&r->timer, logrepeat_on_timer, r->window_ms, 0);
}

LogRepeat *
logrepeat_new(uv_loop_t *loop, const char *module, const char *verb, const char *noun,
              uint64_t window_ms)
{
  LogRepeat *r = xcalloc(1, sizeof *r);
  snprintf(r->module, sizeof r->module, "%s", module);
  snprintf(r->verb, sizeof r->verb, "%s", verb);
  snprintf(r->noun, sizeof r->noun, "%s", noun);
  r->window_ms = window_ms > 0 ? window_ms : 1;
  uv_timer_init(loop, &r->timer);
  uv_unref((uv_handle_t *)&r->timer);
  r->timer.data = r;
  return r;
}

bool
logrepeat_hit(LogRepeat *r, const char *reason)
{
  snprintf(r->reason, sizeof r->reason, "%s", reason);
  if (r->open) {
    r->count++;
    return false;
  }
  r->open = true;
  r->opened_ms = uv_now(r->timer.loop);
  uv_timer_start(&r->timer, logrepeat_on_timer, r->window_ms, 0);
  return true;
}

uint64_t
logrepeat_pending(const LogRepeat *r)
{
  return r->count;
}

/* Frees r once its timer has closed. */
static void
logrepeat_closed(uv_handle_t *h)
{
  free(h->data);
}

void
logrepeat_free(LogRepeat *r)
{
  if (r == NULL)
    return;
  logrepeat_tell(r, uv_now(r->timer.loop) - r->opened_ms);
  uv_close((uv_handle_t *)&r->timer, logrepeat_closed);
}
