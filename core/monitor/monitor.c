/*
 * One monitored process, from start to its ending notification: its
 * lifecycle (see monitor_internal.h for the module's other files). Every
 * check runs before the spawn, so a refused start leaves no process and no
 * monitor; from the spawn on nothing can fail, and the callbacks given to
 * proc.c (monitor_intake.c, monitor_ending.c) run only from the loop.
 *
 * Timers: four uv timers (the batch window, the signal stage's, the idle
 * timeout, the runtime cap) are initialised at start, but each is armed only
 * while its thing is pending (an open batch, an idle timeout, a runtime cap),
 * so a quiet monitor without timeouts never wakes the loop. They are closed
 * by monitor_free, and the memory goes with the last close callback.
 */
#include "monitor/monitor_internal.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/keepspec.h"
#include "base/log.h"
#include "base/memory.h"
#include "base/signals.h"
#include "base/strbuf.h"
#include "base/clock.h"
#include "pipeline/eventkeep.h"
#include "pipeline/crashpatterns.h"
#include "base/random.h"
#include "base/textfmt.h"

/* --- what it tells its owner --------------------------------------------- */

/* See monitor_internal.h. */
void
monitor__emit(Monitor *m, Notification *n)
{
  n->at_ms = clock_now_ms();
  m->notifications++;
  /* The checkpoint stored right after this is told goes with it into its
   * session's journal: a crash between the two tells it once. */
  n->has_checkpoint = monitor__checkpoint_values(m, n->checkpoint);
  if (m->hooks.on_notification)
    m->hooks.on_notification(m->data, m, n);
  else
    notification_free(n);
  monitor__checkpoint(m); /* what it covered is told now */
}

/* Writes an event just logged into the monitor's directory, if it has
 * one; says once in the log when that stopped (eventkeep.h). */
static void
monitor_keep_event(Monitor *m, const Event *ev)
{
  if (m->keep == NULL ||
      eventkeep_put(&m->keep->events, ev, m->ring.next_seq, &m->events) ||
      m->events_unkept_told || m->keep->events.why[0] == '\0')
    return;
  m->events_unkept_told = true;
  LOG_WARN("state", "monitor %s: its event log can no longer be kept in the state directory "
           "(%s): from event %" PRIu64 " on it is in memory only, counted in "
           "state_unkept_events, and an engine restart would start it anew; the monitor goes "
           "on", m->id, m->keep->events.why, ev != NULL ? ev->id : 0);
}

/* See monitor_internal.h. */
void
monitor__event_ex(Monitor *m, EventType type, int pattern, const char *line, size_t line_len,
                 bool has_exit_code, int exit_code, int sig, const char *reason,
                 const char *exceeded)
{
  const Event *ev = eventlog_add(&m->events, type, clock_now_ms(), pattern, line, line_len,
                                 has_exit_code, exit_code, sig, reason);
  if (exceeded != NULL)
    ev = eventlog_set_exceeded(&m->events, exceeded);
  monitor_keep_event(m, ev);
  if (m->hooks.on_event)
    m->hooks.on_event(m->data, m, ev);
}

/* See monitor_internal.h. */
void
monitor__event_incident(Monitor *m, EventType type, int pattern, const char *line,
                       size_t line_len, const char *reason, const NoteIncident *inc,
                       uint64_t lines)
{
  eventlog_add(&m->events, type, clock_now_ms(), pattern, line, line_len, false, 0, 0, reason);
  const Event *ev = eventlog_set_incident(&m->events, inc->id, inc->fingerprint, inc->kind,
                                          lines, inc->repeats, inc->repeat_span_ms);
  monitor_keep_event(m, ev);
  if (m->hooks.on_event)
    m->hooks.on_event(m->data, m, ev);
}

/* See monitor_internal.h. */
void
monitor__event(Monitor *m, EventType type, int pattern, const char *line, size_t line_len,
              bool has_exit_code, int exit_code, int sig, const char *reason)
{
  monitor__event_ex(m, type, pattern, line, line_len, has_exit_code, exit_code, sig, reason, NULL);
}

/* --- start, stop, free -------------------------------------------------- */

/* Checks what the monitor itself relies on. What a caller may give (the
 * label's and description's length and text, argv[0], the choices) is
 * checked once, where a request is read (monitor_fields.c); this keeps only
 * the invariants a direct caller of monitor_start could still break, and
 * the settings. */
static int
monitor_validate(const VigilSettings *s, const MonitorSpec *spec, VigilError *err)
{
  if (monitor_source__given(spec) && spec->argv != NULL)
    return error_set(err, kErrInvalidParams, "source: a source runs no command");
  if (spec->source_file != NULL && spec->source_ws != NULL)
    return error_set(err, kErrInvalidParams, "source: one of file and ws, got both");
  if (!monitor_source__given(spec) && (spec->argv == NULL || spec->argv[0] == NULL))
    return error_set(err, kErrInvalidParams, "command: empty command");
  if (spec->idle_timeout_ms < 0 || spec->idle_timeout_ms > MONITOR_IDLE_TIMEOUT_MAX_MS)
    return error_set(err, kErrInvalidParams, "idle_timeout_ms must be 0..%d, got %" PRId64,
                     MONITOR_IDLE_TIMEOUT_MAX_MS, spec->idle_timeout_ms);
  if (spec->quiet_after_ms != 0 && (spec->quiet_after_ms < MONITOR_QUIET_AFTER_MIN_MS ||
                                    spec->quiet_after_ms > MONITOR_QUIET_AFTER_MAX_MS))
    return error_set(err, kErrInvalidParams, "quiet_after_ms must be 0 or %d..%d, got %" PRId64,
                     MONITOR_QUIET_AFTER_MIN_MS, MONITOR_QUIET_AFTER_MAX_MS,
                     spec->quiet_after_ms);
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
  if (monitor_ready__check(s, spec, err) != 0)
    return -1;
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
  batch_free(&m->batch);
  ratelimit_free(&m->rate);
  eventlog_free(&m->events);
  assembler_free(&m->assembler);
  coalesce_free(&m->coalescer);
  incidentlog_free(&m->history);
  if (m->keep != NULL) {
    monitor_keep_close(m->keep);
    free(m->keep);
  }
  monitor_restart__free(m);
  free(m->label);
  free(m->description);
  free(m->ending_reason);
  free(m->program);
  free(m->file_path);
  free(m->ws_url);
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
  if (spec->builtin_patterns) {
    /* The built-in set is the engine's own: the caller's bounds on patterns
     * do not apply to it (crashpatterns.c's test keeps it within 32). */
    limits.max_patterns = crashpatterns_count();
    limits.pattern_max_length = 65536;
    return match_compile(crashpatterns_sources(), crashpatterns_count(), &limits, "patterns",
                         err);
  }
  return match_compile(spec->patterns, spec->npatterns, &limits, "patterns", err);
}

/* The built-in set kept compiled (monitor_builtin_keep), or NULL. */
static PatternSet *monitor_builtin_kept;

/* See monitor.h. The new set is compiled before the old is let go, so
 * that unchanged limits share the compile already there. */
void
monitor_builtin_keep(const VigilSettings *settings)
{
  MonitorSpec spec;
  memset(&spec, 0, sizeof spec);
  spec.builtin_patterns = true;
  VigilError err = VIGIL_ERROR_INIT;
  PatternSet *now = monitor_compile(settings, &spec, &err);
  if (now == NULL)
    LOG_WARN("monitor", "the built-in patterns do not compile: %s", err.msg);
  match_free(monitor_builtin_kept);
  monitor_builtin_kept = now;
}

/* See monitor.h. */
void
monitor_builtin_release(void)
{
  match_free(monitor_builtin_kept);
  monitor_builtin_kept = NULL;
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
    .line_buffered = spec->line_buffered,
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
  if (monitor_source__given(spec))
    return monitor_source__check(spec, err);
  ProcSpawnOptions opts = monitor_proc_options(settings, spec);
  char *program = NULL;
  int rc = proc_spawn_check(&opts, &program, err);
  free(program);
  return rc;
}

/* monitor_start's and monitor_adopt's first half: the spec checked, the
 * patterns compiled, the Monitor made with everything but its process and
 * timers. NULL with err set. */
static Monitor *
monitor_new(uv_loop_t *loop, const VigilSettings *settings, const MonitorSpec *spec,
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
  random_monitor_id(m->id);
  m->label = xstrdup(spec->label ? spec->label : m->id);
  m->description = spec->description ? xstrdup(spec->description) : NULL;
  m->state = kMonRunning;
  m->ending = kMonRunning;
  m->mode = spec->mode;
  m->match_streams = spec->match_streams;
  m->builtin_patterns = spec->builtin_patterns;
  size_t nsources = match_count(patterns);
  m->notify = spec->notify;
  if (m->notify == kNotifyAuto)
    m->notify = nsources > 0 ? kNotifyMatches : kNotifyLines;
  if (hooks)
    m->hooks = *hooks;
  m->data = data;
  m->patterns = patterns;
  m->npatterns = nsources;
  m->pattern_sources = match_sources(patterns);
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
  monitor_signal__init(m, spec);
  m->timeout_ms = spec->persistent ? 0
                  : spec->timeout_ms > 0 ? (uint64_t)spec->timeout_ms
                                         : (uint64_t)settings->max_runtime_ms;
  m->idle_timeout_ms = (uint64_t)spec->idle_timeout_ms;
  m->quiet_after_ms = (uint64_t)spec->quiet_after_ms;
  m->memory_limit = spec->memory_limit;
  return m;
}

/* monitor_start's and monitor_adopt's second half, once m has its
 * process: its program's name, its times, its timers (the runtime cap
 * counted from started_at, which an adopted monitor had before). */
static void
monitor_begin(Monitor *m, uv_loop_t *loop, int64_t started_at)
{
  m->pid = m->proc != NULL ? proc_pid(m->proc) : 0;
  /* Shown to callers and logged: a directory name on the way is the
   * caller's, so control bytes and invalid UTF-8 are escaped. A file
   * source's "program" is the file it follows. */
  StrBuf program = STRBUF_INIT;
  const char *path = m->proc != NULL ? proc_program(m->proc) : monitor_source__name(m);
  textfmt_escape(&program, path, strlen(path));
  m->program = strbuf_take(&program);
  m->started_at = started_at;
  /* The loop's cached time is as old as this turn: compiling the patterns
   * (the built-in set takes milliseconds) and the spawn have passed since.
   * The runtime cap and the idle timeout count from now. */
  uv_update_time(loop);
  int64_t age = clock_now_ms() - started_at;
  uint64_t age_ms = age > 0 ? (uint64_t)age : 0;
  m->started_mono = uv_now(loop) > age_ms ? uv_now(loop) - age_ms : 0;
  m->last_output_mono = uv_now(loop);
  uv_timer_t *timers[] = {&m->batch_timer, &m->runtime_timer, &m->signal_timer};
  size_t ntimers = sizeof timers / sizeof timers[0];
  for (size_t i = 0; i < ntimers; i++) {
    uv_timer_init(loop, timers[i]);
    timers[i]->data = m;
  }
  m->open_handles += (int)ntimers;
  m->timers_ready = true;
  if (m->timeout_ms > 0)
    uv_timer_start(&m->runtime_timer, monitor__runtime_timer_cb,
                   m->timeout_ms > age_ms ? m->timeout_ms - age_ms : 1, 0);
  if (m->idle_timeout_ms > 0)
    uv_timer_start(monitor__timer(m, &m->idle_timer), monitor__idle_timer_cb, m->idle_timeout_ms,
                   0);
  monitor_quiet__arm(m);
}

/* See monitor.h. */
Monitor *
monitor_start(uv_loop_t *loop, const VigilSettings *settings, const MonitorSpec *spec,
              const MonitorHooks *hooks, void *data, VigilError *err)
{
  Monitor *m = monitor_new(loop, settings, spec, hooks, data, err);
  if (m == NULL)
    return NULL;
  if (monitor_source__given(spec)) {
    /* No process, no keeper: the source is the stream (monitor_source.c). */
    if (monitor_source__open(m, spec, err) != 0) {
      monitor_free_parts(m);
      return NULL;
    }
    monitor_restart__init(m, spec, NULL);
    monitor_begin(m, loop, clock_now_ms());
    monitor__event(m, kEventStarted, -1, NULL, 0, false, 0, 0, NULL);
    return m;
  }
  ProcSpawnOptions opts = monitor_proc_options(settings, spec);
  opts.tag = m->id;
  ProcKeeperOptions keeper;
  if (spec->keeper_program != NULL) {
    /* The capture goes to spools in the monitor's directory, which its
     * keeper goes on filling if the engine dies. */
    m->keep = xcalloc(1, sizeof *m->keep);
    if (monitor_keep_open(m->keep, spec->monitors_fd, m->id,
                          (uint64_t)settings->capture_max_bytes, err) != 0) {
      free(m->keep);
      m->keep = NULL;
      monitor_free_parts(m);
      return NULL;
    }
    for (int i = 0; i < 2; i++)
      capture_use_spool(&m->capture[i], &m->keep->spool[i]);
    /* Its event log too; a monitor whose log cannot be kept goes on. */
    if (!eventkeep_open(&m->keep->events, m->keep->dir_fd,
                        eventlog_slots((size_t)settings->event_log_max), true))
      LOG_WARN("state", "monitor %s: its event log cannot be kept in its directory; a restart "
               "would start it anew", m->id);
    keeper = (ProcKeeperOptions){spec->keeper_program, m->keep->dir_fd, m->keep->listen_fd,
                                 settings->keeper_unattended_ms, settings->kill_grace_ms};
    opts.keeper = &keeper;
  }
  ProcCallbacks callbacks = {monitor__on_output, monitor__on_eof, monitor__on_exit,
                             monitor__on_start, monitor__on_launched};
  if (proc_spawn(loop, &opts, &callbacks, m, &m->proc, err) != 0) {
    monitor_free_parts(m);
    return NULL;
  }
  if (m->keep != NULL) {
    /* The keeper holds the listening socket now; the engine never accepts. */
    close(m->keep->listen_fd);
    m->keep->listen_fd = -1;
  }
  /* From here on nothing can fail: the callbacks above only run from the loop. */
  monitor_restart__init(m, spec, proc_program(m->proc));
  monitor_begin(m, loop, clock_now_ms());
  /* Through a keeper the child's pid comes with the keeper's hello, read
   * from the loop (monitor__on_start): the start is told then. */
  m->starting = proc_starting(m->proc);
  if (!m->starting)
    monitor__event(m, kEventStarted, -1, NULL, 0, false, 0, 0, NULL);
  monitor_ready__start(m, spec);
  return m;
}

/* See monitor_internal.h. A first start's failure is the caller's to
 * answer (on_started, then monitor_free); a restart's ends the monitor. */
void
monitor__on_start(void *data, const VigilError *err)
{
  Monitor *m = data;
  bool first = m->starting;
  m->starting = false;
  if (err != NULL) {
    if (first) {
      /* Its directory goes now, before the start is answered: whoever
       * reads the answer finds nothing left (the rest of m goes with
       * monitor_free, a loop turn later). */
      if (m->keep != NULL)
        monitor_keep_close(m->keep);
      if (m->hooks.on_started != NULL)
        m->hooks.on_started(m->data, m, err);
      return;
    }
    proc_close(m->proc);
    m->proc = NULL;
    m->pid = 0;
    monitor_restart__fail(m, err);
    return;
  }
  m->pid = proc_pid(m->proc);
  if (m->keep != NULL)
    monitor_restart__respec(m, true); /* the pid and keeper a later engine takes over */
  monitor__event(m, kEventStarted, -1, NULL, 0, false, 0, 0, NULL);
  if (first && m->hooks.on_started != NULL)
    m->hooks.on_started(m->data, m, NULL);
}

/* See monitor.h. */
Monitor *
monitor_adopt(uv_loop_t *loop, const VigilSettings *settings, const MonitorSpec *spec,
              const char *id, int64_t started_at, MonitorKeep *keep, ProcAdoptOptions *po,
              const MonitorHooks *hooks, void *data, VigilError *err)
{
  if (strlen(id) >= sizeof ((Monitor *)0)->id) {
    proc_adopt_discard(po);
    error_set(err, kErrInvalidParams, "spec: id: at most %zu characters, got %zu",
              sizeof ((Monitor *)0)->id - 1, strlen(id));
    return NULL;
  }
  Monitor *m = monitor_new(loop, settings, spec, hooks, data, err);
  if (m == NULL) {
    proc_adopt_discard(po);
    return NULL;
  }
  snprintf(m->id, sizeof m->id, "%s", id);
  if (spec->label == NULL) {
    free(m->label);
    m->label = xstrdup(m->id);
  }
  ProcCallbacks callbacks = {monitor__on_output, monitor__on_eof, monitor__on_exit, NULL, NULL};
  po->tag = m->id;
  if (proc_adopt(loop, po, &callbacks, m, &m->proc, err) != 0) {
    monitor_free_parts(m);
    return NULL;
  }
  /* A keeper that could not be reached leaves a monitor that failed: its
   * ending says why (proc_adopt reports it ended). */
  if (po->lost[0] != '\0') {
    m->ending = kMonFailed;
    m->ending_reason = xstrdup(po->lost);
  }
  monitor_restart__init(m, spec, po->program);
  /* The spools are its capture, as they were its first engine's. */
  m->keep = keep;
  for (int i = 0; i < 2; i++)
    capture_use_spool(&m->capture[i], &keep->spool[i]);
  monitor_begin(m, loop, started_at);
  /* Its events up to the checkpoint (what comes after is logged again by
   * the replay); without them the log starts anew, saying so. */
  uint64_t until = keep->ckpt != NULL ? keep->ckpt->ring_next_seq : 0;
  if (!eventkeep_open(&keep->events, keep->dir_fd,
                      eventlog_slots((size_t)settings->event_log_max), false) ||
      eventkeep_restore(&keep->events, &m->events, until) == 0)
    monitor__event(m, kEventStarted, -1, NULL, 0, false, 0, 0, NULL);
  monitor_quiet__adopted(m);
  monitor_ready__start(m, spec);
  return m;
}

/* See monitor.h. */
MonitorStopResult
monitor_stop(Monitor *m, int sig, int64_t grace_ms)
{
  if (sig == 0)
    sig = SIGTERM;
  if (grace_ms < 0)
    grace_ms = m->settings.kill_grace_ms;
  char reason[64];
  const char *name = signals_name(sig);
  snprintf(reason, sizeof reason, "stopped by request (%s)", name ? name : "signal");
  /* proc_stop still says "already exited" when the exit is seen but not yet
   * reported (the child is only draining): that is kMonitorStopExited too. */
  return monitor__terminate(m, kMonStopped, reason, sig,
                           grace_ms == MONITOR_GRACE_NEVER ? PROC_GRACE_NEVER : (uint64_t)grace_ms);
}

/* Close callback of the timers: frees the monitor after the last one. */
static void
monitor_handle_closed(uv_handle_t *h)
{
  Monitor *m = h->data;
  if (--m->open_handles == 0)
    monitor_free_parts(m);
}

/* Close callback of a timer made by monitor__timer: frees it too. */
static void
monitor_lazy_timer_closed(uv_handle_t *h)
{
  Monitor *m = h->data;
  free(h);
  if (--m->open_handles == 0)
    monitor_free_parts(m);
}

/* See monitor_internal.h. */
uv_timer_t *
monitor__timer(Monitor *m, uv_timer_t **slot)
{
  if (*slot == NULL) {
    uv_timer_t *t = xmalloc(sizeof *t);
    uv_timer_init(m->loop, t);
    t->data = m;
    m->open_handles++;
    *slot = t;
  }
  return *slot;
}

/* See monitor_internal.h. */
void
monitor__timer_stop(uv_timer_t *t)
{
  if (t != NULL)
    uv_timer_stop(t);
}

/* See monitor.h. */
void
monitor_free(Monitor *m)
{
  if (m == NULL)
    return;
  if (m->proc) {
    proc_close(m->proc);
    m->proc = NULL;
  }
  monitor_source__close(m);
  monitor_ready__stop(m);
  if (m->open_handles == 0) {
    monitor_free_parts(m);
    return;
  }
  if (m->timers_ready) {
    uv_close((uv_handle_t *)&m->batch_timer, monitor_handle_closed);
    uv_close((uv_handle_t *)&m->runtime_timer, monitor_handle_closed);
    uv_close((uv_handle_t *)&m->signal_timer, monitor_handle_closed);
  }
  uv_timer_t *lazy[] = {m->idle_timer, m->restart_timer, m->quiet_timer};
  for (size_t i = 0; i < sizeof lazy / sizeof *lazy; i++)
    if (lazy[i] != NULL)
      uv_close((uv_handle_t *)lazy[i], monitor_lazy_timer_closed);
}

/* --- accessors ---------------------------------------------------------- */

/* See monitor.h for each. */

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

bool
monitor_incidents_on(const Monitor *m)
{
  return m->incidents_on;
}

EnvelopeStyle
monitor_envelope(const Monitor *m)
{
  return m->envelope;
}

pid_t
monitor_pid(const Monitor *m)
{
  return m->pid;
}

bool
monitor_starting(const Monitor *m)
{
  return m->starting;
}

uint64_t
monitor_restarts(const Monitor *m)
{
  return m->restarts;
}

RestartPolicy
monitor_restart_policy(const Monitor *m)
{
  return m->restart;
}

bool
monitor_restart_wait(const Monitor *m, uint64_t *in_ms)
{
  if (!m->restart_pending || m->ending != kMonRunning)
    return false;
  uint64_t now = uv_now(m->loop);
  *in_ms = m->restart_due_mono > now ? m->restart_due_mono - now : 0;
  return true;
}

int64_t
monitor_run_started_at(const Monitor *m)
{
  return m->run_started_at != 0 ? m->run_started_at : m->started_at;
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
  out->suppressed = m->rate.withheld_total + m->withheld_lines;
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
  out->incidents = m->incidents_total;
  out->incidents_coalesced = m->coalescer.coalesced_total;
  out->incidents_withheld = m->incidents_withheld_total;
  out->incidents_dropped = m->incidents_dropped_total;
  out->incidents_ignored = m->incidents_ignored_total;
  out->incidents_forgotten = m->history.dropped;
  out->fingerprints_evicted = m->coalescer.evicted;
  out->state_unkept_bytes = m->capture[0].state_unkept + m->capture[1].state_unkept;
  out->state_unkept_events = m->keep != NULL ? m->keep->events.unkept : 0;
}

const IncidentRecord *
monitor_incident(const Monitor *m, uint64_t id)
{
  return incidentlog_find(&m->history, id);
}

size_t
monitor_incident_history_max(const Monitor *m)
{
  return m->history.max;
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
  if (m->finished || m->proc == NULL) { /* ended, or a restart waits: the last run's */
    *out = m->exit;
    return;
  }
  proc_usage(m->proc, out);
}

/* See monitor.h. */
void
monitor_members(const Monitor *m, ReaperTable *procs, PidList *out)
{
  if (m->proc != NULL && !m->finished)
    proc_members(m->proc, procs, out);
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
  return m->pattern_sources;
}

const char *
monitor_pattern_label(const Monitor *m, size_t index)
{
  if (index >= m->npatterns)
    return NULL;
  if (m->builtin_patterns)
    return crashpatterns_get(index)->name;
  return m->pattern_sources[index];
}

void *
monitor_data(const Monitor *m)
{
  return m->data;
}

/* The running program's keeper (and its pid: 0 until the hello) in the
 * spec. */
static void
monitor_launched_edit(const Monitor *m, KeepSpec *ks, const void *ctx)
{
  (void)ctx;
  ks->pid = m->pid;
  ks->keeper = proc_keeper_pid(m->proc);
}

/* See monitor_internal.h. The spec was written when the start was made,
 * before its keeper had a pid (it is launched off the loop, proc_spawn):
 * a later engine takes over only the keeper its spec names, so it is
 * named as soon as it runs. A spec not written yet (the launch answered
 * inside the start) gets it from its first write. */
void
monitor__on_launched(void *data)
{
  Monitor *m = data;
  if (m->keep == NULL || !m->spec_kept)
    return;
  VigilError err = VIGIL_ERROR_INIT;
  if (!monitor__respec(m, monitor_launched_edit, NULL, &err))
    LOG_WARN("monitor", "%s: its spec could not name its keeper (%s): a restarted engine "
             "will not take it over", m->id, err.msg);
}

/* See monitor_internal.h. */
bool
monitor__respec(Monitor *m, void (*edit)(const Monitor *m, KeepSpec *ks, const void *ctx),
                const void *ctx, VigilError *err)
{
  if (m->keep == NULL)
    return true;
  KeepSpec ks;
  if (keepspec_read(m->keep->dir_fd, &ks, err) != 0)
    return false;
  edit(m, &ks, ctx);
  int rc = keepspec_write(m->keep->dir_fd, &ks, err);
  keepspec_free(&ks);
  return rc == 0;
}

/* See monitor.h. */
void
monitor_keep_spec(Monitor *m, const MonitorSpec *spec, const char *session, bool anonymous,
                  const char *group, const char *policy, const char *start, size_t start_len)
{
  if (m->keep == NULL)
    return;
  KeepSpec ks = {
    .id = m->id,
    .session = (char *)session,
    .session_anonymous = anonymous,
    .label = m->label,
    .description = m->description,
    .policy = (char *)policy,
    .group = (char *)group,
    .argv = (char **)spec->argv,
    .program = (char *)proc_program(m->proc),
    .cwd = spec->dir != NULL ? spec->dir->path : (char *)"/",
    .patterns = (char **)(spec->builtin_patterns ? NULL : spec->patterns),
    .builtin_patterns = spec->builtin_patterns,
    .incidents = spec->incidents,
    .envelope = (int)spec->envelope,
    .match_streams = (int)spec->match_streams,
    .notify = (int)spec->notify,
    .mode = (int)spec->mode,
    .timeout_ms = (int64_t)m->timeout_ms,
    .idle_timeout_ms = spec->idle_timeout_ms,
    .quiet_after_ms = spec->quiet_after_ms,
    .memory_limit = spec->memory_limit,
    .cpu_limit = spec->cpu_limit,
    .env = (char **)spec->env_extra,
    .restart = (int)m->restart,
    .max_restarts = (int64_t)m->max_restarts,
    .restart_backoff_ms = (int64_t)m->restart_backoff_ms,
    .restarts = (int64_t)m->restarts,
    .restarts_in_row = (int64_t)m->restarts_in_row,
    .started_at_ms = m->started_at,
    .pid = m->pid,
    .keeper = proc_keeper_pid(m->proc),
    .settings = m->settings,
    .start = (char *)start,
    .start_len = start_len,
    .ready_log = (char *)spec->ready_log,
    .ready_http = (char *)spec->ready_http,
    .ready_status = (char *)spec->ready_status,
    .ready_tcp = spec->ready_tcp,
    .ready_timeout_ms = spec->ready_timeout_ms,
    .health_interval_ms = spec->health_interval_ms,
    .health_failures = spec->health_failures,
    .ready_at_ms = m->ready_at,
  };
  /* The patterns as a NULL-terminated list (the spec gives a count). */
  char **patterns = NULL;
  if (!spec->builtin_patterns) {
    patterns = xcalloc(spec->npatterns + 1, sizeof *patterns);
    for (size_t i = 0; i < spec->npatterns; i++)
      patterns[i] = (char *)spec->patterns[i];
    ks.patterns = patterns;
  }
  VigilError err = VIGIL_ERROR_INIT;
  if (keepspec_write(m->keep->dir_fd, &ks, &err) != 0)
    LOG_WARN("monitor", "%s: its spec could not be kept (%s): a restarted engine will not "
             "take it over", m->id, err.msg);
  else
    m->spec_kept = true;
  free(patterns);
}
