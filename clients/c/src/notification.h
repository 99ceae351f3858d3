/*
 * A notification the engine pushed, read into the typed vigil_notification
 * of vigil/client.h.
 */
#ifndef VIGIL_CLIENT_NOTIFICATION_H
#define VIGIL_CLIENT_NOTIFICATION_H

#include "vigil/client.h"

/* Fills *n from params, the [map] of a "vigil.notification" (or the
 * [code, message] of a "vigil.error" when engine_error), found in m, which
 * n then owns. -1 with why set when params is not of that shape (m is
 * then still the caller's). */
int notification_read(vigil_notification *n, struct vigil_message *m,
                      const msgpack_object *params, bool engine_error, char *why,
                      size_t why_size);

#endif
