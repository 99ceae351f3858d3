/*
 * The thread of `vigil mcp`'s engine link (mcp_engine.h): the only one that
 * touches the connection. It sends the calls callers queue, reads what the
 * engine sends (answers routed to their callers by msgid, notifications to
 * mcp_engine.c's ring and the delivery), ends the calls whose deadline
 * passed or whose caller was cancelled, and makes every attempt to
 * reconnect (with the backoff and the bound of mcp_engine.h) while calls
 * wait for the link. A caller, from any thread, queues its call under the
 * engine's lock, wakes the thread through a pipe and sleeps on the lock's
 * condition until its call is done: so a monitor_wait of ten minutes holds
 * back nothing but its own caller.
 */
#include "mcp/mcp_engine_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli_json.h"

/* One call, from its caller's stack: queued, then sent, then done. */
struct McpPending {
  McpPending *next;
  const char *method;
  const CliReq *req;
  int64_t deadline;        /* monotonic ms, -1: none */
  bool sent;               /* on the connection of generation gen, as msgid */
  uint32_t msgid;
  bool cancelled;          /* its caller was: the thread ends it */
  bool done;               /* rc, result and err are final; the thread forgets it */
  int rc;
  json_t *result;          /* the engine's result (owned by the caller once done) */
  CliError err;
};

/* The calling thread's caller (mcp_engine_caller_set), or its own. */
static _Thread_local McpCaller *mcp_link_caller;
static _Thread_local McpCaller mcp_link_own_caller;

static McpCaller *
mcp_link_current(void)
{
  return mcp_link_caller ? mcp_link_caller : &mcp_link_own_caller;
}

void
mcp_engine_caller_set(McpCaller *c)
{
  mcp_link_caller = c;
}

const CliError *
mcp_engine_error(void)
{
  return &mcp_link_current()->err;
}

/* Wakes the link's thread (a byte in its pipe; a full pipe wakes it too). */
static void
mcp_link_wake(McpEngine *m)
{
  if (m->wake[1] >= 0) {
    char b = 1;
    ssize_t w = write(m->wake[1], &b, 1);
    (void)w;
  }
}

/* Ends p with rc (err, when failing), takes it off the list (the lock
 * held) and wakes its caller. */
static void
mcp_link_finish(McpEngine *m, McpPending *p, int rc, const CliError *err)
{
  for (McpPending **pp = &m->pending; *pp; pp = &(*pp)->next) {
    if (*pp == p) {
      *pp = p->next;
      break;
    }
  }
  p->rc = rc;
  if (err != NULL)
    p->err = *err;
  p->done = true;
  pthread_cond_broadcast(&m->changed);
}

/* The link went down for good (retrying passed its bound, or one attempt
 * failed): every call waiting for it fails (the lock held). */
static void
mcp_link_fail_waiting(McpEngine *m)
{
  CliError e;
  cli_error_set(&e, kCliErrTransport, "no engine answers on %s (%.900s); the next call tries "
                                      "again",
                m->where, m->cli.err.msg);
  while (m->pending != NULL)
    mcp_link_finish(m, m->pending, -1, &e);
}

/* The connection ended under the calls sent on it (the lock held): a
 * read-only one is sent again once the link is back, another fails, since
 * whether it took effect is unknown. */
static void
mcp_link_lost(McpEngine *m, const char *why)
{
  char reason[CLI_ERROR_MSG_MAX];
  snprintf(reason, sizeof reason, "%s", why);
  mcp_engine__lost(m, reason);
  for (McpPending *p = m->pending, *next; p; p = next) {
    next = p->next;
    if (!p->sent)
      continue;
    p->sent = false;
    if (mcp_engine_read_only(p->method))
      continue;
    CliError e;
    cli_error_set(&e, kCliErrTransport,
                  "the connection to the engine ended while %s was in flight (%.900s); whether "
                  "it took effect is unknown: look (monitor_list, monitor_status) before trying "
                  "again",
                  p->method, reason);
    mcp_link_finish(m, p, -1, &e);
  }
  if (m->link == kMcpLinkDown)
    mcp_link_fail_waiting(m);
}

/* Sends what is queued, ends what was cancelled or ran out of time, and
 * hands out the answers that came (the lock held, the link up). */
static void
mcp_link_serve(McpEngine *m)
{
  int64_t now = cli_now_ms();
  for (McpPending *p = m->pending, *next; p && m->link == kMcpLinkUp; p = next) {
    next = p->next;
    CliError e;
    if (p->cancelled || (p->deadline >= 0 && now >= p->deadline)) {
      if (p->sent)
        cli_conn_abandon(m->cli.conn, p->msgid);
      if (p->cancelled)
        cli_error_set(&e, kCliErrInterrupted, "cancelled: the harness cancelled this request");
      else
        cli_error_set(&e, kCliErrDeadline, "no answer from the engine to %s in time", p->method);
      mcp_link_finish(m, p, -1, &e);
      continue;
    }
    if (!p->sent) {
      /* A write to the engine's socket: it reads at once, and a stuck one
       * ends at the call's deadline (or after CLI_CALL_TIMEOUT_MS). */
      int64_t until = p->deadline >= 0 ? p->deadline : now + CLI_CALL_TIMEOUT_MS;
      int64_t id = cli_conn_send(m->cli.conn, p->method, p->req, until, &e);
      if (id < 0) {
        mcp_link_lost(m, e.msg);
        return;
      }
      p->sent = true;
      p->msgid = (uint32_t)id;
      m->sent_at = now;
      continue;
    }
    CliReply reply;
    int rc = cli_conn_take(m->cli.conn, p->msgid, &reply, &e);
    if (rc > 0) {
      p->result = cli_json_of(reply.result);
      cli_reply_free(&reply);
      mcp_link_finish(m, p, 0, NULL);
    } else if (rc < 0 && e.kind == kCliErrNoEngine) {
      /* NATS's "no responders": no engine of that name is connected, so
       * the call reached none. The engine went away: the call waits for
       * the link and is sent again, whatever it does. */
      p->sent = false;
      mcp_link_lost(m, e.msg);
      return;
    } else if (rc < 0) {
      mcp_link_finish(m, p, -1, &e);
    }
  }
}

/* When the next keepalive ping is due (the lock held), or -1: none (not
 * through NATS, or the link is not up). */
static int64_t
mcp_link_keepalive_at(const McpEngine *m)
{
  if (m->link != kMcpLinkUp || m->keepalive_ms <= 0)
    return -1;
  return m->sent_at + m->keepalive_ms;
}

/* A ping when nothing was sent for keepalive_ms (the lock held, the link
 * up): its answer is not waited for (given up on at once, dropped when it
 * comes). A ping the engine cannot take is a lost link, as any call's. */
static void
mcp_link_keepalive(McpEngine *m, int64_t now)
{
  int64_t at = mcp_link_keepalive_at(m);
  if (at < 0 || now < at)
    return;
  CliError e;
  int64_t id = cli_conn_send(m->cli.conn, "ping", NULL, now + CLI_CALL_TIMEOUT_MS, &e);
  if (id < 0) {
    mcp_link_lost(m, e.msg);
    return;
  }
  cli_conn_abandon(m->cli.conn, (uint32_t)id);
  m->sent_at = now;
}

/* Whether an attempt to reconnect is due (the lock held): while retrying,
 * at its time; when down, once for the calls that wait. */
static bool
mcp_link_attempt_due(McpEngine *m, int64_t now)
{
  if (m->link == kMcpLinkRetrying)
    return now >= m->retry_at;
  return m->link == kMcpLinkDown && m->pending != NULL;
}

/* One attempt (the lock released while it runs: it may start an engine
 * and wait for it) and what follows from it (the lock held again). */
static void
mcp_link_attempt(McpEngine *m)
{
  uint64_t last = m->received > m->delivered ? m->received : m->delivered;
  McpLink was = m->link;
  pthread_mutex_unlock(&m->mu);
  int rc = mcp_engine__attempt(m, last);
  pthread_mutex_lock(&m->mu);
  m->attempts++;
  if (rc == 0) {
    m->link = kMcpLinkUp;
    m->sent_at = cli_now_ms(); /* the attempt's own calls */
    if (m->lost_at > 0)
      mcp_engine__back(m, last);
  } else if (was == kMcpLinkDown) {
    mcp_link_fail_waiting(m);
  } else {
    int64_t now = cli_now_ms();
    if (now >= m->lost_at + m->reconnect_wait_ms) {
      mcp_engine__give_up(m);
      mcp_link_fail_waiting(m);
    } else {
      m->retry_at = now + m->backoff_ms;
      m->backoff_ms = m->backoff_ms * 2 < MCP_RECONNECT_MAX_BACKOFF_MS
                          ? m->backoff_ms * 2
                          : MCP_RECONNECT_MAX_BACKOFF_MS;
    }
  }
  pthread_cond_broadcast(&m->changed);
}

/* How long the thread's poll() may sleep (the lock held): until the next
 * deadline of a call or the next attempt; -1: until woken. */
static int
mcp_link_timeout(McpEngine *m, int64_t now)
{
  int64_t until = -1;
  if (m->link == kMcpLinkRetrying)
    until = m->retry_at;
  int64_t ping = mcp_link_keepalive_at(m);
  if (ping >= 0 && (until < 0 || ping < until))
    until = ping;
  for (McpPending *p = m->pending; p; p = p->next)
    if (p->deadline >= 0 && (until < 0 || p->deadline < until))
      until = p->deadline;
  if (until < 0)
    return -1;
  int64_t left = until - now;
  return left <= 0 ? 0 : left > 60000 ? 60000 : (int)left;
}

static void *
mcp_link_main(void *arg)
{
  McpEngine *m = arg;
  pthread_mutex_lock(&m->mu);
  while (!m->stopping) {
    if (mcp_link_attempt_due(m, cli_now_ms()))
      mcp_link_attempt(m);
    if (m->link == kMcpLinkUp)
      mcp_link_serve(m);
    if (m->link == kMcpLinkUp)
      mcp_link_keepalive(m, cli_now_ms());
    if (m->link != kMcpLinkUp)
      for (McpPending *p = m->pending, *next; p; p = next) {
        next = p->next;
        if (p->cancelled) {
          CliError e;
          cli_error_set(&e, kCliErrInterrupted, "cancelled: the harness cancelled this request");
          mcp_link_finish(m, p, -1, &e);
        }
      }
    int timeout = mcp_link_timeout(m, cli_now_ms());
    if (mcp_link_attempt_due(m, cli_now_ms()))
      timeout = 0;
    int fd = m->link == kMcpLinkUp ? cli_conn_fd(m->cli.conn) : -1;
    pthread_mutex_unlock(&m->mu);

    struct pollfd fds[2] = {{m->wake[0], POLLIN, 0}, {fd, POLLIN, 0}};
    int n = poll(fds, 2, timeout);
    if (fds[0].revents & POLLIN) {
      char buf[256];
      while (read(m->wake[0], buf, sizeof buf) > 0) {
      }
    }
    int rc = 1;
    CliError e = {kCliErrNone, 0, ""};
    if (n > 0 && fd >= 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)))
      /* Only this thread reads the connection; notifications reach
       * mcp_engine_on_push, which takes the lock itself. */
      rc = cli_conn_pump(m->cli.conn, cli_now_ms(), &e);
    pthread_mutex_lock(&m->mu);
    if (rc < 0 && m->link == kMcpLinkUp)
      mcp_link_lost(m, e.msg);
  }
  /* Stopping: whatever still waits fails. */
  CliError e;
  cli_error_set(&e, kCliErrInterrupted, "vigil mcp is stopping");
  while (m->pending != NULL)
    mcp_link_finish(m, m->pending, -1, &e);
  pthread_mutex_unlock(&m->mu);
  return NULL;
}

int
mcp_link__start(McpEngine *m)
{
  m->sent_at = cli_now_ms(); /* mcp_engine_open's calls */
  if (pipe2(m->wake, O_CLOEXEC | O_NONBLOCK) != 0)
    return cli_error_set(&m->cli.err, kCliErrTransport, "pipe: %s", strerror(errno));
  m->stopping = false;
  int rc = pthread_create(&m->thread, NULL, mcp_link_main, m);
  if (rc != 0)
    return cli_error_set(&m->cli.err, kCliErrTransport, "cannot start the link's thread: %s",
                         strerror(rc));
  m->running = true;
  return 0;
}

void
mcp_link__stop(McpEngine *m)
{
  if (m->running) {
    pthread_mutex_lock(&m->mu);
    m->stopping = true;
    pthread_mutex_unlock(&m->mu);
    mcp_link_wake(m);
    pthread_join(m->thread, NULL);
    m->running = false;
  }
  for (int i = 0; i < 2; i++) {
    if (m->wake[i] >= 0)
      close(m->wake[i]);
    m->wake[i] = -1;
  }
}

/* --- callers -------------------------------------------------------------- */

int
mcp_engine_call(McpEngine *m, const char *method, json_t *args, int64_t timeout_ms,
                json_t **result)
{
  McpCaller *c = mcp_link_current();
  CliReq req;
  cli_req_init(&req);
  const char *key;
  json_t *v;
  if (args)
    json_object_foreach(args, key, v) cli_json_pack(v, cli_req_key(&req, key));
  McpPending p = {.method = method, .req = &req,
                  .deadline = timeout_ms < 0 ? -1 : cli_now_ms() + timeout_ms};
  pthread_mutex_lock(&m->mu);
  if (c->cancelled || m->stopping || !m->running) {
    pthread_mutex_unlock(&m->mu);
    cli_req_free(&req);
    return cli_error_set(&c->err, kCliErrInterrupted,
                         c->cancelled ? "cancelled: the harness cancelled this request"
                                      : "vigil mcp is stopping");
  }
  p.next = m->pending;
  m->pending = &p;
  c->waiting = &p;
  mcp_link_wake(m);
  while (!p.done)
    pthread_cond_wait(&m->changed, &m->mu);
  c->waiting = NULL;
  pthread_mutex_unlock(&m->mu);
  cli_req_free(&req);
  if (p.rc != 0) {
    c->err = p.err;
    return -1;
  }
  *result = p.result;
  return 0;
}

void
mcp_engine_cancel(McpEngine *m, McpCaller *c)
{
  pthread_mutex_lock(&m->mu);
  c->cancelled = true;
  if (c->waiting != NULL)
    c->waiting->cancelled = true;
  pthread_cond_broadcast(&m->changed); /* a notifications_read wait */
  pthread_mutex_unlock(&m->mu);
  mcp_link_wake(m);
}

/* The absolute monotonic time of ms, for pthread_cond_timedwait. */
static struct timespec
mcp_link_abstime(int64_t ms)
{
  return (struct timespec){(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
}

int
mcp_engine_wait_news(McpEngine *m, uint64_t since_seq, int64_t deadline)
{
  McpCaller *c = mcp_link_current();
  pthread_mutex_lock(&m->mu);
  if (since_seq == MCP_SINCE_DELIVERED)
    since_seq = m->delivered;
  int rc = 0;
  for (;;) {
    if (mcp_engine__has_after(m, since_seq)) {
      rc = 1;
      break;
    }
    if (c->cancelled || m->stopping) {
      rc = cli_error_set(&c->err, kCliErrInterrupted, "cancelled: the harness cancelled this "
                                                      "request");
      break;
    }
    if (m->link == kMcpLinkDown) {
      rc = cli_error_set(&c->err, kCliErrTransport,
                         "no engine answers on %s; the next call tries again",
                         m->where);
      break;
    }
    if (cli_now_ms() >= deadline)
      break;
    struct timespec ts = mcp_link_abstime(deadline);
    pthread_cond_timedwait(&m->changed, &m->mu, &ts);
  }
  pthread_mutex_unlock(&m->mu);
  return rc;
}
