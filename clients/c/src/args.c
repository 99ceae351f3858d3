/*
 * The argument builder (vigil_args in vigil/client.h). A msgpack map
 * declares its size before its entries, so the entries are packed into a
 * buffer of their own as they are added and counted, and the map header is
 * written when a request is made of them. The keys are remembered to
 * refuse one given twice (the engine would read only one of the two).
 * Every adder refuses rather than grows past VIGIL_ARGS_MAX_KEYS keys or
 * VIGIL_ARGS_MAX_BYTES bytes, and the first refusal is kept: a host may
 * add everything and learn of it from the call.
 */
#include "args.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_error.h"

/* The most a key and a value's headers add to their bodies: a str32 header
 * for each (5 bytes) and room for a 9-byte scalar. */
#define ARGS_HEADERS_MAX 18

struct vigil_args {
  msgpack_sbuffer body;               /* the packed entries */
  msgpack_packer pk;
  uint32_t count;
  char *keys[VIGIL_ARGS_MAX_KEYS];
  bool refused;
  vigil_error first_refusal;
};

vigil_args *
vigil_args_new(void)
{
  vigil_args *a = calloc(1, sizeof *a);
  if (a == NULL)
    return NULL;
  msgpack_sbuffer_init(&a->body);
  msgpack_packer_init(&a->pk, &a->body, msgpack_sbuffer_write);
  return a;
}

void
vigil_args_free(vigil_args *args)
{
  if (args == NULL)
    return;
  for (uint32_t i = 0; i < args->count; i++)
    free(args->keys[i]);
  msgpack_sbuffer_destroy(&args->body);
  free(args);
}

/* Records the first refusal ("usage: args: ..."); returns -1. */
static int args_refuse(vigil_args *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int
args_refuse(vigil_args *a, const char *fmt, ...)
{
  if (a->refused)
    return -1;
  a->refused = true;
  char text[VIGIL_ERROR_MESSAGE_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  client_error(&a->first_refusal, VIGIL_ERR_USAGE, "args: %s", text);
  return -1;
}

/* Checks key, and that payload more bytes of value fit, then packs the
 * key: the caller packs its value next. 0 or -1. */
static int
args_begin(vigil_args *a, const char *key, size_t payload)
{
  if (a == NULL)
    return -1;
  if (key == NULL)
    return args_refuse(a, "a key is NULL");
  size_t klen = strlen(key);
  for (uint32_t i = 0; i < a->count; i++)
    if (strcmp(a->keys[i], key) == 0)
      return args_refuse(a, "\"%s\" is given twice", key);
  if (a->count == VIGIL_ARGS_MAX_KEYS)
    return args_refuse(a, "at most %d keys (VIGIL_ARGS_MAX_KEYS), and \"%s\" would be one more",
                       VIGIL_ARGS_MAX_KEYS, key);
  if (klen > VIGIL_ARGS_MAX_BYTES || payload > VIGIL_ARGS_MAX_BYTES ||
      a->body.size + klen + payload + ARGS_HEADERS_MAX > VIGIL_ARGS_MAX_BYTES)
    return args_refuse(a, "\"%s\" would make the arguments at least %zu bytes, over "
                       "VIGIL_ARGS_MAX_BYTES (%zu)", key,
                       a->body.size + klen + payload, (size_t)VIGIL_ARGS_MAX_BYTES);
  char *copy = strdup(key);
  if (copy == NULL)
    return args_refuse(a, "out of memory for the key \"%s\"", key);
  a->keys[a->count++] = copy;
  msgpack_pack_str_with_body(&a->pk, key, klen);
  return 0;
}

int
vigil_args_strn(vigil_args *args, const char *key, const char *value, size_t len)
{
  if (args != NULL && value == NULL)
    return args_refuse(args, "the value of \"%s\" is NULL", key ? key : "(null)");
  if (args_begin(args, key, len) != 0)
    return -1;
  msgpack_pack_str_with_body(&args->pk, value, len);
  return 0;
}

int
vigil_args_str(vigil_args *args, const char *key, const char *value)
{
  return vigil_args_strn(args, key, value, value ? strlen(value) : 0);
}

int
vigil_args_uint(vigil_args *args, const char *key, uint64_t value)
{
  if (args_begin(args, key, 0) != 0)
    return -1;
  msgpack_pack_uint64(&args->pk, value);
  return 0;
}

int
vigil_args_int(vigil_args *args, const char *key, int64_t value)
{
  if (args_begin(args, key, 0) != 0)
    return -1;
  msgpack_pack_int64(&args->pk, value);
  return 0;
}

int
vigil_args_double(vigil_args *args, const char *key, double value)
{
  if (args_begin(args, key, 0) != 0)
    return -1;
  msgpack_pack_double(&args->pk, value);
  return 0;
}

int
vigil_args_bool(vigil_args *args, const char *key, bool value)
{
  if (args_begin(args, key, 0) != 0)
    return -1;
  if (value)
    msgpack_pack_true(&args->pk);
  else
    msgpack_pack_false(&args->pk);
  return 0;
}

/* The bytes count strings take packed (with a str32 header each), and
 * whether any of them is NULL (*null_at its index). */
static size_t
args_strings_size(const char *const *items, size_t count, size_t *null_at)
{
  size_t total = 0;
  *null_at = count;
  for (size_t i = 0; i < count; i++) {
    if (items[i] == NULL) {
      *null_at = i;
      return total;
    }
    size_t n = strlen(items[i]) + 5;
    total = total > SIZE_MAX - n ? SIZE_MAX : total + n;
  }
  return total;
}

int
vigil_args_str_array(vigil_args *args, const char *key, const char *const *items, size_t count)
{
  if (args == NULL)
    return -1;
  if (items == NULL && count > 0)
    return args_refuse(args, "the items of \"%s\" are NULL", key ? key : "(null)");
  if (count > UINT32_MAX)
    return args_refuse(args, "\"%s\": at most %u items, got %zu", key ? key : "(null)",
                       (unsigned)UINT32_MAX, count);
  size_t null_at;
  size_t size = args_strings_size(items, count, &null_at);
  if (null_at < count)
    return args_refuse(args, "\"%s\": item %zu is NULL", key ? key : "(null)", null_at);
  if (args_begin(args, key, size) != 0)
    return -1;
  msgpack_pack_array(&args->pk, count);
  for (size_t i = 0; i < count; i++)
    msgpack_pack_str_with_body(&args->pk, items[i], strlen(items[i]));
  return 0;
}

int
vigil_args_str_map(vigil_args *args, const char *key, const char *const *names,
                   const char *const *values, size_t count)
{
  if (args == NULL)
    return -1;
  if ((names == NULL || values == NULL) && count > 0)
    return args_refuse(args, "the names or values of \"%s\" are NULL", key ? key : "(null)");
  if (count > UINT32_MAX)
    return args_refuse(args, "\"%s\": at most %u entries, got %zu", key ? key : "(null)",
                       (unsigned)UINT32_MAX, count);
  size_t null_name, null_value;
  size_t size = args_strings_size(names, count, &null_name);
  size_t vsize = args_strings_size(values, count, &null_value);
  if (null_name < count)
    return args_refuse(args, "\"%s\": name %zu is NULL", key ? key : "(null)", null_name);
  if (null_value < count)
    return args_refuse(args, "\"%s\": the value of \"%s\" is NULL", key ? key : "(null)",
                       names[null_value]);
  if (args_begin(args, key, size > SIZE_MAX - vsize ? SIZE_MAX : size + vsize) != 0)
    return -1;
  msgpack_pack_map(&args->pk, count);
  for (size_t i = 0; i < count; i++) {
    msgpack_pack_str_with_body(&args->pk, names[i], strlen(names[i]));
    msgpack_pack_str_with_body(&args->pk, values[i], strlen(values[i]));
  }
  return 0;
}

msgpack_packer *
vigil_args_value(vigil_args *args, const char *key)
{
  return args_begin(args, key, 0) == 0 ? &args->pk : NULL;
}

int
args_check(const vigil_args *args, const char *method, vigil_error *err)
{
  if (args == NULL || !args->refused)
    return 0;
  client_error_copy(err, &args->first_refusal);
  if (err != NULL) {
    /* Say which call the refusal stopped. */
    size_t n = strlen(err->message);
    snprintf(err->message + n, sizeof err->message - n, " (%s was not sent)", method);
  }
  return -1;
}

/* Whether a has an entry called key. */
static bool
args_has(const vigil_args *a, const char *key)
{
  for (uint32_t i = 0; a != NULL && i < a->count; i++)
    if (strcmp(a->keys[i], key) == 0)
      return true;
  return false;
}

void
args_pack_params(const vigil_args *args, msgpack_packer *pk, const char *key, const char *value)
{
  bool extra = key != NULL && value != NULL && !args_has(args, key);
  uint32_t count = (args != NULL ? args->count : 0) + (extra ? 1 : 0);
  if (count == 0) {
    msgpack_pack_array(pk, 0);
    return;
  }
  msgpack_pack_array(pk, 1);
  msgpack_pack_map(pk, count);
  /* The entries are packed already: their bytes go through as they are. */
  if (args != NULL && args->count > 0)
    pk->callback(pk->data, args->body.data, args->body.size);
  if (extra) {
    msgpack_pack_str_with_body(pk, key, strlen(key));
    msgpack_pack_str_with_body(pk, value, strlen(value));
  }
}
