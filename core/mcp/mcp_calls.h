/*
 * `vigil mcp`'s tool calls in flight (docs/mcp.md, "Limits and choices": requests are served
 * concurrently). Each tools/call runs in a thread of its own, so that a
 * monitor_wait or a foreground process_run holds back neither a ping nor
 * another call; the reading thread stays free for the next line. At most
 * MCP_CALLS_MAX calls are in flight: past it a call is refused at once
 * (MCP_CALLS_BUSY, "busy: ..."), not queued, since a queued call would wait
 * behind calls that may wait for minutes. notifications/cancelled ends a
 * call's wait for the engine (mcp_engine_cancel), and nothing is answered
 * for it; its place is free at once, while its thread ends (a place among
 * MCP_CALLS_THREADS_MAX, counted apart so that the threads stay bounded).
 */
#ifndef VIGIL_MCP_CALLS_H
#define VIGIL_MCP_CALLS_H

#include <jansson.h>
#include <stdbool.h>

#include "mcp/mcp_tools.h"

/* Tool calls in flight (answered yet, not cancelled), at most. */
#define MCP_CALLS_MAX 16
/* Threads of calls at most, those of cancelled calls still ending included. */
#define MCP_CALLS_THREADS_MAX (2 * MCP_CALLS_MAX)
/* The JSON-RPC error code of a call refused past the bound. */
#define MCP_CALLS_BUSY (-32003)

/* What a call's thread runs: id and params are its own copies. */
typedef void (*McpCallFn)(McpServer *s, json_t *id, json_t *params);

/* Starts run(s, id, params) in a thread of its own (id and params are
 * copied; the caller keeps its own). Returns 0, or -1 with msg set (the
 * bound reached, or no thread could be made): the caller answers
 * MCP_CALLS_BUSY with msg. */
int mcp_calls_start(McpServer *s, json_t *id, json_t *params, McpCallFn run, char *msg,
                    size_t cap);

/* notifications/cancelled for request id: the call in flight with that id,
 * if any, is cancelled and its place freed. Unknown ids are ignored (the
 * call may have been answered already), as MCP says. */
void mcp_calls_cancel(McpServer *s, const json_t *id);

/* In a call's thread, around its answer: whether it may be sent (false: the
 * call was cancelled), with a lock held until mcp_calls_answered, so that a
 * cancellation either comes before the answer (nothing is sent) or after
 * it (it is ignored). Outside a call's thread: true. */
bool mcp_calls_answering(void);
void mcp_calls_answered(void);

/* Waits until every call has been answered and its thread has ended (the
 * fuzz harness, which checks each line's answer before the next line). */
void mcp_calls_wait_idle(void);

/* Cancels every call and waits until their threads have ended (at stdin's
 * end, before the engine link closes). */
void mcp_calls_end_all(McpServer *s);

#endif
