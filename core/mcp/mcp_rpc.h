/*
 * `vigil mcp`'s JSON-RPC 2.0 side (docs/mcp.md): each line from the harness
 * is parsed (jansson), checked as a JSON-RPC 2.0 message, held to the MCP
 * lifecycle and dispatched; every answer goes out through mcp_write. All of
 * it runs without the engine up to a tool's own engine call (mcp_tools.h),
 * so a fuzz harness (tests/fuzz/fuzz_mcp_input.c) drives exactly what the
 * adapter runs.
 *
 * The rules, each answered and the server going on (docs/mcp.md, "Limits
 * and choices"):
 * - a line that is not JSON: -32700, id null; a batch (an array): -32600;
 * - a message that is not a JSON-RPC 2.0 request or notification (not an
 *   object, `jsonrpc` not "2.0", `method` not a string, `params` neither
 *   absent nor structured): -32600; array params: -32602 (no MCP method
 *   takes them);
 * - a request id that is not a string or a number (an object, an array, a
 *   boolean, null): -32600 with id null, the request not carried out: MCP
 *   forbids null ids, and echoing an id the client cannot have sent as
 *   one would give it a reply it cannot match;
 * - a response (`result` or `error`, no `method`): not answered, since this
 *   server sends no requests;
 * - before `initialize` has been answered only `ping` is served; other
 *   requests get -32600 naming initialize (MCP: the client SHOULD NOT send
 *   them), and `notifications/initialized` before it is ignored;
 * - an unknown method: -32601.
 * Every reply is one line of valid UTF-8 JSON: a message that quotes the
 * input has its invalid bytes replaced, and a result that cannot be encoded
 * is answered -32603 rather than left unanswered.
 */
#ifndef VIGIL_MCP_RPC_H
#define VIGIL_MCP_RPC_H

#include <jansson.h>
#include <stddef.h>

#include "mcp/mcp_tools.h"

/* Handles one line from the harness (without its newline): answers it,
 * or not for a notification or a response. An empty line is skipped. */
void mcp_rpc_line(McpServer *s, const char *line, size_t len);

/* Answers a line the reader discarded for being over its bound: -32600,
 * id null (the id inside it was never read). */
void mcp_rpc_too_long(size_t max);

/* Sends a notification to the harness (takes params). */
void mcp_rpc_notify(const char *method, json_t *params);

#endif
