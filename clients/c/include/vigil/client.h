/*
 * vigil/client.h: libvigilclient, the C client library for hosts of vigil.
 *
 * A host (an agent gateway, an editor, a CI runner) talks to the vigil
 * engine, `vigild`, over msgpack-rpc (docs/protocol.md in the vigil
 * repository): it starts monitors and is pushed notifications. This library
 * is that conversation without msgpack-c in the host's code: a connection
 * to a running engine's Unix socket or to an engine it spawns
 * (`vigild --stdio`), calls with arguments built by a small builder,
 * results read by key, typed notifications, and the protocol's errors with
 * their code and message.
 *
 * Made for hosts with an event loop of their own: the library starts no
 * thread and installs no signal handler. Everything happens in the calling
 * thread, when the host calls in. A host either blocks (vigil_client_call,
 * vigil_client_next_notification with a timeout) or polls the descriptor
 * vigil_client_fd gives, calls vigil_client_read when it is readable, and
 * takes what arrived with a timeout of 0. Notifications read while waiting
 * for an answer are queued, never lost: vigil_client_queued tells the host
 * to drain them before it goes back to poll.
 *
 * Every buffer is bounded: the largest message accepted from the engine,
 * the largest request sent, the notifications queued (vigil_client_set_limit).
 * A bad argument, an oversized request, an engine that sends something
 * that is not msgpack-rpc: each is refused with a message naming what, the
 * bound and the value.
 *
 * Ownership: a vigil_result or vigil_notification owns the message it was
 * read from; every string it gives out (and every msgpack_object under it)
 * lives until vigil_result_free / vigil_notification_free. All strings are
 * NUL-terminated. A client is used by one thread at a time.
 *
 * Link with `pkg-config --cflags --libs vigil-client`.
 */
#ifndef VIGIL_CLIENT_H
#define VIGIL_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && defined(VIGIL_CLIENT_BUILDING)
#define VIGIL_CLIENT_API __attribute__((visibility("default")))
#else
#define VIGIL_CLIENT_API
#endif

/* A message read from the engine; results and notifications own one. */
struct vigil_message;

/* --- errors ----------------------------------------------------------- */

/* The engine's error codes (docs/protocol.md, section 4). */
#define VIGIL_ERR_INTERNAL 0
#define VIGIL_ERR_INVALID_PARAMS 1
#define VIGIL_ERR_NOT_FOUND 2
#define VIGIL_ERR_DENIED 3
#define VIGIL_ERR_LIMIT_EXCEEDED 4
#define VIGIL_ERR_INVALID_PATTERN 5
#define VIGIL_ERR_COMMAND_NOT_FOUND 6
#define VIGIL_ERR_SPAWN_FAILED 7
#define VIGIL_ERR_ALREADY_EXITED 8
#define VIGIL_ERR_DISABLED 9
#define VIGIL_ERR_UNKNOWN_METHOD 10

/* The library's own, negative so that they never meet the engine's. */
#define VIGIL_ERR_USAGE (-1)      /* a bad argument to a library function; nothing was sent */
#define VIGIL_ERR_NO_ENGINE (-2)  /* nothing listens on the socket, or vigild could not start */
#define VIGIL_ERR_CONNECTION (-3) /* the connection failed or the engine closed it */
#define VIGIL_ERR_PROTOCOL (-4)   /* the engine sent what is not msgpack-rpc, or too much */
#define VIGIL_ERR_TIMEOUT (-5)    /* no answer within the call's timeout */

/* The longest error message kept: the engine cuts its own at 1024 bytes. */
#define VIGIL_ERROR_MESSAGE_MAX 1280

/* What went wrong. message starts with the error's name and a colon, as
 * the engine's do: "denied: command: program \"rm\" is not in
 * monitor.allowed_commands", "timeout: no answer to monitor_wait within
 * 200 ms". */
typedef struct vigil_error {
  int code;                               /* VIGIL_ERR_* */
  char message[VIGIL_ERROR_MESSAGE_MAX];
} vigil_error;

/* The name of an error code ("denied", "timeout"), "unknown" for others. */
VIGIL_CLIENT_API const char *vigil_error_name(int code);

/* This library's version, the vigil release it came with ("0.1.0"). */
VIGIL_CLIENT_API const char *vigil_client_version(void);

/* --- arguments -------------------------------------------------------- */

/* A method's named arguments, built key by key. Each adder returns 0, or -1
 * when the key or value is refused (NULL, a key given twice, more than
 * VIGIL_ARGS_MAX_KEYS keys, or more than VIGIL_ARGS_MAX_BYTES in all); the
 * first refusal is kept and reported by the call that sends the
 * arguments, so a host may add everything and check once. */
typedef struct vigil_args vigil_args;

#define VIGIL_ARGS_MAX_KEYS 64
/* The engine accepts at most 64 MiB in a message (rpc.max_message_bytes). */
#define VIGIL_ARGS_MAX_BYTES ((size_t)64 << 20)

VIGIL_CLIENT_API vigil_args *vigil_args_new(void);
VIGIL_CLIENT_API void vigil_args_free(vigil_args *args);
VIGIL_CLIENT_API int vigil_args_str(vigil_args *args, const char *key, const char *value);
/* A string of len bytes (it need not be NUL-terminated). */
VIGIL_CLIENT_API int vigil_args_strn(vigil_args *args, const char *key, const char *value,
                                     size_t len);
VIGIL_CLIENT_API int vigil_args_uint(vigil_args *args, const char *key, uint64_t value);
VIGIL_CLIENT_API int vigil_args_int(vigil_args *args, const char *key, int64_t value);
VIGIL_CLIENT_API int vigil_args_double(vigil_args *args, const char *key, double value);
VIGIL_CLIENT_API int vigil_args_bool(vigil_args *args, const char *key, bool value);
/* An array of count strings: argv, patterns. */
VIGIL_CLIENT_API int vigil_args_str_array(vigil_args *args, const char *key,
                                          const char *const *items, size_t count);
/* A map of count string pairs: env. */
VIGIL_CLIENT_API int vigil_args_str_map(vigil_args *args, const char *key,
                                        const char *const *names, const char *const *values,
                                        size_t count);
/* For any other value: adds key and returns the packer, with which the
 * caller packs exactly one msgpack value. NULL when the key is refused. */
VIGIL_CLIENT_API msgpack_packer *vigil_args_value(vigil_args *args, const char *key);

/* --- results ---------------------------------------------------------- */

/* A successful answer: map is the result map. Free with vigil_result_free
 * (a zeroed vigil_result may be freed too). */
typedef struct vigil_result {
  const msgpack_object *map;
  struct vigil_message *message_; /* the bytes map points into (private) */
} vigil_result;

VIGIL_CLIENT_API void vigil_result_free(vigil_result *result);
/* The value under key, NULL when absent. nil is returned as a nil object. */
VIGIL_CLIENT_API const msgpack_object *vigil_result_get(const vigil_result *result,
                                                        const char *key);
/* The string under key, NULL when absent, nil or not a string. */
VIGIL_CLIENT_API const char *vigil_result_str(const vigil_result *result, const char *key);
/* The integer under key into *out; false (and *out untouched) when absent,
 * nil, not an integer or outside int64_t. */
VIGIL_CLIENT_API bool vigil_result_int(const vigil_result *result, const char *key,
                                       int64_t *out);
VIGIL_CLIENT_API bool vigil_result_bool(const vigil_result *result, const char *key,
                                        bool *out);

/* The same for any map or string under a result or notification (an
 * "event" map, a line): objects this library hands out keep their strings
 * NUL-terminated, so vigil_object_str gives a C string. */
VIGIL_CLIENT_API const msgpack_object *vigil_object_get(const msgpack_object *map,
                                                        const char *key);
VIGIL_CLIENT_API const char *vigil_object_str(const msgpack_object *object);
VIGIL_CLIENT_API bool vigil_object_int(const msgpack_object *object, int64_t *out);

/* --- notifications ---------------------------------------------------- */

/* What a notification is about (its "type" on the wire). */
typedef enum vigil_notification_kind {
  VIGIL_NOTIFICATION_OUTPUT,
  VIGIL_NOTIFICATION_EXIT,         /* the five endings: exactly one per monitor */
  VIGIL_NOTIFICATION_STOPPED,
  VIGIL_NOTIFICATION_TIMED_OUT,
  VIGIL_NOTIFICATION_IDLE_TIMEOUT,
  VIGIL_NOTIFICATION_OVERLOAD,
  VIGIL_NOTIFICATION_DROPPED,      /* notifications lost, counted in dropped */
  VIGIL_NOTIFICATION_POLICY_ERROR,
  VIGIL_NOTIFICATION_ENGINE_ERROR, /* [2, "vigil.error", [code, message]]: error is set */
  VIGIL_NOTIFICATION_OTHER,        /* a type this library does not know: see type */
} vigil_notification_kind;

/* How the engine routed it (its "mode"): inject idle ones between turns,
 * live_safe ones at the agent's next safe point. */
typedef enum vigil_delivery {
  VIGIL_DELIVERY_IDLE,
  VIGIL_DELIVERY_LIVE_SAFE,
} vigil_delivery;

/* One line of output (docs/protocol.md, monitor_output). */
typedef struct vigil_line {
  uint64_t seq;      /* per monitor, both streams */
  const char *stream; /* "stdout" or "stderr" */
  const char *text;  /* sanitized, valid UTF-8 */
  int64_t pattern;   /* the index of the pattern that matched it, -1 for none */
  bool truncated;    /* cut at monitor.line_max_bytes */
} vigil_line;

/* A notification (docs/protocol.md, section 6). A string the engine sent
 * as nil is NULL; an integer it sent as nil leaves its has_ flag false. */
typedef struct vigil_notification {
  vigil_notification_kind kind;
  const char *type;          /* as sent: "output", "exit", ...; "vigil.error" */
  bool ending;               /* one of the five endings */
  uint64_t seq;              /* per session; the resume cursor (last_seq) */
  const char *session;
  const char *epoch;
  const char *monitor_id;    /* NULL for dropped */
  const char *label;
  vigil_delivery delivery;
  const char *text;          /* the envelope to show the agent, as is */
  const char *state;
  uint64_t batch;            /* output only; 0 otherwise */
  uint64_t suppressed;       /* lines withheld by the rate limit */
  bool has_exit_code;
  int64_t exit_code;
  const char *signal;        /* the signal that ended it ("SIGKILL"), NULL for none */
  int signal_number;         /* that signal's number here, 0 for none or unknown */
  bool has_duration_ms;
  uint64_t duration_ms;
  const char *reason;
  const char *exceeded;
  bool has_dropped;
  uint64_t dropped;          /* dropped: how many were lost (when known) */
  const char *at;
  const vigil_line *lines;   /* nlines lines: the batch, or an ending's last lines */
  size_t nlines;
  /* Notifications this client dropped from its own queue just before this
   * one, because VIGIL_CLIENT_LIMIT_QUEUED_NOTIFICATIONS were waiting. */
  uint64_t lost_before;
  vigil_error error;         /* ENGINE_ERROR only: the engine's code and message */
  const msgpack_object *raw; /* the whole map, for keys not above (incidents, ...) */
  struct vigil_message *message_; /* private */
} vigil_notification;

/* Frees what n holds (a zeroed vigil_notification may be freed too). */
VIGIL_CLIENT_API void vigil_notification_free(vigil_notification *n);

/* The i-th notification of a result's "notifications" list (cursor_take,
 * notifications_since: the session's model cursors, docs/protocol.md),
 * typed as a pushed one: 1 with *n filled (n owns a copy: it outlives
 * result; free it with vigil_notification_free), 0 when i is past the
 * last, -1 with err set when the result has no such list
 * (VIGIL_ERR_USAGE) or the entry is not a notification map
 * (VIGIL_ERR_PROTOCOL). */
VIGIL_CLIENT_API int vigil_result_notification(const vigil_result *result, size_t i,
                                               vigil_notification *n, vigil_error *err);

/* --- the connection --------------------------------------------------- */

typedef struct vigil_client vigil_client;

/* Wait without a bound (the timeout_ms of the calls below). */
#define VIGIL_CLIENT_FOREVER (-1)

/* Writes the engine's default socket path into buf, as vigild --listen
 * chooses it: $XDG_RUNTIME_DIR/vigil/vigil.sock when XDG_RUNTIME_DIR is set
 * and not empty, else /tmp/vigil-$EUID/vigil.sock. 0, or -1 when it does
 * not fit in size bytes. */
VIGIL_CLIENT_API int vigil_client_default_socket_path(char *buf, size_t size);

/* Connects to a running engine's socket (NULL: the default path). Before a
 * byte is sent it checks that the engine runs as this user or root, and
 * refuses it otherwise (whoever owns the socket's directory could be an
 * impostor collecting what is sent). NULL on failure, with err set:
 * VIGIL_ERR_NO_ENGINE when nothing listens there. */
VIGIL_CLIENT_API vigil_client *vigil_client_connect(const char *socket_path, vigil_error *err);

/* Starts `vigild --stdio` as a child (vigild_path NULL: "vigild" found
 * through PATH), with --config config_path unless it is NULL (without one
 * the engine fails closed: every start is denied), then extra_args (NULL,
 * or a NULL-terminated list, e.g. "--state-dir", dir). The engine's log
 * goes to the host's stderr: its warnings and errors, unless VIGIL_LOG in
 * the environment asks for more (VIGIL_LOG=info). Waits (at most VIGIL_CLIENT_SPAWN_WAIT_MS) for
 * its first answer, so a config it refuses is reported here, with its exit
 * status. NULL on failure, with err set. */
VIGIL_CLIENT_API vigil_client *vigil_client_spawn(const char *vigild_path,
                                                  const char *config_path,
                                                  const char *const *extra_args,
                                                  vigil_error *err);
#define VIGIL_CLIENT_SPAWN_WAIT_MS 30000

/* Closes the connection and frees c. A spawned engine reads the end of its
 * input as the signal to shut down: it stops its monitors (SIGTERM, then
 * SIGKILL after monitor.kill_grace_ms) and exits; this waits for that and
 * returns its exit status (0 after a normal shutdown, 128+N when killed by
 * signal N; -1 when the host reaped it first, e.g. with SIGCHLD ignored).
 * 0 for a socket connection and for NULL. */
VIGIL_CLIENT_API int vigil_client_close(vigil_client *c);

/* The descriptor to poll for reading (non-blocking; the library reads and
 * writes it, never the host). */
VIGIL_CLIENT_API int vigil_client_fd(const vigil_client *c);

/* The spawned engine's process id, -1 for a socket connection. */
VIGIL_CLIENT_API long vigil_client_engine_pid(const vigil_client *c);

/* The bounds a client keeps, each with a default and a range. */
typedef enum vigil_client_limit {
  /* The largest message accepted from the engine: past it the connection
   * is given up (VIGIL_ERR_PROTOCOL). 16 MiB (the engine's default
   * rpc.max_output_bytes); 1024..1 GiB. */
  VIGIL_CLIENT_LIMIT_MESSAGE_BYTES,
  /* The largest request sent: a larger one is refused before a byte
   * leaves (VIGIL_ERR_USAGE). 1 MiB (the engine's default
   * rpc.max_message_bytes, which it must not exceed); 64..64 MiB. */
  VIGIL_CLIENT_LIMIT_REQUEST_BYTES,
  /* Notifications queued and not yet taken: past it the oldest is
   * dropped and counted in the next one's lost_before. 4096; 1..1048576. */
  VIGIL_CLIENT_LIMIT_QUEUED_NOTIFICATIONS,
} vigil_client_limit;

/* Sets a limit. 0, or -1 (VIGIL_ERR_USAGE, nothing changed) for a value
 * out of its range: "usage: max_message_bytes must be 1024..1073741824,
 * got 12". */
VIGIL_CLIENT_API int vigil_client_set_limit(vigil_client *c, vigil_client_limit limit,
                                            size_t value, vigil_error *err);
VIGIL_CLIENT_API size_t vigil_client_get_limit(const vigil_client *c, vigil_client_limit limit);

/* At most this many requests may await their answer on one client. */
#define VIGIL_CLIENT_PENDING_MAX 1024

/* --- calls ------------------------------------------------------------ */

/* Sends method with args (NULL: none) and waits up to timeout_ms (or
 * VIGIL_CLIENT_FOREVER) for its answer, queueing the notifications that
 * arrive meanwhile. 0 with *result filled (result may be NULL when the
 * host does not need it), or -1 with err set: the engine's error
 * (code >= 0), or the library's. On VIGIL_ERR_TIMEOUT the request is
 * given up: its answer is discarded when it comes. monitor_start and
 * process_run without a "cwd" are sent the host's working directory, so a
 * command runs where its caller is, as from a shell ("." asks for the
 * engine's own). */
VIGIL_CLIENT_API int vigil_client_call(vigil_client *c, const char *method,
                                       const vigil_args *args, int timeout_ms,
                                       vigil_result *result, vigil_error *err);

/* The same in two halves, for a host that does not wait: sends the
 * request and returns its msgid in *msgid... */
VIGIL_CLIENT_API int vigil_client_request(vigil_client *c, const char *method,
                                          const vigil_args *args, uint32_t *msgid,
                                          vigil_error *err);
/* ...and takes its answer, waiting up to timeout_ms (0: only what has been
 * read). 1 with *result filled; 0 when it has not come (it stays pending);
 * -1 with err set when the engine answered with an error (the request is
 * done) or the connection failed. */
VIGIL_CLIENT_API int vigil_client_response(vigil_client *c, uint32_t msgid, int timeout_ms,
                                           vigil_result *result, vigil_error *err);

/* Sends method as a msgpack-rpc notification: no answer; a failure comes
 * back as an ENGINE_ERROR notification. */
VIGIL_CLIENT_API int vigil_client_notify(vigil_client *c, const char *method,
                                         const vigil_args *args, vigil_error *err);

/* Reads whatever the descriptor has, without blocking, and sorts it into
 * answers and queued notifications. For a host that polls
 * vigil_client_fd. 0, or -1 with err set when the connection has failed
 * (what was read before stays to be taken). */
VIGIL_CLIENT_API int vigil_client_read(vigil_client *c, vigil_error *err);

/* The next notification, waiting up to timeout_ms (0: only what is
 * queued or readable now). 1 with *n filled (free it with
 * vigil_notification_free), 0 when none came in time, -1 with err set when
 * the connection has failed and nothing is left queued. */
VIGIL_CLIENT_API int vigil_client_next_notification(vigil_client *c, int timeout_ms,
                                                    vigil_notification *n, vigil_error *err);

/* How many notifications are queued: a host that polls the descriptor
 * takes these first (they were read during a call and will not make the
 * descriptor readable again). */
VIGIL_CLIENT_API size_t vigil_client_queued(const vigil_client *c);

#ifdef __cplusplus
}
#endif

#endif /* VIGIL_CLIENT_H */
