/*
 * A message read from the engine, owned: a copy of its bytes and the
 * msgpack objects decoded from them. Results and notifications each own
 * one, so what they hand out lives exactly as long as they do.
 */
#ifndef VIGIL_CLIENT_MESSAGE_H
#define VIGIL_CLIENT_MESSAGE_H

#include "vigil/client.h"

struct vigil_message {
  char *bytes;               /* the message, and one byte more (see message.c) */
  size_t len;
  msgpack_unpacked unpacked; /* objects pointing into bytes */
  vigil_line *lines;         /* a notification's lines (notification.c), or NULL */
};

/* Decodes one complete message (as the framer cut it) into a message of
 * its own. NULL with why set when it does not decode as exactly one
 * msgpack value, or memory runs out. */
struct vigil_message *message_new(const char *data, size_t len, char *why, size_t why_size);
void message_free(struct vigil_message *m);

static inline const msgpack_object *
message_root(const struct vigil_message *m)
{
  return &m->unpacked.data;
}

#endif
