/*
 * Claude Code's BashOutput, in the watch_process profile (seed 000;
 * docs/mcp-mapping.md section 2.4): what a monitor printed since the last
 * call, per stream, at most WP_BASH_MAX bytes of each, starting at a line
 * boundary, optionally filtered by a POSIX regular expression (a partial last
 * line is held back while the process runs, so no line is judged in
 * halves). The read cursors live in this adapter's memory only (the oldest
 * of WP_CURSORS is reused first). Text follows Claude Code's tagged form,
 * its <stdout> and <stderr> blocks inside one observation frame
 * (mcp_frame.h), each line escaped and behind a "[stdout] " prefix, so a
 * process can forge neither a closing tag nor a marker.
 */
#include "mcp/mcp_tools.h"

#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli_json.h"
#include "mcp/mcp_frame.h"
#include "base/strbuf.h"
#include "base/textfmt.h"
#include "base/utf8.h"

#define WP_BASH_MAX 65536       /* bytes of each stream one BashOutput returns */
#define WP_CURSORS 256          /* BashOutput cursors kept (oldest reused first) */

/* Where the last BashOutput of a monitor stopped reading, per stream. */
typedef struct {
  char id[64];
  json_int_t at[2]; /* stdout, stderr */
} WpCursor;

static WpCursor wp_cursors[WP_CURSORS];
static size_t wp_cursor_next;
/* Held while a BashOutput reads and moves a cursor: calls run in threads of
 * their own (mcp_calls.h); a BashOutput never waits, so holding it across
 * its engine reads delays another one by a read at most. */
static pthread_mutex_t wp_cursors_mu = PTHREAD_MUTEX_INITIALIZER;

/* The cursor of monitor id (a new one, at 0, the first time). */
static WpCursor *
wp_cursor(const char *id)
{
  for (size_t i = 0; i < WP_CURSORS; i++)
    if (strcmp(wp_cursors[i].id, id) == 0)
      return &wp_cursors[i];
  WpCursor *c = &wp_cursors[wp_cursor_next++ % WP_CURSORS];
  snprintf(c->id, sizeof c->id, "%s", id);
  c->at[0] = c->at[1] = 0;
  return c;
}

/* What one BashOutput read of a stream gives. */
typedef struct {
  StrBuf bytes;
  bool truncated;   /* bytes after the cursor are not in `bytes` */
} WpRead;

/* Reads stream k (0 stdout, 1 stderr) from *cursor: the new bytes, or the
 * newest WP_BASH_MAX of them when there are more. size is the stream's size
 * as last seen. Advances *cursor. Returns 0 or -1 (engine error). */
static int
wp_read(McpServer *s, const char *id, int k, json_int_t size, json_int_t *cursor, WpRead *r)
{
  static const char *const names[] = {"stdout", "stderr"};
  json_int_t from = *cursor;
  bool capped = size - from > WP_BASH_MAX;
  if (capped)
    from = size - WP_BASH_MAX;
  json_t *q = json_pack("{s:s,s:s,s:I,s:I}", "monitor_id", id, "stream", names[k], "offset", from,
                        "limit", (json_int_t)WP_BASH_MAX);
  json_t *res;
  if (mcp_result_ask(s, "monitor_logs", q, CLI_CALL_TIMEOUT_MS, &res, NULL) != 0)
    return -1;
  mcp_logs_bytes(json_object_get(res, names[k]), &r->bytes);
  r->truncated = capped || json_is_true(json_object_get(res, "truncated"));
  const char *nl = capped ? memchr(strbuf_cstr(&r->bytes), '\n', r->bytes.len) : NULL;
  if (nl != NULL) {
    /* Skipped to the newest bytes: begin at a line, not in the middle of one. */
    size_t cut = (size_t)(nl - r->bytes.data) + 1;
    memmove(r->bytes.data, r->bytes.data + cut, r->bytes.len - cut + 1);
    r->bytes.len -= cut;
  }
  char key[32];
  snprintf(key, sizeof key, "%s_next_offset", names[k]);
  json_t *next = json_object_get(res, key);
  if (json_is_integer(next))
    *cursor = json_integer_value(next);
  json_decref(res);
  return 0;
}

/* Keeps the lines of r that match re (the rest are gone for good, as in
 * Claude Code). While the process runs, a last line without its newline is
 * held back for the next call (*cursor moves back before it), so a line is
 * never judged in halves. */
static void
wp_filter(WpRead *r, const regex_t *re, bool running, json_int_t *cursor)
{
  StrBuf kept = STRBUF_INIT, line = STRBUF_INIT;
  const char *p = strbuf_cstr(&r->bytes), *end = p + r->bytes.len;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (nl == NULL && running) {
      *cursor -= (json_int_t)(end - p);
      break;
    }
    size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
    strbuf_reset(&line);
    strbuf_append(&line, p, n);
    if (regexec(re, strbuf_cstr(&line), 0, NULL, 0) == 0)
      strbuf_append(&kept, p, n + (nl != NULL));
    p += n + (nl != NULL);
  }
  strbuf_free(&line);
  strbuf_free(&r->bytes);
  r->bytes = kept;
}

/* A <stdout> / <stderr> block into the frame: each line escaped as the
 * envelope escapes it, behind "[stdout] ", so no process line reads as a
 * tag or a marker. */
static void
wp_block(McpFrame *f, const char *tag, const WpRead *r)
{
  if (r->bytes.len == 0 && !r->truncated)
    return;
  StrBuf note = STRBUF_INIT;
  strbuf_printf(&note, "<%s>", tag);
  if (r->truncated)
    strbuf_printf(&note, "\n[earlier %s not shown: over %d new bytes, or gone from vigil's "
                  "capture]", tag, WP_BASH_MAX);
  mcp_frame_escaped(f, "", note.data, note.len);
  char prefix[16];
  snprintf(prefix, sizeof prefix, "[%s] ", tag);
  mcp_frame_text(f, prefix, strbuf_cstr(&r->bytes), r->bytes.len);
  strbuf_reset(&note);
  strbuf_printf(&note, "</%s>", tag);
  mcp_frame_escaped(f, "", note.data, note.len);
  strbuf_free(&note);
}

/* The result of a BashOutput read: structured and Claude Code's text. */
static void
wp_bash_result(const char *id, const char *status, json_t *code, WpRead rd[2], McpResult *out)
{
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  StrBuf ts = STRBUF_INIT, t = STRBUF_INIT;
  textfmt_time(&ts, (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000);
  out->structured = json_pack(
      "{s:s,s:s,s:O,s:o,s:o,s:b,s:b,s:s}", "bash_id", id, "status", status, "exit_code", code,
      "stdout", cli_json_string(strbuf_cstr(&rd[0].bytes), rd[0].bytes.len), "stderr",
      cli_json_string(strbuf_cstr(&rd[1].bytes), rd[1].bytes.len), "stdout_truncated",
      rd[0].truncated, "stderr_truncated", rd[1].truncated, "timestamp", strbuf_cstr(&ts));
  strbuf_printf(&t, "<status>%s</status>\n", status);
  if (json_is_integer(code))
    strbuf_printf(&t, "\n<exit_code>%lld</exit_code>\n", (long long)json_integer_value(code));
  McpFrame f = MCP_FRAME_INIT;
  wp_block(&f, "stdout", &rd[0]);
  wp_block(&f, "stderr", &rd[1]);
  if (f.body.len > 0)
    strbuf_putc(&t, '\n');
  mcp_frame_finish(&f, &t);
  strbuf_printf(&t, "\n<timestamp>%s</timestamp>\n", strbuf_cstr(&ts));
  out->text = strbuf_take(&t);
  strbuf_free(&ts);
}

/* The stream sizes and the state, before reading: status first, so that a
 * process seen as ended has all its output in the capture already. */
static json_t *
wp_bash_status(McpServer *s, const char *id, json_int_t size[2])
{
  json_t *q = json_pack("{s:s}", "monitor_id", id), *st = NULL, *sizes = NULL;
  if (mcp_engine_call(&s->engine, "monitor_status", q, CLI_CALL_TIMEOUT_MS, &st) == 0) {
    json_object_set_new(q, "limit", json_integer(0)); /* the sizes, no bytes */
    if (mcp_engine_call(&s->engine, "monitor_logs", q, CLI_CALL_TIMEOUT_MS, &sizes) != 0) {
      json_decref(st);
      st = NULL;
    }
  }
  size[0] = json_integer_value(json_object_get(sizes, "stdout_size"));
  size[1] = json_integer_value(json_object_get(sizes, "stderr_size"));
  json_decref(sizes);
  json_decref(q);
  return st;
}

void
mcp_bash_output(McpServer *s, json_t *args, McpResult *out)
{
  const char *id = json_string_value(json_object_get(args, "bash_id"));
  const char *filter = json_string_value(json_object_get(args, "filter"));
  regex_t re;
  int rc = filter ? regcomp(&re, filter, REG_EXTENDED | REG_NOSUB) : 0;
  if (rc != 0) {
    char why[256];
    regerror(rc, &re, why, sizeof why);
    StrBuf b = STRBUF_INIT;
    strbuf_printf(&b, "invalid_pattern: filter: %s (a POSIX extended regular expression)", why);
    out->error = strbuf_take(&b);
    return;
  }
  json_int_t size[2];
  json_t *st = wp_bash_status(s, id, size);
  WpRead rd[2] = {{STRBUF_INIT, false}, {STRBUF_INIT, false}};
  if (st == NULL) {
    mcp_result_engine_error(s, out);
  } else {
    const char *state = json_string_value(json_object_get(st, "state"));
    json_t *code = json_object_get(st, "exit_code");
    pthread_mutex_lock(&wp_cursors_mu);
    WpCursor *c = wp_cursor(id);
    bool ok = true;
    for (int k = 0; k < 2 && ok; k++) {
      ok = wp_read(s, id, k, size[k], &c->at[k], &rd[k]) == 0;
      if (ok && filter)
        wp_filter(&rd[k], &re, state && strcmp(state, "running") == 0, &c->at[k]);
    }
    pthread_mutex_unlock(&wp_cursors_mu);
    if (ok)
      wp_bash_result(id, mcp_seed_status(state, code), code, rd, out);
    else
      mcp_result_engine_error(s, out);
    json_decref(st);
  }
  if (filter)
    regfree(&re);
  strbuf_free(&rd[0].bytes);
  strbuf_free(&rd[1].bytes);
}

