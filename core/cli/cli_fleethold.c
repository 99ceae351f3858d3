/*
 * The hold-back table of a watch over the broker (see cli_fleethold.h). A
 * linear table: what is held at once is what one ack_wait redelivers late,
 * a handful in practice; the bound only matters against a flood.
 */
#include "cli/cli_fleethold.h"

#include <string.h>

/* JetStream's own ack_wait when a consumer says none. */
#define FLEET_HOLD_DEFAULT_ACK_WAIT_MS 30000

void
cli_fleethold_init(FleetHold *h, int64_t ack_wait_ms)
{
  memset(h, 0, sizeof *h);
  if (ack_wait_ms <= 0)
    ack_wait_ms = FLEET_HOLD_DEFAULT_ACK_WAIT_MS;
  int64_t delay = ack_wait_ms / 4;
  if (delay < FLEET_HOLD_NAK_MIN_MS)
    delay = FLEET_HOLD_NAK_MIN_MS;
  if (delay > FLEET_HOLD_NAK_MAX_MS)
    delay = FLEET_HOLD_NAK_MAX_MS;
  h->nak_delay_ms = delay;
  h->bound_ms = 2 * ack_wait_ms + FLEET_HOLD_EXTRA_MS;
}

/* The index of stream_seq's entry, or -1. */
static int
fleethold_find(const FleetHold *h, uint64_t stream_seq)
{
  for (unsigned i = 0; i < h->n; i++)
    if (h->entries[i].stream_seq == stream_seq)
      return (int)i;
  return -1;
}

/* Removes entry i, keeping the rest in the order they were held. */
static void
fleethold_remove(FleetHold *h, unsigned i)
{
  memmove(&h->entries[i], &h->entries[i + 1], (h->n - i - 1) * sizeof h->entries[0]);
  h->n--;
}

FleetHoldVerdict
cli_fleethold_hold(FleetHold *h, uint64_t stream_seq, int64_t now_ms, int64_t *held_ms)
{
  int i = fleethold_find(h, stream_seq);
  if (i < 0) {
    if (h->n == FLEET_HOLD_MAX) {
      fleethold_remove(h, 0); /* the one held first */
      h->forgotten++;
    }
    h->entries[h->n++] = (FleetHoldEntry){.stream_seq = stream_seq, .first_ms = now_ms};
    *held_ms = 0;
    return kFleetHoldWait;
  }
  *held_ms = now_ms - h->entries[i].first_ms;
  if (*held_ms < h->bound_ms)
    return kFleetHoldWait;
  fleethold_remove(h, (unsigned)i);
  return kFleetHoldTake;
}

void
cli_fleethold_forget(FleetHold *h, uint64_t stream_seq)
{
  int i = fleethold_find(h, stream_seq);
  if (i >= 0)
    fleethold_remove(h, (unsigned)i);
}
