/*
 * The checks of a start, shared by monitor_start, process_run, the
 * config's `monitors` and vigild --check-config, so every gate and bound is
 * checked in one place and in one order: enabled, the policy and its gate
 * (else the shell rule and the allowlist), the environment, persistent, the
 * working directory; then the running caps. All of them come before the
 * spawn, so a refused start leaves nothing behind. The start itself
 * (engine_start: the checks, the spawn, the record) is here too, and the
 * config's monitors are started (and --check-config checks them) through
 * the same path.
 */
#include "engine/engine.h"
#include "engine/engine_internal.h"
#include "engine/engine_start.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc/childenv.h"
#include "base/log.h"
#include "base/memory.h"
#include "policy/policy.h"
#include "engine/startmap.h"
#include "base/strbuf.h"


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

/* What one policy's gate said about a start. */
typedef enum {
  kGateNone = 0,    /* the policy has no gate */
  kGateAllowed,     /* its gate allowed the start */
  kGateDenied,      /* its gate denied it, or failed (fail closed): err is set */
} GateAnswer;

/* Asks one policy's gate about a start. */
static GateAnswer
engine_ask_gate(Policy *policy, const char *session, const StartRequest *req,
                VigilError *err)
{
  if (!policy_has_gate(policy))
    return kGateNone;
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
    return kGateDenied;
  }
  if (!allow) {
    error_set(err, kErrDenied, "policy %s denied the start%s%s", policy_name(policy),
              reason ? ": " : "", reason ? reason : "");
    free(reason);
    return kGateDenied;
  }
  free(reason);
  return kGateAllowed;
}

/* Adds to a denial of req's program how to allow it (config_hint.h): the
 * entry is the program as given, quoted as the denial quotes it; a start
 * without a program gets no hint (there is nothing to add). */
static void
engine_hint_program(const VigilConfig *cfg, const StartRequest *req, long reload_pid,
                    VigilError *err)
{
  if (req->argv.argc == 0 || req->argv.argv == NULL || req->argv.argv[0][0] == '\0')
    return;
  char entry[GATE_QUOTE_BUF];
  gate_quote(entry, req->argv.argv[0]);
  config_hint_append(cfg->path, &cfg->key_lines, kConfigKeyAllowedCommands, entry, reload_pid,
                     err);
}

/* Adds to a denial of an env entry how to allow its name. */
static void
engine_hint_env(const VigilConfig *cfg, const StartRequest *req, size_t at, long reload_pid,
                VigilError *err)
{
  const char *kv = req->env[at];
  const char *eq = strchr(kv, '=');
  char *name = xmemdupz(kv, eq ? (size_t)(eq - kv) : strlen(kv));
  char entry[GATE_QUOTE_BUF];
  gate_quote(entry, name);
  free(name);
  config_hint_append(cfg->path, &cfg->key_lines, kConfigKeyEnvAllow, entry, reload_pid, err);
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
                   const StartRequest *req, long reload_pid, VigilError *err)
{
  const char *name = cfg->gate ? cfg->gate : cfg->policy ? cfg->policy : "envelope";
  VigilError sub = VIGIL_ERROR_INIT;
  Policy *deciding = policyset_get(ps, name, &sub);
  if (deciding == NULL)
    return error_set(err, kErrDenied, "the config's gate policy \"%s\" did not load, so "
                     "the start is denied: %s", name, sub.msg);
  GateAnswer decided = engine_ask_gate(deciding, session, req, err);
  if (decided == kGateDenied)
    return -1;
  if (decided == kGateNone && cfg->gate != NULL)
    return error_set(err, kErrDenied, "gate: policy \"%s\" (the config's gate) has no gate "
                     "function, so the start is denied", name);
  if (decided == kGateNone) {
    if (req->shell && !cfg->allow_shell) {
      error_set(err, kErrDenied,
                "shell: shell commands are not allowed (monitor.allow_shell is false)");
      config_hint_append(cfg->path, &cfg->key_lines, kConfigKeyAllowShell, NULL, reload_pid, err);
      return -1;
    }
    if (!req->shell && gate_check(&cfg->allowed_commands, &req->argv, err) != 0) {
      engine_hint_program(cfg, req, reload_pid, err);
      return -1;
    }
  }
  if (chosen != deciding && engine_ask_gate(chosen, session, req, err) == kGateDenied)
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

/* Adds text to plan's note, after what it holds ("; " between). */
static void
engine_plan_note(StartPlan *plan, const char *text)
{
  StrBuf sb = STRBUF_INIT;
  if (plan->note != NULL)
    strbuf_printf(&sb, "%s; ", plan->note);
  strbuf_puts(&sb, text);
  free(plan->note);
  plan->note = xstrdup(strbuf_cstr(&sb));
  strbuf_free(&sb);
}

/* How many names the note of a drop lists before "and K more": enough for
 * what a shell's environment holds of the default deny list (PATH, HOME,
 * SHELL, EDITOR, the XDG_ directories, LESSOPEN ...), and a bound on a note
 * a person reads on a terminal. */
#define ENGINE_DROPPED_NAMES_MAX 16

static int
engine_names_cmp(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* env_denied "drop": leaves out of req->env the names monitor.env_deny
 * refuses and says in plan's note which, sorted, quoted as a denial quotes
 * them (the caller's bytes, escaped), at most ENGINE_DROPPED_NAMES_MAX then
 * how many more. Never their values: a value may be a secret. */
static void
engine_drop_env(const VigilConfig *cfg, StartRequest *req, StartPlan *plan)
{
  char **names = NULL;
  size_t n = childenv_drop(req->env, (const char *const *)cfg->env_deny,
                           (const char *const *)cfg->env_allow, &names);
  if (n == 0)
    return;
  qsort(names, n, sizeof *names, engine_names_cmp);
  StrBuf sb = STRBUF_INIT;
  strbuf_printf(&sb, "env: left out %zu variable%s that monitor.env_deny refuses "
                     "(env_denied \"drop\"): ", n, n == 1 ? "" : "s");
  for (size_t i = 0; i < n; i++) {
    if (i < ENGINE_DROPPED_NAMES_MAX) {
      char quoted[GATE_QUOTE_BUF];
      gate_quote(quoted, names[i]);
      strbuf_printf(&sb, "%s%s", i ? ", " : "", quoted);
    }
    free(names[i]);
  }
  if (n > ENGINE_DROPPED_NAMES_MAX)
    strbuf_printf(&sb, ", and %zu more", n - ENGINE_DROPPED_NAMES_MAX);
  free(names);
  engine_plan_note(plan, strbuf_cstr(&sb));
  strbuf_free(&sb);
}

/* See engine.h. The order is the one docs/protocol.md gives; a refusal
 * leaves nothing open. */
int
engine_check_start(const VigilConfig *cfg, PolicySet *ps, const char *session,
                   StartRequest *req, long reload_pid, StartPlan *plan, VigilError *err)
{
  *plan = (StartPlan){NULL, PROC_DIR_INIT, req->mode, NULL};
  if (!cfg->enabled)
    return error_set(err, kErrDisabled, "monitors are disabled (monitor.enabled is false in %s)",
                     cfg->path ? cfg->path : "the configuration");
  /* Before the gates, so that a policy's gate judges the env the child
   * gets. */
  if (req->env_denied == kEnvDeniedDrop)
    engine_drop_env(cfg, req, plan);
  plan->policy_name = req->policy ? req->policy : cfg->policy ? cfg->policy : "envelope";
  Policy *policy = policyset_get(ps, plan->policy_name, err);
  if (policy == NULL)
    goto refused;
  /* A source runs nothing: the gates judge commands; a file is judged by
   * monitor.workspace_roots when it is opened (filesrc.h), a WebSocket's
   * URL must be on loopback (wssrc.h). */
  bool source = req->source_file != NULL || req->source_ws != NULL;
  if (!source &&
      engine_policy_gate(cfg, ps, policy, session, req, reload_pid, err) != 0)
    goto refused;
  size_t env_at = 0;
  if (childenv_check_at(req->env, (const char *const *)cfg->env_deny,
                        (const char *const *)cfg->env_allow, &env_at, err) != 0) {
    if (err->code == kErrDenied)
      engine_hint_env(cfg, req, env_at, reload_pid, err);
    goto refused;
  }
  if (req->persistent && !cfg->allow_persistent) {
    error_set(err, kErrDenied, "persistent: persistent monitors are not allowed "
                               "(monitor.allow_persistent is false)");
    config_hint_append(cfg->path, &cfg->key_lines, kConfigKeyAllowPersistent, NULL, reload_pid,
                       err);
    goto refused;
  }
  if (!source && engine_check_cwd(cfg, req->cwd, &plan->dir, err) != 0)
    goto refused;
  if (plan->mode == kModeLiveSafe && !cfg->live_mode_enabled) {
    plan->mode = kModeIdle;
    engine_plan_note(plan, "mode: live_safe needs monitor.live_mode_enabled; started in idle "
                           "mode");
  }
  return 0;
refused:
  start_plan_free(plan);
  return -1;
}

/* The caps on running monitors: `in_session` run in the session named
 * `session` and `total` in the engine. */
int
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
VigilSettings
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
MonitorSpec
engine_spec(const VigilConfig *cfg, const StartRequest *req, const StartPlan *plan)
{
  MonitorSpec spec = {
    .argv = req->argv.argv,
    .cwd = req->cwd,
    .dir = &plan->dir,
    .search_path = cfg->search_path,
    .env_inherit = (const char *const *)cfg->env_inherit,
    .env_extra = req->env,
    .line_buffered = req->line_buffered_given ? req->line_buffered : cfg->line_buffered,
    .label = req->label,
    .description = req->description,
    .patterns = (const char *const *)req->patterns,
    .npatterns = req->npatterns,
    .builtin_patterns = !req->patterns_given,
    .incidents = req->incidents_given ? req->incidents : true,
    .envelope = req->envelope_given ? (EnvelopeStyle)req->envelope
                                    : (EnvelopeStyle)cfg->settings.envelope_style,
    .match_streams = req->match_streams,
    .notify = req->notify,
    .mode = plan->mode,
    .timeout_ms = req->timeout_ms,
    .persistent = req->persistent,
    .idle_timeout_ms = req->idle_timeout_ms,
    .quiet_after_ms = req->quiet_after_ms,
    .restart = (RestartPolicy)req->restart,
    .max_restarts = req->max_restarts,
    .restart_backoff_ms = req->restart_backoff_given ? req->restart_backoff_ms : -1,
    .memory_limit = req->memory_limit,
    .cpu_limit = req->cpu_limit,
    .stdin_data = req->stdin_data,
    .stdin_len = req->stdin_len,
    .ready_log = req->ready_log,
    .ready_tcp = req->ready_tcp,
    .ready_http = req->ready_http,
    .ready_status = req->ready_status,
    .ready_timeout_ms = req->ready_timeout_ms,
    .health_interval_ms = req->health_interval_ms,
    .health_failures = req->health_failures,
  };
  if (req->source_file != NULL || req->source_ws != NULL) {
    spec.argv = NULL;
    spec.dir = NULL;
    spec.source_ws = req->source_ws;
    spec.source_file = req->source_file;
    spec.source_from = (FileFrom)req->source_from;
    spec.source_offset = req->source_offset;
    spec.workspace_roots = (const char *const *)cfg->workspace_roots;
    spec.nroots = cfg->nroots;
  }
  return spec;
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

/* See engine_start.h. sub's message loses its code, which the new message
 * already starts with. */
int
engine_config_entry_fail(const VigilConfig *cfg, size_t i, const VigilError *sub,
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

bool
engine_config_entry_boots(const ConfigMonitor *cm)
{
  return cm->group == NULL || cm->autostart;
}

int
engine_start_config_monitors(Engine *e, VigilError *err)
{
  for (size_t i = 0; i < e->config.nmonitors; i++) {
    const ConfigMonitor *cm = &e->config.monitors[i];
    if (!engine_config_entry_boots(cm))
      continue; /* group_up starts it */
    Session *s = session_find(e->sessions, cm->session);
    if (s == NULL)
      s = session_create(e->sessions, cm->session, true);
    StartRequest req;
    start_request_copy(&req, &cm->req);
    req.group = cm->group ? xstrdup(cm->group) : NULL; /* an autostart entry's */
    char *note = NULL;
    VigilError sub = VIGIL_ERROR_INIT;
    e->booting = true;
    MonRecord *r = engine_start(e, s, &req, &note, &sub);
    e->booting = false;
    start_request_free(&req);
    /* No caller reads a boot monitor's result: its note (the names an
     * env_denied "drop" left out) goes to the log. */
    if (note != NULL)
      LOG_INFO("engine", "%s: monitors[%zu]: %s", e->config.path ? e->config.path : "config",
               i + 1, note);
    free(note);
    if (r == NULL)
      return engine_config_entry_fail(&e->config, i, &sub, err);
  }
  return 0;
}

/* See engine.h. The checks are engine_start's own (engine_check_start,
 * engine_check_counts, monitor_check), so a refusal reads as it would at
 * boot. Every boot monitor counts as running from its start on: at boot
 * they are all started before the loop runs, so none has ended yet. */
int
engine_check_config(const VigilConfig *cfg, VigilError *err)
{
  PolicySet *ps = engine_policies_for(cfg);
  int rc = engine_preload_policies(ps, cfg, err);
  for (size_t i = 0; rc == 0 && i < cfg->nmonitors; i++) {
    const ConfigMonitor *cm = &cfg->monitors[i];
    bool boots = engine_config_entry_boots(cm);
    size_t in_session = 0, total = 0;
    for (size_t k = 0; k < i; k++) {
      const ConfigMonitor *before = &cfg->monitors[k];
      total += engine_config_entry_boots(before);
      in_session += engine_config_entry_boots(before) && strcmp(before->session, cm->session) == 0;
    }
    StartRequest req;
    start_request_copy(&req, &cm->req);
    VigilError sub = VIGIL_ERROR_INIT;
    StartPlan plan;
    if (engine_check_start(cfg, ps, cm->session, &req, 0, &plan, &sub) == 0) {
      if (!boots || engine_check_counts(cfg, cm->session, in_session, total, &sub) == 0) {
        VigilSettings settings = engine_settings(cfg, &req);
        MonitorSpec spec = engine_spec(cfg, &req, &plan);
        monitor_check(&settings, &spec, &sub);
      }
      start_plan_free(&plan);
    }
    start_request_free(&req);
    if (sub.set)
      rc = engine_config_entry_fail(cfg, i, &sub, err);
  }
  policyset_free(ps);
  return rc;
}

/* See engine.h. */
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
  long reload_pid = e->booting ? 0 : (long)getpid();
  if (engine_check_start(cfg, e->policies, session_name(s), req, reload_pid, &plan, err) != 0)
    return NULL;
  if (engine_check_counts(cfg, session_name(s), engine_running_in(e, s), e->running, err) != 0) {
    start_plan_free(&plan);
    return NULL;
  }
  VigilSettings settings = engine_settings(cfg, req);
  MonitorSpec spec = engine_spec(cfg, req, &plan);
  if (e->state != NULL && e->keeper_program != NULL && req->source_file == NULL &&
      req->source_ws == NULL) {
    spec.keeper_program = e->keeper_program;
    spec.monitors_fd = e->state->monitors_fd;
  }
  MonRecord *r = xcalloc(1, sizeof *r);
  r->engine = e;
  r->session = s;
  r->monitor = monitor_start(e->loop, &settings, &spec, &engine__monitor_hooks, r, err);
  if (r->monitor == NULL) {
    free(r);
    start_plan_free(&plan);
    return NULL;
  }
  r->running = true;
  r->policy = xstrdup(plan.policy_name);
  r->start = startmap_pack(req, &spec, r->policy, settings.max_runtime_ms, &r->start_len);
  r->group = req->group ? xstrdup(req->group) : NULL;
  monitor_keep_spec(r->monitor, &spec, session_name(s), session_anonymous(s), r->group,
                    r->policy, r->start, r->start_len);
  *note = plan.note;
  plan.note = NULL;
  start_plan_free(&plan); /* the child is in the directory now */
  e->running++;
  r->next = e->records;
  if (e->records)
    e->records->prev = r;
  e->records = r;
  if (monitor_starting(r->monitor))
    return r; /* logged when its keeper answers (engine_on_started) */
  LOG_INFO("engine", "started %s (%s) in session %s, pid %d: %s", monitor_id(r->monitor),
           monitor_label(r->monitor), session_name(s), (int)monitor_pid(r->monitor),
           monitor_program(r->monitor));
  return r;
}
