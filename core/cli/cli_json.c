/*
 * msgpack objects as JSON values (see cli_json.h). jansson builds and
 * prints the JSON; this file only decides what each msgpack type becomes.
 * Recursion follows the object's nesting, which the unpacker bounds
 * (msgpack-c refuses nesting deeper than its fixed stack), so it cannot run
 * away.
 */
#include "cli/cli_json.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"

json_t *
cli_json_string(const char *s, size_t len)
{
  if (utf8_valid(s, len))
    return json_stringn(s, len);
  /* jansson takes only valid UTF-8: each bad byte becomes U+FFFD. */
  const unsigned char *p = (const unsigned char *)s;
  StrBuf fixed = STRBUF_INIT;
  size_t i = 0;
  while (i < len) {
    uint32_t cp;
    size_t n = p[i] < 0x80 ? 1 : utf8_decode(p + i, len - i, &cp);
    if (n == 0) {
      strbuf_puts(&fixed, "\xEF\xBF\xBD");
      i++;
    } else {
      strbuf_append(&fixed, s + i, n);
      i += n;
    }
  }
  json_t *j = json_stringn(strbuf_cstr(&fixed), fixed.len);
  strbuf_free(&fixed);
  return j;
}

/* See cli_json.h. */
json_t *
cli_json_base64(const char *s, size_t len)
{
  static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const unsigned char *p = (const unsigned char *)s;
  StrBuf out = STRBUF_INIT;
  size_t i = 0;
  for (; i + 3 <= len; i += 3) {
    uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
    char q[4] = {abc[v >> 18], abc[(v >> 12) & 63], abc[(v >> 6) & 63], abc[v & 63]};
    strbuf_append(&out, q, 4);
  }
  if (len - i == 1) {
    uint32_t v = (uint32_t)p[i] << 16;
    char q[4] = {abc[v >> 18], abc[(v >> 12) & 63], '=', '='};
    strbuf_append(&out, q, 4);
  } else if (len - i == 2) {
    uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
    char q[4] = {abc[v >> 18], abc[(v >> 12) & 63], abc[(v >> 6) & 63], '='};
    strbuf_append(&out, q, 4);
  }
  json_t *j = json_stringn(strbuf_cstr(&out), out.len);
  strbuf_free(&out);
  return j;
}

/* A map as an object; a key that is not a string is named by its JSON text. */
static json_t *
cli_json_object(const msgpack_object *o)
{
  json_t *obj = json_object();
  for (uint32_t i = 0; i < o->via.map.size; i++) {
    const msgpack_object_kv *kv = &o->via.map.ptr[i];
    json_t *key = kv->key.type == MSGPACK_OBJECT_STR
                      ? cli_json_string(kv->key.via.str.ptr, kv->key.via.str.size)
                      : NULL;
    char *text = NULL;
    if (key == NULL) {
      json_t *k = cli_json_of(&kv->key);
      text = json_dumps(k, JSON_COMPACT | JSON_ENCODE_ANY);
      json_decref(k);
    }
    const char *name = key ? json_string_value(key) : text ? text : "";
    size_t name_len = key ? json_string_length(key) : strlen(name);
    json_object_setn_new(obj, name, name_len, cli_json_of(&kv->val));
    json_decref(key);
    free(text);
  }
  return obj;
}

json_t *
cli_json_of(const msgpack_object *o)
{
  switch (o->type) {
  case MSGPACK_OBJECT_BOOLEAN:
    return json_boolean(o->via.boolean);
  case MSGPACK_OBJECT_POSITIVE_INTEGER:
    if (o->via.u64 > (uint64_t)INT64_MAX)
      return json_real((double)o->via.u64);
    return json_integer((json_int_t)o->via.u64);
  case MSGPACK_OBJECT_NEGATIVE_INTEGER:
    return json_integer((json_int_t)o->via.i64);
  case MSGPACK_OBJECT_FLOAT32:
  case MSGPACK_OBJECT_FLOAT64:
    return isfinite(o->via.f64) ? json_real(o->via.f64) : json_null();
  case MSGPACK_OBJECT_STR:
    return cli_json_string(o->via.str.ptr, o->via.str.size);
  case MSGPACK_OBJECT_BIN:
    if (utf8_valid(o->via.bin.ptr, o->via.bin.size))
      return json_stringn(o->via.bin.ptr, o->via.bin.size);
    return json_pack("{s:o}", "base64", cli_json_base64(o->via.bin.ptr, o->via.bin.size));
  case MSGPACK_OBJECT_EXT:
    return json_pack("{s:i,s:o}", "ext", (int)o->via.ext.type, "base64",
                     cli_json_base64(o->via.ext.ptr, o->via.ext.size));
  case MSGPACK_OBJECT_ARRAY: {
    json_t *a = json_array();
    for (uint32_t i = 0; i < o->via.array.size; i++)
      json_array_append_new(a, cli_json_of(&o->via.array.ptr[i]));
    return a;
  }
  case MSGPACK_OBJECT_MAP:
    return cli_json_object(o);
  case MSGPACK_OBJECT_NIL:
  default:
    return json_null();
  }
}

void
cli_json_pack(const json_t *j, msgpack_packer *pk)
{
  switch (json_typeof(j)) {
  case JSON_OBJECT: {
    msgpack_pack_map(pk, (uint32_t)json_object_size(j));
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)j, key, v) {
      size_t n = strlen(key);
      msgpack_pack_str(pk, n);
      msgpack_pack_str_body(pk, key, n);
      cli_json_pack(v, pk);
    }
    break;
  }
  case JSON_ARRAY: {
    msgpack_pack_array(pk, (uint32_t)json_array_size(j));
    size_t i;
    json_t *v;
    json_array_foreach(j, i, v) cli_json_pack(v, pk);
    break;
  }
  case JSON_STRING: {
    size_t n = json_string_length(j);
    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, json_string_value(j), n);
    break;
  }
  case JSON_INTEGER: {
    json_int_t v = json_integer_value(j);
    if (v >= 0)
      msgpack_pack_uint64(pk, (uint64_t)v);
    else
      msgpack_pack_int64(pk, (int64_t)v);
    break;
  }
  case JSON_REAL:
    msgpack_pack_double(pk, json_real_value(j));
    break;
  case JSON_TRUE:
    msgpack_pack_true(pk);
    break;
  case JSON_FALSE:
    msgpack_pack_false(pk);
    break;
  case JSON_NULL:
  default:
    msgpack_pack_nil(pk);
    break;
  }
}

void
cli_json_append(StrBuf *out, const msgpack_object *o)
{
  json_t *j = cli_json_of(o);
  char *text = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
  if (text)
    strbuf_puts(out, text);
  free(text);
  json_decref(j);
}
