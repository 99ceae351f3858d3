/*
 * Coalescing: an incident whose fingerprint was notified within the
 * coalescing window (incident.coalesce_ms, 5 minutes) is not notified again;
 * it is counted as a repeat of the one that was. A series of repeats is
 * reported once: by a summary when it has been quiet for summary_after_ms
 * (10 s after its last repeat), by the ending notification if the process
 * ends first, or by the incident itself when the same failure comes back
 * after the window ran out (its `repeats` says how many came in between).
 * A crash loop of 40 identical crashes is one notified incident and one
 * summary.
 *
 * This runs before the rate limit, so repeats never spend its budget and
 * cannot crowd out a different crash. The table of fingerprints is bounded
 * (incident.fingerprints_max); when it is full the entry notified longest
 * ago goes (its unreported repeats are reported first by the caller, via
 * coalesce_take_evicted) and is counted.
 *
 * Time is handed in by the caller (ms of a monotonic clock; wall ms for
 * what the summary says), so every rule is tested with a fake clock.
 */
#ifndef VIGIL_COALESCE_H
#define VIGIL_COALESCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
  uint64_t fingerprint;
  uint64_t incident_id;     /* the incident that was notified */
  int pattern;
  int kind;                 /* IncidentKind of the notified one */
  uint64_t notified_at;     /* mono ms */
  uint64_t repeats;         /* repeats not yet reported */
  uint64_t seen_at;         /* mono ms of its latest occurrence, notified or repeat */
  int64_t seen_wall;        /* wall ms of the same */
  uint64_t series_first_at; /* mono ms of the occurrence the unreported series
                               follows (the notified one, or the last repeat
                               already reported), so that one repeat 3 s
                               after its crash spans 3 s, not 0 */
  uint64_t series_last_at;  /* mono ms of its last repeat */
  int64_t series_first_wall; /* wall ms of the same two */
  int64_t series_last_wall;
  /* The first line of the last repeat, for the summary to show. */
  uint64_t last_seq;
  int last_stream;
  char *last_line;          /* owned, NUL-terminated */
  size_t last_len;
} CoalesceEntry;

/* A series of repeats being reported: a copy of what the entry held, which
 * the caller owns (coalesce_summary_free). */
typedef struct {
  uint64_t fingerprint;
  uint64_t incident_id;
  int pattern;
  int kind;
  uint64_t repeats;
  uint64_t span_ms;         /* from the occurrence the series follows to its
                               last repeat: the time the repeats came in */
  int64_t first_wall;
  int64_t last_wall;
  uint64_t last_seq;
  int last_stream;
  char *last_line;
  size_t last_len;
} CoalesceSummary;

typedef struct {
  uint64_t window_ms;       /* 0: coalescing off */
  uint64_t summary_after_ms;
  size_t max;               /* incident.fingerprints_max */
  CoalesceEntry *entries;   /* grown (doubling) up to max slots */
  size_t cap;
  size_t count;
  uint64_t evicted;         /* entries dropped for room, ever */
  uint64_t coalesced_total; /* repeats counted, ever */
  CoalesceSummary *pending_evicted; /* a series an eviction cut short, for the caller */
} Coalescer;

void coalesce_init(Coalescer *c, uint64_t window_ms, uint64_t summary_after_ms, size_t max);

typedef enum {
  kCoalesceNotify = 0, /* a new failure (or the window ran out): notify it */
  kCoalesceRepeat,     /* counted as a repeat: do not notify */
} CoalesceVerdict;

/* Judges an incident with fingerprint fp at now. On kCoalesceNotify the
 * fingerprint is recorded as notified now with incident_id, and *prior (if
 * not NULL) receives the repeats of an earlier series that had not been
 * reported (repeats 0 when none). On kCoalesceRepeat the repeat is counted
 * and the line (seq, stream, text) remembered for the summary. */
CoalesceVerdict coalesce_judge(Coalescer *c, uint64_t now, int64_t wall, uint64_t fp,
                               uint64_t incident_id, int pattern, int kind, uint64_t seq,
                               int stream, const char *line, size_t len, CoalesceSummary *prior);

/* When the next series goes quiet (its summary is due), or UINT64_MAX. */
uint64_t coalesce_deadline(const Coalescer *c);

/* Takes the next series due at now (or every series with repeats when
 * `all`, for the ending) into *out, restarting its count. Returns false
 * when there is none. */
bool coalesce_take_due(Coalescer *c, uint64_t now, bool all, CoalesceSummary *out);

/* Takes a series that an eviction cut short (false when none). */
bool coalesce_take_evicted(Coalescer *c, CoalesceSummary *out);

/* Repeats counted and not yet reported, over every series. */
uint64_t coalesce_unreported(const Coalescer *c);

void coalesce_summary_free(CoalesceSummary *s);
void coalesce_free(Coalescer *c);

#endif
