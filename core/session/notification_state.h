/*
 * A notification as the state directory keeps it (docs/restart.md, stage
 * 3): every field of a Notification (notification.h), its rendered text
 * and seq included, as one msgpack map, and back. A session's journal
 * (session_journal.c) writes one before the notification is pushed, so a
 * restarted engine can push it again, byte for byte, to a host that
 * resumes.
 *
 * Reading back trusts nothing: every field is checked (types, enums within
 * their range, counts within the file), and the two fields that point at
 * static strings (a built-in pattern's name, the exceeded limit) are
 * looked up among the names this engine knows, never taken from the file.
 */
#ifndef VIGIL_NOTIFICATION_STATE_H
#define VIGIL_NOTIFICATION_STATE_H

#include <msgpack.h>

#include "base/error.h"
#include "pipeline/notification.h"

void notification_state_pack(msgpack_packer *pk, const Notification *n);

/* The notification o describes (free with notification_free), or NULL
 * with err naming the field at fault. */
Notification *notification_state_unpack(const msgpack_object *o, VigilError *err);

#endif
