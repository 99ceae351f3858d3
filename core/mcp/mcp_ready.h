/*
 * `wait_ready` on the MCP start tools (docs/readiness.md, docs/mcp.md): a
 * start that declared readiness returns only once the engine says the
 * monitor is ready, or says it is not (monitor_wait {for: "ready"}).
 */
#ifndef VIGIL_MCP_READY_H
#define VIGIL_MCP_READY_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/strbuf.h"
#include "mcp/mcp_tools.h"

/* The argument of the start tools that the adapter takes out (never sent). */
#define MCP_READY_ARG "wait_ready"

/* The start fields of readiness and health and `wait_ready`, as JSON
 * Schema properties (no braces around them) for a start tool's schema. */
#define MCP_READY_SCHEMA_PROPS                                                                   \
  "\"ready_log\":{\"type\":\"string\",\"minLength\":1,\"description\":\"ready when an output line "  \
  "matches this regex\"},\"ready_tcp\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":65535,"       \
  "\"description\":\"ready when this port of 127.0.0.1 accepts a connection\"},\"ready_http\":{"   \
  "\"type\":\"string\",\"minLength\":1,\"maxLength\":2048,\"description\":\"ready when a GET of "    \
  "this http:// URL on loopback answers with a status in ready_status (redirects are not "    \
  "followed)\"},\"ready_status\":{\"type\":\"string\",\"default\":\"200..399\"},\"ready_timeout_ms\"" \
  ":{\"type\":\"integer\",\"minimum\":1,\"maximum\":3600000,\"default\":60000,\"description\":\"not " \
  "ready after this long: told with the last lines\"},\"health_interval_ms\":{\"type\":"         \
  "\"integer\",\"minimum\":100,\"maximum\":3600000,\"description\":\"once ready, probe this often; " \
  "only changes are told\"},\"health_failures\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":100," \
  "\"default\":3},\"wait_ready\":{\"type\":\"boolean\",\"default\":false,\"description\":\"return "  \
  "only once it is ready (or not ready by ready_timeout_ms, or ended): the result's `ready` "  \
  "says which, with the last lines when not\"}"

/* Takes `wait_ready` out of a start's args (the engine does not know it);
 * returns whether it was true, and *wait_ms: how long the wait may take
 * (ready_timeout_ms, default 60 s, and a margin). */
bool mcp_ready_take(json_t *args, int64_t *wait_ms);

/* After a start that succeeded (out->structured holds its monitor_id):
 * waits for readiness and puts the answer in the result as `ready`:
 * {ready, reason, state, timed_out, output} where output holds the last
 * lines when it is not ready (escaped and framed like every process text
 * of a result). A wait that fails leaves the start's result, with ready
 * {ready: false, reason} saying why. */
void mcp_ready_wait(McpServer *s, int64_t wait_ms, McpResult *out);

/* The same wait for the monitor id, its answer put in `into` as `ready`
 * (a seed tool's own result, whose id has the seed's name). */
void mcp_ready_wait_into(McpServer *s, const char *id, int64_t wait_ms, json_t *into);

/* A seed profile's start tool: copies the readiness fields and wait_ready
 * (MCP_READY_SCHEMA_PROPS) the caller gave from the tool's args into the
 * engine's monitor_start args. */
void mcp_ready_copy(const json_t *tool_args, json_t *start_args);

/* A seed tool's text: "ready: REASON" from its result's `ready` (nothing
 * when there is none) and the last lines, framed as process text. */
void mcp_ready_text(const json_t *ready, StrBuf *text);

#endif
