/*
 * The engine: the configuration in force, the sessions, the connections and
 * the monitor records (see engine.h). The start path lives here because it
 * is shared by monitor_start, process_run and the config's `monitors`: every
 * gate and bound is checked in one place, in an order that makes a refused
 * start leave nothing behind (all checks first, the spawn last).
 */
#include "engine.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "childenv.h"
#include "deliver.h"
#include "log.h"
#include "memory.h"
#include "policy.h"

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

static const MonitorHooks engine_monitor_hooks = {
  engine_on_notification,
  engine_on_event,
  engine_on_finished,
  engine_on_lines,
};

/* --- the start path ----------------------------------------------------- */

/* Opens cwd (or the engine's) into *dir and checks the directory it is,
 * by its real path read from the open descriptor, against workspace_roots.
 * The child later enters that descriptor, so a symlink that changes after
 * this check cannot move it out. On error *dir is closed. */
static int
engine_check_cwd(const VigilConfig *cfg, const char *cwd, ProcDir *dir, VigilError *err)
{
  if (proc_dir_open(cwd, dir, err) != 0)
    return -1;
  if (cfg->nroots == 0)
    return 0;
  for (size_t i = 0; i < cfg->nroots; i++) {
    const char *root = cfg->workspace_roots[i];
    size_t n = strlen(root);
    if (strncmp(dir->path, root, n) == 0 &&
        (dir->path[n] == '\0' || dir->path[n] == '/' || strcmp(root, "/") == 0))
      return 0;
  }
  char given[GATE_QUOTE_BUF], real[GATE_QUOTE_BUF];
  gate_quote(given, cwd ? cwd : dir->path);
  gate_quote(real, dir->path);
  if (cwd != NULL && strcmp(cwd, dir->path) != 0)
    error_set(err, kErrDenied, "cwd: %s (%s) is outside monitor.workspace_roots", given, real);
  else
    error_set(err, kErrDenied, "cwd: %s is outside monitor.workspace_roots", given);
  proc_dir_close(dir);
  return -1;
}

/* Asks one policy's gate about a start. Returns 0 when the policy has no
 * gate, 1 when its gate allowed the start, -1 with err when it denied it or
 * failed (a failing gate denies: fail closed). */
static int
engine_ask_gate(Policy *policy, const char *session, const StartRequest *req,
                VigilError *err)
{
  if (!policy_has_gate(policy))
    return 0;
  PolicyGateRequest gr = {
    .program = req->shell ? "/bin/sh" : req->argv.argv[0],
    .argv = (const char *const *)req->argv.argv,
    .shell = req->shell,
    .cwd = req->cwd,
    .session = session,
    .label = req->label,
    .env = (const char *const *)req->env,
  };
  bool allow = false;
  char *reason = NULL;
  VigilError sub = VIGIL_ERROR_INIT;
  if (policy_gate(policy, &gr, &allow, &reason, &sub) < 0) {
    LOG_WARN("engine", "%s", sub.msg);
    error_set(err, kErrDenied, "policy %s: its gate failed, so the start is denied: %s",
              policy_name(policy), sub.msg);
    return -1;
  }
  if (!allow) {
    error_set(err, kErrDenied, "policy %s denied the start%s%s", policy_name(policy),
              reason ? ": " : "", reason ? reason : "");
    free(reason);
    return -1;
  }
  free(reason);
  return 1;
}

/* Decides whether a start may run at all (docs/policies.md section 7).
 * The operator picks the gate that decides, never the caller: the config's
 * `gate` policy, else its default `policy`. When that policy has a gate,
 * its answer replaces the allowlist and the shell rule (so it may allow
 * more); without one those two decide. Then the caller's choice, `chosen`
 * (the monitor's own policy), when it is another policy with a gate, is
 * asked too, and can only deny: its true adds nothing. Returns 0 when the
 * start may go on, -1 with err (denied) when not. */
static int
engine_policy_gate(const VigilConfig *cfg, PolicySet *ps, Policy *chosen, const char *session,
                   const StartRequest *req, VigilError *err)
{
  const char *name = cfg->gate ? cfg->gate : cfg->policy ? cfg->policy : "envelope";
  VigilError sub = VIGIL_ERROR_INIT;
  Policy *deciding = policyset_get(ps, name, &sub);
  if (deciding == NULL)
    return error_set(err, kErrDenied, "the config's gate policy \"%s\" did not load, so "
                     "the start is denied: %s", name, sub.msg);
  int decided = engine_ask_gate(deciding, session, req, err);
  if (decided < 0)
    return -1;
  if (decided == 0 && cfg->gate != NULL)
    return error_set(err, kErrDenied, "gate: policy \"%s\" (the config's gate) has no gate "
                     "function, so the start is denied", name);
  if (decided == 0) {
    if (req->shell && !cfg->allow_shell)
      return error_set(err, kErrDenied,
                       "shell: shell commands are not allowed (monitor.allow_shell is false)");
    if (!req->shell && gate_check(&cfg->allowed_commands, &req->argv, err) != 0)
      return -1;
  }
  if (chosen != deciding && engine_ask_gate(chosen, session, req, err) < 0)
    return -1;
  return 0;
}

/* See engine.h. */
void
start_plan_free(StartPlan *plan)
{
  proc_dir_close(&plan->dir);
  free(plan->note);
  plan->note = NULL;
}

/* See engine.h. The order is the one docs/protocol.md gives; a refusal
 * leaves nothing open. */
int
engine_check_start(const VigilConfig *cfg, PolicySet *ps, const char *session,
                   const StartRequest *req, StartPlan *plan, VigilError *err)
{
  *plan = (StartPlan){NULL, PROC_DIR_INIT, req->mode, NULL};
  if (!cfg->enabled)
    return error_set(err, kErrDisabled, "monitors are disabled (monitor.enabled is false in %s)",
                     cfg->path ? cfg->path : "the configuration");
  plan->policy_name = req->policy ? req->policy : cfg->policy ? cfg->policy : "envelope";
  Policy *policy = policyset_get(ps, plan->policy_name, err);
  if (policy == NULL)
    return -1;
  if (engine_policy_gate(cfg, ps, policy, session, req, err) != 0)
    return -1;
  if (childenv_check(req->env, (const char *const *)cfg->env_deny,
                     (const char *const *)cfg->env_allow, err) != 0)
    return -1;
  if (req->persistent && !cfg->allow_persistent)
    return error_set(err, kErrDenied, "persistent: persistent monitors are not allowed "
                                      "(monitor.allow_persistent is false)");
  if (engine_check_cwd(cfg, req->cwd, &plan->dir, err) != 0)
    return -1;
  if (plan->mode == kModeLiveSafe && !cfg->live_mode_enabled) {
    plan->mode = kModeIdle;
    plan->note = xstrdup("mode: live_safe needs monitor.live_mode_enabled; started in idle mode");
  }
  return 0;
}

/* The caps on running monitors: `in_session` run in the session named
 * `session` and `total` in the engine. */
static int
engine_check_counts(const VigilConfig *cfg, const char *session, size_t in_session,
                    size_t total, VigilError *err)
{
  if (in_session >= (size_t)cfg->settings.max_monitors_per_session)
    return error_set(err, kErrLimitExceeded,
                     "monitor.max_monitors_per_session is %lld and session \"%s\" has %zu running",
                     (long long)cfg->settings.max_monitors_per_session, session, in_session);
  if (total >= (size_t)cfg->settings.max_monitors)
    return error_set(err, kErrLimitExceeded, "monitor.max_monitors is %lld and %zu are running",
                     (long long)cfg->settings.max_monitors, total);
  return 0;
}

/* The settings a start runs under: the config's, with process_run's own
 * runtime cap (3600 s) in place of max_runtime_ms when it asks for more. */
static VigilSettings
engine_settings(const VigilConfig *cfg, const StartRequest *req)
{
  VigilSettings settings = cfg->settings;
  if (req->process_run && req->timeout_ms > settings.max_runtime_ms)
    settings.max_runtime_ms = req->timeout_ms;
  return settings;
}

/* What monitor_start is given for a checked start: the request, with the
 * opened cwd, the config's search path and inherit list. The spec borrows
 * from all three. */
static MonitorSpec
engine_spec(const VigilConfig *cfg, const StartRequest *req, const StartPlan *plan)
{
  MonitorSpec spec = {
    .argv = req->argv.argv,
    .cwd = req->cwd,
    .dir = &plan->dir,
    .search_path = cfg->search_path,
    .env_inherit = (const char *const *)cfg->env_inherit,
    .env_extra = req->env,
    .label = req->label,
    .description = req->description,
    .patterns = (const char *const *)req->patterns,
    .npatterns = req->npatterns,
    .match_streams = req->match_streams,
    .notify = req->notify,
    .mode = plan->mode,
    .timeout_ms = req->timeout_ms,
    .persistent = req->persistent,
    .idle_timeout_ms = req->idle_timeout_ms,
    .memory_limit = req->memory_limit,
    .cpu_limit = req->cpu_limit,
    .stdin_data = req->stdin_data,
    .stdin_len = req->stdin_len,
  };
  return spec;
}

MonRecord *
engine_start(Engine *e, Session *s, StartRequest *req, char **note, VigilError *err)
{
  const VigilConfig *cfg = &e->config;
  *note = NULL;
  if (e->shutting_down) {
    error_set(err, kErrDisabled, "the engine is shutting down");
    return NULL;
  }
  StartPlan plan;
  if (engine_check_start(cfg, e->policies, session_name(s), req, &plan, err) != 0)
    return NULL;
  if (engine_check_counts(cfg, session_name(s), engine_running_in(e, s), e->running, err) != 0) {
    start_plan_free(&plan);
    return NULL;
  }
  VigilSettings settings = engine_settings(cfg, req);
  MonitorSpec spec = engine_spec(cfg, req, &plan);
  MonRecord *r = xcalloc(1, sizeof *r);
  r->engine = e;
  r->session = s;
  r->monitor = monitor_start(e->loop, &settings, &spec, &engine_monitor_hooks, r, err);
  if (r->monitor == NULL) {
    free(r);
    start_plan_free(&plan);
    return NULL;
  }
  r->running = true;
  r->policy = xstrdup(plan.policy_name);
  *note = plan.note;
  plan.note = NULL;
  start_plan_free(&plan); /* the child is in the directory now */
  e->running++;
  r->next = e->records;
  if (e->records)
    e->records->prev = r;
  e->records = r;
  LOG_INFO("engine", "started %s (%s) in session %s, pid %d: %s", monitor_id(r->monitor),
           monitor_label(r->monitor), session_name(s), (int)monitor_pid(r->monitor),
           monitor_program(r->monitor));
  return r;
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

/* Takes every record away from s: running ones are stopped and live on
 * invisibly until their process is gone; ended ones are forgotten. */
static size_t
engine_orphan_records(Engine *e, Session *s)
{
  size_t stopped = 0;
  MonRecord *next;
  for (MonRecord *r = e->records; r; r = next) {
    next = r->next;
    if (r->session != s)
      continue;
    engine_forget_watchers(r);
    if (r->running) {
      r->session = NULL;
      monitor_stop(r->monitor, SIGTERM, -1);
      stopped++;
    } else {
      engine_record_free(r);
    }
  }
  return stopped;
}

/* Empties a connection's own session, which stays: ended monitors are
 * forgotten, running ones stopped, and their ending notifications still
 * reach the connection. */
static size_t
engine_empty_session(Engine *e, Session *s)
{
  size_t stopped = 0;
  MonRecord *next;
  for (MonRecord *r = e->records; r; r = next) {
    next = r->next;
    if (r->session != s)
      continue;
    if (r->running) {
      stopped += monitor_stop(r->monitor, SIGTERM, -1) == 0;
    } else {
      engine_record_free(r);
    }
  }
  return stopped;
}

size_t
engine_close_session(Engine *e, Session *s)
{
  if (session_anonymous(s))
    return engine_empty_session(e, s);
  /* A named session is deleted: nothing is left to deliver to, so its
   * stopping monitors go on invisibly until their processes are gone. */
  return engine_abandon_session(e, s);
}

size_t
engine_abandon_session(Engine *e, Session *s)
{
  size_t stopped = engine_orphan_records(e, s);
  client_forget_session(e->clients, s);
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
  engine_orphan_records(e, s);
}

/* --- the engine --------------------------------------------------------- */

static SessionLimits
engine_session_limits(const VigilConfig *cfg)
{
  SessionLimits l = {(size_t)cfg->settings.session_queue_max,
                     (uint64_t)cfg->settings.session_linger_ms};
  return l;
}

const char *
engine_data_dir(void)
{
  const char *dir = getenv("VIGIL_DATA_DIR");
#ifdef VIGIL_DATA_DIR
  if (dir == NULL || dir[0] == '\0')
    dir = VIGIL_DATA_DIR;
#endif
  return dir && dir[0] ? dir : ".";
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
engine_preload_policies(PolicySet *ps, const VigilConfig *cfg, VigilError *err)
{
  if (policyset_get(ps, cfg->policy ? cfg->policy : "envelope", err) == NULL)
    return -1;
  if (cfg->gate != NULL) {
    VigilError sub = VIGIL_ERROR_INIT;
    Policy *g = policyset_get(ps, cfg->gate, &sub);
    if (g == NULL) {
      /* Said as the config key it came from; sub.msg starts with its code. */
      const char *msg = sub.msg + strlen(error_name(sub.code));
      return error_set(err, sub.code, "gate%s", msg);
    }
    if (!policy_has_gate(g))
      return error_set(err, kErrInvalidParams,
                       "gate: policy \"%s\" has no gate function (%s), so it cannot be the "
                       "config's gate", cfg->gate, policy_path(g));
  }
  for (size_t i = 0; i < cfg->nmonitors; i++)
    if (cfg->monitors[i].req.policy && policyset_get(ps, cfg->monitors[i].req.policy, err) == NULL)
      return -1;
  return 0;
}

int
engine_reload(Engine *e, VigilError *err)
{
  if (e->config_path == NULL)
    return error_set(err, kErrInvalidParams,
                     "no configuration file to reload (vigild was started without --config)");
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
  policyset_free(e->policies);
  e->policies = ps;
  config_free(&e->config);
  e->config = cfg;
  SessionLimits limits = {(size_t)cfg.settings.session_queue_max,
                          (uint64_t)cfg.settings.session_linger_ms};
  session_registry_set_limits(e->sessions, &limits);
  log_set_buffer_max((size_t)cfg.settings.log_buffer_bytes);
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
  e->config = *cfg;
  memset(cfg, 0, sizeof *cfg);
  e->config_path = config_path ? xstrdup(config_path) : NULL;
  e->policies = engine_policies_for(&e->config);
  log_set_buffer_max((size_t)e->config.settings.log_buffer_bytes);
  SessionLimits limits = engine_session_limits(&e->config);
  SessionHooks hooks = {engine_on_expire};
  e->sessions = session_registry_new(loop, &limits, &hooks, e);
  return e;
}

/* Sets err to the refusal sub of the config's i-th monitor (from 0): its
 * code, then "FILE: monitors[N] (label "L"): " and sub's own message
 * without its code, which the new message already starts with. */
static int
engine_config_monitor_fail(const VigilConfig *cfg, size_t i, const VigilError *sub,
                           VigilError *err)
{
  const char *msg = sub->msg;
  const char *code = error_name(sub->code);
  size_t n = strlen(code);
  if (strncmp(msg, code, n) == 0 && strncmp(msg + n, ": ", 2) == 0)
    msg += n + 2;
  const char *label = cfg->monitors[i].req.label;
  char quoted[GATE_QUOTE_BUF] = "";
  if (label != NULL)
    gate_quote(quoted, label);
  return error_set(err, sub->code, "%s: monitors[%zu]%s%s%s: %s",
                   cfg->path ? cfg->path : "config", i + 1, label ? " (label " : "", quoted,
                   label ? ")" : "", msg);
}

int
engine_start_config_monitors(Engine *e, VigilError *err)
{
  for (size_t i = 0; i < e->config.nmonitors; i++) {
    const ConfigMonitor *cm = &e->config.monitors[i];
    Session *s = session_find(e->sessions, cm->session);
    if (s == NULL)
      s = session_create(e->sessions, cm->session, true);
    StartRequest req;
    start_request_copy(&req, &cm->req);
    char *note = NULL;
    VigilError sub = VIGIL_ERROR_INIT;
    MonRecord *r = engine_start(e, s, &req, &note, &sub);
    start_request_free(&req);
    free(note);
    if (r == NULL)
      return engine_config_monitor_fail(&e->config, i, &sub, err);
  }
  return 0;
}

/* See engine.h. The checks are engine_start's own (engine_check_start,
 * engine_check_counts, monitor_check), so a refusal reads as it would at
 * boot. Every config monitor counts as running from its start on: at boot
 * they are all started before the loop runs, so none has ended yet. */
int
engine_check_config(const VigilConfig *cfg, VigilError *err)
{
  PolicySet *ps = engine_policies_for(cfg);
  int rc = engine_preload_policies(ps, cfg, err);
  for (size_t i = 0; rc == 0 && i < cfg->nmonitors; i++) {
    const ConfigMonitor *cm = &cfg->monitors[i];
    size_t in_session = 0;
    for (size_t k = 0; k < i; k++)
      in_session += strcmp(cfg->monitors[k].session, cm->session) == 0;
    StartRequest req;
    start_request_copy(&req, &cm->req);
    VigilError sub = VIGIL_ERROR_INIT;
    StartPlan plan;
    if (engine_check_start(cfg, ps, cm->session, &req, &plan, &sub) == 0) {
      if (engine_check_counts(cfg, cm->session, in_session, i, &sub) == 0) {
        VigilSettings settings = engine_settings(cfg, &req);
        MonitorSpec spec = engine_spec(cfg, &req, &plan);
        monitor_check(&settings, &spec, &sub);
      }
      start_plan_free(&plan);
    }
    start_request_free(&req);
    if (sub.set)
      rc = engine_config_monitor_fail(cfg, i, &sub, err);
  }
  policyset_free(ps);
  return rc;
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
    client_close(e->clients);
  while (e->records)
    engine_record_free(e->records);
  session_registry_free(e->sessions);
  policyset_free(e->policies);
  config_free(&e->config);
  free(e->config_path);
  free(e);
}
