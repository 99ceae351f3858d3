/*
 * The harnesses whose config is JSON (Claude Code, Gemini CLI, Cursor,
 * OpenCode) and the table of every harness (see setup_harness.h). Where
 * each file is, and its shapes, are tests/harness/README.md's (Claude Code,
 * Gemini CLI, OpenCode, seen working with the pinned versions) and the
 * harness's own documentation (Cursor).
 */
#include "cli/setup_harness.h"

#include <stdio.h>
#include <string.h>

#include "cli/setup_embed.h"
#include "cli/setup_hooks.h"

/* path = a/b (or a/b/c) into out; false when it does not fit. */
static bool
setup_path(char *out, const char *a, const char *b, const char *c)
{
  int n = c ? snprintf(out, PATH_MAX, "%s/%s/%s", a, b, c) : snprintf(out, PATH_MAX, "%s/%s", a, b);
  return n > 0 && n < PATH_MAX;
}

/* The directory the harness's files go under: the project's top, or the
 * home directory. */
static const char *
setup_base(const SetupContext *ctx)
{
  return ctx->scope == kSetupProject ? ctx->root : ctx->home;
}

/* {"command": vigil, "args": [remote words..., "mcp"]}. */
static json_t *
setup_mcp_server(const SetupContext *ctx)
{
  return json_pack("{s:s, s:o}", "command", ctx->vigil, "args", setup_mcp_args(ctx));
}

/* A hook handler of vigil's for event, of type "command". */
static json_t *
setup_handler(const SetupContext *ctx, const char *harness, const char *event)
{
  StrBuf cmd = STRBUF_INIT;
  setup_hook_command(&cmd, ctx, harness, event);
  json_t *h = json_pack("{s:s, s:s}", "type", "command", "command", strbuf_cstr(&cmd));
  strbuf_free(&cmd);
  return h;
}

/* A group holding one handler. */
static json_t *
setup_group(json_t *handler)
{
  json_t *hooks = json_array();
  json_array_append_new(hooks, handler);
  return json_pack("{s:o}", "hooks", hooks);
}

/* --- Claude Code --------------------------------------------------------- */

/* How long `vigil hook claude-code Stop` may wait for a notification (the
 * hook helper's default, 3600 s), and the timeout its entry gets, with a
 * minute to spare. */
#define SETUP_CLAUDE_STOP_TIMEOUT_S 3660

static json_t *
setup_claude_group(const SetupContext *ctx, const char *event)
{
  json_t *h = setup_handler(ctx, "claude-code", event);
  if (strcmp(event, "Stop") == 0) {
    /* Runs in the background after the turn; exit 2 wakes the idle agent. */
    json_object_set_new(h, "asyncRewake", json_true());
    json_object_set_new(h, "timeout", json_integer(SETUP_CLAUDE_STOP_TIMEOUT_S));
  }
  return setup_group(h);
}

static int
setup_claude_plan(const SetupContext *ctx, SetupPlan *plan, StrBuf *err)
{
  char mcp[PATH_MAX], settings[PATH_MAX];
  bool project = ctx->scope == kSetupProject;
  if (!setup_path(mcp, setup_base(ctx), project ? ".mcp.json" : ".claude.json", NULL) ||
      !setup_path(settings, setup_base(ctx), ".claude", "settings.json")) {
    strbuf_puts(err, "the path of Claude Code's files is too long");
    return -1;
  }
  SetupJsonFile f;
  static const char *const server[] = {"mcpServers", "vigil"};
  json_t *entry = setup_mcp_server(ctx);
  json_object_set_new(entry, "type", json_string("stdio"));
  if (setup_jf_open(&f, plan, mcp, ctx, err) != 0 ||
      setup_jf_entry(&f, ctx, server, 2, entry, err) != 0)
    return -1;
  setup_jf_close(&f, ctx, NULL);

  static const char *const events[] = {"SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"};
  static const char *const allow[] = {"permissions", "allow"};
  if (setup_jf_open(&f, plan, settings, ctx, err) != 0 ||
      setup_jf_hooks(&f, ctx, "claude-code", events, 4, true, setup_claude_group, err) != 0 ||
      /* Every tool of the server vigil, without asking each time. */
      setup_jf_list_item(&f, ctx, allow, 2, "mcp__vigil", err) != 0)
    return -1;
  if (project) {
    /* A project's .mcp.json server runs only once the person approves it;
     * running setup is that approval. */
    static const char *const enabled[] = {"enabledMcpjsonServers"};
    if (setup_jf_list_item(&f, ctx, enabled, 1, "vigil", err) != 0)
      return -1;
  }
  setup_jf_close(&f, ctx, NULL);
  return 0;
}

/* --- Gemini CLI ---------------------------------------------------------- */

static json_t *
setup_gemini_group(const SetupContext *ctx, const char *event)
{
  json_t *h = setup_handler(ctx, "gemini", event);
  json_object_set_new(h, "name", json_string("vigil"));
  return setup_group(h);
}

static int
setup_gemini_plan(const SetupContext *ctx, SetupPlan *plan, StrBuf *err)
{
  char settings[PATH_MAX];
  if (!setup_path(settings, setup_base(ctx), ".gemini", "settings.json")) {
    strbuf_puts(err, "the path of Gemini CLI's settings is too long");
    return -1;
  }
  SetupJsonFile f;
  static const char *const server[] = {"mcpServers", "vigil"};
  json_t *entry = setup_mcp_server(ctx);
  /* vigil's own allowlist decides what may run; without trust every tool
   * call, monitor_list included, waits for a confirmation, and a headless
   * run cannot give one. */
  json_object_set_new(entry, "trust", json_true());
  static const char *const events[] = {"SessionStart", "BeforeAgent", "AfterTool", "AfterAgent"};
  if (setup_jf_open(&f, plan, settings, ctx, err) != 0 ||
      setup_jf_entry(&f, ctx, server, 2, entry, err) != 0 ||
      setup_jf_hooks(&f, ctx, "gemini", events, 4, true, setup_gemini_group, err) != 0)
    return -1;
  setup_jf_close(&f, ctx, NULL);
  return 0;
}

/* --- Cursor -------------------------------------------------------------- */

static json_t *
setup_cursor_handler(const SetupContext *ctx, const char *event)
{
  StrBuf cmd = STRBUF_INIT;
  setup_hook_command(&cmd, ctx, "cursor", event);
  json_t *h = json_pack("{s:s}", "command", strbuf_cstr(&cmd));
  strbuf_free(&cmd);
  return h;
}

static int
setup_cursor_plan(const SetupContext *ctx, SetupPlan *plan, StrBuf *err)
{
  char mcp[PATH_MAX], hooks[PATH_MAX];
  if (!setup_path(mcp, setup_base(ctx), ".cursor", "mcp.json") ||
      !setup_path(hooks, setup_base(ctx), ".cursor", "hooks.json")) {
    strbuf_puts(err, "the path of Cursor's files is too long");
    return -1;
  }
  SetupJsonFile f;
  static const char *const server[] = {"mcpServers", "vigil"};
  if (setup_jf_open(&f, plan, mcp, ctx, err) != 0 ||
      setup_jf_entry(&f, ctx, server, 2, setup_mcp_server(ctx), err) != 0)
    return -1;
  setup_jf_close(&f, ctx, NULL);
  /* The events vigil hook answers for Cursor (hook_harness.c):
   * beforeSubmitPrompt, the turn's start (the session is busy), and stop,
   * its end, whose followup_message is Cursor's only way to continue with
   * a notification. */
  static const char *const events[] = {"beforeSubmitPrompt", "stop"};
  static const char *const version[] = {"version"};
  static const char *const own[] = {"version", NULL};
  if (setup_jf_open(&f, plan, hooks, ctx, err) != 0)
    return -1;
  /* A hooks.json without a version is not read; a new one gets 1. */
  if (!ctx->remove && json_object_get(f.json.root, "version") == NULL &&
      setup_jf_entry(&f, ctx, version, 1, json_integer(1), err) != 0)
    return -1;
  if (setup_jf_hooks(&f, ctx, "cursor", events, 2, false, setup_cursor_handler, err) != 0)
    return -1;
  setup_jf_close(&f, ctx, own);
  return 0;
}

/* --- OpenCode ------------------------------------------------------------ */

/* The plugin as written out: the embedded file with every "__VIGIL_PATH__" (its
 * quotes included) replaced by vigil's path as a JavaScript string. */
static void
setup_opencode_source(const SetupContext *ctx, StrBuf *out)
{
  static const char marker[] = "\"__VIGIL_PATH__\"";
  json_t *path = json_string(ctx->vigil);
  char *quoted = json_dumps(path, JSON_ENCODE_ANY);
  json_decref(path);
  const char *src = (const char *)setup_opencode_plugin;
  for (const char *at; (at = strstr(src, marker)) != NULL; src = at + sizeof marker - 1) {
    strbuf_append(out, src, (size_t)(at - src));
    strbuf_puts(out, quoted ? quoted : marker);
  }
  strbuf_puts(out, src);
  free(quoted);
}

static int
setup_opencode_plan(const SetupContext *ctx, SetupPlan *plan, StrBuf *err)
{
  char config[PATH_MAX], jsonc[PATH_MAX], plugin[PATH_MAX], dir[PATH_MAX];
  bool project = ctx->scope == kSetupProject;
  if (project)
    snprintf(dir, sizeof dir, "%s", ctx->root);
  else if (!setup_path(dir, ctx->config_home, "opencode", NULL))
    dir[0] = '\0';
  if (!dir[0] || !setup_path(config, dir, "opencode.json", NULL) ||
      !setup_path(jsonc, dir, "opencode.jsonc", NULL) ||
      !setup_path(plugin, dir, project ? ".opencode/plugin" : "plugin", "vigil.js")) {
    strbuf_puts(err, "the path of OpenCode's files is too long");
    return -1;
  }
  SetupJsonFile f;
  if (setup_jf_open(&f, plan, config, ctx, err) != 0)
    return -1;
  if (!f.change->file.exists) {
    SetupFile probe;
    StrBuf why = STRBUF_INIT;
    bool there = setup_file_read(&probe, jsonc, &why) == 0 && probe.exists;
    setup_file_free(&probe);
    strbuf_free(&why);
    if (there) {
      /* Comments are JSONC's, not JSON's: setup would lose them. */
      strbuf_printf(err, "%s is where OpenCode's config is, and it may hold comments, which "
                         "setup does not keep: add vigil by hand (docs/mcp.md, OpenCode), or "
                         "rename it to opencode.json",
                    jsonc);
      setup_json_free(&f.json);
      return -1;
    }
  }
  static const char *const server[] = {"mcp", "vigil"};
  json_t *command = json_array();
  json_array_append_new(command, json_string(ctx->vigil));
  json_t *args = setup_mcp_args(ctx);
  json_array_extend(command, args);
  json_decref(args);
  json_t *entry = json_pack("{s:s, s:o, s:b}", "type", "local", "command", command, "enabled", 1);
  if (setup_jf_entry(&f, ctx, server, 2, entry, err) != 0)
    return -1;
  setup_jf_close(&f, ctx, NULL);

  bool user = !project;
  SetupChange *c = setup_plan_open(plan, plugin, user ? 0600 : 0644, user ? 0700 : 0755, err);
  if (c == NULL)
    return -1;
  if (ctx->remove) {
    if (c->file.exists && !c->file.link) {
      setup_change_delete(c);
      setup_change_say(c, "removed vigil's OpenCode plugin");
    } else if (c->file.exists) {
      setup_plan_note(plan, "%s is a link: setup leaves it (remove it yourself)", plugin);
    }
    return 0;
  }
  StrBuf src = STRBUF_INIT;
  setup_opencode_source(ctx, &src);
  setup_change_set(c, src.data, src.len);
  setup_change_say(c, c->file.exists ? "updated vigil's OpenCode plugin"
                                     : "added vigil's OpenCode plugin");
  strbuf_free(&src);
  return 0;
}

/* --- the table ----------------------------------------------------------- */

static const SetupHarness setup_harnesses[] = {
  {"claude-code", "Claude Code", true, setup_claude_plan},
  {"codex", "Codex CLI", true, setup_codex_plan},
  {"gemini", "Gemini CLI", true, setup_gemini_plan},
  {"opencode", "OpenCode", true, setup_opencode_plan},
  {"cursor", "Cursor", true, setup_cursor_plan},
  {"goose", "Goose", false, setup_goose_plan},
};

const SetupHarness *
setup_harness_find(const char *name)
{
  for (size_t i = 0; i < sizeof setup_harnesses / sizeof setup_harnesses[0]; i++)
    if (strcmp(setup_harnesses[i].name, name) == 0)
      return &setup_harnesses[i];
  return NULL;
}

const SetupHarness *
setup_harness_list(size_t *n)
{
  *n = sizeof setup_harnesses / sizeof setup_harnesses[0];
  return setup_harnesses;
}
