/*
 * `wait_ready` on the MCP start tools (mcp_ready.h). Not ready is a result,
 * not a tool error, as monitor_wait's timed_out is: the monitor was started
 * and runs on, and the agent needs its id and its last lines to decide.
 */
#include "mcp/mcp_ready.h"

#include <string.h>

#include "base/strbuf.h"
#include "mcp/mcp_frame.h"

#define MCP_READY_DEFAULT_MS 60000
#define MCP_READY_SLACK_MS 5000
#define MCP_READY_MAX_MS 3600000

/* See mcp_ready.h. */
bool
mcp_ready_take(json_t *args, int64_t *wait_ms)
{
  bool wanted = json_is_true(json_object_get(args, MCP_READY_ARG));
  json_object_del(args, MCP_READY_ARG);
  json_int_t t = json_integer_value(json_object_get(args, "ready_timeout_ms"));
  if (t <= 0)
    t = MCP_READY_DEFAULT_MS;
  if (t > MCP_READY_MAX_MS - MCP_READY_SLACK_MS)
    t = MCP_READY_MAX_MS - MCP_READY_SLACK_MS;
  *wait_ms = (int64_t)t + MCP_READY_SLACK_MS;
  return wanted;
}

/* See mcp_ready.h. */
void
mcp_ready_wait(McpServer *s, int64_t wait_ms, McpResult *out)
{
  const char *id = json_string_value(json_object_get(out->structured, "monitor_id"));
  if (id != NULL)
    mcp_ready_wait_into(s, id, wait_ms, out->structured);
}

/* See mcp_ready.h. */
void
mcp_ready_wait_into(McpServer *s, const char *id, int64_t wait_ms, json_t *into)
{
  json_t *args = json_pack("{s:s, s:s, s:I}", "monitor_id", id, "for", "ready", "timeout_ms",
                           (json_int_t)wait_ms);
  json_t *answer = NULL;
  json_t *ready = json_object();
  if (mcp_result_ask(s, "monitor_wait", args, wait_ms + CLI_CALL_TIMEOUT_MS, &answer, NULL) != 0) {
    json_object_set_new(ready, "ready", json_false());
    json_object_set_new(ready, "reason", json_string("the wait for readiness failed: ask "
                                                     "monitor_wait {for: \"ready\"} again"));
    json_object_set_new(into, "ready", ready);
    return;
  }
  json_t *ev = json_object_get(answer, "event");
  bool is_ready = json_is_true(json_object_get(answer, "ready"));
  json_object_set_new(ready, "ready", json_boolean(is_ready));
  const char *reason = json_string_value(json_object_get(ev, "reason"));
  if (reason != NULL)
    json_object_set_new(ready, "reason", json_string(reason));
  else if (json_is_true(json_object_get(answer, "timed_out")))
    json_object_set_new(ready, "reason", json_string("not ready within the wait; it is still "
                                                     "running"));
  else
    json_object_set_new(ready, "reason", json_string("it ended before it was ready"));
  json_object_set(ready, "state", json_object_get(answer, "state"));
  json_t *tail = json_object_get(answer, "tail");
  if (json_array_size(tail) > 0) {
    /* One multi-line `output`: escaped and framed line by line with the
     * rest of the result (mcp_frame.h). */
    StrBuf b = STRBUF_INIT;
    size_t i;
    json_t *l;
    json_array_foreach(tail, i, l) {
      const char *text = json_string_value(l);
      if (text != NULL)
        strbuf_printf(&b, "%s%s", i > 0 ? "\n" : "", text);
    }
    json_object_set_new(ready, "output", json_stringn_nocheck(b.data ? b.data : "", b.len));
    strbuf_free(&b);
  }
  json_object_set_new(into, "ready", ready);
  json_decref(answer);
}

/* See mcp_ready.h. */
void
mcp_ready_copy(const json_t *tool_args, json_t *start_args)
{
  static const char *const keys[] = {"ready_log", "ready_tcp", "ready_http", "ready_status",
                                     "ready_timeout_ms", "health_interval_ms",
                                     "health_failures", MCP_READY_ARG, NULL};
  for (size_t i = 0; keys[i]; i++) {
    json_t *v = json_object_get(tool_args, keys[i]);
    if (v != NULL)
      json_object_set(start_args, keys[i], v);
  }
}

/* See mcp_ready.h. */
void
mcp_ready_text(const json_t *ready, StrBuf *text)
{
  if (ready == NULL)
    return;
  const char *reason = json_string_value(json_object_get(ready, "reason"));
  strbuf_printf(text, "ready: %s%s%s\n", json_is_true(json_object_get(ready, "ready")) ? "yes"
                                                                                      : "no",
                reason ? ": " : "", reason ? reason : "");
  const char *tail = json_string_value(json_object_get(ready, "output"));
  if (tail == NULL)
    return;
  McpFrame f = MCP_FRAME_INIT;
  mcp_frame_text(&f, "[last line] ", tail, strlen(tail));
  mcp_frame_finish(&f, text);
}
