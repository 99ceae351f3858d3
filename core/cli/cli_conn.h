/*
 * The client side of docs/protocol.md section 2: one blocking msgpack-rpc
 * connection to vigild over its Unix socket, for a program that does one
 * thing at a time. A request gets the next msgid; an answer is matched by its
 * msgid, and an answer to another request that arrives first is kept until it
 * is asked for (a monitor_wait may be outstanding while other calls run).
 * Notifications are handed to a callback as they are read. Every wait has a
 * deadline on the monotonic clock, so nothing blocks longer than the command
 * that asked is willing to wait.
 *
 * Also here: the client's error record (what went wrong and where: the
 * engine, the transport, or a deadline) and a builder for argument maps,
 * since a map's size must be packed before its entries.
 */
#ifndef VIGIL_CLI_CONN_H
#define VIGIL_CLI_CONN_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where a failure came from; the caller chooses the exit status from it. */
typedef enum {
  kCliErrNone = 0,
  kCliErrEngine,     /* the engine answered with an error; code is its code */
  kCliErrNoEngine,   /* nothing is listening on the socket */
  kCliErrTransport,  /* connect, read or write failed, or the engine hung up */
  kCliErrDeadline,   /* no answer before the command's deadline */
  kCliErrProtocol,   /* the engine sent something that is not msgpack-rpc */
  kCliErrInterrupted, /* the wake fd became readable (a signal, see cli_conn_set_wake_fd) */
  kCliErrHangup,     /* the hangup fd's reader went away (cli_conn_set_hangup_fd) */
} CliErrorKind;

#define CLI_ERROR_MSG_MAX 1200

typedef struct {
  CliErrorKind kind;
  int code;                       /* the engine's error code, kCliErrEngine only */
  char msg[CLI_ERROR_MSG_MAX];    /* printed after "vigil: " */
} CliError;

/* Sets err (kind and formatted message) and returns -1. */
int cli_error_set(CliError *err, CliErrorKind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* An argument map under construction: entries are packed as they are
 * added and counted, and the map header is written when the request is
 * sent. */
typedef struct {
  msgpack_sbuffer body;
  msgpack_packer pk;
  uint32_t count;
} CliReq;

void cli_req_init(CliReq *r);
void cli_req_free(CliReq *r);
/* Packs key and counts an entry; the caller packs its value with the
 * returned packer (exactly one msgpack object). */
msgpack_packer *cli_req_key(CliReq *r, const char *key);
void cli_req_str(CliReq *r, const char *key, const char *value);
void cli_req_uint(CliReq *r, const char *key, uint64_t value);
void cli_req_bool(CliReq *r, const char *key, bool value);

/* One successful answer. msg owns the memory result points into. */
typedef struct {
  msgpack_unpacked msg;
  const msgpack_object *result; /* a map (an empty one when the engine sent nil) */
} CliReply;

void cli_reply_free(CliReply *reply);

/* Called for every notification read, with its method name and params
 * (the array), valid only during the call. */
typedef void (*CliNotifyFn)(void *ctx, const char *method, size_t method_len,
                            const msgpack_object *params);

typedef struct CliConn CliConn;

/* The monotonic clock in ms: deadlines are absolute times on it; -1 means
 * no deadline. */
int64_t cli_now_ms(void);

/* Connects to the socket at path and checks, before anything is sent, that
 * the server runs as this user or as root (SO_PEERCRED). Returns the
 * connection, or NULL with err set: kCliErrNoEngine when nothing listens
 * there (no file, or a stale one), kCliErrTransport for anything else
 * (permissions, a path too long, a server of another uid, named with both
 * uids). */
CliConn *cli_conn_open(const char *path, CliError *err);

/* The same conversation over NATS (docs/fleet.md section 6): each request
 * is sent to engine's request subject on the server at url, the subject
 * of session when it is not NULL (so a NATS user allowed that session
 * alone can use it), else the engine's. kCliErrNoEngine when the server
 * cannot be reached; kCliErrTransport when it refuses this user the
 * subscription to the inbox the answers come to (its
 * $VIGIL_NATS_INBOX is not one of its own); an engine that does not answer shows as the call's
 * deadline, and the server's "no responders" (no engine of that name is
 * connected) as an error of kind kCliErrNoEngine. The server going away
 * ends the connection as an engine closing its socket does. No
 * notification comes this way unless asked for (cli_conn_nats_listen). */
CliConn *cli_conn_open_nats(const char *url, const char *engine, const char *session,
                            CliError *err);

/* On a connection through NATS: the notifications of session, as the
 * engine publishes them, come as pushes to the notify callback, exactly
 * as the socket pushes them (cli_natslive.h: each checked first). Returns
 * 0, or -1 with err set (kCliErrTransport) when the server refuses the
 * subscription. */
int cli_conn_nats_listen(CliConn *c, const char *engine, const char *session, CliError *err);

/* The connection's socket, for a caller's own poll(); only for readiness:
 * reading is cli_conn_pump's. */
int cli_conn_fd(const CliConn *c);

/* Closes the connection and frees every answer not taken. */
void cli_conn_close(CliConn *c);

/* A descriptor that ends every wait for the engine when it becomes readable
 * (cli_conn_pump then fails with kCliErrInterrupted): the read end of a
 * pipe a signal handler writes to, so that Ctrl-C is seen at once and
 * without a race. -1: none (the default). Left readable, it ends every
 * later wait too: set -1 before calling the engine again. */
void cli_conn_set_wake_fd(CliConn *c, int fd);

/* A descriptor whose reader going away ends every wait for the engine
 * (cli_conn_pump then fails with kCliErrHangup): the stdout of a command
 * that prints as things come, so that `vigil watch | head -n 1` ends when
 * head does, not at the next write, which may never come. Only a hangup
 * counts (a pipe's reader closed, a terminal hung up), never readiness.
 * -1: none (the default). */
void cli_conn_set_hangup_fd(CliConn *c, int fd);

/* Where notifications go from now on (NULL: dropped). */
void cli_conn_set_notify(CliConn *c, CliNotifyFn fn, void *ctx);

/* Sends a request (args NULL: no arguments) and returns its msgid, or -1
 * with err set when the write fails or does not finish by deadline. */
int64_t cli_conn_send(CliConn *c, const char *method, const CliReq *args, int64_t deadline,
                      CliError *err);

/* Takes the answer to msgid if it has arrived: 1 with reply filled (free it
 * with cli_reply_free), 0 when it has not, -1 when the engine answered with
 * an error (err set, kCliErrEngine). */
int cli_conn_take(CliConn *c, uint32_t msgid, CliReply *reply, CliError *err);

/* Reads until at least one message has arrived and handles every complete
 * one (notifications to the callback, answers kept for cli_conn_take).
 * Returns 1, or 0 when deadline passed first, or -1 with err set when the
 * connection failed or the engine closed it. */
int cli_conn_pump(CliConn *c, int64_t deadline, CliError *err);

/* Gives up on the answer to msgid: dropped if it has come, else dropped
 * when it comes (the last CLI_CONN_ABANDONED_MAX given up on are
 * remembered), so that no answer is kept for nobody. */
void cli_conn_abandon(CliConn *c, uint32_t msgid);

/* Sends a request and waits for its answer (handling notifications in the
 * meantime). Returns 0 with reply filled, or -1 with err set (an engine
 * error, a transport failure, or kCliErrDeadline). */
int cli_conn_call(CliConn *c, const char *method, const CliReq *args, int64_t deadline,
                  CliReply *reply, CliError *err);

#endif
