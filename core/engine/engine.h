/*
 * The engine: everything vigild holds. The configuration in force, the
 * policies, the sessions, the seats (seat.h) and a record per monitor
 * tying it to its session. It knows no transport and no wire format: a
 * front end (api.c, for msgpack-rpc) drives it through the functions here,
 * holds a Seat per party it serves, and hears back through EngineHooks
 * (a monitor's events, new output, its end), as the engine itself hears
 * from its monitors through MonitorHooks. What waits on a monitor
 * (monitor_wait, a foreground process_run, a stop that answers once the
 * process is gone) is the front end's, hung on the record's `watchers`.
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

#include "engine/seat.h"
#include "engine/config.h"
#include "base/error.h"
#include "spec/gate.h"
#include "store/keepspec.h"
#include "monitor/monitor.h"
#include "engine/monitor_fields.h"
#include "session/session.h"
#include "store/statedir.h"
#include "base/version.h"

typedef struct PolicySet PolicySet;
typedef struct Engine Engine;
typedef struct MonRecord MonRecord;

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
 * engine_check_config. A denial the config decides says how to fix it
 * (config_hint.h), with how to reload the engine of pid reload_pid; 0
 * when no running engine would take a reload (the config's own monitors
 * at boot, --check-config). With req->env_denied "drop", first of all
 * (after monitor.enabled) the names of req->env that monitor.env_deny
 * refuses are removed from it, so the gates, the spawn and the start map
 * see only what passes, and plan's note names them. */
int engine_check_start(const VigilConfig *cfg, PolicySet *ps, const char *session,
                       StartRequest *req, long reload_pid, StartPlan *plan, VigilError *err);

/* Closes the plan's directory and frees its note (NULL when the caller took
 * it); harmless on a plan engine_check_start refused. */
void start_plan_free(StartPlan *plan);

struct MonRecord {
  Engine *engine;
  Monitor *monitor;
  char *policy;            /* the name of its policy (looked up per notification,
                              so a reload applies to new notifications) */
  char *start;             /* its start map (startmap.h): msgpack bytes, start_len
                              of them; NULL for one taken over from an older spec */
  size_t start_len;
  Session *session;        /* NULL once its session is gone (stopping, invisible) */
  MonRecord *prev, *next;  /* engine->records, newest first */
  void *watchers;          /* the front end's: what waits on this record (api's
                              waiters); NULL when nothing does */
  bool running;
  char *group;             /* the config group it was started for (engine_group.h),
                              or NULL */
  bool group_released;     /* group_down stopped it: no longer its entry's */
};

/* What the engine tells its front end, each with the ctx given to
 * engine_set_hooks. on_event, on_lines and on_forget are called only while
 * the record has watchers. */
typedef struct {
  void (*on_event)(void *ctx, MonRecord *r, const Event *ev);
  void (*on_lines)(void *ctx, MonRecord *r);      /* new output was read */
  void (*on_finished)(void *ctx, MonRecord *r);   /* the monitor ended */
  /* r is leaving its session (the session closed or the record is
   * forgotten): whatever waits on it is answered and r->watchers cleared. */
  void (*on_forget)(void *ctx, MonRecord *r);
  void (*on_shutdown)(void *ctx);                 /* stop accepting new work */
  /* r's start through a keeper is decided (monitor_starting was true when
   * engine_start returned): err NULL, it runs; else the start failed and
   * r is forgotten right after this call (whatever still waits on it is
   * answered by on_forget). Called whether or not r has watchers. */
  void (*on_started)(void *ctx, MonRecord *r, const VigilError *err);
} EngineHooks;

struct Engine {
  uv_loop_t *loop;
  VigilConfig config;
  char *config_path;       /* NULL: none (fail closed) */
  PolicySet *policies;     /* loaded on first use, replaced whole by a reload */
  uint64_t reloads;
  uint64_t started_ms;     /* clock_mono_ms() when made: api_info's uptime_ms */
  SessionRegistry *sessions;
  Seat *clients;         /* seat.h: one per front-end connection */
  MonRecord *records;
  size_t running;
  bool shutting_down;
  bool booting;            /* starting the config's monitors: a denial then
                              has no running engine to reload */
  const char *keeper_program; /* vigil-keeper, beside vigild; set with state */
  StateDir *state;         /* the state directory (docs/restart.md), locked and
                              open; NULL: none (--stdio without --state-dir,
                              --no-state). Borrowed: vigild opens it before the
                              config's monitors start and closes it after
                              engine_free, so it outlives every monitor */
  const EngineHooks *hooks; /* the front end's (engine_set_hooks); may be NULL */
  void *hooks_ctx;
  void (*on_drained)(Engine *e); /* shutdown done: every process gone */
  /* Silenced fingerprints (session_ignore.h): incidents they silenced,
   * and incident_ignore calls refused at incident.ignore_max. */
  uint64_t incidents_ignored;
  uint64_t ignores_refused;
  /* Told of every session made or going (engine_watch_sessions); NULL: none. */
  const SessionHooks *session_watch;
  void *session_watch_data;
};

/* Tells watch's on_create and on_destroy (borrowed; on_expire unused) of
 * every session made and destroyed from now on, whatever made it (a
 * host's open, a config's pinned session, a take-over): the fleet's
 * publisher taps them (docs/fleet.md). NULL stops telling. */
void engine_watch_sessions(Engine *e, const SessionHooks *watch, void *data);

/* Takes cfg (ownership) and config_path (copied, may be NULL). */
Engine *engine_new(uv_loop_t *loop, VigilConfig *cfg, const char *config_path);
/* Frees the engine. Its front end closes its clients first. */
void engine_free(Engine *e);

/* Gives the engine its front end's hooks (borrowed) and their ctx. */
void engine_set_hooks(Engine *e, const EngineHooks *hooks, void *ctx);

/* Starts the config's `monitors` that start at boot (those without a
 * group, and those with autostart), each in its (pinned) session. A failure
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

/* Loads, into ps, the config's default policy and every policy its monitors
 * name: a syntax error or a missing file is found at start, not at the first
 * notification. */
int engine_preload_policies(PolicySet *ps, const VigilConfig *cfg, VigilError *err);

/* vigild --check-config: the policies (engine_preload_policies, on a
 * throwaway policy set) and every
 * config monitor checked exactly as engine_start_config_monitors would
 * start it (every check of engine_start and monitor_start, the running
 * caps counted over the config's boot monitors), with nothing started; an
 * entry of a group is checked as group_up would check it, without the
 * caps (they depend on what runs when the group comes up). The
 * error is the one booting would report: the start's code and
 * "FILE: monitors[N] (label "L"): <the start's message>". Checks run
 * where the caller runs: its cwd, its PATH, its environment. */
int engine_check_config(const VigilConfig *cfg, VigilError *err);

/* Where vigil's own Lua modules and bundled policies are (datadir.h):
 * $VIGIL_DATA_DIR, else the install's share/vigil beside the executable,
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
/* Takes over a monitor an earlier engine started and left running (or
 * ended while no engine was there): back in its named session (made, and
 * lingering, if nobody has opened it yet), with its id, label and
 * patterns, reading its pipes from its keeper (docs/restart.md). keep
 * becomes the monitor's (on error it stays the caller's); po's descriptors
 * become the monitor's, and are closed on error. */
int engine_adopt(Engine *e, MonitorKeep *keep, const KeepSpec *ks, ProcAdoptOptions *po,
                 VigilError *err);

MonRecord *engine_find(Engine *e, Session *s, const char *id);

/* Counts of s's monitors. */
size_t engine_running_in(Engine *e, Session *s);

/* Stops s's monitors and deletes s (or, for a connection's anonymous
 * session, empties it). Returns how many running monitors were stopped. */
size_t engine_close_session(Engine *e, Session *s);

/* Stops s's monitors, which live on invisibly until their processes are
 * gone, forgets its ended ones, and deletes s (every client forgets it).
 * Returns how many running monitors were stopped. */
size_t engine_abandon_session(Engine *e, Session *s);

#endif
