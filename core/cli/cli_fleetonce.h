/*
 * Exactly once and in order within one watch over the broker (docs/fleet.md
 * section 3, "Exactly once into the model", "In order", "Epochs"):
 * JetStream delivers at least once, so a message whose ack was lost comes
 * again. The reader keeps, per engine, the epoch and the last seq it
 * printed of the session it watches, and skips (acks without printing)
 * every message at or below that seq under the same epoch. A new epoch is
 * an engine that lost its state directory: its numbering starts again and
 * is taken as new; the few epochs an engine left behind are remembered,
 * and a message of one of those is taken as printed already (one delivered
 * again late must not be printed twice).
 *
 * In order: JetStream delivers a message whose ack never came (a watch or
 * gateway that died holding it) again after the consumer's ack_wait, behind
 * what it delivered since, so seq 15 may come before seq 14 comes again.
 * Only the next seq of an engine is printed: the one after the last printed
 * (a watch acks what it prints at once, so the last printed is also the
 * cursor), or a `dropped` notification whose from_seq reaches it, or seq 1
 * (or a `dropped` from 1) of a new epoch. One further ahead is for the
 * caller to hold back (cli_fleethold.h). An engine with no record starts
 * wherever its first message is: the watch seeds the record from the
 * message its durable acked last, and otherwise the first seq seen in the
 * run is the start.
 *
 * Bounded: at most FLEET_ONCE_MAX engines are remembered; past that the one
 * printed from longest ago is forgotten (and counted), so a flood of
 * invented engine names costs a fixed table, not memory.
 */
#ifndef VIGIL_CLI_FLEETONCE_H
#define VIGIL_CLI_FLEETONCE_H

#include <stdbool.h>
#include <stdint.h>

#include "cli/cli_fleetmsg.h"

#define FLEET_ONCE_MAX 256
/* How many epochs an engine left behind are remembered. */
#define FLEET_ONCE_OLD_EPOCHS 4

typedef struct {
  char engine[FLEET_ENGINE_NAME_MAX + 1];
  char epoch[FLEET_EPOCH_LEN + 1];
  char old_epochs[FLEET_ONCE_OLD_EPOCHS][FLEET_EPOCH_LEN + 1]; /* newest first */
  uint64_t last_seq; /* the last seq printed under epoch */
  uint64_t used;     /* when it was last printed from (the table's own clock) */
} FleetOnceEntry;

typedef struct {
  FleetOnceEntry entries[FLEET_ONCE_MAX];
  unsigned n;
  uint64_t clock;
  uint64_t forgotten; /* engines dropped from a full table */
} FleetOnce;

void cli_fleetonce_init(FleetOnce *o);

/* Where a notification stands (cli_fleetonce_place). */
typedef enum {
  kFleetPlaceDuplicate = 0, /* printed already: ack it unprinted */
  kFleetPlaceNext,          /* the one to print now */
  kFleetPlaceAhead,         /* seqs before it have not been printed: hold it back */
} FleetPlace;

/* Where the notification seq of engine under epoch stands: a duplicate (seq
 * at or below the last printed under the same epoch, or any seq of an epoch
 * the engine has left behind), the next (see above; from_seq is a `dropped`
 * notification's, else 0; any seq of an engine with no record), or ahead.
 * Changes nothing. */
FleetPlace cli_fleetonce_place(const FleetOnce *o, const char *engine, const char *epoch,
                               uint64_t seq, uint64_t from_seq);

/* Records that it has been printed: the engine's epoch becomes epoch (the
 * one before joins the old ones) and its last seq seq (call only for one
 * cli_fleetonce_place did not call a duplicate). */
void cli_fleetonce_mark(FleetOnce *o, const char *engine, const char *epoch, uint64_t seq);

#endif
