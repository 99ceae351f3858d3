/*
 * `vigil mcp`'s bounded take from the model cursor (see mcp_cursor.h).
 */
#include "mcp/mcp_cursor.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_client.h"
#include "cli/hook_take.h"
#include "cli/hook_text.h"
#include "base/memory.h"

/* A call naming the model cursor, with up to two numbers (a key NULL:
 * none); the engine's result (owned) or NULL. */
static json_t *
mcp_cursor_call(McpEngine *m, const char *method, const char *key1, uint64_t v1,
                const char *key2, uint64_t v2, int64_t wait_ms)
{
  json_t *args = json_pack("{s:s}", "cursor", HOOK_CURSOR);
  if (key1 != NULL)
    json_object_set_new(args, key1, json_integer((json_int_t)v1));
  if (key2 != NULL)
    json_object_set_new(args, key2, json_integer((json_int_t)v2));
  json_t *result = NULL;
  int rc = mcp_engine_call(m, method, args, CLI_CALL_TIMEOUT_MS + wait_ms, &result);
  json_decref(args);
  return rc == 0 ? result : NULL;
}

/* How many of the notifications above the cursor, oldest first and at most
 * most, fit one answer (hook_text_plan); whether seqs above it were dropped
 * in *dropped. -1 when the look failed. */
static long
mcp_cursor_fit(McpEngine *m, size_t most, bool *dropped)
{
  json_t *got = mcp_cursor_call(m, "cursor_get", NULL, 0, NULL, 0, 0);
  if (got == NULL)
    return -1;
  json_int_t at = json_integer_value(json_object_get(got, "cursor"));
  json_decref(got);
  /* notifications_since names no cursor: the look moves nothing. */
  json_t *args = json_pack("{s:I}", "since_seq", at);
  json_t *seen = NULL;
  int rc = mcp_engine_call(m, "notifications_since", args, CLI_CALL_TIMEOUT_MS, &seen);
  json_decref(args);
  if (rc != 0)
    return -1;
  json_t *list = json_object_get(seen, "notifications");
  size_t n = json_array_size(list);
  if (n > most)
    n = most;
  HookNote *notes = xcalloc(n ? n : 1, sizeof *notes);
  for (size_t i = 0; i < n; i++) {
    json_t *e = json_array_get(list, i);
    const char *text = json_string_value(json_object_get(e, "text"));
    notes[i] = (HookNote){(uint64_t)json_integer_value(json_object_get(e, "seq")),
                          json_string_value(json_object_get(e, "type")),
                          json_string_value(json_object_get(e, "monitor_id")), text ? text : "",
                          text ? strlen(text) : 0};
  }
  size_t fit = hook_text_plan(notes, n, HOOK_TEXT_MAX_BYTES, HOOK_TEXT_MAX_LINES);
  *dropped = json_integer_value(json_object_get(seen, "dropped")) > 0;
  free(notes);
  json_decref(seen);
  return (long)fit;
}

json_t *
mcp_cursor_take(McpEngine *m, size_t most, int64_t wait_ms)
{
  bool dropped = false;
  long fit = mcp_cursor_fit(m, most, &dropped);
  if (fit < 0)
    return NULL;
  /* Nothing above the cursor: wait for the first one (the engine's wait,
   * served in order among the session's waiters), or answer none. At least
   * one is taken when seqs were dropped, so that the cursor passes them. */
  if (fit == 0)
    return mcp_cursor_call(m, "cursor_take", "limit", 1, wait_ms > 0 ? "wait_ms" : NULL,
                           (uint64_t)wait_ms, wait_ms > 0 ? wait_ms : 0);
  return mcp_cursor_call(m, "cursor_take", "limit", (uint64_t)fit, NULL, 0, 0);
}

int
mcp_cursor_advance(McpEngine *m, uint64_t seq)
{
  json_t *r = mcp_cursor_call(m, "cursor_advance", "to", seq, NULL, 0, 0);
  json_decref(r);
  return r != NULL ? 0 : -1;
}
