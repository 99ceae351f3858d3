/*
 * `vigil mcp`'s pushes (docs/mcp.md, "Which delivery mode"): in auto and
 * channel mode each notification of the session is pushed to the harness as
 * it arrives, as `notifications/claude/channel` (the envelope, ids in meta)
 * and, at the client's logging level, `notifications/message` (the
 * structured notification); not before the harness said
 * notifications/initialized, when what an engine replayed at start-up is
 * handed over at once. A push is best effort and moves no model cursor,
 * except in channel mode, which trusts it (mcp_deliver_start). What the
 * tool results and notifications_read give is taken from the engine's
 * model cursor (mcp_cursor.h).
 */
#ifndef VIGIL_MCP_DELIVER_H
#define VIGIL_MCP_DELIVER_H

#include <stdint.h>

#include "mcp/mcp_tools.h"

/* Starts, in channel mode, the thread that moves the session's model cursor
 * past what was pushed (cursor_advance: channel trusts the push). A thread
 * of its own, since the pushes leave from the link's thread, which cannot
 * wait for an answer it reads itself. Returns 0, or -1 when no thread could
 * be made. Other modes: nothing. */
int mcp_deliver_start(McpServer *s);

/* Sends the last cursor move still due, then stops that thread (before the
 * engine's link closes). */
void mcp_deliver_stop(void);

/* In channel or auto mode, once the harness is ready: pushes every queued
 * notification not yet delivered, oldest first. Otherwise nothing. */
void mcp_deliver_flush(McpServer *s);

/* The engine's McpOnNotification for a server (ctx): flushes. */
void mcp_deliver_on_notification(void *ctx, McpEngine *m, uint64_t seq, json_t *n);

#endif
