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
 * The link is its own thread (mcp_link.c), so that a call that waits for
 * the engine (monitor_wait, a foreground process_run) holds back neither
 * the harness's other requests nor the notifications: the thread alone
 * reads and writes the connection and makes every attempt to reconnect;
 * a caller, from any thread, queues its call and sleeps until the thread
 * has its answer, routed by msgid (the engine answers out of order,
 * docs/protocol.md section 2.5). A caller's call can be cancelled (its
 * harness request was): it ends at once as kCliErrInterrupted, its answer
 * dropped when it comes.
 *
 * Through NATS (the CLI's --nats and --engine, docs/fleet.md section 6)
 * the link is the same, with these differences: no engine is ever started
 * and no state file is kept (the engine's model cursor is what counts; a
 * push missed while the link was down stays above it for the next take);
 * the session's notifications come from its subject (cli_natslive.h), not
 * by a replay; the broker going away, or its "no responders" (no engine of
 * that name connected), is the engine going away: retried within the same
 * bound, a call that met "no responders" sent again, since it reached no
 * engine; and while the link is up a ping goes every third of the
 * engine's nats.client_idle_ms without a call, so that the engine does
 * not close this adapter's virtual connection as idle (and with it end
 * the session's reader) between the harness's calls.
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
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cli/cli_client.h"

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

/* nats.client_idle_ms when an engine through NATS does not say its own. */
#define MCP_NATS_IDLE_DEFAULT_MS 60000

/* mcp_engine_take's since_seq for "after the last one delivered". */
#define MCP_SINCE_DELIVERED UINT64_MAX

typedef struct {
  uint64_t seq;
  json_t *n;               /* the notification map, as JSON (owned) */
} McpQueued;

typedef struct McpEngine McpEngine;
/* Called for each notification as it arrives (channel mode writes it), on
 * the link's thread, without the engine's lock held. */
typedef void (*McpOnNotification)(void *ctx, McpEngine *m, uint64_t seq, json_t *n);

/* The state of the link. */
typedef enum {
  kMcpLinkDown = 0,        /* no connection and no retrying: a call tries once */
  kMcpLinkUp,              /* connected, the session open */
  kMcpLinkRetrying,        /* lost: tried again with backoff until the bound */
} McpLink;

typedef struct McpPending McpPending;

/* Whoever calls the engine: a tool call, in its worker thread (mcp_calls.h).
 * Its last error, and whether it was cancelled: then its call in flight
 * ends and every later one fails at once. */
typedef struct {
  CliError err;            /* the last failed call's (this caller's only) */
  bool cancelled;          /* under the engine's lock */
  McpPending *waiting;     /* its call in flight, or NULL (under the lock) */
} McpCaller;

struct McpEngine {
  CliClient cli;           /* the connection: the link's thread's alone once it runs */
  char where[4200];        /* the engine, for messages: its socket, or its name and NATS URL */
  bool nats;               /* through NATS (cli.nats_url) */
  char state_path[4400];   /* where the last delivered seq is kept; "": nowhere (NATS) */
  /* Under mu from here on, unless said otherwise. */
  pthread_mutex_t mu;
  pthread_cond_t changed;  /* a call ended, a notification came, an attempt ended */
  uint64_t delivered;      /* the last seq handed to the harness */
  uint64_t received;       /* the newest seq received: a reconnect resumes after it */
  McpQueued queue[MCP_QUEUE_MAX]; /* received, not yet delivered; a ring */
  size_t head, count;
  uint64_t dropped;        /* queued notifications the bound threw away */
  McpOnNotification on_notification; /* set before the link runs */
  void *ctx;
  /* Held while notifications are taken and pushed (mcp_deliver.c), so that
   * pushes leave in seq order whichever thread pushes. */
  pthread_mutex_t push_mu;
  /* The link (see above). */
  McpLink link;
  bool spawn;              /* an engine may be started when none answers */
  const char *config;      /* the --config a started engine gets, or NULL */
  int64_t reconnect_wait_ms; /* MCP_RECONNECT_WAIT_MS; 0: no retrying, one attempt a call */
  int64_t lost_at;         /* when the connection ended (monotonic ms) */
  int64_t retry_at;        /* the next attempt while retrying */
  int64_t backoff_ms;      /* the pause after the next failed attempt */
  uint64_t reconnects;     /* connections made again after one ended */
  uint64_t attempts;       /* attempts made by the link's thread, counted */
  pid_t starting;          /* a `vigild --daemon` not yet reaped, or 0 (the link's) */
  int64_t keepalive_ms;    /* a ping after this long without a call (NATS); 0: none */
  int64_t sent_at;         /* when the link's thread last sent a call (monotonic ms) */
  McpPending *pending;     /* the calls not yet answered */
  pthread_t thread;        /* the link's thread, while running */
  bool running, stopping;
  int wake[2];             /* a pipe: a byte wakes the link's thread */
  /* Through NATS (mcp_natsfetch.c): the thread that reads the engine's new
   * notifications when a message on the session's subject says there are. */
  pthread_t fetch_thread;
  pthread_cond_t fetch_cond;
  bool fetch_running, fetch_due, fetch_stopping;
  uint64_t fetch_failures; /* reads that failed (said on stderr, the first and every 2^n) */
};

/* Sets up m's link (m->cli already resolved): down, with spawning allowed or
 * not and the config a started engine gets (NULL: vigild's default lookup).
 * Connects nothing and starts no thread. */
void mcp_engine_init(McpEngine *m, bool spawn, const char *config);

/* Checks the session's name and the socket's directory, reads the state
 * file, connects (starting an engine when none answers and spawning is
 * allowed), opens the session and resumes it after the last seq delivered
 * by an earlier adapter. Then starts the link's thread. Returns 0, or -1
 * with m->cli.err set. */
int mcp_engine_open(McpEngine *m);

/* Stops the link's thread (a call still waiting fails), closes the
 * connection and frees the kept notifications. */
void mcp_engine_close(McpEngine *m);

/* A call with JSON arguments (an object, or NULL for none), from any
 * thread; *result is the engine's result as JSON (owned). Waits for a lost
 * link first, and sends a read-only call again when the connection ended
 * under it (see above). Returns 0, or -1 with mcp_engine_error() set (a
 * cancelled caller's call: kCliErrInterrupted). */
int mcp_engine_call(McpEngine *m, const char *method, json_t *args, int64_t timeout_ms,
                    json_t **result);

/* The calling thread's caller from now on (NULL: the thread's own default
 * one): a worker sets it for each tool call it runs. */
void mcp_engine_caller_set(McpCaller *c);

/* The last error of the calling thread's caller: what a failed
 * mcp_engine_call or mcp_engine_wait_news said. */
const CliError *mcp_engine_error(void);

/* Cancels caller c (any thread): its call in flight ends at once, and its
 * later calls and waits fail as cancelled. */
void mcp_engine_cancel(McpEngine *m, McpCaller *c);

/* Whether a method only reads, so that sending it again is safe. */
bool mcp_engine_read_only(const char *method);

/* Waits until a notification newer than since_seq (MCP_SINCE_DELIVERED:
 * the last delivered) is kept, or deadline (monotonic ms) passes. Returns
 * 1 (there is one), 0 at the deadline, -1 with mcp_engine_error() set when
 * the link is down and no engine answers, or the caller was cancelled. */
int mcp_engine_wait_news(McpEngine *m, uint64_t since_seq, int64_t deadline);

/* What a take saw, under the same lock. */
typedef struct {
  uint64_t delivered;      /* the last seq delivered, after the take */
  uint64_t dropped;        /* kept notifications the bound threw away, so far */
} McpTaken;

/* Up to max kept notifications after since_seq (MCP_SINCE_DELIVERED: after
 * the last delivered), in seq order, as a JSON array (owned); the newest
 * of them is recorded as delivered. info may be NULL. */
json_t *mcp_engine_take(McpEngine *m, uint64_t since_seq, size_t max, McpTaken *info);

/* The newest seq pushed to the harness (mcp_deliver.c), from any thread. */
uint64_t mcp_engine_pushed(McpEngine *m);

#endif
