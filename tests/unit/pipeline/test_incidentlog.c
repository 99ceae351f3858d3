/*
 * Unit tests of the incident history (incidentlog.c): every incident is
 * found by its id with its lines' seqs until incident.history_max newer
 * ones have come, the oldest going first and counted; the history grows
 * with the incidents instead of being allocated at its bound.
 */
#include <string.h>

#include "check.h"
#include "pipeline/incidentlog.h"

/* Adds incident id with nlines lines whose seqs are id * 100 + k. */
static void
add(IncidentLog *log, uint64_t id, size_t nlines)
{
  NoteIncident info;
  memset(&info, 0, sizeof info);
  info.id = id;
  info.first_seq = id * 100;
  info.last_seq = id * 100 + nlines - 1;
  IncidentLine lines[8];
  memset(lines, 0, sizeof lines);
  for (size_t k = 0; k < nlines; k++)
    lines[k].seq = id * 100 + k;
  Incident inc;
  memset(&inc, 0, sizeof inc);
  inc.lines = lines;
  inc.nlines = nlines;
  incidentlog_add(log, &info, &inc);
}

/* Whether incident id is found with its nlines seqs. */
static bool
found(const IncidentLog *log, uint64_t id, size_t nlines)
{
  const IncidentRecord *r = incidentlog_find(log, id);
  if (r == NULL || r->info.id != id || r->nseqs != nlines)
    return false;
  for (size_t k = 0; k < nlines; k++)
    if (r->seqs[k] != id * 100 + k)
      return false;
  return true;
}

TEST(incidents_are_found_until_the_bound_pushes_them_out)
{
  IncidentLog log;
  incidentlog_init(&log, 20);
  add(&log, 1, 3);
  CHECK(log.cap < 20); /* one incident: a small history, not the bound */
  CHECK(found(&log, 1, 3));
  for (uint64_t id = 2; id <= 20; id++)
    add(&log, id, 1 + id % 5);
  CHECK_INT(log.cap, 20);
  for (uint64_t id = 1; id <= 20; id++)
    CHECK(found(&log, id, id == 1 ? 3 : 1 + id % 5));
  CHECK_INT(log.dropped, 0);
  for (uint64_t id = 21; id <= 25; id++)
    add(&log, id, 2);
  CHECK_INT(log.dropped, 5);
  for (uint64_t id = 1; id <= 5; id++)
    CHECK(incidentlog_find(&log, id) == NULL);
  for (uint64_t id = 6; id <= 25; id++)
    CHECK(found(&log, id, id > 20 ? 2 : 1 + id % 5));
  incidentlog_free(&log);
  CHECK(log.records == NULL);
}

int
main(void)
{
  RUN(incidents_are_found_until_the_bound_pushes_them_out);
  return check_summary();
}
