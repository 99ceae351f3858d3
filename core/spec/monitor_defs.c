/*
 * The protocol names of a monitor's small enums (docs/protocol.md section 5), in
 * one place so the wire, the renderers and the Lua tables always agree. Each
 * table is indexed by the enum value, so its order must follow the enum's.
 */
#include "spec/monitor_defs.h"

#include <stddef.h>
#include <string.h>

const char *const monitor_state_names[MONITOR_STATE_COUNT + 1] = {
  "running", "exited", "stopped", "timed_out", "idle_timeout", "overloaded", "failed", NULL,
};

const char *const monitor_notify_names[] = {
  "auto", "matches", "lines", "exit", "none", NULL,
};

const char *const monitor_streams_names[] = {"both", "stdout", "stderr", NULL};

const char *const monitor_mode_names[] = {"idle", "live_safe", NULL};
const char *const monitor_envelope_names[] = {"readable", "compact", NULL};
const char *const monitor_restart_names[] = {"no", "on-failure", "always", NULL};

/* How many names a table holds (its NULL not counted). */
#define MONITOR_COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])) - 1)

/* A new enum value without a name fails the build, not a test. */
_Static_assert(MONITOR_COUNT(monitor_state_names) == kMonFailed + 1, "state names");
_Static_assert(MONITOR_COUNT(monitor_notify_names) == kNotifyNone + 1, "notify names");
_Static_assert(MONITOR_COUNT(monitor_streams_names) == kStreamsStderr + 1, "streams names");
_Static_assert(MONITOR_COUNT(monitor_mode_names) == kModeLiveSafe + 1, "mode names");
_Static_assert(MONITOR_COUNT(monitor_restart_names) == kRestartAlways + 1, "restart names");

/* The name at index i of a table of n, or "unknown" for a value outside it
 * (a corrupt value should still render as something, never crash). */
static const char *
monitor_name(const char *const *names, int n, int i)
{
  return i >= 0 && i < n ? names[i] : "unknown";
}

/* The index of name in a table of n, or -1 (also for NULL). */
static int
monitor_parse(const char *const *names, int n, const char *name)
{
  if (name == NULL)
    return -1;
  for (int i = 0; i < n; i++)
    if (strcmp(names[i], name) == 0)
      return i;
  return -1;
}

/* "running", "exited", ... */
const char *
monitor_state_name(MonitorState s)
{
  return monitor_name(monitor_state_names, MONITOR_COUNT(monitor_state_names), (int)s);
}

/* "auto", "matches", "lines", "exit", "none" */
const char *
monitor_notify_name(NotifyMode n)
{
  return monitor_name(monitor_notify_names, MONITOR_COUNT(monitor_notify_names), (int)n);
}

/* "both", "stdout", "stderr" */
const char *
monitor_streams_name(MatchStreams s)
{
  return monitor_name(monitor_streams_names, MONITOR_COUNT(monitor_streams_names), (int)s);
}

/* "idle", "live_safe" */
const char *
monitor_mode_name(DeliveryMode m)
{
  return monitor_name(monitor_mode_names, MONITOR_COUNT(monitor_mode_names), (int)m);
}

/* "no", "on-failure", "always" */
const char *
monitor_restart_name(RestartPolicy r)
{
  return monitor_name(monitor_restart_names, MONITOR_COUNT(monitor_restart_names), (int)r);
}

/* A MonitorState from its protocol name, or -1. */
int
monitor_state_parse(const char *name)
{
  return monitor_parse(monitor_state_names, MONITOR_COUNT(monitor_state_names), name);
}

/* A NotifyMode from its protocol name, or -1. */
int
monitor_notify_parse(const char *name)
{
  return monitor_parse(monitor_notify_names, MONITOR_COUNT(monitor_notify_names), name);
}

/* A MatchStreams from its protocol name, or -1. */
int
monitor_streams_parse(const char *name)
{
  return monitor_parse(monitor_streams_names, MONITOR_COUNT(monitor_streams_names), name);
}

/* A DeliveryMode from its protocol name, or -1. */
int
monitor_mode_parse(const char *name)
{
  return monitor_parse(monitor_mode_names, MONITOR_COUNT(monitor_mode_names), name);
}
