/*
 * Inside the config loader: the state of one walk over the table a config
 * file returns, and the readers every part of the walk shares
 * (config_values.c). config.c walks the settings groups and the top level,
 * config_monitors.c the `monitors` entries. Every reader returns 0, or -1
 * with w->err set to invalid_params naming the field as the person wrote
 * it (array indexes from 1); config.c puts the file name in front.
 */
#ifndef VIGIL_CONFIG_WALK_H
#define VIGIL_CONFIG_WALK_H

#include <lua.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/config.h"
#include "base/error.h"
#include "base/strbuf.h"
#include "spec/units.h"

/* Longest field name built for a message; longer names are cut. */
#define CONFIG_NAME_MAX 256
/* Longest part of a user string (a key, a path) quoted in a message. */
#define CONFIG_QUOTE_MAX 96

/* The state of one walk. */
typedef struct {
  lua_State *L;
  VigilConfig *cfg;
  VigilError *err; /* messages without the file name; config_finish adds it */
} ConfigWalk;

/* --- messages --- */

int config_fail(ConfigWalk *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s quoted (at most CONFIG_QUOTE_MAX bytes of it, escaped). */
void config_quote(StrBuf *out, const char *s, size_t len);
/* Formats a field name into buf (CONFIG_NAME_MAX), cut if longer. */
void config_name(char *buf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The name of the key at stack index k under parent ("monitor.x", "[1]"). */
void config_key_name(lua_State *L, int k, const char *parent, char *buf);
/* The key at k as a string, or NULL when it is not one. */
const char *config_key(lua_State *L, int k);
/* Refuses the key at k as an unknown field of parent. */
int config_unknown(ConfigWalk *w, int k, const char *parent);

/* --- values (idx is an absolute stack index) --- */

int config_bool(ConfigWalk *w, int idx, const char *field, bool *out);
int config_integer(ConfigWalk *w, int idx, const char *field, int64_t *out);
/* An integer within [min, max]; `why` ends the bound in a refusal. */
int config_integer_in(ConfigWalk *w, int idx, const char *field, int64_t min, int64_t max,
                      const char *why, int64_t *out);
int config_number(ConfigWalk *w, int idx, const char *field, double min, double max,
                  double *out);
/* As config_integer_in, or a string with units of kind (units.h): "90s",
 * "512MiB". */
int config_quantity_in(ConfigWalk *w, int idx, const char *field, UnitKind kind, int64_t min,
                       int64_t max, const char *why, int64_t *out);
/* A string borrowed from Lua, without NUL; `nonempty` refuses "". */
int config_string(ConfigWalk *w, int idx, const char *field, bool nonempty, const char **out,
                  size_t *lenp);
/* A copy of the string into *dst (freeing what was there). */
int config_string_dup(ConfigWalk *w, int idx, const char *field, bool nonempty, char **dst);
/* Checks a proper array (keys exactly 1..n); `what` completes "an array of". */
int config_array(ConfigWalk *w, int idx, const char *field, const char *what, size_t *n);
/* An array of strings as NULL-terminated copies, owned by the caller even on
 * error (config_list_free). */
int config_string_list(ConfigWalk *w, int idx, const char *field, bool nonempty, char ***out,
                       size_t *n);
void config_list_free(char **list, size_t n);
/* One of `choices` (NULL-terminated), stored as its index. */
int config_choice(ConfigWalk *w, int idx, const char *field, const char *const *choices,
                  int *out);
/* A table of name = value strings as sorted "K=V" copies (caller's even on error). */
int config_env(ConfigWalk *w, int idx, const char *field, bool numbers, char ***out);

/* `monitors` (config_monitors.c). */
int config_monitors(ConfigWalk *w, int idx);

#endif
