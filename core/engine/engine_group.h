/*
 * Named groups of the config's monitors (docs/protocol.md, group_up): an
 * entry of `monitors` with a `group` is not started at boot (unless it has
 * autostart) but when its group is brought up, and stopped when it is
 * brought down (`vigil up` / `vigil down`). A monitor started for an entry
 * carries the entry's group (MonRecord.group), and is the entry's while it
 * runs in the entry's session under the entry's label: labels are unique in
 * a group (config_monitors.c), so a reload that keeps an entry keeps its
 * monitor, and one that drops or renames it leaves the monitor to
 * group_down alone.
 */
#ifndef VIGIL_ENGINE_GROUP_H
#define VIGIL_ENGINE_GROUP_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/engine.h"
#include "base/strbuf.h"

/* Records a group call acted on or found, in config order (owned array,
 * borrowed records: valid until the loop runs again). */
typedef struct {
  MonRecord **recs;
  size_t n;
} EngineGroupHits;

void engine_group_hits_free(EngineGroupHits *h);

/* Whether group names a group: one of the config's, or one a running
 * monitor was started for (a reload may have dropped it from the config;
 * group_down still reaches its monitors). */
bool engine_group_known(Engine *e, const char *group);

/* Appends the known groups' names, sorted and comma-separated, or "none". */
void engine_group_names(Engine *e, StrBuf *out);

/* The monitor of the config's entry cm: the newest running one that is
 * still the entry's, or, unless running_only, the newest that ever was
 * (ended, or stopped by group_down); NULL when there is none. */
MonRecord *engine_group_record(Engine *e, const ConfigMonitor *cm, bool running_only);

/* Starts every entry of group (every grouped entry when group is NULL)
 * that has no running monitor, in config order, each in its entry's
 * session (made and pinned when missing, as at boot), through
 * engine_start. Every one is checked first (the gate and every check of a
 * start, the running caps counted with the ones before it): a refusal is
 * err naming the entry (as at boot) and nothing starts. A start that still
 * fails (the spawn) stops the ones this call started. Fills started and
 * running (the entries already running); returns 0 or -1. The caller has
 * checked that group is known. */
int engine_group_up(Engine *e, const char *group, EngineGroupHits *started,
                    EngineGroupHits *running, VigilError *err);

/* Stops (SIGTERM, monitor.kill_grace_ms, SIGKILL) every running monitor
 * started for group (for any group when group is NULL), oldest first, and
 * fills stopped with those whose stop it started. They are no longer their
 * entries' at once: a group_up right after starts the entries again. */
void engine_group_down(Engine *e, const char *group, EngineGroupHits *stopped);

#endif
