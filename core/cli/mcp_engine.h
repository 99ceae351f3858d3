/*
 * `vigil mcp`'s link to the engine (docs/mcp.md): the socket (an
 * engine is started detached when none answers, unless --no-spawn), the
 * named session (default: the project's, cli_project.h, so the same project
 * in a restarted harness finds its monitors again), and
 * the notifications of that session, each handed to the harness exactly
 * once: the seq of the last one delivered is kept in a small state file
 * next to the socket, and a new adapter resumes after it with last_seq.
 *
 * The last MCP_QUEUE_MAX notifications are kept in a ring, delivered or not
 * (notifications_read may read again from an earlier since_seq); the
 * delivery mode hands the new ones out at once (channel), with the next
 * tool result (piggyback), or when asked (poll). One that leaves the ring
 * before it was delivered is counted in `dropped`.
 */
#ifndef VIGIL_MCP_ENGINE_H
#define VIGIL_MCP_ENGINE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "cli_client.h"

#define MCP_QUEUE_MAX 1024

typedef struct {
  uint64_t seq;
  json_t *n;               /* the notification map, as JSON (owned) */
} McpQueued;

typedef struct McpEngine McpEngine;
/* Called for each notification as it arrives (channel mode writes it). */
typedef void (*McpOnNotification)(void *ctx, McpEngine *m, uint64_t seq, json_t *n);

struct McpEngine {
  CliClient cli;
  char state_path[4400];   /* where the last delivered seq is kept */
  uint64_t delivered;      /* the last seq handed to the harness */
  McpQueued queue[MCP_QUEUE_MAX]; /* received, not yet delivered; a ring */
  size_t head, count;
  uint64_t dropped;        /* queued notifications the bound threw away */
  McpOnNotification on_notification;
  void *ctx;
};

/* Connects (starting an engine when none answers and spawn is true; config
 * may be NULL for the default), opens the session and resumes it after the
 * last seq delivered by an earlier adapter. Returns 0, or -1 with m->cli.err
 * set. */
int mcp_engine_open(McpEngine *m, const CliParsed *p, bool spawn, const char *config);

void mcp_engine_close(McpEngine *m);

/* A call with JSON arguments (an object, or NULL for none); *result is the
 * engine's result as JSON (owned). Returns 0, or -1 with m->cli.err set. */
int mcp_engine_call(McpEngine *m, const char *method, json_t *args, int64_t timeout_ms,
                    json_t **result);

/* Handles whatever the engine sent (never blocks). Returns -1 when the
 * connection failed. */
int mcp_engine_poll(McpEngine *m);

/* Up to max kept notifications after since_seq, in seq order, as a JSON
 * array (owned); the newest of them is recorded as delivered. */
json_t *mcp_engine_take(McpEngine *m, uint64_t since_seq, size_t max);

/* Whether a kept notification is newer than since_seq. */
bool mcp_engine_has_after(const McpEngine *m, uint64_t since_seq);

/* Records seq as delivered (and persists it). */
void mcp_engine_delivered(McpEngine *m, uint64_t seq);

#endif
