/*
 * The incidents a monitor assembled (see incidentlog.h): a circular array
 * of records, searched by id. Ids are given in order, so the record of id
 * is found by its distance from the oldest when none was skipped; a linear
 * search covers the rest (incidents come seldom; this runs per request).
 */
#include "incidentlog.h"

#include <stdlib.h>
#include <string.h>

#include "memory.h"

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

void
incidentlog_add(IncidentLog *log, const NoteIncident *info, const Incident *inc)
{
  if (log->records == NULL)
    log->records = xcalloc(log->max, sizeof *log->records);
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
  r->nseqs = inc->nlines;
  r->seqs = xmalloc((inc->nlines ? inc->nlines : 1) * sizeof *r->seqs);
  for (size_t i = 0; i < inc->nlines; i++)
    r->seqs[i] = inc->lines[i].seq;
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
