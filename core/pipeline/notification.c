/*
 * A notification as the core makes it (see notification.h): construction,
 * its lines, and the names and classes of its types. A notification owns
 * every string it points to, so it can outlive the monitor that made it
 * while it waits in a session's queue.
 */
#include "pipeline/notification.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/memory.h"

static const char *const notification_type_names[NOTIFICATION_TYPE_COUNT] = {
  "output", "exit", "stopped", "timed_out", "idle_timeout", "overload", "dropped", "policy_error",
};

/* Lines (and incidents) are allocated one at first, then doubled whenever
 * nlines reaches a power of two, so no capacity field is needed in the
 * struct. One, not eight: a session keeps every notification it told for
 * resume (session.queue_max), and most hold one line (a match), which in a
 * block of eight kept 280 unused bytes with it (issue 27). */
#define NOTIFICATION_FIRST_LINES 1

/* A new notification of type for monitor_id (copied, cut to fit; NULL or ""
 * for one that belongs to no monitor, such as dropped) and label (copied,
 * may be NULL), stamped with the wall clock now, state running and no lines.
 * The caller frees it with notification_free. */
Notification *
notification_new(NotificationType type, const char *monitor_id, const char *label,
                 DeliveryMode mode)
{
  Notification *n = xcalloc(1, sizeof *n);
  n->type = type;
  if (monitor_id)
    snprintf(n->monitor_id, sizeof n->monitor_id, "%s", monitor_id);
  n->label = label ? xstrdup(label) : NULL;
  n->mode = mode;
  n->state = kMonRunning;
  n->at_ms = clock_now_ms();
  return n;
}

/* Appends a copy of text (len bytes, NUL added) as the next line. */
void
notification_add_line(Notification *n, uint64_t seq, int stream, int pattern, bool truncated,
                      const char *text, size_t len)
{
  if (n->nlines == 0)
    n->lines = xmalloc(NOTIFICATION_FIRST_LINES * sizeof *n->lines);
  else if (n->nlines >= NOTIFICATION_FIRST_LINES && (n->nlines & (n->nlines - 1)) == 0)
    n->lines = xrealloc(n->lines, 2 * n->nlines * sizeof *n->lines);
  NoteLine *l = &n->lines[n->nlines++];
  l->seq = seq;
  l->stream = stream;
  l->pattern = pattern;
  l->truncated = truncated;
  l->text = xmemdupz(text ? text : "", text ? len : 0);
  l->len = text ? len : 0;
}

/* Appends a copy of an incident entry, growing like the lines. */
void
notification_add_incident(Notification *n, const NoteIncident *inc)
{
  if (n->nincidents == 0)
    n->incidents = xmalloc(NOTIFICATION_FIRST_LINES * sizeof *n->incidents);
  else if (n->nincidents >= NOTIFICATION_FIRST_LINES && (n->nincidents & (n->nincidents - 1)) == 0)
    n->incidents = xrealloc(n->incidents, 2 * n->nincidents * sizeof *n->incidents);
  n->incidents[n->nincidents++] = *inc;
}

/* Frees n and every string it owns; NULL is a no-op. */
void
notification_free(Notification *n)
{
  if (n == NULL)
    return;
  for (size_t i = 0; i < n->nlines; i++)
    free(n->lines[i].text);
  free(n->lines);
  free(n->incidents);
  free(n->label);
  free(n->reason);
  free(n->session);
  free(n->text);
  free(n);
}

/* The wire name of a type ("idle_timeout"), or "unknown". */
const char *
notification_type_name(NotificationType t)
{
  if ((int)t < 0 || (int)t >= NOTIFICATION_TYPE_COUNT)
    return "unknown";
  return notification_type_names[t];
}

/* Whether t is one of the ending types: each monitor gets exactly one, never
 * rate-limited and never dropped from a queue. */
bool
notification_is_ending(NotificationType t)
{
  switch (t) {
  case kNotifExit:
  case kNotifStopped:
  case kNotifTimedOut:
  case kNotifIdleTimeout:
  case kNotifOverload:
    return true;
  default:
    return false;
  }
}

/* The ending type for a final state. A failed monitor (vigil could not watch
 * it to the end) has no ending type of its own in the protocol, so it ends
 * with exit, and its state and reason say what went wrong. running is not a
 * final state; it maps to exit too, so a caller's mistake still produces the
 * one ending notification the protocol promises rather than none. */
NotificationType
notification_ending_for(MonitorState s)
{
  switch (s) {
  case kMonStopped:
    return kNotifStopped;
  case kMonTimedOut:
    return kNotifTimedOut;
  case kMonIdleTimeout:
    return kNotifIdleTimeout;
  case kMonOverloaded:
    return kNotifOverload;
  case kMonExited:
  case kMonFailed:
  case kMonRunning:
  default:
    return kNotifExit;
  }
}
