/*
 * The subcommands that start and stop monitors: start (a command in the
 * background, then optionally wait until it prints a line it is ready:
 * cli_waitfor.h) and stop; and the building of a start's arguments, which
 * run (cli_run.c) shares.
 *
 * The command is always sent as argv, exactly the words given after "--",
 * never joined and re-split; --shell sends one command line for /bin/sh -c
 * instead. The working directory is the caller's own unless --cwd says
 * otherwise (the engine's would surprise a person at a terminal), and a
 * relative --cwd is taken from the caller's directory too. The environment
 * is the engine's plus every --env K=V: the caller's own is not sent unless
 * asked (--pass-env, --pass-env-all: cli_callerenv.h).
 */
#include "cli/cli_cmds.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/cli_callerenv.h"
#include "cli/cli_json.h"
#include "cli/cli_obj.h"
#include "cli/cli_waitfor.h"
#include "cli/cli_waitready.h"
#include "base/error.h"
#include "base/signals.h"
#include "spec/monitor_defs.h"

static const char *const cli_streams[] = {"both", "stdout", "stderr", NULL};
static const char *const cli_notifies[] = {"auto", "matches", "lines", "exit", "none", NULL};
static const char *const cli_modes[] = {"idle", "live_safe", NULL};
static const char *const cli_envelopes[] = {"readable", "compact", NULL};
static const char *const cli_restarts[] = {"no", "on-failure", "always", NULL};

int
cli_start_command(const CliParsed *p, CliReq *req)
{
  const char *const *envs;
  size_t nenv = cli_opts_all(p, "env", &envs);
  for (size_t i = 0; i < nenv; i++) {
    const char *eq = strchr(envs[i], '=');
    if (eq == NULL || eq == envs[i])
      return cli_opts_usage_error(p->spec, "--env: \"%s\" must be NAME=VALUE", envs[i]);
  }
  if (cli_callerenv_check(p) != 0)
    return CLI_EXIT_USAGE;
  static const char *passed[CLI_CALLERENV_MAX];
  size_t npass = cli_callerenv_pick(p, passed, CLI_CALLERENV_MAX);
  bool all = cli_opts_has(p, "pass-env-all");
  if (all && (npass == (size_t)-1 || nenv + npass > CLI_CALLERENV_MAX))
    return cli_opts_usage_error(p->spec,
                                "--pass-env-all: your environment has %zu variables and --env "
                                "sets %zu; a start holds at most %d (monitor_start's env): pass "
                                "the ones it needs with --pass-env NAME",
                                cli_callerenv_count(), nenv, CLI_CALLERENV_MAX);
  if (npass == (size_t)-1 || nenv + npass > CLI_CALLERENV_MAX)
    return cli_opts_usage_error(p->spec,
                                "--env and --pass-env: at most %d variables, got more",
                                CLI_CALLERENV_MAX);
  char program[PATH_MAX];
  const char *argv0 = p->ncmd > 0 ? p->cmd[0] : "";
  if (cli_opts_has(p, "caller-path")) {
    if (cli_opts_has(p, "shell"))
      return cli_opts_usage_error(p->spec, "--caller-path: not with --shell (the engine's shell "
                                           "finds the programs of a command line)");
    if (strchr(argv0, '/') == NULL) {
      if (cli_callerenv_which(argv0, program, sizeof program) != 0)
        return cli_opts_usage_error(p->spec,
                                    "--caller-path: \"%.128s\" is not an executable file in "
                                    "any absolute directory of your PATH",
                                    argv0);
      argv0 = program;
    }
  }
  if (cli_opts_has(p, "shell")) {
    StrBuf line = STRBUF_INIT;
    for (int i = 0; i < p->ncmd; i++)
      strbuf_printf(&line, "%s%s", i ? " " : "", p->cmd[i]);
    cli_req_str(req, "command", strbuf_cstr(&line));
    cli_req_bool(req, "shell", true);
    strbuf_free(&line);
  } else {
    msgpack_packer *pk = cli_req_key(req, "argv");
    msgpack_pack_array(pk, (size_t)p->ncmd);
    for (int i = 0; i < p->ncmd; i++) {
      const char *arg = i == 0 ? argv0 : p->cmd[i];
      size_t n = strlen(arg);
      msgpack_pack_str(pk, n);
      msgpack_pack_str_body(pk, arg, n);
    }
  }
  char here[PATH_MAX];
  const char *cwd = cli_opts_get(p, "cwd");
  if (cwd == NULL || cwd[0] != '/') {
    if (getcwd(here, sizeof here) == NULL) {
      if (cwd == NULL)
        goto env; /* a vanished directory: leave it to the engine's */
      return cli_opts_usage_error(p->spec, "--cwd: cannot resolve \"%s\": %s", cwd,
                                  strerror(errno));
    }
    StrBuf full = STRBUF_INIT;
    strbuf_puts(&full, here);
    if (cwd)
      strbuf_printf(&full, "/%s", cwd);
    cli_req_str(req, "cwd", strbuf_cstr(&full));
    strbuf_free(&full);
  } else {
    cli_req_str(req, "cwd", cwd);
  }
env:
  if (nenv + npass > 0) {
    msgpack_packer *pk = cli_req_key(req, "env");
    msgpack_pack_map(pk, nenv + npass);
    for (size_t i = 0; i < nenv + npass; i++) {
      const char *kv = i < nenv ? envs[i] : passed[i - nenv];
      const char *eq = strchr(kv, '=');
      size_t kn = (size_t)(eq - kv), vn = strlen(eq + 1);
      msgpack_pack_str(pk, kn);
      msgpack_pack_str_body(pk, kv, kn);
      msgpack_pack_str(pk, vn);
      msgpack_pack_str_body(pk, eq + 1, vn);
    }
  }
  if (all)
    cli_req_str(req, "env_denied", "drop");
  if (cli_opts_has(p, "no-line-buffer"))
    cli_req_bool(req, "line_buffered", false);
  return 0;
}

int64_t
cli_start_stop_wait_ms(bool has_grace, uint64_t grace)
{
  /* The engine answers once the process group is gone: after the grace at
   * most, and the exit drain. */
  return has_grace ? (int64_t)grace + CLI_EXIT_DRAIN_MAX_MS + CLI_CALL_TIMEOUT_MS
                   : CLI_STOP_MARGIN_MS;
}

/* --- start -------------------------------------------------------------- */

static const CliOpt cli_start_opts[] = {
  {.name = "label", .arg = "L",
   .help = "a name shown in notifications and lists instead of the command"},
  {.name = "description", .arg = "TEXT", .help = "a note kept with the monitor (status shows it)"},
  {.name = "pattern", .short_name = 'e', .arg = "PATTERN", .repeat = true,
   .help = "a PCRE2 pattern; a line it matches is a match (the first\n"
   "pattern in order that matches wins). Without any: the\n"
   "engine's built-in crash patterns (docs/crash-patterns.md)"},
  {.name = "no-patterns",
   .help = "match nothing (patterns: []): with --notify auto, every\nline is delivered"},
  {.name = "no-incidents",
   .help = "every matching line on its own: no traces gathered into\n"
   "incidents, no coalescing of repeats (docs/incidents.md)"},
  {.name = "envelope", .arg = "readable|compact",
   .help = "the frame of its notifications (default: the engine's\nenvelope.style)"},
  {.name = "streams", .arg = "both|stdout|stderr",
   .help = "the streams patterns apply to (default both)"},
  {.name = "notify", .arg = "auto|matches|lines|exit|none",
   .help = "what the session is told: matches (incidents), every line,\n"
   "only the end, nothing (default auto: lines with\n"
   "--no-patterns, else matches)"},
  {.name = "mode", .arg = "idle|live_safe",
   .help = "how notifications are delivered (default idle)"},
  {.name = "policy", .arg = "NAME",
   .help =
   "the Lua policy that words and routes its notifications\n(default: the engine's configured one)"},
  {.name = "idle-timeout", .arg = "DURATION",
   .help = "stop it when neither stream has written a byte for this\nlong (at most 1h)"},
  {.name = "timeout", .arg = "DURATION",
   .help =
   "stop it after this long (default and most: the engine's\nmonitor.max_runtime_ms, 30m unless "
   "configured)"},
  {.name = "persistent", .help = "no runtime cap (when the engine allows it)"},
  {.name = "restart", .arg = "no|on-failure|always",
   .help = "start it again when it ends by itself: on-failure (a\n"
   "status other than 0, or a signal), always; never after\n"
   "vigil stop or a cap (default no)"},
  {.name = "max-restarts", .arg = "N",
   .help = "restarts in a row before it gives up (1..100, default 5);\n"
   "a run of 60s or more starts a new row"},
  {.name = "restart-backoff", .arg = "DURATION",
   .help = "the delay before the first restart of a row (default 1s),\n"
   "doubled for each next one up to 60s"},
  {.name = "quiet-after", .arg = "DURATION",
   .help = "tell once when it has printed no line for this long\n"
   "(100ms..1d; never stops it), and again when it prints"},
  CLI_START_PROCESS_OPTS,
  {.name = "file", .arg = "PATH",
   .help = "follow the file PATH as tail -F does instead of running a\ncommand (no process; "
   "PATH must lie under the engine's\nmonitor.workspace_roots; docs/sources.md)"},
  {.name = "ws", .arg = "URL",
   .help = "follow a WebSocket on loopback (ws://127.0.0.1:PORT/PATH)\ninstead of running a "
   "command: each message is a line"},
  {.name = "from", .arg = "end|start|OFFSET",
   .help = "with --file: where to start reading (default end: what\nis appended from now on)"},
  {.name = "wait-for", .arg = "REGEX",
   .help =
   "then wait until a line matches REGEX (PCRE2, as -e) and\nprint it; exit 1 with its last "
   "lines if it ends first or\nthe wait times out"},
  {.name = "wait-timeout", .arg = "DURATION", .help = "how long --wait-for waits (default 60s)"},
  /* Readiness and health (docs/readiness.md). */
  {.name = "ready-log", .arg = "REGEX",
   .help = "ready when a line of output matches REGEX (the engine\njudges it: a ready event)"},
  {.name = "ready-tcp", .arg = "PORT", .help = "ready when 127.0.0.1:PORT accepts a connection"},
  {.name = "ready-http", .arg = "URL",
   .help = "ready when a GET of URL (http:// on loopback) answers\n200..399; redirects are "
   "not followed"},
  {.name = "ready-timeout", .arg = "DURATION",
   .help = "not ready after this long: told with the last lines\n(default 60s)"},
  {.name = "health-interval", .arg = "DURATION",
   .help = "once ready, probe --ready-tcp/--ready-http this often;\nonly changes are told"},
  {.name = "wait-for-ready", .help = "then wait until the engine says it is ready (exit 1\n"
   "with its last lines when not); --wait-timeout bounds it"},
  {0},
};

int
cli_start_check_timeout(CliClient *c, const CliParsed *p, uint64_t timeout)
{
  uint64_t max = cli_client_limit(c, "monitor.max_runtime_ms", 0);
  if (max == 0 || timeout <= max)
    return 0;
  StrBuf d = STRBUF_INIT;
  cli_fmt_duration(&d, max);
  int rc = cli_opts_usage_error(p->spec,
                                "--timeout: \"%s\" is out of range (1ms..%s, the engine's "
                                "monitor.max_runtime_ms)",
                                cli_opts_get(p, "timeout"), strbuf_cstr(&d));
  strbuf_free(&d);
  return rc;
}

int
cli_start_send(CliClient *c, CliReq *req, const char *wait_for, uint64_t wait_timeout,
               char *new_id)
{
  new_id[0] = '\0';
  CliReply reply;
  if (cli_client_call(c, "monitor_start", req, CLI_CALL_TIMEOUT_MS, &reply) != 0)
    return cli_client_fail(c);
  size_t n = 0;
  const char *id = cli_obj_get_text(reply.result, "monitor_id", &n);
  char mid[64];
  snprintf(mid, sizeof mid, "%.*s", id && n < sizeof mid ? (int)n : 0, id ? id : "");
  snprintf(new_id, 64, "%s", mid);
  if (c->json) {
    cli_client_print_json(reply.result);
  } else {
    printf("%s\n", mid);
  }
  fflush(stdout);
  size_t nn;
  const char *note = cli_obj_get_text(reply.result, "note", &nn);
  if (note && !c->json)
    fprintf(stderr, "vigil: note: %.*s\n", (int)nn, note);
  cli_reply_free(&reply);
  if (wait_for == NULL)
    return 0;
  return cli_waitfor_run(c, mid, wait_for, wait_timeout);
}

/* --file PATH [--from WHERE] or --ws URL: source {file, from} (the path
 * made absolute from the current directory) or {ws}. What shapes a
 * process goes with a command only. */
static int
cli_start_source(const CliParsed *p, CliReq *req)
{
  static const char *const process_only[] = {"cwd", "env", "pass-env", "pass-env-all",
                                             "caller-path", "shell", "no-line-buffer",
                                             "restart", NULL};
  const char *kind = cli_opts_has(p, "ws") ? "ws" : "file";
  for (size_t i = 0; process_only[i]; i++)
    if (cli_opts_has(p, process_only[i]))
      return cli_opts_usage_error(p->spec, "--%s goes with a command, not with --%s",
                                  process_only[i], kind);
  if (cli_opts_has(p, "ws") && cli_opts_has(p, "file"))
    return cli_opts_usage_error(p->spec, "give --file or --ws, not both");
  if (cli_opts_has(p, "ws") && cli_opts_has(p, "from"))
    return cli_opts_usage_error(p->spec, "--from goes with --file");
  const char *value = cli_opts_get(p, kind);
  const char *from = cli_opts_get(p, "from");
  StrBuf full = STRBUF_INIT;
  char here[PATH_MAX];
  if (strcmp(kind, "file") == 0 && value[0] != '/') {
    if (getcwd(here, sizeof here) == NULL)
      return cli_opts_usage_error(p->spec, "--file: cannot resolve \"%s\": %s", value,
                                  strerror(errno));
    strbuf_printf(&full, "%s/", here);
  }
  strbuf_puts(&full, value);
  msgpack_packer *pk = cli_req_key(req, "source");
  msgpack_pack_map(pk, from ? 2 : 1);
  const char *kv[2][2] = {{kind, strbuf_cstr(&full)}, {"from", from}};
  for (size_t i = 0; i < (from ? 2u : 1u); i++)
    for (size_t k = 0; k < 2; k++) {
      size_t n = strlen(kv[i][k]);
      msgpack_pack_str(pk, n);
      msgpack_pack_str_body(pk, kv[i][k], n);
    }
  strbuf_free(&full);
  return 0;
}

static int
cli_start_run(CliClient *c, const CliParsed *p)
{
  uint64_t timeout = 0, idle = 0, wait_timeout = CLI_WAITFOR_DEFAULT_MS;
  uint64_t max_restarts = 0, backoff = 0, quiet_after = 0;
  int rc;
  if ((rc = cli_cmds_choice(p, "streams", cli_streams)) != 0 ||
      (rc = cli_cmds_choice(p, "notify", cli_notifies)) != 0 ||
      (rc = cli_cmds_choice(p, "mode", cli_modes)) != 0 ||
      (rc = cli_cmds_choice(p, "envelope", cli_envelopes)) != 0 ||
      (rc = cli_cmds_choice(p, "restart", cli_restarts)) != 0 ||
      (rc = cli_cmds_number(p, "max-restarts", 5, &max_restarts)) != 0 ||
      (rc = cli_cmds_duration(p, "restart-backoff", 0, 600000, &backoff)) != 0 ||
      (rc = cli_cmds_duration(p, "timeout", 1, CLI_DURATION_MAX_MS, &timeout)) != 0 ||
      (rc = cli_cmds_duration(p, "idle-timeout", 0, CLI_IDLE_TIMEOUT_MAX_MS, &idle)) != 0 ||
      (rc = cli_cmds_duration(p, "quiet-after", MONITOR_QUIET_AFTER_MIN_MS,
                              MONITOR_QUIET_AFTER_MAX_MS, &quiet_after)) != 0 ||
      (rc = cli_cmds_duration(p, "wait-timeout", 0, CLI_DURATION_MAX_MS, &wait_timeout)) != 0)
    return rc;
  const char *wait_for = cli_opts_get(p, "wait-for");
  if (wait_for && (rc = cli_waitfor_check(p->spec, "wait-for", wait_for)) != 0)
    return rc;
  bool wait_ready = cli_opts_has(p, "wait-for-ready");
  if (cli_opts_has(p, "wait-timeout") && wait_for == NULL && !wait_ready)
    return cli_opts_usage_error(p->spec, "--wait-timeout goes with --wait-for or --wait-for-ready");
  uint64_t ready_tcp = 0, ready_timeout = 0, health = 0;
  if ((rc = cli_cmds_number(p, "ready-tcp", 0, &ready_tcp)) != 0 ||
      (rc = cli_cmds_duration(p, "ready-timeout", 1, 3600000, &ready_timeout)) != 0 ||
      (rc = cli_cmds_duration(p, "health-interval", 100, 3600000, &health)) != 0)
    return rc;
  int readies = cli_opts_has(p, "ready-log") + cli_opts_has(p, "ready-tcp") +
                cli_opts_has(p, "ready-http");
  if (readies > 1)
    return cli_opts_usage_error(p->spec, "give one of --ready-log, --ready-tcp, --ready-http");
  if ((wait_ready || cli_opts_has(p, "ready-timeout")) && readies == 0)
    return cli_opts_usage_error(p->spec, "--wait-for-ready and --ready-timeout go with "
                                         "--ready-log, --ready-tcp or --ready-http");
  if (wait_ready && wait_for != NULL)
    return cli_opts_usage_error(p->spec, "give --wait-for or --wait-for-ready, not both");
  if (cli_opts_has(p, "max-restarts") && (max_restarts < 1 || max_restarts > 100))
    return cli_opts_usage_error(p->spec, "--max-restarts: %s is out of range (1..100)",
                                cli_opts_get(p, "max-restarts"));
  if (cli_opts_has(p, "from") && !cli_opts_has(p, "file") && !cli_opts_has(p, "ws"))
    return cli_opts_usage_error(p->spec, "--from goes with --file");
  bool restarting = cli_opts_has(p, "restart") && strcmp(cli_opts_get(p, "restart"), "no") != 0;
  if ((cli_opts_has(p, "max-restarts") || cli_opts_has(p, "restart-backoff")) && !restarting)
    return cli_opts_usage_error(p->spec, "--max-restarts and --restart-backoff go with "
                                         "--restart on-failure|always");
  if (cli_opts_has(p, "timeout") && cli_opts_has(p, "persistent"))
    return cli_opts_usage_error(p->spec, "give --timeout or --persistent, not both");
  const char *const *patterns;
  size_t npatterns = cli_opts_all(p, "pattern", &patterns);
  if (npatterns > 0 && cli_opts_has(p, "no-patterns"))
    return cli_opts_usage_error(p->spec, "give --pattern or --no-patterns, not both");
  CliReq req;
  cli_req_init(&req);
  bool source = cli_opts_has(p, "file") || cli_opts_has(p, "ws");
  if ((rc = source ? cli_start_source(p, &req) : cli_start_command(p, &req)) != 0) {
    cli_req_free(&req);
    return rc;
  }
  static const char *const strs[][2] = {{"label", "label"},
                                        {"description", "description"},
                                        {"streams", "match_streams"},
                                        {"notify", "notify"},
                                        {"mode", "mode"},
                                        {"policy", "policy"},
                                        {"envelope", "envelope"},
                                        {"restart", "restart"}};
  for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
    if (cli_opts_get(p, strs[i][0]))
      cli_req_str(&req, strs[i][1], cli_opts_get(p, strs[i][0]));
  if (npatterns > 0 || cli_opts_has(p, "no-patterns")) {
    msgpack_packer *pk = cli_req_key(&req, "patterns");
    msgpack_pack_array(pk, npatterns);
    for (size_t i = 0; i < npatterns; i++) {
      size_t n = strlen(patterns[i]);
      msgpack_pack_str(pk, n);
      msgpack_pack_str_body(pk, patterns[i], n);
    }
  }
  if (cli_opts_has(p, "timeout"))
    cli_req_uint(&req, "timeout_ms", timeout);
  if (cli_opts_has(p, "idle-timeout"))
    cli_req_uint(&req, "idle_timeout_ms", idle);
  if (cli_opts_has(p, "persistent"))
    cli_req_bool(&req, "persistent", true);
  if (cli_opts_has(p, "max-restarts"))
    cli_req_uint(&req, "max_restarts", max_restarts);
  if (cli_opts_has(p, "restart-backoff"))
    cli_req_uint(&req, "restart_backoff_ms", backoff);
  if (cli_opts_has(p, "no-incidents"))
    cli_req_bool(&req, "incidents", false);
  if (cli_opts_has(p, "quiet-after"))
    cli_req_uint(&req, "quiet_after_ms", quiet_after);
  if (cli_opts_get(p, "ready-log"))
    cli_req_str(&req, "ready_log", cli_opts_get(p, "ready-log"));
  if (cli_opts_get(p, "ready-http"))
    cli_req_str(&req, "ready_http", cli_opts_get(p, "ready-http"));
  if (cli_opts_has(p, "ready-tcp"))
    cli_req_uint(&req, "ready_tcp", ready_tcp);
  if (cli_opts_has(p, "ready-timeout"))
    cli_req_uint(&req, "ready_timeout_ms", ready_timeout);
  if (cli_opts_has(p, "health-interval"))
    cli_req_uint(&req, "health_interval_ms", health);

  if (cli_client_connect(c, true, false, 0) != 0) {
    cli_req_free(&req);
    return cli_client_fail(c);
  }
  if (cli_opts_has(p, "timeout") && (rc = cli_start_check_timeout(c, p, timeout)) != 0) {
    cli_req_free(&req);
    return rc;
  }
  char id[64];
  rc = cli_start_send(c, &req, wait_for, wait_timeout, id);
  cli_req_free(&req);
  if (rc == 0 && wait_ready)
    rc = cli_waitready_run(c, id, wait_timeout);
  return rc;
}

/* What stands for start's command. */
static const char *const cli_start_sources[] = {"file", "ws", NULL};

const CliCommand cli_cmd_start = {
  .spec = {.name = "start", .args = "-- CMD [ARGS...] | --file PATH | --ws URL",
           .summary = "start a command in the background as a monitor",
           .about = "Start CMD in the background, watched by the engine, and print its monitor id.\n"
           "Everything after \"--\" is the command, word for word. It belongs to the session\n"
           "(see --session) and keeps running after this command returns. With --wait-for,\n"
           "return only once it printed a matching line (shown on stderr). With --file or\n"
           "--ws, no command runs: the engine follows the file as tail -F does, or the\n"
           "WebSocket's messages as lines.",
           .opts = cli_start_opts, .command = true, .command_unless = cli_start_sources},
  .run = cli_start_run,
};

/* --- stop --------------------------------------------------------------- */

static const CliOpt cli_stop_opts[] = {
  {.name = "signal", .arg = "SIG",
   .help = "the signal to send first: TERM, SIGINT, 9, ... (default SIGTERM)"},
  {.name = "grace", .arg = "DURATION",
   .help =
   "how long to wait before SIGKILL, at most 10m (default:\nthe engine's monitor.kill_grace_ms)"},
  {0},
};

/* A stop of monitor id that the engine refused as already_exited: the
 * monitor (or its process) had ended, so there is nothing to stop, which is
 * what the person wanted. Prints a note saying how it ended (with --json,
 * monitor_stop's keys: status "already_exited", state, exit_code, signal,
 * reason, and monitor_id) and returns 0; CLI_EXIT_FAILURE when its status
 * cannot be read. */
static int
cli_stop_already_ended(CliClient *c, const char *id)
{
  CliReply reply;
  if (cli_client_monitor_status(c, id, kCliStartNone, &reply) != 0)
    return cli_client_fail(c);
  const msgpack_object *m = reply.result;
  if (c->json) {
    static const char *const keys[] = {"state", "exit_code", "signal", "reason"};
    json_t *out = json_object();
    json_object_set_new(out, "monitor_id", json_string(id));
    json_object_set_new(out, "status", json_string("already_exited"));
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
      const msgpack_object *v = cli_obj_get(m, keys[i]);
      json_object_set_new(out, keys[i], v ? cli_json_of(v) : json_null());
    }
    char *text = json_dumps(out, JSON_COMPACT);
    if (text)
      puts(text);
    free(text);
    json_decref(out);
  } else if (cli_obj_get_is(m, "state", "running")) {
    /* Its process exited; the engine is still reading its last output. */
    printf("%s had already exited: nothing to stop\n", id);
  } else {
    StrBuf how = STRBUF_INIT;
    cli_cmds_end_status(m, &how);
    printf("%s had already ended (%s): nothing to stop\n", id, strbuf_cstr(&how));
    strbuf_free(&how);
  }
  cli_reply_free(&reply);
  return 0;
}

static int
cli_stop_run(CliClient *c, const CliParsed *p)
{
  uint64_t grace = 0;
  int rc = cli_cmds_duration(p, "grace", 0, CLI_GRACE_MAX_MS, &grace);
  if (rc != 0)
    return rc;
  const char *sig = cli_opts_get(p, "signal");
  bool numeric = sig && sig[0] && strspn(sig, "0123456789") == strlen(sig);
  if (sig && !numeric && signals_number(sig) < 0)
    return cli_opts_usage_error(p->spec, "--signal: \"%s\" is not a signal name", sig);
  char id[64];
  if (cli_client_connect(c, true, false, 0) != 0 || cli_client_monitor_id(c, p->args[0], id) != 0)
    return cli_client_fail(c);
  CliReq req;
  cli_req_init(&req);
  cli_req_str(&req, "monitor_id", id);
  if (sig && numeric)
    cli_req_uint(&req, "signal", strtoull(sig, NULL, 10));
  else if (sig)
    cli_req_str(&req, "signal", sig);
  if (cli_opts_has(p, "grace"))
    cli_req_uint(&req, "grace_ms", grace);
  int64_t wait = cli_start_stop_wait_ms(cli_opts_has(p, "grace"), grace);
  CliReply reply;
  rc = cli_client_call(c, "monitor_stop", &req, wait, &reply);
  cli_req_free(&req);
  if (rc != 0 && c->err.kind == kCliErrEngine && c->err.code == kErrAlreadyExited)
    return cli_stop_already_ended(c, id);
  if (rc != 0)
    return cli_client_fail(c);
  if (c->json) {
    cli_client_print_json(reply.result);
  } else if (cli_obj_get_is(reply.result, "status", "already_stopped")) {
    printf("%s was already stopped\n", id);
  } else {
    StrBuf how = STRBUF_INIT;
    cli_cmds_ending(&how, reply.result);
    printf("%s stopped%s%s%s\n", id, how.len ? " (" : "", strbuf_cstr(&how), how.len ? ")" : "");
    strbuf_free(&how);
  }
  cli_reply_free(&reply);
  return 0;
}

const CliCommand cli_cmd_stop = {
  .spec = {.name = "stop", .args = "ID", .summary = "stop a monitor",
           .about =
           "Stop a monitor: send its process group the signal, then SIGKILL to whatever is\n"
           "left after the grace. Prints how it ended. Stopping a stopped monitor, or one\n"
           "that already ended, is fine: a note says so, exit status 0.",
           .opts = cli_stop_opts, .min_args = 1, .max_args = 1},
  .run = cli_stop_run,
};

