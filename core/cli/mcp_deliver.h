/*
 * `vigil mcp`'s channel delivery (docs/mcp.md, "Which delivery mode"): in
 * channel mode each notification of the session is pushed to the harness as
 * it arrives, as `notifications/claude/channel` (the envelope, ids in meta)
 * and, at the client's logging level, `notifications/message` (the
 * structured notification); not before the harness said
 * notifications/initialized, when what an engine replayed at start-up is
 * handed over at once. Piggyback and poll take from the same queue
 * (mcp_engine_take), from the tool side.
 */
#ifndef VIGIL_MCP_DELIVER_H
#define VIGIL_MCP_DELIVER_H

#include <stdint.h>

#include "mcp_tools.h"

/* In channel mode, once the harness is ready: pushes every queued
 * notification not yet delivered, oldest first. Otherwise nothing. */
void mcp_deliver_flush(McpServer *s);

/* The engine's McpOnNotification for a server (ctx): flushes. */
void mcp_deliver_on_notification(void *ctx, McpEngine *m, uint64_t seq, json_t *n);

#endif
