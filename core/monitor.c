/*
 * One monitored process, from start to its ending notification.
 *
 * The data path, per read chunk: raw bytes go to the stream's capture, then
 * to its line splitter; each line gets a pattern verdict (only on the
 * configured streams), a seq in the ring, a `match` event when it matched,
 * and, when the notify setting wants it, a place in the open batch. A batch
 * leaves when its window closes, when it is full, or when the process ends,
 * and the rate limiter decides whether it is delivered or withheld.
 *
 * The control path: the runtime cap and idle timeout end the process group
 * through proc_stop, and so does monitor_stop and sustained overload (in
 * "stop" mode). Whatever ends it, the monitor records why *before* the
 * process is gone, and only when proc.c reports the exit (both streams at
 * EOF or drained, the group killed, the child reaped) does it flush the final
 * batch, log the ending event and hand over the one ending notification, in
 * that order.
 *
 * Timers: three uv timers are initialised at start, but each is armed only
 * while its thing is pending (an open batch, an idle timeout, a runtime cap),
 * so a quiet monitor without timeouts never wakes the loop. The idle timer is
 * not re-armed per chunk: when it fires early it re-arms for the remainder.
 */
#include "monitor.h"
#include "signals.h"

#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "linebuf.h"
#include "match.h"
#include "memory.h"
#include "ratelimit.h"
#include "strbuf.h"
#include "textfmt.h"
#include "utf8.h"

/* The context a line callback needs: which monitor, which stream. */
typedef struct {
  Monitor *m;
  StreamId stream;
} MonitorStream;

struct Monitor {
  uv_loop_t *loop;
  VigilSettings settings;
  char id[24];
  char *label;
  char *description;
  MonitorState state;
  NotifyMode notify;             /* resolved: never kNotifyAuto */
  DeliveryMode mode;
  MatchStreams match_streams;
  MonitorHooks hooks;
  void *data;

  Proc *proc;
  pid_t pid;
  char *program;                 /* the path that was executed, escaped */
  ProcExit exit;                 /* valid once finished */
  int64_t memory_limit;          /* as asked, for the words of a limit's ending */
  const char *exceeded;          /* the limit that ended it, or NULL */

  MonitorStream streams[2];
  Linebuf linebuf[2];
  Capture capture[2];
  uint64_t stream_bytes[2];
  Ring ring;
  PatternSet *patterns;
  char **pattern_sources;        /* owned copies, npatterns entries */
  size_t npatterns;
  Batch batch;
  RateLimit rate;
  EventLog events;

  uv_timer_t batch_timer;
  uv_timer_t idle_timer;
  uv_timer_t runtime_timer;
  int open_handles;              /* timers not yet closed */
  bool timers_ready;

  int64_t started_at;            /* wall ms */
  int64_t ended_at;              /* wall ms, 0 while running */
  uint64_t started_mono;         /* uv_now at start */
  uint64_t last_output_mono;     /* uv_now of the last chunk read */
  uint64_t timeout_ms;           /* 0: no runtime cap */
  uint64_t idle_timeout_ms;      /* 0: off */

  /* Why the process is ending, decided before it is gone (kMonRunning when
   * it ends by itself), with a reason in words. */
  MonitorState ending;
  char *ending_reason;

  bool muted;                    /* overload in mute mode, or stopping for overload */
  /* Lines not delivered because muted, in two kinds that never mix: held
   * back while an overloaded monitor is being stopped (withheld, reported by
   * the ending notification, so part of the `suppressed` counter for good),
   * and muted after the ending notification went (mute mode; nothing can
   * report them, so they have a counter of their own). */
  uint64_t withheld_lines;       /* held back before the ending, ever */
  uint64_t withheld_unreported;  /* of those, not yet reported */
  uint64_t muted_lines;          /* after the ending notification */
  bool ending_sent;              /* the ending notification has been handed over */
  bool finished;                 /* on_finished has been called */
  uint64_t notifications;
  uint64_t policy_dropped;
};

static void monitor_flush(Monitor *m);

/* Whether patterns apply to a stream under the match_streams setting. */
static bool
monitor_matches_stream(const Monitor *m, StreamId stream)
{
  switch (m->match_streams) {
  case kStreamsStdout:
    return stream == kStreamStdout;
  case kStreamsStderr:
    return stream == kStreamStderr;
  default:
    return true;
  }
}

/* Hands a notification to the owner and counts it. */
static void
monitor_emit(Monitor *m, Notification *n)
{
  n->at_ms = textfmt_now_ms();
  m->notifications++;
  if (m->hooks.on_notification)
    m->hooks.on_notification(m->data, m, n);
  else
    notification_free(n);
}

/* Logs an event, marked with the limit that ended the monitor (exceeded,
 * may be NULL), and tells the owner. */
static void
monitor_event_ex(Monitor *m, EventType type, int pattern, const char *line, size_t line_len,
                 bool has_exit_code, int exit_code, int sig, const char *reason,
                 const char *exceeded)
{
  const Event *ev = eventlog_add(&m->events, type, textfmt_now_ms(), pattern, line, line_len,
                                 has_exit_code, exit_code, sig, reason);
  if (exceeded != NULL)
    ev = eventlog_set_exceeded(&m->events, exceeded);
  if (m->hooks.on_event)
    m->hooks.on_event(m->data, m, ev);
}

/* Logs an event and tells the owner. */
static void
monitor_event(Monitor *m, EventType type, int pattern, const char *line, size_t line_len,
              bool has_exit_code, int exit_code, int sig, const char *reason)
{
  monitor_event_ex(m, type, pattern, line, line_len, has_exit_code, exit_code, sig, reason, NULL);
}

/* Starts ending the process group for `why`: sends `sig` to the group with
 * SIGKILL after grace_ms, and records why, so the ending names the cause.
 * The first cause wins (a stop during a timeout's grace stays timed_out).
 * Returns false when nothing was started: already ending, or the child had
 * already exited by itself (it is only draining), which then stays `exited`. */
static bool
monitor_terminate(Monitor *m, MonitorState why, const char *reason, int sig, uint64_t grace_ms)
{
  if (m->ending != kMonRunning || m->finished || m->proc == NULL)
    return false;
  if (proc_stop(m->proc, sig, grace_ms) != kProcStopping)
    return false;
  m->ending = why;
  m->ending_reason = reason ? xstrdup(reason) : NULL;
  return true;
}

/* --- batches ------------------------------------------------------------ */

typedef struct {
  Notification *n;
} BatchCopy;

static void
monitor_copy_batch_line(void *ctx, const BatchLine *line, const char *text)
{
  BatchCopy *copy = ctx;
  notification_add_line(copy->n, line->seq, line->stream, line->pattern,
                        (line->flags & kLineTruncated) != 0, text, line->len);
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
    monitor_terminate(m, kMonOverloaded, reason, SIGTERM, (uint64_t)m->settings.kill_grace_ms);
    return;
  }
  /* Mute: the process runs on; this is the monitor's one ending notification. */
  monitor_event(m, kEventOverload, -1, NULL, 0, false, 0, 0, reason);
  if (m->notify == kNotifyNone || m->ending_sent)
    return;
  m->ending_sent = true;
  Notification *n = notification_new(kNotifOverload, m->id, m->label, m->mode);
  n->state = kMonRunning;
  n->suppressed = ratelimit_take_pending(&m->rate) + m->withheld_unreported;
  m->withheld_unreported = 0;
  n->reason = xstrdup(reason);
  monitor_emit(m, n);
}

/* Counts lines that will not be delivered because the monitor is muted or
 * its ending notification has gone (see the struct). */
static void
monitor_hold_back(Monitor *m, uint64_t lines)
{
  if (m->ending_sent) {
    m->muted_lines += lines;
  } else {
    m->withheld_lines += lines;
    m->withheld_unreported += lines;
  }
}

/* Closes the open batch and delivers it, unless the rate limit withholds it. */
static void
monitor_flush(Monitor *m)
{
  if (batch_empty(&m->batch))
    return;
  uv_timer_stop(&m->batch_timer);
  if (m->muted || m->ending_sent) {
    monitor_hold_back(m, m->batch.count);
    batch_take(&m->batch);
    return;
  }
  uint64_t report = 0;
  RateVerdict verdict = ratelimit_admit(&m->rate, uv_now(m->loop), m->batch.count, &report);
  if (verdict != kRateAdmit) {
    batch_take(&m->batch);
    if (verdict == kRateOverload)
      monitor_overload(m);
    return;
  }
  Notification *n = notification_new(kNotifOutput, m->id, m->label, m->mode);
  BatchCopy copy = {n};
  batch_each(&m->batch, monitor_copy_batch_line, &copy);
  n->batch = batch_take(&m->batch);
  n->state = kMonRunning;
  n->suppressed = report;
  monitor_emit(m, n);
}

static void
monitor_batch_timer_cb(uv_timer_t *t)
{
  monitor_flush(t->data);
}

/* Adds a line to the open batch, flushing first when it does not fit and
 * after when it is full; arms the window timer when the batch opens. */
static void
monitor_batch_line(Monitor *m, uint64_t seq, StreamId stream, int pattern, unsigned flags,
                   const char *text, size_t len)
{
  if (!batch_fits(&m->batch, len))
    monitor_flush(m);
  bool opening = batch_empty(&m->batch);
  uint64_t now = uv_now(m->loop);
  if (batch_add(&m->batch, now, seq, stream, pattern, flags, text, len)) {
    monitor_flush(m);
    return;
  }
  if (opening)
    uv_timer_start(&m->batch_timer, monitor_batch_timer_cb,
                   (uint64_t)m->settings.flush_interval_ms, 0);
}

/* --- the data path ------------------------------------------------------ */

/* One complete line from a stream: match it, keep it, log and batch it. */
static void
monitor_on_line(void *ctx, const Line *line)
{
  MonitorStream *ms = ctx;
  Monitor *m = ms->m;
  int pattern = -1;
  if (m->npatterns > 0 && monitor_matches_stream(m, ms->stream))
    pattern = match_line(m->patterns, line->text, line->len);
  uint64_t seq = ring_push(&m->ring, ms->stream, line->text, line->len, pattern, line->flags);
  if (pattern >= 0)
    monitor_event(m, kEventMatch, pattern, line->text, line->len, false, 0, 0, NULL);
  bool wanted = m->notify == kNotifyLines || (m->notify == kNotifyMatches && pattern >= 0);
  if (!wanted)
    return;
  if (m->muted || m->ending_sent) {
    monitor_hold_back(m, 1);
    return;
  }
  monitor_batch_line(m, seq, ms->stream, pattern, line->flags, line->text, line->len);
}

static void
monitor_on_output(void *data, StreamId stream, const char *buf, size_t len)
{
  Monitor *m = data;
  m->stream_bytes[stream] += len;
  m->last_output_mono = uv_now(m->loop);
  capture_write(&m->capture[stream], buf, len);
  uint64_t lines_before = m->ring.counters.lines;
  linebuf_feed(&m->linebuf[stream], buf, len, monitor_on_line, &m->streams[stream]);
  if (m->hooks.on_lines && m->ring.counters.lines != lines_before)
    m->hooks.on_lines(m->data, m);
}

static void
monitor_on_eof(void *data, StreamId stream)
{
  Monitor *m = data;
  linebuf_finish(&m->linebuf[stream], monitor_on_line, &m->streams[stream]);
}

/* --- the ending --------------------------------------------------------- */

typedef struct {
  Notification *n;
} RingCopy;

static void
monitor_copy_ring_line(void *ctx, const RingLine *line)
{
  RingCopy *copy = ctx;
  notification_add_line(copy->n, line->seq, line->stream, line->pattern,
                        (line->flags & kLineTruncated) != 0, line->text, line->len);
}

/* The final state and the event that records it. */
static void
monitor_log_ending(Monitor *m)
{
  const ProcExit *x = &m->exit;
  const char *reason = m->ending_reason;
  switch (m->state) {
  case kMonStopped:
    monitor_event(m, kEventStopped, -1, NULL, 0, x->term_signal == 0, x->exit_code,
                  x->term_signal, reason);
    break;
  case kMonTimedOut:
    monitor_event(m, kEventTimedOut, -1, NULL, 0, false, 0, x->term_signal, reason);
    break;
  case kMonIdleTimeout:
    monitor_event(m, kEventIdleTimeout, -1, NULL, 0, false, 0, x->term_signal, reason);
    break;
  case kMonOverloaded:
    monitor_event(m, kEventOverload, -1, NULL, 0, false, 0, x->term_signal, reason);
    break;
  default:
    monitor_event_ex(m, kEventExited, -1, NULL, 0, x->term_signal == 0, x->exit_code,
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
  case kContainLimitMemory:
    snprintf(words, sizeof words,
             "memory_limit: %" PRIu64 " process%s killed by the kernel for using more than the "
             "memory_limit of %" PRId64 " bytes",
             x->oom_kills, x->oom_kills == 1 ? "" : "es", m->memory_limit);
    break;
  case kContainLimitProcesses:
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

/* The process is gone: final batch, ending event, ending notification, in
 * that order, then on_finished. Nothing touches m after on_finished. */
static void
monitor_on_exit(void *data, const ProcExit *exit)
{
  Monitor *m = data;
  m->exit = *exit;
  m->ended_at = textfmt_now_ms();
  uv_timer_stop(&m->idle_timer);
  uv_timer_stop(&m->runtime_timer);
  m->state = m->ending != kMonRunning ? m->ending : kMonExited;
  if (m->state == kMonExited && exit->exceeded != kContainLimitNone) {
    m->exceeded = contain_limit_name(exit->exceeded);
    free(m->ending_reason);
    m->ending_reason = monitor_limit_reason(m, exit);
  }

  monitor_flush(m);
  uv_timer_stop(&m->batch_timer);
  monitor_log_ending(m);

  if (m->notify != kNotifyNone && !m->ending_sent) {
    m->ending_sent = true;
    Notification *n = notification_new(notification_ending_for(m->state), m->id, m->label,
                                       m->mode);
    n->state = m->state;
    n->has_exit_code = exit->exited && exit->term_signal == 0;
    n->exit_code = exit->exit_code;
    n->signal = exit->term_signal;
    n->has_duration = true;
    n->duration_ms = exit->duration_ms;
    n->suppressed = ratelimit_take_pending(&m->rate) + m->withheld_unreported;
    m->withheld_unreported = 0;
    if (m->ending_reason)
      n->reason = xstrdup(m->ending_reason);
    n->exceeded = m->exceeded;
    RingCopy copy = {n};
    if (m->settings.exit_lines > 0)
      ring_query(&m->ring, kRingAll, 0, (size_t)m->settings.exit_lines,
                 monitor_copy_ring_line, &copy);
    monitor_emit(m, n);
  }
  m->finished = true;
  if (m->hooks.on_finished)
    m->hooks.on_finished(m->data, m);
}

/* --- timers ------------------------------------------------------------- */

static void
monitor_runtime_timer_cb(uv_timer_t *t)
{
  Monitor *m = t->data;
  char reason[96];
  snprintf(reason, sizeof reason, "runtime cap of %" PRIu64 " ms reached", m->timeout_ms);
  monitor_terminate(m, kMonTimedOut, reason, SIGTERM, (uint64_t)m->settings.kill_grace_ms);
}

static void
monitor_idle_timer_cb(uv_timer_t *t)
{
  Monitor *m = t->data;
  uint64_t now = uv_now(m->loop);
  uint64_t quiet = now - m->last_output_mono;
  if (quiet < m->idle_timeout_ms) {
    /* Output arrived since the timer was armed: wait for the remainder. */
    uv_timer_start(&m->idle_timer, monitor_idle_timer_cb, m->idle_timeout_ms - quiet, 0);
    return;
  }
  char reason[96];
  snprintf(reason, sizeof reason, "no output for %" PRIu64 " ms", m->idle_timeout_ms);
  monitor_terminate(m, kMonIdleTimeout, reason, SIGTERM, (uint64_t)m->settings.kill_grace_ms);
}

/* --- start, stop, free -------------------------------------------------- */

/* Checks the spec's own arguments against their bounds. */
static int
monitor_validate(const VigilSettings *s, const MonitorSpec *spec, VigilError *err)
{
  if (spec->argv == NULL || spec->argv[0] == NULL || spec->argv[0][0] == '\0')
    return error_set(err, kErrInvalidParams, "command: empty command");
  if (spec->label && strlen(spec->label) > MONITOR_LABEL_MAX)
    return error_set(err, kErrInvalidParams, "label: at most %d bytes, got %zu",
                     MONITOR_LABEL_MAX, strlen(spec->label));
  if (spec->label && spec->label[0] == '\0')
    return error_set(err, kErrInvalidParams, "label: must not be empty");
  if (spec->description && strlen(spec->description) > MONITOR_DESCRIPTION_MAX)
    return error_set(err, kErrInvalidParams, "description: at most %d bytes, got %zu",
                     MONITOR_DESCRIPTION_MAX, strlen(spec->description));
  /* Both are shown to agents and sent to every connection of the session. */
  const char *texts[2][2] = {{"label", spec->label}, {"description", spec->description}};
  for (int i = 0; i < 2; i++) {
    size_t at = 0;
    Utf8Verdict v = texts[i][1] ? utf8_check_text(texts[i][1], strlen(texts[i][1]), &at)
                                : kUtf8Text;
    if (v != kUtf8Text)
      return error_set(err, kErrInvalidParams,
                       "%s: must be UTF-8 text without control characters: %s at byte %zu",
                       texts[i][0], utf8_verdict_name(v), at);
  }
  if (spec->idle_timeout_ms < 0 || spec->idle_timeout_ms > MONITOR_IDLE_TIMEOUT_MAX_MS)
    return error_set(err, kErrInvalidParams, "idle_timeout_ms must be 0..%d, got %" PRId64,
                     MONITOR_IDLE_TIMEOUT_MAX_MS, spec->idle_timeout_ms);
  if (spec->timeout_ms < 0 || spec->timeout_ms > s->max_runtime_ms)
    return error_set(err, kErrInvalidParams,
                     "timeout_ms must be 1..%" PRId64 " (monitor.max_runtime_ms), got %" PRId64,
                     s->max_runtime_ms, spec->timeout_ms);
  if ((unsigned)spec->match_streams > kStreamsStderr)
    return error_set(err, kErrInvalidParams, "match_streams: unknown value %d",
                     (int)spec->match_streams);
  if ((unsigned)spec->notify > kNotifyNone)
    return error_set(err, kErrInvalidParams, "notify: unknown value %d", (int)spec->notify);
  if ((unsigned)spec->mode > kModeLiveSafe)
    return error_set(err, kErrInvalidParams, "mode: unknown value %d", (int)spec->mode);
  return settings_check(s, err);
}

/* Frees what monitor_start allocated before any handle existed. */
static void
monitor_free_parts(Monitor *m)
{
  for (int i = 0; i < 2; i++) {
    linebuf_free(&m->linebuf[i]);
    capture_free(&m->capture[i]);
  }
  ring_free(&m->ring);
  match_free(m->patterns);
  for (size_t i = 0; i < m->npatterns; i++)
    free(m->pattern_sources[i]);
  free(m->pattern_sources);
  batch_free(&m->batch);
  ratelimit_free(&m->rate);
  eventlog_free(&m->events);
  free(m->label);
  free(m->description);
  free(m->ending_reason);
  free(m->program);
  free(m);
}

/* The spec's patterns compiled under the settings' limits, or NULL with
 * err set (invalid_pattern, limit_exceeded). */
static PatternSet *
monitor_compile(const VigilSettings *settings, const MonitorSpec *spec, VigilError *err)
{
  MatchLimits limits = {
    .max_patterns = (size_t)settings->max_patterns,
    .pattern_max_length = (size_t)settings->pattern_max_length,
    .match_limit = (uint32_t)settings->match_limit,
    .depth_limit = (uint32_t)settings->depth_limit,
  };
  return match_compile(spec->patterns, spec->npatterns, &limits, "patterns", err);
}

/* What proc_spawn is given for spec. */
static ProcSpawnOptions
monitor_proc_options(const VigilSettings *settings, const MonitorSpec *spec)
{
  ProcSpawnOptions opts = {
    .argv = spec->argv,
    .cwd = spec->cwd,
    .dir = spec->dir,
    .search_path = spec->search_path,
    .env_inherit = spec->env_inherit,
    .env_extra = spec->env_extra,
    .stdin_data = spec->stdin_data,
    .stdin_len = spec->stdin_len,
    .memory_limit = spec->memory_limit,
    .cpu_limit = spec->cpu_limit,
    .max_processes = settings->max_processes,
    .exit_drain_ms = settings->exit_drain_ms,
  };
  return opts;
}

/* See monitor.h: monitor_start's steps up to the spawn, in its order. */
int
monitor_check(const VigilSettings *settings, const MonitorSpec *spec, VigilError *err)
{
  if (monitor_validate(settings, spec, err) != 0)
    return -1;
  PatternSet *patterns = monitor_compile(settings, spec, err);
  if (patterns == NULL)
    return -1;
  match_free(patterns);
  ProcSpawnOptions opts = monitor_proc_options(settings, spec);
  char *program = NULL;
  int rc = proc_spawn_check(&opts, &program, err);
  free(program);
  return rc;
}

Monitor *
monitor_start(uv_loop_t *loop, const VigilSettings *settings, const MonitorSpec *spec,
              const MonitorHooks *hooks, void *data, VigilError *err)
{
  if (monitor_validate(settings, spec, err) != 0)
    return NULL;
  PatternSet *patterns = monitor_compile(settings, spec, err);
  if (patterns == NULL)
    return NULL;

  Monitor *m = xcalloc(1, sizeof *m);
  m->loop = loop;
  m->settings = *settings;
  textfmt_monitor_id(m->id);
  m->label = xstrdup(spec->label ? spec->label : m->id);
  m->description = spec->description ? xstrdup(spec->description) : NULL;
  m->state = kMonRunning;
  m->ending = kMonRunning;
  m->mode = spec->mode;
  m->match_streams = spec->match_streams;
  m->notify = spec->notify;
  if (m->notify == kNotifyAuto)
    m->notify = spec->npatterns > 0 ? kNotifyMatches : kNotifyLines;
  if (hooks)
    m->hooks = *hooks;
  m->data = data;
  m->patterns = patterns;
  m->npatterns = spec->npatterns;
  m->pattern_sources = xcalloc(spec->npatterns ? spec->npatterns : 1, sizeof(char *));
  for (size_t i = 0; i < spec->npatterns; i++)
    m->pattern_sources[i] = xstrdup(spec->patterns[i]);
  for (int i = 0; i < 2; i++) {
    m->streams[i].m = m;
    m->streams[i].stream = (StreamId)i;
    linebuf_init(&m->linebuf[i], (size_t)settings->line_max_bytes);
    capture_init(&m->capture[i], (size_t)settings->capture_max_bytes);
  }
  ring_init(&m->ring, (size_t)settings->ring_max_lines, (size_t)settings->ring_max_bytes);
  batch_init(&m->batch, (size_t)settings->batch_max_lines, (size_t)settings->batch_max_bytes,
             (uint64_t)settings->flush_interval_ms);
  ratelimit_init(&m->rate, (size_t)settings->rate_max_notifications,
                 (uint64_t)settings->rate_window_ms, (uint64_t)settings->rate_overload_ms);
  eventlog_init(&m->events, (size_t)settings->event_log_max);
  m->timeout_ms = spec->persistent ? 0
                  : spec->timeout_ms > 0 ? (uint64_t)spec->timeout_ms
                                         : (uint64_t)settings->max_runtime_ms;
  m->idle_timeout_ms = (uint64_t)spec->idle_timeout_ms;

  ProcSpawnOptions opts = monitor_proc_options(settings, spec);
  opts.tag = m->id;
  m->memory_limit = spec->memory_limit;
  ProcCallbacks callbacks = {monitor_on_output, monitor_on_eof, monitor_on_exit};
  if (proc_spawn(loop, &opts, &callbacks, m, &m->proc, err) != 0) {
    monitor_free_parts(m);
    return NULL;
  }
  /* From here on nothing can fail: the callbacks above only run from the loop. */
  m->pid = proc_pid(m->proc);
  /* Shown to callers and logged: a directory name on the way is the
   * caller's, so control bytes and invalid UTF-8 are escaped. */
  StrBuf program = STRBUF_INIT;
  const char *path = proc_program(m->proc);
  textfmt_escape(&program, path, strlen(path));
  m->program = strbuf_take(&program);
  m->started_at = textfmt_now_ms();
  m->started_mono = uv_now(loop);
  m->last_output_mono = m->started_mono;
  uv_timer_t *timers[] = {&m->batch_timer, &m->idle_timer, &m->runtime_timer};
  for (size_t i = 0; i < 3; i++) {
    uv_timer_init(loop, timers[i]);
    timers[i]->data = m;
  }
  m->open_handles = 3;
  m->timers_ready = true;
  if (m->timeout_ms > 0)
    uv_timer_start(&m->runtime_timer, monitor_runtime_timer_cb, m->timeout_ms, 0);
  if (m->idle_timeout_ms > 0)
    uv_timer_start(&m->idle_timer, monitor_idle_timer_cb, m->idle_timeout_ms, 0);
  monitor_event(m, kEventStarted, -1, NULL, 0, false, 0, 0, NULL);
  return m;
}

int
monitor_stop(Monitor *m, int sig, int64_t grace_ms)
{
  if (sig == 0)
    sig = SIGTERM;
  if (grace_ms < 0)
    grace_ms = m->settings.kill_grace_ms;
  if (m->finished || m->ending != kMonRunning || m->proc == NULL)
    return 1;
  char reason[64];
  const char *name = signals_name(sig);
  snprintf(reason, sizeof reason, "stopped by request (%s)", name ? name : "signal");
  /* proc_stop still says "already exited" when the exit is seen but not yet
   * reported (the child is only draining): that is 2 as well. */
  return monitor_terminate(m, kMonStopped, reason, sig, (uint64_t)grace_ms) ? 0 : 2;
}

void
monitor_count_policy_drop(Monitor *m)
{
  m->policy_dropped++;
}

static void
monitor_handle_closed(uv_handle_t *h)
{
  Monitor *m = h->data;
  if (--m->open_handles == 0)
    monitor_free_parts(m);
}

void
monitor_free(Monitor *m)
{
  if (m == NULL)
    return;
  if (m->proc) {
    proc_close(m->proc);
    m->proc = NULL;
  }
  if (!m->timers_ready) {
    monitor_free_parts(m);
    return;
  }
  uv_close((uv_handle_t *)&m->batch_timer, monitor_handle_closed);
  uv_close((uv_handle_t *)&m->idle_timer, monitor_handle_closed);
  uv_close((uv_handle_t *)&m->runtime_timer, monitor_handle_closed);
}

/* --- accessors ---------------------------------------------------------- */

const char *
monitor_id(const Monitor *m)
{
  return m->id;
}

const char *
monitor_label(const Monitor *m)
{
  return m->label;
}

const char *
monitor_description(const Monitor *m)
{
  return m->description;
}

MonitorState
monitor_state(const Monitor *m)
{
  return m->state;
}

bool
monitor_finished(const Monitor *m)
{
  return m->finished;
}

DeliveryMode
monitor_mode(const Monitor *m)
{
  return m->mode;
}

NotifyMode
monitor_notify(const Monitor *m)
{
  return m->notify;
}

pid_t
monitor_pid(const Monitor *m)
{
  return m->pid;
}

const char *
monitor_program(const Monitor *m)
{
  return m->program;
}

int64_t
monitor_started_at(const Monitor *m)
{
  return m->started_at;
}

int64_t
monitor_ended_at(const Monitor *m)
{
  return m->ended_at;
}

uint64_t
monitor_duration_ms(const Monitor *m)
{
  if (m->finished)
    return m->exit.duration_ms;
  return uv_now(m->loop) - m->started_mono;
}

void
monitor_counters(const Monitor *m, MonitorCounters *out)
{
  memset(out, 0, sizeof *out);
  out->lines = m->ring.counters.lines;
  out->matched = m->ring.counters.matched;
  out->unmatched = m->ring.counters.unmatched;
  out->dropped = m->ring.counters.dropped;
  out->suppressed = m->rate.suppressed + m->withheld_lines;
  out->muted = m->muted_lines;
  out->notifications = m->notifications;
  out->stdout_bytes = m->stream_bytes[kStreamStdout];
  out->stderr_bytes = m->stream_bytes[kStreamStderr];
  out->truncated_lines =
      m->linebuf[0].truncated_lines + m->linebuf[1].truncated_lines;
  out->discarded_bytes =
      m->linebuf[0].discarded_bytes + m->linebuf[1].discarded_bytes;
  out->match_errors = match_errors(m->patterns);
  out->capture_evicted = m->capture[0].evicted + m->capture[1].evicted;
  out->events_dropped = m->events.dropped;
  out->policy_dropped = m->policy_dropped;
}

const char *
monitor_reason(const Monitor *m)
{
  return m->finished ? m->ending_reason : NULL;
}

const char *
monitor_exceeded(const Monitor *m)
{
  return m->exceeded;
}

void
monitor_usage(const Monitor *m, ProcExit *out)
{
  if (m->finished) {
    *out = m->exit;
    return;
  }
  proc_usage(m->proc, out);
}

const Ring *
monitor_ring(const Monitor *m)
{
  return &m->ring;
}

const Capture *
monitor_capture(const Monitor *m, StreamId stream)
{
  return &m->capture[stream];
}

const EventLog *
monitor_events(const Monitor *m)
{
  return &m->events;
}

size_t
monitor_pattern_count(const Monitor *m)
{
  return m->npatterns;
}

const char *const *
monitor_pattern_sources(const Monitor *m)
{
  return (const char *const *)m->pattern_sources;
}

void *
monitor_data(const Monitor *m)
{
  return m->data;
}
