/*
 * The fingerprints a session has silenced (docs/incidents.md section 10): a
 * small bounded list of entries, each a fingerprint, why (the agent's
 * reason), when it ends (a wall-clock expiry, or never) and how often it
 * has been met since. The signal stage asks it about every incident it
 * closes; an incident whose fingerprint is here is logged and counted, not
 * notified.
 *
 * The list is searched linearly: it holds at most `max` entries
 * (incident.ignore_max, 256 by default), and it is asked once per incident,
 * never per line. An entry past its expiry is dropped where it is met (a
 * lookup or a listing), so an expired entry never silences anything and
 * needs no timer. A new entry when the list is full is refused and counted
 * (`refused`); the same fingerprint again replaces its entry.
 *
 * It keeps no file: its session (session_ignore.h) writes it to the state
 * directory.
 */
#ifndef VIGIL_IGNORELIST_H
#define VIGIL_IGNORELIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* The longest reason, in bytes. */
#define IGNORE_REASON_MAX 256
/* `for`: the longest a bounded ignore lasts (30 days), and the length one
 * gets when the caller names none (7 days); "always" has no end. */
#define IGNORE_FOR_MAX_MS ((int64_t)30 * 86400 * 1000)
#define IGNORE_FOR_DEFAULT_MS ((int64_t)7 * 86400 * 1000)

typedef struct {
  uint64_t fingerprint;
  int64_t added_at;    /* wall ms */
  int64_t expires_at;  /* wall ms; 0: never */
  uint64_t hits;       /* incidents it silenced */
  int64_t last_hit_at; /* wall ms; 0: none yet */
  char *reason;        /* NULL: none given */
} IgnoreEntry;

typedef struct {
  IgnoreEntry *v;      /* oldest first */
  size_t n;
  size_t max;          /* incident.ignore_max, at least 1 */
  uint64_t refused;    /* adds refused because the list was full */
  uint64_t expired;    /* entries dropped at their expiry */
} IgnoreList;

void ignorelist_init(IgnoreList *l, size_t max);
void ignorelist_free(IgnoreList *l);

/* Parses 16 hex digits (either case) into *fp; false for anything else. */
bool ignorelist_parse(const char *text, uint64_t *fp);

/* Adds (or replaces) the entry of fp, ending at expires_at (0: never),
 * with reason (copied; NULL: none), as of wall time now. Refused
 * (invalid_params naming incident.ignore_max and its value, and counted)
 * when the list is full and fp is not in it. 0, or -1 with err set. */
int ignorelist_add(IgnoreList *l, uint64_t fp, int64_t expires_at, const char *reason,
                   int64_t now, bool *replaced, VigilError *err);

/* Removes fp's entry: whether there was one (an expired one is dropped
 * and does not count). */
bool ignorelist_remove(IgnoreList *l, uint64_t fp, int64_t now);

/* Whether fp is silenced at wall time now: its entry counts the hit.
 * An entry found expired is dropped instead (and false returned). */
bool ignorelist_hit(IgnoreList *l, uint64_t fp, int64_t now);

/* Drops every entry expired at now; returns how many. */
size_t ignorelist_expire(IgnoreList *l, int64_t now);

#endif
