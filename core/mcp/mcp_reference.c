/*
 * The reference to a pushed notification (see mcp_reference.h). Which lines
 * it quotes: an incident's first and last lines say what happened in the
 * fewest bytes (the engine assembled the incident for that); without
 * incidents, the first line a pattern matched; for an ending without either, the ending's own
 * facts (state, exit code, signal, reason) in vigil's words. Nothing is
 * quoted for a `dropped` notification: it holds no process text.
 */
#include "mcp/mcp_reference.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/mcp_frame.h"
#include "base/memory.h"
#include "base/strbuf.h"
#include "base/utf8.h"

/* Adds the process line {seq, stream, text} (borrowed) to f, cut at
 * MCP_REFERENCE_LINE_MAX bytes and escaped. */
static void
mcp_reference_quote(McpFrame *f, const json_t *line)
{
  const char *text = json_string_value(json_object_get(line, "text"));
  if (text == NULL)
    return;
  char prefix[64];
  const char *stream = json_string_value(json_object_get(line, "stream"));
  snprintf(prefix, sizeof prefix, "[%.8s seq=%lld] ", stream ? stream : "line",
           (long long)json_integer_value(json_object_get(line, "seq")));
  size_t len = strlen(text);
  size_t cut = utf8_cut(text, len, MCP_REFERENCE_LINE_MAX);
  mcp_frame_text(f, prefix, text, cut);
  if (cut < len) {
    const char *more = "(cut here; notifications_read has the whole line)";
    mcp_frame_escaped(f, "", more, strlen(more));
  }
}

/* Quotes what says what happened: the first incident's first line and,
 * when it has more, its last (a Python traceback opens with a header that
 * names nothing and ends with the exception; a Java one opens with it), or
 * without incidents the first line a pattern matched. False when n has
 * neither. */
static bool
mcp_reference_lines(McpFrame *f, const json_t *n)
{
  json_t *lines = json_object_get(json_array_get(json_object_get(n, "incidents"), 0), "lines");
  size_t count = json_array_size(lines);
  if (count > 0) {
    mcp_reference_quote(f, json_array_get(lines, 0));
    if (count > 1)
      mcp_reference_quote(f, json_array_get(lines, count - 1));
    return true;
  }
  size_t i;
  json_t *line;
  json_array_foreach(json_object_get(n, "lines"), i, line) {
    json_t *pattern = json_object_get(line, "pattern");
    if (pattern != NULL && !json_is_null(pattern)) {
      mcp_reference_quote(f, line);
      return true;
    }
  }
  return false;
}

/* Adds to f what the ending n says about itself, in vigil's words (an
 * engine's reason may quote a limit, never process output, but it is
 * escaped all the same). */
static void
mcp_reference_ending(McpFrame *f, const json_t *n)
{
  const char *state = json_string_value(json_object_get(n, "state"));
  json_t *code = json_object_get(n, "exit_code");
  json_t *sig = json_object_get(n, "signal");
  StrBuf out = STRBUF_INIT;
  strbuf_printf(&out, "state=%s", state ? state : "unknown");
  if (json_is_integer(code))
    strbuf_printf(&out, " exit_code=%lld", (long long)json_integer_value(code));
  if (json_is_string(sig))
    strbuf_printf(&out, " signal=%s", json_string_value(sig));
  else if (json_is_integer(sig))
    strbuf_printf(&out, " signal=%lld", (long long)json_integer_value(sig));
  mcp_frame_text(f, "[ending] ", out.data ? out.data : "", out.len);
  strbuf_free(&out);
  const char *reason = json_string_value(json_object_get(n, "reason"));
  if (reason != NULL)
    mcp_frame_text(f, "[reason] ", reason, utf8_cut(reason, strlen(reason),
                                                    MCP_REFERENCE_LINE_MAX));
}

json_t *
mcp_reference_item(const json_t *n)
{
  json_int_t seq = json_integer_value(json_object_get(n, "seq"));
  const char *type = json_string_value(json_object_get(n, "type"));
  const char *id = json_string_value(json_object_get(n, "monitor_id"));
  StrBuf out = STRBUF_INIT;
  strbuf_printf(&out,
                "[vigil] notification seq %lld (%.32s of %.32s) was pushed as a channel "
                "message; notifications_read {since_seq: %lld} gives its whole text",
                (long long)seq, type ? type : "event", id ? id : "the session",
                (long long)(seq > 0 ? seq - 1 : 0));
  McpFrame f = MCP_FRAME_INIT;
  const char *label = json_string_value(json_object_get(n, "label"));
  if (label != NULL)
    mcp_frame_text(&f, "[label] ", label, utf8_cut(label, strlen(label), 64));
  if (!mcp_reference_lines(&f, n) && json_is_string(json_object_get(n, "state")) &&
      type != NULL && strcmp(type, "output") != 0)
    mcp_reference_ending(&f, n);
  if (f.body.len > 0)
    strbuf_puts(&out, "\n");
  mcp_frame_finish(&f, &out); /* appends nothing when no line was added */
  char *item_text = strbuf_take(&out);
  mcp_frame_clean(&item_text);
  json_t *item = json_pack("{s:s,s:s}", "type", "text", "text", item_text ? item_text : "");
  free(item_text);
  return item;
}
