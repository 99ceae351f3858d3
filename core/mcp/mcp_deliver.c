/*
 * Pushing notifications to the harness (see mcp_deliver.h).
 */
#include "mcp/mcp_deliver.h"

#include <pthread.h>
#include <stdio.h>

#include "mcp/mcp_cursor.h"
#include "mcp/mcp_frame.h"
#include "mcp/mcp_rpc.h"

/* A meta value as a string (Claude Code's channel meta holds strings). */
static json_t *
mcp_deliver_meta_string(json_t *v)
{
  if (json_is_string(v))
    return json_incref(v);
  if (json_is_integer(v)) {
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
    return json_string(buf);
  }
  return json_string("");
}

/* One notification as notifications/claude/channel and, at the client's
 * level, notifications/message. */
static void
mcp_deliver_push(McpServer *s, json_t *n)
{
  json_t *meta = json_object();
  json_object_set_new(meta, "source", json_string("vigil"));
  static const char *const keys[] = {"monitor_id", "label", "type", "seq", "mode", NULL};
  for (size_t i = 0; keys[i]; i++)
    json_object_set_new(meta, keys[i], mcp_deliver_meta_string(json_object_get(n, keys[i])));
  json_t *text = json_object_get(n, "text");
  mcp_rpc_notify("notifications/claude/channel",
                 json_pack("{s:o,s:o}", "content", text ? json_incref(text) : json_string(""),
                           "meta", meta));
  /* info (1) unless the client asked for a higher level; its process text
   * escaped, since a harness may show the data to the model. */
  if (s->log_level <= 1)
    mcp_rpc_notify("notifications/message",
                   json_pack("{s:s,s:s,s:o}", "level", "info", "logger", "vigil", "data",
                             mcp_frame_notification(n)));
}

/* --delivery channel's cursor moves (see mcp_deliver.h): one thread of
 * the process's one server, sending the newest pushed seq, never one call
 * per push. */
static struct {
  pthread_mutex_t mu;
  pthread_cond_t changed;
  uint64_t want;           /* the newest seq pushed */
  uint64_t sent;           /* the newest the cursor was moved to (or tried) */
  bool running, stopping;
  pthread_t thread;
  McpServer *s;
} mcp_deliver_advance = {.mu = PTHREAD_MUTEX_INITIALIZER, .changed = PTHREAD_COND_INITIALIZER};

static void *
mcp_deliver_advance_main(void *arg)
{
  (void)arg;
  pthread_mutex_lock(&mcp_deliver_advance.mu);
  for (;;) {
    while (mcp_deliver_advance.want == mcp_deliver_advance.sent && !mcp_deliver_advance.stopping)
      pthread_cond_wait(&mcp_deliver_advance.changed, &mcp_deliver_advance.mu);
    if (mcp_deliver_advance.want == mcp_deliver_advance.sent)
      break; /* stopping, and nothing left to send */
    uint64_t to = mcp_deliver_advance.want;
    pthread_mutex_unlock(&mcp_deliver_advance.mu);
    /* A failure is said and not retried: the push was best effort too, and
     * a later push moves the cursor past this one anyway. */
    if (mcp_cursor_advance(&mcp_deliver_advance.s->engine, to) != 0)
      fprintf(stderr, "vigil mcp: cannot move the model cursor past seq %llu: %s\n",
              (unsigned long long)to, mcp_engine_error()->msg);
    pthread_mutex_lock(&mcp_deliver_advance.mu);
    mcp_deliver_advance.sent = to;
    pthread_cond_broadcast(&mcp_deliver_advance.changed);
  }
  pthread_mutex_unlock(&mcp_deliver_advance.mu);
  return NULL;
}

int
mcp_deliver_start(McpServer *s)
{
  if (s->delivery != kMcpChannel)
    return 0;
  mcp_deliver_advance.s = s;
  mcp_deliver_advance.stopping = false;
  if (pthread_create(&mcp_deliver_advance.thread, NULL, mcp_deliver_advance_main, NULL) != 0)
    return -1;
  mcp_deliver_advance.running = true;
  return 0;
}

void
mcp_deliver_stop(void)
{
  if (!mcp_deliver_advance.running)
    return;
  pthread_mutex_lock(&mcp_deliver_advance.mu);
  mcp_deliver_advance.stopping = true;
  pthread_cond_broadcast(&mcp_deliver_advance.changed);
  pthread_mutex_unlock(&mcp_deliver_advance.mu);
  pthread_join(mcp_deliver_advance.thread, NULL);
  mcp_deliver_advance.running = false;
}

/* Asks the advancing thread to move the cursor to seq (channel mode). */
static void
mcp_deliver_advance_to(uint64_t seq)
{
  pthread_mutex_lock(&mcp_deliver_advance.mu);
  if (seq > mcp_deliver_advance.want) {
    mcp_deliver_advance.want = seq;
    pthread_cond_broadcast(&mcp_deliver_advance.changed);
  }
  pthread_mutex_unlock(&mcp_deliver_advance.mu);
}

void
mcp_deliver_flush(McpServer *s)
{
  if ((s->delivery != kMcpChannel && s->delivery != kMcpAuto) || !s->ready)
    return;
  /* Taken and pushed under push_mu: whichever thread flushes (the link's,
   * or the reading one at notifications/initialized), pushes leave in seq
   * order and each once. */
  pthread_mutex_lock(&s->engine.push_mu);
  json_t *list = mcp_engine_take(&s->engine, MCP_SINCE_DELIVERED, MCP_QUEUE_MAX, NULL);
  size_t i;
  json_t *n;
  json_array_foreach(list, i, n) mcp_deliver_push(s, n);
  pthread_mutex_unlock(&s->engine.push_mu);
  /* channel trusts the push: the model has it, so the cursor moves past it
   * (auto's pushes move nothing: the next tool result carries them). */
  if (s->delivery == kMcpChannel && json_array_size(list) > 0)
    mcp_deliver_advance_to(
      (uint64_t)json_integer_value(json_object_get(json_array_get(list, json_array_size(list) - 1),
                                                   "seq")));
  json_decref(list);
}

void
mcp_deliver_on_notification(void *ctx, McpEngine *m, uint64_t seq, json_t *n)
{
  mcp_deliver_flush(ctx);
}
