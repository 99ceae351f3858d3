/*
 * `vigil run`: a command in the foreground, through the engine (the same
 * allowlist and limits as start), its output shown as it comes and its
 * exit status passed on the way timeout(1) does.
 *
 * How: monitor_start in the connection's own anonymous session (so that
 * losing the connection stops the process, as with any foreground
 * command), with notify "none" and no patterns (nobody else is told about
 * it), then its lines followed (cli_stream.h) and each written where the
 * child wrote it: stdout lines to stdout, stderr lines to stderr. The lines
 * are the engine's (ANSI escapes removed). Ctrl-C (SIGINT, SIGTERM, SIGHUP)
 * wakes the wait through a pipe and the client stops the process
 * (monitor_stop) before it exits with 128+N.
 *
 * The time limit: the engine's runtime cap (timeout_ms) when --timeout is
 * within monitor.max_runtime_ms; a longer one (run takes up to an hour, as
 * process_run does) starts the monitor persistent and the client stops it
 * at the deadline itself. Either way the exit status is then 124.
 *
 * --json keeps the whole-result form: one process_run, its result printed
 * once at the end (summaries of the last --lines lines of each stream).
 */
#include "cli/cli_cmds.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli_obj.h"
#include "cli/cli_stream.h"
#include "base/signals.h"

/* The exit statuses of run when the engine refuses, as timeout(1) has them
 * (CLI_EXIT_TIMED_OUT and CLI_EXIT_RUN_FAILED are in cli_cmds.h). */
#define CLI_RUN_CANNOT_INVOKE 126
#define CLI_RUN_NOT_FOUND 127

/* The limit on a run's --timeout (process_run's timeout_s bound), and its
 * default. */
#define CLI_RUN_TIMEOUT_MAX_MS 3600000
#define CLI_RUN_TIMEOUT_DEFAULT_MS 300000

static const CliOpt cli_run_opts[] = {
  {.name = "timeout", .arg = "DURATION",
   .help = "stop it after this long (at most 1h, default 5m); the\nexit status is then 124"},
  {.name = "lines", .arg = "N",
   .help = "with --json: how many last lines of each stream the result\nholds (default 100)"},
  CLI_START_PROCESS_OPTS,
  {0},
};

/* The exit status for an engine error in run, as timeout(1) would have it. */
static int
cli_run_fail(CliClient *c)
{
  cli_client_fail(c);
  if (c->err.kind != kCliErrEngine)
    return CLI_EXIT_RUN_FAILED;
  switch (c->err.code) {
  case 6: /* command_not_found */
    return CLI_RUN_NOT_FOUND;
  case 3: /* denied */
  case 7: /* spawn_failed */
    return CLI_RUN_CANNOT_INVOKE;
  default:
    return CLI_EXIT_RUN_FAILED;
  }
}

/* Says on stderr that the run timed out after timeout ms. */
static void
cli_run_say_timed_out(uint64_t timeout)
{
  StrBuf d = STRBUF_INIT;
  cli_fmt_duration(&d, timeout);
  fprintf(stderr, "vigil: run: timed out after %s; the process group was stopped\n",
          strbuf_cstr(&d));
  strbuf_free(&d);
}

/* --- --json: one process_run ------------------------------------------- */

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

static int
cli_run_json(CliClient *c, CliReq *req, uint64_t timeout, uint64_t lines)
{
  uint64_t timeout_s = (timeout + 999) / 1000;
  cli_req_uint(req, "timeout_s", timeout_s);
  cli_req_uint(req, "stdout_lines", lines);
  CliReply reply;
  int64_t wait = (int64_t)timeout_s * 1000 + CLI_STOP_MARGIN_MS;
  int rc = cli_client_connect(c, false, false, 0) == 0 &&
                   cli_client_call(c, "process_run", req, wait, &reply) == 0
               ? 0
               : -1;
  if (rc != 0)
    return cli_run_fail(c);
  const msgpack_object *r = reply.result;
  cli_client_print_json(r);
  int64_t code;
  int status;
  if (cli_obj_get_is(r, "state", "timed_out")) {
    status = CLI_EXIT_TIMED_OUT;
  } else if (cli_obj_get_int(r, "exit_code", &code)) {
    status = (int)(code & 0xff);
  } else {
    size_t n;
    const char *id = cli_obj_get_text(r, "process_id", &n);
    int sig = id ? cli_run_signal(c, id, n) : 0;
    status = sig > 0 ? 128 + sig : CLI_EXIT_RUN_FAILED;
  }
  cli_reply_free(&reply);
  return status;
}

/* --- the live run ------------------------------------------------------- */

/* The pipe Ctrl-C writes to (its read end is the connection's wake fd) and
 * the signal that came. */
static int cli_run_wake[2] = {-1, -1};
static volatile sig_atomic_t cli_run_signo;

static void
cli_run_on_signal(int sig)
{
  int saved = errno;
  cli_run_signo = sig;
  if (write(cli_run_wake[1], "", 1) < 0) {
    /* Full pipe: a wake is already pending. */
  }
  errno = saved;
}

/* Writes one line where the child wrote it. */
static bool
cli_run_on_line(void *ctx, const msgpack_object *line)
{
  (void)ctx;
  size_t n;
  const char *text = cli_obj_get_text(line, "text", &n);
  FILE *f = cli_obj_get_is(line, "stream", "stderr") ? stderr : stdout;
  if (text)
    fwrite(text, 1, n, f);
  fputc('\n', f);
  fflush(f);
  return false;
}

/* Stops monitor id (the default signal and grace); failures are reported
 * and otherwise ignored: the connection's end stops it too. */
static void
cli_run_stop(CliClient *c, const char *id)
{
  CliReq req;
  cli_req_init(&req);
  cli_req_str(&req, "monitor_id", id);
  CliReply reply;
  if (cli_client_call(c, "monitor_stop", &req, CLI_STOP_MARGIN_MS, &reply) == 0)
    cli_reply_free(&reply);
  else if (c->err.kind != kCliErrEngine)
    cli_client_fail(c);
  cli_req_free(&req);
}

/* After a stop: prints the lines the process wrote before it was gone
 * that were not shown yet (the monitor has ended, so this returns once they
 * are read). */
static void
cli_run_drain(CliClient *c, CliStream *s)
{
  if (cli_stream_follow(c, s, cli_now_ms() + CLI_CALL_TIMEOUT_MS) == kCliStreamFailed)
    cli_client_fail(c);
}

/* The exit status that passes monitor id's ending on (cli_cmds_end_status),
 * saying so on stderr when it timed out. */
static int
cli_run_ending(CliClient *c, const char *id, uint64_t timeout)
{
  CliReply reply;
  if (cli_client_monitor_status(c, id, kCliStartNone, &reply) != 0)
    return cli_run_fail(c);
  StrBuf how = STRBUF_INIT;
  int status = cli_cmds_end_status(reply.result, &how);
  if (cli_obj_get_is(reply.result, "state", "timed_out"))
    cli_run_say_timed_out(timeout);
  else if (status == CLI_EXIT_STOPPED || status == CLI_EXIT_OVERLOADED ||
           cli_obj_get_is(reply.result, "state", "idle_timeout"))
    fprintf(stderr, "vigil: run: %s\n", strbuf_cstr(&how));
  strbuf_free(&how);
  cli_reply_free(&reply);
  return status;
}

static int
cli_run_live(CliClient *c, CliReq *req, uint64_t timeout)
{
  if (cli_client_connect(c, false, false, 0) != 0)
    return cli_run_fail(c);
  /* Within the engine's runtime cap it enforces the timeout; beyond it the
   * client does, on a persistent monitor. */
  uint64_t max = cli_client_limit(c, "monitor.max_runtime_ms", 0);
  bool engine_timeout = max == 0 || timeout <= max;
  if (engine_timeout)
    cli_req_uint(req, "timeout_ms", timeout);
  else
    cli_req_bool(req, "persistent", true);
  cli_req_str(req, "notify", "none");
  msgpack_pack_array(cli_req_key(req, "patterns"), 0);
  if (pipe2(cli_run_wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    fprintf(stderr, "vigil: run: pipe: %s\n", strerror(errno));
    return CLI_EXIT_RUN_FAILED;
  }
  cli_client_stop_signals(cli_run_on_signal);
  cli_conn_set_wake_fd(c->conn, cli_run_wake[0]);
  int64_t deadline = cli_now_ms() + (int64_t)timeout;
  CliReply reply;
  int status;
  if (cli_client_call(c, "monitor_start", req, CLI_CALL_TIMEOUT_MS, &reply) != 0) {
    /* Interrupted before the answer: the connection's end stops whatever
     * started. */
    status = c->err.kind == kCliErrInterrupted ? 128 + cli_run_signo : cli_run_fail(c);
    goto out;
  }
  size_t n, nn;
  const char *mid = cli_obj_get_text(reply.result, "monitor_id", &n);
  char id[64];
  snprintf(id, sizeof id, "%.*s", mid && n < sizeof id ? (int)n : 0, mid ? mid : "");
  /* What the engine adjusted (the names --pass-env-all left out), before
   * the command's own lines. */
  const char *note = cli_obj_get_text(reply.result, "note", &nn);
  if (note != NULL)
    fprintf(stderr, "vigil: note: %.*s\n", (int)nn, note);
  cli_reply_free(&reply);
  CliStream s = {id, 0, 0, cli_run_on_line, NULL};
  CliStreamEnd end = cli_stream_follow(c, &s, engine_timeout ? -1 : deadline);
  cli_conn_set_wake_fd(c->conn, -1);
  cli_client_stop_signals(SIG_DFL); /* a second Ctrl-C ends this at once */
  switch (end) {
  case kCliStreamInterrupted:
    fprintf(stderr, "vigil: run: interrupted (%s); stopping %s\n", signals_name(cli_run_signo),
            id);
    cli_run_stop(c, id);
    cli_run_drain(c, &s);
    status = 128 + cli_run_signo;
    break;
  case kCliStreamDeadline:
    cli_run_stop(c, id);
    cli_run_drain(c, &s);
    cli_run_say_timed_out(timeout);
    status = CLI_EXIT_TIMED_OUT;
    break;
  case kCliStreamFailed:
    status = cli_run_fail(c);
    break;
  default:
    status = cli_run_ending(c, id, timeout);
    break;
  }
  if (s.missed > 0)
    fprintf(stderr,
            "vigil: run: %llu line%s left the engine's ring before they could be shown "
            "(monitor.ring_max_lines)\n",
            (unsigned long long)s.missed, s.missed == 1 ? "" : "s");
out:
  cli_conn_set_wake_fd(c->conn, -1);
  cli_client_stop_signals(SIG_DFL);
  close(cli_run_wake[0]);
  close(cli_run_wake[1]);
  cli_run_wake[0] = cli_run_wake[1] = -1;
  return status;
}

static int
cli_run_run(CliClient *c, const CliParsed *p)
{
  uint64_t timeout = CLI_RUN_TIMEOUT_DEFAULT_MS, lines = 100;
  int rc;
  if ((rc = cli_cmds_duration(p, "timeout", 1, CLI_RUN_TIMEOUT_MAX_MS, &timeout)) != 0 ||
      (rc = cli_cmds_number(p, "lines", 100, &lines)) != 0)
    return rc;
  if (lines > 10000)
    return cli_opts_usage_error(p->spec, "--lines: %llu is out of range (0..10000)",
                                (unsigned long long)lines);
  if (cli_opts_has(p, "lines") && !c->json)
    return cli_opts_usage_error(p->spec,
                                "--lines goes with --json (without it every line is shown)");
  CliReq req;
  cli_req_init(&req);
  if ((rc = cli_start_command(p, &req)) == 0)
    rc = c->json ? cli_run_json(c, &req, timeout, lines) : cli_run_live(c, &req, timeout);
  cli_req_free(&req);
  return rc;
}

const CliCommand cli_cmd_run = {
  .spec = {.name = "run", .args = "-- CMD [ARGS...]",
           .summary = "run a command in the foreground and pass its exit status on",
           .about =
           "Run CMD through the engine (the same allowlist and limits as start), print its\n"
           "lines as they come (stdout lines to stdout, stderr lines to stderr), then exit\n"
           "with its exit status: 128+N when signal N ended it, 124 when it ran past\n"
           "--timeout (like timeout(1)). When the engine refuses or fails: 127 for a\n"
           "command that does not exist, 126 for one denied or that cannot start, 125\n"
           "otherwise. Ctrl-C stops the process, then exits 130. With --json, nothing is\n"
           "shown until it ends; then process_run's result.",
           .opts = cli_run_opts, .command = true},
  .run = cli_run_run,
};
