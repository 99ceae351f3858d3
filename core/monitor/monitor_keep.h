/*
 * A monitor's directory in the state directory (docs/restart.md): what of
 * the monitor must outlive the engine. It is made when the monitor starts,
 * holds the two spools its capture is kept in (spool.h), the listening
 * socket by which a later engine reaches its keeper, and the keeper's exit
 * file; it is removed when the engine forgets the monitor. One that an
 * engine finds at start-up was left by an engine that died without
 * stopping its monitor (monitor_keep_sweep).
 */
#ifndef VIGIL_MONITOR_KEEP_H
#define VIGIL_MONITOR_KEEP_H

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "pipeline/eventkeep.h"
#include "store/keepspec.h"
#include "pipeline/notification.h"
#include "proc/proc.h"
#include "pipeline/spool.h"

/* How far the engine had processed a monitor's output, and what it had
 * counted and told by then: mapped shared from the monitor's directory (the
 * owner's part of its stdout spool's header; a file of its own in a
 * directory an older engine made), written after each chunk the engine processes and each
 * notification (a few stores), read by the engine that takes the monitor
 * over (monitor_replay.c says how it is kept and replayed).
 *
 * The cut and what goes with it (ring_next_seq, the ring's counters,
 * nr_at_cut) move only while nothing matched waits to be told: no batch
 * open, no incident assembling. The rest moves at every store. */
typedef struct {
  char magic[8];          /* "VIGLCKPT" */
  uint32_t version;
  uint32_t pad;
  uint64_t cut[2];        /* per stream: every byte before it processed */
  uint64_t ring_next_seq; /* the seq the next line gets */
  uint64_t lines, matched, unmatched, dropped; /* the ring's counters */
  uint64_t notifications;
  /* Added within version 1 (an older engine's page has them 0: none). */
  uint64_t nr_at_cut[2];  /* per stream: how many of its lines lie before the cut */
  uint64_t told_nr[2];    /* per stream: its lines numbered up to this are decided
                             (told, or judged not to be): a replay tells them not again */
  uint64_t incidents;     /* incidents decided (assembled, not waiting in a batch) */
  uint64_t incident_next; /* the id the next incident gets */
} KeepCheckpoint;

typedef struct {
  int monitors_fd;  /* the state directory's monitors/ (borrowed) */
  char name[64];    /* the monitor's id: its directory's name */
  int dir_fd;       /* monitors/<id> */
  int listen_fd;    /* keeper.sock, listening; handed to the keeper */
  Spool spool[2];   /* stdout, stderr */
  int nspools;      /* made so far */
  KeepCheckpoint *ckpt; /* mapped; NULL: none (an older directory, or no
                           room for it, or its file cut short) */
  int ckpt_guard;   /* its mapping's mapfile slot; -1 in a spool */
  bool ckpt_in_spool; /* it is the owner's part of spool[0]'s header (spool.h) */
  EventKeep events;  /* the event log's copy (eventkeep.h), opened by the monitor */
} MonitorKeep;

/* Makes monitors/<id> (0700, must not exist), its spools of cap bytes each
 * (monitor.capture_max_bytes) and the keeper's listening socket. On error
 * (spawn_failed naming the file and the OS error) nothing is left. A file
 * system with no room for the spools' headers or the checkpoint is no
 * error: the spools are made broken (spool.h) and the checkpoint left
 * out, and the monitor runs with what it has. */
int monitor_keep_open(MonitorKeep *k, int monitors_fd, const char *id, uint64_t cap,
                      VigilError *err);

/* Readies k for a new keeper of the same monitor (a restart of its
 * program, monitor_restart.c): what the keeper before left is removed and
 * keeper.sock listens anew on k->listen_fd (handed to the new keeper). The
 * spools, the checkpoint and the event log go on. spawn_failed naming the
 * file and the OS error. */
int monitor_keep_rearm(MonitorKeep *k, VigilError *err);

/* Stores a checkpoint (its words in Notification's order, kCkpt*) into k's
 * page. A page whose file was cut short under it (a SIGBUS caught,
 * mapfile.h) is let go, with a log line: the monitor goes on without a
 * checkpoint. */
void monitor_keep_set_checkpoint(MonitorKeep *k, const uint64_t v[NOTIFICATION_CHECKPOINT_WORDS]);

/* A restarted engine found in a session's journal a notification of this
 * monitor told with checkpoint v: when v is past the page's (the engine
 * before died between the two), the page takes v. Returns whether it did. */
bool monitor_keep_catch_up(MonitorKeep *k, const uint64_t v[NOTIFICATION_CHECKPOINT_WORDS]);

/* Unmaps, closes and removes the directory with its files. */
void monitor_keep_close(MonitorKeep *k);

/* Unmaps and closes, leaving the directory as it is. */
void monitor_keep_close_only(MonitorKeep *k);

/* The monitor has ended and its ending is told: the directory and its
 * files go now (nothing is left for a restarted engine to take over, so
 * an ending is never told twice), while the spools stay mapped for the
 * ended monitor's output until monitor_keep_close. */
void monitor_keep_ended(MonitorKeep *k);

/* Takes a monitor over (the engine's engine_adopt): keep (which becomes
 * the taker's on true), its spec, and its child through its keeper (po's
 * descriptors become the taker's, closed on false). False: err says why. */
typedef bool (*MonitorKeepTake)(void *ctx, MonitorKeep *keep, const KeepSpec *spec,
                                ProcAdoptOptions *po, VigilError *err);

/* At start-up: every directory in monitors/ was left by an engine that
 * ended without stopping its monitor (a crash, SIGKILL). Each is taken
 * over with take when it can be: its spec sound, its session named, its
 * keeper attached (or gone, leaving the exit it recorded). One that cannot
 * is reported in the log (why, its keeper, its exit, what it spooled and
 * lost), its keeper stopped, and the directory removed; an unsound spec
 * is first set aside into state_fd's aside/ (statefile.h). take NULL: none is
 * taken. Returns how many were taken. A file there that is not a private
 * directory of ours is reported and left alone. */
int monitor_keep_sweep(int state_fd, int monitors_fd, MonitorKeepTake take, void *ctx);

#endif
