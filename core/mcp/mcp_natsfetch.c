/*
 * `vigil mcp` through NATS: where live notifications come from
 * (mcp_engine_internal.h, docs/fleet.md "vigil mcp and hooks").
 *
 * Over a socket the engine pushes each notification to the adapter, and
 * the push is the engine's word. Through NATS the adapter hears of a new
 * notification by a message on the session's subject, which any user
 * allowed to publish there could have written: the text a model would be
 * given, and its seq, which moves the model cursor in channel delivery.
 * So such a message is only a wake-up. This thread, woken, asks the engine
 * for what is newer than the newest it received (notifications_since,
 * which moves nothing) and hands each on as the socket's push
 * (mcp_engine__received): what reaches the model is what the engine
 * keeps. A forged message costs one read of the engine, and a message
 * missed while the broker was away is made up by the next one.
 *
 * A thread of its own because the read is a call to the engine, which the
 * link's thread (which hears the wake-up) serves and so may not wait for.
 * Wake-ups that come while a read is in flight fold into one more read.
 */
#include "mcp/mcp_engine_internal.h"

#include <stdio.h>
#include <string.h>

#include "cli/cli_client.h"

/* One read of what the engine keeps above since (all of it: the session
 * bounds it by session.queue_max), handed on in seq order. */
static void
mcp_natsfetch_read(McpEngine *m, uint64_t since)
{
  json_t *args = json_pack("{s:I}", "since_seq", (json_int_t)since);
  json_t *got = NULL;
  int rc = mcp_engine_call(m, "notifications_since", args, CLI_CALL_TIMEOUT_MS, &got);
  json_decref(args);
  if (rc != 0) {
    pthread_mutex_lock(&m->mu);
    uint64_t n = ++m->fetch_failures;
    pthread_mutex_unlock(&m->mu);
    if ((n & (n - 1)) == 0)
      fprintf(stderr, "vigil mcp: cannot read the session's new notifications from %s (%llu "
                      "time(s)): %s; they stay above the model cursor for the next tool result "
                      "or hook\n",
              m->where, (unsigned long long)n, mcp_engine_error()->msg);
    return;
  }
  json_t *list = json_object_get(got, "notifications");
  size_t count = json_array_size(list);
  for (size_t i = 0; i < count; i++) {
    json_t *n = json_array_get(list, i);
    json_t *seq = json_object_get(n, "seq");
    if (!json_is_object(n) || !json_is_integer(seq) || json_integer_value(seq) <= 0)
      continue;
    mcp_engine__received(m, (uint64_t)json_integer_value(seq), json_incref(n));
  }
  json_decref(got);
}

static void *
mcp_natsfetch_main(void *arg)
{
  McpEngine *m = arg;
  pthread_mutex_lock(&m->mu);
  for (;;) {
    while (!m->fetch_due && !m->fetch_stopping)
      pthread_cond_wait(&m->fetch_cond, &m->mu);
    if (m->fetch_stopping)
      break;
    m->fetch_due = false;
    uint64_t since = m->received > m->delivered ? m->received : m->delivered;
    pthread_mutex_unlock(&m->mu);
    mcp_natsfetch_read(m, since);
    pthread_mutex_lock(&m->mu);
  }
  pthread_mutex_unlock(&m->mu);
  return NULL;
}

int
mcp_natsfetch__start(McpEngine *m)
{
  m->fetch_due = false;
  m->fetch_stopping = false;
  int rc = pthread_create(&m->fetch_thread, NULL, mcp_natsfetch_main, m);
  if (rc != 0)
    return cli_error_set(&m->cli.err, kCliErrTransport,
                         "cannot start the thread that reads live notifications: %s",
                         strerror(rc));
  m->fetch_running = true;
  return 0;
}

void
mcp_natsfetch__wake(McpEngine *m)
{
  pthread_mutex_lock(&m->mu);
  m->fetch_due = true;
  pthread_cond_signal(&m->fetch_cond);
  pthread_mutex_unlock(&m->mu);
}

void
mcp_natsfetch__stop(McpEngine *m)
{
  if (!m->fetch_running)
    return;
  pthread_mutex_lock(&m->mu);
  m->fetch_stopping = true;
  pthread_cond_signal(&m->fetch_cond);
  pthread_mutex_unlock(&m->mu);
  pthread_join(m->fetch_thread, NULL);
  m->fetch_running = false;
}
