/*
 * A session's silenced fingerprints (ignorelist.h) and their file in the
 * state directory (docs/incidents.md section 10, docs/restart.md).
 *
 * Scope: the session, which for a harness is its project (docs/cli.md,
 * "Where and as whom"). A named session's list is kept as
 * sessions/ignore.NAME, written whole (statefile.h) at every change, and
 * read back the first time the session is asked about it, so it survives an
 * engine restart; it also outlives the session itself (a session that
 * lingered out and is opened again by the same project finds its list).
 * An anonymous session's list lives as long as the session.
 *
 * An empty list has no file (the last unignore removes it). Hits (how
 * often an entry silenced something) are written with the next
 * change of the list, not at each hit: a flood of ignored incidents costs
 * no write. A file that fails its checks is set aside, logged and counted
 * (session_registry_ignores_set_aside), and the session starts with an
 * empty list.
 */
#ifndef VIGIL_SESSION_IGNORE_H
#define VIGIL_SESSION_IGNORE_H

#include <stdbool.h>
#include <stdint.h>

#include "pipeline/ignorelist.h"
#include "session/session.h"

/* The file name's prefix in sessions/ (the rest is the session's name). */
#define SESSION_IGNORE_PREFIX "ignore."

/* s's list, read from the state directory at the first call; its bound is
 * the registry's limits' ignore_max (a reload applies from the next add). */
IgnoreList *session_ignores(Session *s);

/* Writes s's list after a change (nothing without a state directory, or
 * for an anonymous session); a failed write is logged. */
void session_ignore_save(Session *s);

/* Whether fp is silenced in s at wall time now; counts the hit. An entry
 * found expired is dropped, and the file rewritten. */
bool session_ignore_hit(Session *s, uint64_t fp, int64_t now);

/* Frees what session_ignores loaded (session.c, when s is freed). */
void session_ignore__free(Session *s);

/* Ignore files set aside at a load because they failed their checks. */
uint64_t session_registry_ignores_set_aside(const SessionRegistry *reg);

#endif
