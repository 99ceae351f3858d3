/*
 * The MCP adapter's engine link (see mcp_engine.h): connecting, or starting
 * a detached vigild and connecting; the session and its resume; the queue of
 * notifications not yet handed to the harness.
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

/* How long a started engine has to start listening. */
#define MCP_SPAWN_WAIT_MS 10000

/* --- the state file ------------------------------------------------------ */

/* The directory of the socket path, into dir. */
static void
mcp_engine_socket_dir(const McpEngine *m, char *dir, size_t cap)
{
  snprintf(dir, cap, "%s", m->cli.socket_path);
  char *slash = strrchr(dir, '/');
  if (slash && slash != dir)
    *slash = '\0';
  else
    snprintf(dir, cap, ".");
}

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
 * seq order; one this session's adapters delivered already is skipped). */
static void
mcp_engine_on_push(void *ctx, const char *method, size_t len, const msgpack_object *params)
{
  McpEngine *m = ctx;
  if (len != strlen("vigil.notification") || memcmp(method, "vigil.notification", len) != 0 ||
      params->type != MSGPACK_OBJECT_ARRAY || params->via.array.size < 1)
    return;
  const msgpack_object *n = &params->via.array.ptr[0];
  uint64_t seq = cli_obj_get_uint(n, "seq", 0);
  if (seq != 0 && seq <= m->delivered)
    return;
  json_t *j = cli_json_of(n);
  mcp_engine_enqueue(m, seq, j);
  if (m->on_notification)
    m->on_notification(m->ctx, m, seq, j);
}

int
mcp_engine_poll(McpEngine *m)
{
  for (;;) {
    struct pollfd pfd = {cli_conn_fd(m->cli.conn), POLLIN, 0};
    if (poll(&pfd, 1, 0) <= 0)
      return 0;
    int rc = cli_conn_pump(m->cli.conn, cli_now_ms(), &m->cli.err);
    if (rc < 0)
      return -1;
    if (rc == 0)
      return 0;
  }
}

/* --- calls --------------------------------------------------------------- */

int
mcp_engine_call(McpEngine *m, const char *method, json_t *args, int64_t timeout_ms,
                json_t **result)
{
  CliReq req;
  cli_req_init(&req);
  const char *key;
  json_t *v;
  if (args)
    json_object_foreach(args, key, v) cli_json_pack(v, cli_req_key(&req, key));
  CliReply reply;
  int rc = cli_client_call(&m->cli, method, &req, timeout_ms, &reply);
  cli_req_free(&req);
  if (rc != 0)
    return -1;
  *result = cli_json_of(reply.result);
  cli_reply_free(&reply);
  return 0;
}

/* --- starting an engine -------------------------------------------------- */

/* vigild next to this program (the build or install directory), else the
 * one on PATH. */
static void
mcp_engine_vigild_path(char *out, size_t cap)
{
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash) {
      *slash = '\0';
      int w = snprintf(out, cap, "%s/vigild", self);
      if (w > 0 && (size_t)w < cap && access(out, X_OK) == 0)
        return;
    }
  }
  snprintf(out, cap, "vigild");
}

/* Starts `vigild --listen SOCKET [--config FILE]` in a session of its own,
 * detached (a double fork, so it is nobody's child here and outlives the
 * adapter), logging to vigild-mcp.log in the socket's directory. */
static int
mcp_engine_spawn(McpEngine *m, const char *config)
{
  char vigild[PATH_MAX], dir[4200], log[4300];
  mcp_engine_vigild_path(vigild, sizeof vigild);
  mcp_engine_socket_dir(m, dir, sizeof dir);
  mkdir(dir, 0700); /* vigild checks its mode and owner itself */
  if (snprintf(log, sizeof log, "%s/vigild-mcp.log", dir) >= (int)sizeof log)
    return cli_error_set(&m->cli.err, kCliErrTransport, "the socket's path is too long");
  fprintf(stderr, "vigil mcp: no engine on %s; starting %s (log: %s)\n", m->cli.socket_path,
          vigild, log);
  pid_t pid = fork();
  if (pid < 0)
    return cli_error_set(&m->cli.err, kCliErrTransport, "cannot start vigild: %s",
                         strerror(errno));
  if (pid == 0) {
    if (fork() != 0)
      _exit(0);
    setsid();
    int null = open("/dev/null", O_RDWR);
    int out = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    dup2(null, 0);
    dup2(null, 1);
    dup2(out >= 0 ? out : null, 2);
    for (int fd = 3; fd < 1024; fd++)
      close(fd);
    char *argv[] = {vigild, "--listen", m->cli.socket_path, config ? "--config" : NULL,
                    (char *)config, NULL};
    execvp(vigild, argv);
    _exit(127);
  }
  waitpid(pid, NULL, 0);
  return 0;
}

/* Connects and opens the session, retrying while a just-started engine
 * gets to listening. */
static int
mcp_engine_connect_wait(McpEngine *m, bool has_last)
{
  int64_t deadline = cli_now_ms() + MCP_SPAWN_WAIT_MS;
  for (;;) {
    if (cli_client_connect(&m->cli, true, has_last, m->delivered) == 0)
      return 0;
    if (m->cli.err.kind != kCliErrNoEngine || cli_now_ms() >= deadline)
      return -1;
    struct timespec ts = {0, 50 * 1000000L};
    nanosleep(&ts, NULL);
  }
}

int
mcp_engine_open(McpEngine *m, const CliParsed *p, bool spawn, const char *config)
{
  /* The session's name becomes a file name next to the socket: only the
   * characters the engine allows in a session name, so no path escapes. */
  for (const char *c = m->cli.session; *c; c++)
    if (!(isalnum((unsigned char)*c) || strchr("._:-", *c)))
      return cli_error_set(&m->cli.err, kCliErrTransport,
                           "--session: \"%.64s\" must be characters of [A-Za-z0-9._:-]",
                           m->cli.session);
  char dir[4200];
  mcp_engine_socket_dir(m, dir, sizeof dir);
  int n = snprintf(m->state_path, sizeof m->state_path, "%s/%s.seq", dir, m->cli.session);
  if (n < 0 || (size_t)n >= sizeof m->state_path)
    return cli_error_set(&m->cli.err, kCliErrTransport, "the socket's path is too long");
  bool has_last = mcp_engine_read_state(m, &m->delivered);
  m->cli.notify = mcp_engine_on_push;
  m->cli.notify_ctx = m;
  if (cli_client_connect(&m->cli, true, has_last, m->delivered) == 0)
    return 0;
  if (!spawn || m->cli.err.kind != kCliErrNoEngine)
    return -1;
  if (mcp_engine_spawn(m, config) != 0)
    return -1;
  return mcp_engine_connect_wait(m, has_last);
}

void
mcp_engine_close(McpEngine *m)
{
  while (m->count > 0) {
    json_decref(m->queue[m->head].n);
    m->head = (m->head + 1) % MCP_QUEUE_MAX;
    m->count--;
  }
  cli_client_close(&m->cli);
}
