/*
 * Listing and calling the tools (see mcp_tools.h). A tool's name is listed
 * as written unless --tool-names underscore asks for dots to become
 * underscores (harnesses whose function names cannot hold a dot); a call is
 * matched against the listed name.
 */
#include "mcp/mcp_tools.h"

#include <assert.h>
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/hook_text.h"
#include "mcp/mcp_config.h"
#include "mcp/mcp_cursor.h"
#include "mcp/mcp_frame.h"
#include "mcp/mcp_ready.h"
#include "mcp/mcp_reference.h"
#include "mcp/mcp_schema.h"
#include "base/memory.h"
#include "base/strbuf.h"
#include "base/textfmt.h"
#include "base/utf8.h"

/* Every profile's tools, in the order tools/list gives them. */
static const McpTool *const mcp_tool_tables[] = {mcp_vigil_tools, mcp_watch_process_tools,
                                                  mcp_process_tools, mcp_monitor_tools,
                                                  mcp_hermes_tools, mcp_ignore_tools, NULL};

/* The name as listed: dots become underscores under --tool-names underscore. */
static void
mcp_tool_listed_name(const McpServer *s, const McpTool *t, char *out, size_t cap)
{
  snprintf(out, cap, "%s", t->name);
  for (char *p = out; s->underscore && *p; p++)
    if (*p == '.')
      *p = '_';
}

/* Parses a schema text of the table; a broken one is a bug, said loudly. */
static json_t *
mcp_tool_schema(const McpTool *t, const char *text)
{
  json_error_t e;
  json_t *j = json_loads(text, 0, &e);
  if (j == NULL) {
    fprintf(stderr, "vigil mcp: the schema of %s does not parse: %s (column %d)\n", t->name,
            e.text, e.column);
    j = json_pack("{s:s}", "type", "object");
  }
  return j;
}

json_t *
mcp_tools_list(const McpServer *s)
{
  json_t *list = json_array();
  for (size_t k = 0; mcp_tool_tables[k]; k++) {
    for (const McpTool *t = mcp_tool_tables[k]; t->name; t++) {
      if (!(t->profile & s->profiles))
        continue;
      char name[128];
      mcp_tool_listed_name(s, t, name, sizeof name);
      json_t *ann = json_pack("{s:b,s:b,s:b,s:b}", "readOnlyHint", (t->hints & kMcpReadOnly) != 0,
                              "destructiveHint", (t->hints & kMcpDestructive) != 0,
                              "idempotentHint", (t->hints & kMcpIdempotent) != 0,
                              "openWorldHint", 0);
      json_array_append_new(list, json_pack("{s:s,s:s,s:o,s:o,s:o}", "name", name,
                                            "description", t->description, "inputSchema",
                                            mcp_tool_schema(t, t->input_schema),
                                            "outputSchema", mcp_tool_schema(t, t->output_schema),
                                            "annotations", ann));
    }
  }
  return list;
}

/* The listed tool called name, or NULL. */
static const McpTool *
mcp_tools_find(const McpServer *s, const char *name)
{
  for (size_t k = 0; mcp_tool_tables[k]; k++) {
    for (const McpTool *t = mcp_tool_tables[k]; t->name; t++) {
      char listed[128];
      mcp_tool_listed_name(s, t, listed, sizeof listed);
      if ((t->profile & s->profiles) && strcmp(listed, name) == 0)
        return t;
    }
  }
  return NULL;
}

/* Appends to a result what the model cursor holds (auto, piggyback): each
 * notification taken as a text item (the envelope, framed and escaped by
 * the engine; in auto a reference when this adapter pushed it already),
 * all in structuredContent, their process text escaped there too. The
 * take moved the cursor: a failed take adds nothing and the tool's result
 * stands (what was not taken stays above the cursor). */
static void
mcp_tools_piggyback(McpServer *s, json_t *result)
{
  json_t *taken = mcp_cursor_take(&s->engine, HOOK_TAKE_MAX, 0);
  if (taken == NULL) {
    fprintf(stderr, "vigil mcp: no notifications with this result: %s\n",
            mcp_engine_error()->msg);
    return;
  }
  json_t *pending = json_object_get(taken, "notifications");
  uint64_t pushed = s->delivery == kMcpAuto && s->ready ? mcp_engine_pushed(&s->engine) : 0;
  json_t *content = json_object_get(result, "content");
  size_t i;
  json_t *n;
  json_array_foreach(pending, i, n) {
    if ((uint64_t)json_integer_value(json_object_get(n, "seq")) <= pushed) {
      json_array_append_new(content, mcp_reference_item(n));
      continue;
    }
    const char *text = json_string_value(json_object_get(n, "text"));
    json_array_append_new(content, json_pack("{s:s,s:s}", "type", "text", "text",
                                             text ? text : ""));
  }
  json_t *sc = json_object_get(result, "structuredContent");
  if (json_is_object(sc) && json_array_size(pending) > 0) {
    json_t *escaped = json_array();
    json_array_foreach(pending, i, n) json_array_append_new(escaped, mcp_frame_notification(n));
    json_object_set_new(sc, "notifications", escaped);
  }
  json_decref(taken);
}

/* A pass-through row (McpTool.method): the engine's method with the checked
 * arguments, given the time its wait argument lets the engine take. */
static void
mcp_tools_pass(McpServer *s, const McpTool *t, json_t *args, McpResult *out)
{
  /* A start's directory: the harness's project unless given. */
  /* A source (a file, a WebSocket) runs nothing, so it has no cwd; a
   * relative file is taken from the adapter's directory, as a cwd is. */
  json_t *source = json_object_get(args, "source");
  const char *file = json_string_value(json_object_get(source, "file"));
  if (file != NULL && file[0] != '/') {
    char *full = NULL;
    if (asprintf(&full, "%s/%s", s->cwd, file) > 0) {
      json_object_set_new(source, "file", json_string(full));
      free(full);
    }
  }
  if (t->default_cwd && source == NULL && json_object_get(args, "cwd") == NULL)
    json_object_set_new(args, "cwd", json_string(s->cwd));
  int64_t wait = 0;
  if (t->wait_arg != NULL) {
    const json_t *w = json_object_get(args, t->wait_arg);
    wait = w ? json_integer_value(w) : t->wait_default;
    if (t->wait_in_s)
      wait *= 1000;
  }
  /* A start may wait for readiness (mcp_ready.h). */
  int64_t ready_ms = 0;
  bool wait_ready = strcmp(t->method, "monitor_start") == 0 && mcp_ready_take(args, &ready_ms);
  mcp_result_call(s, t->method, args, CLI_CALL_TIMEOUT_MS + wait, out);
  if (wait_ready && out->structured != NULL)
    mcp_ready_wait(s, ready_ms, out);
}

json_t *
mcp_tools_call(McpServer *s, const char *name, json_t *args, int *code, char *msg, size_t cap)
{
  const McpTool *t = mcp_tools_find(s, name);
  if (t == NULL) {
    *code = -32602;
    utf8_snprintf(msg, cap, "unknown tool \"%.*s\" (tools/list names the tools of the profiles "
                            "this server was started with)",
                  (int)utf8_cut(name, strlen(name), 64), name);
    return NULL;
  }
  json_t *schema = mcp_tool_schema(t, t->input_schema);
  char why[512];
  bool ok = mcp_schema_check(schema, args, why, sizeof why);
  json_decref(schema);
  if (!ok) {
    *code = -32602;
    utf8_snprintf(msg, cap, "%s: %s", name, why);
    return NULL;
  }
  McpResult r = {NULL, NULL, NULL, false};
  json_t *owned = args ? json_incref(args) : json_object();
  assert((t->fn == NULL) != (t->method == NULL));
  if (t->fn != NULL)
    t->fn(s, owned, &r);
  else
    mcp_tools_pass(s, t, owned, &r);
  json_decref(owned);
  json_t *result;
  if (r.error) {
    /* Valid UTF-8 (so the answer can be encoded), nothing raw or hidden. */
    mcp_frame_clean(&r.error);
    result = json_pack("{s:[{s:s,s:s}],s:b}", "content", "type", "text", "text", r.error,
                       "isError", 1);
    free(r.error);
  } else {
    /* What a process printed is escaped in the data and framed in the text
     * (mcp_frame.h); a tool that renders its own text frames it itself. */
    mcp_frame_escape(r.structured);
    char *text = r.text ? r.text : mcp_frame_render(r.structured);
    mcp_frame_clean(&text);
    result = json_pack("{s:[{s:s,s:s}],s:o}", "content", "type", "text", "text",
                       text ? text : "{}", "structuredContent", r.structured);
    free(text);
    r.text = NULL;
  }
  free(r.text); /* a text set beside an error */
  if (result == NULL) {
    /* A value jansson refused (no structured result, a string not UTF-8): a
     * JSON-RPC error rather than no answer at all. */
    *code = -32603;
    utf8_snprintf(msg, cap, "internal error: the result of %s could not be encoded as JSON",
                  name);
    return NULL;
  }
  mcp_config_note(result);
  if (s->delivery == kMcpPiggyback || s->delivery == kMcpAuto || (r.reads && !r.error))
    mcp_tools_piggyback(s, result);
  return result;
}

void
mcp_result_engine_error(McpServer *s, McpResult *out)
{
  const CliError *e = mcp_engine_error();
  size_t n = strlen(e->msg) + 32;
  out->error = malloc(n);
  if (out->error == NULL)
    abort();
  /* The engine's messages start with their error's name; others say what
   * failed on the way. */
  snprintf(out->error, n, "%s%s", e->kind == kCliErrEngine ? "" : "unavailable: ", e->msg);
}

int
mcp_result_ask(McpServer *s, const char *method, json_t *args, int64_t timeout_ms,
               json_t **result, McpResult *out)
{
  *result = NULL;
  int rc = mcp_engine_call(&s->engine, method, args, timeout_ms, result);
  json_decref(args);
  if (rc != 0 && out != NULL)
    mcp_result_engine_error(s, out);
  return rc == 0 ? 0 : -1;
}

void
mcp_result_call(McpServer *s, const char *method, json_t *args, int64_t timeout_ms,
                McpResult *out)
{
  json_t *result;
  if (mcp_result_ask(s, method, json_incref(args), timeout_ms, &result, out) == 0)
    out->structured = result;
}

/* --- Helpers for the seed profiles (added with watch_process and monitor) ---
 * See mcp_tools.h. */

json_t *
mcp_engine_limits(McpServer *s)
{
  json_t *info;
  if (mcp_result_ask(s, "api_info", NULL, CLI_CALL_TIMEOUT_MS, &info, NULL) != 0)
    return NULL;
  json_t *limits = json_incref(json_object_get(info, "limits"));
  json_decref(info);
  return limits;
}

json_t *
mcp_seed_text(const char *text, size_t max)
{
  StrBuf b = STRBUF_INIT;
  const char *p = text;
  size_t rest = strlen(text);
  for (;;) {
    size_t at = 0;
    Utf8Verdict v = utf8_check_text(p, rest, &at);
    if (v == kUtf8Text) { /* at is set only on a failure */
      strbuf_append(&b, p, rest);
      break;
    }
    strbuf_append(&b, p, at);
    /* A C0 control or DEL is one byte, a C1 control two; an invalid byte
     * (JSON strings have none) one. Each becomes one space. */
    size_t n = (unsigned char)p[at] >= 0xc0 && at + 1 < rest ? 2 : 1;
    strbuf_putc(&b, ' ');
    p += at + n;
    rest -= at + n;
  }
  const char *all = strbuf_cstr(&b);
  json_t *j = json_stringn(all, utf8_cut(all, b.len, max));
  strbuf_free(&b);
  return j;
}

/* Whether the engine's last error refused a command only for a shell
 * operator ("... is not allowed without shell mode"). */
static bool
mcp_seed_needs_shell(const McpServer *s)
{
  const CliError *e = mcp_engine_error();
  return e->kind == kCliErrEngine && strstr(e->msg, "without shell mode") != NULL;
}

void
mcp_seed_note_engine(StrBuf *note, const json_t *result)
{
  const char *engine_note = json_string_value(json_object_get(result, "note"));
  if (engine_note)
    strbuf_printf(note, "%s%s", note->len ? "; " : "", engine_note);
}

int
mcp_seed_start(McpServer *s, json_t *args, McpResult *out, json_t **result)
{
  if (json_object_get(args, "cwd") == NULL)
    json_object_set_new(args, "cwd", json_string(s->cwd));
  if (mcp_result_ask(s, "monitor_start", json_incref(args), CLI_CALL_TIMEOUT_MS, result, out) == 0)
    return 0;
  if (!mcp_seed_needs_shell(s))
    return -1;
  /* The seeds gave their command strings to a shell; vigil does only when
   * the operator allows it, and never to get around the allowlist: only a
   * command that cannot run without one is retried. */
  json_t *limits = mcp_engine_limits(s);
  bool allowed = json_is_true(json_object_get(limits, "monitor.allow_shell"));
  json_decref(limits);
  if (!allowed) {
    StrBuf b = STRBUF_INIT;
    strbuf_printf(&b, "%s\nvigil runs commands without a shell (monitor.allow_shell is false): "
                      "run the program directly, without pipes, &&, redirects or $(...), or "
                      "ask the operator to allow shell commands", out->error);
    free(out->error);
    out->error = strbuf_take(&b);
    return -1;
  }
  free(out->error);
  out->error = NULL;
  json_object_set_new(args, "shell", json_true());
  return mcp_result_ask(s, "monitor_start", json_incref(args), CLI_CALL_TIMEOUT_MS, result, out);
}

const char *
mcp_seed_status(const char *state, const json_t *exit_code)
{
  if (state == NULL || strcmp(state, "running") == 0)
    return "running";
  if (strcmp(state, "exited") == 0)
    return json_is_integer(exit_code) && json_integer_value(exit_code) == 0 ? "completed"
                                                                             : "failed";
  /* The engine lost the program (its keeper gone across a restart): what
   * became of it is unknown, so not "killed", which says vigil ended it. */
  if (strcmp(state, "failed") == 0)
    return "failed";
  return "killed";
}

void
mcp_logs_bytes(const json_t *v, StrBuf *out)
{
  if (json_is_string(v)) {
    strbuf_append(out, json_string_value(v), json_string_length(v));
    return;
  }
  static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const char *b64 = json_string_value(json_object_get(v, "base64"));
  unsigned acc = 0;
  int bits = 0;
  for (const char *p = b64; p && *p && *p != '='; p++) {
    const char *k = strchr(abc, *p);
    if (k == NULL)
      continue;
    acc = (acc << 6) | (unsigned)(k - abc);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      strbuf_putc(out, (char)((acc >> bits) & 0xff));
    }
  }
}

/* --- helpers for the seed profiles (see mcp_tools.h) ------------------------ */

/* A profile's name, for messages. */
static const char *
mcp_tools_profile_name(unsigned bit)
{
  switch (bit) {
  case kMcpProfileVigil: return "vigil";
  case kMcpProfileWatchProcess: return "watch_process";
  case kMcpProfileProcess: return "process";
  case kMcpProfileMonitor: return "monitor";
  case kMcpProfileHermes: return "hermes";
  default: return "?";
  }
}

int
mcp_tools_name_clash(const McpServer *s, char *msg, size_t cap)
{
  /* Every listed tool against every later one: a few dozen names. */
  for (size_t a = 0; mcp_tool_tables[a]; a++) {
    for (const McpTool *t = mcp_tool_tables[a]; t->name; t++) {
      if (!(t->profile & s->profiles))
        continue;
      char one[128];
      mcp_tool_listed_name(s, t, one, sizeof one);
      for (size_t b = a; mcp_tool_tables[b]; b++) {
        for (const McpTool *u = b == a ? t + 1 : mcp_tool_tables[b]; u->name; u++) {
          char two[128];
          mcp_tool_listed_name(s, u, two, sizeof two);
          if (!(u->profile & s->profiles) || strcmp(one, two) != 0)
            continue;
          snprintf(msg, cap, "--profile %s,%s%s gives two tools named %s; list one of those "
                   "profiles, or use --tool-names exact", mcp_tools_profile_name(t->profile),
                   mcp_tools_profile_name(u->profile),
                   s->underscore ? " with --tool-names underscore" : "", one);
          return -1;
        }
      }
    }
  }
  return 0;
}

void
mcp_result_error_append(McpResult *out, const char *line)
{
  size_t have = out->error ? strlen(out->error) : 0, add = strlen(line);
  out->error = realloc(out->error, have + add + 2);
  if (out->error == NULL)
    abort();
  if (have > 0)
    out->error[have++] = '\n';
  memcpy(out->error + have, line, add + 1);
}

json_t *
mcp_tools_engine_limit(McpServer *s, const char *key)
{
  json_t *limits = mcp_engine_limits(s);
  json_t *v = json_incref(json_object_get(limits, key));
  json_decref(limits);
  return v;
}

/* C1: the adapter's directory when none is given, and a relative one taken
 * from there, not from the engine's (which serves every project). The path
 * is bytes to the OS, hence no UTF-8 check. */
static void
mcp_tools_start_cwd(const McpServer *s, json_t *args)
{
  const char *cwd = json_string_value(json_object_get(args, "cwd"));
  if (cwd != NULL && cwd[0] == '/')
    return;
  StrBuf b = STRBUF_INIT;
  strbuf_puts(&b, s->cwd);
  if (cwd != NULL && cwd[0] != '\0')
    strbuf_printf(&b, "%s%s", b.len > 0 && b.data[b.len - 1] == '/' ? "" : "/", cwd);
  json_object_set_new(args, "cwd", json_string_nocheck(strbuf_cstr(&b)));
  strbuf_free(&b);
}

/* C3: the program's file name as the label: the first word of a command
 * line (its quotes dropped) or argv[0], after its last slash. No label (the
 * engine then uses the monitor id) when that is not 1..128 bytes of
 * printable ASCII, or looks like NAME=value, which in a shell command could
 * be a secret. */
static void
mcp_tools_start_label(json_t *args)
{
  const char *cmd = json_string_value(json_object_get(args, "command"));
  bool whole = cmd == NULL;
  if (whole)
    cmd = json_string_value(json_array_get(json_object_get(args, "argv"), 0));
  if (cmd == NULL || json_object_get(args, "label") != NULL)
    return;
  char word[129];
  size_t n = 0;
  const char *p = cmd;
  while (!whole && (*p == ' ' || *p == '\t' || *p == '\n'))
    p++;
  for (; *p && (whole || (*p != ' ' && *p != '\t' && *p != '\n')); p++) {
    if (*p == '\'' || *p == '"' || *p == '\\')
      continue;
    if (*p == '/')
      n = 0;
    else if (n < sizeof word - 1 && *p > 0x20 && *p < 0x7f && *p != '=')
      word[n++] = *p;
    else
      return;
  }
  if (n > 0) {
    word[n] = '\0';
    json_object_set_new(args, "label", json_string(word));
  }
}

/* Whether a start failed only because its command needs a shell (C2). */
static bool
mcp_tools_wants_shell(const McpServer *s, const json_t *args, const McpResult *out)
{
  return out->error != NULL && mcp_engine_error()->kind == kCliErrEngine &&
         strncmp(out->error, "invalid_params: command:", 24) == 0 &&
         strstr(out->error, "without shell mode") != NULL &&
         json_object_get(args, "command") != NULL &&
         !json_is_true(json_object_get(args, "shell"));
}

void
mcp_tools_start(McpServer *s, const char *method, json_t *args, int64_t timeout_ms,
                McpResult *out)
{
  mcp_tools_start_cwd(s, args);
  mcp_tools_start_label(args);
  int64_t ready_ms = 0;
  bool wait_ready = mcp_ready_take(args, &ready_ms);
  /* Sent as words first, so the allowlist judges the program: a command
   * that splits never runs under a shell, which the allowlist cannot see
   * into. */
  mcp_result_call(s, method, args, timeout_ms, out);
  if (!mcp_tools_wants_shell(s, args, out)) {
    if (wait_ready && out->structured != NULL)
      mcp_ready_wait(s, ready_ms, out);
    return;
  }
  json_t *allow = mcp_tools_engine_limit(s, "monitor.allow_shell");
  bool allowed = json_is_true(allow);
  json_decref(allow);
  if (!allowed) {
    mcp_result_error_append(out, "vigil runs commands without a shell: run the program "
                                 "directly (no pipes, lists or redirections), or ask the "
                                 "operator to set monitor.allow_shell");
    return;
  }
  free(out->error);
  out->error = NULL;
  json_object_set_new(args, "shell", json_true());
  mcp_result_call(s, method, args, timeout_ms, out);
  if (wait_ready && out->structured != NULL)
    mcp_ready_wait(s, ready_ms, out);
}

/* C13: a ring of the last starts, newest overwriting oldest. */
static struct {
  char id[64];
  char *command, *cwd;
} mcp_remembered[MCP_REMEMBER_MAX];
static size_t mcp_remembered_next;
/* Calls run in threads of their own (mcp_calls.h): the ring is shared. */
static pthread_mutex_t mcp_remembered_mu = PTHREAD_MUTEX_INITIALIZER;

void
mcp_tools_remember(const char *monitor_id, const char *command, const char *cwd)
{
  if (monitor_id == NULL || strlen(monitor_id) >= sizeof mcp_remembered[0].id)
    return;
  pthread_mutex_lock(&mcp_remembered_mu);
  size_t i = mcp_remembered_next++ % MCP_REMEMBER_MAX;
  free(mcp_remembered[i].command);
  free(mcp_remembered[i].cwd);
  snprintf(mcp_remembered[i].id, sizeof mcp_remembered[i].id, "%s", monitor_id);
  mcp_remembered[i].command = command ? xstrdup(command) : NULL;
  mcp_remembered[i].cwd = cwd ? xstrdup(cwd) : NULL;
  pthread_mutex_unlock(&mcp_remembered_mu);
}

char *
mcp_tools_recall(const char *monitor_id, bool want_cwd)
{
  char *found = NULL;
  pthread_mutex_lock(&mcp_remembered_mu);
  for (size_t i = 0; monitor_id && i < MCP_REMEMBER_MAX && found == NULL; i++) {
    if (strcmp(mcp_remembered[i].id, monitor_id) == 0) {
      const char *v = want_cwd ? mcp_remembered[i].cwd : mcp_remembered[i].command;
      found = v ? xstrdup(v) : NULL;
      break;
    }
  }
  pthread_mutex_unlock(&mcp_remembered_mu);
  return found;
}

/* --- process output in a seed's text (see mcp_tools.h) ------------------- */

json_t *
mcp_tools_lines(McpServer *s, const char *id, int limit)
{
  json_t *args = json_pack("{s:s,s:s}", "monitor_id", id, "stream", "all"), *r;
  if (limit > 0)
    json_object_set_new(args, "limit", json_integer(limit));
  if (mcp_result_ask(s, "monitor_output", args, CLI_CALL_TIMEOUT_MS, &r, NULL) != 0)
    return NULL;
  json_t *lines = json_incref(json_object_get(r, "lines"));
  json_decref(r);
  return lines ? lines : json_array();
}

char *
mcp_tools_join(const json_t *lines, size_t from, size_t to)
{
  StrBuf b = STRBUF_INIT;
  for (size_t i = from; i < to; i++) {
    const char *t = json_string_value(json_object_get(json_array_get(lines, i), "text"));
    strbuf_printf(&b, "%s%s", i > from ? "\n" : "", t ? t : "");
  }
  char *out = strbuf_take(&b);
  return out ? out : xstrdup("");
}

/* --- a monitor's command, as given (see mcp_tools.h) --------------------- */

bool
mcp_tools_plain(const char *w)
{
  if (*w == '\0')
    return false;
  for (; *w; w++)
    if (!isalnum((unsigned char)*w) && strchr("@%+=:,./-_", *w) == NULL)
      return false;
  return true;
}

void
mcp_tools_quote(StrBuf *b, const char *w)
{
  if (mcp_tools_plain(w)) {
    strbuf_puts(b, w);
    return;
  }
  strbuf_putc(b, '\'');
  for (; *w; w++)
    strbuf_puts(b, *w == '\'' ? "'\\''" : (char[]){*w, '\0'});
  strbuf_putc(b, '\'');
}

/* monitor_status of id with its start map, or NULL. */
static json_t *
mcp_tools_status_start(McpServer *s, const char *id)
{
  json_t *q = json_pack("{s:s,s:b}", "monitor_id", id, "include_start", 1), *st = NULL;
  int rc = mcp_engine_call(&s->engine, "monitor_status", q, CLI_CALL_TIMEOUT_MS, &st);
  if (rc != 0 && strstr(mcp_engine_error()->msg, "include_start") != NULL) {
    json_object_del(q, "include_start"); /* an engine that sends start always */
    rc = mcp_engine_call(&s->engine, "monitor_status", q, CLI_CALL_TIMEOUT_MS, &st);
  }
  json_decref(q);
  return rc == 0 ? st : NULL;
}

/* A start map's command line: the command of a shell start, else its argv
 * quoted (a word that is not a string, bytes that are not UTF-8, makes it
 * unknown). NULL when it cannot be told. */
static char *
mcp_tools_start_line(const json_t *start)
{
  const json_t *command = json_object_get(start, "command");
  if (json_is_true(json_object_get(start, "shell")) && json_is_string(command))
    return xstrdup(json_string_value(command));
  const json_t *argv = json_object_get(start, "argv");
  if (json_array_size(argv) == 0)
    return NULL;
  StrBuf b = STRBUF_INIT;
  size_t i;
  const json_t *w;
  json_array_foreach(argv, i, w) {
    if (!json_is_string(w)) {
      strbuf_free(&b);
      return NULL;
    }
    if (i > 0)
      strbuf_putc(&b, ' ');
    mcp_tools_quote(&b, json_string_value(w));
  }
  return strbuf_take(&b);
}

char *
mcp_tools_command(McpServer *s, const char *id, char **cwd)
{
  char *known = mcp_tools_recall(id, false);
  if (cwd != NULL)
    *cwd = NULL;
  if (known != NULL) {
    if (cwd != NULL)
      *cwd = mcp_tools_recall(id, true);
    return known;
  }
  json_t *st = mcp_tools_status_start(s, id);
  const json_t *start = json_object_get(st, "start");
  char *line = mcp_tools_start_line(start);
  const char *dir = json_string_value(json_object_get(start, "cwd"));
  if (line != NULL) {
    mcp_tools_remember(id, line, dir);
    if (cwd != NULL && dir != NULL)
      *cwd = xstrdup(dir);
  }
  json_decref(st);
  return line;
}
