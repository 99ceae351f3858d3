/*
 * Silencing a known incident through `vigil mcp` (docs/mcp.md, "Silencing
 * a known incident"; docs/incidents.md section 10): the engine's
 * incident_ignore, incident_ignored and incident_unignore as tools, named
 * in each profile's style. The `vigil` profile has the three methods as
 * they are; each seed profile has one tool whose `action` (ignore, the
 * default; unignore; list) picks the method: process.ignore,
 * watch_process_ignore, MonitorIgnore, and Hermes' process(action=
 * "ignore" | "unignore" | "ignored") (mcp_hermes.c calls mcp_ignore_act).
 * A seed names an incident by its fingerprint, the 16 hex digits a
 * notification's "to silence" line gives; ignores belong to the adapter's
 * session, the project's.
 */
#include "mcp/mcp_tools.h"

#include <string.h>

#include "cli/cli_client.h"

/* The arguments every ignore tool shares, as JSON schema properties. */
#define MCP_IGNORE_PROPS                                                                         \
  "\"fingerprint\":{\"type\":\"string\",\"minLength\":16,\"maxLength\":16,\"description\":\"the "  \
  "incident's fingerprint, 16 hex digits (a notification's `to silence` line, or an "            \
  "incident's `fingerprint`)\"},\"for\":{\"type\":[\"integer\",\"string\"],\"description\":\""   \
  "how long to ignore it: milliseconds (at most 2592000000, 30 days; default 7 days) or "        \
  "\\\"always\\\"\"},\"reason\":{\"type\":\"string\",\"maxLength\":256,\"description\":\"why it is " \
  "known and harmless, shown when the ignores are listed\"}"

/* The result of any of them: an entry, a list, or a removal. */
#define MCP_IGNORE_OUTPUT                                                                        \
  "{\"type\":\"object\",\"properties\":{\"ignored\":{\"type\":[\"object\",\"array\"]},\"replaced" \
  "\":{\"type\":\"boolean\"},\"removed\":{\"type\":\"boolean\"},\"max\":{\"type\":\"integer\"},"  \
  "\"notifications\":{\"type\":\"array\",\"items\":{\"type\":\"object\"}}},\"additionalProperties" \
  "\":true}"

/* A seed's tool input: an action and the shared arguments. */
#define MCP_IGNORE_SEED_INPUT                                                                    \
  "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{\"action\":{\"type\":\""  \
  "string\",\"enum\":[\"ignore\",\"unignore\",\"list\"],\"default\":\"ignore\"}," MCP_IGNORE_PROPS \
  "}}"

/* What a seed's tool tells a model. */
#define MCP_IGNORE_SEED_DESCRIPTION                                                              \
  "Stop being woken for a known, harmless incident. When a notification ends with `to "          \
  "silence incident N: incident_ignore {fingerprint: \"...\"}`, call this with that "            \
  "`fingerprint` (and a short `reason`): later incidents with it, from any process of this "     \
  "project, are logged and counted but no longer notified, for `for` (default 7 days, or "       \
  "\"always\"), across restarts. Only do this for something you understand and accept. "        \
  "`action: \"list\"` shows what is ignored (with how often each one was met), "                 \
  "`action: \"unignore\"` undoes one."

/* See mcp_tools.h. */
void
mcp_ignore_act(McpServer *s, const char *action, json_t *args, McpResult *out)
{
  json_t *call = json_object();
  static const char *const keys[] = {"fingerprint", "for", "reason"};
  const char *method = "incident_ignore";
  size_t nkeys = 3;
  if (strcmp(action, "unignore") == 0) {
    method = "incident_unignore";
    nkeys = 1;
  } else if (strcmp(action, "list") == 0 || strcmp(action, "ignored") == 0) {
    method = "incident_ignored";
    nkeys = 0;
  }
  for (size_t i = 0; i < nkeys; i++) {
    json_t *v = json_object_get(args, keys[i]);
    if (v != NULL)
      json_object_set(call, keys[i], v);
  }
  mcp_result_call(s, method, call, CLI_CALL_TIMEOUT_MS, out);
  json_decref(call);
}

/* A seed profile's ignore tool: its action, "ignore" when absent. */
static void
mcp_ignore_seed(McpServer *s, json_t *args, McpResult *out)
{
  const char *action = json_string_value(json_object_get(args, "action"));
  mcp_ignore_act(s, action ? action : "ignore", args, out);
}

const McpTool mcp_ignore_tools[] = {
  {.name = "incident_ignore", .profile = kMcpProfileVigil,
    .description =
    "Stop being woken for a known, harmless incident: later incidents with this `fingerprint` "
    "(or the fingerprint of `incident` of `monitor_id`), from any monitor of this session, are "
    "logged and counted (counters.ignored) but not notified, for `for` (default 7 "
    "days, or \"always\"), across engine restarts. A notification of a repeated incident ends "
    "with the call to make. Only for something you understand and accept.",
    .input_schema =
    "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{" MCP_IGNORE_PROPS
    ",\"monitor_id\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":64,\"description\":\"with "
    "incident, instead of fingerprint\"},\"incident\":{\"type\":\"integer\",\"minimum\":1,"
    "\"description\":\"an incident's id (a notification's `incident N`)\"}}}",
    .output_schema = MCP_IGNORE_OUTPUT, .method = "incident_ignore"},
  {.name = "incident_ignored", .profile = kMcpProfileVigil,
    .description =
    "List this session's ignored fingerprints: each one's reason, expiry (null: always), how "
    "many incidents it silenced and the last time.",
    .input_schema = "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{}}",
    .output_schema = MCP_IGNORE_OUTPUT, .hints = kMcpReadOnly | kMcpIdempotent,
    .method = "incident_ignored"},
  {.name = "incident_unignore", .profile = kMcpProfileVigil,
    .description = "Be woken again for incidents with this fingerprint (undo incident_ignore).",
    .input_schema =
    "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{\"fingerprint\":{\"type\":"
    "\"string\",\"minLength\":16,\"maxLength\":16}},\"required\":[\"fingerprint\"]}",
    .output_schema = MCP_IGNORE_OUTPUT, .method = "incident_unignore"},
  {.name = "process.ignore", .profile = kMcpProfileProcess,
    .description = MCP_IGNORE_SEED_DESCRIPTION, .input_schema = MCP_IGNORE_SEED_INPUT,
    .output_schema = MCP_IGNORE_OUTPUT, .fn = mcp_ignore_seed},
  {.name = "watch_process_ignore", .profile = kMcpProfileWatchProcess,
    .description = MCP_IGNORE_SEED_DESCRIPTION, .input_schema = MCP_IGNORE_SEED_INPUT,
    .output_schema = MCP_IGNORE_OUTPUT, .fn = mcp_ignore_seed},
  {.name = "MonitorIgnore", .profile = kMcpProfileMonitor,
    .description = MCP_IGNORE_SEED_DESCRIPTION, .input_schema = MCP_IGNORE_SEED_INPUT,
    .output_schema = MCP_IGNORE_OUTPUT, .fn = mcp_ignore_seed},
  {0},
};
