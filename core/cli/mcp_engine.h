/*
 * `vigil mcp`'s link to the engine (docs/mcp.md): the socket (an engine is
 * started when none answers, unless --no-spawn), the named session
 * (default: the project's, cli_project.h, so the same project in a
 * restarted harness finds its monitors again), and the notifications of
 * that session, each handed to the harness exactly once: the seq of the
 * last one delivered is kept in a small state file next to the socket, and
 * a new adapter resumes after it with last_seq.
 *
 * The socket's directory is checked before anything is read or made in it
 * (rpc_server_check_path, the check vigild makes before it listens): it
 * holds the state file and a started engine's log, so a directory another
 * user owns or can write is refused. A started engine is `vigild --daemon`,
 * which returns once it listens, logging to vigild-mcp.log beside the
 * socket through its own bounded, rotated log file (--log-file,
 * --log-max-bytes); the adapter never opens that log, and refuses to start
 * an engine when the log's path is not a regular file of this user.
 *
 * The engine can go away (SIGUSR2 restarts it in place, a crash ends it):
 * the link then retries (backoff from MCP_RECONNECT_FIRST_MS to
 * MCP_RECONNECT_MAX_BACKOFF_MS, starting an engine again as at start when
 * spawning is allowed) for up to MCP_RECONNECT_WAIT_MS, re-opening the
 * session with last_seq = the newest seq received, so nothing is lost and
 * nothing doubled. Past that bound it gives up until the next engine call,
 * which tries once more. A call finds the link down: it waits for the link
 * (within the same bound) before it is sent. A call in flight when the
 * connection ends is sent again on the new one when its method only reads
 * (mcp_engine_read_only); otherwise it fails with kCliErrTransport saying
 * it was in flight, since whether it took effect is unknown. Each change of
 * the link is said on stderr.
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
#include <sys/types.h>

#include "cli_client.h"

#define MCP_QUEUE_MAX 1024

/* How long a lost engine is tried for before the link gives up (until the
 * next call), and how long a call waits for it. */
#define MCP_RECONNECT_WAIT_MS 30000
/* The first pause between two attempts, doubled up to the largest. */
#define MCP_RECONNECT_FIRST_MS 50
#define MCP_RECONNECT_MAX_BACKOFF_MS 1000
/* How long a started `vigild --daemon` has to say it listens. */
#define MCP_SPAWN_WAIT_MS 10000
/* The started engine's log bound (--log-max-bytes): past it the log moves to
 * vigild-mcp.log.1, so it never takes more than twice this. */
#define MCP_ENGINE_LOG_MAX_BYTES (4ull << 20)

typedef struct {
  uint64_t seq;
  json_t *n;               /* the notification map, as JSON (owned) */
} McpQueued;

typedef struct McpEngine McpEngine;
/* Called for each notification as it arrives (channel mode writes it). */
typedef void (*McpOnNotification)(void *ctx, McpEngine *m, uint64_t seq, json_t *n);

/* The state of the link. */
typedef enum {
  kMcpLinkDown = 0,        /* no connection and no retrying: a call tries once */
  kMcpLinkUp,              /* connected, the session open */
  kMcpLinkRetrying,        /* lost: tried again with backoff until the bound */
} McpLink;

struct McpEngine {
  CliClient cli;
  char state_path[4400];   /* where the last delivered seq is kept */
  uint64_t delivered;      /* the last seq handed to the harness */
  uint64_t received;       /* the newest seq received: a reconnect resumes after it */
  McpQueued queue[MCP_QUEUE_MAX]; /* received, not yet delivered; a ring */
  size_t head, count;
  uint64_t dropped;        /* queued notifications the bound threw away */
  McpOnNotification on_notification;
  void *ctx;
  /* The link (see above). */
  McpLink link;
  bool spawn;              /* an engine may be started when none answers */
  const char *config;      /* the --config a started engine gets, or NULL */
  int64_t reconnect_wait_ms; /* MCP_RECONNECT_WAIT_MS; 0: no retrying, one attempt a call */
  int64_t lost_at;         /* when the connection ended (monotonic ms) */
  int64_t retry_at;        /* the next attempt while retrying */
  int64_t backoff_ms;      /* the pause after the next failed attempt */
  uint64_t reconnects;     /* connections made again after one ended */
  pid_t starting;          /* a `vigild --daemon` not yet reaped, or 0 */
};

/* Sets up m's link (m->cli already resolved): down, with spawning allowed or
 * not and the config a started engine gets (NULL: vigild's default lookup).
 * Connects nothing. */
void mcp_engine_init(McpEngine *m, bool spawn, const char *config);

/* Checks the session's name and the socket's directory, reads the state
 * file, connects (starting an engine when none answers and spawning is
 * allowed), opens the session and resumes it after the last seq delivered
 * by an earlier adapter. Returns 0, or -1 with m->cli.err set. */
int mcp_engine_open(McpEngine *m);

void mcp_engine_close(McpEngine *m);

/* A call with JSON arguments (an object, or NULL for none); *result is the
 * engine's result as JSON (owned). Waits for a lost link first, and sends a
 * read-only call again when the connection ended under it (see above).
 * Returns 0, or -1 with m->cli.err set. */
int mcp_engine_call(McpEngine *m, const char *method, json_t *args, int64_t timeout_ms,
                    json_t **result);

/* Whether a method only reads, so that sending it again is safe. */
bool mcp_engine_read_only(const char *method);

/* The connection's descriptor for the caller's poll() (readiness only), or
 * -1 while the link is not up. */
int mcp_engine_fd(const McpEngine *m);

/* How long the caller's poll() may wait before mcp_engine_tick has an
 * attempt to make: ms, or -1 for no limit. */
int mcp_engine_timeout_ms(const McpEngine *m);

/* Makes a reconnection attempt when one is due (never otherwise). */
void mcp_engine_tick(McpEngine *m);

/* Handles whatever the engine sent (never blocks). Returns -1 when the
 * connection ended (the link is then retrying, said on stderr). */
int mcp_engine_poll(McpEngine *m);

/* Waits until the engine sends something or deadline (monotonic ms)
 * passes, handling it; a lost connection is made again first. Returns 1
 * (something handled, or the session re-opened), 0 at the deadline, -1 with
 * m->cli.err set when no engine answers. */
int mcp_engine_wait(McpEngine *m, int64_t deadline);

/* Up to max kept notifications after since_seq, in seq order, as a JSON
 * array (owned); the newest of them is recorded as delivered. */
json_t *mcp_engine_take(McpEngine *m, uint64_t since_seq, size_t max);

/* Whether a kept notification is newer than since_seq. */
bool mcp_engine_has_after(const McpEngine *m, uint64_t since_seq);

/* Records seq as delivered (and persists it). */
void mcp_engine_delivered(McpEngine *m, uint64_t seq);

#endif
