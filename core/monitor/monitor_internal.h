/*
 * What the files of the monitor module share, and nothing else includes:
 * the Monitor record and the calls each file makes into another. The module
 * is one interface (monitor.h) in eight files, split by concept:
 *   monitor.c         the lifecycle: the spec checked, the monitor started
 *                     and freed, monitor_stop, what it tells its owner
 *                     (notifications, events), and the accessors
 *   monitor_intake.c  the data path's start: a read chunk becomes captured
 *                     bytes, lines in the ring and matches
 *   monitor_outlet.c  the data path's end: batches that the rate limit
 *                     delivers or withholds (and sustained overload)
 *   monitor_replay.c  the checkpoint and the replay of a taken-over monitor
 *   monitor_signal.c  the signal stage between lines and batches: incidents
 *                     assembled, fingerprinted and coalesced
 *   monitor_ending.c  the control path: what ends the process (stop, the
 *                     runtime cap, the idle timeout, overload), and the
 *                     ending, in its order, once proc.c reports the exit
 *   monitor_restart.c the restart policy: a program that ended by itself
 *                     started again, after a delay, within a bound
 *   monitor_quiet.c   the stall notice: no line for quiet_after_ms is told
 *                     once, and once more when lines come again
 *   monitor_source.c  a file source in place of the process: its bytes
 *                     into the intake, its notes told, its ending
 *   monitor_ready.c   readiness and health: a ready line or probe, the
 *                     ready and not_ready news, health changes
 */
#ifndef VIGIL_MONITOR_INTERNAL_H
#define VIGIL_MONITOR_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "pipeline/batch.h"
#include "pipeline/coalesce.h"
#include "pipeline/incident.h"
#include "pipeline/incidentlog.h"
#include "pipeline/linebuf.h"
#include "pipeline/match.h"
#include "monitor/monitor.h"
#include "monitor/monitor_keep.h"
#include "pipeline/ratelimit.h"
#include "store/keepspec.h"

/* The context a line callback needs: which monitor, which stream. */
typedef struct {
  Monitor *m;
  StreamId stream;
  MatchChunk chunk;              /* the read chunk being split, searched for literals once */
} MonitorStream;

typedef struct MonitorRespawn MonitorRespawn;
typedef struct MonitorReady MonitorReady;

struct Monitor {
  MonitorKeep *keep;        /* its directory in the state directory; NULL: none */
  uv_loop_t *loop;
  VigilSettings settings;
  char id[24];
  char *label;
  char *description;
  MonitorState state;
  NotifyMode notify;             /* resolved: never kNotifyAuto */
  DeliveryMode mode;
  MatchStreams match_streams;
  MonitorHooks hooks;
  void *data;

  Proc *proc;                    /* NULL for a file source, or while a restart waits */
  FileSource *file;              /* a file source (monitor_source.c); NULL: none, or ended */
  char *file_path;               /* the file source's path as given; NULL: a process */
  FileSourceCounters file_counters; /* its counters when it ended */
  uint64_t file_offset;          /* its offset when it ended */
  WsSource *ws;                  /* a WebSocket source (monitor_source.c); NULL: none, or ended */
  char *ws_url;                  /* its URL; NULL: not one */
  WsSourceCounters ws_counters;  /* its counters when it ended */
  pid_t pid;
  char *program;                 /* the path that was executed, escaped */
  ProcExit exit;                 /* valid once finished */
  int64_t memory_limit;          /* as asked, for the words of a limit's ending */
  const char *exceeded;          /* the limit that ended it, or NULL */

  MonitorStream streams[2];
  Linebuf linebuf[2];
  Capture capture[2];
  bool capture_left_told[2];     /* the log said its spool broke */
  bool events_unkept_told;       /* the log said its event log's keeping stopped */
  uint64_t stream_bytes[2];
  Ring ring;
  PatternSet *patterns;
  const char *const *pattern_sources; /* the set's own (match_sources), npatterns entries */
  size_t npatterns;
  bool builtin_patterns;         /* patterns are the built-in crash set (crashpatterns.h) */
  Batch batch;
  RateLimit rate;
  uint64_t rate_closed_until;    /* before this (loop ms), a batch opened would surely be
                                    withheld (monitor__batch_line); 0: not known */
  EventLog events;

  /* The signal stage (monitor_signal.c). */
  bool incidents_on;             /* assemble and coalesce (the start's `incidents`) */
  EnvelopeStyle envelope;
  Assembler assembler;
  Coalescer coalescer;
  IncidentLog history;
  uint64_t incidents_total;
  /* Counts a later notification carries (nothing is lost silently). */
  uint64_t incidents_withheld_unreported;
  uint64_t incidents_coalesced_unreported;
  uint64_t incidents_dropped_unreported;
  uint64_t incidents_withheld_total;
  uint64_t incidents_dropped_total;
  uint64_t incidents_ignored_total; /* silenced by an ignored fingerprint */
  uint64_t suppressed_carry;     /* lines of a policy-dropped notification's `suppressed` */

  uv_timer_t batch_timer;
  uv_timer_t signal_timer;
  uv_timer_t *idle_timer;        /* made when first armed (monitor__timer); NULL while
                                    no idle timeout was armed, in most monitors */
  uv_timer_t runtime_timer;
  int open_handles;              /* timers not yet closed */
  bool timers_ready;
  bool starting;                 /* the first start waits for its keeper's hello */
  bool spec_kept;                /* its spec was written (monitor_keep_spec) */

  int64_t started_at;            /* wall ms */
  int64_t ended_at;              /* wall ms, 0 while running */
  uint64_t started_mono;         /* uv_now at start */
  uint64_t last_output_mono;     /* uv_now of the last chunk read */
  uint64_t timeout_ms;           /* 0: no runtime cap */
  uint64_t idle_timeout_ms;      /* 0: off */

  /* Why the process is ending, decided before it is gone (kMonRunning when
   * it ends by itself), with a reason in words. */
  MonitorState ending;
  char *ending_reason;

  bool muted;                    /* overload in mute mode, or stopping for overload */
  /* Lines not delivered because muted, in two kinds that never mix: held
   * back while an overloaded monitor is being stopped (withheld, reported by
   * the ending notification, so part of the `suppressed` counter for good),
   * and muted after the ending notification went (mute mode; nothing can
   * report them, so they have a counter of their own). */
  uint64_t withheld_lines;       /* held back before the ending, ever */
  uint64_t withheld_unreported;  /* of those, not yet reported */
  uint64_t muted_lines;          /* after the ending notification */
  bool ending_sent;              /* the ending notification has been handed over */
  bool finished;                 /* on_finished has been called */
  uint64_t notifications;
  uint64_t policy_dropped;
  bool replay_silent;            /* monitor_replay: output the engine before had seen */

  /* What a restart must not tell again nor lose (monitor_replay.c, "the
   * checkpoint"): each stream's lines are numbered (nr, from 1, per
   * stream); what waits to be told is tracked by the first nr it holds. */
  uint64_t stream_nr[2];         /* lines of each stream so far */
  uint64_t told_floor[2];        /* lines up to this nr were decided by the engine
                                    before (a replay offers them to nothing) */
  uint64_t batch_first_nr[2];    /* the first nr of each stream in the open batch; 0: none */
  uint64_t batch_incidents;      /* incidents (not summaries) in the open batch */

  /* The restart policy (monitor_restart.c). */
  RestartPolicy restart;
  uint64_t max_restarts;         /* restarts in a row */
  uint64_t restart_backoff_ms;   /* the first delay of a row */
  MonitorRespawn *respawn;       /* what starts the program again; NULL: nothing can */
  uint64_t restarts;             /* restarts in the monitor's life */
  uint64_t restarts_in_row;      /* since the last run of MONITOR_RESTART_STABLE_MS */
  bool restart_pending;          /* the program ended; restart_timer starts it again */
  uint64_t restart_due_mono;     /* uv_now when it will */
  int64_t run_started_at;        /* wall ms the running program started (0: the first) */
  uv_timer_t *restart_timer;     /* made when first armed (a restart, a source's end) */

  /* The stall notice (monitor_quiet.c). */
  uint64_t quiet_after_ms;       /* 0: off */
  uint64_t quiet_last_mono;      /* uv_now of the last read that added lines */
  int64_t quiet_since;           /* wall ms of the last line, once quiet was told; 0: not quiet */
  uv_timer_t *quiet_timer;       /* made when first armed (quiet_after_ms set) */
  /* Readiness and health (monitor_ready.c). */
  MonitorReady *ready;           /* NULL: none declared, or its probes are over */
  bool ready_declared;
  int64_t ready_at;              /* wall ms it became ready; 0: not (yet) */
  const char *health;            /* "healthy", "unhealthy", or NULL: not probed */
  uint64_t probes;               /* probe attempts made, readiness and health */
};

/* --- monitor_ready.c ----------------------------------------------------- */

/* Checks the spec's readiness and health fields (the errors name the field,
 * the bound and the value). */
int monitor_ready__check(const VigilSettings *settings, const MonitorSpec *spec,
                         VigilError *err);
/* Starts the readiness probe of a monitor that has its process and timers
 * (a taken-over monitor that was ready resumes its health probe). */
void monitor_ready__start(Monitor *m, const MonitorSpec *spec);
/* A line was read (and kept in the ring, and batched): a ready_log
 * pattern is matched against it. */
void monitor_ready__line(Monitor *m, const RingLine *line);
/* The monitor ends (or is freed): every probe and timer of it stops, and
 * none touches m again. */
void monitor_ready__stop(Monitor *m);

/* --- monitor_restart.c --------------------------------------------------- */

/* Takes the spec's restart settings and, when it has a policy, copies what
 * starts the program again (program: the path that was executed; NULL: it
 * cannot be). */
void monitor_restart__init(Monitor *m, const MonitorSpec *spec, const char *program);
void monitor_restart__free(Monitor *m);
/* Rewrites the monitor's spec in its directory with the counts and, when
 * new_run, the running program's pid and keeper. */
void monitor_restart__respec(Monitor *m, bool new_run);
/* A restart failed (err): the monitor ends, failed, saying why. */
void monitor_restart__fail(Monitor *m, const VigilError *err);
/* Whether the program, ended by itself with x, is to be started again. */
bool monitor_restart__wanted(const Monitor *m, const ProcExit *x);
/* The run in m->exit is over and the program starts again after the
 * row's delay: its incidents close and its batch goes, the restart is
 * logged and told, the timer armed. */
void monitor_restart__schedule(Monitor *m);
void monitor_restart__timer_cb(uv_timer_t *t);
/* A stop (or the runtime cap) while the program waits to start again:
 * the monitor ends from the loop with the last exit, for why. Returns
 * false when no restart is waiting. */
bool monitor_restart__interrupt(Monitor *m, MonitorState why, const char *reason);
/* The reason of an ending that the bound of restarts in a row made (how
 * the program ended, and that the monitor gave up), or NULL. */
char *monitor_restart__give_up(const Monitor *m, const ProcExit *x);

/* --- monitor_quiet.c ----------------------------------------------------- */

/* A run starts: the period counts from now, and the timer is armed when
 * quiet_after_ms is set (and no quiet is being told). */
void monitor_quiet__arm(Monitor *m);
/* A run is over (a restart waits): nothing armed until the next. */
void monitor_quiet__pause(Monitor *m);
/* A read added lines: the period starts again; a quiet told ends with a
 * `resumed` event and notice. */
void monitor_quiet__lines(Monitor *m);
void monitor_quiet__timer_cb(uv_timer_t *t);
/* A taken-over monitor's events are back: a quiet the engine before told,
 * and no line ended, is still on (quiet_since set, nothing armed), so it
 * is not told twice. */
void monitor_quiet__adopted(Monitor *m);
/* --- monitor_source.c ---------------------------------------------------- */

/* Whether the spec has a source in place of a process. */
bool monitor_source__given(const MonitorSpec *spec);
/* Whether m follows a source, not a process. */
bool monitor_source__is(const Monitor *m);
/* Opens the spec's source (a file or a WebSocket) for m (the restart_timer
 * is used to end it from the loop: a source never restarts). */
int monitor_source__open(Monitor *m, const MonitorSpec *spec, VigilError *err);
/* Whether the spec's source can be followed (monitor_check). */
int monitor_source__check(const MonitorSpec *spec, VigilError *err);
/* The source's name for status and the log: the file's real path, the URL. */
const char *monitor_source__name(const Monitor *m);
/* Ends a source for why: it stops reading, and the monitor ends from the
 * loop. Returns kMonitorStopping, or kMonitorStopAlready when it is ending
 * or ended. */
MonitorStopResult monitor_source__terminate(Monitor *m, MonitorState why, const char *reason);
/* Closes the source (monitor_free), keeping its counters. */
void monitor_source__close(Monitor *m);

/* --- monitor_ending.c ---------------------------------------------------- */

/* The ending, once the process is gone (m->exit): final batch, ending
 * event, ending notification, in that order, then on_finished. Nothing
 * touches m after it. */
void monitor__end(Monitor *m);
/* Copies the ring's last lines (monitor.exit_lines) into n. */
void monitor__copy_last_lines(Monitor *m, Notification *n);

/* --- monitor_intake.c, monitor_outlet.c, monitor_replay.c ---------------------------------------------------- */

/* The checkpoint monitor__checkpoint would store now, in the order of
 * Notification's checkpoint; false when it would store none (no
 * directory, a silent replay, a batch open). */
bool monitor__checkpoint_values(const Monitor *m, uint64_t out[NOTIFICATION_CHECKPOINT_WORDS]);

/* Records in the monitor's checkpoint (monitor_keep.h) how far it has
 * processed its output and what it has counted: after each chunk. */
void monitor__checkpoint(Monitor *m);

/* --- monitor.c ----------------------------------------------------------- */

/* The timer in *slot, made (and counted among the open handles) when it is
 * NULL: the idle, restart and quiet timers are made when first armed, so
 * a monitor that never needs them does not carry 152 bytes each (issue
 * 27); monitor_free closes and frees what was made. */
uv_timer_t *monitor__timer(Monitor *m, uv_timer_t **slot);
/* Stops t if it was made. */
void monitor__timer_stop(uv_timer_t *t);

/* Rewrites the monitor's kept spec (keepspec.h) in its directory: read,
 * changed by edit (ctx is edit's), written. No directory: nothing. Returns
 * false with err set when it could not be read or written. */
bool monitor__respec(Monitor *m, void (*edit)(const Monitor *m, KeepSpec *ks, const void *ctx),
                     const void *ctx, VigilError *err);

/* Hands a notification to the owner (who owns it from then on) and counts it. */
void monitor__emit(Monitor *m, Notification *n);
/* Logs an event and tells the owner. */
void monitor__event(Monitor *m, EventType type, int pattern, const char *line, size_t line_len,
                   bool has_exit_code, int exit_code, int sig, const char *reason);
/* monitor__event, marked with the limit that ended the monitor (exceeded,
 * may be NULL). */
void monitor__event_ex(Monitor *m, EventType type, int pattern, const char *line,
                      size_t line_len, bool has_exit_code, int exit_code, int sig,
                      const char *reason, const char *exceeded);

/* An incident or repeat_summary event, with its incident's id, kind,
 * fingerprint, repeats and span (from inc) and its lines, logged and told
 * to the owner. */
void monitor__event_incident(Monitor *m, EventType type, int pattern, const char *line,
                            size_t line_len, const char *reason, const NoteIncident *inc,
                            uint64_t lines);

/* --- monitor_intake.c, monitor_outlet.c, monitor_replay.c ---------------------------------------------------- */

/* proc.c's output callbacks (ProcCallbacks.on_output, on_eof). */
void monitor__on_output(void *data, StreamId stream, const char *buf, size_t len);
void monitor__on_eof(void *data, StreamId stream);
/* Processes a chunk of a stream as if just read (the intake's work, which
 * the replay reuses for what the spools hold); `at` is the absolute offset
 * of buf[0] in the stream, whose capture holds buf already. */
void monitor__take(Monitor *m, StreamId stream, uint64_t at, const char *buf, size_t len);
/* Closes the open batch and delivers it, unless the rate limit withholds it. */
void monitor__flush(Monitor *m);
/* Hands over an output notification that is no batch (a restart's, a
 * stall notice's): n with its lines (maybe none) and its other fields set,
 * numbered as a batch, with reason, under the rate limit. Withheld, n is
 * freed and its lines count as a batch's do (the next one that goes tells
 * them); returns whether it went. */
bool monitor__notice(Monitor *m, Notification *n, const char *reason);
/* Adds an ordinary line (nr: its number in its stream, 0 for none) to the
 * batch (flushing as needed, arming the window). */
void monitor__batch_line(Monitor *m, uint64_t seq, uint64_t nr, StreamId stream, int pattern,
                        unsigned flags, const char *text, size_t len);
/* Notes that a line numbered nr of stream entered the open batch. */
void monitor__batch_note(Monitor *m, int stream, uint64_t nr);
/* Tells the owner something in words with no line (a file source's
 * note): the open batch goes first, then monitor__notice. */
void monitor__tell(Monitor *m, const char *reason);
/* An output notification that tells a state of the monitor in words
 * (reason), with the ring's last lines when tail, or else the one line
 * `line` (the ring's seq, may be NULL), through monitor__notice; x, when not
 * NULL, gives its exit (a restart's). */
void monitor__notify_note(Monitor *m, const char *reason, bool tail, const ProcExit *x,
                          const RingLine *line);
/* Counts lines not delivered because muted or ended. */
void monitor__hold_back(Monitor *m, uint64_t lines);
/* The batch window closed. */
void monitor__batch_timer_cb(uv_timer_t *t);

/* --- monitor_signal.c ---------------------------------------------------- */

/* Sets up the stage for a monitor being started (after the batch's init):
 * its switches from the spec, its bounds from m->settings. */
void monitor_signal__init(Monitor *m, const MonitorSpec *spec);
/* Offers a line (already in the ring, seq; nr its number in its stream) to
 * the signal stage. Returns true when the stage took it (it is part of an
 * incident), false for an ordinary line. */
bool monitor_signal__line(Monitor *m, StreamId stream, uint64_t seq, uint64_t nr, int pattern,
                         const Line *line);
/* A stream ended: its open incident closes. */
void monitor_signal__close_stream(Monitor *m, StreamId stream);
/* A run of the program is over and another follows (a restart): open
 * incidents close and the batch is flushed; the coalescer's series go on. */
void monitor_signal__pause(Monitor *m);
/* The process is gone: open incidents close and the batch is flushed; every
 * unreported series of repeats is summarised into the ending notification
 * (which may be NULL when none goes out). */
void monitor_signal__finish(Monitor *m, Notification *ending);
/* The assembler's IncidentDone (incident.h): record, fingerprint, coalesce
 * or batch the incident. */
void monitor__incident_done(void *ctx, Incident *inc);
/* The assembler's AssemblerPlain: a held line that joined nothing, batched
 * as an ordinary line when notify wants every line. */
void monitor__incident_plain(void *ctx, const AssemblerLine *line);
/* Moves the unreported incident counts into n. */
void monitor_signal__take_counts(Monitor *m, Notification *n);
/* A health change (monitor_ready.c) as an incident of kind health:
 * change is INCIDENT_HEALTH_UNHEALTHY or _HEALTHY, target the probe's in
 * words (its fingerprint's), words what the engine says of it (the
 * notification's reason). Its lines are the ring's last ones. Recorded,
 * counted, and told unless ignored or a coalesced repeat. */
void monitor_signal__health(Monitor *m, const char *change, const char *target,
                            const char *words);
/* Counts the incidents of a batch that will not be delivered. */
void monitor_signal__withheld(Monitor *m, const Batch *b);
/* The trace family a caller's pattern's line belongs to, judged by the
 * built-in set (crashpatterns.h), kTraceGeneric when none matches. */
TraceFamily monitor_signal__family(const char *text, size_t len, bool *generic_header);

/* --- monitor_ending.c ---------------------------------------------------- */

/* Starts ending the process group for `why`, or hastens an ending under
 * way (see monitor_ending.c). Returns what monitor_stop returns. */
MonitorStopResult monitor__terminate(Monitor *m, MonitorState why, const char *reason, int sig,
                                    uint64_t grace_ms);
/* proc.c's exit callback (ProcCallbacks.on_exit): the ending, in its order. */
void monitor__on_exit(void *data, const ProcExit *exit);
/* proc.c's start callback (ProcCallbacks.on_start): a keeper's hello, for
 * the first start or a restart (monitor.c). */
void monitor__on_start(void *data, const VigilError *err);
/* proc.c's launch callback (ProcCallbacks.on_launched): a keeper launched
 * off the loop runs; the spec is rewritten to name it (monitor.c). */
void monitor__on_launched(void *data);
/* The runtime cap and the idle timeout, armed by monitor_start. */
void monitor__runtime_timer_cb(uv_timer_t *t);
void monitor__idle_timer_cb(uv_timer_t *t);

#endif
