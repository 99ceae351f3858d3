/*
 * One invocation's link to the engine: which socket (--socket, else
 * $VIGIL_SOCKET, else the engine's default path) and which session
 * (--session, else $VIGIL_SESSION, else the session of the project the
 * working directory is in, cli_project.h: the one `vigil mcp` started there
 * works in, so a person sees what the agent runs), the connection, the
 * session it opens, and how failures are reported (stderr, "vigil:
 * <message>", exit status 1).
 *
 * Why a named session: a connection's anonymous session, and every monitor
 * in it, dies with the connection, and every invocation of the client is a
 * new connection. So the client opens a named session; when it creates one
 * it asks for a linger of 7 days (session.max_linger_ms by default), so that
 * monitors started from a terminal keep running between commands. A session
 * that already exists (an agent's, opened to look at its monitors) keeps the
 * linger its creator gave it.
 */
#ifndef VIGIL_CLI_CLIENT_H
#define VIGIL_CLI_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "cli/cli_conn.h"
#include "base/strbuf.h"

/* The longest a plain call may take: the engine answers these at once, so
 * running out means it is stuck. */
#define CLI_CALL_TIMEOUT_MS 30000

/* The linger asked for when the client creates a session (7 days). */
#define CLI_SESSION_LINGER_MS 604800000ULL

/* The exit status of an engine or connection failure. */
#define CLI_EXIT_FAILURE 1

typedef struct {
  char socket_path[4096];
  char session[128];
  bool json;
  CliConn *conn;
  const char *nats_url;  /* --nats: requests go through NATS (cli_conn_open_nats) */
  const char *engine;    /* --engine, with nats_url */
  bool engine_wide;      /* over NATS, on the engine's subject rather than the session's */
  /* Over NATS with notify set: whether the session's notifications come
   * live (cli_conn_nats_listen), and when not, why (live_err). */
  bool live;
  CliError live_err;
  CliError err;
  CliNotifyFn notify;   /* set before connecting to see notifications, */
  void *notify_ctx;     /* including those replayed by session_open */
  uint64_t next_seq;    /* session_open's next_seq at the last connect: the
                           seq the session's next new notification gets */
} CliClient;

/* What cli_client_init found wrong, for the caller to report in its own
 * terms (a command line's usage error, an MCP server's start failure). */
typedef enum {
  kCliInitOk = 0,
  kCliInitBadArgument, /* a socket path or session name too long: c->err.msg names it */
  kCliInitNoSession,   /* none given, and the working directory's real path (which names
                          its project's session) cannot be found: c->err.msg says so */
} CliInitResult;

/* Resolves the socket path (socket, else $VIGIL_SOCKET, else the engine's
 * default) and the session name (session, else $VIGIL_SESSION, else the
 * project's), NULL or "" meaning not given, and clears the rest of c. It
 * knows nothing of a command line: the caller reports a failure. */
CliInitResult cli_client_init(CliClient *c, const char *socket, const char *session, bool json);

/* Connects. With open_session, also opens the named session (replaying the
 * kept notifications after last_seq when has_last_seq); without, the
 * connection stays in its own anonymous session, which ends (and stops its
 * monitors) when the connection closes. Returns 0 or -1 with c->err set.
 * Through NATS with notify set, the session's notifications are subscribed
 * to first, so they come as pushes (the engine drops its own pushes to a
 * requester, docs/fleet.md section 6); a server that refuses that
 * subscription leaves c->live false and says why in c->live_err, and the
 * connection is made all the same (calls work; nothing is pushed). A
 * replay asked for by last_seq is dropped by the engine there. */
int cli_client_connect(CliClient *c, bool open_session, bool has_last_seq, uint64_t last_seq);

/* A call with a deadline timeout_ms from now (-1: none). Returns 0 with
 * reply filled (free it), or -1 with c->err set. */
int cli_client_call(CliClient *c, const char *method, const CliReq *args, int64_t timeout_ms,
                    CliReply *reply);

/* How much of a monitor's start map (monitor_status's `start`: the argv
 * and env it was started with, which can hold secrets) a status asks for. */
typedef enum {
  kCliStartNone = 0,  /* none: `start` comes back nil */
  kCliStartRedacted,  /* include_start: argv, cwd, ..., env names with nil values */
  kCliStartRevealed,  /* include_start and reveal_env: env values too (restart) */
} CliStartView;

/* monitor_status for the monitor with this full id, with as much of its
 * start map as `start` says: 0 with reply filled (free it), or -1 with
 * c->err set. */
int cli_client_monitor_status(CliClient *c, const char *id, CliStartView start,
                              CliReply *reply);

/* Appends path (any word) as one shell word: as it is when it holds only
 * characters no shell treats specially, else in single quotes, so that
 * what is printed can be pasted as it is. */
void cli_client_shell_word(StrBuf *out, const char *path);

/* The value of one of the engine's settings in force (api_info's limits,
 * e.g. "monitor.max_runtime_ms"), or def when it cannot be learned (c->err
 * is then left as it was). */
uint64_t cli_client_limit(CliClient *c, const char *name, uint64_t def);

/* Prints c->err on stderr ("vigil: ...", plus how to start an engine when
 * none is listening) and returns CLI_EXIT_FAILURE. */
int cli_client_fail(CliClient *c);

void cli_client_close(CliClient *c);

/* Resolves what a person typed for a monitor into its id (out holds at
 * least 64 bytes): a full id as it is; else a label (the newest running
 * monitor with it, else the newest one) or the unique monitor whose id
 * starts with it (with or without "mon_"). Returns 0, or -1 with c->err set
 * (not_found, or an ambiguous prefix). */
int cli_client_monitor_id(CliClient *c, const char *arg, char *out);

/* Prints o as one line of JSON on stdout. */
void cli_client_print_json(const msgpack_object *o);

/* Sets (handler) or restores (SIG_DFL) what the stopping signals (SIGINT,
 * SIGTERM, SIGHUP) do, for a command that waits and must end cleanly. */
void cli_client_stop_signals(void (*handler)(int));

#endif
