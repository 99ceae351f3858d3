/*
 * The engine's own lifecycle from a terminal: `vigil engine status` (is an
 * engine serving the socket, which pid, version, config, uptime, how many
 * sessions) and `vigil shutdown` (end it, as SIGTERM does, and wait until
 * it has ended).
 *
 * Whom to signal is learned from the socket itself, never from a file: the
 * kernel's word on who listens there (SO_PEERCRED) must agree with the
 * engine's own (api_info's pid). A pidfile (pidfile.h) an engine killed
 * with SIGKILL left behind names a pid the kernel may since have given to
 * any process of this user. A socket a service manager passed (socket
 * activation) names the process that last called listen() on it: vigild
 * does when it takes the socket, but a connection made before that (the
 * one that made the manager start it) names the manager. Signalling what
 * either names would end the wrong process; when the two pids disagree,
 * shutdown signals nothing and says why.
 *
 * The end is awaited on a pidfd (pidfd_open, Linux 5.3) taken while the
 * connection is open and checked against the engine's answer after it, so
 * it cannot stand for another process that got the pid later; on a kernel
 * without pidfds, by asking the kernel about the pid every
 * CLI_ENGINE_POLL_MS until it is gone or a zombie.
 *
 * Exit statuses (docs/cli.md): 0 running / ended, CLI_ENGINE_EXIT_NONE (3)
 * when no engine listens on the socket, 1 for anything else (it did not
 * end in time, it could not be signalled, the two pids disagree).
 */
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cli/cli_cmds.h"
#include "cli/cli_json.h"
#include "cli/cli_obj.h"
#include "base/pidfile.h"

/* The exit status when no engine listens on the socket. */
#define CLI_ENGINE_EXIT_NONE 3

/* shutdown's --timeout default and bound: an engine gives each monitor
 * its kill grace (at most 10 minutes) and exit drain before it exits. */
#define CLI_ENGINE_SHUTDOWN_DEFAULT_MS 30000
#define CLI_ENGINE_SHUTDOWN_MAX_MS (CLI_GRACE_MAX_MS + CLI_EXIT_DRAIN_MAX_MS + 60000)

/* How often the end is checked without a pidfd. */
#define CLI_ENGINE_POLL_MS 20

static const CliOpt cli_engine_opts[] = {
  {0},
};

static const CliOpt cli_shutdown_opts[] = {
  {.name = "timeout", .short_name = 't', .arg = "DURATION",
   .help = "how long to wait for the engine's end (default 30s; at most 11m)"},
  {0},
};

/* What is known of the engine serving the socket. */
typedef struct {
  pid_t peer_pid;  /* who listens on the socket, by the kernel (SO_PEERCRED) */
  uid_t peer_uid;
  pid_t pid;       /* the engine's own word (api_info's pid), 0: none */
  int pidfd;       /* on peer_pid, taken before api_info; -1: none */
  CliReply info;   /* api_info's answer */
} CliEngine;

/* A pidfd on pid, or -1 (no such process, or a kernel without pidfds). */
static int
cli_engine_pidfd(pid_t pid)
{
#ifdef SYS_pidfd_open
  return (int)syscall(SYS_pidfd_open, pid, 0);
#else
  (void)pid;
  return -1;
#endif
}

/* Connects, learns who listens (SO_PEERCRED), takes a pidfd on it, then
 * asks api_info: an answer after the pidfd was taken proves the pidfd is
 * the engine's. Returns 0, or -1 with c->err set (kCliErrNoEngine when
 * none listens). */
static int
cli_engine_probe(CliClient *c, CliEngine *eng)
{
  memset(eng, 0, sizeof *eng);
  eng->pidfd = -1;
  if (cli_client_connect(c, false, false, 0) != 0)
    return -1;
  struct ucred cred;
  socklen_t len = sizeof cred;
  if (getsockopt(cli_conn_fd(c->conn), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
    return cli_error_set(&c->err, kCliErrTransport, "cannot tell who serves %s "
                         "(SO_PEERCRED: %s)", c->socket_path, strerror(errno));
  eng->peer_pid = cred.pid;
  eng->peer_uid = cred.uid;
  eng->pidfd = cli_engine_pidfd(cred.pid);
  if (cli_client_call(c, "api_info", NULL, CLI_CALL_TIMEOUT_MS, &eng->info) != 0)
    return -1;
  int64_t pid = 0;
  if (cli_obj_get_int(eng->info.result, "pid", &pid) && pid > 0 && pid <= 0x3fffffff)
    eng->pid = (pid_t)pid;
  return 0;
}

static void
cli_engine_free(CliEngine *eng)
{
  if (eng->pidfd >= 0)
    close(eng->pidfd);
  eng->pidfd = -1;
  cli_reply_free(&eng->info);
}

/* Says that no engine listens on the socket, and what of a pidfile is
 * there; returns CLI_ENGINE_EXIT_NONE. */
static int
cli_engine_none(const CliClient *c, const char *doing)
{
  fprintf(stderr, "vigil: %s%s\n", c->err.msg, doing);
  char pidfile[PIDFILE_PATH_MAX];
  pid_t stale = pidfile_path(c->socket_path, pidfile, sizeof pidfile) == 0
                    ? pidfile_read(pidfile) : 0;
  if (stale > 0)
    fprintf(stderr, "  %s names pid %ld, which serves no socket here: a stale pidfile "
                    "(vigild replaces it when it starts)\n", pidfile, (long)stale);
  return CLI_ENGINE_EXIT_NONE;
}

/* cli_engine_probe, its failure said: returns 0 with eng filled (free it),
 * else the exit status (CLI_ENGINE_EXIT_NONE when no engine listens, with
 * doing after the message), eng freed. */
static int
cli_engine_reach(CliClient *c, CliEngine *eng, const char *doing)
{
  if (cli_engine_probe(c, eng) == 0)
    return 0;
  cli_engine_free(eng);
  if (c->err.kind == kCliErrNoEngine)
    return cli_engine_none(c, doing);
  return cli_client_fail(c);
}

/* --- vigil engine status ------------------------------------------------ */

/* Appends a text field of map (nil or missing: dflt) to out, control bytes
 * as '?': paths are the operator's, shown as text. */
static void
cli_engine_text(StrBuf *out, const msgpack_object *map, const char *key, const char *dflt)
{
  size_t len = 0;
  const char *s = cli_obj_get_text(map, key, &len);
  if (s == NULL) {
    strbuf_puts(out, dflt);
    return;
  }
  for (size_t i = 0; i < len; i++)
    strbuf_putc(out, (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i]);
}

static int
cli_engine_status(CliClient *c)
{
  CliEngine eng;
  int rc = cli_engine_reach(c, &eng, "");
  if (rc != 0)
    return rc;
  const msgpack_object *info = eng.info.result;
  const msgpack_object *cfg = cli_obj_get(info, "config");
  const msgpack_object *counters = cli_obj_get(info, "counters");
  uint64_t uptime = cli_obj_get_uint(info, "uptime_ms", 0);
  /* Not counting the anonymous session of this command's own connection. */
  uint64_t sessions = cli_obj_get_uint(counters, "sessions", 0);
  sessions -= sessions > 0;
  uint64_t running = cli_obj_get_uint(counters, "monitors_running", 0);
  char pidfile[PIDFILE_PATH_MAX];
  pid_t filed = pidfile_path(c->socket_path, pidfile, sizeof pidfile) == 0
                    ? pidfile_read(pidfile) : 0;
  if (c->json) {
    json_t *o = json_object();
    json_object_set_new(o, "running", json_true());
    json_object_set_new(o, "socket", json_string(c->socket_path));
    json_object_set_new(o, "pid", json_integer(eng.pid));
    json_object_set_new(o, "listener_pid", json_integer(eng.peer_pid));
    StrBuf s = STRBUF_INIT;
    cli_engine_text(&s, info, "version", "");
    json_object_set_new(o, "version", json_string(strbuf_cstr(&s)));
    strbuf_free(&s);
    const msgpack_object *state_dir = cli_obj_get(info, "state_dir");
    json_object_set_new(o, "config", cfg != NULL ? cli_json_of(cfg) : json_null());
    json_object_set_new(o, "state_dir", state_dir != NULL ? cli_json_of(state_dir) : json_null());
    json_object_set_new(o, "pidfile", filed > 0 ? json_string(pidfile) : json_null());
    json_object_set_new(o, "uptime_ms", json_integer((json_int_t)uptime));
    json_object_set_new(o, "sessions", json_integer((json_int_t)sessions));
    json_object_set_new(o, "monitors_running", json_integer((json_int_t)running));
    char *text = json_dumps(o, JSON_COMPACT);
    if (text != NULL)
      puts(text);
    free(text);
    json_decref(o);
  } else {
    StrBuf out = STRBUF_INIT;
    strbuf_printf(&out, "vigild is running on %s\n  pid        %ld", c->socket_path,
                  (long)eng.pid);
    if (eng.peer_pid != eng.pid)
      strbuf_printf(&out, " (the socket named pid %ld: a service manager's)",
                    (long)eng.peer_pid);
    strbuf_puts(&out, "\n  version    ");
    cli_engine_text(&out, info, "version", "?");
    strbuf_puts(&out, "\n  config     ");
    if (cfg != NULL && cfg->type == MSGPACK_OBJECT_MAP)
      cli_engine_text(&out, cfg, "path", "?");
    else
      strbuf_puts(&out, "none (every start is denied)");
    strbuf_puts(&out, "\n  state dir  ");
    cli_engine_text(&out, info, "state_dir", "none");
    strbuf_puts(&out, "\n  pidfile    ");
    if (filed == eng.pid && filed > 0)
      strbuf_puts(&out, pidfile);
    else if (filed > 0)
      strbuf_printf(&out, "%s names pid %ld, not the engine's", pidfile, (long)filed);
    else
      strbuf_puts(&out, "none");
    strbuf_puts(&out, "\n  uptime     ");
    cli_fmt_duration(&out, uptime);
    strbuf_printf(&out, "\n  sessions   %llu\n  monitors   %llu running\n",
                  (unsigned long long)sessions, (unsigned long long)running);
    fputs(strbuf_cstr(&out), stdout);
    strbuf_free(&out);
  }
  cli_engine_free(&eng);
  return 0;
}

static int
cli_engine_run(CliClient *c, const CliParsed *p)
{
  if (strcmp(p->args[0], "status") != 0)
    return cli_opts_usage_error(p->spec, "unknown engine command \"%s\" (status is the one)",
                                p->args[0]);
  return cli_engine_status(c);
}

const CliCommand cli_cmd_engine = {
  .spec = {.name = "engine", .args = "status",
           .summary = "whether an engine runs on the socket, and which",
           .about = "Say whether an engine serves the socket: its pid, version, config file,\n"
           "state directory, pidfile, uptime, and how many sessions and running\n"
           "monitors it has. Exit status 0 when one runs, 3 when none listens on\n"
           "the socket, 1 when it could not be asked.",
           .opts = cli_engine_opts, .min_args = 1, .max_args = 1},
  .run = cli_engine_run,
};

/* --- vigil shutdown ----------------------------------------------------- */

/* Whether pid has ended (gone, or a zombie its parent has not reaped). */
static bool
cli_engine_gone(pid_t pid)
{
  if (kill(pid, 0) != 0 && errno == ESRCH)
    return true;
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return true;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  /* "pid (comm) S ...": the state follows the last ')'. */
  char *close_paren = strrchr(buf, ')');
  return close_paren != NULL && close_paren[1] == ' ' && close_paren[2] == 'Z';
}

/* Waits up to timeout_ms for the engine's end. Returns true when it ended. */
static bool
cli_engine_wait_end(const CliEngine *eng, uint64_t timeout_ms)
{
  int64_t deadline = cli_now_ms() + (int64_t)timeout_ms;
  for (;;) {
    int64_t left = deadline - cli_now_ms();
    if (eng->pidfd >= 0) {
      struct pollfd pfd = {eng->pidfd, POLLIN, 0};
      int r = poll(&pfd, 1, left > 0 ? (int)left : 0);
      if (r > 0)
        return true;
      if (r < 0 && errno == EINTR)
        continue;
      if (r == 0)
        return false;
    } else if (cli_engine_gone(eng->pid)) {
      return true;
    }
    if (left <= 0)
      return false;
    /* No pidfd: nothing tells us of the end, so it is asked for. */
    poll(NULL, 0, left < CLI_ENGINE_POLL_MS ? (int)left : CLI_ENGINE_POLL_MS);
  }
}

static int
cli_shutdown_run(CliClient *c, const CliParsed *p)
{
  uint64_t timeout = CLI_ENGINE_SHUTDOWN_DEFAULT_MS;
  int rc = cli_cmds_duration(p, "timeout", 1, CLI_ENGINE_SHUTDOWN_MAX_MS, &timeout);
  if (rc != 0)
    return rc;
  CliEngine eng;
  if ((rc = cli_engine_reach(c, &eng, "; there is nothing to shut down")) != 0)
    return rc;
  rc = CLI_EXIT_FAILURE;
  if (eng.pid == 0 || eng.peer_pid != eng.pid) {
    fprintf(stderr, "vigil: the engine on %s says it is pid %ld, but the socket named pid %ld "
                    "when this command connected (a service manager that had not yet passed the "
                    "socket on); nothing was signalled: run vigil shutdown again, or stop it "
                    "through the manager (systemctl --user stop vigild.socket vigild.service)\n",
            c->socket_path, (long)eng.pid, (long)eng.peer_pid);
    goto out;
  }
  if (kill(eng.pid, SIGTERM) != 0) {
    fprintf(stderr, "vigil: cannot send SIGTERM to the engine on %s (pid %ld, uid %u): %s\n",
            c->socket_path, (long)eng.pid, (unsigned)eng.peer_uid, strerror(errno));
    goto out;
  }
  /* Our connection would be one more the engine waits to see go. */
  cli_client_close(c);
  if (!cli_engine_wait_end(&eng, timeout)) {
    StrBuf t = STRBUF_INIT;
    cli_fmt_duration(&t, timeout);
    /* The engine no longer listens once it is shutting down, so a second
     * shutdown cannot reach it: the pid is named for the second signal. */
    fprintf(stderr, "vigil: the engine (pid %ld) did not end within %s; it is still stopping "
                    "its monitors (kill -TERM %ld skips their grace: SIGKILL)\n",
            (long)eng.pid, strbuf_cstr(&t), (long)eng.pid);
    strbuf_free(&t);
    goto out;
  }
  if (c->json)
    printf("{\"ended\":true,\"pid\":%ld}\n", (long)eng.pid);
  else
    printf("vigild (pid %ld) on %s has ended\n", (long)eng.pid, c->socket_path);
  rc = 0;
out:
  cli_engine_free(&eng);
  return rc;
}

const CliCommand cli_cmd_shutdown = {
  .spec = {.name = "shutdown", .args = "",
           .summary = "end the engine (and every monitor), and wait for its end",
           .about = "End the engine serving the socket as SIGTERM does: it stops every\n"
           "monitor (SIGTERM, then SIGKILL after its grace) and exits. The pid is the\n"
           "socket's own (SO_PEERCRED), checked against the engine's word, never a\n"
           "pidfile's alone (when they disagree nothing is signalled). Waits for the\n"
           "engine's end: exit status 0 once it has ended, 1 when it did not end\n"
           "within --timeout (a second SIGTERM to the pid it names skips the\n"
           "monitors' grace), 3 when no engine listens on the socket.",
           .opts = cli_shutdown_opts},
  .run = cli_shutdown_run,
};
