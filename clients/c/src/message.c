/*
 * A message read from the engine, and reading values out of it (see
 * message.h; the vigil_object_* and vigil_result_* calls of vigil/client.h).
 *
 * msgpack strings are not NUL-terminated, and a host wants C strings. The
 * objects msgpack_unpack_next makes point into the message's bytes, so
 * each string is terminated in place: the byte after a string's body is
 * always the type byte of the next element (already decoded, never pointed
 * to) or, for the last one, the extra byte allocated past the message.
 * No string is copied, and every string a result or notification gives
 * out is a C string for as long as it lives.
 */
#include "message.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Terminates every str and bin under o in place. false when one does not
 * point into the message's bytes (then it cannot be terminated safely). */
static bool
message_terminate(struct vigil_message *m, msgpack_object *o)
{
  const char *ptr = NULL;
  size_t size = 0;
  switch (o->type) {
  case MSGPACK_OBJECT_STR:
    ptr = o->via.str.ptr;
    size = o->via.str.size;
    break;
  case MSGPACK_OBJECT_BIN:
    ptr = o->via.bin.ptr;
    size = o->via.bin.size;
    break;
  case MSGPACK_OBJECT_ARRAY:
    for (uint32_t i = 0; i < o->via.array.size; i++)
      if (!message_terminate(m, &o->via.array.ptr[i]))
        return false;
    return true;
  case MSGPACK_OBJECT_MAP:
    for (uint32_t i = 0; i < o->via.map.size; i++)
      if (!message_terminate(m, &o->via.map.ptr[i].key) ||
          !message_terminate(m, &o->via.map.ptr[i].val))
        return false;
    return true;
  default:
    return true;
  }
  if (size == 0 && ptr == NULL) {
    /* An empty string may point nowhere: give it the message's last byte,
     * which is always a terminator. */
    if (o->type == MSGPACK_OBJECT_STR)
      o->via.str.ptr = m->bytes + m->len;
    else
      o->via.bin.ptr = m->bytes + m->len;
    return true;
  }
  if (ptr < m->bytes || ptr + size > m->bytes + m->len)
    return false;
  m->bytes[ptr - m->bytes + size] = '\0';
  return true;
}

struct vigil_message *
message_new(const char *data, size_t len, char *why, size_t why_size)
{
  struct vigil_message *m = calloc(1, sizeof *m);
  char *bytes = malloc(len + 1);
  if (m == NULL || bytes == NULL) {
    free(m);
    free(bytes);
    snprintf(why, why_size, "out of memory for a message of %zu bytes", len);
    return NULL;
  }
  memcpy(bytes, data, len);
  bytes[len] = '\0';
  m->bytes = bytes;
  m->len = len;
  msgpack_unpacked_init(&m->unpacked);
  size_t off = 0;
  msgpack_unpack_return rc = msgpack_unpack_next(&m->unpacked, m->bytes, len, &off);
  if (rc != MSGPACK_UNPACK_SUCCESS || off != len) {
    snprintf(why, why_size, "a message of %zu bytes that msgpack-c cannot decode (%s)", len,
             rc == MSGPACK_UNPACK_NOMEM_ERROR ? "out of memory" : "malformed");
    message_free(m);
    return NULL;
  }
  if (!message_terminate(m, &m->unpacked.data)) {
    snprintf(why, why_size, "a message of %zu bytes whose strings msgpack-c copied", len);
    message_free(m);
    return NULL;
  }
  return m;
}

void
message_free(struct vigil_message *m)
{
  if (m == NULL)
    return;
  msgpack_unpacked_destroy(&m->unpacked);
  free(m->lines);
  free(m->bytes);
  free(m);
}

/* --- reading values ---------------------------------------------------- */

const msgpack_object *
vigil_object_get(const msgpack_object *map, const char *key)
{
  if (map == NULL || key == NULL || map->type != MSGPACK_OBJECT_MAP)
    return NULL;
  size_t len = strlen(key);
  for (uint32_t i = 0; i < map->via.map.size; i++) {
    const msgpack_object *k = &map->via.map.ptr[i].key;
    if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == len &&
        memcmp(k->via.str.ptr, key, len) == 0)
      return &map->via.map.ptr[i].val;
  }
  return NULL;
}

const char *
vigil_object_str(const msgpack_object *object)
{
  if (object == NULL || object->type != MSGPACK_OBJECT_STR)
    return NULL;
  return object->via.str.ptr;
}

bool
vigil_object_int(const msgpack_object *object, int64_t *out)
{
  if (object == NULL)
    return false;
  if (object->type == MSGPACK_OBJECT_POSITIVE_INTEGER && object->via.u64 <= INT64_MAX) {
    *out = (int64_t)object->via.u64;
    return true;
  }
  if (object->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
    *out = object->via.i64;
    return true;
  }
  return false;
}

void
vigil_result_free(vigil_result *result)
{
  if (result == NULL)
    return;
  message_free(result->message_);
  result->message_ = NULL;
  result->map = NULL;
}

const msgpack_object *
vigil_result_get(const vigil_result *result, const char *key)
{
  return result ? vigil_object_get(result->map, key) : NULL;
}

const char *
vigil_result_str(const vigil_result *result, const char *key)
{
  return vigil_object_str(vigil_result_get(result, key));
}

bool
vigil_result_int(const vigil_result *result, const char *key, int64_t *out)
{
  return vigil_object_int(vigil_result_get(result, key), out);
}

bool
vigil_result_bool(const vigil_result *result, const char *key, bool *out)
{
  const msgpack_object *o = vigil_result_get(result, key);
  if (o == NULL || o->type != MSGPACK_OBJECT_BOOLEAN)
    return false;
  *out = o->via.boolean;
  return true;
}
