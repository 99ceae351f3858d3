/*
 * Typed reading of a method's argument map (see args.h).
 */
#include "api/args.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "spec/gate.h"
#include "base/memory.h"
#include "rpc/typename.h"
#include "base/strbuf.h"
#include "base/textfmt.h"

/* Whether a msgpack str or bin equals the C string s. */
static bool
args_key_is(const msgpack_object *k, const char *s)
{
  size_t n = strlen(s);
  return k->type == MSGPACK_OBJECT_STR && k->via.str.size == n &&
         memcmp(k->via.str.ptr, s, n) == 0;
}

int
args_check_known(const Args *a, const char *const *known, VigilError *err)
{
  if (a->map == NULL)
    return 0;
  for (uint32_t i = 0; i < a->map->via.map.size; i++) {
    const msgpack_object *k = &a->map->via.map.ptr[i].key;
    bool found = false;
    for (size_t j = 0; known[j] && !found; j++)
      found = args_key_is(k, known[j]);
    if (found)
      continue;
    StrBuf list = STRBUF_INIT;
    for (size_t j = 0; known[j]; j++)
      strbuf_printf(&list, "%s%s", j ? ", " : "", known[j]);
    int size = k->via.str.size > 64 ? 64 : (int)k->via.str.size;
    error_set(err, kErrInvalidParams, "unknown argument \"%.*s\" (%s takes: %s)", size,
              k->via.str.ptr, a->method, list.len ? strbuf_cstr(&list) : "no arguments");
    strbuf_free(&list);
    return -1;
  }
  return 0;
}

const msgpack_object *
args_get(const Args *a, const char *key)
{
  if (a->map == NULL)
    return NULL;
  for (uint32_t i = 0; i < a->map->via.map.size; i++) {
    if (args_key_is(&a->map->via.map.ptr[i].key, key)) {
      const msgpack_object *v = &a->map->via.map.ptr[i].val;
      return v->type == MSGPACK_OBJECT_NIL ? NULL : v;
    }
  }
  return NULL;
}

/* Checks a str/bin object under a name (key or key[i]) and copies it. */
static ArgResult
args_take_str(const msgpack_object *v, const char *name, size_t max_len, char **out,
              VigilError *err)
{
  if (v->type != MSGPACK_OBJECT_STR && v->type != MSGPACK_OBJECT_BIN)
    return error_set(err, kErrInvalidParams, "%s must be a string, got %s", name,
                     rpc_type_name(v));
  size_t len = v->via.str.size;
  if (len > max_len)
    return error_set(err, kErrInvalidParams, "%s must be at most %zu bytes, got %zu", name,
                     max_len, len);
  if (memchr(v->via.str.ptr, '\0', len) != NULL)
    return error_set(err, kErrInvalidParams, "%s must not contain a NUL byte", name);
  *out = xmemdupz(v->via.str.ptr, len);
  return kArgPresent;
}

ArgResult
args_str(const Args *a, const char *key, size_t max_len, char **out, VigilError *err)
{
  const msgpack_object *v = args_get(a, key);
  if (v == NULL)
    return kArgAbsent;
  return args_take_str(v, key, max_len, out, err);
}

ArgResult
args_bytes(const Args *a, const char *key, size_t max_len, const char **out, size_t *len,
           VigilError *err)
{
  const msgpack_object *v = args_get(a, key);
  if (v == NULL)
    return kArgAbsent;
  if (v->type != MSGPACK_OBJECT_STR && v->type != MSGPACK_OBJECT_BIN)
    return error_set(err, kErrInvalidParams, "%s must be a string or binary, got %s", key,
                     rpc_type_name(v));
  if (v->via.str.size > max_len)
    return error_set(err, kErrInvalidParams, "%s must be at most %zu bytes, got %u", key,
                     max_len, v->via.str.size);
  *out = v->via.str.ptr;
  *len = v->via.str.size;
  return kArgPresent;
}

/* The refusal of a number: "KEY must be an integer, got D" without bounds,
 * else "KEY must be MIN..MAX, got D", each number as the caller wrote it. */
static ArgResult
args_bad_number(VigilError *err, const char *key, const double *bounds, double d)
{
  StrBuf b = STRBUF_INIT;
  if (bounds == NULL) {
    strbuf_puts(&b, "an integer");
  } else {
    textfmt_number(&b, bounds[0]);
    strbuf_puts(&b, "..");
    textfmt_number(&b, bounds[1]);
  }
  strbuf_puts(&b, ", got ");
  textfmt_number(&b, d);
  error_set(err, kErrInvalidParams, "%s must be %s", key, strbuf_cstr(&b));
  strbuf_free(&b);
  return kArgError;
}

ArgResult
args_uint(const Args *a, const char *key, uint64_t min, uint64_t max, uint64_t *out,
          VigilError *err)
{
  const msgpack_object *v = args_get(a, key);
  if (v == NULL)
    return kArgAbsent;
  if (v->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
    return error_set(err, kErrInvalidParams, "%s must be %" PRIu64 "..%" PRIu64 ", got %" PRId64,
                     key, min, max, v->via.i64);
  uint64_t value;
  if (v->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
    value = v->via.u64;
  } else if (v->type == MSGPACK_OBJECT_FLOAT32 || v->type == MSGPACK_OBJECT_FLOAT64) {
    double d = v->via.f64;
    if (!(d >= 0) || d != floor(d) || d > 1.8e19)
      return args_bad_number(err, key, NULL, d);
    value = (uint64_t)d;
  } else {
    return error_set(err, kErrInvalidParams, "%s must be an integer, got %s", key,
                     rpc_type_name(v));
  }
  if (value < min || value > max)
    return error_set(err, kErrInvalidParams, "%s must be %" PRIu64 "..%" PRIu64 ", got %" PRIu64,
                     key, min, max, value);
  *out = value;
  return kArgPresent;
}

ArgResult
args_double(const Args *a, const char *key, double min, double max, double *out, VigilError *err)
{
  const msgpack_object *v = args_get(a, key);
  if (v == NULL)
    return kArgAbsent;
  double d;
  if (v->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
    d = (double)v->via.u64;
  else if (v->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
    d = (double)v->via.i64;
  else if (v->type == MSGPACK_OBJECT_FLOAT32 || v->type == MSGPACK_OBJECT_FLOAT64)
    d = v->via.f64;
  else
    return error_set(err, kErrInvalidParams, "%s must be a number, got %s", key,
                     rpc_type_name(v));
  if (!(d >= min && d <= max))
    return args_bad_number(err, key, (const double[]){min, max}, d);
  *out = d;
  return kArgPresent;
}

ArgResult
args_bool(const Args *a, const char *key, bool *out, VigilError *err)
{
  const msgpack_object *v = args_get(a, key);
  if (v == NULL)
    return kArgAbsent;
  if (v->type != MSGPACK_OBJECT_BOOLEAN)
    return error_set(err, kErrInvalidParams, "%s must be a boolean, got %s", key,
                     rpc_type_name(v));
  *out = v->via.boolean;
  return kArgPresent;
}

ArgResult
args_choice(const Args *a, const char *key, const char *const *choices, int *out,
            VigilError *err)
{
  const msgpack_object *v = args_get(a, key);
  if (v == NULL)
    return kArgAbsent;
  if (v->type == MSGPACK_OBJECT_STR || v->type == MSGPACK_OBJECT_BIN) {
    for (int i = 0; choices[i]; i++) {
      if (strlen(choices[i]) == v->via.str.size &&
          memcmp(choices[i], v->via.str.ptr, v->via.str.size) == 0) {
        *out = i;
        return kArgPresent;
      }
    }
  }
  StrBuf list = STRBUF_INIT;
  for (int i = 0; choices[i]; i++)
    strbuf_printf(&list, "%s\"%s\"", i ? " | " : "", choices[i]);
  if (v->type == MSGPACK_OBJECT_STR || v->type == MSGPACK_OBJECT_BIN) {
    int size = v->via.str.size > 64 ? 64 : (int)v->via.str.size;
    error_set(err, kErrInvalidParams, "%s must be %s, got \"%.*s\"", key, strbuf_cstr(&list),
              size, v->via.str.ptr);
  } else {
    error_set(err, kErrInvalidParams, "%s must be %s, got %s", key, strbuf_cstr(&list),
              rpc_type_name(v));
  }
  strbuf_free(&list);
  return kArgError;
}

void
args_free_strv(char **v)
{
  if (v == NULL)
    return;
  for (size_t i = 0; v[i]; i++)
    free(v[i]);
  free(v);
}

/* The value of key when it is an array of strings (type ARRAY, args_strv)
 * or a map of strings (type MAP, args_env: its items are variables) of at
 * most max_items items: kArgPresent with *out set, kArgAbsent, or kArgError
 * with err when it is something else or holds more. */
static ArgResult
args_container(const Args *a, const char *key, msgpack_object_type type, size_t max_items,
               const msgpack_object **out, VigilError *err)
{
  bool array = type == MSGPACK_OBJECT_ARRAY;
  const msgpack_object *v = args_get(a, key);
  if (v == NULL)
    return kArgAbsent;
  if (v->type != type)
    return error_set(err, kErrInvalidParams, "%s must be %s of strings, got %s", key,
                     array ? "an array" : "a map", rpc_type_name(v));
  uint32_t size = array ? v->via.array.size : v->via.map.size;
  if (size > max_items)
    return error_set(err, kErrInvalidParams, "%s: at most %zu %s, got %u", key, max_items,
                     array ? "items" : "variables", size);
  *out = v;
  return kArgPresent;
}

ArgResult
args_strv(const Args *a, const char *key, size_t max_items, size_t max_len, char ***out,
          size_t *n, VigilError *err)
{
  const msgpack_object *v = NULL;
  ArgResult rc = args_container(a, key, MSGPACK_OBJECT_ARRAY, max_items, &v, err);
  if (rc != kArgPresent)
    return rc;
  uint32_t size = v->via.array.size;
  char **items = xcalloc(size + 1, sizeof *items);
  for (uint32_t i = 0; i < size; i++) {
    char name[96];
    snprintf(name, sizeof name, "%s[%u]", key, i);
    if (args_take_str(&v->via.array.ptr[i], name, max_len, &items[i], err) < 0) {
      args_free_strv(items);
      return kArgError;
    }
  }
  *out = items;
  if (n)
    *n = size;
  return kArgPresent;
}

ArgResult
args_env(const Args *a, const char *key, size_t max_items, bool numbers, char ***out,
         VigilError *err)
{
  const msgpack_object *v = NULL;
  ArgResult rc = args_container(a, key, MSGPACK_OBJECT_MAP, max_items, &v, err);
  if (rc != kArgPresent)
    return rc;
  uint32_t size = v->via.map.size;
  char **items = xcalloc(size + 1, sizeof *items);
  for (uint32_t i = 0; i < size; i++) {
    char *k = NULL, *val = NULL;
    char name[96];
    snprintf(name, sizeof name, "%s key %u", key, i);
    if (args_take_str(&v->via.map.ptr[i].key, name, 4096, &k, err) < 0) {
      args_free_strv(items);
      return kArgError;
    }
    if (k[0] == '\0' || strchr(k, '=') != NULL) {
      char quoted[GATE_QUOTE_BUF]; /* the caller's bytes: escaped */
      gate_quote(quoted, k);
      error_set(err, kErrInvalidParams, "%s: variable name %s must be non-empty without '='",
                key, quoted);
      free(k);
      args_free_strv(items);
      return kArgError;
    }
    snprintf(name, sizeof name, "%s.%s", key, k);
    const msgpack_object *value = &v->via.map.ptr[i].val;
    if (numbers && value->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
      char digits[24];
      snprintf(digits, sizeof digits, "%" PRIu64, value->via.u64);
      val = xstrdup(digits);
    } else if (args_take_str(value, name, 65536, &val, err) < 0) {
      free(k);
      args_free_strv(items);
      return kArgError;
    }
    size_t len = strlen(k) + strlen(val) + 2;
    items[i] = xmalloc(len);
    snprintf(items[i], len, "%s=%s", k, val);
    free(k);
    free(val);
  }
  *out = items;
  return kArgPresent;
}
