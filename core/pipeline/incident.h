/*
 * Incident assembly: the lines of one failure gathered into one entry. A
 * line that matched a pattern opens an incident on its stream; the lines
 * after it that belong to it (trace.h judges, by the family of the pattern
 * that opened it: indented frames, `at ...`, `File "..."`, goroutine dumps,
 * `Caused by:`, the final exception line) join it, until a line that does
 * not belong, a quiet gap (incident.quiet_ms), or the process's end. Past
 * incident.max_lines / incident.max_bytes the lines that still belong are
 * counted (truncated_lines), not kept. An incident still growing after
 * incident.max_open_ms closes as it stands, so a trace that never ends (a
 * stream of indented lines after a match) cannot hold its notification
 * back for ever.
 *
 * Each stream has its own open incident, so a trace on stderr is not cut by
 * the access log on stdout between two of its writes. A line that belongs
 * to the open trace joins it even if it matches a pattern itself (Python's
 * final `KeyError: 'id'`, a JVM `Caused by:`), which is why a Python
 * traceback whose header precedes the matching last line is one incident.
 *
 * Lines trace.h calls "maybe" (a blank line inside a chained Python
 * traceback, or a line it cannot place yet) are held at the end of the
 * incident and join only when a later line joins; when the incident closes
 * first they are judged again on their own, after it: one that matches a
 * pattern opens the next incident, the others go to the caller's
 * AssemblerPlain as ordinary lines.
 *
 * The module keeps time as numbers the caller hands in (ms of a monotonic
 * clock), so every rule is tested with a fake clock; the monitor owns the
 * timer (monitor_signal.c).
 */
#ifndef VIGIL_INCIDENT_H
#define VIGIL_INCIDENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pipeline/trace.h"

typedef enum {
  kIncidentMessage = 0, /* one matching line and no trace */
  kIncidentCrash,       /* a header and the trace that followed it */
  kIncidentHealth,      /* a health probe's change of state (monitor_ready.c): not
                           assembled here, no pattern; its lines are the last ones */
  kIncidentKindCount
} IncidentKind;

/* A health incident's pattern_name: which change it was. */
#define INCIDENT_HEALTH_UNHEALTHY "unhealthy"
#define INCIDENT_HEALTH_HEALTHY "healthy"


typedef struct {
  uint64_t seq;
  int stream;    /* StreamId */
  int pattern;   /* the pattern the line matched itself, or -1 */
  TraceFamily family;   /* of that pattern (AssemblerLine's), to judge it again */
  bool generic_header;
  unsigned flags; /* kLine* */
  size_t off;    /* start in the incident's text */
  size_t len;
  uint64_t nr;   /* AssemblerLine's */
} IncidentLine;

typedef struct {
  uint64_t id;             /* per monitor, from 1 */
  int stream;              /* where it opened */
  int pattern;             /* the pattern that opened it */
  bool generic_header;     /* its first line says nothing about the failure */
  TraceState trace;
  IncidentLine *lines;     /* kept lines, in order (maybe-lines last) */
  size_t nlines;
  size_t cap;
  char *text;
  size_t bytes;
  size_t text_cap;
  size_t maybe;            /* the last `maybe` lines are held, not yet joined */
  size_t naming;           /* the line that names the failure (the fingerprint's) */
  uint64_t truncated_lines; /* lines that belonged but were past the bounds */
  uint64_t opened_at;      /* ms, the caller's clock */
  uint64_t last_at;        /* when the last line joined */
} Incident;

/* A line as the assembler sees it. family and generic_header describe the
 * pattern it matched (ignored when pattern < 0). */
typedef struct {
  uint64_t seq;
  int stream;
  int pattern;
  TraceFamily family;
  bool generic_header;
  unsigned flags;
  const char *text;
  size_t len;
  uint64_t nr;   /* the caller's number of the line (kept, never read: its
                    place in its stream, for a restart, monitor_replay.c) */
} AssemblerLine;

/* Called with each incident that closed; the callee owns it (incident_free). */
typedef void (*IncidentDone)(void *ctx, Incident *inc);

/* Called with a held line that did not join and opened nothing: an
 * ordinary line after all (text valid during the call only). */
typedef void (*AssemblerPlain)(void *ctx, const AssemblerLine *line);

typedef struct {
  size_t max_lines;        /* incident.max_lines */
  size_t max_bytes;        /* incident.max_bytes */
  uint64_t quiet_ms;       /* incident.quiet_ms */
  uint64_t max_open_ms;    /* incident.max_open_ms */
  Incident *open[2];       /* per stream */
  uint64_t next_id;        /* the next incident's id */
  IncidentDone done;
  AssemblerPlain plain;
  void *ctx;
} Assembler;

void assembler_init(Assembler *a, size_t max_lines, size_t max_bytes, uint64_t quiet_ms,
                    IncidentDone done, AssemblerPlain plain, void *ctx);

/* Sets incident.max_open_ms (default: no limit). */
void assembler_set_max_open(Assembler *a, uint64_t max_open_ms);

/* Judges one line at now. Returns true when the line was taken into an
 * incident (it joined the open one of its stream, or opened a new one, or
 * is held as a maybe-line); false when it is an ordinary line. Closing the
 * stream's open incident first (the line does not belong) calls done. */
bool assembler_feed(Assembler *a, uint64_t now, const AssemblerLine *line);

/* Closes every open incident that has been quiet for quiet_ms, or open for
 * max_open_ms, at now. */
void assembler_expire(Assembler *a, uint64_t now);

/* When the next open incident goes quiet or reaches max_open_ms, or
 * UINT64_MAX when none is open. */
uint64_t assembler_deadline(const Assembler *a);

/* Closes the open incident of a stream (stream < 0: of both), at the end of
 * the stream or the process. */
void assembler_close(Assembler *a, int stream);

/* Whether an incident is open on either stream. */
bool assembler_busy(const Assembler *a);

/* The id the next incident gets (a restarted monitor's go on from where its
 * engine before was: monitor_replay.c); never below the current one. */
void assembler_set_next_id(Assembler *a, uint64_t next);

/* The open incident of stream (0 or 1), or NULL when none is open there. */
const Incident *assembler_open_incident(const Assembler *a, int stream);

/* Closes nothing: frees the open incidents without calling done. */
void assembler_free(Assembler *a);

IncidentKind incident_kind(const Incident *inc);
/* A kind's name on the wire ("message", "crash", "health"); "message" for
 * anything out of range. */
const char *incident_kind_name(int kind);
/* The kind named name (NUL-terminated), or -1. */
int incident_kind_find(const char *name);
/* The static pattern_name an incident read back (a policy's notification, a
 * journal) may carry: a built-in pattern's name, or a health change; NULL
 * for any other. */
const char *incident_pattern_name_find(const char *name);

/* Takes the next incident id for an incident made outside the assembler (a
 * health change), so that ids stay one sequence per monitor. */
uint64_t assembler_take_id(Assembler *a);
/* The text of line i (not NUL-terminated). */
const char *incident_line_text(const Incident *inc, size_t i);
/* The line the fingerprint is made of: the naming line, else the first. */
const IncidentLine *incident_signature(const Incident *inc);
void incident_free(Incident *inc);

#endif
