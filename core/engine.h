/*
 * The engine: everything vigild holds. The configuration in force, the
 * sessions, the connections, and a record per monitor tying it to its
 * session, plus the requests waiting on a monitor (monitor_wait, a
 * foreground process_run, a monitor_stop that answers once the process is
 * gone). api.c reads and changes it through the functions here; the
 * transports (rpc/) reach it only through api.c.
 *
 * Ownership: a monitor belongs to exactly one session. Closing a session (or
 * the connection of an anonymous one) stops its monitors gracefully
 * (SIGTERM, then SIGKILL after monitor.kill_grace_ms); their records live on,
 * invisible, until the processes are gone, so nothing is left behind. A
 * session keeps at most monitor.max_ended_monitors ended monitors for
 * list/status/output; the oldest are forgotten first.
 */
#ifndef VIGIL_ENGINE_H
#define VIGIL_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "config.h"
#include "error.h"
#include "gate.h"
#include "monitor.h"
#include "policy.h"
#include "rpc/channel.h"
#include "rpc/server.h"
#include "session.h"

#define VIGIL_VERSION "0.1.0"
#define VIGIL_API_LEVEL 1
#define ENGINE_SESSIONS_PER_CONN 64

typedef struct Engine Engine;
typedef struct Conn Conn;
typedef struct MonRecord MonRecord;
typedef struct Waiter Waiter;

/* What a start asks for, from monitor_start, process_run or the config.
 * Every pointer is owned (start_request_free). */
typedef struct {
  Argv argv;               /* split command, explicit argv, or /bin/sh -c */
  bool shell;
  char *cwd;
  char **env;              /* "K=V", NULL-terminated */
  char *label;
  char *description;
  char **patterns;         /* NULL-terminated */
  size_t npatterns;
  MatchStreams match_streams;
  NotifyMode notify;
  DeliveryMode mode;
  char *policy;
  int64_t timeout_ms;      /* 0: the config's max_runtime_ms */
  bool persistent;
  int64_t idle_timeout_ms;
  int64_t memory_limit;
  double cpu_limit;
  char *stdin_data;        /* process_run */
  size_t stdin_len;
  bool process_run;        /* timeout_ms may exceed max_runtime_ms (process_run's own cap) */
} StartRequest;

void start_request_free(StartRequest *req);

/* What the checks of a start decided, for its spawn (engine_check_start).
 * Owned: start_plan_free. */
typedef struct {
  const char *policy_name; /* the request's or the config's; borrowed */
  ProcDir dir;             /* the cwd, opened and checked against workspace_roots */
  DeliveryMode mode;       /* the request's, live_safe made idle when not enabled */
  char *note;              /* what was adjusted (for the caller), or NULL */
} StartPlan;

/* The checks of a start that depend on the configuration and not on what
 * runs, in this order: monitor.enabled (disabled); the policy (loaded from
 * ps) and its gate, else monitor.allow_shell and the allowlist (denied);
 * env against monitor.env_deny / env_allow (denied, invalid_params for a
 * malformed name); persistent (denied); cwd opened and checked against
 * workspace_roots (invalid_params, denied). `session` names the session
 * for the policy's gate. On success plan holds the opened cwd; on error
 * nothing is held. engine_start runs these, then the running caps, then
 * monitor_start; vigild --check-config runs the same through
 * engine_check_config. */
int engine_check_start(const VigilConfig *cfg, PolicySet *ps, const char *session,
                       const StartRequest *req, StartPlan *plan, VigilError *err);

/* Closes the plan's directory and frees its note (NULL when the caller took
 * it); harmless on a plan engine_check_start refused. */
void start_plan_free(StartPlan *plan);

struct MonRecord {
  Engine *engine;
  Monitor *monitor;
  char *policy;            /* the name of its policy (looked up per notification,
                              so a reload applies to new notifications) */
  Session *session;        /* NULL once its session is gone (stopping, invisible) */
  MonRecord *prev, *next;  /* engine->records, newest first */
  Waiter *waiters;
  bool running;
};

struct Conn {
  Engine *engine;
  RpcChannel *ch;
  Session *anon;
  SessionAttachment *anon_att;
  struct {
    Session *s;
    SessionAttachment *att;
  } opened[ENGINE_SESSIONS_PER_CONN];
  size_t nopened;
  Session *current;        /* the session calls without `session` act on */
  Waiter *waiters;
  size_t npending;
  Conn *prev, *next;
};

typedef enum {
  kWaitEvent,    /* monitor_wait */
  kWaitStop,     /* monitor_stop, answered when the process is gone */
  kWaitRun,      /* foreground process_run */
} WaitKind;

struct Waiter {
  WaitKind kind;
  Conn *conn;
  uint32_t msgid;
  bool is_request;
  MonRecord *rec;
  unsigned type_mask;       /* kWaitEvent: which event types answer it */
  uint64_t since_event_id;
  bool for_output;          /* kWaitEvent: answered by a line with seq > since_sequence */
  uint64_t since_sequence;
  uint64_t stdout_lines;    /* kWaitRun */
  uv_timer_t timer;         /* kWaitEvent: the timeout */
  bool timer_armed;
  Waiter *rec_next;
  Waiter *conn_next;
};

struct Engine {
  uv_loop_t *loop;
  VigilConfig config;
  char *config_path;       /* NULL: none (fail closed) */
  PolicySet *policies;     /* loaded on first use, replaced whole by a reload */
  uint64_t reloads;
  SessionRegistry *sessions;
  RpcServer *server;
  Conn *conns;
  MonRecord *records;
  size_t running;
  bool shutting_down;
  bool stdio_mode;         /* the stdio connection closing ends the engine */
  size_t nconns;
  uint64_t conns_refused;  /* connections closed at once: rpc.max_connections reached */
  void (*on_drained)(Engine *e); /* shutdown done: every process gone */
};

/* Takes cfg (ownership) and config_path (copied, may be NULL). */
Engine *engine_new(uv_loop_t *loop, VigilConfig *cfg, const char *config_path);
void engine_free(Engine *e);

/* Starts the config's `monitors`, each in its (pinned) session. A failure
 * returns the error naming the monitor as engine_check_config does (vigild
 * then shuts down, stopping those already started). */
int engine_start_config_monitors(Engine *e, VigilError *err);

/* Reloads the config file and the policies atomically: the new config and a
 * new policy set (the default policy and every policy a monitor uses must
 * load) replace the old ones only when all of it is good; otherwise err
 * (invalid_params naming file, line or field) and nothing changes. Running
 * monitors keep running with their settings; new monitors and new
 * notifications use the new ones. */
int engine_reload(Engine *e, VigilError *err);

/* A policy set for a config: vigil's lua/ and plugins/, then the config's
 * plugin_paths (none when cfg is NULL). */
PolicySet *engine_policies_for(const VigilConfig *cfg);

/* What the engine does with a policy's format: the body, checked and escaped
 * (envelope_check_policy_body), framed with a nonce drawn after the policy
 * ran. Returns 0 with the envelope appended to text, 1 when the policy has no
 * format (nothing appended), -1 with err when the call or the check failed. */
int engine_policy_text(Policy *p, const Notification *n, StrBuf *text, VigilError *err);

/* Loads, into ps, the config's default policy and every policy its monitors
 * name: a syntax error or a missing file is found at start, not at the first
 * notification. */
int engine_preload_policies(PolicySet *ps, const VigilConfig *cfg, VigilError *err);

/* vigild --check-config: the policies (engine_preload_policies, on a
 * throwaway policy set) and every
 * config monitor checked exactly as engine_start_config_monitors would
 * start it (every check of engine_start and monitor_start, the running
 * caps counted over the config's monitors), with nothing started. The
 * error is the one booting would report: the start's code and
 * "FILE: monitors[N] (label "L"): <the start's message>". Checks run
 * where the caller runs: its cwd, its PATH, its environment. */
int engine_check_config(const VigilConfig *cfg, VigilError *err);

/* Where vigil's own Lua modules and bundled policies are: $VIGIL_DATA_DIR,
 * else the source tree it was built from. */
const char *engine_data_dir(void);

/* Stops every monitor (graceful, or SIGKILL at once when hard), stops
 * accepting, and calls on_drained once every process is gone. */
void engine_shutdown(Engine *e, bool hard);

/* Starts a monitor in session s after every gate and bound check. On
 * success *note is set to a message for the caller (or NULL); owned. */
MonRecord *engine_start(Engine *e, Session *s, StartRequest *req, char **note, VigilError *err);

/* The record of id visible from session s, or NULL (another session's
 * monitors are invisible: not_found, exactly like an unknown id). */
MonRecord *engine_find(Engine *e, Session *s, const char *id);

/* Counts of s's monitors. */
size_t engine_running_in(Engine *e, Session *s);

/* Stops s's monitors and deletes s (or, for a connection's anonymous
 * session, empties it). Returns how many running monitors were stopped. */
size_t engine_close_session(Engine *e, Session *s);

/* Waiters. engine_wait_add links a waiter; engine_wait_done unlinks and
 * frees it (closing its timer). */
Waiter *engine_wait_add(Conn *c, MonRecord *r, WaitKind kind, uint32_t msgid, bool is_request);
void engine_wait_done(Waiter *w);

/* Connections (api.c calls these from the channel handlers). */
Conn *engine_conn_open(Engine *e, RpcChannel *ch);
void engine_conn_close(Conn *c);
/* The session a call acts on: `name` when given (one this connection opened,
 * else not_found), else the current one. */
Session *engine_conn_session(Conn *c, const char *name, VigilError *err);
/* Attaches c to s (session_open). */
int engine_conn_attach(Conn *c, Session *s, bool has_last_seq, uint64_t last_seq,
                       VigilError *err);

/* Hooks api.c provides: answering waiters when something happens. */
void api_on_event(Engine *e, MonRecord *r, const Event *ev);
void api_on_finished(Engine *e, MonRecord *r);
void api_on_lines(Engine *e, MonRecord *r);
void api_cancel_waiter(Waiter *w); /* the monitor went away: answer what can be */

#endif
