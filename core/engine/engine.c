/*
 * The engine: the configuration in force, the policies, the sessions, the
 * clients and the monitor records (see engine.h). A start's checks are in
 * engine_start.c; here a checked start becomes a record, a record's
 * monitor reports through MonitorHooks (its notifications go to deliver.c,
 * the rest up to the front end's EngineHooks), and sessions, reloads and
 * shutdown change what the records belong to.
 */
#include "engine/engine.h"
#include "engine/engine_internal.h"
#include "engine/engine_start.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc/childenv.h"
#include "base/clock.h"
#include "base/datadir.h"
#include "engine/deliver.h"
#include "base/log.h"
#include "base/memory.h"
#include "policy/policy.h"
#include "session/session_ignore.h"

static void engine_maybe_drained(Engine *e);

/* --- monitor hooks ------------------------------------------------------ */

/* A monitor's notification goes through the delivery stage (deliver.c) to
 * its session, or is dropped when the session is gone and the monitor is
 * only stopping. */
static void
engine_on_notification(void *data, Monitor *m, Notification *n)
{
  MonRecord *r = data;
  Engine *e = r->engine;
  if (r->session == NULL) {
    notification_free(n);
    return;
  }
  DeliverTarget target = {e->policies, r->policy, e->config.live_mode_enabled};
  deliver_notification(&target, m, r->session, n);
}

/* Tells the front end that r leaves its session, if anything waits on it. */
static void
engine_forget_watchers(MonRecord *r)
{
  Engine *e = r->engine;
  if (r->watchers && e->hooks)
    e->hooks->on_forget(e->hooks_ctx, r);
}

static void
engine_on_event(void *data, Monitor *m, const Event *ev)
{
  MonRecord *r = data;
  Engine *e = r->engine;
  if (r->watchers && e->hooks)
    e->hooks->on_event(e->hooks_ctx, r, ev);
}

/* Forgets r: unlinks it and frees its monitor. Waiters were answered. */
static void
engine_record_free(MonRecord *r)
{
  Engine *e = r->engine;
  engine_forget_watchers(r);
  if (r->prev)
    r->prev->next = r->next;
  else
    e->records = r->next;
  if (r->next)
    r->next->prev = r->prev;
  if (r->running)
    e->running--;
  monitor_free(r->monitor);
  free(r->policy);
  free(r->start);
  free(r->group);
  free(r);
}

/* Keeps at most max_ended_monitors ended records per session: forgets the
 * oldest beyond that (the list is newest first, so the last match is the
 * oldest). */
static void
engine_trim_ended(Engine *e, Session *s)
{
  for (;;) {
    size_t ended = 0;
    MonRecord *oldest = NULL;
    for (MonRecord *r = e->records; r; r = r->next) {
      if (r->session == s && !r->running) {
        ended++;
        oldest = r;
      }
    }
    if (ended <= (size_t)e->config.settings.max_ended_monitors)
      return;
    engine_record_free(oldest);
  }
}

static void
engine_on_finished(void *data, Monitor *m)
{
  MonRecord *r = data;
  Engine *e = r->engine;
  r->running = false;
  e->running--;
  if (e->hooks)
    e->hooks->on_finished(e->hooks_ctx, r);
  if (r->session == NULL) {
    engine_record_free(r); /* its session is gone: nobody can see it */
  } else {
    engine_trim_ended(e, r->session);
  }
  engine_maybe_drained(e);
}

/* New lines: only monitor_wait {for: "output"} cares, and only if someone
 * waits (the check is one pointer per read). */
static void
engine_on_lines(void *data, Monitor *m)
{
  MonRecord *r = data;
  Engine *e = r->engine;
  if (r->watchers && e->hooks)
    e->hooks->on_lines(e->hooks_ctx, r);
}

/* An incident's fingerprint is looked up in its session's ignores
 * (session_ignore.h); a monitor whose session is gone silences nothing. */
static bool
engine_is_ignored(void *data, Monitor *m, uint64_t fp)
{
  MonRecord *r = data;
  (void)m;
  if (r->session == NULL || !session_ignore_hit(r->session, fp, clock_now_ms()))
    return false;
  r->engine->incidents_ignored++;
  return true;
}

/* A start through a keeper is decided (engine_start returned r while its
 * keeper had not said hello): the front end answers the start; a failed
 * one leaves nothing behind (its record, monitor, directory and keeper go). */
static void
engine_on_started(void *data, Monitor *m, const VigilError *err)
{
  MonRecord *r = data;
  Engine *e = r->engine;
  if (e->hooks && e->hooks->on_started)
    e->hooks->on_started(e->hooks_ctx, r, err);
  if (err == NULL) {
    LOG_INFO("engine", "started %s (%s) in session %s, pid %d: %s", monitor_id(m),
             monitor_label(m), r->session ? session_name(r->session) : "(gone)",
             (int)monitor_pid(m), monitor_program(m));
    return;
  }
  LOG_WARN("engine", "%s (%s) did not start: %s", monitor_id(m), monitor_label(m), err->msg);
  engine_record_free(r);
  engine_maybe_drained(e);
}

const MonitorHooks engine__monitor_hooks = {
  engine_on_notification,
  engine_on_event,
  engine_on_finished,
  engine_on_lines,
  engine_is_ignored,
  engine_on_started,
};

/* See engine.h. */
int
engine_adopt(Engine *e, MonitorKeep *keep, const KeepSpec *ks, ProcAdoptOptions *po,
             VigilError *err)
{
  Session *s = session_find(e->sessions, ks->session);
  bool made = false;
  if (s == NULL) {
    s = session_create(e->sessions, ks->session, false);
    made = s != NULL;
  }
  if (s == NULL || session_anonymous(s)) {
    proc_adopt_discard(po);
    return error_set(err, kErrInvalidParams, "spec: session \"%s\" cannot be brought back",
                     ks->session);
  }
  size_t npatterns = 0;
  while (ks->patterns[npatterns] != NULL)
    npatterns++;
  MonitorSpec spec = {
    .argv = ks->argv,
    .label = ks->label,
    .description = ks->description,
    .patterns = (const char *const *)ks->patterns,
    .npatterns = npatterns,
    .builtin_patterns = ks->builtin_patterns,
    .incidents = ks->incidents,
    .envelope = (EnvelopeStyle)ks->envelope,
    .match_streams = (MatchStreams)ks->match_streams,
    .notify = (NotifyMode)ks->notify,
    .mode = (DeliveryMode)ks->mode,
    .timeout_ms = ks->timeout_ms,
    .persistent = ks->timeout_ms == 0,
    .idle_timeout_ms = ks->idle_timeout_ms,
    .quiet_after_ms = ks->quiet_after_ms,
    .memory_limit = ks->memory_limit,
    .cpu_limit = ks->cpu_limit,
    /* What a restart of its program needs (monitor_restart.c): the start's
     * env as kept, the rest of the environment as this engine's config has
     * it, and the counts so far. */
    .env_extra = ks->env,
    .env_inherit = (const char *const *)e->config.env_inherit,
    .line_buffered = e->config.line_buffered,
    .cwd = ks->cwd,
    .keeper_program = e->keeper_program,
    .restart = (RestartPolicy)ks->restart,
    .max_restarts = ks->max_restarts,
    .restart_backoff_ms = ks->restart_backoff_ms,
    .restarts = (uint64_t)ks->restarts,
    .restarts_in_row = (uint64_t)ks->restarts_in_row,
    .run_started_at = ks->run_started_at_ms,
    .ready_log = ks->ready_log,
    .ready_tcp = ks->ready_tcp,
    .ready_http = ks->ready_http,
    .ready_status = ks->ready_status,
    .ready_timeout_ms = ks->ready_timeout_ms,
    .health_interval_ms = ks->health_interval_ms,
    .health_failures = ks->health_failures,
    .ready_at = ks->ready_at_ms,
  };
  /* The engine before may have died between telling a notification (in
   * its session's journal) and storing the checkpoint after it: the
   * journal's is then the later one, and nothing is told twice. */
  uint64_t ck[NOTIFICATION_CHECKPOINT_WORDS];
  if (session_registry_checkpoint(e->sessions, ks->id, ck) && monitor_keep_catch_up(keep, ck))
    LOG_INFO("engine", "%s: its checkpoint is taken from its session's journal (the engine "
             "before died between a notification and the checkpoint after it)", ks->id);
  MonRecord *r = xcalloc(1, sizeof *r);
  r->engine = e;
  r->session = s;
  r->monitor = monitor_adopt(e->loop, &ks->settings, &spec, ks->id, ks->started_at_ms, keep, po,
                             &engine__monitor_hooks, r, err);
  if (r->monitor == NULL) {
    free(r);
    if (made)
      session_destroy(s);
    return -1;
  }
  /* The group it was started for, as group_up and group_down find it; a
   * name no config could give is not believed (the file is checked, not
   * trusted). */
  if (ks->group != NULL && config_group_name_ok(ks->group))
    r->group = xstrdup(ks->group);
  else if (ks->group != NULL)
    LOG_WARN("engine", "%s: its spec names a group that is no group's name; taken over "
             "without one", ks->id);
  r->running = true;
  r->policy = xstrdup(ks->policy);
  if (ks->start != NULL) {
    r->start = xmemdupz(ks->start, ks->start_len);
    r->start_len = ks->start_len;
  }
  e->running++;
  r->next = e->records;
  if (e->records)
    e->records->prev = r;
  e->records = r;
  if (made)
    session_linger_unattached(s);
  LOG_INFO("engine", "took over %s (%s) in session %s, pid %d: %s", monitor_id(r->monitor),
           monitor_label(r->monitor), session_name(s), (int)monitor_pid(r->monitor),
           monitor_program(r->monitor));
  /* What it printed while no engine read comes now, as if just read. */
  monitor_replay(r->monitor);
  return 0;
}

MonRecord *
engine_find(Engine *e, Session *s, const char *id)
{
  for (MonRecord *r = e->records; r; r = r->next)
    if (r->session == s && s != NULL && strcmp(monitor_id(r->monitor), id) == 0)
      return r;
  return NULL;
}

size_t
engine_running_in(Engine *e, Session *s)
{
  size_t n = 0;
  for (MonRecord *r = e->records; r; r = r->next)
    n += r->session == s && r->running;
  return n;
}

/* Stops s's running monitors and forgets its ended ones. When s is going
 * away (orphan), its running records leave it too, living on invisibly
 * until their process is gone, and whatever waits on them is answered; when
 * s stays (a connection's own session being emptied), its running records
 * stay in it so their ending notifications still reach the connection.
 * Returns how many stops were started. */
static size_t
engine_stop_records(Engine *e, Session *s, bool orphan)
{
  size_t stopped = 0;
  MonRecord *next;
  for (MonRecord *r = e->records; r; r = next) {
    next = r->next;
    if (r->session != s)
      continue;
    if (orphan)
      engine_forget_watchers(r);
    if (!r->running) {
      engine_record_free(r);
      continue;
    }
    if (orphan)
      r->session = NULL;
    /* An orphan counts as stopped even when its process is already only
     * draining: its session is gone either way. */
    stopped += monitor_stop(r->monitor, SIGTERM, -1) == kMonitorStopping || orphan;
  }
  return stopped;
}

size_t
engine_close_session(Engine *e, Session *s)
{
  if (session_anonymous(s))
    return engine_stop_records(e, s, false);
  /* A named session is deleted: nothing is left to deliver to, so its
   * stopping monitors go on invisibly until their processes are gone. */
  return engine_abandon_session(e, s);
}

size_t
engine_abandon_session(Engine *e, Session *s)
{
  size_t stopped = engine_stop_records(e, s, true);
  seat_forget_session(e->clients, s);
  session_destroy(s);
  return stopped;
}

/* A named session lingered out: its monitors are stopped. */
static void
engine_on_expire(void *data, Session *s)
{
  Engine *e = data;
  LOG_INFO("engine", "session %s expired after session.linger_ms with nobody attached",
           session_name(s));
  engine_stop_records(e, s, true);
}

/* A session was made or is going: whoever watches sessions is told. */
static void
engine_on_session_create(void *data, Session *s)
{
  Engine *e = data;
  if (e->session_watch && e->session_watch->on_create)
    e->session_watch->on_create(e->session_watch_data, s);
}

static void
engine_on_session_destroy(void *data, Session *s)
{
  Engine *e = data;
  if (e->session_watch && e->session_watch->on_destroy)
    e->session_watch->on_destroy(e->session_watch_data, s);
}

void
engine_watch_sessions(Engine *e, const SessionHooks *watch, void *data)
{
  e->session_watch = watch;
  e->session_watch_data = data;
}

/* --- the engine --------------------------------------------------------- */

static SessionLimits
engine_session_limits(const VigilConfig *cfg)
{
  SessionLimits l = {(size_t)cfg->settings.session_queue_max,
                     (uint64_t)cfg->settings.session_linger_ms,
                     (size_t)cfg->settings.session_max_cursors,
                     (size_t)cfg->settings.incident_ignore_max};
  return l;
}

const char *
engine_data_dir(void)
{
  return datadir_path();
}

PolicySet *
engine_policies_for(const VigilConfig *cfg)
{
  char lua_dir[4096], bundled[4096];
  snprintf(lua_dir, sizeof lua_dir, "%s/lua", engine_data_dir());
  snprintf(bundled, sizeof bundled, "%s/plugins", engine_data_dir());
  PolicyOptions opts = {
    .lua_dir = lua_dir,
    .bundled_dir = bundled,
    .plugin_paths = cfg ? (const char *const *)cfg->plugin_paths : NULL,
    .nplugin_paths = cfg ? cfg->nplugin_paths : 0,
    .log_lines_per_s = cfg ? (uint32_t)cfg->settings.log_policy_lines_per_s : 0,
    .log_lines_per_call = cfg ? (uint32_t)cfg->settings.log_policy_lines_per_call : 0,
  };
  return policyset_new(&opts);
}

int
engine_reload(Engine *e, VigilError *err)
{
  if (e->config_path == NULL)
    return error_set(err, kErrInvalidParams,
                     "no configuration file to reload (vigild was started with --no-config, "
                     "or found none)");
  VigilConfig cfg;
  if (config_load(e->config_path, &cfg, err) != 0) {
    config_free(&cfg); /* a refused load still leaves the defaults to free */
    return -1;
  }
  PolicySet *ps = engine_policies_for(&cfg);
  /* Everything that will be asked for must load now, or nothing changes. */
  bool ok = engine_preload_policies(ps, &cfg, err) == 0;
  for (MonRecord *r = e->records; ok && r; r = r->next)
    ok = policyset_get(ps, r->policy, err) != NULL;
  if (!ok) {
    policyset_free(ps);
    config_free(&cfg);
    return -1;
  }
  /* The state directory is the engine's for its whole life (it holds the
   * lock, and what outlives the engine is found there): a new state.dir
   * takes effect at the next start, and the reload says so. */
  const char *was = e->config.state_dir, *now = cfg.state_dir;
  if ((was == NULL) != (now == NULL) || (was && strcmp(was, now) != 0))
    LOG_WARN("engine", "%s: state.dir changed to %s; a reload does not move the state directory "
             "(%s stays in use until vigild restarts)",
             e->config_path, now ? now : "(none)", e->state ? e->state->path : "none");
  policyset_free(e->policies);
  e->policies = ps;
  config_free(&e->config);
  e->config = cfg;
  SessionLimits limits = engine_session_limits(&e->config);
  session_registry_set_limits(e->sessions, &limits);
  log_set_buffer_max((size_t)cfg.settings.log_buffer_bytes);
  monitor_builtin_keep(&e->config.settings);
  e->reloads++;
  LOG_INFO("engine", "reloaded %s", e->config_path);
  return 0;
}

void
engine_set_hooks(Engine *e, const EngineHooks *hooks, void *ctx)
{
  e->hooks = hooks;
  e->hooks_ctx = ctx;
}

Engine *
engine_new(uv_loop_t *loop, VigilConfig *cfg, const char *config_path)
{
  Engine *e = xcalloc(1, sizeof *e);
  e->loop = loop;
  e->started_ms = clock_mono_ms();
  e->config = *cfg;
  memset(cfg, 0, sizeof *cfg);
  e->config_path = config_path ? xstrdup(config_path) : NULL;
  e->policies = engine_policies_for(&e->config);
  log_set_buffer_max((size_t)e->config.settings.log_buffer_bytes);
  SessionLimits limits = engine_session_limits(&e->config);
  SessionHooks hooks = {engine_on_expire, engine_on_session_create, engine_on_session_destroy};
  e->sessions = session_registry_new(loop, &limits, &hooks, e);
  monitor_builtin_keep(&e->config.settings);
  /* Looked up once, here, so the log says at start what a child's stdout
   * will be (childenv.h). */
  const char *stdbuf = childenv_stdbuf();
  if (stdbuf != NULL)
    LOG_INFO("engine", "line-buffered children: PYTHONUNBUFFERED=1 and %s preloaded with "
             "_STDBUF_O=L", stdbuf);
  else
    LOG_INFO("engine", "line-buffered children: PYTHONUNBUFFERED=1 only (no coreutils libstdbuf "
             "found: C stdio programs keep block-buffering their stdout)");
  return e;
}

/* Calls on_drained once shutting down and every process is gone. */
static void
engine_maybe_drained(Engine *e)
{
  if (!e->shutting_down || e->running > 0 || e->on_drained == NULL)
    return;
  void (*done)(Engine *) = e->on_drained;
  e->on_drained = NULL;
  done(e);
}

void
engine_shutdown(Engine *e, bool hard)
{
  bool first = !e->shutting_down;
  e->shutting_down = true;
  if (first && e->hooks)
    e->hooks->on_shutdown(e->hooks_ctx);
  for (MonRecord *r = e->records; r; r = r->next) {
    if (!r->running)
      continue;
    if (hard)
      monitor_stop(r->monitor, SIGKILL, 0);
    else
      monitor_stop(r->monitor, SIGTERM, -1);
  }
  engine_maybe_drained(e);
}

void
engine_free(Engine *e)
{
  e->shutting_down = true;
  e->on_drained = NULL;
  /* The front end closed its clients first; any left are closed here. */
  while (e->clients)
    seat_close(e->clients);
  while (e->records)
    engine_record_free(e->records);
  session_registry_free(e->sessions);
  policyset_free(e->policies);
  monitor_builtin_release();
  config_free(&e->config);
  free(e->config_path);
  free(e);
}
