/*
 * One monitored process, from start to its ending notification: the child
 * (proc.c), its lines (linebuf.c) in the ring (ring.c) and its raw bytes in
 * the captures (capture.c), the pattern set (match.c), the batch window
 * (batch.c), the rate limit (ratelimit.c), the event log (eventlog.c), and
 * the state machine with the idle timeout and the runtime cap.
 *
 * What it produces goes out through MonitorHooks: notifications (ownership
 * passes to the hook), events as they are logged, and a last call when the
 * monitor has finished. Rendering text, sessions and queues are the callers'
 * business; this module never includes rpc or Lua headers.
 *
 * Order guarantees: output notifications leave in batch order; the ending
 * notification leaves last, after the final batch (which holds the partial
 * last line), and is never rate-limited; exactly one ending notification per
 * monitor (none when notify is "none").
 *
 * Timers exist only while something is pending: an open batch, a stop's
 * grace, the idle timeout, the runtime cap, the stall notice
 * (quiet_after_ms, monitor_quiet.c). A quiet monitor with none of them
 * arms nothing.
 */
#ifndef VIGIL_MONITOR_H
#define VIGIL_MONITOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "monitor/monitor_keep.h"
#include "pipeline/capture.h"
#include "base/error.h"
#include "pipeline/eventlog.h"
#include "pipeline/incidentlog.h"
#include "spec/monitor_defs.h"
#include "pipeline/notification.h"
#include "proc/proc.h"
#include "pipeline/ring.h"
#include "spec/settings.h"
#include "source/filesrc.h"
#include "source/wssrc.h"

#define MONITOR_IDLE_TIMEOUT_MAX_MS 3600000
#define MONITOR_LABEL_MAX 128
#define MONITOR_DESCRIPTION_MAX 1024
#define MONITOR_READY_TIMEOUT_DEFAULT_MS 60000
#define MONITOR_READY_TIMEOUT_MAX_MS 3600000
#define MONITOR_HEALTH_INTERVAL_MIN_MS 100
#define MONITOR_HEALTH_INTERVAL_MAX_MS 3600000
#define MONITOR_HEALTH_FAILURES_DEFAULT 3
#define MONITOR_HEALTH_FAILURES_MAX 100

typedef struct Monitor Monitor;

typedef struct {
  char *const *argv;          /* what to run (already split or shell-wrapped) */
  const char *cwd;            /* NULL: the engine's; unused when dir is set */
  const ProcDir *dir;         /* the opened cwd (proc.h); NULL: cwd is opened */
  const char *search_path;    /* where a bare argv[0] is found (proc.h); NULL: PATH */
  const char *const *env_inherit; /* the engine's variables the child gets
                                 (childenv.h); NULL: the default list */
  char *const *env_extra;     /* "K=V", NULL-terminated; may be NULL */
  bool line_buffered;         /* the child's stdout line-buffered (childenv.h) */
  const char *label;          /* NULL: the monitor id */
  const char *description;    /* may be NULL */
  const char *const *patterns;
  size_t npatterns;
  bool builtin_patterns;      /* patterns not given: the built-in crash set (patterns ignored) */
  bool incidents;             /* assemble incidents and coalesce them */
  EnvelopeStyle envelope;
  MatchStreams match_streams;
  NotifyMode notify;
  DeliveryMode mode;
  int64_t timeout_ms;         /* 0: settings.max_runtime_ms */
  bool persistent;            /* no runtime cap */
  int64_t idle_timeout_ms;    /* 0: off; at most MONITOR_IDLE_TIMEOUT_MAX_MS */
  int64_t quiet_after_ms;     /* 0: off; else MONITOR_QUIET_AFTER_MIN_MS..MAX_MS */
  RestartPolicy restart;      /* kRestartNo: ends when its program ends */
  int64_t max_restarts;       /* restarts in a row; 0: MONITOR_MAX_RESTARTS_DEFAULT */
  int64_t restart_backoff_ms; /* the first delay of a row; negative: the default */
  uint64_t restarts;          /* restarts so far (a monitor taken over); else 0 */
  uint64_t restarts_in_row;
  int64_t run_started_at;     /* wall ms the running program started; 0: the first */
  int64_t memory_limit;       /* bytes; 0: none */
  double cpu_limit;           /* cores; 0: none */
  const char *stdin_data;     /* NULL: /dev/null */
  size_t stdin_len;
  const char *keeper_program; /* NULL: the engine is the child's parent; else
                                 vigil-keeper starts it (docs/restart.md) and
                                 its spools and socket go in monitors_fd */
  int monitors_fd;            /* the state directory's monitors/ (with a keeper) */
  /* A file source (docs/sources.md) in place of argv: no process; the
   * file's lines are the stdout stream. NULL: a process. */
  const char *source_file;    /* absolute */
  FileFrom source_from;
  uint64_t source_offset;     /* kFileFromOffset */
  const char *const *workspace_roots; /* real paths the file must lie under */
  size_t nroots;
  const char *source_ws;      /* a WebSocket source (wssrc.h) in place of argv; NULL: none */
  /* Readiness and health (monitor_ready.c, docs/readiness.md): at most one
   * of ready_log, ready_tcp and ready_http. */
  const char *ready_log;      /* a regex on output lines; NULL: none */
  int64_t ready_tcp;          /* a loopback port; 0: none */
  const char *ready_http;     /* an http:// URL on loopback; NULL: none */
  const char *ready_status;   /* http: "200..399" (the default when NULL) or "204" */
  int64_t ready_timeout_ms;   /* 0: MONITOR_READY_TIMEOUT_DEFAULT_MS */
  int64_t health_interval_ms; /* tcp, http: once ready, probe this often; 0: never */
  int64_t health_failures;    /* failures in a row that make it unhealthy; 0: the default */
  int64_t ready_at;           /* a monitor taken over: wall ms it became ready; 0: not */
} MonitorSpec;

typedef struct {
  /* A notification is ready; the hook owns it from now on. */
  void (*on_notification)(void *data, Monitor *m, Notification *n);
  /* An event was logged (after it is in monitor_events). May be NULL. */
  void (*on_event)(void *data, Monitor *m, const Event *ev);
  /* The process is gone and the ending notification has been handed over.
   * The monitor stays readable until monitor_free. May be NULL. */
  void (*on_finished)(void *data, Monitor *m);
  /* A read added lines to the ring (called once per read, not per line).
   * May be NULL. */
  void (*on_lines)(void *data, Monitor *m);
  /* Whether an incident of fingerprint fp is silenced (its session's
   * ignores, session_ignore.h): then it is logged and counted, never
   * notified. Asked once per incident. May be NULL: nothing is. */
  bool (*is_ignored)(void *data, Monitor *m, uint64_t fp);
  /* A start through a keeper (monitor_starting was true) is decided: err
   * NULL, the program runs (monitor_pid is its pid now); else why it did
   * not, and the caller must monitor_free m (nothing of it is left but
   * the Monitor: the keeper is killed, its directory goes with m). Not
   * called for a restart's keeper (a failed restart ends the monitor,
   * failed). May be NULL. */
  void (*on_started)(void *data, Monitor *m, const VigilError *err);
} MonitorHooks;

typedef struct {
  uint64_t lines;           /* lines read, both streams */
  uint64_t matched;
  uint64_t unmatched;
  uint64_t dropped;         /* lines evicted from the ring */
  uint64_t suppressed;      /* lines withheld (by the rate limit, or while an
                               overloaded monitor is being stopped); every one is
                               reported in some notification's `suppressed` */
  uint64_t muted;           /* lines not delivered because output was muted after
                               the monitor's ending (overload) notification; no
                               notification can report these */
  uint64_t notifications;   /* notifications handed over */
  uint64_t stdout_bytes;
  uint64_t stderr_bytes;
  uint64_t truncated_lines; /* lines cut at line_max_bytes */
  uint64_t discarded_bytes; /* bytes past line_max_bytes */
  uint64_t match_errors;    /* lines where a pattern hit a limit */
  uint64_t capture_evicted; /* raw bytes evicted from the captures, both streams */
  uint64_t events_dropped;  /* events dropped from the event log */
  uint64_t policy_dropped;  /* notifications a policy's route dropped */
  uint64_t incidents;       /* incidents assembled */
  uint64_t incidents_coalesced; /* of those, counted as repeats instead of notified */
  uint64_t incidents_withheld;  /* withheld by the rate limit or while muted */
  uint64_t incidents_dropped;   /* in notifications a policy's route dropped */
  uint64_t incidents_ignored;   /* silenced by an ignored fingerprint: logged, not notified */
  uint64_t incidents_forgotten; /* records gone from monitor_output's incident history
                                   for room (incident.history_max) */
  uint64_t fingerprints_evicted; /* fingerprints forgotten for room
                                    (incident.fingerprints_max) */
  uint64_t state_unkept_bytes;  /* output bytes not kept in the state directory
                                   (its spool broke: no room, or its file cut
                                   short), both streams */
  uint64_t state_unkept_events; /* events not kept there, for the same reasons */
} MonitorCounters;

/* The incident record of id (monitor_output {incident}), or NULL. */
const IncidentRecord *monitor_incident(const Monitor *m, uint64_t id);

/* A monitor's file source (monitor_source.c): false for a process; else
 * the path as given (*path), its counters and the offset read up to (the
 * last known, once ended). */
bool monitor_file_source(const Monitor *m, const char **path, FileSourceCounters *counters,
                         uint64_t *offset);
/* A monitor's WebSocket source: false for anything else; else its URL and
 * counters (the last known, once ended). */
bool monitor_ws_source(const Monitor *m, const char **url, WsSourceCounters *counters);
/* How many incident records the monitor keeps (its incident.history_max). */
size_t monitor_incident_history_max(const Monitor *m);

/* Validates spec against settings, compiles patterns, spawns the child and
 * logs the `started` event. Every check runs before the spawn, so an error
 * leaves no process and no monitor. Errors: invalid_params (naming the
 * argument, bound and value), limit_exceeded, invalid_pattern,
 * command_not_found, spawn_failed. `settings` is copied. */
Monitor *monitor_start(uv_loop_t *loop, const VigilSettings *settings, const MonitorSpec *spec,
                       const MonitorHooks *hooks, void *data, VigilError *err);

/* Keeps the built-in crash patterns compiled under settings' limits until
 * the next call or monitor_builtin_release: every start with them then
 * shares that compile (match.h) instead of paying it, some milliseconds,
 * inside a loop turn when no running monitor holds it. The engine calls it
 * at its start and at each reload. */
void monitor_builtin_keep(const VigilSettings *settings);
void monitor_builtin_release(void);

/* Every check monitor_start makes before it spawns, with the same errors,
 * and nothing started (vigild --check-config): the spec's bounds, the
 * settings, the patterns compiled, the limits, the directory and the
 * program looked up. Returns 0 or -1 with err set. */
int monitor_check(const VigilSettings *settings, const MonitorSpec *spec, VigilError *err);

/* What monitor_stop did. */
typedef enum {
  kMonitorStopping = 0,   /* a stop was started; the state becomes `stopped`
                             when the process is gone */
  kMonitorStopAlready,    /* the monitor had ended, or something is already ending
                             it and this stop asked for nothing sooner */
  kMonitorStopExited,     /* its process exited by itself; the monitor is only
                             reading what is left in its pipes */
  kMonitorStopHastened,   /* something is already ending it and this stop asked
                             for a sooner SIGKILL: its signal was sent and the
                             deadline moved; the first cause still names the
                             ending */
} MonitorStopResult;

/* monitor_stop's grace_ms for a stop that never sends SIGKILL by itself. */
#define MONITOR_GRACE_NEVER INT64_MAX

/* Stops the process group: `sig` (0: SIGTERM), then SIGKILL after grace_ms
 * (negative: settings.kill_grace_ms; MONITOR_GRACE_NEVER: never). A stop
 * while one is under way goes through when it is stronger (proc_stop). */
MonitorStopResult monitor_stop(Monitor *m, int sig, int64_t grace_ms);

/* Counts a notification of this monitor that a policy's route dropped
 * (never an ending one: the caller checks). What it would have reported
 * (its withheld lines, its incidents, its counts) is carried to the next
 * notification, so nothing is lost silently. Call before freeing n. */
void monitor_count_policy_drop(Monitor *m, const Notification *n);

/* Frees the monitor. A still-running child is killed (SIGKILL to the group)
 * without further notifications. */
void monitor_free(Monitor *m);

/* Takes over a monitor an earlier engine started (docs/restart.md): spec
 * as its start had it, its id and start time, its directory (keep, which
 * becomes the monitor's; on error it stays the caller's) and its child
 * through its keeper (po: the descriptors become the Proc's, closed on
 * error). Nothing is read until monitor_replay. */
Monitor *monitor_adopt(uv_loop_t *loop, const VigilSettings *settings, const MonitorSpec *spec,
                       const char *id, int64_t started_at, MonitorKeep *keep,
                       ProcAdoptOptions *po, const MonitorHooks *hooks, void *data,
                       VigilError *err);
/* Processes what an adopted monitor's spools hold: before their cut
 * silently (the ring and counters rebuilt), after it as output that just
 * came. Call once, after monitor_adopt, when the owner has its record. */
void monitor_replay(Monitor *m);

/* With a state directory: writes the monitor's spec (keepspec.h) into its
 * directory, for an engine that takes it over after a restart: what it was
 * started with (spec, and start, its start map of start_len bytes, see
 * startmap.h), in which session, for which config group (NULL: none), under
 * which policy. A failure is logged
 * (the monitor runs on; it is just not taken over). */
void monitor_keep_spec(Monitor *m, const MonitorSpec *spec, const char *session, bool anonymous,
                       const char *group, const char *policy, const char *start,
                       size_t start_len);

/* The restart policy (monitor_restart.c): restarts in the monitor's life;
 * its policy; whether its program has ended and waits to start again
 * (*in_ms: how soon); when the running program started (wall ms; the
 * monitor's start until a restart). */
uint64_t monitor_restarts(const Monitor *m);
RestartPolicy monitor_restart_policy(const Monitor *m);
bool monitor_restart_wait(const Monitor *m, uint64_t *in_ms);
int64_t monitor_run_started_at(const Monitor *m);
/* Readiness and health (monitor_ready.c): the wall ms it became ready (0:
 * not, or none declared); whether it declares readiness; its health
 * ("healthy", "unhealthy": the last known), NULL when no health probe ran. */
int64_t monitor_ready_at(const Monitor *m);
bool monitor_ready_declared(const Monitor *m);
const char *monitor_health(const Monitor *m);
/* The probe attempts made so far (tcp, http; readiness and health: every
 * one a timer's wake-up and a connection), this engine's. */
uint64_t monitor_probes(const Monitor *m);
const char *monitor_id(const Monitor *m);
const char *monitor_label(const Monitor *m);
const char *monitor_description(const Monitor *m); /* may be NULL */
MonitorState monitor_state(const Monitor *m);
bool monitor_finished(const Monitor *m);           /* on_finished has been called */
DeliveryMode monitor_mode(const Monitor *m);
NotifyMode monitor_notify(const Monitor *m);       /* resolved: never kNotifyAuto */
bool monitor_incidents_on(const Monitor *m);       /* the start's `incidents` */
EnvelopeStyle monitor_envelope(const Monitor *m);  /* the start's `envelope`, resolved */
pid_t monitor_pid(const Monitor *m);
/* Whether the first start still waits for its keeper's first word (pid 0
 * until then; MonitorHooks.on_started tells the end of the wait). */
bool monitor_starting(const Monitor *m);
/* The path that was executed, escaped as textfmt_escape does (control bytes
 * and invalid UTF-8 as \xNN): safe to show and to send as a string. */
const char *monitor_program(const Monitor *m);
int64_t monitor_started_at(const Monitor *m);      /* wall ms */
int64_t monitor_ended_at(const Monitor *m);        /* wall ms; 0 while running */
uint64_t monitor_duration_ms(const Monitor *m);    /* so far, or final */
void monitor_counters(const Monitor *m, MonitorCounters *out);
/* Why it ended, in words (NULL while running, or for a plain exit). */
const char *monitor_reason(const Monitor *m);
/* The limit that ended it ("memory_limit", "max_processes", "cpu_time"), or
 * NULL. Only a monitor that ended by itself (state exited) has one. */
const char *monitor_exceeded(const Monitor *m);
/* Since when (wall ms: its last line) the monitor is quiet, once its
 * quiet_after_ms has told so; 0 while it is not (monitor_quiet.c). */
int64_t monitor_quiet_since(const Monitor *m);
/* Appends the live processes of the monitor (proc_members; procs: the
 * process table a caller asking for many shares, NULL: none): none while
 * a restart waits or once its program has exited. */
void monitor_members(const Monitor *m, ReaperTable *procs, PidList *out);
/* Exit status and resource usage: final after exit, else a live sample. */
void monitor_usage(const Monitor *m, ProcExit *out);
const Ring *monitor_ring(const Monitor *m);
const Capture *monitor_capture(const Monitor *m, StreamId stream);
const EventLog *monitor_events(const Monitor *m);
size_t monitor_pattern_count(const Monitor *m);
const char *const *monitor_pattern_sources(const Monitor *m);
/* What to call pattern index in words: its source, or for the built-in
 * set its name ("python-traceback"; the sources are long). NULL when out
 * of range. */
const char *monitor_pattern_label(const Monitor *m, size_t index);
void *monitor_data(const Monitor *m);

#endif
