/*
 * Typed reading of a method's argument map (a msgpack map with string keys),
 * with the protocol's error for every way an argument can be wrong: missing,
 * of the wrong type, out of range, or unknown to the method. Each message
 * names the argument (and the index, for arrays), the bound and the value:
 *   invalid_params: timeout_ms must be 1..3600000, got 0
 *   invalid_params: patterns[2] must be a string, got integer
 *   invalid_params: unknown argument "colour" (monitor_start takes: command, argv, ...)
 * A getter returns an ArgResult: kArgPresent when the argument is present
 * and valid (out filled), kArgAbsent when it is absent or nil (out
 * untouched), kArgError (err filled). The values keep `< 0` meaning error.
 */
#ifndef VIGIL_ARGS_H
#define VIGIL_ARGS_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "base/strbuf.h"

typedef enum {
  kArgError = -1,
  kArgAbsent = 0,
  kArgPresent = 1,
} ArgResult;

typedef struct {
  const msgpack_object *map;  /* NULL when params was [] */
  const char *method;         /* for messages */
} Args;

/* Refuses any key not in `known` (NULL-terminated). */
int args_check_known(const Args *a, const char *const *known, VigilError *err);

/* The value of key, or NULL when absent (nil counts as absent). */
const msgpack_object *args_get(const Args *a, const char *key);

/* A string (str or bin), copied and NUL-terminated; max_len bounds it.
 * A string containing a NUL byte is refused. */
ArgResult args_str(const Args *a, const char *key, size_t max_len, char **out, VigilError *err);

/* A non-negative integer within [min, max]. Integral floats are accepted. */
ArgResult args_uint(const Args *a, const char *key, uint64_t min, uint64_t max, uint64_t *out,
              VigilError *err);

ArgResult args_bool(const Args *a, const char *key, bool *out, VigilError *err);

/* A number (int or float) within [min, max]. */
ArgResult args_double(const Args *a, const char *key, double min, double max, double *out,
                VigilError *err);

/* One of `choices` (NULL-terminated); *out is its index. */
ArgResult args_choice(const Args *a, const char *key, const char *const *choices, int *out,
                VigilError *err);

/* An array of at most max_items strings, each at most max_len bytes; *out is
 * a NULL-terminated array of copies (free with args_free_strv). */
ArgResult args_strv(const Args *a, const char *key, size_t max_items, size_t max_len, char ***out,
              size_t *n, VigilError *err);

/* A map of string to string, as "K=V" entries (NULL-terminated). Keys must
 * be non-empty and hold no '='. */
ArgResult args_env(const Args *a, const char *key, size_t max_items, bool numbers, char ***out,
                    VigilError *err);

/* Raw bytes of a str or bin (not copied; valid while the message is). */
ArgResult args_bytes(const Args *a, const char *key, size_t max_len, const char **out, size_t *len,
               VigilError *err);

void args_free_strv(char **v);

#endif
