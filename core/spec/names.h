/*
 * The names a caller chooses on the wire: sessions and cursors
 * (docs/protocol.md). One rule for a word, so that the engine, which
 * refuses a bad name, and the CLI reading a fleet, which refuses a message
 * naming one, agree on what a name is.
 */
#ifndef VIGIL_SPEC_NAMES_H
#define VIGIL_SPEC_NAMES_H

#include <stdbool.h>
#include <stddef.h>

/* The longest session name a caller may choose. */
#define SESSION_NAME_MAX 64

/* Whether the n bytes at s are 1..max of A-Z a-z 0-9 . _ - : (a word of
 * the wire: also safe as part of a file name and a NATS subject token
 * once '.' is escaped). */
bool name_word_ok(const char *s, size_t n, size_t max);

/* Whether name is a session name a caller (a host, a config) may choose:
 * 1..SESSION_NAME_MAX of A-Z a-z 0-9 . _ - :, not starting with "anon-"
 * (the anonymous ones' names). Such a name is also safe as part of a file
 * name (its journal's). */
bool session_name_ok(const char *name);

#endif
