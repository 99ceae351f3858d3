/*
 * The incidents a monitor assembled, kept for monitor_output {incident: ID}
 * and `vigil output --incident`: for each, what a notification says of it
 * and the seqs of its kept lines (its text stays in the ring, where it
 * already is, so an incident costs its line numbers here, not its text
 * twice). Bounded by incident.history_max: the oldest goes first and is
 * counted.
 */
#ifndef VIGIL_INCIDENTLOG_H
#define VIGIL_INCIDENTLOG_H

#include <stddef.h>
#include <stdint.h>

#include "pipeline/incident.h"
#include "pipeline/notification.h"

typedef struct {
  NoteIncident info;   /* first_line/nlines unused */
  uint64_t *seqs;      /* the kept lines' seqs, in order (owned) */
  size_t nseqs;
} IncidentRecord;

typedef struct {
  IncidentRecord *records; /* circular once full; grown (doubling) up to max */
  size_t cap;
  size_t max;              /* incident.history_max */
  size_t head;             /* the oldest */
  size_t count;
  uint64_t dropped;        /* records that went for room, ever */
} IncidentLog;

void incidentlog_init(IncidentLog *log, size_t max);
/* Records an incident (its kept lines, not the released maybe-lines). */
void incidentlog_add(IncidentLog *log, const NoteIncident *info, const Incident *inc);
/* Records an incident made outside the assembler (a health change) by the
 * seqs of its lines (nseqs may be 0). */
void incidentlog_add_seqs(IncidentLog *log, const NoteIncident *info, const uint64_t *seqs,
                          size_t nseqs);
/* The record of incident id, or NULL when unknown or gone. */
const IncidentRecord *incidentlog_find(const IncidentLog *log, uint64_t id);
void incidentlog_free(IncidentLog *log);

#endif
