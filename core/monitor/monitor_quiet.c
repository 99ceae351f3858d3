/*
 * A monitor's stall notice (quiet_after_ms, see monitor_internal.h): a
 * program that has printed no line on either stream for that long is told
 * once ("no output for 5m", with its last line), and once more when it
 * prints again ("output resumed after 5m12s"). Nothing is stopped: this
 * sits beside the idle timeout (monitor_ending.c), which ends the program.
 *
 * Both notices are output notifications with a reason, as a restart's are
 * (monitor_restart.c): under the rate limit, the policy and the batching of
 * delivery like any other, and logged as `quiet` and `resumed` events. The
 * last line goes in the notification's lines, so it is framed and escaped
 * as every line of process output is; the reason is the engine's words.
 *
 * The clock is cheap: a line only stores the loop's time (one assignment
 * per read); the timer is armed once per period and, when it fires early
 * because lines came since, re-armed for the remainder, as libuv's own
 * users and the idle timeout do. While quiet, no timer runs: the next line
 * ends the quiet and arms it again. While a restart waits, nothing is
 * armed; the next run starts a new period, and a quiet told before the
 * restart ends with the next run's first line. A monitor taken over by a
 * restarted engine starts a new period, unless its restored event log
 * says it was quiet: then it stays quiet, and is not told so twice.
 */
#include "monitor/monitor_internal.h"

#include <inttypes.h>

#include "base/clock.h"
#include "base/strbuf.h"
#include "base/textfmt.h"

/* See monitor_internal.h. */
void
monitor_quiet__arm(Monitor *m)
{
  m->quiet_last_mono = uv_now(m->loop);
  if (m->quiet_after_ms > 0 && m->quiet_since == 0)
    uv_timer_start(monitor__timer(m, &m->quiet_timer), monitor_quiet__timer_cb, m->quiet_after_ms, 0);
}

/* See monitor_internal.h. */
void
monitor_quiet__pause(Monitor *m)
{
  monitor__timer_stop(m->quiet_timer);
}

/* One of the two notices: an output notification with reason and, when
 * given, one line of the ring, under the rate limit (withheld, it counts as
 * a batch's lines do and the next notification reports it). */
static void
monitor_quiet_notify(Monitor *m, const char *reason, const RingLine *line)
{
  if (m->notify == kNotifyNone || m->muted || m->ending_sent)
    return;
  monitor__notify_note(m, reason, false, NULL, line != NULL && line->text != NULL ? line : NULL);
}

/* See monitor_internal.h. */
void
monitor_quiet__timer_cb(uv_timer_t *t)
{
  Monitor *m = t->data;
  if (m->ending != kMonRunning || m->finished || m->quiet_since != 0)
    return;
  uint64_t now = uv_now(m->loop);
  uint64_t quiet = now - m->quiet_last_mono;
  if (quiet < m->quiet_after_ms) {
    /* Lines came since the timer was armed: wait for the remainder. */
    uv_timer_start(monitor__timer(m, &m->quiet_timer), monitor_quiet__timer_cb, m->quiet_after_ms - quiet, 0);
    return;
  }
  int64_t since = clock_now_ms() - (int64_t)quiet;
  m->quiet_since = since > 0 ? since : 1;
  StrBuf why = STRBUF_INIT;
  strbuf_puts(&why, "no output for ");
  textfmt_duration(&why, m->quiet_after_ms);
  RingLine last = ring_last(&m->ring);
  monitor__event(m, kEventQuiet, -1, last.text, last.text ? last.len : 0, false, 0, 0,
                 strbuf_cstr(&why));
  monitor_quiet_notify(m, strbuf_cstr(&why), &last);
  strbuf_free(&why);
}

/* See monitor_internal.h. */
void
monitor_quiet__lines(Monitor *m)
{
  uint64_t now = uv_now(m->loop);
  uint64_t gap = now - m->quiet_last_mono;
  m->quiet_last_mono = now;
  if (m->quiet_since == 0)
    return;
  m->quiet_since = 0;
  StrBuf why = STRBUF_INIT;
  strbuf_puts(&why, "output resumed after ");
  textfmt_duration(&why, gap);
  monitor__event(m, kEventResumed, -1, NULL, 0, false, 0, 0, strbuf_cstr(&why));
  monitor_quiet_notify(m, strbuf_cstr(&why), NULL);
  strbuf_free(&why);
  if (m->proc != NULL && m->ending == kMonRunning)
    uv_timer_start(monitor__timer(m, &m->quiet_timer), monitor_quiet__timer_cb, m->quiet_after_ms, 0);
}

/* See monitor_internal.h. The newest of the restored quiet and resumed
 * events says whether the engine before had told a quiet that no line has
 * ended yet; a line the replay then brings ends it as any line does. */
void
monitor_quiet__adopted(Monitor *m)
{
  if (m->quiet_after_ms == 0)
    return;
  const Event *last = NULL;
  unsigned mask = 1u << kEventQuiet | 1u << kEventResumed;
  for (const Event *ev = eventlog_find(&m->events, 0, mask); ev != NULL;
       ev = eventlog_find(&m->events, ev->id, mask))
    last = ev;
  if (last == NULL || last->type != kEventQuiet)
    return;
  /* Told quiet_after_ms after its last line. */
  int64_t since = last->at_ms - (int64_t)m->quiet_after_ms;
  m->quiet_since = since > 0 ? since : 1;
  monitor__timer_stop(m->quiet_timer);
}

/* See monitor.h. */
int64_t
monitor_quiet_since(const Monitor *m)
{
  return m->finished ? 0 : m->quiet_since;
}
