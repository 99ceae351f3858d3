/*
 * How a monitor ends (see monitor_internal.h): the control path and the
 * ending itself.
 *
 * The runtime cap and the idle timeout end the process group through
 * proc_stop, and so do monitor_stop and sustained overload (in "stop"
 * mode). Whatever ends it, the monitor records why *before* the process is
 * gone, and only when proc.c reports the exit (both streams at EOF or
 * drained, the group killed, the child reaped) does it flush the final
 * batch, log the ending event and hand over the one ending notification, in
 * that order.
 *
 * The idle timer is not re-armed per chunk: when it fires early it re-arms
 * for the remainder, so a busy monitor costs no timer work per read.
 */
#include "monitor/monitor_internal.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/memory.h"
#include "base/clock.h"

/* Starts ending the process group for `why`: sends `sig` to the group with
 * SIGKILL after grace_ms (PROC_GRACE_NEVER: none), and records why, so the
 * ending names the cause. The first cause wins (a stop during a timeout's
 * grace stays timed_out), but a later one that asks for a sooner SIGKILL
 * still goes through (proc_stop): a runtime cap stays a cap during a stop
 * that never escalates, and SIGKILL during a long grace kills at once.
 * Returns kMonitorStopping (started), kMonitorStopHastened, kMonitorStopAlready
 * (ending, or ended, and this asked for nothing sooner), or
 * kMonitorStopExited (the child had already exited by itself and is only
 * draining; it then stays `exited`). */
MonitorStopResult
monitor__terminate(Monitor *m, MonitorState why, const char *reason, int sig, uint64_t grace_ms)
{
  if (!m->finished && monitor_restart__interrupt(m, why, reason))
    return kMonitorStopping;
  if (monitor_source__is(m))
    return monitor_source__terminate(m, why, reason);
  if (m->finished || m->proc == NULL)
    return kMonitorStopAlready;
  bool under_way = m->ending != kMonRunning;
  ProcStopResult rc = proc_stop(m->proc, sig, grace_ms);
  if (under_way)
    return rc == kProcStopHastened ? kMonitorStopHastened : kMonitorStopAlready;
  if (rc == kProcStopExited)
    return kMonitorStopExited;
  m->ending = why;
  m->ending_reason = reason ? xstrdup(reason) : NULL;
  return kMonitorStopping;
}

/* --- the ending --------------------------------------------------------- */

typedef struct {
  Notification *n;
} RingCopy;

/* Copies one line of the ring into the ending notification. */
static void
monitor_copy_ring_line(void *ctx, const RingLine *line)
{
  RingCopy *copy = ctx;
  notification_add_line(copy->n, line->seq, line->stream, line->pattern,
                        (line->flags & kLineTruncated) != 0, line->text, line->len);
}

/* See monitor_internal.h. */
void
monitor__copy_last_lines(Monitor *m, Notification *n)
{
  RingCopy copy = {n};
  if (m->settings.exit_lines > 0)
    ring_query(&m->ring, kRingAll, 0, (size_t)m->settings.exit_lines, monitor_copy_ring_line,
               &copy);
}

/* The ending's last lines (monitor.exit_lines of the ring) go before the
 * summaries monitor_signal__finish put in n, which index n's lines: those
 * are moved after the last lines. */
static void
monitor_ending_lines(Monitor *m, Notification *n)
{
  size_t nsummary = n->nlines;
  NoteLine *summary = n->lines;
  n->lines = NULL;
  n->nlines = 0;
  monitor__copy_last_lines(m, n);
  size_t base = n->nlines;
  for (size_t i = 0; i < nsummary; i++) {
    notification_add_line(n, summary[i].seq, summary[i].stream, summary[i].pattern,
                          summary[i].truncated, summary[i].text, summary[i].len);
    free(summary[i].text);
  }
  free(summary);
  for (size_t i = 0; i < n->nincidents; i++)
    n->incidents[i].first_line += base;
}

/* The final state and the event that records it. */
static void
monitor_log_ending(Monitor *m)
{
  const ProcExit *x = &m->exit;
  const char *reason = m->ending_reason;
  switch (m->state) {
  case kMonStopped:
    monitor__event(m, kEventStopped, -1, NULL, 0, x->term_signal == 0, x->exit_code,
                  x->term_signal, reason);
    break;
  case kMonTimedOut:
    monitor__event(m, kEventTimedOut, -1, NULL, 0, false, 0, x->term_signal, reason);
    break;
  case kMonIdleTimeout:
    monitor__event(m, kEventIdleTimeout, -1, NULL, 0, false, 0, x->term_signal, reason);
    break;
  case kMonOverloaded:
    monitor__event(m, kEventOverload, -1, NULL, 0, false, 0, x->term_signal, reason);
    break;
  default:
    monitor__event_ex(m, kEventExited, -1, NULL, 0, x->term_signal == 0, x->exit_code,
                     x->term_signal, reason, m->exceeded);
    break;
  }
}

/* The words of an ending by a limit (seed 001's ResourceLimitExceeded):
 * they start with the limit's name, as `exceeded` does. */
static char *
monitor_limit_reason(const Monitor *m, const ProcExit *x)
{
  char words[256];
  switch (x->exceeded) {
  case kLimitMemory:
    snprintf(words, sizeof words,
             "memory_limit: %" PRIu64 " process%s killed by the kernel for using more than the "
             "memory_limit of %" PRId64 " bytes",
             x->oom_kills, x->oom_kills == 1 ? "" : "es", m->memory_limit);
    break;
  case kLimitProcesses:
    snprintf(words, sizeof words,
             "max_processes: %" PRIu64 " fork%s refused at the limit of %" PRId64
             " processes and threads",
             x->forks_refused, x->forks_refused == 1 ? "" : "s", m->settings.max_processes);
    break;
  default:
    snprintf(words, sizeof words,
             "cpu_time: killed by SIGXCPU, its CPU time limit (RLIMIT_CPU, set outside vigil) "
             "ran out");
    break;
  }
  return xstrdup(words);
}

/* The process is gone: it starts again (the restart policy), or the
 * monitor ends. */
void
monitor__on_exit(void *data, const ProcExit *exit)
{
  Monitor *m = data;
  m->exit = *exit;
  if (monitor_restart__wanted(m, exit)) {
    monitor_restart__schedule(m);
    return;
  }
  char *gave_up = monitor_restart__give_up(m, exit);
  if (gave_up != NULL) {
    free(m->ending_reason);
    m->ending_reason = gave_up;
  }
  monitor__end(m);
}

/* See monitor_internal.h. */
void
monitor__end(Monitor *m)
{
  const ProcExit *exit = &m->exit;
  monitor__timer_stop(m->restart_timer);
  monitor_ready__stop(m); /* a monitor that ends before ready ends its probes */
  m->ended_at = clock_now_ms();
  monitor__timer_stop(m->idle_timer);
  uv_timer_stop(&m->runtime_timer);
  monitor_quiet__pause(m);
  m->state = m->ending != kMonRunning ? m->ending : kMonExited;
  if (m->state == kMonExited && exit->exceeded != kLimitNone) {
    m->exceeded = limit_name(exit->exceeded);
    free(m->ending_reason);
    m->ending_reason = monitor_limit_reason(m, exit);
  }

  /* Open incidents close and go out with the final batch; series of
   * repeats not yet reported ride on the ending notification. */
  Notification *n = NULL;
  if (m->notify != kNotifyNone && !m->ending_sent)
    n = notification_new(notification_ending_for(m->state), m->id, m->label, m->mode);
  monitor_signal__finish(m, n);
  monitor__flush(m);
  uv_timer_stop(&m->batch_timer);
  monitor_log_ending(m);

  if (n != NULL && !m->ending_sent) {
    m->ending_sent = true;
    n->state = m->state;
    n->has_exit_code = exit->exited && exit->term_signal == 0;
    n->exit_code = exit->exit_code;
    n->signal = exit->term_signal;
    n->has_duration = true;
    n->duration_ms = exit->duration_ms;
    n->suppressed =
        ratelimit_take_withheld(&m->rate) + m->withheld_unreported + m->suppressed_carry;
    m->withheld_unreported = 0;
    m->suppressed_carry = 0;
    monitor_signal__take_counts(m, n);
    n->style = m->envelope;
    if (m->ending_reason)
      n->reason = xstrdup(m->ending_reason);
    n->exceeded = m->exceeded;
    monitor_ending_lines(m, n);
    monitor__emit(m, n);
    n = NULL;
  }
  notification_free(n);
  m->finished = true;
  /* Told (and in its session's journal): nothing for a restart to redo. */
  if (m->keep != NULL)
    monitor_keep_ended(m->keep);
  if (m->hooks.on_finished)
    m->hooks.on_finished(m->data, m);
}

/* --- timers ------------------------------------------------------------- */

/* The runtime cap is reached. */
void
monitor__runtime_timer_cb(uv_timer_t *t)
{
  Monitor *m = t->data;
  char reason[96];
  snprintf(reason, sizeof reason, "runtime cap of %" PRIu64 " ms reached", m->timeout_ms);
  monitor__terminate(m, kMonTimedOut, reason, SIGTERM, (uint64_t)m->settings.kill_grace_ms);
}

/* The idle timeout: ends the process if it has been quiet that long. */
void
monitor__idle_timer_cb(uv_timer_t *t)
{
  Monitor *m = t->data;
  uint64_t now = uv_now(m->loop);
  uint64_t quiet = now - m->last_output_mono;
  if (quiet < m->idle_timeout_ms) {
    /* Output arrived since the timer was armed: wait for the remainder. */
    uv_timer_start(monitor__timer(m, &m->idle_timer), monitor__idle_timer_cb, m->idle_timeout_ms - quiet, 0);
    return;
  }
  char reason[96];
  snprintf(reason, sizeof reason, "no output for %" PRIu64 " ms", m->idle_timeout_ms);
  monitor__terminate(m, kMonIdleTimeout, reason, SIGTERM, (uint64_t)m->settings.kill_grace_ms);
}
