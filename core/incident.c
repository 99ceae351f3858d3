/*
 * Incident assembly (see incident.h): one open incident per stream, its
 * lines copied into a growing arena of its own (bounded by max_lines and
 * max_bytes, so a trace of a million frames costs the bound, and the rest is
 * a count). Only lines that matched a pattern or belong to an open trace
 * come here at all; every other line costs the caller one test of
 * `pattern < 0 && !assembler_busy()`.
 */
#include "incident.h"

#include <stdlib.h>
#include <string.h>

#include "memory.h"

void
assembler_init(Assembler *a, size_t max_lines, size_t max_bytes, uint64_t quiet_ms,
               IncidentDone done, void *ctx)
{
  memset(a, 0, sizeof *a);
  a->max_lines = max_lines ? max_lines : 1;
  a->max_bytes = max_bytes ? max_bytes : 1;
  a->quiet_ms = quiet_ms;
  a->next_id = 1;
  a->done = done;
  a->ctx = ctx;
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
  l->flags = line->flags;
  l->off = inc->bytes;
  l->len = len;
  if (len)
    memcpy(inc->text + inc->bytes, line->text, len);
  inc->bytes += len;
}

/* Closes the open incident of stream: held maybe-lines are released. */
static void
assembler_close_stream(Assembler *a, int stream)
{
  Incident *inc = a->open[stream];
  if (inc == NULL)
    return;
  a->open[stream] = NULL;
  size_t released = inc->maybe;
  inc->nlines -= released;
  inc->maybe = 0;
  a->done(a->ctx, inc, released);
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
    assembler_close_stream(a, line->stream);
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
    assembler_close_stream(a, line->stream);
  return true;
}

bool
assembler_feed(Assembler *a, uint64_t now, const AssemblerLine *line)
{
  int stream = line->stream ? 1 : 0;
  Incident *inc = a->open[stream];
  if (inc) {
    /* A gap the timer has not reported yet still ends the incident. */
    if (now >= inc->last_at + a->quiet_ms)
      assembler_close_stream(a, stream);
    else if (assembler_judge(a, now, inc, line))
      return true;
  }
  if (line->pattern < 0)
    return false;
  assembler_open(a, now, line);
  return true;
}

void
assembler_expire(Assembler *a, uint64_t now)
{
  for (int s = 0; s < 2; s++)
    if (a->open[s] && now >= a->open[s]->last_at + a->quiet_ms)
      assembler_close_stream(a, s);
}

uint64_t
assembler_deadline(const Assembler *a)
{
  uint64_t d = UINT64_MAX;
  for (int s = 0; s < 2; s++)
    if (a->open[s] && a->open[s]->last_at + a->quiet_ms < d)
      d = a->open[s]->last_at + a->quiet_ms;
  return d;
}

void
assembler_close(Assembler *a, int stream)
{
  for (int s = 0; s < 2; s++)
    if (stream < 0 || stream == s)
      assembler_close_stream(a, s);
}

bool
assembler_busy(const Assembler *a)
{
  return a->open[0] != NULL || a->open[1] != NULL;
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
