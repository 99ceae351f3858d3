/*
 * The subcommands that change what runs: start (a monitor in the
 * background), stop (one), and run (a command in the foreground, its exit
 * status passed through the way timeout(1) does).
 *
 * The command is always sent as argv, exactly the words given after "--",
 * never joined and re-split; --shell sends one command line for /bin/sh -c
 * instead. The working directory is the caller's own unless --cwd says
 * otherwise (the engine's would surprise a person at a terminal), and a
 * relative --cwd is taken from the caller's directory too. The environment
 * is the engine's plus every --env K=V: the caller's own is not sent.
 */
#include "cli_cmds.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_obj.h"
#include "signals.h"

/* How long after a stop the engine may still take to answer: the longest
 * kill grace (600 s) and exit drain (60 s) it accepts, and some slack. */
#define CLI_STOP_MARGIN_MS (600000 + 60000 + CLI_CALL_TIMEOUT_MS)

/* The exit statuses of run, as timeout(1) has them. */
#define CLI_RUN_TIMED_OUT 124
#define CLI_RUN_FAILED 125
#define CLI_RUN_CANNOT_INVOKE 126
#define CLI_RUN_NOT_FOUND 127

static const char *const cli_streams[] = {"both", "stdout", "stderr", NULL};
static const char *const cli_notifies[] = {"auto", "matches", "lines", "exit", "none", NULL};
static const char *const cli_modes[] = {"idle", "live_safe", NULL};
static const char *const cli_envelopes[] = {"readable", "compact", NULL};

/* Adds command/argv, shell, cwd and env (what start and run share) to req.
 * Returns 0, or CLI_EXIT_USAGE after printing why. */
static int
cli_start_command(const CliParsed *p, CliReq *req)
{
  const char *const *envs;
  size_t nenv = cli_opts_all(p, "env", &envs);
  for (size_t i = 0; i < nenv; i++) {
    const char *eq = strchr(envs[i], '=');
    if (eq == NULL || eq == envs[i])
      return cli_opts_usage_error(p->spec, "--env: \"%s\" must be NAME=VALUE", envs[i]);
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
      size_t n = strlen(p->cmd[i]);
      msgpack_pack_str(pk, n);
      msgpack_pack_str_body(pk, p->cmd[i], n);
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
  if (nenv > 0) {
    msgpack_packer *pk = cli_req_key(req, "env");
    msgpack_pack_map(pk, nenv);
    for (size_t i = 0; i < nenv; i++) {
      const char *eq = strchr(envs[i], '=');
      size_t kn = (size_t)(eq - envs[i]), vn = strlen(eq + 1);
      msgpack_pack_str(pk, kn);
      msgpack_pack_str_body(pk, envs[i], kn);
      msgpack_pack_str(pk, vn);
      msgpack_pack_str_body(pk, eq + 1, vn);
    }
  }
  return 0;
}

/* --- start -------------------------------------------------------------- */

static const CliOpt cli_start_opts[] = {
  {"label", 0, "L", false, "a name shown in notifications and lists instead of the command"},
  {"description", 0, "TEXT", false, "a note kept with the monitor (status shows it)"},
  {"pattern", 'e', "PATTERN", true,
   "a PCRE2 pattern; a line it matches is a match (the first\n"
   "pattern in order that matches wins). Without any: the\n"
   "engine's built-in crash patterns (docs/crash-patterns.md)"},
  {"no-patterns", 0, NULL, false,
   "match nothing (patterns: []): with --notify auto, every\nline is delivered"},
  {"no-incidents", 0, NULL, false,
   "every matching line on its own: no traces gathered into\n"
   "incidents, no coalescing of repeats (docs/incidents.md)"},
  {"envelope", 0, "readable|compact", false,
   "the frame of its notifications (default: the engine's\nenvelope.style)"},
  {"streams", 0, "both|stdout|stderr", false, "the streams patterns apply to (default both)"},
  {"notify", 0, "auto|matches|lines|exit|none", false,
   "what the session is told: matches (incidents), every line,\n"
   "only the end, nothing (default auto: lines with\n"
   "--no-patterns, else matches)"},
  {"mode", 0, "idle|live_safe", false, "how notifications are delivered (default idle)"},
  {"policy", 0, "NAME", false,
   "the Lua policy that words and routes its notifications\n(default: the engine's configured one)"},
  {"idle-timeout", 0, "DURATION", false,
   "stop it when neither stream has written a byte for this long"},
  {"timeout", 0, "DURATION", false,
   "stop it after this long (default: the engine's\nmonitor.max_runtime_ms)"},
  {"persistent", 0, NULL, false, "no runtime cap (when the engine allows it)"},
  {"cwd", 0, "DIR", false, "where it runs (default: the current directory)"},
  {"env", 0, "K=V", true, "set K to V on top of the engine's environment"},
  {"shell", 0, NULL, false,
   "run CMD as one command line with /bin/sh -c (when the\nengine allows shell commands)"},
  {NULL, 0, NULL, false, NULL},
};

static int
cli_start_run(CliClient *c, const CliParsed *p)
{
  uint64_t timeout = 0, idle = 0;
  int rc;
  if ((rc = cli_cmds_choice(p, "streams", cli_streams)) != 0 ||
      (rc = cli_cmds_choice(p, "notify", cli_notifies)) != 0 ||
      (rc = cli_cmds_choice(p, "mode", cli_modes)) != 0 ||
      (rc = cli_cmds_choice(p, "envelope", cli_envelopes)) != 0 ||
      (rc = cli_cmds_duration(p, "timeout", &timeout)) != 0 ||
      (rc = cli_cmds_duration(p, "idle-timeout", &idle)) != 0)
    return rc;
  if (cli_opts_has(p, "timeout") && cli_opts_has(p, "persistent"))
    return cli_opts_usage_error(p->spec, "give --timeout or --persistent, not both");
  const char *const *patterns;
  size_t npatterns = cli_opts_all(p, "pattern", &patterns);
  if (npatterns > 0 && cli_opts_has(p, "no-patterns"))
    return cli_opts_usage_error(p->spec, "give --pattern or --no-patterns, not both");
  CliReq req;
  cli_req_init(&req);
  if ((rc = cli_start_command(p, &req)) != 0) {
    cli_req_free(&req);
    return rc;
  }
  static const char *const strs[][2] = {{"label", "label"},
                                        {"description", "description"},
                                        {"streams", "match_streams"},
                                        {"notify", "notify"},
                                        {"mode", "mode"},
                                        {"policy", "policy"},
                                        {"envelope", "envelope"}};
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
  if (cli_opts_has(p, "no-incidents"))
    cli_req_bool(&req, "incidents", false);

  CliReply reply;
  rc = cli_client_connect(c, true, false, 0) == 0 &&
               cli_client_call(c, "monitor_start", &req, CLI_CALL_TIMEOUT_MS, &reply) == 0
           ? 0
           : -1;
  cli_req_free(&req);
  if (rc != 0)
    return cli_client_fail(c);
  if (c->json) {
    cli_client_print_json(reply.result);
  } else {
    size_t n;
    const char *id = cli_obj_get_text(reply.result, "monitor_id", &n);
    printf("%.*s\n", (int)n, id ? id : "");
  }
  size_t nn;
  const char *note = cli_obj_get_text(reply.result, "note", &nn);
  if (note && !c->json)
    fprintf(stderr, "vigil: note: %.*s\n", (int)nn, note);
  cli_reply_free(&reply);
  return 0;
}

const CliCommand cli_cmd_start = {
  {"start", "-- CMD [ARGS...]", "start a command in the background as a monitor",
   "Start CMD in the background, watched by the engine, and print its monitor id.\n"
   "Everything after \"--\" is the command, word for word. It belongs to the session\n"
   "(see --session) and keeps running after this command returns.",
   cli_start_opts, 0, 0, true},
  cli_start_run,
};

/* --- stop --------------------------------------------------------------- */

static const CliOpt cli_stop_opts[] = {
  {"signal", 0, "SIG", false, "the signal to send first: TERM, SIGINT, 9, ... (default SIGTERM)"},
  {"grace", 0, "DURATION", false,
   "how long to wait before SIGKILL (default: the engine's\nmonitor.kill_grace_ms)"},
  {NULL, 0, NULL, false, NULL},
};

static int
cli_stop_run(CliClient *c, const CliParsed *p)
{
  uint64_t grace = 0;
  int rc = cli_cmds_duration(p, "grace", &grace);
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
  /* The engine answers once the process group is gone: after the grace at
   * most (and the exit drain). */
  int64_t wait = cli_opts_has(p, "grace") ? (int64_t)grace + 60000 + CLI_CALL_TIMEOUT_MS
                                          : CLI_STOP_MARGIN_MS;
  CliReply reply;
  rc = cli_client_call(c, "monitor_stop", &req, wait, &reply);
  cli_req_free(&req);
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
  {"stop", "ID", "stop a monitor",
   "Stop a monitor: send its process group the signal, then SIGKILL to whatever is\n"
   "left after the grace. Prints how it ended. Stopping a stopped monitor is fine.",
   cli_stop_opts, 1, 1, false},
  cli_stop_run,
};

/* --- run ---------------------------------------------------------------- */

static const CliOpt cli_run_opts[] = {
  {"timeout", 0, "DURATION", false,
   "stop it after this long (whole seconds, rounded up; at most\n"
   "1h; default 300s); the exit status is then 124"},
  {"lines", 0, "N", false, "print at most the last N lines of each stream (default 100)"},
  {"cwd", 0, "DIR", false, "where it runs (default: the current directory)"},
  {"env", 0, "K=V", true, "set K to V on top of the engine's environment"},
  {"shell", 0, NULL, false,
   "run CMD as one command line with /bin/sh -c (when the\nengine allows shell commands)"},
  {NULL, 0, NULL, false, NULL},
};

/* The exit status for an engine error in run, as timeout(1) would have it. */
static int
cli_run_fail(CliClient *c)
{
  cli_client_fail(c);
  if (c->err.kind != kCliErrEngine)
    return CLI_RUN_FAILED;
  switch (c->err.code) {
  case 6: /* command_not_found */
    return CLI_RUN_NOT_FOUND;
  case 3: /* denied */
  case 7: /* spawn_failed */
    return CLI_RUN_CANNOT_INVOKE;
  default:
    return CLI_RUN_FAILED;
  }
}

/* The signal that ended process id, from monitor_status; 0 if unknown. */
static int
cli_run_signal(CliClient *c, const char *id, size_t idlen)
{
  CliReq req;
  cli_req_init(&req);
  msgpack_packer *pk = cli_req_key(&req, "monitor_id");
  msgpack_pack_str(pk, idlen);
  msgpack_pack_str_body(pk, id, idlen);
  CliReply reply;
  int sig = 0;
  int rc = cli_client_call(c, "monitor_status", &req, CLI_CALL_TIMEOUT_MS, &reply);
  cli_req_free(&req);
  if (rc == 0) {
    size_t n;
    const char *name = cli_obj_get_text(reply.result, "signal", &n);
    char buf[32];
    if (name && n < sizeof buf) {
      memcpy(buf, name, n);
      buf[n] = '\0';
      sig = signals_number(buf);
    }
    cli_reply_free(&reply);
  }
  return sig > 0 ? sig : 0;
}

/* Writes a summary and a final newline when it has text. */
static void
cli_run_print(FILE *f, const msgpack_object *result, const char *key)
{
  size_t n;
  const char *text = cli_obj_get_text(result, key, &n);
  if (text && n > 0) {
    fwrite(text, 1, n, f);
    if (text[n - 1] != '\n')
      fputc('\n', f);
  }
  fflush(f);
}

static int
cli_run_run(CliClient *c, const CliParsed *p)
{
  uint64_t timeout = 300000, lines = 100;
  int rc;
  if ((rc = cli_cmds_duration(p, "timeout", &timeout)) != 0 ||
      (rc = cli_cmds_number(p, "lines", 100, &lines)) != 0)
    return rc;
  uint64_t timeout_s = (timeout + 999) / 1000;
  if (timeout_s < 1 || timeout_s > 3600)
    return cli_opts_usage_error(p->spec, "--timeout must be 1s..1h, got %s",
                                cli_opts_get(p, "timeout"));
  if (lines > 10000)
    return cli_opts_usage_error(p->spec, "--lines must be 0..10000, got %llu",
                                (unsigned long long)lines);
  CliReq req;
  cli_req_init(&req);
  if ((rc = cli_start_command(p, &req)) != 0) {
    cli_req_free(&req);
    return rc;
  }
  cli_req_uint(&req, "timeout_s", timeout_s);
  cli_req_uint(&req, "stdout_lines", lines);
  /* The connection's own session: if this command is interrupted or loses
   * the engine, the session closes and takes the process with it, as a
   * foreground command should. */
  CliReply reply;
  int64_t wait = (int64_t)timeout_s * 1000 + CLI_STOP_MARGIN_MS;
  rc = cli_client_connect(c, false, false, 0) == 0 &&
               cli_client_call(c, "process_run", &req, wait, &reply) == 0
           ? 0
           : -1;
  cli_req_free(&req);
  if (rc != 0)
    return cli_run_fail(c);
  const msgpack_object *r = reply.result;
  if (c->json) {
    cli_client_print_json(r);
  } else {
    cli_run_print(stdout, r, "stdout_summary");
    cli_run_print(stderr, r, "stderr_summary");
  }
  int64_t code;
  int status;
  if (cli_obj_get_is(r, "state", "timed_out")) {
    if (!c->json) {
      StrBuf d = STRBUF_INIT;
      cli_fmt_duration(&d, timeout_s * 1000);
      fprintf(stderr, "vigil: run: timed out after %s; the process group was stopped\n",
              strbuf_cstr(&d));
      strbuf_free(&d);
    }
    status = CLI_RUN_TIMED_OUT;
  } else if (cli_obj_get_int(r, "exit_code", &code)) {
    status = (int)(code & 0xff);
  } else {
    size_t n;
    const char *id = cli_obj_get_text(r, "process_id", &n);
    int sig = id ? cli_run_signal(c, id, n) : 0;
    status = sig > 0 ? 128 + sig : CLI_RUN_FAILED;
  }
  cli_reply_free(&reply);
  return status;
}

const CliCommand cli_cmd_run = {
  {"run", "-- CMD [ARGS...]", "run a command in the foreground and pass its exit status on",
   "Run CMD through the engine (the same allowlist and limits as start) and wait for\n"
   "it: print the last lines of its stdout to stdout and of its stderr to stderr,\n"
   "then exit with its exit status; 128+N when signal N ended it, 124 when it ran\n"
   "past --timeout (like timeout(1)). When the engine refuses or fails: 127 for a\n"
   "command that does not exist, 126 for one denied or that cannot start, 125\n"
   "otherwise. Interrupting this command stops the process.",
   cli_run_opts, 0, 0, true},
  cli_run_run,
};
