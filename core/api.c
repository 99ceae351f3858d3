/*
 * The methods of docs/protocol.md section 5 (see api.h). One table maps a method
 * name to its handler and to the arguments it takes; anything else a caller
 * sends is refused before the handler runs. A handler reads its arguments,
 * acts on the engine and packs a result map into the call's buffer, or sets
 * the call's error; the dispatcher then answers (a request) or reports a
 * failure with a vigil.error notification (a notification call). Handlers
 * that answer later mark the call deferred and keep its msgid in a Waiter.
 */
#include "api.h"

#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "contain.h"
#include "envelope.h"
#include "epoch.h"
#include "log.h"
#include "memory.h"
#include "signals.h"
#include "textfmt.h"
#include "wire.h"

#define API_SESSION_NAME_MAX 64
#define API_STR_MAX 65536
#define API_COMMAND_MAX 65536
#define API_ARGV_MAX 4096
#define API_ENV_MAX 1024
#define API_PATTERN_BYTES_MAX 65536
#define API_WAIT_MAX_MS 3600000

typedef struct {
  Engine *e;
  Conn *c;
  bool is_request;
  uint32_t msgid;
  Args args;
  msgpack_sbuffer sb;
  msgpack_packer pk;
  VigilError err;
  bool deferred;
} Call;

typedef void (*ApiMethod)(Call *call);

/* --- answering ---------------------------------------------------------- */

/* Starts an answer for a deferred call: a fresh buffer and packer. */
static void
api_answer_begin(msgpack_sbuffer *sb, msgpack_packer *pk)
{
  msgpack_sbuffer_init(sb);
  msgpack_packer_init(pk, sb, msgpack_sbuffer_write);
}

/* Sends a packed result for a waiter (when its call was a request). */
static void
api_answer_waiter(Waiter *w, msgpack_sbuffer *sb, const VigilError *err)
{
  if (w->is_request)
    rpc_channel_respond(w->conn->ch, w->msgid, err, sb ? sb->data : NULL, sb ? sb->size : 0);
  else if (err)
    rpc_channel_error_notify(w->conn->ch, err);
}

/* --- shared argument readers -------------------------------------------- */

/* The session a call acts on (its `session` argument or the current one). */
static Session *
api_session(Call *call)
{
  char *name = NULL;
  if (args_str(&call->args, "session", API_SESSION_NAME_MAX, &name, &call->err) < 0)
    return NULL;
  Session *s = engine_conn_session(call->c, name, &call->err);
  free(name);
  return s;
}

/* The record named by the required monitor_id (or process_id) argument, in
 * the caller's session; another session's is not_found like an unknown id. */
static MonRecord *
api_record(Call *call, const char *key)
{
  Session *s = api_session(call);
  if (s == NULL)
    return NULL;
  char *id = NULL;
  int rc = args_str(&call->args, key, 64, &id, &call->err);
  if (rc < 0)
    return NULL;
  if (rc == 0) {
    error_set(&call->err, kErrInvalidParams, "%s is required", key);
    return NULL;
  }
  MonRecord *r = engine_find(call->e, s, id);
  if (r == NULL)
    error_set(&call->err, kErrNotFound, "%s: no monitor \"%s\" in session \"%s\"", key, id,
              session_name(s));
  free(id);
  return r;
}

/* Reads the arguments that monitor_start and process_run share into req:
 * command | argv, shell, cwd, env, memory_limit, cpu_limit. */
static int
api_read_command(Call *call, StartRequest *req)
{
  Args *a = &call->args;
  VigilError *err = &call->err;
  char *command = NULL;
  char **argv = NULL;
  size_t argc = 0;
  if (args_str(a, "command", API_COMMAND_MAX, &command, err) < 0 ||
      args_strv(a, "argv", API_ARGV_MAX, API_COMMAND_MAX, &argv, &argc, err) < 0 ||
      args_bool(a, "shell", &req->shell, err) < 0) {
    free(command);
    args_free_strv(argv);
    return -1;
  }
  int rc = 0;
  if (command && argv) {
    rc = error_set(err, kErrInvalidParams, "give command or argv, not both");
  } else if (!command && !argv) {
    rc = error_set(err, kErrInvalidParams, "command or argv is required");
  } else if (argv) {
    if (req->shell)
      rc = error_set(err, kErrInvalidParams, "shell: needs command, not argv");
    else if (argc == 0 || argv[0][0] == '\0')
      rc = error_set(err, kErrInvalidParams, "argv: must name a program (argv[0])");
    else
      argv_from(&req->argv, (const char *const *)argv, argc);
  } else if (req->shell) {
    if (command[0] == '\0')
      rc = error_set(err, kErrInvalidParams, "command: empty command");
    else
      gate_shell_argv(command, &req->argv);
  } else {
    rc = gate_split(command, "command", &req->argv, err);
  }
  free(command);
  args_free_strv(argv);
  if (rc != 0)
    return -1;
  uint64_t mem = 0;
  double cpu = 0;
  if (args_str(a, "cwd", 4096, &req->cwd, err) < 0 ||
      args_env(a, "env", API_ENV_MAX, &req->env, err) < 0 ||
      args_uint(a, "memory_limit", 1, INT64_MAX, &mem, err) < 0 ||
      args_double(a, "cpu_limit", 0.001, 4096, &cpu, err) < 0)
    return -1;
  req->memory_limit = (int64_t)mem;
  req->cpu_limit = cpu;
  return 0;
}

/* Whether this connection may have one more slow request waiting
 * (rpc.max_pending); sets limit_exceeded when not. */
static bool
api_reserve_pending(Call *call)
{
  long long max = (long long)call->e->config.settings.rpc_max_pending;
  if (call->c->npending < (size_t)max)
    return true;
  error_set(&call->err, kErrLimitExceeded,
            "rpc.max_pending is %lld and this connection has %zu requests waiting", max,
            call->c->npending);
  return false;
}

/* --- methods: basics ---------------------------------------------------- */

static void
api_ping(Call *call)
{
  msgpack_pack_map(&call->pk, 2);
  wire_key(&call->pk, "version");
  wire_str(&call->pk, VIGIL_VERSION);
  wire_key(&call->pk, "api_level");
  msgpack_pack_int(&call->pk, VIGIL_API_LEVEL);
}

/* session_each visitor: counts sessions and their dropped notifications. */
typedef struct {
  uint64_t sessions;
  uint64_t named;
  uint64_t dropped;
} SessionTally;

static void
api_tally_session(void *ctx, Session *s)
{
  SessionTally *t = ctx;
  t->sessions++;
  t->named += !session_anonymous(s);
  t->dropped += session_dropped_total(s);
}

/* api_info's "counters": what the engine's bounds have thrown away, and how
 * much it holds. */
static void
api_pack_engine_counters(Call *call)
{
  msgpack_packer *pk = &call->pk;
  Engine *e = call->e;
  SessionTally tally = {0, 0, 0};
  session_each(e->sessions, api_tally_session, &tally);
  size_t conns = 0;
  for (Conn *c = e->conns; c; c = c->next)
    conns++;
  EnvelopeCheckStats bodies;
  envelope_check_stats(&bodies);
  wire_key(pk, "counters");
  msgpack_pack_map(pk, 12);
  wire_key(pk, "connections");
  msgpack_pack_uint64(pk, conns);
  wire_key(pk, "sessions");
  msgpack_pack_uint64(pk, tally.sessions);
  wire_key(pk, "monitors_running");
  msgpack_pack_uint64(pk, e->running);
  wire_key(pk, "notifications_dropped");
  msgpack_pack_uint64(pk, tally.dropped);
  wire_key(pk, "connections_closed_slow");
  msgpack_pack_uint64(pk, rpc_channel_slow_closed());
  wire_key(pk, "connections_refused");
  msgpack_pack_uint64(pk, e->server ? rpc_server_refused(e->server) : 0);
  wire_key(pk, "connections_over_limit");
  msgpack_pack_uint64(pk, e->conns_refused);
  wire_key(pk, "log_lines_truncated");
  msgpack_pack_uint64(pk, log_lines_truncated());
  wire_key(pk, "log_lines_dropped");
  msgpack_pack_uint64(pk, log_lines_dropped());
  wire_key(pk, "policy_log_lines_dropped");
  msgpack_pack_uint64(pk, policy_log_lines_dropped());
  /* Policy bodies the engine refused (the built-in envelope was used): by
   * the prefix rule, and for being over their size bound. */
  wire_key(pk, "policy_bodies_refused");
  msgpack_pack_uint64(pk, bodies.refused);
  wire_key(pk, "policy_bodies_too_large");
  msgpack_pack_uint64(pk, bodies.refused_size);
}

/* api_info's "containment": how monitors' processes are tracked and their
 * limits enforced on this machine (contain.h), and the orphans it ended. */
static void
api_pack_containment(msgpack_packer *pk)
{
  ContainInfo ci;
  contain_info(&ci);
  wire_key(pk, "containment");
  msgpack_pack_map(pk, 10);
  wire_key(pk, "mode");
  wire_str(pk, ci.mode);
  wire_key(pk, "tracking");
  wire_str(pk, ci.tracking);
  wire_key(pk, "subreaper");
  ci.subreaper ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
  wire_key(pk, "cgroup");
  wire_str(pk, ci.cgroup);
  wire_key(pk, "max_processes");
  wire_str(pk, ci.max_processes);
  wire_key(pk, "cpu_limit");
  wire_str(pk, ci.cpu_limit);
  wire_key(pk, "memory_limit");
  wire_str(pk, ci.memory_limit);
  wire_key(pk, "orphans_reaped");
  msgpack_pack_uint64(pk, ci.orphans_reaped);
  wire_key(pk, "orphans_killed");
  msgpack_pack_uint64(pk, ci.orphans_killed);
  wire_key(pk, "scans_truncated");
  msgpack_pack_uint64(pk, ci.scans_truncated);
}

static void
api_info(Call *call)
{
  msgpack_packer *pk = &call->pk;
  const VigilConfig *cfg = &call->e->config;
  /* version, api_level, epoch, methods, error_codes, notification_types,
   * limits, counters, containment */
  msgpack_pack_map(pk, 9);
  wire_key(pk, "version");
  wire_str(pk, VIGIL_VERSION);
  wire_key(pk, "api_level");
  msgpack_pack_int(pk, VIGIL_API_LEVEL);
  wire_key(pk, "epoch");
  wire_str(pk, epoch_hex());
  wire_key(pk, "methods");
  size_t n = 0;
  while (api_method_names[n])
    n++;
  msgpack_pack_array(pk, n);
  for (size_t i = 0; i < n; i++)
    wire_str(pk, api_method_names[i]);
  wire_key(pk, "error_codes");
  msgpack_pack_map(pk, VIGIL_ERROR_COUNT);
  for (int i = 0; i < VIGIL_ERROR_COUNT; i++) {
    wire_key(pk, error_name(i));
    msgpack_pack_int(pk, i);
  }
  wire_key(pk, "notification_types");
  msgpack_pack_array(pk, NOTIFICATION_TYPE_COUNT);
  for (int i = 0; i < NOTIFICATION_TYPE_COUNT; i++)
    wire_str(pk, notification_type_name((NotificationType)i));
  wire_key(pk, "limits");
  size_t nlimits = 0;
  for (const SettingSpec *spec = settings_table; spec->name; spec++)
    nlimits++;
  msgpack_pack_map(pk, nlimits + 5);
  for (const SettingSpec *spec = settings_table; spec->name; spec++) {
    wire_key(pk, spec->name);
    if (spec->kind == kSettingEnum)
      wire_str(pk, spec->choices[settings_get(&cfg->settings, spec)]);
    else
      msgpack_pack_int64(pk, settings_get(&cfg->settings, spec));
  }
  wire_key(pk, "monitor.enabled");
  cfg->enabled ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
  wire_key(pk, "monitor.live_mode_enabled");
  cfg->live_mode_enabled ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
  wire_key(pk, "monitor.allow_shell");
  cfg->allow_shell ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
  wire_key(pk, "monitor.allow_persistent");
  cfg->allow_persistent ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
  wire_key(pk, "monitor.idle_timeout_max_ms");
  msgpack_pack_int(pk, MONITOR_IDLE_TIMEOUT_MAX_MS);
  api_pack_engine_counters(call);
  api_pack_containment(pk);
}

static void
api_config_reload(Call *call)
{
  if (engine_reload(call->e, &call->err) != 0)
    return;
  const char **names = NULL;
  size_t n = policyset_names(call->e->policies, &names);
  msgpack_pack_map(&call->pk, 2);
  wire_key(&call->pk, "reloaded");
  msgpack_pack_true(&call->pk);
  wire_key(&call->pk, "policies");
  msgpack_pack_array(&call->pk, n);
  for (size_t i = 0; i < n; i++)
    wire_str(&call->pk, names[i]);
}

/* --- methods: sessions -------------------------------------------------- */

/* Whether name is a session name a caller may choose. */
static bool
api_session_name_ok(const char *name)
{
  size_t n = strlen(name);
  if (n == 0 || n > API_SESSION_NAME_MAX || strncmp(name, "anon-", 5) == 0)
    return false;
  for (size_t i = 0; i < n; i++) {
    char ch = name[i];
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '.' || ch == '_' || ch == '-' || ch == ':';
    if (!ok)
      return false;
  }
  return true;
}

static void
api_session_open(Call *call)
{
  char *name = NULL;
  uint64_t last_seq = 0, linger = 0;
  int has_last = 0, has_linger = 0;
  if (args_str(&call->args, "session", 256, &name, &call->err) < 0 ||
      (has_last = args_uint(&call->args, "last_seq", 0, SESSION_SEQ_MAX, &last_seq,
                            &call->err)) < 0 ||
      (has_linger = args_uint(&call->args, "linger_ms", 0,
                              (uint64_t)call->e->config.settings.session_max_linger_ms, &linger,
                              &call->err)) < 0)
    goto done;
  if (name == NULL) {
    /* No name: a new named session with a generated one, which the gateway
     * can resume later like any other. */
    char id[24];
    textfmt_monitor_id(id);
    name = xmalloc(32);
    snprintf(name, 32, "ses_%s", id + 4);
  } else if (!api_session_name_ok(name)) {
    error_set(&call->err, kErrInvalidParams,
              "session: \"%.64s\" must be 1..%d characters of [A-Za-z0-9._:-], not starting "
              "with \"anon-\"",
              name, API_SESSION_NAME_MAX);
    goto done;
  }
  Session *s = session_find(call->e->sessions, name);
  bool resumed = s != NULL;
  if (s == NULL) {
    SessionTally tally = {0, 0, 0};
    session_each(call->e->sessions, api_tally_session, &tally);
    long long max = (long long)call->e->config.settings.session_max_sessions;
    if ((long long)tally.named >= max) {
      error_set(&call->err, kErrLimitExceeded,
                "session.max_sessions is %lld and %llu named sessions exist", max,
                (unsigned long long)tally.named);
      goto done;
    }
    s = session_create(call->e->sessions, name, false);
  }
  if (has_linger == 1)
    session_set_linger(s, linger); /* a terminal's session outlives its commands */
  if (engine_conn_attach(call->c, s, has_last == 1, last_seq, &call->err) != 0)
    goto done;
  msgpack_pack_map(&call->pk, 4);
  wire_key(&call->pk, "session");
  wire_str(&call->pk, session_name(s));
  wire_key(&call->pk, "resumed");
  resumed ? msgpack_pack_true(&call->pk) : msgpack_pack_false(&call->pk);
  wire_key(&call->pk, "next_seq");
  msgpack_pack_uint64(&call->pk, session_next_seq(s));
  /* Seqs are this engine's: with the epoch a host can tell a restart. */
  wire_key(&call->pk, "epoch");
  wire_str(&call->pk, epoch_hex());
done:
  free(name);
}

static void
api_session_state(Call *call)
{
  static const char *const states[] = {"busy", "idle", NULL};
  Session *s = api_session(call);
  if (s == NULL)
    return;
  int state = -1;
  int rc = args_choice(&call->args, "state", states, &state, &call->err);
  if (rc < 0)
    return;
  if (rc == 0) {
    error_set(&call->err, kErrInvalidParams, "state is required (\"busy\" | \"idle\")");
    return;
  }
  size_t delivered = session_set_busy(s, state == 0);
  msgpack_pack_map(&call->pk, 2);
  wire_key(&call->pk, "state");
  wire_str(&call->pk, states[state]);
  wire_key(&call->pk, "delivered");
  msgpack_pack_uint64(&call->pk, delivered);
}

static void
api_session_close(Call *call)
{
  Session *s = api_session(call);
  if (s == NULL)
    return;
  size_t stopped = engine_close_session(call->e, s);
  msgpack_pack_map(&call->pk, 1);
  wire_key(&call->pk, "stopped");
  msgpack_pack_uint64(&call->pk, stopped);
}

/* One session_list entry. */
static void
api_pack_session(Call *call, Session *s)
{
  msgpack_packer *pk = &call->pk;
  msgpack_pack_map(pk, 5);
  wire_key(pk, "session");
  wire_str(pk, session_name(s));
  wire_key(pk, "attached");
  msgpack_pack_uint64(pk, session_attached(s));
  wire_key(pk, "monitors");
  msgpack_pack_uint64(pk, engine_running_in(call->e, s));
  wire_key(pk, "state");
  wire_str(pk, session_busy(s) ? "busy" : "idle");
  wire_key(pk, "queued");
  msgpack_pack_uint64(pk, session_queued(s));
}

static void
api_session_list(Call *call)
{
  Conn *c = call->c;
  msgpack_pack_map(&call->pk, 1);
  wire_key(&call->pk, "sessions");
  msgpack_pack_array(&call->pk, 1 + c->nopened);
  api_pack_session(call, c->anon);
  for (size_t i = 0; i < c->nopened; i++)
    api_pack_session(call, c->opened[i].s);
}

/* --- methods: monitors -------------------------------------------------- */

static void
api_monitor_start(Call *call)
{
  static const char *const streams[] = {"both", "stdout", "stderr", NULL};
  static const char *const notifies[] = {"auto", "matches", "lines", "exit", "none", NULL};
  static const char *const modes[] = {"idle", "live_safe", NULL};
  Args *a = &call->args;
  VigilError *err = &call->err;
  const VigilSettings *set = &call->e->config.settings;
  Session *s = api_session(call);
  if (s == NULL)
    return;
  StartRequest req = {0};
  char *match_pattern = NULL;
  int ms = 0, nt = 0, md = 0;
  uint64_t timeout = 0, idle = 0;
  if (api_read_command(call, &req) < 0 ||
      args_str(a, "label", MONITOR_LABEL_MAX, &req.label, err) < 0 ||
      args_str(a, "description", MONITOR_DESCRIPTION_MAX, &req.description, err) < 0 ||
      args_strv(a, "patterns", 100000, API_PATTERN_BYTES_MAX, &req.patterns, &req.npatterns, err) <
          0 ||
      args_str(a, "match_pattern", API_PATTERN_BYTES_MAX, &match_pattern, err) < 0 ||
      args_choice(a, "match_streams", streams, &ms, err) < 0 ||
      args_choice(a, "notify", notifies, &nt, err) < 0 ||
      args_choice(a, "mode", modes, &md, err) < 0 ||
      args_str(a, "policy", 256, &req.policy, err) < 0 ||
      args_uint(a, "timeout_ms", 1, (uint64_t)set->max_runtime_ms, &timeout, err) < 0 ||
      args_bool(a, "persistent", &req.persistent, err) < 0 ||
      args_uint(a, "idle_timeout_ms", 0, MONITOR_IDLE_TIMEOUT_MAX_MS, &idle, err) < 0)
    goto done;
  if (match_pattern) {
    if (req.patterns) {
      error_set(err, kErrInvalidParams, "give patterns or match_pattern, not both");
      goto done;
    }
    req.patterns = xcalloc(2, sizeof(char *));
    req.patterns[0] = match_pattern;
    req.npatterns = 1;
    match_pattern = NULL;
  }
  if (timeout && req.persistent) {
    error_set(err, kErrInvalidParams, "give timeout_ms or persistent, not both");
    goto done;
  }
  req.match_streams = (MatchStreams)ms;
  req.notify = (NotifyMode)nt;
  req.mode = (DeliveryMode)md;
  req.timeout_ms = (int64_t)timeout;
  req.idle_timeout_ms = (int64_t)idle;
  char *note = NULL;
  MonRecord *r = engine_start(call->e, s, &req, &note, err);
  if (r == NULL)
    goto done;
  Monitor *m = r->monitor;
  msgpack_packer *pk = &call->pk;
  msgpack_pack_map(pk, 7);
  wire_key(pk, "monitor_id");
  wire_str(pk, monitor_id(m));
  wire_key(pk, "label");
  wire_str(pk, monitor_label(m));
  wire_key(pk, "mode");
  wire_str(pk, monitor_mode_name(monitor_mode(m)));
  wire_key(pk, "notify");
  wire_str(pk, monitor_notify_name(monitor_notify(m)));
  wire_key(pk, "pid");
  msgpack_pack_int(pk, monitor_pid(m));
  wire_key(pk, "started_at");
  wire_time(pk, monitor_started_at(m));
  wire_key(pk, "note");
  wire_str(pk, note);
  free(note);
done:
  free(match_pattern);
  start_request_free(&req);
}

/* {status, state, exit_code, signal} of a stop. */
static void
api_pack_stop(msgpack_packer *pk, const char *status, const Monitor *m)
{
  msgpack_pack_map(pk, 4);
  wire_key(pk, "status");
  wire_str(pk, status);
  wire_key(pk, "state");
  wire_str(pk, monitor_state_name(monitor_state(m)));
  wire_exit_status(pk, m);
}

static void
api_monitor_stop(Call *call)
{
  MonRecord *r = api_record(call, "monitor_id");
  if (r == NULL)
    return;
  int sig = SIGTERM;
  const msgpack_object *so = args_get(&call->args, "signal");
  if (so != NULL) {
    if (so->type == MSGPACK_OBJECT_POSITIVE_INTEGER && so->via.u64 > 0 && so->via.u64 < 65 &&
        signals_name((int)so->via.u64) != NULL) {
      sig = (int)so->via.u64;
    } else if (so->type == MSGPACK_OBJECT_STR && so->via.str.size < 16) {
      char name[16];
      memcpy(name, so->via.str.ptr, so->via.str.size);
      name[so->via.str.size] = '\0';
      sig = signals_number(name);
      if (sig < 0) {
        error_set(&call->err, kErrInvalidParams,
                  "signal must be a signal name such as \"SIGTERM\" or \"SIGKILL\", got \"%s\"",
                  name);
        return;
      }
    } else {
      error_set(&call->err, kErrInvalidParams,
                "signal must be a signal name such as \"SIGTERM\" or \"SIGKILL\"");
      return;
    }
  }
  uint64_t grace = (uint64_t)call->e->config.settings.kill_grace_ms;
  if (args_uint(&call->args, "grace_ms", 0, 600000, &grace, &call->err) < 0)
    return;
  Monitor *m = r->monitor;
  if (!r->running) {
    if (monitor_state(m) != kMonStopped) {
      error_set(&call->err, kErrAlreadyExited, "monitor_id: %s has already ended (%s)",
                monitor_id(m), monitor_state_name(monitor_state(m)));
      return;
    }
    api_pack_stop(&call->pk, "already_stopped", m);
    return;
  }
  int rc = monitor_stop(m, sig, (int64_t)grace);
  if (rc == 2) {
    error_set(&call->err, kErrAlreadyExited,
              "monitor_id: the process of %s has already exited (its output is being read)",
              monitor_id(m));
    return;
  }
  if (rc != 0) {
    api_pack_stop(&call->pk, "already_stopped", m); /* a stop is already under way */
    return;
  }
  if (!call->is_request)
    return;
  engine_wait_add(call->c, r, kWaitStop, call->msgid, true);
  call->deferred = true;
}

/* Whether r passes monitor_list's filters. */
static bool
api_list_wants(MonRecord *r, bool include_exited, int state)
{
  MonitorState st = monitor_state(r->monitor);
  if (state >= 0)
    return (int)st == state;
  return include_exited || r->running;
}

static void
api_monitor_list(Call *call)
{
  static const char *const states[] = {"running", "exited", "stopped", "timed_out",
                                       "idle_timeout", "overloaded", "failed", NULL};
  Session *s = api_session(call);
  if (s == NULL)
    return;
  bool include_exited = false;
  int state = -1;
  uint64_t limit = 50;
  if (args_bool(&call->args, "include_exited", &include_exited, &call->err) < 0 ||
      args_choice(&call->args, "state", states, &state, &call->err) < 0 ||
      args_uint(&call->args, "limit", 1, 10000, &limit, &call->err) < 0)
    return;
  size_t total = 0;
  for (MonRecord *r = call->e->records; r; r = r->next)
    total += r->session == s && api_list_wants(r, include_exited, state);
  size_t shown = total < limit ? total : (size_t)limit;
  msgpack_pack_map(&call->pk, 2);
  wire_key(&call->pk, "monitors");
  msgpack_pack_array(&call->pk, shown);
  size_t n = 0;
  for (MonRecord *r = call->e->records; r && n < shown; r = r->next) {
    if (r->session == s && api_list_wants(r, include_exited, state)) {
      wire_monitor(&call->pk, r->monitor, false);
      n++;
    }
  }
  wire_key(&call->pk, "total");
  msgpack_pack_uint64(&call->pk, total);
}

static void
api_monitor_status(Call *call)
{
  MonRecord *r = api_record(call, "monitor_id");
  if (r)
    wire_monitor(&call->pk, r->monitor, true);
}

/* ring_query visitor packing lines into an array (counted beforehand). */
typedef struct {
  msgpack_packer *pk;
  uint64_t last_seq;
} LinePack;

static void
api_pack_ring_line(void *ctx, const RingLine *line)
{
  LinePack *lp = ctx;
  wire_ring_line(lp->pk, line);
  lp->last_seq = line->seq;
}

static void
api_count_line(void *ctx, const RingLine *line)
{
  (*(size_t *)ctx)++;
}

static void
api_monitor_output(Call *call)
{
  static const char *const streams[] = {"all", "matched", "unmatched", "stdout", "stderr", NULL};
  MonRecord *r = api_record(call, "monitor_id");
  if (r == NULL)
    return;
  int stream = 0;
  uint64_t since = 0, limit = 0;
  const Ring *ring = monitor_ring(r->monitor);
  if (args_choice(&call->args, "stream", streams, &stream, &call->err) < 0 ||
      args_uint(&call->args, "since_sequence", 0, UINT64_MAX, &since, &call->err) < 0 ||
      args_uint(&call->args, "limit", 1, ring->max_lines, &limit, &call->err) < 0)
    return;
  static const RingFilter filters[] = {kRingAll, kRingMatched, kRingUnmatched, kRingStdout,
                                       kRingStderr};
  size_t count = 0;
  ring_query(ring, filters[stream], since, (size_t)limit, api_count_line, &count);
  msgpack_pack_map(&call->pk, 3);
  wire_key(&call->pk, "lines");
  msgpack_pack_array(&call->pk, count);
  LinePack lp = {&call->pk, since};
  ring_query(ring, filters[stream], since, (size_t)limit, api_pack_ring_line, &lp);
  wire_key(&call->pk, "counters");
  MonitorCounters c;
  monitor_counters(r->monitor, &c);
  wire_counters(&call->pk, &c);
  wire_key(&call->pk, "next_sequence");
  msgpack_pack_uint64(&call->pk, lp.last_seq);
}

/* What monitor_logs read from one stream: wanted, the span, and where the
 * next page starts. */
typedef struct {
  bool wanted;
  CaptureSpan span;
  uint64_t next_offset;    /* the offset to ask next: past the last byte returned */
  bool more;               /* bytes exist past next_offset now */
} LogRead;

/* Reads one stream's capture from offset (limit bytes at most). */
static LogRead
api_read_capture(const Capture *cap, bool wanted, uint64_t offset, uint64_t limit)
{
  LogRead lr = {wanted, {NULL, 0, NULL, 0, offset, false}, 0, false};
  if (!wanted)
    return lr;
  lr.span = capture_read(cap, offset, limit);
  lr.next_offset = lr.span.offset + lr.span.n1 + lr.span.n2;
  lr.more = lr.next_offset < cap->total;
  return lr;
}

/* Packs a stream's bytes (bin), or nil when not asked for. */
static void
api_pack_capture(msgpack_packer *pk, const LogRead *lr)
{
  if (!lr->wanted) {
    msgpack_pack_nil(pk);
    return;
  }
  msgpack_pack_bin(pk, lr->span.n1 + lr->span.n2);
  msgpack_pack_bin_body(pk, lr->span.p1, lr->span.n1);
  msgpack_pack_bin_body(pk, lr->span.p2, lr->span.n2);
}

/* Packs a stream's next offset, or nil when not asked for. */
static void
api_pack_next_offset(msgpack_packer *pk, const LogRead *lr)
{
  if (lr->wanted)
    msgpack_pack_uint64(pk, lr->next_offset);
  else
    msgpack_pack_nil(pk);
}

/* monitor_logs. Two flags that are easy to confuse, side by side:
 * `truncated` (the contract, binding; docs/protocol.md) says the start asked for had been
 * evicted, so the bytes begin later than `offset`; `more` (vigil's) says
 * bytes exist past what was returned, in either stream asked for, so a
 * pager asks again from `*_next_offset` until `more` is false. */
static void
api_monitor_logs(Call *call)
{
  static const char *const streams[] = {"both", "stdout", "stderr", NULL};
  MonRecord *r = api_record(call, "monitor_id");
  if (r == NULL)
    return;
  int stream = 0;
  uint64_t offset = 0, limit = UINT64_MAX;
  if (args_choice(&call->args, "stream", streams, &stream, &call->err) < 0 ||
      args_uint(&call->args, "offset", 0, UINT64_MAX, &offset, &call->err) < 0 ||
      args_uint(&call->args, "limit", 0, UINT64_MAX, &limit, &call->err) < 0)
    return;
  const Capture *out = monitor_capture(r->monitor, kStreamStdout);
  const Capture *errc = monitor_capture(r->monitor, kStreamStderr);
  LogRead o = api_read_capture(out, stream != 2, offset, limit);
  LogRead e = api_read_capture(errc, stream != 1, offset, limit);
  bool truncated = o.span.truncated || e.span.truncated;
  msgpack_packer *pk = &call->pk;
  msgpack_pack_map(pk, 9);
  wire_key(pk, "stdout");
  api_pack_capture(pk, &o);
  wire_key(pk, "stderr");
  api_pack_capture(pk, &e);
  wire_key(pk, "stdout_size");
  msgpack_pack_uint64(pk, out->total);
  wire_key(pk, "stderr_size");
  msgpack_pack_uint64(pk, errc->total);
  wire_key(pk, "truncated");
  truncated ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
  wire_key(pk, "more");
  o.more || e.more ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
  wire_key(pk, "stdout_next_offset");
  api_pack_next_offset(pk, &o);
  wire_key(pk, "stderr_next_offset");
  api_pack_next_offset(pk, &e);
  wire_key(pk, "state");
  wire_str(pk, monitor_state_name(monitor_state(r->monitor)));
}

static void
api_pack_event_visit(void *ctx, const Event *ev)
{
  wire_event(ctx, ev);
}

static void
api_count_event(void *ctx, const Event *ev)
{
  (*(size_t *)ctx)++;
}

static void
api_monitor_events(Call *call)
{
  MonRecord *r = api_record(call, "monitor_id");
  if (r == NULL)
    return;
  uint64_t since = 0;
  if (args_uint(&call->args, "since_event_id", 0, UINT64_MAX, &since, &call->err) < 0)
    return;
  const EventLog *log = monitor_events(r->monitor);
  size_t count = 0;
  eventlog_since(log, since, api_count_event, &count);
  msgpack_pack_map(&call->pk, 3);
  wire_key(&call->pk, "events");
  msgpack_pack_array(&call->pk, count);
  eventlog_since(log, since, api_pack_event_visit, &call->pk);
  wire_key(&call->pk, "dropped");
  msgpack_pack_uint64(&call->pk, log->dropped);
  wire_key(&call->pk, "text");
  StrBuf text = STRBUF_INIT;
  eventlog_render(log, since, monitor_pattern_sources(r->monitor),
                  monitor_pattern_count(r->monitor), &text);
  wire_strn(&call->pk, strbuf_cstr(&text), text.len);
  strbuf_free(&text);
}

/* The event types that end a monitor (monitor_wait for: "exit"). */
#define API_ENDING_EVENTS                                                             \
  ((1u << kEventStopped) | (1u << kEventExited) | (1u << kEventTimedOut) |            \
   (1u << kEventIdleTimeout) | (1u << kEventOverload))

/* {event, timed_out, state, last_sequence} */
static void
api_pack_wait(msgpack_packer *pk, const Event *ev, bool timed_out, const Monitor *m)
{
  msgpack_pack_map(pk, 4);
  wire_key(pk, "event");
  if (ev)
    wire_event(pk, ev);
  else
    msgpack_pack_nil(pk);
  wire_key(pk, "timed_out");
  timed_out ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
  wire_key(pk, "state");
  wire_str(pk, monitor_state_name(monitor_state(m)));
  /* The newest line's seq: a follower passes it back as since_sequence. */
  wire_key(pk, "last_sequence");
  msgpack_pack_uint64(pk, ring_last(monitor_ring(m)).seq);
}

/* Whether the ring holds a line with seq > since (for: "output"). */
static bool
api_has_output_after(const Monitor *m, uint64_t since)
{
  RingLine last = ring_last(monitor_ring(m));
  return last.text != NULL && last.seq > since;
}

/* Answers a monitor_wait and retires its waiter. */
static void
api_wait_answer(Waiter *w, const Event *ev, bool timed_out)
{
  msgpack_sbuffer sb;
  msgpack_packer pk;
  api_answer_begin(&sb, &pk);
  api_pack_wait(&pk, ev, timed_out, w->rec->monitor);
  api_answer_waiter(w, &sb, NULL);
  msgpack_sbuffer_destroy(&sb);
  engine_wait_done(w);
}

static void
api_wait_timeout(uv_timer_t *t)
{
  api_wait_answer(t->data, NULL, true);
}

static void
api_monitor_wait(Call *call)
{
  static const char *const kinds[] = {"exit", "match", "event", "output", NULL};
  MonRecord *r = api_record(call, "monitor_id");
  if (r == NULL)
    return;
  int kind = 0;
  uint64_t since = 0, since_seq = 0, timeout = 30000;
  if (args_choice(&call->args, "for", kinds, &kind, &call->err) < 0 ||
      args_uint(&call->args, "since_event_id", 0, UINT64_MAX, &since, &call->err) < 0 ||
      args_uint(&call->args, "since_sequence", 0, UINT64_MAX, &since_seq, &call->err) < 0 ||
      args_uint(&call->args, "timeout_ms", 0, API_WAIT_MAX_MS, &timeout, &call->err) < 0)
    return;
  bool for_output = kind == 3;
  unsigned mask = kind == 0 ? API_ENDING_EVENTS : kind == 1 ? (1u << kEventMatch)
                  : kind == 2 ? ~0u : 0u;
  const Event *ev = for_output ? NULL : eventlog_find(monitor_events(r->monitor), since, mask);
  bool ready = ev != NULL || (for_output && api_has_output_after(r->monitor, since_seq));
  if (ready || timeout == 0 || !r->running) {
    /* Already there, or it can never come (the monitor has ended). */
    api_pack_wait(&call->pk, ev, !ready && r->running, r->monitor);
    return;
  }
  if (!call->is_request)
    return;
  if (!api_reserve_pending(call))
    return;
  Waiter *w = engine_wait_add(call->c, r, kWaitEvent, call->msgid, true);
  w->type_mask = mask;
  w->since_event_id = since;
  w->for_output = for_output;
  w->since_sequence = since_seq;
  uv_timer_start(&w->timer, api_wait_timeout, timeout, 0);
  call->deferred = true;
}

/* --- process_run -------------------------------------------------------- */

/* The last n lines of one stream, joined by '\n'. */
typedef struct {
  StrBuf *sb;
} Summary;

static void
api_summary_line(void *ctx, const RingLine *line)
{
  Summary *s = ctx;
  if (s->sb->len)
    strbuf_putc(s->sb, '\n');
  strbuf_append(s->sb, line->text, line->len);
}

/* The process_run result map for r. */
static void
api_pack_run(msgpack_packer *pk, MonRecord *r, uint64_t stdout_lines)
{
  Monitor *m = r->monitor;
  ProcExit x;
  monitor_usage(m, &x);
  msgpack_pack_map(pk, 8);
  wire_key(pk, "process_id");
  wire_str(pk, monitor_id(m));
  wire_key(pk, "state");
  wire_str(pk, monitor_state_name(monitor_state(m)));
  wire_exit_status(pk, m);
  static const RingFilter filters[] = {kRingStdout, kRingStderr};
  static const char *const keys[] = {"stdout_summary", "stderr_summary"};
  for (int i = 0; i < 2; i++) {
    wire_key(pk, keys[i]);
    StrBuf sb = STRBUF_INIT;
    Summary s = {&sb};
    if (stdout_lines > 0)
      ring_query(monitor_ring(m), filters[i], 0, (size_t)stdout_lines, api_summary_line, &s);
    wire_strn(pk, strbuf_cstr(&sb), sb.len);
    strbuf_free(&sb);
  }
  wire_key(pk, "duration_ms");
  msgpack_pack_uint64(pk, monitor_duration_ms(m));
  wire_key(pk, "resource_usage");
  wire_resource_usage(pk, &x);
}

static void
api_process_run(Call *call)
{
  Args *a = &call->args;
  VigilError *err = &call->err;
  Session *s = api_session(call);
  if (s == NULL)
    return;
  StartRequest req = {0};
  uint64_t timeout_s = 300, lines = 100;
  int has_timeout = 0;
  bool background = false;
  const char *stdin_data = NULL;
  size_t stdin_len = 0;
  if (api_read_command(call, &req) < 0 ||
      args_str(a, "label", MONITOR_LABEL_MAX, &req.label, err) < 0 ||
      /* A larger stdin cannot arrive: the message holding it is skipped. */
      args_bytes(a, "stdin", (size_t)call->e->config.settings.rpc_max_message_bytes,
                 &stdin_data, &stdin_len, err) < 0 ||
      (has_timeout = args_uint(a, "timeout_s", 1, 3600, &timeout_s, err)) < 0 ||
      args_uint(a, "stdout_lines", 0, 10000, &lines, err) < 0 ||
      args_bool(a, "background", &background, err) < 0)
    goto done;
  if (stdin_data) {
    req.stdin_data = xmemdupz(stdin_data, stdin_len);
    req.stdin_len = stdin_len;
  }
  if (background) {
    /* A background run says when it ends. Without timeout_s it outlives any
     * foreground cap (seed 001: multi-hour builds go to the background): it
     * is persistent where the config allows it. */
    req.notify = kNotifyExit;
    if (has_timeout == 1) {
      req.timeout_ms = (int64_t)timeout_s * 1000;
      req.process_run = true;
    } else {
      req.persistent = call->e->config.allow_persistent;
    }
  } else {
    if (!call->is_request) {
      error_set(err, kErrInvalidParams, "a foreground process_run must be a request (it answers)");
      goto done;
    }
    if (!api_reserve_pending(call))
      goto done;
    req.notify = kNotifyNone;
    req.timeout_ms = (int64_t)timeout_s * 1000;
    req.process_run = true;
  }
  char *note = NULL;
  MonRecord *r = engine_start(call->e, s, &req, &note, err);
  free(note);
  if (r == NULL)
    goto done;
  if (background) {
    api_pack_run(&call->pk, r, lines);
  } else {
    Waiter *w = engine_wait_add(call->c, r, kWaitRun, call->msgid, true);
    w->stdout_lines = lines;
    call->deferred = true;
  }
done:
  start_request_free(&req);
}

/* --- hooks from the engine ---------------------------------------------- */

void
api_on_event(Engine *e, MonRecord *r, const Event *ev)
{
  Waiter *next;
  for (Waiter *w = r->waiters; w; w = next) {
    next = w->rec_next;
    if (w->kind == kWaitEvent && (w->type_mask & (1u << ev->type)) && ev->id > w->since_event_id)
      api_wait_answer(w, ev, false);
  }
}

void
api_on_lines(Engine *e, MonRecord *r)
{
  Waiter *next;
  for (Waiter *w = r->waiters; w; w = next) {
    next = w->rec_next;
    if (w->kind == kWaitEvent && w->for_output &&
        api_has_output_after(r->monitor, w->since_sequence))
      api_wait_answer(w, NULL, false);
  }
}

void
api_on_finished(Engine *e, MonRecord *r)
{
  while (r->waiters) {
    Waiter *w = r->waiters;
    msgpack_sbuffer sb;
    msgpack_packer pk;
    api_answer_begin(&sb, &pk);
    switch (w->kind) {
    case kWaitStop:
      api_pack_stop(&pk, "stopped", r->monitor);
      break;
    case kWaitRun:
      api_pack_run(&pk, r, w->stdout_lines);
      break;
    default:
      /* What it waited for can no longer happen. */
      api_pack_wait(&pk, NULL, false, r->monitor);
      break;
    }
    api_answer_waiter(w, &sb, NULL);
    msgpack_sbuffer_destroy(&sb);
    engine_wait_done(w);
  }
}

void
api_cancel_waiter(Waiter *w)
{
  VigilError err = VIGIL_ERROR_INIT;
  error_set(&err, kErrNotFound, "monitor_id: %s went away with its session",
            monitor_id(w->rec->monitor));
  api_answer_waiter(w, NULL, &err);
  engine_wait_done(w);
}

/* --- the table and dispatch --------------------------------------------- */

#define ARGS(...) ((const char *const[]){"session", __VA_ARGS__, NULL})

static const struct {
  const char *name;
  ApiMethod fn;
  const char *const *known;
} api_methods[] = {
  {"ping", api_ping, (const char *const[]){"session", NULL}},
  {"api_info", api_info, (const char *const[]){"session", NULL}},
  {"config_reload", api_config_reload, (const char *const[]){"session", NULL}},
  {"session_open", api_session_open,
   (const char *const[]){"session", "last_seq", "linger_ms", NULL}},
  {"session_state", api_session_state, ARGS("state")},
  {"session_close", api_session_close, (const char *const[]){"session", NULL}},
  {"session_list", api_session_list, (const char *const[]){"session", NULL}},
  {"monitor_start", api_monitor_start,
   ARGS("command", "argv", "shell", "label", "description", "cwd", "env", "patterns",
        "match_pattern", "match_streams", "notify", "mode", "policy", "timeout_ms",
        "persistent", "idle_timeout_ms", "memory_limit", "cpu_limit")},
  {"monitor_stop", api_monitor_stop, ARGS("monitor_id", "signal", "grace_ms")},
  {"monitor_list", api_monitor_list, ARGS("include_exited", "state", "limit")},
  {"monitor_status", api_monitor_status, ARGS("monitor_id")},
  {"monitor_output", api_monitor_output, ARGS("monitor_id", "stream", "since_sequence", "limit")},
  {"monitor_logs", api_monitor_logs, ARGS("monitor_id", "stream", "offset", "limit")},
  {"monitor_events", api_monitor_events, ARGS("monitor_id", "since_event_id")},
  {"monitor_wait", api_monitor_wait,
   ARGS("monitor_id", "for", "since_event_id", "since_sequence", "timeout_ms")},
  {"process_run", api_process_run,
   ARGS("command", "argv", "shell", "cwd", "env", "stdin", "timeout_s", "stdout_lines",
        "background", "memory_limit", "cpu_limit", "label")},
};

#define API_METHOD_COUNT (sizeof api_methods / sizeof api_methods[0])

const char *const api_method_names[] = {
  "ping", "api_info", "config_reload", "session_open", "session_state", "session_close", "session_list",
  "monitor_start", "monitor_stop", "monitor_list", "monitor_status", "monitor_output",
  "monitor_logs", "monitor_events", "monitor_wait", "process_run", NULL,
};

static void
api_on_call(void *data, RpcChannel *ch, bool is_request, uint32_t msgid, const char *method,
            size_t method_len, const msgpack_object *args)
{
  Conn *c = rpc_channel_user(ch);
  if (c == NULL)
    return;
  Call call = {.e = c->engine, .c = c, .is_request = is_request, .msgid = msgid};
  call.err.set = false;
  size_t i = 0;
  while (i < API_METHOD_COUNT &&
         !(strlen(api_methods[i].name) == method_len &&
           memcmp(api_methods[i].name, method, method_len) == 0))
    i++;
  api_answer_begin(&call.sb, &call.pk);
  if (i == API_METHOD_COUNT) {
    error_set(&call.err, kErrUnknownMethod, "no method \"%.*s\" (api_info lists them)",
              (int)method_len, method);
  } else {
    call.args.map = args;
    call.args.method = api_methods[i].name;
    /* `session` names a session this connection opened, for every method
     * (session_open excepted: there it names the session to open). */
    bool session_ok = api_methods[i].fn == api_session_open || api_session(&call) != NULL;
    if (session_ok && args_check_known(&call.args, api_methods[i].known, &call.err) == 0)
      api_methods[i].fn(&call);
  }
  if (call.err.set) {
    if (is_request)
      rpc_channel_respond(ch, msgid, &call.err, NULL, 0);
    else
      rpc_channel_error_notify(ch, &call.err);
  } else if (!call.deferred && is_request) {
    if (call.sb.size == 0)
      msgpack_pack_map(&call.pk, 0);
    rpc_channel_respond(ch, msgid, NULL, call.sb.data, call.sb.size);
  }
  msgpack_sbuffer_destroy(&call.sb);
}

static void
api_on_open(void *data, RpcChannel *ch)
{
  Engine *e = data;
  if (e->nconns >= (size_t)e->config.settings.rpc_max_connections) {
    /* Past the bound the connection is not served at all (it never gets a
     * session), so it costs nothing beyond its close. */
    e->conns_refused++;
    LOG_WARN("api", "refused a connection from %s: rpc.max_connections (%lld) reached",
             rpc_channel_peer(ch), (long long)e->config.settings.rpc_max_connections);
    rpc_channel_close(ch, "rpc.max_connections reached");
    return;
  }
  Conn *c = engine_conn_open(e, ch);
  LOG_INFO("api", "connection from %s (session %s)", rpc_channel_peer(ch),
           session_name(c->anon));
}

static void
api_on_close(void *data, RpcChannel *ch, const char *reason)
{
  Conn *c = rpc_channel_user(ch);
  LOG_INFO("api", "connection from %s closed: %s", rpc_channel_peer(ch), reason);
  if (c != NULL) {
    rpc_channel_set_user(ch, NULL);
    engine_conn_close(c);
  }
}

static const RpcHandlers api_handlers = {api_on_open, api_on_call, api_on_close};

static RpcLimits
api_limits(const Engine *e)
{
  /* oversize_closes is the transport's to decide (rpc/server.c). */
  RpcLimits l = {(size_t)e->config.settings.rpc_max_message_bytes,
                 (size_t)e->config.settings.rpc_max_output_bytes, false};
  return l;
}

/* Draws the engine's epoch as the engine starts serving, and logs it, so
 * that a log line ties a host's (epoch, seq) to this run. */
static void
api_draw_epoch(void)
{
  LOG_INFO("api", "engine epoch %s", epoch_hex());
}

int
api_listen(Engine *e, const char *path, VigilError *err)
{
  api_draw_epoch();
  RpcLimits limits = api_limits(e);
  e->server = rpc_server_listen(e->loop, path, &limits, &api_handlers, e, err);
  return e->server ? 0 : -1;
}

int
api_open_stdio(Engine *e, VigilError *err)
{
  api_draw_epoch();
  RpcLimits limits = api_limits(e);
  RpcChannel *ch = rpc_stdio_open(e->loop, &limits, &api_handlers, e, err);
  if (ch == NULL)
    return -1;
  e->stdio_mode = true;
  return 0;
}
