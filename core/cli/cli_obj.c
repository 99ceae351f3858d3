/*
 * Typed reading of result maps (see cli_obj.h). Maps are searched linearly:
 * the engine's maps have at most a few dozen keys.
 */
#include "cli/cli_obj.h"

#include <string.h>

const msgpack_object *
cli_obj_get(const msgpack_object *map, const char *key)
{
  if (map == NULL || map->type != MSGPACK_OBJECT_MAP)
    return NULL;
  size_t klen = strlen(key);
  for (uint32_t i = 0; i < map->via.map.size; i++) {
    const msgpack_object_kv *kv = &map->via.map.ptr[i];
    size_t n;
    const char *k = cli_obj_text(&kv->key, &n);
    if (k && n == klen && memcmp(k, key, n) == 0)
      return kv->val.type == MSGPACK_OBJECT_NIL ? NULL : &kv->val;
  }
  return NULL;
}

const char *
cli_obj_text(const msgpack_object *o, size_t *len)
{
  *len = 0;
  if (o == NULL)
    return NULL;
  if (o->type == MSGPACK_OBJECT_STR) {
    *len = o->via.str.size;
    return o->via.str.size ? o->via.str.ptr : "";
  }
  if (o->type == MSGPACK_OBJECT_BIN) {
    *len = o->via.bin.size;
    return o->via.bin.size ? o->via.bin.ptr : "";
  }
  return NULL;
}

const char *
cli_obj_get_text(const msgpack_object *map, const char *key, size_t *len)
{
  return cli_obj_text(cli_obj_get(map, key), len);
}

bool
cli_obj_get_int(const msgpack_object *map, const char *key, int64_t *out)
{
  const msgpack_object *o = cli_obj_get(map, key);
  if (o == NULL)
    return false;
  if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 <= INT64_MAX) {
    *out = (int64_t)o->via.u64;
    return true;
  }
  if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
    *out = o->via.i64;
    return true;
  }
  return false;
}

uint64_t
cli_obj_get_uint(const msgpack_object *map, const char *key, uint64_t def)
{
  const msgpack_object *o = cli_obj_get(map, key);
  return o && o->type == MSGPACK_OBJECT_POSITIVE_INTEGER ? o->via.u64 : def;
}

bool
cli_obj_get_bool(const msgpack_object *map, const char *key)
{
  const msgpack_object *o = cli_obj_get(map, key);
  return o && o->type == MSGPACK_OBJECT_BOOLEAN && o->via.boolean;
}

bool
cli_obj_get_is(const msgpack_object *map, const char *key, const char *s)
{
  size_t n;
  const char *t = cli_obj_get_text(map, key, &n);
  return t && n == strlen(s) && memcmp(t, s, n) == 0;
}
