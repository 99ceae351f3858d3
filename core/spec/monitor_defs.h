/*
 * The small enums that describe a monitor, shared by the core, the wire and
 * the renderers, with their protocol names.
 */
#ifndef VIGIL_MONITOR_DEFS_H
#define VIGIL_MONITOR_DEFS_H

typedef enum {
  kMonRunning = 0,
  kMonExited,      /* ended by itself (its own exit or a signal vigil did not send) */
  kMonStopped,     /* monitor_stop */
  kMonTimedOut,    /* runtime cap */
  kMonIdleTimeout, /* no output for idle_timeout_ms */
  kMonOverloaded,  /* auto-stopped by the rate limiter */
  kMonFailed,      /* could not be watched to the end (an internal failure) */
} MonitorState;
#define MONITOR_STATE_COUNT 7

typedef enum {
  kNotifyAuto = 0, /* matches when there are patterns, else lines */
  kNotifyMatches,
  kNotifyLines,
  kNotifyExit,
  kNotifyNone,
} NotifyMode;

typedef enum { kStreamsBoth = 0, kStreamsStdout, kStreamsStderr } MatchStreams;

typedef enum { kModeIdle = 0, kModeLiveSafe } DeliveryMode;

/* When a monitor starts its program again after it ended by itself
 * (monitor_restart.c): never, after a failure (an exit status other than 0,
 * or a signal vigil did not send), or after any ending of its own. An
 * ending vigil caused (stop, runtime cap, idle timeout, overload) is never
 * followed by a restart. */
typedef enum { kRestartNo = 0, kRestartOnFailure, kRestartAlways } RestartPolicy;

/* The bounds of a monitor's restart settings (monitor_fields.c). */
#define MONITOR_MAX_RESTARTS_MAX 100        /* max_restarts: restarts in a row */
/* quiet_after_ms (monitor_quiet.c): 0 (off), or MIN..MAX (a day). */
#define MONITOR_QUIET_AFTER_MIN_MS 100
#define MONITOR_QUIET_AFTER_MAX_MS 86400000
#define MONITOR_MAX_RESTARTS_DEFAULT 5
#define MONITOR_RESTART_BACKOFF_MAX_MS 600000 /* restart_backoff_ms: the first delay */
#define MONITOR_RESTART_BACKOFF_DEFAULT_MS 1000
/* The delay doubles with each restart in a row up to this (or the first
 * delay, if that is longer). */
#define MONITOR_RESTART_DELAY_CAP_MS 60000
/* A program that ran this long before it ended starts a new row: its
 * restart is the first again (delay and bound). */
#define MONITOR_RESTART_STABLE_MS 60000

/* The protocol names, indexed by the enum's value and NULL-terminated (for
 * a parser that reports the choices, and the field table). */
extern const char *const monitor_state_names[];
extern const char *const monitor_notify_names[];
extern const char *const monitor_streams_names[];
extern const char *const monitor_mode_names[];
extern const char *const monitor_restart_names[];
/* EnvelopeStyle's names (notification.h): "readable", "compact". */
extern const char *const monitor_envelope_names[];

const char *monitor_state_name(MonitorState s);
const char *monitor_notify_name(NotifyMode n);
const char *monitor_streams_name(MatchStreams s);
const char *monitor_mode_name(DeliveryMode m);
const char *monitor_restart_name(RestartPolicy r);
/* Parse a protocol name; -1 when unknown. */
int monitor_state_parse(const char *name);
int monitor_notify_parse(const char *name);
int monitor_streams_parse(const char *name);
int monitor_mode_parse(const char *name);

#endif
