/*
 * The MCP adapter's engine link (see mcp_engine.h): the socket's directory
 * checked, connecting (or starting `vigild --daemon` and connecting), the
 * session and its resume, what the link says when it is lost and back, and
 * the queue of notifications not yet handed to the harness, through the
 * socket or through NATS. The link's thread, which makes the attempts and
 * carries the calls, is mcp_link.c.
 */
#include "mcp/mcp_engine.h"
#include "mcp/mcp_engine_internal.h"

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

#include "cli/cli_json.h"
#include "cli/cli_natsreq.h"
#include "cli/cli_obj.h"
#include "cli/cli_paths.h"
#include "rpc/server.h"
#include "spec/fleet_names.h"

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
  if (m->state_path[0] == '\0')
    return; /* through NATS: nothing of this machine's is kept */
  char tmp[sizeof m->state_path + 24]; /* this adapter's own: two may share a session */
  snprintf(tmp, sizeof tmp, "%s.%d.tmp", m->state_path, (int)getpid());
  FILE *f = fopen(tmp, "w");
  if (f == NULL || fprintf(f, "%llu\n", (unsigned long long)m->delivered) < 0 ||
      fclose(f) != 0 || rename(tmp, m->state_path) != 0) {
    fprintf(stderr, "vigil mcp: cannot keep the delivered seq in %s: %s\n", m->state_path,
            strerror(errno));
  }
}

/* Records seq as delivered and persists it (the lock held). */
static void
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
mcp_engine_take(McpEngine *m, uint64_t since_seq, size_t max, McpTaken *info)
{
  json_t *out = json_array();
  uint64_t last = 0;
  pthread_mutex_lock(&m->mu);
  if (since_seq == MCP_SINCE_DELIVERED)
    since_seq = m->delivered;
  for (size_t i = 0; i < m->count && json_array_size(out) < max; i++) {
    McpQueued *q = &m->queue[(m->head + i) % MCP_QUEUE_MAX];
    if (q->seq > since_seq) {
      /* A copy: the ring's value stays the link thread's alone. */
      json_array_append_new(out, json_deep_copy(q->n));
      last = q->seq;
    }
  }
  mcp_engine_delivered(m, last);
  if (info != NULL)
    *info = (McpTaken){m->delivered, m->dropped};
  pthread_mutex_unlock(&m->mu);
  return out;
}

uint64_t
mcp_engine_pushed(McpEngine *m)
{
  pthread_mutex_lock(&m->mu);
  uint64_t seq = m->delivered;
  pthread_mutex_unlock(&m->mu);
  return seq;
}

bool
mcp_engine__has_after(const McpEngine *m, uint64_t since_seq)
{
  return m->count > 0 && m->queue[(m->head + m->count - 1) % MCP_QUEUE_MAX].seq > since_seq;
}

/* See mcp_engine_internal.h. */
void
mcp_engine__received(McpEngine *m, uint64_t seq, json_t *j)
{
  pthread_mutex_lock(&m->mu);
  bool seen = seq != 0 && (seq <= m->received || seq <= m->delivered);
  if (!seen) {
    if (seq > m->received)
      m->received = seq;
    mcp_engine_enqueue(m, seq, j);
    pthread_cond_broadcast(&m->changed);
  }
  pthread_mutex_unlock(&m->mu);
  if (seen) {
    json_decref(j);
    return;
  }
  /* The ring holds j until MCP_QUEUE_MAX newer ones came, which only the
   * one thread that receives adds: it outlives the call. */
  if (m->on_notification)
    m->on_notification(m->ctx, m, seq, j);
}

/* Every message the engine pushes: its session's notifications (kept in
 * seq order; one received already, or delivered by this session's adapters,
 * is skipped: a resume after a lost connection replays from the newest
 * received). Through NATS a message on the session's subject is only a
 * wake-up: what the model is given comes from the engine
 * (mcp_natsfetch.c), never from a message anyone allowed to publish there
 * could have written. */
static void
mcp_engine_on_push(void *ctx, const char *method, size_t len, const msgpack_object *params)
{
  McpEngine *m = ctx;
  if (len != strlen("vigil.notification") || memcmp(method, "vigil.notification", len) != 0 ||
      params->type != MSGPACK_OBJECT_ARRAY || params->via.array.size < 1)
    return;
  if (m->nats) {
    mcp_natsfetch__wake(m);
    return;
  }
  const msgpack_object *n = &params->via.array.ptr[0];
  mcp_engine__received(m, cli_obj_get_uint(n, "seq", 0), cli_json_of(n));
}

/* --- the link ------------------------------------------------------------ */

/* Sleeps ms (while a started vigild says whether it listens: the link's
 * thread has nothing else to do then, and calls wait for it). */
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

void
mcp_engine__lost(McpEngine *m, const char *why)
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
          m->where, why, (long long)(m->reconnect_wait_ms / 1000),
          m->spawn ? ", starting an engine if none answers" : "");
}

void
mcp_engine__give_up(McpEngine *m)
{
  m->link = kMcpLinkDown;
  fprintf(stderr, "vigil mcp: no engine on %s after %lld s (%s); tool calls try again, one "
                  "attempt each\n",
          m->where, (long long)(m->reconnect_wait_ms / 1000), m->cli.err.msg);
}

/* Through NATS, once connected: when pings are due (a third of the
 * engine's nats.client_idle_ms, which api_info tells), and whether the
 * session's notifications come live (said on stderr when not: the tools
 * work, and the notifications still reach the model with tool results and
 * hooks, from the cursor). */
static void
mcp_engine_nats_up(McpEngine *m)
{
  uint64_t idle = cli_client_limit(&m->cli, "nats.client_idle_ms", MCP_NATS_IDLE_DEFAULT_MS);
  m->keepalive_ms = (int64_t)(idle / 3 > 100 ? idle / 3 : 100);
  if (!m->cli.live)
    fprintf(stderr, "vigil mcp: no live notifications: %s; they reach the model with tool "
                    "results, notifications_read and hooks\n",
            m->cli.live_err.msg);
}

/* Connects and opens the session, resuming after last_seq when has_last.
 * A connection whose session_open failed is closed again. The caller says
 * the link is up. Through NATS nothing is resumed: the engine drops what it
 * would replay to a requester (the subscription brings what comes next). */
static int
mcp_engine_connect(McpEngine *m, bool has_last, uint64_t last_seq)
{
  if (cli_client_connect(&m->cli, true, has_last && !m->nats, last_seq) == 0) {
    if (m->nats)
      mcp_engine_nats_up(m);
    return 0;
  }
  cli_client_close(&m->cli);
  return -1;
}

/* Writes s on stderr with write(2) alone: a forked child of a process with
 * threads may call nothing that takes a lock (stdio, malloc). */
static void
mcp_engine_child_say(const char *s)
{
  for (size_t n = strlen(s); n > 0;) {
    ssize_t w = write(2, s, n);
    if (w <= 0)
      return;
    s += w;
    n -= (size_t)w;
  }
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
    const char *why = strerrordesc_np(errno); /* untranslated: takes no lock */
    mcp_engine_child_say("vigil mcp: cannot run ");
    mcp_engine_child_say(vigild);
    mcp_engine_child_say(": ");
    mcp_engine_child_say(why ? why : "exec failed");
    mcp_engine_child_say("\n");
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

int
mcp_engine__attempt(McpEngine *m, uint64_t last)
{
  mcp_engine_reap(m);
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

void
mcp_engine__back(McpEngine *m, uint64_t last)
{
  m->reconnects++;
  fprintf(stderr, "vigil mcp: reconnected to the engine on %s after %lld ms; session \"%s\" "
                  "resumed after seq %llu\n",
          m->where, (long long)(cli_now_ms() - m->lost_at), m->cli.session,
          (unsigned long long)last);
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

/* --- opening ------------------------------------------------------------- */

void
mcp_engine_init(McpEngine *m, bool spawn, const char *config)
{
  pthread_mutex_init(&m->mu, NULL);
  pthread_mutex_init(&m->push_mu, NULL);
  /* Waits have deadlines on the monotonic clock, as cli_now_ms. */
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&m->changed, &attr);
  pthread_cond_init(&m->fetch_cond, NULL);
  pthread_condattr_destroy(&attr);
  m->wake[0] = m->wake[1] = -1;
  m->link = kMcpLinkDown;
  m->spawn = spawn;
  m->config = config;
  m->reconnect_wait_ms = MCP_RECONNECT_WAIT_MS;
  m->cli.notify = mcp_engine_on_push;
  m->cli.notify_ctx = m;
  m->nats = m->cli.nats_url != NULL;
  if (m->nats) {
    /* The URL without its credentials: messages go to a harness's log. */
    char url[500], subject[512];
    fleet_url_redacted(m->cli.nats_url, url, sizeof url);
    if (cli_natsreq_subject(subject, sizeof subject, m->cli.engine, m->cli.session) != 0)
      snprintf(subject, sizeof subject, "engine \"%.64s\"", m->cli.engine);
    snprintf(m->where, sizeof m->where, "%s at %s", subject, url);
  } else {
    snprintf(m->where, sizeof m->where, "%s", m->cli.socket_path);
  }
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
  /* Through NATS this machine's socket directory is no business of the
   * adapter's: it keeps nothing there and starts nothing. */
  bool has_last = false;
  if (!m->nats) {
    if (mcp_engine_check_dir(m) != 0)
      return -1;
    char *dir = rpc_server_dir_of(m->cli.socket_path);
    int n = snprintf(m->state_path, sizeof m->state_path, "%s/%s.seq", dir, m->cli.session);
    free(dir);
    if (n < 0 || (size_t)n >= sizeof m->state_path)
      return cli_error_set(&m->cli.err, kCliErrTransport, "the socket's path is too long");
    has_last = mcp_engine_read_state(m, &m->delivered);
  }
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
  m->link = kMcpLinkUp;
  /* A fresh adapter takes the session from its next notification on: a
   * later reconnect resumes from here, not from what came before it. */
  pthread_mutex_lock(&m->mu);
  if (!has_last && m->cli.next_seq > 0 && m->cli.next_seq - 1 > m->received)
    m->received = m->cli.next_seq - 1;
  pthread_mutex_unlock(&m->mu);
  if (mcp_link__start(m) != 0)
    return -1;
  return m->nats ? mcp_natsfetch__start(m) : 0;
}

void
mcp_engine_close(McpEngine *m)
{
  mcp_link__stop(m);
  mcp_natsfetch__stop(m); /* after the link: its call in flight fails at once */
  while (m->count > 0) {
    json_decref(m->queue[m->head].n);
    m->head = (m->head + 1) % MCP_QUEUE_MAX;
    m->count--;
  }
  mcp_engine_reap(m);
  cli_client_close(&m->cli);
  m->link = kMcpLinkDown;
  pthread_cond_destroy(&m->changed);
  pthread_cond_destroy(&m->fetch_cond);
  pthread_mutex_destroy(&m->push_mu);
  pthread_mutex_destroy(&m->mu);
}
