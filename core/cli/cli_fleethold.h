/*
 * Holding back what comes ahead, for a watch over the broker (docs/fleet.md
 * section 3, In order). A notification ahead of the next seq of its engine
 * is not printed: it is nak'ed with a delay so that JetStream delivers it
 * again later, by when what comes before it (delivered again after the
 * consumer's ack_wait) has been printed. This table remembers, per message
 * (by its stream seq), when it was first held back, so that one held for
 * longer than the bound (twice the ack_wait and 30 s: what it waits for is
 * not coming, the stream's max_age took it or the engine could never
 * publish it) is printed after all, with the gap counted.
 *
 * Bounded: at most FLEET_HOLD_MAX messages are remembered; past that the
 * one held first is forgotten (counted), and its hold starts again on its
 * next delivery. The clock is an argument, so tests use their own.
 */
#ifndef VIGIL_CLI_FLEETHOLD_H
#define VIGIL_CLI_FLEETHOLD_H

#include <stdint.h>

#define FLEET_HOLD_MAX 1024
/* The nak's delay is a quarter of the ack_wait, within these bounds. */
#define FLEET_HOLD_NAK_MIN_MS 100
#define FLEET_HOLD_NAK_MAX_MS 5000
/* The bound is twice the ack_wait and this. */
#define FLEET_HOLD_EXTRA_MS 30000

typedef struct {
  uint64_t stream_seq;
  int64_t first_ms; /* when it was first held back */
} FleetHoldEntry;

typedef struct {
  FleetHoldEntry entries[FLEET_HOLD_MAX];
  unsigned n;
  int64_t nak_delay_ms; /* from the ack_wait (cli_fleethold_init) */
  int64_t bound_ms;
  uint64_t forgotten; /* entries dropped from a full table */
} FleetHold;

/* What to do with a message ahead (cli_fleethold_hold). */
typedef enum {
  kFleetHoldWait = 0, /* nak it with h->nak_delay_ms: it comes again later */
  kFleetHoldTake,     /* held past the bound: print it, the gap counted */
} FleetHoldVerdict;

/* An empty table for a consumer whose ack_wait is ack_wait_ms (0 or less:
 * JetStream's default of 30 s). */
void cli_fleethold_init(FleetHold *h, int64_t ack_wait_ms);

/* The message at stream_seq is ahead, now_ms: kFleetHoldWait (its first
 * hold is remembered), or kFleetHoldTake once it has been held bound_ms
 * (it is forgotten; *held_ms says how long it was held). */
FleetHoldVerdict cli_fleethold_hold(FleetHold *h, uint64_t stream_seq, int64_t now_ms,
                                    int64_t *held_ms);

/* Forgets the message at stream_seq (printed, or a duplicate). */
void cli_fleethold_forget(FleetHold *h, uint64_t stream_seq);

#endif
