/*
 * Incident assembly (see incident.h): one open incident per stream, its
 * lines copied into a growing arena of its own (bounded by max_lines and
 * max_bytes, so a trace of a million frames costs the bound, and the rest is
 * a count). Only lines that matched a pattern or belong to an open trace
 * come here at all; every other line costs the caller one test of
 * `pattern < 0 && !assembler_busy()`.
 */
#include "pipeline/incident.h"

#include <stdlib.h>
#include <string.h>

#include "base/memory.h"
#include "pipeline/crashpatterns.h"

void
assembler_init(Assembler *a, size_t max_lines, size_t max_bytes, uint64_t quiet_ms,
               IncidentDone done, AssemblerPlain plain, void *ctx)
{
  memset(a, 0, sizeof *a);
  a->max_lines = max_lines ? max_lines : 1;
  a->max_bytes = max_bytes ? max_bytes : 1;
  a->quiet_ms = quiet_ms;
  a->max_open_ms = UINT64_MAX;
  a->next_id = 1;
  a->done = done;
  a->plain = plain;
  a->ctx = ctx;
}

void
assembler_set_max_open(Assembler *a, uint64_t max_open_ms)
{
  a->max_open_ms = max_open_ms ? max_open_ms : UINT64_MAX;
}

/* When inc is due to close: quiet_ms after its last line, or max_open_ms
 * after its first, whichever is sooner. */
static uint64_t
assembler_due(const Assembler *a, const Incident *inc)
{
  uint64_t quiet = inc->last_at + a->quiet_ms;
  if (a->max_open_ms != UINT64_MAX && inc->opened_at + a->max_open_ms < quiet)
    return inc->opened_at + a->max_open_ms;
  return quiet;
}

/* Appends a line to inc if the bounds allow, else counts it. The first line
 * is always kept (cut to max_bytes), so an incident is never empty. */
static void
incident_append(Incident *inc, const Assembler *a, const AssemblerLine *line)
{
  size_t len = line->len;
  /* Once a line was cut, every later one is: the kept lines stay the
   * trace's beginning, without holes. */
  if (inc->nlines > 0 && (inc->truncated_lines > 0 || inc->nlines >= a->max_lines ||
                          inc->bytes + len > a->max_bytes)) {
    inc->truncated_lines++;
    return;
  }
  if (len > a->max_bytes)
    len = a->max_bytes;
  if (inc->nlines == inc->cap) {
    inc->cap = inc->cap ? 2 * inc->cap : 8;
    inc->lines = xrealloc(inc->lines, inc->cap * sizeof *inc->lines);
  }
  if (inc->bytes + len > inc->text_cap) {
    size_t want = inc->text_cap ? 2 * inc->text_cap : 512;
    while (want < inc->bytes + len)
      want *= 2;
    inc->text_cap = want;
    inc->text = xrealloc(inc->text, inc->text_cap);
  }
  IncidentLine *l = &inc->lines[inc->nlines++];
  l->seq = line->seq;
  l->stream = line->stream;
  l->pattern = line->pattern;
  l->family = line->family;
  l->generic_header = line->generic_header;
  l->flags = line->flags;
  l->off = inc->bytes;
  l->len = len;
  l->nr = line->nr;
  if (len)
    memcpy(inc->text + inc->bytes, line->text, len);
  inc->bytes += len;
}

/* The held lines an incident let go, copied out of it (it is handed over
 * before they are judged again). TRACE_MAYBE_MAX bounds how many. */
typedef struct {
  AssemblerLine lines[TRACE_MAYBE_MAX + 1];
  char *text[TRACE_MAYBE_MAX + 1];
  size_t n;
} Released;

static bool assembler_judge_open(Assembler *a, uint64_t now, const AssemblerLine *line);

/* Closes the open incident of stream; its held maybe-lines are then judged
 * again on their own, after it, at now. */
static void
assembler_close_stream(Assembler *a, int stream, uint64_t now)
{
  Incident *inc = a->open[stream];
  if (inc == NULL)
    return;
  a->open[stream] = NULL;
  Released r;
  r.n = 0;
  for (size_t i = inc->nlines - inc->maybe; i < inc->nlines && r.n <= TRACE_MAYBE_MAX; i++) {
    const IncidentLine *l = &inc->lines[i];
    r.text[r.n] = xmemdupz(inc->text + l->off, l->len);
    r.lines[r.n] = (AssemblerLine){l->seq,   l->stream, l->pattern,  l->family, l->generic_header,
                                   l->flags, r.text[r.n], l->len, l->nr};
    r.n++;
  }
  inc->nlines -= inc->maybe;
  inc->maybe = 0;
  a->done(a->ctx, inc);
  for (size_t i = 0; i < r.n; i++) {
    if (!assembler_judge_open(a, now, &r.lines[i]) && a->plain)
      a->plain(a->ctx, &r.lines[i]);
    free(r.text[i]);
  }
}

/* Opens an incident on the line's stream with the line as its header. */
static void
assembler_open(Assembler *a, uint64_t now, const AssemblerLine *line)
{
  Incident *inc = xcalloc(1, sizeof *inc);
  inc->id = a->next_id++;
  inc->stream = line->stream;
  inc->pattern = line->pattern;
  inc->generic_header = line->generic_header;
  inc->opened_at = now;
  inc->last_at = now;
  trace_begin(&inc->trace, line->family, line->text, line->len);
  incident_append(inc, a, line);
  a->open[line->stream] = inc;
}

/* A line the open incident's trace judged: joins, or is held, or closes it.
 * Returns whether the line was taken. */
static bool
assembler_judge(Assembler *a, uint64_t now, Incident *inc, const AssemblerLine *line)
{
  TraceVerdict v = trace_next(&inc->trace, line->text, line->len);
  if (v == kTraceEnds) {
    assembler_close_stream(a, line->stream, now);
    return false;
  }
  size_t before = inc->nlines;
  incident_append(inc, a, line);
  bool kept = inc->nlines > before;
  inc->last_at = now;
  if (v == kTraceMaybe) {
    if (kept)
      inc->maybe++;
    return true;
  }
  /* The line joined: so did every held line before it. */
  inc->maybe = 0;
  if (v == kTraceJoinsNaming && kept)
    inc->naming = inc->nlines - 1;
  if (v == kTraceJoinsLast)
    assembler_close_stream(a, line->stream, now);
  return true;
}

/* Judges a line against whatever incident is open on its stream, and opens
 * one when it matched and none took it. Closing an incident may open
 * another (from its held lines), which then judges the line in turn; each
 * round closes an incident, so this ends. */
static bool
assembler_judge_open(Assembler *a, uint64_t now, const AssemblerLine *line)
{
  int stream = line->stream ? 1 : 0;
  for (Incident *inc = a->open[stream]; inc != NULL; inc = a->open[stream]) {
    /* A gap (or an age) the timer has not reported yet still ends it. */
    if (now >= assembler_due(a, inc))
      assembler_close_stream(a, stream, now);
    else if (assembler_judge(a, now, inc, line))
      return true;
  }
  if (line->pattern < 0)
    return false;
  assembler_open(a, now, line);
  return true;
}

bool
assembler_feed(Assembler *a, uint64_t now, const AssemblerLine *line)
{
  return assembler_judge_open(a, now, line);
}

void
assembler_expire(Assembler *a, uint64_t now)
{
  for (int s = 0; s < 2; s++)
    while (a->open[s] && now >= assembler_due(a, a->open[s]))
      assembler_close_stream(a, s, now);
}

uint64_t
assembler_deadline(const Assembler *a)
{
  uint64_t d = UINT64_MAX;
  for (int s = 0; s < 2; s++)
    if (a->open[s] && assembler_due(a, a->open[s]) < d)
      d = assembler_due(a, a->open[s]);
  return d;
}

void
assembler_close(Assembler *a, int stream)
{
  for (int s = 0; s < 2; s++)
    if (stream < 0 || stream == s) {
      /* Held lines may open an incident again: close until none is open. */
      while (a->open[s])
        assembler_close_stream(a, s, a->open[s]->last_at);
    }
}

bool
assembler_busy(const Assembler *a)
{
  return a->open[0] != NULL || a->open[1] != NULL;
}

void
assembler_set_next_id(Assembler *a, uint64_t next)
{
  if (next > a->next_id)
    a->next_id = next;
}

const Incident *
assembler_open_incident(const Assembler *a, int stream)
{
  return stream == 0 || stream == 1 ? a->open[stream] : NULL;
}

void
assembler_free(Assembler *a)
{
  for (int s = 0; s < 2; s++) {
    incident_free(a->open[s]);
    a->open[s] = NULL;
  }
}

/* A crash has a trace: more than its header line joined (kept or counted). */
IncidentKind
incident_kind(const Incident *inc)
{
  return inc->nlines > 1 || inc->truncated_lines > 0 ? kIncidentCrash : kIncidentMessage;
}

static const char *const incident_kind_names[kIncidentKindCount] = {"message", "crash",
                                                                  "health"};

const char *
incident_kind_name(int kind)
{
  return kind >= 0 && kind < kIncidentKindCount ? incident_kind_names[kind] : "message";
}

int
incident_kind_find(const char *name)
{
  for (int k = 0; k < kIncidentKindCount; k++)
    if (strcmp(name, incident_kind_names[k]) == 0)
      return k;
  return -1;
}

const char *
incident_pattern_name_find(const char *name)
{
  if (strcmp(name, INCIDENT_HEALTH_UNHEALTHY) == 0)
    return INCIDENT_HEALTH_UNHEALTHY;
  if (strcmp(name, INCIDENT_HEALTH_HEALTHY) == 0)
    return INCIDENT_HEALTH_HEALTHY;
  int p = crashpatterns_find(name);
  return p >= 0 ? crashpatterns_get((size_t)p)->name : NULL;
}

uint64_t
assembler_take_id(Assembler *a)
{
  return a->next_id++;
}

const char *
incident_line_text(const Incident *inc, size_t i)
{
  return inc->text + inc->lines[i].off;
}

const IncidentLine *
incident_signature(const Incident *inc)
{
  if (inc->generic_header && inc->naming > 0 && inc->naming < inc->nlines)
    return &inc->lines[inc->naming];
  return &inc->lines[0];
}

void
incident_free(Incident *inc)
{
  if (inc == NULL)
    return;
  free(inc->lines);
  free(inc->text);
  free(inc);
}
