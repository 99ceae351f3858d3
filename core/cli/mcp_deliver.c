/*
 * Pushing notifications to the harness (see mcp_deliver.h).
 */
#include "mcp_deliver.h"

#include <stdio.h>

#include "mcp_frame.h"
#include "mcp_rpc.h"

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

void
mcp_deliver_flush(McpServer *s)
{
  if (s->delivery != kMcpChannel || !s->ready)
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
  json_decref(list);
}

void
mcp_deliver_on_notification(void *ctx, McpEngine *m, uint64_t seq, json_t *n)
{
  mcp_deliver_flush(ctx);
}
