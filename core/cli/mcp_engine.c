/*
 * The MCP adapter's engine link (see mcp_engine.h): the socket's directory
 * checked, connecting (or starting `vigild --daemon` and connecting), the
 * session and its resume, the link's retries after the engine went away,
 * calls and their retry, and the queue of notifications not yet handed to
 * the harness.
 */
#include "mcp_engine.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli_json.h"
#include "cli_obj.h"
#include "cli_paths.h"
#include "rpc/server.h"

/* The started engine's log, beside the socket. */
#define MCP_ENGINE_LOG_NAME "vigild-mcp.log"

/* --- the state file ------------------------------------------------------ */

static bool
mcp_engine_read_state(McpEngine *m, uint64_t *seq)
{
  FILE *f = fopen(m->state_path, "r");
  if (f == NULL)
    return false;
  unsigned long long v = 0;
  bool ok = fscanf(f, "%llu", &v) == 1;
  fclose(f);
  *seq = v;
  return ok;
}

/* Writes the state atomically (a new file renamed over the old), so a crash
 * mid-write never leaves a torn number. A failure is only logged: delivery
 * goes on, a later adapter may then see some notifications again. */
static void
mcp_engine_write_state(McpEngine *m)
{
  char tmp[sizeof m->state_path + 24]; /* this adapter's own: two may share a session */
  snprintf(tmp, sizeof tmp, "%s.%d.tmp", m->state_path, (int)getpid());
  FILE *f = fopen(tmp, "w");
  if (f == NULL || fprintf(f, "%llu\n", (unsigned long long)m->delivered) < 0 ||
      fclose(f) != 0 || rename(tmp, m->state_path) != 0) {
    fprintf(stderr, "vigil mcp: cannot keep the delivered seq in %s: %s\n", m->state_path,
            strerror(errno));
  }
}

void
mcp_engine_delivered(McpEngine *m, uint64_t seq)
{
  if (seq <= m->delivered)
    return;
  m->delivered = seq;
  mcp_engine_write_state(m);
}

/* --- notifications ------------------------------------------------------- */

/* Keeps a notification; when the ring is full the oldest goes, counted in
 * `dropped` when it had not been delivered yet. */
static void
mcp_engine_enqueue(McpEngine *m, uint64_t seq, json_t *n)
{
  if (m->count == MCP_QUEUE_MAX) {
    McpQueued *old = &m->queue[m->head];
    if (old->seq > m->delivered)
      m->dropped++;
    json_decref(old->n);
    m->head = (m->head + 1) % MCP_QUEUE_MAX;
    m->count--;
  }
  McpQueued *q = &m->queue[(m->head + m->count) % MCP_QUEUE_MAX];
  q->seq = seq;
  q->n = n;
  m->count++;
}

json_t *
mcp_engine_take(McpEngine *m, uint64_t since_seq, size_t max)
{
  json_t *out = json_array();
  uint64_t last = 0;
  for (size_t i = 0; i < m->count && json_array_size(out) < max; i++) {
    McpQueued *q = &m->queue[(m->head + i) % MCP_QUEUE_MAX];
    if (q->seq > since_seq) {
      json_array_append(out, q->n);
      last = q->seq;
    }
  }
  mcp_engine_delivered(m, last);
  return out;
}

bool
mcp_engine_has_after(const McpEngine *m, uint64_t since_seq)
{
  return m->count > 0 && m->queue[(m->head + m->count - 1) % MCP_QUEUE_MAX].seq > since_seq;
}

/* Every message the engine pushes: its session's notifications (kept in
 * seq order; one received already, or delivered by this session's adapters,
 * is skipped: a resume after a lost connection replays from the newest
 * received). */
static void
mcp_engine_on_push(void *ctx, const char *method, size_t len, const msgpack_object *params)
{
  McpEngine *m = ctx;
  if (len != strlen("vigil.notification") || memcmp(method, "vigil.notification", len) != 0 ||
      params->type != MSGPACK_OBJECT_ARRAY || params->via.array.size < 1)
    return;
  const msgpack_object *n = &params->via.array.ptr[0];
  uint64_t seq = cli_obj_get_uint(n, "seq", 0);
  if (seq != 0 && (seq <= m->received || seq <= m->delivered))
    return;
  if (seq > m->received)
    m->received = seq;
  json_t *j = cli_json_of(n);
  mcp_engine_enqueue(m, seq, j);
  if (m->on_notification)
    m->on_notification(m->ctx, m, seq, j);
}

/* --- the link ------------------------------------------------------------ */

/* Sleeps ms (a pause between two attempts; the adapter has nothing else to
 * do then: stdin waits, which is what a request does while answered). */
static void
mcp_engine_pause(int64_t ms)
{
  if (ms <= 0)
    return;
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* Reaps a started `vigild --daemon` that has exited (never waits). */
static void
mcp_engine_reap(McpEngine *m)
{
  if (m->starting > 0 && waitpid(m->starting, NULL, WNOHANG) != 0)
    m->starting = 0;
}

/* The connection ended: closes it, says so, and starts retrying (or goes
 * down when retrying is off). why is the failure, for the message. */
static void
mcp_engine_lost(McpEngine *m, const char *why)
{
  cli_client_close(&m->cli);
  int64_t now = cli_now_ms();
  m->lost_at = now;
  m->retry_at = now;
  m->backoff_ms = MCP_RECONNECT_FIRST_MS;
  if (m->reconnect_wait_ms <= 0) {
    m->link = kMcpLinkDown;
    return;
  }
  m->link = kMcpLinkRetrying;
  fprintf(stderr, "vigil mcp: the connection to the engine on %s ended (%s); reconnecting for "
                  "up to %lld s%s\n",
          m->cli.socket_path, why, (long long)(m->reconnect_wait_ms / 1000),
          m->spawn ? ", starting an engine if none answers" : "");
}

/* Retrying passed its bound: the link is down until the next call. */
static void
mcp_engine_give_up(McpEngine *m)
{
  m->link = kMcpLinkDown;
  fprintf(stderr, "vigil mcp: no engine on %s after %lld s (%s); tool calls try again, one "
                  "attempt each\n",
          m->cli.socket_path, (long long)(m->reconnect_wait_ms / 1000), m->cli.err.msg);
}

/* Connects and opens the session, resuming after last_seq when has_last.
 * A connection whose session_open failed is closed again. */
static int
mcp_engine_connect(McpEngine *m, bool has_last, uint64_t last_seq)
{
  if (cli_client_connect(&m->cli, true, has_last, last_seq) == 0) {
    m->link = kMcpLinkUp;
    return 0;
  }
  cli_client_close(&m->cli);
  return -1;
}

/* Starts `vigild --daemon --listen SOCKET --log-file DIR/vigild-mcp.log
 * --log-max-bytes N [--config FILE]` and waits (up to MCP_SPAWN_WAIT_MS) for
 * it to say it listens: vigild detaches into a session of its own and logs
 * through its own bounded file; what it says meanwhile (where it listens,
 * or why it could not start) goes to this adapter's stderr, never stdout,
 * which carries only protocol. Refused when the log's path is anything but
 * a regular file of this user (a symbolic link above all). Returns 0, or -1
 * with m->cli.err set. */
static int
mcp_engine_spawn(McpEngine *m)
{
  char vigild[CLI_PATHS_MAX], log[4300], max[32];
  cli_paths_vigild(vigild, sizeof vigild);
  char *dir = rpc_server_dir_of(m->cli.socket_path);
  int n = snprintf(log, sizeof log, "%s/%s", dir, MCP_ENGINE_LOG_NAME);
  free(dir);
  if (n < 0 || (size_t)n >= sizeof log)
    return cli_error_set(&m->cli.err, kCliErrTransport, "the socket's path is too long");
  struct stat st;
  if (lstat(log, &st) == 0 && (!S_ISREG(st.st_mode) || st.st_uid != geteuid()))
    return cli_error_set(&m->cli.err, kCliErrTransport,
                         "will not start an engine: its log %s is %s, not a regular file of "
                         "uid %u; remove it",
                         log, S_ISLNK(st.st_mode) ? "a symbolic link" : "another user's or no file",
                         (unsigned)geteuid());
  snprintf(max, sizeof max, "%llu", (unsigned long long)MCP_ENGINE_LOG_MAX_BYTES);
  char *argv[] = {vigild, "--daemon", "--listen", m->cli.socket_path, "--log-file", log,
                  "--log-max-bytes", max, m->config ? "--config" : NULL, (char *)m->config, NULL};
  fprintf(stderr, "vigil mcp: no engine on %s; starting %s --daemon (log: %s)\n",
          m->cli.socket_path, vigild, log);
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0)
    return cli_error_set(&m->cli.err, kCliErrTransport, "cannot start vigild: fork: %s",
                         strerror(errno));
  if (pid == 0) {
    int null = open("/dev/null", O_RDONLY);
    if (null < 0 || dup2(null, 0) < 0 || dup2(2, 1) < 0)
      _exit(127);
    closefrom(3);
    execvp(vigild, argv);
    fprintf(stderr, "vigil mcp: cannot run %s: %s\n", vigild, strerror(errno));
    _exit(127);
  }
  int64_t deadline = cli_now_ms() + MCP_SPAWN_WAIT_MS;
  int status = 0;
  pid_t r;
  while ((r = waitpid(pid, &status, WNOHANG)) == 0 && cli_now_ms() < deadline)
    mcp_engine_pause(20);
  if (r == 0) {
    m->starting = pid; /* reaped later */
    return cli_error_set(&m->cli.err, kCliErrTransport,
                         "%s --daemon did not say it listens within %d s", vigild,
                         MCP_SPAWN_WAIT_MS / 1000);
  }
  if (r < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return cli_error_set(&m->cli.err, kCliErrTransport,
                         "the engine did not start (vigild said why above; its log: %s)", log);
  return 0;
}

/* One attempt: connect and open the session (resuming after the newest seq
 * received); when nothing listens and spawning is allowed, start an engine
 * and connect to it. Returns 0, or -1 with m->cli.err set. */
static int
mcp_engine_attempt(McpEngine *m)
{
  mcp_engine_reap(m);
  uint64_t last = m->received > m->delivered ? m->received : m->delivered;
  if (mcp_engine_connect(m, true, last) == 0)
    return 0;
  if (m->cli.err.kind != kCliErrNoEngine || !m->spawn || m->starting > 0)
    return -1;
  /* Started or not (another adapter may have won the race to the socket),
   * the socket is tried again. */
  CliError spawn_err = {kCliErrNone, 0, ""};
  if (mcp_engine_spawn(m) != 0)
    spawn_err = m->cli.err;
  if (mcp_engine_connect(m, true, last) == 0)
    return 0;
  if (spawn_err.kind != kCliErrNone)
    m->cli.err = spawn_err;
  return -1;
}

/* The link came back: says so. */
static void
mcp_engine_back(McpEngine *m)
{
  m->reconnects++;
  fprintf(stderr, "vigil mcp: reconnected to the engine on %s after %lld ms; session \"%s\" "
                  "resumed after seq %llu\n",
          m->cli.socket_path, (long long)(cli_now_ms() - m->lost_at), m->cli.session,
          (unsigned long long)(m->received > m->delivered ? m->received : m->delivered));
}

/* Makes sure the link is up: while retrying, attempts until the retry bound
 * (pausing between); when down, one attempt. Returns 0, or -1 with
 * m->cli.err saying no engine answers. */
static int
mcp_engine_ensure(McpEngine *m)
{
  if (m->link == kMcpLinkUp)
    return 0;
  bool retrying = m->link == kMcpLinkRetrying;
  int64_t until = retrying ? m->lost_at + m->reconnect_wait_ms : 0;
  int64_t pause = MCP_RECONNECT_FIRST_MS;
  for (;;) {
    if (mcp_engine_attempt(m) == 0) {
      if (m->lost_at > 0)
        mcp_engine_back(m);
      return 0;
    }
    int64_t now = cli_now_ms();
    if (now >= until)
      break;
    mcp_engine_pause(pause < until - now ? pause : until - now);
    pause = pause * 2 < MCP_RECONNECT_MAX_BACKOFF_MS ? pause * 2 : MCP_RECONNECT_MAX_BACKOFF_MS;
  }
  if (retrying)
    mcp_engine_give_up(m);
  char why[CLI_ERROR_MSG_MAX];
  snprintf(why, sizeof why, "%s", m->cli.err.msg);
  return cli_error_set(&m->cli.err, kCliErrTransport,
                       "no engine answers on %s (%.900s); the next call tries again",
                       m->cli.socket_path, why);
}

void
mcp_engine_tick(McpEngine *m)
{
  if (m->link != kMcpLinkRetrying || cli_now_ms() < m->retry_at)
    return;
  if (mcp_engine_attempt(m) == 0) {
    mcp_engine_back(m);
    return;
  }
  int64_t now = cli_now_ms();
  if (now >= m->lost_at + m->reconnect_wait_ms) {
    mcp_engine_give_up(m);
    return;
  }
  m->retry_at = now + m->backoff_ms;
  m->backoff_ms = m->backoff_ms * 2 < MCP_RECONNECT_MAX_BACKOFF_MS ? m->backoff_ms * 2
                                                                   : MCP_RECONNECT_MAX_BACKOFF_MS;
}

int
mcp_engine_timeout_ms(const McpEngine *m)
{
  if (m->link != kMcpLinkRetrying)
    return -1;
  int64_t left = m->retry_at - cli_now_ms();
  return left <= 0 ? 0 : left > 60000 ? 60000 : (int)left;
}

int
mcp_engine_fd(const McpEngine *m)
{
  return m->link == kMcpLinkUp ? cli_conn_fd(m->cli.conn) : -1;
}

int
mcp_engine_poll(McpEngine *m)
{
  if (m->link != kMcpLinkUp)
    return 0;
  for (;;) {
    struct pollfd pfd = {cli_conn_fd(m->cli.conn), POLLIN, 0};
    if (poll(&pfd, 1, 0) <= 0)
      return 0;
    int rc = cli_conn_pump(m->cli.conn, cli_now_ms(), &m->cli.err);
    if (rc < 0) {
      mcp_engine_lost(m, m->cli.err.msg);
      return -1;
    }
    if (rc == 0)
      return 0;
  }
}

int
mcp_engine_wait(McpEngine *m, int64_t deadline)
{
  if (mcp_engine_ensure(m) != 0)
    return -1;
  int rc = cli_conn_pump(m->cli.conn, deadline, &m->cli.err);
  if (rc >= 0)
    return rc;
  mcp_engine_lost(m, m->cli.err.msg);
  /* Re-opened, the session has replayed what came meanwhile. */
  return mcp_engine_ensure(m) == 0 ? 1 : -1;
}

/* --- calls --------------------------------------------------------------- */

bool
mcp_engine_read_only(const char *method)
{
  /* What the engine answers without changing anything: sent twice, it
   * answers twice the same way (monitor_wait waits again). */
  static const char *const reads[] = {"ping", "api_info", "session_list", "monitor_list",
                                      "monitor_status", "monitor_output", "monitor_logs",
                                      "monitor_events", "monitor_wait", NULL};
  for (size_t i = 0; reads[i]; i++)
    if (strcmp(method, reads[i]) == 0)
      return true;
  return false;
}

/* Whether a failed call lost the connection (rather than being refused by
 * the engine or running out of time on a live connection). */
static bool
mcp_engine_conn_failed(const CliError *e)
{
  return e->kind == kCliErrTransport || e->kind == kCliErrProtocol;
}

/* One call on the connection that is up, by deadline (-1: none). */
static int
mcp_engine_call_once(McpEngine *m, const char *method, const CliReq *req, int64_t deadline,
                     json_t **result)
{
  int64_t left = deadline < 0 ? -1 : deadline - cli_now_ms();
  if (deadline >= 0 && left <= 0)
    return cli_error_set(&m->cli.err, kCliErrDeadline, "no answer from the engine to %s in time",
                         method);
  CliReply reply;
  if (cli_client_call(&m->cli, method, req, left, &reply) != 0)
    return -1;
  *result = cli_json_of(reply.result);
  cli_reply_free(&reply);
  return 0;
}

int
mcp_engine_call(McpEngine *m, const char *method, json_t *args, int64_t timeout_ms,
                json_t **result)
{
  int64_t deadline = timeout_ms < 0 ? -1 : cli_now_ms() + timeout_ms;
  if (mcp_engine_ensure(m) != 0)
    return -1;
  CliReq req;
  cli_req_init(&req);
  const char *key;
  json_t *v;
  if (args)
    json_object_foreach(args, key, v) cli_json_pack(v, cli_req_key(&req, key));
  int rc = mcp_engine_call_once(m, method, &req, deadline, result);
  if (rc != 0 && mcp_engine_conn_failed(&m->cli.err)) {
    char why[CLI_ERROR_MSG_MAX];
    snprintf(why, sizeof why, "%s", m->cli.err.msg);
    mcp_engine_lost(m, why);
    if (!mcp_engine_read_only(method)) {
      cli_req_free(&req);
      return cli_error_set(&m->cli.err, kCliErrTransport,
                           "the connection to the engine ended while %s was in flight (%.900s); "
                           "whether it took effect is unknown: look (monitor_list, "
                           "monitor_status) before trying again",
                           method, why);
    }
    /* Only reads: sent again once the session is back. */
    rc = mcp_engine_ensure(m) == 0 ? mcp_engine_call_once(m, method, &req, deadline, result) : -1;
    if (rc != 0 && mcp_engine_conn_failed(&m->cli.err) && m->link == kMcpLinkUp)
      mcp_engine_lost(m, m->cli.err.msg);
  }
  cli_req_free(&req);
  return rc;
}

/* --- opening ------------------------------------------------------------- */

void
mcp_engine_init(McpEngine *m, bool spawn, const char *config)
{
  m->link = kMcpLinkDown;
  m->spawn = spawn;
  m->config = config;
  m->reconnect_wait_ms = MCP_RECONNECT_WAIT_MS;
  m->cli.notify = mcp_engine_on_push;
  m->cli.notify_ctx = m;
}

/* The socket's directory held to vigild's own check before anything is
 * read or made there (see mcp_engine.h). A missing one is made (0700) only
 * when an engine may be started in it; otherwise there is nothing to check,
 * and nothing will be found there. */
static int
mcp_engine_check_dir(McpEngine *m)
{
  char *dir = rpc_server_dir_of(m->cli.socket_path);
  struct stat st;
  bool missing = lstat(dir, &st) != 0 && errno == ENOENT;
  free(dir);
  if (missing && !m->spawn)
    return 0;
  bool made = false;
  VigilError err = VIGIL_ERROR_INIT;
  if (rpc_server_check_path(m->cli.socket_path, &made, &err) != 0)
    return cli_error_set(&m->cli.err, kCliErrTransport,
                         "refusing the socket's directory (it holds this session's state and a "
                         "started engine's log): %s",
                         err.msg);
  return 0;
}

int
mcp_engine_open(McpEngine *m)
{
  /* The session's name becomes a file name next to the socket: only the
   * characters the engine allows in a session name, so no path escapes. */
  for (const char *c = m->cli.session; *c; c++)
    if (!(isalnum((unsigned char)*c) || strchr("._:-", *c)))
      return cli_error_set(&m->cli.err, kCliErrTransport,
                           "--session: \"%.64s\" must be characters of [A-Za-z0-9._:-]",
                           m->cli.session);
  if (mcp_engine_check_dir(m) != 0)
    return -1;
  char *dir = rpc_server_dir_of(m->cli.socket_path);
  int n = snprintf(m->state_path, sizeof m->state_path, "%s/%s.seq", dir, m->cli.session);
  free(dir);
  if (n < 0 || (size_t)n >= sizeof m->state_path)
    return cli_error_set(&m->cli.err, kCliErrTransport, "the socket's path is too long");
  bool has_last = mcp_engine_read_state(m, &m->delivered);
  m->received = m->delivered;
  if (mcp_engine_connect(m, has_last, m->delivered) != 0) {
    if (!m->spawn || m->cli.err.kind != kCliErrNoEngine)
      return -1;
    CliError spawn_err = {kCliErrNone, 0, ""};
    if (mcp_engine_spawn(m) != 0)
      spawn_err = m->cli.err;
    if (mcp_engine_connect(m, has_last, m->delivered) != 0) {
      if (spawn_err.kind != kCliErrNone)
        m->cli.err = spawn_err;
      return -1;
    }
  }
  /* A fresh adapter takes the session from its next notification on: a
   * later reconnect resumes from here, not from what came before it. */
  if (!has_last && m->cli.next_seq > 0 && m->cli.next_seq - 1 > m->received)
    m->received = m->cli.next_seq - 1;
  return 0;
}

void
mcp_engine_close(McpEngine *m)
{
  while (m->count > 0) {
    json_decref(m->queue[m->head].n);
    m->head = (m->head + 1) % MCP_QUEUE_MAX;
    m->count--;
  }
  mcp_engine_reap(m);
  cli_client_close(&m->cli);
  m->link = kMcpLinkDown;
}
