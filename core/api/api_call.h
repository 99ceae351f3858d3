/*
 * Inside the msgpack-rpc front end (api*.c): a connection (Conn), a request
 * answered later (Waiter), and one method call in progress (Call), with the
 * helpers every method family shares. Each api_*.c file holds one family of
 * docs/protocol.md section 5: api_info.c (ping, api_info, config_reload),
 * api_sessions.c, api_monitors.c (start, stop, list, status), api_output.c
 * (output, logs, events), api_wait.c (monitor_wait and every waiter),
 * api_run.c (process_run), api_cursor.c (the model cursors), api_groups.c
 * (the config's named groups), api_ignore.c (silenced fingerprints); api.c
 * has the
 * method table, the dispatch and the transports.
 */
#ifndef VIGIL_API_CALL_H
#define VIGIL_API_CALL_H

#include <msgpack.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "api/api.h"
#include "api/args.h"
#include "rpc/channel.h"
#include "rpc/server.h"
#include "session/session_cursor.h"

#define API_SESSION_NAME_MAX SESSION_NAME_MAX
#define API_WAIT_MAX_MS 3600000

typedef struct Conn Conn;
typedef struct Waiter Waiter;

struct Api {
  Engine *engine;
  RpcServer *server;
  Conn *conns;
  size_t nconns;
  size_t nadopted;         /* of which virtual connections (api_adopt): not counted
                              against rpc.max_connections */
  uint64_t conns_refused;  /* connections closed at once: rpc.max_connections reached */
  struct LogRepeat *refusals; /* their log lines, once a window (logrepeat.h) */
  bool stdio_mode;         /* the stdio connection closing ends the engine */
  /* api_info's "nats" (api_set_nats_info); NULL: nil. */
  void (*nats_info)(void *data, msgpack_packer *pk);
  void *nats_info_data;
};

/* One connection: its channel, its seat in the engine, what waits on it. */
struct Conn {
  Api *api;
  RpcChannel *ch;
  Seat *client;
  Waiter *waiters;
  size_t npending;         /* its waiters, bounded by rpc.max_pending */
  bool adopted;            /* a virtual connection (api_adopt) */
  Conn *prev, *next;
};

typedef enum {
  kWaitEvent,    /* monitor_wait */
  kWaitStop,     /* monitor_stop, answered when the process is gone */
  kWaitRun,      /* foreground process_run */
  kWaitCursor,   /* cursor_take with wait_ms, answered by a push or its timeout */
  kWaitStart,    /* monitor_start or a background process_run through a
                    keeper, answered at its hello */
} WaitKind;

/* A request answered later. It hangs on its connection and on its record
 * (the record's `watchers`), or, for a cursor_take, on its session's
 * cursor waiters (`cursor`; rec is NULL). */
struct Waiter {
  WaitKind kind;
  Conn *conn;
  uint32_t msgid;
  bool is_request;
  MonRecord *rec;
  unsigned type_mask;       /* kWaitEvent: which event types answer it */
  uint64_t since_event_id;
  bool for_output;          /* kWaitEvent: answered by a line with seq > since_sequence */
  bool for_ready;           /* kWaitEvent: for "ready" (its answer says ready, and the tail) */
  uint64_t since_sequence;
  uint64_t stdout_lines;    /* kWaitRun; kWaitStart of a process_run */
  bool start_as_run;        /* kWaitStart: answered as a background process_run */
  char *note;               /* kWaitRun, kWaitStart: the start's note (owned), or NULL */
  SessionCursorWaiter *cursor; /* kWaitCursor: NULL once its session let it go */
  uv_timer_t timer;         /* kWaitEvent, kWaitCursor: the timeout */
  Waiter *rec_next;
  Waiter *conn_next;
};

/* One call being handled: its arguments, the answer being packed, or its
 * error. A handler that answers later sets deferred and keeps msgid in a
 * Waiter. */
typedef struct {
  Engine *e;
  Conn *c;
  bool is_request;
  uint32_t msgid;
  Args args;
  msgpack_sbuffer sb;
  msgpack_packer pk;
  VigilError err;
  bool deferred;
} Call;

/* The handlers, by family. */
void api_ping(Call *call);
void api_info(Call *call);
void api_config_reload(Call *call);
void api_session_open(Call *call);
void api_session_state(Call *call);
void api_session_close(Call *call);
void api_session_list(Call *call);
void api_monitor_start(Call *call);
void api_monitor_stop(Call *call);
void api_monitor_list(Call *call);
void api_monitor_status(Call *call);
void api_monitor_output(Call *call);
void api_monitor_logs(Call *call);
void api_monitor_events(Call *call);
void api_monitor_wait(Call *call);
void api_process_run(Call *call);
void api_cursor_take(Call *call);
void api_cursor_get(Call *call);
void api_cursor_advance(Call *call);
void api_notifications_since(Call *call);
void api_group_up(Call *call);
void api_group_down(Call *call);
void api_group_list(Call *call);
void api_incident_ignore(Call *call);
void api_incident_ignored(Call *call);
void api_incident_unignore(Call *call);

/* --- shared by the handlers (api_call.c) --- */

/* The session a call acts on (its `session` argument or the current one). */
Session *api_session(Call *call);

/* The record named by the required argument key (monitor_id or
 * process_id), in the caller's session; another session's is not_found
 * like an unknown id. */
MonRecord *api_record(Call *call, const char *key);

/* Whether this connection may have one more slow request waiting
 * (rpc.max_pending); sets limit_exceeded when not. */
bool api_reserve_pending(Call *call);

/* Reads the fields of a start (monitor_fields.h) that `form` (kFormStart,
 * kFormRun) takes from the call's arguments into req (zeroed). */
int api_read_start(Call *call, unsigned form, StartRequest *req);

/* The engine's sessions counted, and the notifications they dropped. */
typedef struct {
  uint64_t sessions;
  uint64_t named;
  uint64_t dropped;
} SessionTally;

SessionTally api_tally_sessions(Engine *e);

/* Starts an answer for a deferred call: a fresh buffer and packer. */
void api_answer_begin(msgpack_sbuffer *sb, msgpack_packer *pk);

/* --- waiters (api_wait.c) --- */

/* A waiter on c (and on r's watchers, unless r is NULL). */
Waiter *api_wait_add(Conn *c, MonRecord *r, WaitKind kind, uint32_t msgid, bool is_request);
/* Unlinks and frees w (closing its timer). */
void api_wait_done(Waiter *w);
/* Answers w with sb's packed result or err, then retires it. */
void api_wait_answer_packed(Waiter *w, msgpack_sbuffer *sb, const VigilError *err);

/* The engine's hooks (api_wait.c). */
extern const EngineHooks api_engine_hooks;

/* Packers the waiters share with the handlers. */
void api_pack_stop(msgpack_packer *pk, const char *status, const Monitor *m);
void api_pack_start(msgpack_packer *pk, const Monitor *m, const char *note);
void api_pack_run(msgpack_packer *pk, MonRecord *r, uint64_t stdout_lines, const char *note);
void api_pack_wait(msgpack_packer *pk, const Event *ev, bool timed_out, const Monitor *m,
                   bool for_ready);

#endif
