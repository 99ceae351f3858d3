/*
 * The per-engine cursor of a watch over the broker (see cli_fleetonce.h).
 * A linear table: a session is published by one engine at a time, so it
 * holds one or two entries in practice and the bound only matters against
 * a hostile publisher.
 */
#include "cli/cli_fleetonce.h"

#include <stdio.h>
#include <string.h>

void
cli_fleetonce_init(FleetOnce *o)
{
  memset(o, 0, sizeof *o);
}

/* The entry of engine, or NULL. */
static FleetOnceEntry *
fleetonce_find(const FleetOnce *o, const char *engine)
{
  for (unsigned i = 0; i < o->n; i++)
    if (strcmp(o->entries[i].engine, engine) == 0)
      return (FleetOnceEntry *)&o->entries[i];
  return NULL;
}

bool
cli_fleetonce_seen(const FleetOnce *o, const char *engine, const char *epoch, uint64_t seq)
{
  const FleetOnceEntry *e = fleetonce_find(o, engine);
  if (e == NULL)
    return false;
  for (unsigned i = 0; i < FLEET_ONCE_OLD_EPOCHS; i++)
    if (strcmp(e->old_epochs[i], epoch) == 0)
      return true;
  return strcmp(e->epoch, epoch) == 0 && seq <= e->last_seq;
}

void
cli_fleetonce_mark(FleetOnce *o, const char *engine, const char *epoch, uint64_t seq)
{
  FleetOnceEntry *e = fleetonce_find(o, engine);
  if (e == NULL) {
    if (o->n < FLEET_ONCE_MAX) {
      e = &o->entries[o->n++];
    } else {
      e = &o->entries[0];
      for (unsigned i = 1; i < o->n; i++)
        if (o->entries[i].used < e->used)
          e = &o->entries[i];
      o->forgotten++;
    }
    memset(e, 0, sizeof *e);
  } else if (strcmp(e->epoch, epoch) != 0) {
    memmove(e->old_epochs[1], e->old_epochs[0],
            sizeof e->old_epochs - sizeof e->old_epochs[0]);
    memcpy(e->old_epochs[0], e->epoch, sizeof e->epoch);
  }
  snprintf(e->engine, sizeof e->engine, "%s", engine);
  snprintf(e->epoch, sizeof e->epoch, "%s", epoch);
  e->last_seq = seq;
  e->used = ++o->clock;
}
