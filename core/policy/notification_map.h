/*
 * A notification read back from a map shaped like the wire's
 * (docs/protocol.md section 6): what `vigil policy try --notification JSON`
 * and the `notification` of a policy's examples give (policytry.h), so a
 * person can hand a policy a notification the engine sent, or one they
 * wrote, and see what the policy makes of it.
 *
 * The map is hostile input: every key is checked (type, range, the names
 * the wire uses) and an unknown key is refused, with an error that names
 * the key ("notification: lines[2].seq: want an unsigned integer, not a
 * str"). Keys the engine adds when it queues a notification (session, seq,
 * epoch, text, and dropped, from_seq, to_seq, which only a `dropped`
 * notification carries) are accepted and ignored, so a notification as it
 * came off the wire can be given back whole. A key left out takes the
 * value docs/policies.md section 15 gives it. Text (line text, the label,
 * the reason) must be valid UTF-8 without NUL, as the wire's is, and is
 * kept as it is (every renderer escapes what it shows, as for the engine's
 * own lines); a built-in pattern's name is looked up among the engine's,
 * never taken as given.
 */
#ifndef VIGIL_NOTIFICATION_MAP_H
#define VIGIL_NOTIFICATION_MAP_H

#include <msgpack.h>

#include "base/error.h"
#include "pipeline/notification.h"

/* Bounds of a map's contents: lines, incidents, and bytes of one string. */
#define NOTIFICATION_MAP_LINES_MAX 10000
#define NOTIFICATION_MAP_INCIDENTS_MAX 1000
#define NOTIFICATION_MAP_TEXT_MAX 65536

/* The monitor id and time a map that names none gets. */
#define NOTIFICATION_MAP_DEFAULT_ID "mon_example00000"
#define NOTIFICATION_MAP_DEFAULT_AT_MS INT64_C(1795243302980) /* 2026-11-21T06:41:42.980Z */

/* The notification o describes (free with notification_free), or NULL with
 * err (invalid_params, "notification: KEY: why"). */
Notification *notification_map_read(const msgpack_object *o, VigilError *err);

/* Parses an RFC 3339 time with optional fraction and a Z or +HH:MM offset
 * ("2026-11-21T06:41:42.980+00:00") into ms since the epoch. 0 on success,
 * -1 when s (len bytes) is not one. */
int notification_map_time(const char *s, size_t len, int64_t *ms);

#endif
