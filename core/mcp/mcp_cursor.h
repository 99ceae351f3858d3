/*
 * `vigil mcp`'s take from the session's model cursor (docs/mcp.md, "Which delivery mode";
 * docs/protocol.md's cursor_take): what a tool result or notifications_read
 * gives the model counts as delivered, so the engine moves the cursor past
 * exactly that, atomically. The cursor is the engine's, shared by every
 * `vigil mcp` and `vigil hook` of the session and kept across restarts of
 * any of them: two readers never give the model the same seq, and nothing
 * of the adapter's own (no state file) says what was delivered.
 *
 * A take is bounded like a hook's answer (hook_text.h, the same plan): the
 * adapter looks first (cursor_get, then notifications_since, which moves
 * nothing), hook_text_plan says how many of those fit, and cursor_take
 * takes that many. What does not fit stays above the cursor for the next
 * result. Another reader taking in between changes which notifications
 * this take gets, never how many.
 */
#ifndef VIGIL_MCP_CURSOR_H
#define VIGIL_MCP_CURSOR_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "mcp/mcp_engine.h"

/* Takes, from the model cursor, at most most notifications (oldest first),
 * no more than one answer's bound holds; with wait_ms > 0 and nothing above
 * the cursor, waits that long for the first one. Returns cursor_take's
 * result (owned: notifications, cursor, last_seq, dropped, ...), or NULL
 * with mcp_engine_error() set; nothing was taken then. */
json_t *mcp_cursor_take(McpEngine *m, size_t most, int64_t wait_ms);

/* Moves the model cursor forward to seq (never back): for what the adapter
 * put before the model by a path it trusts (--delivery channel). Returns 0,
 * or -1 with mcp_engine_error() set. */
int mcp_cursor_advance(McpEngine *m, uint64_t seq);

#endif
