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

/* The protocol names, indexed by the enum's value and NULL-terminated (for
 * a parser that reports the choices, and the field table). */
extern const char *const monitor_state_names[];
extern const char *const monitor_notify_names[];
extern const char *const monitor_streams_names[];
extern const char *const monitor_mode_names[];
/* EnvelopeStyle's names (notification.h): "readable", "compact". */
extern const char *const monitor_envelope_names[];

const char *monitor_state_name(MonitorState s);
const char *monitor_notify_name(NotifyMode n);
const char *monitor_streams_name(MatchStreams s);
const char *monitor_mode_name(DeliveryMode m);
/* Parse a protocol name; -1 when unknown. */
int monitor_state_parse(const char *name);
int monitor_notify_parse(const char *name);
int monitor_streams_parse(const char *name);
int monitor_mode_parse(const char *name);

#endif
