/*
 * The incidents a monitor assembled (see incidentlog.h): a circular array
 * of records, searched by id. Ids are given in order, so the record of id
 * is found by its distance from the oldest when none was skipped; a linear
 * search covers the rest (incidents come seldom; this runs per request).
 * The array grows (doubling from 8) until it holds max: allocated whole at
 * the first incident, it cost each monitor that ever had one 31 KiB
 * (bench/scale). It wraps only once full, so while it grows the records
 * are at 0..count-1 and growing moves nothing.
 */
#include "pipeline/incidentlog.h"

#include <stdlib.h>
#include <string.h>

#include "base/memory.h"

/* The first allocation, in records. */
#define INCIDENTLOG_SLOTS_MIN 8

void
incidentlog_init(IncidentLog *log, size_t max)
{
  memset(log, 0, sizeof *log);
  log->max = max ? max : 1;
}

static void
incidentlog_record_free(IncidentRecord *r)
{
  free(r->seqs);
  memset(r, 0, sizeof *r);
}

/* The record a new incident goes into: a free slot, or the oldest's (which
 * is dropped and counted). */
static IncidentRecord *
incidentlog_slot(IncidentLog *log, const NoteIncident *info, size_t nseqs)
{
  if (log->count == log->cap && log->cap < log->max)
    log->records = xgrow_zeroed(log->records, &log->cap, INCIDENTLOG_SLOTS_MIN, log->max,
                                sizeof *log->records);
  IncidentRecord *r;
  if (log->count == log->max) {
    r = &log->records[log->head];
    incidentlog_record_free(r);
    log->head = (log->head + 1) % log->max;
    log->dropped++;
  } else {
    r = &log->records[(log->head + log->count) % log->max];
    log->count++;
  }
  r->info = *info;
  r->info.first_line = 0;
  r->info.nlines = 0;
  r->nseqs = nseqs;
  r->seqs = xmalloc((nseqs ? nseqs : 1) * sizeof *r->seqs);
  return r;
}

void
incidentlog_add(IncidentLog *log, const NoteIncident *info, const Incident *inc)
{
  IncidentRecord *r = incidentlog_slot(log, info, inc->nlines);
  for (size_t i = 0; i < inc->nlines; i++)
    r->seqs[i] = inc->lines[i].seq;
}

void
incidentlog_add_seqs(IncidentLog *log, const NoteIncident *info, const uint64_t *seqs,
                     size_t nseqs)
{
  IncidentRecord *r = incidentlog_slot(log, info, nseqs);
  if (nseqs > 0)
    memcpy(r->seqs, seqs, nseqs * sizeof *seqs);
}

const IncidentRecord *
incidentlog_find(const IncidentLog *log, uint64_t id)
{
  if (log->count == 0)
    return NULL;
  uint64_t oldest = log->records[log->head].info.id;
  if (id >= oldest && id - oldest < log->count) {
    const IncidentRecord *r = &log->records[(log->head + (id - oldest)) % log->max];
    if (r->info.id == id)
      return r;
  }
  for (size_t i = 0; i < log->count; i++) {
    const IncidentRecord *r = &log->records[(log->head + i) % log->max];
    if (r->info.id == id)
      return r;
  }
  return NULL;
}

void
incidentlog_free(IncidentLog *log)
{
  for (size_t i = 0; log->records && i < log->count; i++)
    incidentlog_record_free(&log->records[(log->head + i) % log->max]);
  free(log->records);
  memset(log, 0, sizeof *log);
}
