/*
 * `vigil restart ID`: stop a monitor and start the same command again,
 * with every option it was started with, and print the new id.
 *
 * The engine reports in monitor_status's `start` the monitor_start
 * arguments that start the same monitor again (docs/protocol.md): argv or
 * command and shell, the resolved cwd, env, patterns, streams, policy,
 * timeouts, limits, line buffering. The map can hold secrets, so the
 * engine sends it only when asked (include_start), and env's values only
 * when asked again (reveal_env): restart asks for both, being a person's
 * command that needs the real values to start the same thing. Restart
 * sends that map back as it is, so it restarts any monitor of its session,
 * whoever started it (vigil start, an agent over MCP, a gateway). A
 * monitor the engine has no map for (one taken over from an older
 * engine's spec) is refused with what is missing, never restarted with
 * guesses; an engine older than the map refuses include_start itself.
 */
#include "cli/cli_cmds.h"

#include <stdlib.h>
#include <string.h>

#include "cli/cli_obj.h"
#include "cli/cli_waitfor.h"
#include "base/error.h"

static const CliOpt cli_restart_opts[] = {
  {.name = "grace", .arg = "DURATION",
   .help = "how long its stop waits before SIGKILL, at most 10m\n(default: the engine's "
   "monitor.kill_grace_ms)"},
  {.name = "wait-for", .arg = "REGEX",
   .help = "then wait for a matching line, as start --wait-for does"},
  {.name = "wait-timeout", .arg = "DURATION", .help = "how long --wait-for waits (default 60s)"},
  {0},
};

/* Stops monitor id when it runs. Returns 0, or -1 with c->err set. */
static int
cli_restart_stop(CliClient *c, const char *id, bool has_grace, uint64_t grace)
{
  CliReq req;
  cli_req_init(&req);
  cli_req_str(&req, "monitor_id", id);
  if (has_grace)
    cli_req_uint(&req, "grace_ms", grace);
  CliReply reply;
  int rc = cli_client_call(c, "monitor_stop", &req, cli_start_stop_wait_ms(has_grace, grace),
                           &reply);
  cli_req_free(&req);
  if (rc == 0) {
    cli_reply_free(&reply);
    return 0;
  }
  /* It ended on its own between the status and the stop: nothing to stop. */
  return c->err.kind == kCliErrEngine && c->err.code == kErrAlreadyExited ? 0 : -1;
}

/* The monitor_start arguments in start (monitor_status's `start`, a map)
 * into req (initialised here; free it with cli_req_free): every key as it
 * is, except those that are nil (nothing given: the engine's default).
 * Returns 0, or -1 when start is not such a map. */
static int
cli_restart_request(const msgpack_object *start, CliReq *req)
{
  if (start == NULL || start->type != MSGPACK_OBJECT_MAP || start->via.map.size == 0)
    return -1;
  cli_req_init(req);
  for (uint32_t i = 0; i < start->via.map.size; i++) {
    const msgpack_object_kv *kv = &start->via.map.ptr[i];
    char key[64];
    if (kv->key.type != MSGPACK_OBJECT_STR || kv->key.via.str.size >= sizeof key) {
      cli_req_free(req);
      return -1;
    }
    if (kv->val.type == MSGPACK_OBJECT_NIL)
      continue;
    memcpy(key, kv->key.via.str.ptr, kv->key.via.str.size);
    key[kv->key.via.str.size] = '\0';
    msgpack_pack_object(cli_req_key(req, key), kv->val);
  }
  return 0;
}

static int
cli_restart_run(CliClient *c, const CliParsed *p)
{
  uint64_t grace = 0, wait_timeout = CLI_WAITFOR_DEFAULT_MS;
  int rc;
  if ((rc = cli_cmds_duration(p, "grace", 0, CLI_GRACE_MAX_MS, &grace)) != 0 ||
      (rc = cli_cmds_duration(p, "wait-timeout", 0, CLI_DURATION_MAX_MS, &wait_timeout)) != 0)
    return rc;
  const char *wait_for = cli_opts_get(p, "wait-for");
  if (wait_for && (rc = cli_waitfor_check(p->spec, "wait-for", wait_for)) != 0)
    return rc;
  if (cli_opts_has(p, "wait-timeout") && wait_for == NULL)
    return cli_opts_usage_error(p->spec, "--wait-timeout goes with --wait-for");
  char id[64];
  if (cli_client_connect(c, true, false, 0) != 0 || cli_client_monitor_id(c, p->args[0], id) != 0)
    return cli_client_fail(c);
  CliReply status;
  CliReq req;
  rc = cli_client_monitor_status(c, id, kCliStartRevealed, &status);
  if (rc != 0)
    return cli_client_fail(c);
  bool running = cli_obj_get_is(status.result, "state", "running");
  rc = cli_restart_request(cli_obj_get(status.result, "start"), &req);
  cli_reply_free(&status);
  if (rc != 0) {
    fprintf(stderr,
            "vigil: restart: %s cannot be restarted as it was: the engine did not say how it\n"
            "  was started (monitor_status has no `start`: a monitor taken over from an older\n"
            "  engine). Stop it and start it again with `vigil start`.\n",
            id);
    return CLI_EXIT_FAILURE;
  }
  if (running && cli_restart_stop(c, id, cli_opts_has(p, "grace"), grace) != 0) {
    cli_req_free(&req);
    return cli_client_fail(c);
  }
  char new_id[64];
  rc = cli_start_send(c, &req, wait_for, wait_timeout, new_id);
  cli_req_free(&req);
  return rc;
}

const CliCommand cli_cmd_restart = {
  .spec = {.name = "restart", .args = "ID", .summary = "stop a monitor and start its command again",
           .about = "Stop a monitor (if it still runs) and start the same command again with every\n"
           "option it was started with (argv, cwd, env, label, patterns, streams, notify,\n"
           "mode, policy, timeouts, ...), then print the new monitor's id. Any monitor of\n"
           "the session can be restarted, whoever started it (vigil start, an agent, a\n"
           "gateway): the engine reports how each was started (monitor_status's `start`).",
           .opts = cli_restart_opts, .min_args = 1, .max_args = 1},
  .run = cli_restart_run,
};
