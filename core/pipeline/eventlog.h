/*
 * A monitor's structured event log (seed 000's watch_process_events): typed
 * events with ids from 1 that never repeat, kept up to event_log_max; when
 * full, the oldest ~10% (max/10, at least 1) go at once and are counted, so
 * a crash loop costs a bounded amount of memory.
 *
 * The cap counts seed 000's kinds of event (started, match, the endings,
 * overload), not vigil's incident and repeat_summary events, which ride
 * along: they go with the oldest events when those go, so a client that
 * reads only seed 000's kinds sees exactly seed 000's log (its cap, its ~10%
 * drop, and its own numbering, `dropped_incidents` telling how many of the
 * dropped events were incident ones). An incident per match at
 * most doubles the log, and a hard bound of twice event_log_max holds
 * whatever happens (reaching it drops the oldest ~10% of all kinds). Renders
 * one line per event:
 *   [2] 2026-04-24T15:59:59.120+01:00 match (pattern 0 "^panic:") panic: runtime error
 * preceded, when events were dropped, by
 *   NOTE: 102 earlier events dropped (per-monitor cap of 1024 reached)
 */
#ifndef VIGIL_EVENTLOG_H
#define VIGIL_EVENTLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/strbuf.h"

typedef enum {
  kEventStarted = 0,
  kEventMatch,
  kEventIdleTimeout,
  kEventTimedOut,
  kEventOverload,
  kEventStopped,
  kEventExited,
  kEventIncident,      /* an incident was assembled (docs/incidents.md) */
  kEventRepeatSummary, /* a series of coalesced repeats was reported */
  kEventRestart,       /* the program ended and starts again (monitor_restart.c) */
  kEventQuiet,         /* no line for quiet_after_ms (monitor_quiet.c) */
  kEventResumed,       /* a line again after kEventQuiet */
  kEventReady,         /* its readiness probe answered (monitor_ready.c) */
  kEventNotReady,      /* ready_timeout_ms passed without an answer */
  kEventHealth,        /* its health changed (healthy <-> unhealthy); reason says which */
} EventType;

#define EVENT_TYPE_COUNT 15

typedef struct {
  uint64_t id;
  EventType type;
  int64_t at_ms;      /* wall clock, ms since the Unix epoch */
  int pattern;        /* match: pattern index; else -1 */
  char *line;         /* match: the line text; NULL otherwise (owned) */
  bool has_exit_code;
  int exit_code;      /* exited: the code */
  int signal;         /* exited/stopped: the signal, 0 if none */
  char *reason;       /* idle_timeout, timed_out, overload, stopped: why (owned), or NULL */
  const char *exceeded; /* exited: the limit that ended it ("memory_limit"; static), or NULL */
  /* incident, repeat_summary (eventlog_set_incident): */
  uint64_t incident;    /* the incident's id; 0 for other types */
  uint64_t fingerprint;
  int kind;             /* IncidentKind */
  uint64_t lines;       /* incident: its lines (kept and counted) */
  uint64_t repeats;     /* repeat_summary: how many repeats it reports */
  uint64_t span_ms;     /* repeat_summary: from the first to the last */
} Event;

typedef struct {
  Event *events;      /* circular, cap slots; grows by doubling up to eventlog_slots(max) */
  size_t cap;
  size_t max;         /* monitor.event_log_max: the cap on counted events */
  size_t head;
  size_t count;
  size_t counted;     /* retained events that count toward max (eventlog_counts) */
  uint64_t next_id;   /* starts at 1 */
  uint64_t dropped;   /* events dropped ever */
  uint64_t dropped_incidents; /* of those, incident and repeat_summary events */
} EventLog;

void eventlog_init(EventLog *log, size_t max);

/* Whether events of a type count toward the cap: every type but incident
 * and repeat_summary. */
bool eventlog_counts(EventType type);

/* The most events a log with cap max ever holds (twice max): the slots of
 * its ring, and of its kept file (eventkeep.h). */
size_t eventlog_slots(size_t max);

/* Appends an event (copying line and reason, which may be NULL). A counted
 * event that finds max counted ones retained first drops the oldest events
 * up to and including max/10 counted ones; any event that finds the ring
 * full drops the oldest max/10. Returns a pointer to the stored event,
 * valid until the next eventlog_add. */
const Event *eventlog_add(EventLog *log, EventType type, int64_t at_ms, int pattern,
                          const char *line, size_t line_len, bool has_exit_code,
                          int exit_code, int signal, const char *reason);

/* Appends a copy of an event an earlier engine logged (eventkeep.h), with
 * its id (above every id in the log) and every field; the next event is
 * numbered after it. */
const Event *eventlog_add_kept(EventLog *log, const Event *kept);

/* Marks the newest event as ended by a limit (exceeded: a static name such
 * as "memory_limit"). Returns it, or NULL when the log is empty. */
const Event *eventlog_set_exceeded(EventLog *log, const char *exceeded);

/* Marks the newest event (an incident or repeat_summary) with its
 * incident. Returns it, or NULL when the log is empty. */
const Event *eventlog_set_incident(EventLog *log, uint64_t incident, uint64_t fingerprint,
                                   int kind, uint64_t lines, uint64_t repeats, uint64_t span_ms);

typedef void (*EventVisit)(void *ctx, const Event *ev);
/* Visits events with id > since_id, oldest first; returns how many. */
size_t eventlog_since(const EventLog *log, uint64_t since_id, EventVisit visit, void *ctx);

/* The first event with id > since_id whose type is in `type_mask`
 * (1 << EventType bits), or NULL. */
const Event *eventlog_find(const EventLog *log, uint64_t since_id, unsigned type_mask);

/* The protocol name of a type ("idle_timeout"). */
const char *eventlog_type_name(EventType type);

/* Renders events with id > since_id, one per line, with the NOTE line first
 * when any were dropped. pattern_sources[i] gives the source of pattern i
 * (may be NULL when there are none). Control characters in lines are
 * escaped. */
void eventlog_render(const EventLog *log, uint64_t since_id, const char *const *pattern_sources,
                     size_t npatterns, StrBuf *out);

/* One event's line, without a newline. */
void eventlog_render_one(const Event *ev, const char *const *pattern_sources, size_t npatterns,
                         StrBuf *out);

void eventlog_free(EventLog *log);

#endif
