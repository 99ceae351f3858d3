/*
 * A notification as the core makes it: what happened to which monitor, the
 * lines it carries, and the accounting (withheld lines, exit status). The
 * session layer later gives it a session and a seq, and a renderer (the
 * built-in envelope, or a Lua policy) gives it its text. It owns every
 * string it points to.
 */
#ifndef VIGIL_NOTIFICATION_H
#define VIGIL_NOTIFICATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "spec/monitor_defs.h"

typedef enum {
  kNotifOutput = 0,
  kNotifExit,
  kNotifStopped,
  kNotifTimedOut,
  kNotifIdleTimeout,
  kNotifOverload,
  kNotifDropped,
  kNotifPolicyError,
} NotificationType;
#define NOTIFICATION_TYPE_COUNT 8
/* The words of a notification's checkpoint: its monitor's checkpoint page
 * (monitor_keep.h) as it stands once the notification is told, in this
 * order. A journal written before the last six has the first eight (the
 * others then read as 0: none). */
enum {
  kCkptCut0, kCkptCut1, kCkptNextSeq, kCkptLines, kCkptMatched, kCkptUnmatched, kCkptDropped,
  kCkptNotifications,
  kCkptNrAtCut0, kCkptNrAtCut1, kCkptToldNr0, kCkptToldNr1, kCkptIncidents, kCkptIncidentNext,
  kCkptWords
};
#define NOTIFICATION_CHECKPOINT_WORDS kCkptWords
#define NOTIFICATION_CHECKPOINT_WORDS_V1 (kCkptNotifications + 1)

typedef struct {
  uint64_t seq;     /* the line's ring seq */
  int stream;       /* StreamId */
  int pattern;      /* -1 when none */
  bool truncated;
  char *text;       /* sanitized UTF-8, NUL-terminated (owned) */
  size_t len;
} NoteLine;

/* One incident of a notification (incident.h, coalesce.h): its lines are
 * lines[first_line .. first_line + nlines) of the notification. A summary
 * entry reports a series of coalesced repeats of incident `id`; its one line
 * is the first line of the last repeat. */
typedef struct {
  uint64_t id;
  int kind;                 /* IncidentKind: 0 message, 1 crash */
  uint64_t fingerprint;
  int pattern;              /* the pattern that opened it, -1 when none */
  const char *pattern_name; /* the built-in pattern's name (static), or NULL */
  uint64_t first_seq;
  uint64_t last_seq;
  size_t first_line;
  size_t nlines;
  uint64_t truncated_lines; /* lines that belonged past incident.max_lines/max_bytes */
  uint64_t repeats;         /* coalesced repeats this entry reports (0: none) */
  uint64_t repeat_span_ms;  /* from the occurrence they follow (the notified
                               one, or the last repeat already reported) to the
                               last of them, each taken when its first line came */
  int64_t repeat_last_at;   /* wall ms of the last of them */
  bool summary;             /* a repeat summary, not a new incident */
} NoteIncident;

typedef enum { kEnvelopeReadable = 0, kEnvelopeCompact } EnvelopeStyle;

typedef struct {
  NotificationType type;
  char monitor_id[24];
  char *label;             /* owned */
  DeliveryMode mode;
  uint64_t batch;          /* output: per-monitor batch number; else 0 */
  NoteLine *lines;         /* owned */
  size_t nlines;
  uint64_t suppressed;     /* lines withheld by the rate limit since the previous delivery
                              (named as the wire names it) */
  NoteIncident *incidents; /* owned */
  size_t nincidents;
  /* Incidents not notified since the previous delivery, by why (nothing is
   * lost silently): withheld by the rate limit (or held back while muted),
   * coalesced as repeats not yet summarised elsewhere, dropped by a policy's
   * route or the session queue. */
  uint64_t incidents_withheld;
  uint64_t incidents_coalesced;
  uint64_t incidents_dropped;
  EnvelopeStyle style;     /* how the built-in frame looks */
  MonitorState state;      /* running for output; the final state for ending types */
  bool has_exit_code;
  int exit_code;
  int signal;              /* 0 when none */
  bool has_duration;
  uint64_t duration_ms;
  int64_t at_ms;           /* wall clock when made */
  char *reason;            /* ending types: why, in words (owned, may be NULL) */
  const char *exceeded;    /* ending types: the limit that ended it ("memory_limit",
                              "max_processes", "cpu_time"; static), or NULL */
  /* Filled in by the layers above the core. */
  uint64_t seq;            /* per session; 0 until queued */
  char *session;           /* owned, may be NULL */
  char *text;              /* the rendered envelope (owned, may be NULL) */
  uint64_t dropped_count;  /* kNotifDropped: how many were dropped; 0 when unknown */
  uint64_t from_seq;       /* kNotifDropped: the first and last seq lost, 0 when none */
  uint64_t to_seq;         /*   (queue overflow: the dropped ones had no seq yet) or open */
  uint64_t store_key;      /* its number in its session's journal (session_journal.h);
                              0 while it is in none */
  /* Its monitor's checkpoint as it stands once this is told (monitor_keep.h:
   * cut[2], ring_next_seq, lines, matched, unmatched, dropped,
   * notifications), written with it into its session's journal, so that a
   * crash between the two cannot have it told twice. */
  bool has_checkpoint;
  uint64_t checkpoint[NOTIFICATION_CHECKPOINT_WORDS];
} Notification;

Notification *notification_new(NotificationType type, const char *monitor_id,
                               const char *label, DeliveryMode mode);
void notification_add_line(Notification *n, uint64_t seq, int stream, int pattern,
                           bool truncated, const char *text, size_t len);
/* Appends an incident entry (copied); its first_line/nlines index lines
 * already added. */
void notification_add_incident(Notification *n, const NoteIncident *inc);
void notification_free(Notification *n);

const char *notification_type_name(NotificationType t);
/* exit, stopped, timed_out, idle_timeout, overload */
bool notification_is_ending(NotificationType t);
/* The ending type that goes with a final monitor state. */
NotificationType notification_ending_for(MonitorState s);

#endif
