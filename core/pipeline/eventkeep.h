/*
 * A monitor's event log kept in its directory (docs/restart.md): every
 * event the log takes is also written into a file mapped shared, so a
 * restarted engine gives the monitor back the events it had, with their
 * ids, times and texts, and goes on numbering after them.
 *
 * The file (`events`) is a 64-byte header and one 512-byte slot per event the
 * log may hold (eventlog_slots of monitor.event_log_max): event id N lives in slot
 * (N - 1) mod slots, so the file is the log's own ring and never grows.
 * Writing one is a copy into the page cache (no system call on the data
 * path); the file is sparse, so slots never written cost nothing. A slot
 * ends with a sum of its bytes: one torn by a crash is skipped.
 *
 * Each slot records the ring's next seq when the event was logged. A
 * restarted engine replays silently what the checkpoint covers and as new
 * output what came after (monitor_replay); the events of that later part
 * are logged again by the replay, so restoring drops every kept event
 * logged after the checkpoint, and none is in the log twice.
 *
 * What does not fit a slot is cut: a match's line or a reason longer than
 * EVENTKEEP_TEXT_MAX bytes comes back cut, with "..." at its end.
 *
 * The slots' blocks are reserved ahead of the writes (mapfile.h), so a
 * full file system stops the keeping instead of raising SIGBUS; so does a
 * file cut short under the mapping. Then the file is let go, `why` says
 * why, and the events logged from then on are counted (unkept): the log
 * in memory has them all the same.
 */
#ifndef VIGIL_EVENTKEEP_H
#define VIGIL_EVENTKEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pipeline/eventlog.h"

#define EVENTKEEP_NAME "events"
#define EVENTKEEP_TEXT_MAX 400

typedef struct {
  void *map;        /* the header and the slots, mapped shared; NULL: none */
  size_t bytes;
  size_t slots;
  int fd;           /* the file, for reserving its blocks */
  size_t reserved;  /* bytes [0, reserved) have their blocks */
  int guard;        /* the mapping's mapfile slot */
  char why[96];     /* why it stopped keeping; "" while it keeps (or never did) */
  uint64_t unkept;  /* events not kept since */
} EventKeep;

/* Maps dir_fd/events with slots slots, making it when create (it must
 * not exist then). False when it cannot (the event log is then not kept,
 * and the monitor goes on). */
bool eventkeep_open(EventKeep *k, int dir_fd, size_t slots, bool create);
void eventkeep_close(EventKeep *k);

/* Writes ev (just logged into log; ring_next_seq: the ring's next seq then)
 * and the log's counts of dropped events. False when it is not kept: it
 * stopped keeping (why), now or before. */
bool eventkeep_put(EventKeep *k, const Event *ev, uint64_t ring_next_seq, const EventLog *log);

/* Fills log (empty, initialised) with the kept events logged while the
 * ring's next seq was at most until_seq, oldest first, their ids kept, and
 * the dropped counts. Returns how many it restored. */
size_t eventkeep_restore(const EventKeep *k, EventLog *log, uint64_t until_seq);

#endif
