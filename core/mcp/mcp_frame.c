/*
 * Framing and escaping what a model reads of a process (see mcp_frame.h).
 *
 * Which strings are of process origin is said once, by key, in
 * mcp_frame_keys: the engine and the seed profiles use the same few names
 * for it (a line's `text`, `last_line`, an event's `line`, the captured
 * `stdout` and `stderr`, the summaries, Hermes's `output`), so a tool that
 * passes them on is escaped and framed without a line of its own. Labels,
 * descriptions, commands and directories are the callers' own and are left
 * as given in structuredContent; a text item still shows none of their
 * invisible characters raw (mcp_frame_clean).
 */
#include "mcp/mcp_frame.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/memory.h"
#include "base/obsframe.h"
#include "base/textfmt.h"

/* What a string of process origin is, and so how it is escaped. */
typedef enum {
  kMcpFramePlain = 0, /* not of process origin */
  kMcpFrameOne,       /* one line (a line's text, last_line): escaped whole */
  kMcpFrameLines,     /* several lines (captured bytes, summaries): line by line */
  kMcpFrameRendered,  /* text the engine rendered with process text escaped in it */
} McpFrameKind;

/* The keys of process text, and whether a result's text item shows them in
 * the frame (`reason` is vigil's words about an ending, escaped because a
 * policy's error may quote a line, and stays with the other facts). */
static const struct {
  const char *key;
  McpFrameKind kind;
  bool framed;
} mcp_frame_keys[] = {
  {"last_line", kMcpFrameOne, true},
  {"line", kMcpFrameOne, true},
  {"reason", kMcpFrameOne, false},
  {"stdout", kMcpFrameLines, true},
  {"stderr", kMcpFrameLines, true},
  {"stdout_summary", kMcpFrameLines, true},
  {"stderr_summary", kMcpFrameLines, true},
  {"output", kMcpFrameLines, true},
  {"output_preview", kMcpFrameLines, true},
};

/* The keys whose values a result's owner is named by, in a list. */
static const char *const mcp_frame_id_keys[] = {"monitor_id", "process_id", "session_id",
                                                "shell_id",   "bash_id",    "task_id"};

#define MCP_FRAME_MOVED "(in the observation below)"

/* Appends text line by line, each line behind prefix and escaped
 * (injective: textfmt_escape) or sanitized (textfmt_sanitize), with the
 * newlines between them kept as they are: "a\nb\n" gives two lines and
 * its final newline, "" nothing. */
static void
mcp_frame_each_line(StrBuf *out, const char *prefix, const char *text, size_t len,
                    bool injective)
{
  const char *p = text, *end = text + len;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
    strbuf_puts(out, prefix);
    if (injective)
      textfmt_escape(out, p, n);
    else
      textfmt_sanitize(out, p, n);
    if (nl)
      strbuf_putc(out, '\n');
    p += n + (nl != NULL);
  }
}

/* --- the frame -------------------------------------------------------------- */

/* Adds the lines of text to the frame, each ending with a newline. */
static void
mcp_frame_add(McpFrame *f, const char *prefix, const char *text, size_t len, bool injective)
{
  mcp_frame_each_line(&f->body, prefix, text, len, injective);
  if (f->body.len > 0 && f->body.data[f->body.len - 1] != '\n')
    strbuf_putc(&f->body, '\n');
}

/* See mcp_frame.h. */
void
mcp_frame_text(McpFrame *f, const char *prefix, const char *text, size_t len)
{
  mcp_frame_add(f, prefix, text, len, true);
}

/* See mcp_frame.h. */
void
mcp_frame_escaped(McpFrame *f, const char *prefix, const char *text, size_t len)
{
  mcp_frame_add(f, prefix, text, len, false);
}

/* See mcp_frame.h. The nonce is drawn after the last line went in, so
 * nothing in the frame can hold it. */
void
mcp_frame_finish(McpFrame *f, StrBuf *out)
{
  if (f->body.len > 0) {
    char nonce[OBSFRAME_NONCE_HEX + 1];
    obsframe_nonce(nonce);
    obsframe_wrap(f->body.data, f->body.len, nonce, false, out);
  }
  strbuf_free(&f->body);
}

/* --- escaping structured results -------------------------------------------- */

/* Whether an object is a line of the ring ({seq, stream, text, ...}). */
static bool
mcp_frame_is_line(const json_t *o)
{
  return json_is_object(o) && json_is_integer(json_object_get(o, "seq")) &&
         json_is_string(json_object_get(o, "stream")) &&
         json_is_string(json_object_get(o, "text"));
}

/* The kind of the value at key, in a line object or not; *framed says
 * whether a text item shows it in the frame. */
static McpFrameKind
mcp_frame_kind(const char *key, bool in_line, bool *framed)
{
  *framed = true;
  if (strcmp(key, "text") == 0)
    return in_line ? kMcpFrameOne : kMcpFrameRendered;
  for (size_t i = 0; i < sizeof mcp_frame_keys / sizeof mcp_frame_keys[0]; i++) {
    if (strcmp(key, mcp_frame_keys[i].key) == 0) {
      *framed = mcp_frame_keys[i].framed;
      return mcp_frame_keys[i].kind;
    }
  }
  *framed = false;
  return kMcpFramePlain;
}

/* s escaped as its kind says, as a new JSON string. */
static json_t *
mcp_frame_escape_string(const json_t *s, McpFrameKind kind)
{
  const char *text = json_string_value(s);
  size_t len = json_string_length(s);
  StrBuf b = STRBUF_INIT;
  if (kind == kMcpFrameOne)
    textfmt_escape(&b, text, len);
  else /* line by line, the newlines kept: a program reads the lines back */
    mcp_frame_each_line(&b, "", text, len, kind == kMcpFrameLines);
  json_t *j = json_stringn(strbuf_cstr(&b), b.len);
  strbuf_free(&b);
  return j;
}

static void mcp_frame_escape_in(json_t *v);

static void
mcp_frame_escape_object(json_t *o)
{
  bool in_line = mcp_frame_is_line(o);
  const char *key;
  json_t *v;
  json_object_foreach(o, key, v) {
    if (strcmp(key, "start") == 0)
      continue;
    if (strcmp(key, "notifications") == 0 && json_is_array(v)) {
      size_t i;
      json_t *n;
      json_array_foreach(v, i, n) json_array_set_new(v, i, mcp_frame_notification(n));
      continue;
    }
    bool framed;
    McpFrameKind kind = mcp_frame_kind(key, in_line, &framed);
    if (kind != kMcpFramePlain && json_is_string(v))
      json_object_set_new(o, key, mcp_frame_escape_string(v, kind)); /* replaces in place */
    else
      mcp_frame_escape_in(v);
  }
}

/* Escapes what is inside v, recursively. */
static void
mcp_frame_escape_in(json_t *v)
{
  if (json_is_object(v)) {
    mcp_frame_escape_object(v);
  } else if (json_is_array(v)) {
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e) mcp_frame_escape_in(e);
  }
}

/* See mcp_frame.h. */
void
mcp_frame_escape(json_t *structured)
{
  mcp_frame_escape_in(structured);
}

/* See mcp_frame.h. The envelope is sanitized (kMcpFrameRendered), which
 * leaves the engine's escaped text as it is. */
json_t *
mcp_frame_notification(const json_t *n)
{
  json_t *copy = json_deep_copy(n);
  mcp_frame_escape_in(copy);
  return copy;
}

/* --- rendering a result ------------------------------------------------------ */

/* What an element of a list is called in a prefix: its id, "event N" for
 * an event, else "KEY[i]". */
static void
mcp_frame_owner(const json_t *item, const char *key, size_t i, char *out, size_t cap)
{
  for (size_t k = 0; k < sizeof mcp_frame_id_keys / sizeof mcp_frame_id_keys[0]; k++) {
    const char *id = json_string_value(json_object_get(item, mcp_frame_id_keys[k]));
    if (id != NULL && strlen(id) < 64) {
      snprintf(out, cap, "%s", id);
      return;
    }
  }
  const json_t *id = json_object_get(item, "id");
  if (json_is_integer(id) && json_is_string(json_object_get(item, "type")))
    snprintf(out, cap, "event %lld", (long long)json_integer_value(id));
  else
    snprintf(out, cap, "%s[%zu]", key, i);
}

/* Moves a list of ring lines into the frame, as the envelope shows them
 * ("[stdout seq=4] text", " [truncated]" when cut), then a "matched:" line
 * for the lines a pattern matched. */
static void
mcp_frame_render_lines(McpFrame *f, const json_t *lines)
{
  size_t i;
  const json_t *l;
  StrBuf matched = STRBUF_INIT;
  json_array_foreach(lines, i, l) {
    const char *stream = json_string_value(json_object_get(l, "stream"));
    long long seq = (long long)json_integer_value(json_object_get(l, "seq"));
    char prefix[96];
    snprintf(prefix, sizeof prefix, "[%s seq=%lld] ",
             stream && strcmp(stream, "stderr") == 0 ? "stderr" : "stdout", seq);
    const json_t *text = json_object_get(l, "text");
    StrBuf line = STRBUF_INIT;
    strbuf_append(&line, json_string_value(text), json_string_length(text));
    if (json_is_true(json_object_get(l, "truncated")))
      strbuf_puts(&line, " [truncated]");
    mcp_frame_escaped(f, prefix, strbuf_cstr(&line), line.len);
    strbuf_free(&line);
    const json_t *pattern = json_object_get(l, "pattern");
    if (json_is_integer(pattern))
      strbuf_printf(&matched, "%sseq=%lld (pattern %lld)", matched.len ? ", " : "matched: ", seq,
                    (long long)json_integer_value(pattern));
  }
  if (matched.len > 0)
    mcp_frame_escaped(f, "", matched.data, matched.len);
  strbuf_free(&matched);
}

/* Whether v is a non-empty list of ring lines. */
static bool
mcp_frame_is_lines(const json_t *v)
{
  return json_array_size(v) > 0 && mcp_frame_is_line(json_array_get(v, 0));
}

static void mcp_frame_render_in(McpFrame *f, json_t *v, const char *key);

/* Moves the process text of object o out into the frame; where names o
 * ("" for the result itself). */
static void
mcp_frame_render_object(McpFrame *f, json_t *o, const char *where)
{
  const char *key;
  json_t *v;
  json_object_foreach(o, key, v) {
    if (strcmp(key, "start") == 0)
      continue;
    if (mcp_frame_is_lines(v)) {
      mcp_frame_render_lines(f, v);
      char moved[96];
      snprintf(moved, sizeof moved, "(%zu line%s, in the observation below)",
               json_array_size(v), json_array_size(v) == 1 ? "" : "s");
      json_object_set_new(o, key, json_string(moved));
      continue;
    }
    bool framed;
    McpFrameKind kind = mcp_frame_kind(key, false, &framed);
    if (kind != kMcpFramePlain && framed && json_is_string(v) && json_string_length(v) > 0) {
      char prefix[160];
      snprintf(prefix, sizeof prefix, "[%s%s%s] ", where, where[0] ? " " : "", key);
      mcp_frame_escaped(f, kind == kMcpFrameRendered ? "" : prefix, json_string_value(v),
                        json_string_length(v));
      json_object_set_new(o, key, json_string(MCP_FRAME_MOVED));
      continue;
    }
    mcp_frame_render_in(f, v, key);
  }
}

/* Renders what is inside v, the value at key. */
static void
mcp_frame_render_in(McpFrame *f, json_t *v, const char *key)
{
  if (json_is_object(v)) {
    /* A nested object is named by its key: "[event line]". */
    mcp_frame_render_object(f, v, key);
  } else if (json_is_array(v)) {
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e) {
      char owner[96];
      mcp_frame_owner(e, key, i, owner, sizeof owner);
      if (json_is_object(e))
        mcp_frame_render_object(f, e, owner);
    }
  }
}

/* See mcp_frame.h. */
char *
mcp_frame_render(const json_t *structured)
{
  json_t *facts = json_deep_copy(structured);
  McpFrame f = MCP_FRAME_INIT;
  if (json_is_object(facts))
    mcp_frame_render_object(&f, facts, "");
  char *json = json_dumps(facts, JSON_INDENT(2));
  json_decref(facts);
  StrBuf out = STRBUF_INIT;
  strbuf_puts(&out, json ? json : "{}");
  free(json);
  strbuf_putc(&out, '\n');
  mcp_frame_finish(&f, &out);
  return strbuf_take(&out);
}

/* See mcp_frame.h. */
void
mcp_frame_clean(char **text)
{
  if (*text == NULL)
    return;
  StrBuf b = STRBUF_INIT;
  mcp_frame_each_line(&b, "", *text, strlen(*text), false);
  free(*text);
  *text = b.data ? strbuf_take(&b) : xstrdup("");
}
