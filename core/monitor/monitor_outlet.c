/*
 * A monitor's outlet (steps 6 and 7 of docs/core.md, "The data path"):
 * lines, and whole incidents from the signal stage, gather in the batch,
 * which the rate limit delivers or withholds, with sustained overload.
 * The batch timer is armed only while a batch is open, so a quiet monitor
 * never wakes the loop for it.
 */
#include "monitor/monitor_internal.h"

#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "base/memory.h"
#include "proc/keeper_wire.h"

/* --- batches ------------------------------------------------------------ */

typedef struct {
  Notification *n;
} BatchCopy;

/* Copies one line of a batch into the notification being built. */
static void
monitor_copy_batch_line(void *ctx, const BatchLine *line, const char *text)
{
  BatchCopy *copy = ctx;
  notification_add_line(copy->n, line->seq, line->stream, line->pattern,
                        (line->flags & kLineTruncated) != 0, text, line->len);
}

/* The batch's incidents, as entries of n (their lines are already n's, at
 * the same indexes). */
static void
monitor_copy_batch_groups(const Batch *b, Notification *n)
{
  for (size_t i = 0; i < batch_group_count(b); i++)
    notification_add_incident(n, batch_group(b, i));
}

/* What sustained overload does: stop the group (state overloaded, the
 * overload notification comes when it is gone) or mute output and send the
 * overload notification now as this monitor's ending notification. */
static void
monitor_overload(Monitor *m)
{
  char reason[160];
  snprintf(reason, sizeof reason,
           "output withheld by the rate limit for %" PRId64 " ms with no clean %" PRId64
           " ms window",
           m->settings.rate_overload_ms, m->settings.rate_window_ms);
  m->muted = true;
  if (m->settings.rate_on_overload == kOverloadStop) {
    monitor__terminate(m, kMonOverloaded, reason, SIGTERM, (uint64_t)m->settings.kill_grace_ms);
    return;
  }
  /* Mute: the process runs on; this is the monitor's one ending notification. */
  monitor__event(m, kEventOverload, -1, NULL, 0, false, 0, 0, reason);
  if (m->notify == kNotifyNone || m->ending_sent)
    return;
  m->ending_sent = true;
  Notification *n = notification_new(kNotifOverload, m->id, m->label, m->mode);
  n->state = kMonRunning;
  n->suppressed = ratelimit_take_withheld(&m->rate) + m->withheld_unreported + m->suppressed_carry;
  m->withheld_unreported = 0;
  m->suppressed_carry = 0;
  monitor_signal__take_counts(m, n);
  n->reason = xstrdup(reason);
  n->style = m->envelope;
  monitor__emit(m, n);
}

/* Counts lines that will not be delivered because the monitor is muted or
 * its ending notification has gone (see the struct). */
void
monitor__hold_back(Monitor *m, uint64_t lines)
{
  if (m->ending_sent) {
    m->muted_lines += lines;
  } else {
    m->withheld_lines += lines;
    m->withheld_unreported += lines;
  }
}

/* See monitor_internal.h. */
void
monitor__batch_note(Monitor *m, int stream, uint64_t nr)
{
  uint64_t *first = &m->batch_first_nr[stream == 1 ? 1 : 0];
  if (nr != 0 && (*first == 0 || nr < *first))
    *first = nr;
}

/* Empties the batch (its lines are decided now: told or not). Returns
 * batch_take's number. */
static uint64_t
monitor_batch_take(Monitor *m)
{
  m->batch_first_nr[0] = m->batch_first_nr[1] = 0;
  m->batch_incidents = 0;
  return batch_take(&m->batch);
}

/* See monitor_internal.h. */
bool
monitor__notice(Monitor *m, Notification *n, const char *reason)
{
  uint64_t withheld = 0;
  uint64_t lines = n->nlines > 0 ? n->nlines : 1;
  if (ratelimit_admit(&m->rate, uv_now(m->loop), lines, &withheld) != kRateAdmit) {
    /* Counted as withheld by the rate limit, told by the next one that
     * goes. Sustained overload is a batch's business (monitor__flush). */
    notification_free(n);
    return false;
  }
  n->batch = batch_number_next(&m->batch);
  n->state = kMonRunning;
  n->suppressed = withheld + m->suppressed_carry;
  m->suppressed_carry = 0;
  monitor_signal__take_counts(m, n);
  n->style = m->envelope;
  n->reason = xstrdup(reason);
  monitor__emit(m, n);
  return true;
}

/* See monitor_internal.h. */
void
monitor__flush(Monitor *m)
{
  if (batch_empty(&m->batch))
    return;
  uv_timer_stop(&m->batch_timer);
  if (m->muted || m->ending_sent) {
    monitor__hold_back(m, m->batch.count);
    monitor_signal__withheld(m, &m->batch);
    monitor_batch_take(m);
    return;
  }
  uint64_t withheld = 0;
  RateVerdict verdict = ratelimit_admit(&m->rate, uv_now(m->loop), m->batch.count, &withheld);
  if (verdict != kRateAdmit) {
    monitor_signal__withheld(m, &m->batch);
    monitor_batch_take(m);
    monitor__checkpoint(m); /* withheld is told too: counted in the next */
    if (verdict == kRateOverload)
      monitor_overload(m);
    return;
  }
  Notification *n = notification_new(kNotifOutput, m->id, m->label, m->mode);
  BatchCopy copy = {n};
  batch_each(&m->batch, monitor_copy_batch_line, &copy);
  monitor_copy_batch_groups(&m->batch, n);
  n->batch = monitor_batch_take(m);
  n->state = kMonRunning;
  n->suppressed = withheld + m->suppressed_carry;
  m->suppressed_carry = 0;
  monitor_signal__take_counts(m, n);
  n->style = m->envelope;
  monitor__emit(m, n);
}

/* The batch window closed. */
void
monitor__batch_timer_cb(uv_timer_t *t)
{
  monitor__flush(t->data);
}

/* Whether a batch opened at now could only be withheld: the rate limit has
 * no room until after the batch's window would have ended. The answer is
 * kept until that time, since nothing is admitted while the window is
 * full, so a flood asks the rate limit once per window, not once per line. */
static bool
monitor_window_closed(Monitor *m, uint64_t now)
{
  if (now < m->rate_closed_until)
    return true;
  uint64_t window = (uint64_t)m->settings.flush_interval_ms;
  uint64_t free_at = ratelimit_next_free(&m->rate, now);
  if (free_at <= now + window)
    return false;
  m->rate_closed_until = free_at - window;
  return true;
}

/* Adds a line to the open batch, flushing first when it does not fit and
 * after when it is full; arms the window timer when the batch opens. */
void
monitor__batch_line(Monitor *m, uint64_t seq, uint64_t nr, StreamId stream, int pattern,
                   unsigned flags, const char *text, size_t len)
{
  uint64_t now = uv_now(m->loop);
  if (batch_empty(&m->batch) && monitor_window_closed(m, now)) {
    /* A batch opened now would be flushed (full, or when its window ends)
     * while the rate limit is still full, so it could only be withheld: the
     * line is withheld now instead of being copied into it. Under a flood
     * past the limit this is what every line costs. */
    if (ratelimit_withhold(&m->rate, now, 1) == kRateOverload)
      monitor_overload(m);
    return;
  }
  if (!batch_fits(&m->batch, len))
    monitor__flush(m);
  bool opening = batch_empty(&m->batch);
  monitor__batch_note(m, stream, nr);
  if (batch_add(&m->batch, now, seq, stream, pattern, flags, text, len)) {
    monitor__flush(m);
    return;
  }
  if (opening)
    uv_timer_start(&m->batch_timer, monitor__batch_timer_cb,
                   (uint64_t)m->settings.flush_interval_ms, 0);
}

/* See monitor_internal.h. */
void
monitor__tell(Monitor *m, const char *reason)
{
  if (m->notify == kNotifyNone || m->muted)
    return;
  monitor__flush(m); /* what came before it goes before it */
  monitor__notice(m, notification_new(kNotifOutput, m->id, m->label, m->mode), reason);
}

/* See monitor_internal.h. */
void
monitor__notify_note(Monitor *m, const char *reason, bool tail, const ProcExit *x,
                     const RingLine *line)
{
  if (m->notify == kNotifyNone || m->muted)
    return;
  Notification *n = notification_new(kNotifOutput, m->id, m->label, m->mode);
  if (tail)
    monitor__copy_last_lines(m, n);
  else if (line != NULL)
    notification_add_line(n, line->seq, line->stream, line->pattern,
                          (line->flags & kLineTruncated) != 0, line->text, line->len);
  if (x != NULL) {
    n->has_exit_code = x->exited && x->term_signal == 0;
    n->exit_code = x->exit_code;
    n->signal = x->term_signal;
    n->has_duration = true;
    n->duration_ms = x->duration_ms;
  }
  monitor__notice(m, n, reason);
}
