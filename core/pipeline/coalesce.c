/*
 * Coalescing by fingerprint (see coalesce.h). The table is a plain array
 * searched linearly: it holds at most fingerprints_max entries (256 by
 * default) and is consulted once per incident, never per line, so a hash
 * table would buy nothing a person could notice. It grows (doubling from 8)
 * as fingerprints come: allocated whole at the first incident, it cost each
 * monitor that ever had one 25 KiB (bench/scale), for a table most
 * monitors fill with a handful.
 */
#include "pipeline/coalesce.h"

#include <stdlib.h>
#include <string.h>

#include "base/memory.h"

/* The table's first allocation, in entries. */
#define COALESCE_SLOTS_MIN 8

void
coalesce_init(Coalescer *c, uint64_t window_ms, uint64_t summary_after_ms, size_t max)
{
  memset(c, 0, sizeof *c);
  c->window_ms = window_ms;
  c->summary_after_ms = summary_after_ms;
  c->max = max ? max : 1;
}

static CoalesceEntry *
coalesce_find(Coalescer *c, uint64_t fp)
{
  for (size_t i = 0; i < c->count; i++)
    if (c->entries[i].fingerprint == fp)
      return &c->entries[i];
  return NULL;
}

/* Moves an entry's unreported series into *out (a copy the caller owns) and
 * restarts its count. */
static void
coalesce_series_out(CoalesceEntry *e, CoalesceSummary *out)
{
  memset(out, 0, sizeof *out);
  out->fingerprint = e->fingerprint;
  out->incident_id = e->incident_id;
  out->pattern = e->pattern;
  out->kind = e->kind;
  out->repeats = e->repeats;
  out->span_ms = e->series_last_at - e->series_first_at;
  out->first_wall = e->series_first_wall;
  out->last_wall = e->series_last_wall;
  out->last_seq = e->last_seq;
  out->last_stream = e->last_stream;
  out->last_line = e->last_line;
  out->last_len = e->last_len;
  e->last_line = NULL;
  e->last_len = 0;
  e->repeats = 0;
}

/* A free slot: the next one, or the entry notified longest ago, whose
 * unreported series is kept for the caller. */
static CoalesceEntry *
coalesce_slot(Coalescer *c)
{
  if (c->count == c->cap && c->cap < c->max)
    c->entries = xgrow_zeroed(c->entries, &c->cap, COALESCE_SLOTS_MIN, c->max, sizeof *c->entries);
  if (c->count < c->max)
    return &c->entries[c->count++];
  CoalesceEntry *oldest = &c->entries[0];
  for (size_t i = 1; i < c->count; i++)
    if (c->entries[i].notified_at < oldest->notified_at)
      oldest = &c->entries[i];
  c->evicted++;
  if (oldest->repeats > 0) {
    if (c->pending_evicted == NULL)
      c->pending_evicted = xcalloc(1, sizeof *c->pending_evicted);
    else
      coalesce_summary_free(c->pending_evicted);
    coalesce_series_out(oldest, c->pending_evicted);
  }
  free(oldest->last_line);
  memset(oldest, 0, sizeof *oldest);
  return oldest;
}

CoalesceVerdict
coalesce_judge(Coalescer *c, uint64_t now, int64_t wall, uint64_t fp, uint64_t incident_id,
               int pattern, int kind, uint64_t seq, int stream, const char *line, size_t len,
               CoalesceSummary *prior)
{
  if (prior)
    memset(prior, 0, sizeof *prior);
  if (c->window_ms == 0)
    return kCoalesceNotify;
  CoalesceEntry *e = coalesce_find(c, fp);
  if (e && now < e->notified_at + c->window_ms) {
    if (e->repeats == 0) {
      /* The series is measured from the occurrence before its first
       * repeat: "repeated 1 time in 3.2s" is the gap between the two. */
      e->series_first_at = e->seen_at;
      e->series_first_wall = e->seen_wall;
    }
    e->repeats++;
    c->coalesced_total++;
    e->series_last_at = e->seen_at = now;
    e->series_last_wall = e->seen_wall = wall;
    free(e->last_line);
    e->last_line = xmemdupz(line, len);
    e->last_len = len;
    e->last_seq = seq;
    e->last_stream = stream;
    return kCoalesceRepeat;
  }
  if (e == NULL) {
    e = coalesce_slot(c);
    e->fingerprint = fp;
  } else if (e->repeats > 0) {
    /* The window ran out during a series: this incident reports it. */
    if (prior)
      coalesce_series_out(e, prior);
    else
      e->repeats = 0;
  }
  free(e->last_line);
  e->last_line = NULL;
  e->incident_id = incident_id;
  e->pattern = pattern;
  e->kind = kind;
  e->notified_at = e->seen_at = now;
  e->seen_wall = wall;
  return kCoalesceNotify;
}

uint64_t
coalesce_deadline(const Coalescer *c)
{
  uint64_t d = UINT64_MAX;
  for (size_t i = 0; i < c->count; i++) {
    const CoalesceEntry *e = &c->entries[i];
    if (e->repeats > 0 && e->series_last_at + c->summary_after_ms < d)
      d = e->series_last_at + c->summary_after_ms;
  }
  return d;
}

bool
coalesce_take_due(Coalescer *c, uint64_t now, bool all, CoalesceSummary *out)
{
  for (size_t i = 0; i < c->count; i++) {
    CoalesceEntry *e = &c->entries[i];
    if (e->repeats > 0 && (all || now >= e->series_last_at + c->summary_after_ms)) {
      coalesce_series_out(e, out);
      return true;
    }
  }
  return false;
}

bool
coalesce_take_evicted(Coalescer *c, CoalesceSummary *out)
{
  if (c->pending_evicted == NULL)
    return false;
  *out = *c->pending_evicted;
  free(c->pending_evicted);
  c->pending_evicted = NULL;
  return true;
}

uint64_t
coalesce_unreported(const Coalescer *c)
{
  uint64_t n = 0;
  for (size_t i = 0; i < c->count; i++)
    n += c->entries[i].repeats;
  if (c->pending_evicted)
    n += c->pending_evicted->repeats;
  return n;
}

void
coalesce_summary_free(CoalesceSummary *s)
{
  free(s->last_line);
  s->last_line = NULL;
  s->last_len = 0;
}

void
coalesce_free(Coalescer *c)
{
  for (size_t i = 0; i < c->count; i++)
    free(c->entries[i].last_line);
  free(c->entries);
  if (c->pending_evicted) {
    coalesce_summary_free(c->pending_evicted);
    free(c->pending_evicted);
  }
  memset(c, 0, sizeof *c);
}
