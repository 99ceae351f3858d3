/*
 * A monitor's readiness and health (docs/readiness.md; see
 * monitor_internal.h for the module's files). A start may declare how its
 * program says it is ready: a line of its output (ready_log, a regex
 * matched here as each line is read, stdout and stderr alike), a loopback
 * port that accepts a connection (ready_tcp) or a loopback URL whose
 * HTTP/1.1 GET answers with a status in a range (ready_http, ready_status;
 * the attempts are probe.c's). The first answer logs a `ready` event,
 * sets ready_at and sends one notification, "ready after 2.3 s (port 3000
 * answering)"; ready_timeout_ms without one logs `not_ready` and sends
 * "not ready after 30 s" with the output's last lines. Either way the
 * monitor goes on running; a monitor that ends first ends its probes.
 *
 * Attempts are spaced 100 ms, then twice as long each time up to 1 s, and
 * counted; each is bounded by PROBE_ATTEMPT_TIMEOUT_MS (or what is left
 * of ready_timeout_ms, if less).
 *
 * Health: once ready, a tcp or http probe repeats every
 * health_interval_ms (off by default). health_failures failures in a row
 * make the monitor unhealthy and the next answer healthy again; only those
 * changes are logged (a `health` event) and notified, with the last lines,
 * never each probe.
 *
 * Timers exist only while needed: this state, with its two timers, is
 * made for a monitor that declares a probe and goes when its probes are
 * over (ready by a line, not ready, no health probe, or the monitor's
 * end). It frees itself when its timers have closed; after
 * monitor_ready__stop nothing in it touches the monitor.
 */
#include "monitor/monitor_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/memory.h"
#include "base/strbuf.h"
#include "base/textfmt.h"
#include "proc/probe.h"
#include "store/keepspec.h"

#define MONITOR_READY_SPACING_FIRST_MS 100
#define MONITOR_READY_SPACING_MAX_MS 1000

typedef enum {
  kReadyLog = 0,
  kReadyTcp,
  kReadyHttp,
} ReadyKind;

struct MonitorReady {
  Monitor *m;                 /* NULL once stopped */
  ReadyKind kind;
  PatternSet *log;            /* kReadyLog */
  ProbeTarget target;         /* kReadyTcp, kReadyHttp */
  int status_min, status_max;
  uint64_t timeout_ms;
  uint64_t deadline_mono;     /* uv_now at which it is not ready */
  uint64_t health_interval_ms;
  uint64_t health_failures;   /* in a row that make it unhealthy */
  uv_timer_t attempt_timer;   /* the next attempt (readiness or health) */
  uv_timer_t deadline_timer;  /* ready_timeout_ms */
  int open;                   /* timers not yet closed */
  Probe *probe;               /* the attempt under way, or NULL */
  uint64_t attempts;          /* readiness attempts so far */
  uint64_t spacing_ms;        /* the next readiness attempt's delay */
  uint64_t failures;          /* health failures in a row */
  char last_failure[160];     /* the last attempt's failure, in words */
};

/* --- the spec ------------------------------------------------------------- */

/* Parses ready_status ("200..399" or "204") into [*lo, *hi]. */
static int
monitor_ready_status(const char *s, int *lo, int *hi, VigilError *err)
{
  if (s == NULL) {
    *lo = 200;
    *hi = 399;
    return 0;
  }
  int a = 0, b = 0, used = 0;
  if (!((sscanf(s, "%3d..%3d%n", &a, &b, &used) == 2 && s[used] == '\0') ||
        (sscanf(s, "%3d%n", &a, &used) == 1 && s[used] == '\0' && (b = a, 1))) ||
      a < 100 || b > 599 || a > b)
    return error_set(err, kErrInvalidParams,
                     "ready_status: a status or a range of them within 100..599 (\"200..399\", "
                     "\"204\"), got \"%.64s\"", s);
  *lo = a;
  *hi = b;
  return 0;
}

/* See monitor_internal.h. */
int
monitor_ready__check(const VigilSettings *settings, const MonitorSpec *spec, VigilError *err)
{
  int given = (spec->ready_log != NULL) + (spec->ready_tcp != 0) + (spec->ready_http != NULL);
  if (given > 1)
    return error_set(err, kErrInvalidParams,
                     "ready: at most one of ready_log, ready_tcp and ready_http, got %d", given);
  if (spec->ready_timeout_ms < 0 || spec->ready_timeout_ms > MONITOR_READY_TIMEOUT_MAX_MS)
    return error_set(err, kErrInvalidParams, "ready_timeout_ms must be 1..%d, got %" PRId64,
                     MONITOR_READY_TIMEOUT_MAX_MS, spec->ready_timeout_ms);
  if (spec->health_interval_ms != 0 &&
      (spec->health_interval_ms < MONITOR_HEALTH_INTERVAL_MIN_MS ||
       spec->health_interval_ms > MONITOR_HEALTH_INTERVAL_MAX_MS))
    return error_set(err, kErrInvalidParams, "health_interval_ms must be %d..%d, got %" PRId64,
                     MONITOR_HEALTH_INTERVAL_MIN_MS, MONITOR_HEALTH_INTERVAL_MAX_MS,
                     spec->health_interval_ms);
  if (spec->health_failures < 0 || spec->health_failures > MONITOR_HEALTH_FAILURES_MAX)
    return error_set(err, kErrInvalidParams, "health_failures must be 1..%d, got %" PRId64,
                     MONITOR_HEALTH_FAILURES_MAX, spec->health_failures);
  if (spec->health_interval_ms != 0 && spec->ready_tcp == 0 && spec->ready_http == NULL)
    return error_set(err, kErrInvalidParams,
                     "health_interval_ms: needs ready_tcp or ready_http (what to probe), got "
                     "%s", spec->ready_log ? "ready_log" : "neither");
  int lo, hi;
  if (monitor_ready_status(spec->ready_status, &lo, &hi, err) != 0)
    return -1;
  ProbeTarget t;
  if (spec->ready_tcp != 0 &&
      probe_target_tcp(&t, spec->ready_tcp < 0 ? 0 : (uint64_t)spec->ready_tcp, "ready_tcp",
                       err) != 0)
    return -1;
  if (spec->ready_http != NULL && probe_target_http(&t, spec->ready_http, "ready_http", err) != 0)
    return -1;
  if (spec->ready_log != NULL) {
    MatchLimits limits = {
      .max_patterns = 1,
      .pattern_max_length = (size_t)settings->pattern_max_length,
      .match_limit = (uint32_t)settings->match_limit,
      .depth_limit = (uint32_t)settings->depth_limit,
    };
    PatternSet *ps = match_compile(&spec->ready_log, 1, &limits, "ready_log", err);
    if (ps == NULL)
      return -1;
    match_free(ps);
  }
  return 0;
}

/* --- the state's life ----------------------------------------------------- */

static void
monitor_ready_closed(uv_handle_t *h)
{
  MonitorReady *r = h->data;
  if (--r->open == 0) {
    match_free(r->log);
    free(r);
  }
}

/* See monitor_internal.h. */
void
monitor_ready__stop(Monitor *m)
{
  MonitorReady *r = m->ready;
  if (r == NULL)
    return;
  m->ready = NULL;
  r->m = NULL;
  probe_cancel(r->probe);
  r->probe = NULL;
  uv_close((uv_handle_t *)&r->attempt_timer, monitor_ready_closed);
  uv_close((uv_handle_t *)&r->deadline_timer, monitor_ready_closed);
}

/* How long since the program started, in words ("2.3 s"). */
static void
monitor_ready_since(const Monitor *m, StrBuf *out)
{
  uint64_t now = uv_now(m->loop);
  uint64_t since = now > m->started_mono ? now - m->started_mono : 0;
  if (m->run_started_at > 0) {
    int64_t run = clock_now_ms() - m->run_started_at;
    since = run > 0 ? (uint64_t)run : 0;
  }
  if (since < 60000)
    strbuf_printf(out, "%" PRIu64 ".%" PRIu64 " s", since / 1000, (since % 1000) / 100);
  else
    textfmt_duration(out, since);
}

static void monitor_ready_attempt_cb(uv_timer_t *t);

/* The monitor's spec in its directory keeps ready_at, so an engine that
 * takes it over knows it is ready (docs/restart.md). A spec that cannot be
 * rewritten costs only that. */
static void
monitor_ready_edit(const Monitor *m, KeepSpec *ks, const void *ctx)
{
  (void)ctx;
  ks->ready_at_ms = m->ready_at;
}

static void
monitor_ready_respec(Monitor *m)
{
  VigilError err = VIGIL_ERROR_INIT;
  if (!monitor__respec(m, monitor_ready_edit, NULL, &err))
    LOG_WARN("monitor", "%s: its readiness could not be kept in its spec (%s): a restarted "
             "engine would wait for it again", m->id, err.msg);
}

/* The monitor is ready: logged, told, and the probes go on only for its
 * health. */
static void
monitor_ready_reached(MonitorReady *r, const char *why, const RingLine *line)
{
  Monitor *m = r->m;
  m->ready_at = clock_now_ms();
  monitor_ready_respec(m);
  StrBuf words = STRBUF_INIT;
  strbuf_puts(&words, "ready after ");
  monitor_ready_since(m, &words);
  strbuf_printf(&words, " (%s)", why);
  monitor__event(m, kEventReady, -1, line ? line->text : NULL, line ? line->len : 0, false, 0,
                 0, strbuf_cstr(&words));
  /* The lines before it go first, then the news (with the line that said
   * it, framed as every line of the program is). */
  monitor__flush(m);
  monitor__notify_note(m, strbuf_cstr(&words), false, NULL, line);
  LOG_INFO("monitor", "%s: %s", m->id, strbuf_cstr(&words));
  strbuf_free(&words);
  uv_timer_stop(&r->deadline_timer);
  if (r->health_interval_ms == 0 || r->kind == kReadyLog) {
    monitor_ready__stop(m);
    return;
  }
  m->health = "healthy";
  uv_timer_start(&r->attempt_timer, monitor_ready_attempt_cb, r->health_interval_ms, 0);
}

/* ready_timeout_ms passed: logged and told with the last lines; the
 * monitor runs on, unprobed. */
static void
monitor_ready_deadline_cb(uv_timer_t *t)
{
  MonitorReady *r = t->data;
  Monitor *m = r->m;
  if (m == NULL || m->ready_at != 0)
    return;
  StrBuf words = STRBUF_INIT;
  strbuf_puts(&words, "not ready after ");
  monitor_ready_since(m, &words);
  if (r->kind == kReadyLog)
    strbuf_puts(&words, " (no line matched ready_log)");
  else {
    char target[PROBE_URL_MAX + 32];
    probe_target_words(&r->target, target, sizeof target);
    strbuf_printf(&words, " (%s: %" PRIu64 " attempt%s, the last: %s)", target, r->attempts,
                  r->attempts == 1 ? "" : "s",
                  r->last_failure[0] ? r->last_failure : "none finished");
  }
  monitor__event(m, kEventNotReady, -1, NULL, 0, false, 0, 0, strbuf_cstr(&words));
  monitor__flush(m);
  monitor__notify_note(m, strbuf_cstr(&words), true, NULL, NULL);
  LOG_INFO("monitor", "%s: %s", m->id, strbuf_cstr(&words));
  strbuf_free(&words);
  monitor_ready__stop(m);
}

/* A health change: logged (a `health` event) and, with the monitor's
 * incidents on, an incident of its own with the last lines
 * (monitor_signal__health); else told with them as a note. */
static void
monitor_ready_health(MonitorReady *r, const char *state, const char *why)
{
  Monitor *m = r->m;
  m->health = state;
  StrBuf words = STRBUF_INIT;
  char target[PROBE_URL_MAX + 32];
  probe_target_words(&r->target, target, sizeof target);
  bool unhealthy = strcmp(state, "unhealthy") == 0;
  if (unhealthy)
    strbuf_printf(&words, "unhealthy: %" PRIu64 " health probes failed in a row (%s: %s)",
                  r->failures, target, why);
  else
    strbuf_printf(&words, "healthy again (%s: %s)", target, why);
  monitor__event(m, kEventHealth, -1, NULL, 0, false, 0, 0, strbuf_cstr(&words));
  if (m->incidents_on) {
    monitor_signal__health(m, unhealthy ? INCIDENT_HEALTH_UNHEALTHY : INCIDENT_HEALTH_HEALTHY,
                           target, strbuf_cstr(&words));
  } else {
    monitor__flush(m);
    monitor__notify_note(m, strbuf_cstr(&words), true, NULL, NULL);
  }
  LOG_INFO("monitor", "%s: %s", m->id, strbuf_cstr(&words));
  strbuf_free(&words);
}

/* An attempt ended. */
static void
monitor_ready_probe_done(void *data, const ProbeResult *res)
{
  MonitorReady *r = data;
  r->probe = NULL;
  Monitor *m = r->m;
  if (m == NULL)
    return;
  bool ok = res->answered &&
            (r->kind == kReadyTcp || (res->status >= r->status_min && res->status <= r->status_max));
  char why[192];
  if (ok && r->kind == kReadyTcp)
    snprintf(why, sizeof why, "port %u answering", r->target.port);
  else if (res->answered)
    snprintf(why, sizeof why, "HTTP %d", res->status);
  else
    snprintf(why, sizeof why, "%s", res->why);
  if (!ok) {
    if (res->answered)
      snprintf(r->last_failure, sizeof r->last_failure, "HTTP %d, not within %d..%d",
               res->status, r->status_min, r->status_max);
    else
      snprintf(r->last_failure, sizeof r->last_failure, "%s", res->why);
  }
  if (m->ready_at == 0) {
    if (ok) {
      monitor_ready_reached(r, why, NULL);
      return;
    }
    uv_timer_start(&r->attempt_timer, monitor_ready_attempt_cb, r->spacing_ms, 0);
    r->spacing_ms = r->spacing_ms * 2 > MONITOR_READY_SPACING_MAX_MS ? MONITOR_READY_SPACING_MAX_MS
                                                                     : r->spacing_ms * 2;
    return;
  }
  /* Health: only a change is told. */
  if (ok) {
    r->failures = 0;
    if (m->health != NULL && strcmp(m->health, "unhealthy") == 0)
      monitor_ready_health(r, "healthy", why);
  } else if (++r->failures == r->health_failures) {
    monitor_ready_health(r, "unhealthy", r->last_failure);
  }
  uv_timer_start(&r->attempt_timer, monitor_ready_attempt_cb, r->health_interval_ms, 0);
}

/* The next attempt. */
static void
monitor_ready_attempt_cb(uv_timer_t *t)
{
  MonitorReady *r = t->data;
  Monitor *m = r->m;
  if (m == NULL || r->probe != NULL)
    return;
  uint64_t timeout = PROBE_ATTEMPT_TIMEOUT_MS;
  if (m->ready_at == 0) {
    r->attempts++;
    uint64_t now = uv_now(m->loop);
    uint64_t left = r->deadline_mono > now ? r->deadline_mono - now : 1;
    if (left < timeout)
      timeout = left;
  } else if (r->health_interval_ms < timeout) {
    timeout = r->health_interval_ms;
  }
  m->probes++;
  r->probe = probe_attempt(m->loop, &r->target, timeout, monitor_ready_probe_done, r);
}

/* See monitor_internal.h. */
void
monitor_ready__start(Monitor *m, const MonitorSpec *spec)
{
  m->ready_declared = spec->ready_log != NULL || spec->ready_tcp != 0 || spec->ready_http != NULL;
  m->ready_at = spec->ready_at;
  if (!m->ready_declared)
    return;
  bool probed = spec->ready_log == NULL;
  /* Taken over after it was ready: only its health is still probed. */
  if (m->ready_at != 0 && (!probed || spec->health_interval_ms == 0))
    return;
  MonitorReady *r = xcalloc(1, sizeof *r);
  r->m = m;
  VigilError err = VIGIL_ERROR_INIT;
  /* Checked at the start (monitor_ready__check): these cannot fail here. */
  if (spec->ready_log != NULL) {
    r->kind = kReadyLog;
    MatchLimits limits = {1, (size_t)m->settings.pattern_max_length,
                          (uint32_t)m->settings.match_limit, (uint32_t)m->settings.depth_limit};
    r->log = match_compile(&spec->ready_log, 1, &limits, "ready_log", &err);
  } else if (spec->ready_tcp != 0) {
    r->kind = kReadyTcp;
    probe_target_tcp(&r->target, (uint64_t)spec->ready_tcp, "ready_tcp", &err);
  } else {
    r->kind = kReadyHttp;
    probe_target_http(&r->target, spec->ready_http, "ready_http", &err);
  }
  monitor_ready_status(spec->ready_status, &r->status_min, &r->status_max, &err);
  r->timeout_ms = spec->ready_timeout_ms > 0 ? (uint64_t)spec->ready_timeout_ms
                                             : MONITOR_READY_TIMEOUT_DEFAULT_MS;
  r->health_interval_ms = probed ? (uint64_t)spec->health_interval_ms : 0;
  r->health_failures = spec->health_failures > 0 ? (uint64_t)spec->health_failures
                                                 : MONITOR_HEALTH_FAILURES_DEFAULT;
  r->spacing_ms = MONITOR_READY_SPACING_FIRST_MS;
  uv_timer_init(m->loop, &r->attempt_timer);
  uv_timer_init(m->loop, &r->deadline_timer);
  r->attempt_timer.data = r;
  r->deadline_timer.data = r;
  r->open = 2;
  m->ready = r;
  if (err.set || (r->kind == kReadyLog && r->log == NULL)) {
    LOG_WARN("monitor", "%s: its readiness cannot be probed (%s)", m->id, err.msg);
    monitor_ready__stop(m);
    return;
  }
  if (m->ready_at != 0) {
    m->health = "healthy";
    uv_timer_start(&r->attempt_timer, monitor_ready_attempt_cb, r->health_interval_ms, 0);
    return;
  }
  r->deadline_mono = m->started_mono + r->timeout_ms;
  uint64_t now = uv_now(m->loop);
  uv_timer_start(&r->deadline_timer, monitor_ready_deadline_cb,
                 r->deadline_mono > now ? r->deadline_mono - now : 0, 0);
  if (probed)
    uv_timer_start(&r->attempt_timer, monitor_ready_attempt_cb, 0, 0);
}

/* See monitor_internal.h. */
void
monitor_ready__line(Monitor *m, const RingLine *line)
{
  MonitorReady *r = m->ready;
  if (r == NULL || r->kind != kReadyLog || m->ready_at != 0)
    return;
  if (match_line(r->log, line->text, line->len) < 0)
    return;
  monitor_ready_reached(r, "a line matched ready_log", line);
}

/* --- accessors ------------------------------------------------------------ */

/* See monitor.h. */
int64_t
monitor_ready_at(const Monitor *m)
{
  return m->ready_at;
}

/* See monitor.h. */
bool
monitor_ready_declared(const Monitor *m)
{
  return m->ready_declared;
}

/* See monitor.h. */
const char *
monitor_health(const Monitor *m)
{
  return m->health;
}

/* See monitor.h. */
uint64_t
monitor_probes(const Monitor *m)
{
  return m->probes;
}
