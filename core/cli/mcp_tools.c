/*
 * Listing and calling the tools (see mcp_tools.h). A tool's name is listed
 * as written unless --tool-names underscore asks for dots to become
 * underscores (harnesses whose function names cannot hold a dot); a call is
 * matched against the listed name.
 */
#include "mcp_tools.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp_schema.h"
#include "strbuf.h"
#include "utf8.h"

/* Every profile's tools, in the order tools/list gives them. */
static const McpTool *const mcp_tool_tables[] = {mcp_vigil_tools, mcp_watch_process_tools,
                                                  mcp_monitor_tools, NULL};

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

/* Appends the notifications not yet delivered to a result (piggyback):
 * each as a text item (the envelope), all in structuredContent. */
static void
mcp_tools_piggyback(McpServer *s, json_t *result)
{
  json_t *pending = mcp_engine_take(&s->engine, s->engine.delivered, MCP_QUEUE_MAX);
  if (json_array_size(pending) == 0) {
    json_decref(pending);
    return;
  }
  json_t *content = json_object_get(result, "content");
  size_t i;
  json_t *n;
  json_array_foreach(pending, i, n) {
    const char *text = json_string_value(json_object_get(n, "text"));
    json_array_append_new(content, json_pack("{s:s,s:s}", "type", "text", "text",
                                             text ? text : ""));
  }
  json_t *sc = json_object_get(result, "structuredContent");
  if (json_is_object(sc))
    json_object_set(sc, "notifications", pending);
  json_decref(pending);
}

json_t *
mcp_tools_call(McpServer *s, const char *name, json_t *args, int *code, char *msg, size_t cap)
{
  const McpTool *t = mcp_tools_find(s, name);
  if (t == NULL) {
    *code = -32602;
    snprintf(msg, cap, "unknown tool \"%.64s\" (tools/list names the tools of the profiles "
                       "this server was started with)", name);
    return NULL;
  }
  json_t *schema = mcp_tool_schema(t, t->input_schema);
  char why[512];
  bool ok = mcp_schema_check(schema, args, why, sizeof why);
  json_decref(schema);
  if (!ok) {
    *code = -32602;
    snprintf(msg, cap, "%s: %s", name, why);
    return NULL;
  }
  McpResult r = {NULL, NULL, NULL};
  json_t *owned = args ? json_incref(args) : json_object();
  t->fn(s, owned, &r);
  json_decref(owned);
  json_t *result;
  if (r.error) {
    result = json_pack("{s:[{s:s,s:s}],s:b}", "content", "type", "text", "text", r.error,
                       "isError", 1);
    free(r.error);
  } else {
    char *text = r.text ? r.text : json_dumps(r.structured, JSON_INDENT(2));
    result = json_pack("{s:[{s:s,s:s}],s:o}", "content", "type", "text", "text",
                       text ? text : "{}", "structuredContent", r.structured);
    free(text);
    r.text = NULL;
  }
  free(r.text); /* a text set beside an error */
  if (s->delivery == kMcpPiggyback)
    mcp_tools_piggyback(s, result);
  return result;
}

void
mcp_result_engine_error(McpServer *s, McpResult *out)
{
  const CliError *e = &s->engine.cli.err;
  size_t n = strlen(e->msg) + 32;
  out->error = malloc(n);
  if (out->error == NULL)
    abort();
  /* The engine's messages start with their error's name; others say what
   * failed on the way. */
  snprintf(out->error, n, "%s%s", e->kind == kCliErrEngine ? "" : "unavailable: ", e->msg);
}

void
mcp_result_call(McpServer *s, const char *method, json_t *args, int64_t timeout_ms,
                McpResult *out)
{
  json_t *result = NULL;
  if (mcp_engine_call(&s->engine, method, args, timeout_ms, &result) != 0) {
    mcp_result_engine_error(s, out);
    return;
  }
  out->structured = result;
}

/* --- Helpers for the seed profiles (added with watch_process and monitor) ---
 * See mcp_tools.h. */

json_t *
mcp_engine_limits(McpServer *s)
{
  json_t *info = NULL;
  if (mcp_engine_call(&s->engine, "api_info", NULL, CLI_CALL_TIMEOUT_MS, &info) != 0)
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
  const CliError *e = &s->engine.cli.err;
  return e->kind == kCliErrEngine && strstr(e->msg, "without shell mode") != NULL;
}

int
mcp_seed_start(McpServer *s, json_t *args, McpResult *out, json_t **result)
{
  if (json_object_get(args, "cwd") == NULL)
    json_object_set_new(args, "cwd", json_string(s->cwd));
  if (mcp_engine_call(&s->engine, "monitor_start", args, CLI_CALL_TIMEOUT_MS, result) == 0)
    return 0;
  bool needs_shell = mcp_seed_needs_shell(s);
  mcp_result_engine_error(s, out);
  if (!needs_shell)
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
  if (mcp_engine_call(&s->engine, "monitor_start", args, CLI_CALL_TIMEOUT_MS, result) == 0)
    return 0;
  mcp_result_engine_error(s, out);
  return -1;
}

const char *
mcp_seed_status(const char *state, const json_t *exit_code)
{
  if (state == NULL || strcmp(state, "running") == 0)
    return "running";
  if (strcmp(state, "exited") == 0)
    return json_is_integer(exit_code) && json_integer_value(exit_code) == 0 ? "completed"
                                                                             : "failed";
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
