/*
 * The config walk's vocabulary (see config_walk.h): how a value of the
 * config table is read as a boolean, an integer in range, a string, an
 * array of strings, a choice, an environment table or a duration or size
 * written with units, and how a refusal
 * names the field ("monitors[2].notify", "monitor[\"max patterns\"]") the
 * way the person wrote it. Every reader refuses with invalid_params and a
 * message that names the field, the bound and the value.
 */
#include "engine/config_walk.h"

#include <inttypes.h>
#include <lauxlib.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/memory.h"
#include "base/strbuf.h"
#include "base/textfmt.h"

/* --- messages ------------------------------------------------------------ */

/* Sets the walk's error to the formatted text; returns -1. */

int
config_fail(ConfigWalk *w, const char *fmt, ...)
{
  char text[VIGIL_ERROR_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  return error_set(w->err, kErrInvalidParams, "%s", text);
}

/* Appends s (len bytes) to out as a double-quoted string a person can read:
 * quote and backslash escaped, control bytes as \xNN, at most
 * CONFIG_QUOTE_MAX bytes then "...". The string comes from the file, so it
 * may hold anything. */
void
config_quote(StrBuf *out, const char *s, size_t len)
{
  bool cut = len > CONFIG_QUOTE_MAX;
  if (cut)
    len = CONFIG_QUOTE_MAX;
  strbuf_putc(out, '"');
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\')
      strbuf_printf(out, "\\%c", c);
    else if (c < 0x20 || c == 0x7f)
      strbuf_printf(out, "\\x%02x", c);
    else
      strbuf_putc(out, (char)c);
  }
  if (cut)
    strbuf_puts(out, "...");
  strbuf_putc(out, '"');
}

/* Formats into buf (CONFIG_NAME_MAX bytes) a field name; cut if longer. */
void
config_name(char *buf, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, CONFIG_NAME_MAX, fmt, ap);
  va_end(ap);
}

/* Whether s (len bytes) can be written as a Lua name (a.b rather than
 * a["b"]). Keywords do not matter here: the name only labels a message. */
static bool
config_is_identifier(const char *s, size_t len)
{
  if (len == 0 || (s[0] >= '0' && s[0] <= '9'))
    return false;
  for (size_t i = 0; i < len; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
          c == '_'))
      return false;
  }
  return true;
}

/* Writes into buf the name of the key at stack index k under `parent`:
 * parent.key, parent["odd key"], parent[3], or just key at the top level
 * (parent ""). */
void
config_key_name(lua_State *L, int k, const char *parent, char *buf)
{
  StrBuf s = STRBUF_INIT;
  strbuf_puts(&s, parent);
  switch (lua_type(L, k)) {
  case LUA_TSTRING: {
    size_t len;
    const char *key = lua_tolstring(L, k, &len);
    if (config_is_identifier(key, len)) {
      if (parent[0] != '\0')
        strbuf_putc(&s, '.');
      strbuf_append(&s, key, len);
    } else {
      strbuf_putc(&s, '[');
      config_quote(&s, key, len);
      strbuf_putc(&s, ']');
    }
    break;
  }
  case LUA_TNUMBER:
    if (lua_isinteger(L, k))
      strbuf_printf(&s, "[%lld]", (long long)lua_tointeger(L, k));
    else {
      strbuf_putc(&s, '[');
      textfmt_number(&s, (double)lua_tonumber(L, k));
      strbuf_putc(&s, ']');
    }
    break;
  case LUA_TBOOLEAN:
    strbuf_puts(&s, lua_toboolean(L, k) ? "[true]" : "[false]");
    break;
  default:
    strbuf_printf(&s, "[a %s key]", lua_typename(L, lua_type(L, k)));
    break;
  }
  config_name(buf, "%s", strbuf_cstr(&s));
  strbuf_free(&s);
}

/* The string key at stack index k, or NULL when it is not a string or holds
 * a NUL byte (either way it names no field). */
const char *
config_key(lua_State *L, int k)
{
  if (lua_type(L, k) != LUA_TSTRING)
    return NULL;
  size_t len;
  const char *key = lua_tolstring(L, k, &len);
  return strlen(key) == len ? key : NULL;
}

/* Refuses the key at stack index k under parent as an unknown field. */
int
config_unknown(ConfigWalk *w, int k, const char *parent)
{
  char name[CONFIG_NAME_MAX];
  config_key_name(w->L, k, parent, name);
  return config_fail(w, "%s: unknown field", name);
}

/* --- values -------------------------------------------------------------- */

/* The boolean at idx. */
int
config_bool(ConfigWalk *w, int idx, const char *field, bool *out)
{
  if (lua_type(w->L, idx) != LUA_TBOOLEAN)
    return config_fail(w, "%s must be a boolean, got %s", field, luaL_typename(w->L, idx));
  *out = lua_toboolean(w->L, idx);
  return 0;
}

/* The integer at idx: a Lua integer, or a float with an integral value that
 * fits in 64 bits. */
int
config_integer(ConfigWalk *w, int idx, const char *field, int64_t *out)
{
  if (lua_type(w->L, idx) != LUA_TNUMBER)
    return config_fail(w, "%s must be an integer, got %s", field, luaL_typename(w->L, idx));
  int ok = 0;
  lua_Integer v = lua_tointegerx(w->L, idx, &ok);
  if (!ok) {
    StrBuf b = STRBUF_INIT;
    textfmt_number(&b, (double)lua_tonumber(w->L, idx));
    config_fail(w, "%s must be an integer, got %s", field, strbuf_cstr(&b));
    strbuf_free(&b);
    return -1;
  }
  *out = (int64_t)v;
  return 0;
}

/* The integer at idx within [min, max]. */
int
config_integer_in(ConfigWalk *w, int idx, const char *field, int64_t min, int64_t max,
                  const char *why, int64_t *out)
{
  int64_t v = 0;
  if (config_integer(w, idx, field, &v) != 0)
    return -1;
  if (v < min || v > max)
    return config_fail(w, "%s must be %" PRId64 "..%" PRId64 "%s, got %" PRId64, field, min, max,
                       why, v);
  *out = v;
  return 0;
}

/* A number or a string with units of kind (units.h) within [min, max].
 * `why` (" (monitor.max_runtime_ms)", or "") names where the bound comes
 * from; in a refusal of a string it joins the bounds written with units:
 * "1..1800000 ms (1ms..30m, monitor.max_runtime_ms)". */
int
config_quantity_in(ConfigWalk *w, int idx, const char *field, UnitKind kind, int64_t min,
                   int64_t max, const char *why, int64_t *out)
{
  lua_State *L = w->L;
  if (lua_type(L, idx) != LUA_TSTRING) {
    if (lua_type(L, idx) != LUA_TNUMBER)
      return config_fail(w, "%s must be an integer or a string such as %s, got %s", field,
                         units_examples(kind), luaL_typename(L, idx));
    return config_integer_in(w, idx, field, min, max, why, out);
  }
  const char *text = NULL;
  size_t len = 0;
  if (config_string(w, idx, field, false, &text, &len) != 0)
    return -1;
  /* " (NAME)" as the note inside the bounds' parentheses. */
  char note[CONFIG_NAME_MAX] = "";
  size_t wlen = strlen(why);
  if (wlen > 3 && strncmp(why, " (", 2) == 0 && why[wlen - 1] == ')')
    snprintf(note, sizeof note, "%.*s", (int)(wlen - 3), why + 2);
  char bounds[UNITS_BOUNDS_MAX];
  units_bounds(kind, min, max, note[0] ? note : NULL, bounds);
  StrBuf q = STRBUF_INIT;
  config_quote(&q, text, len);
  int64_t v = 0;
  const char *bad = NULL;
  int rc = 0;
  if (units_parse(kind, text, &v, &bad) != 0)
    rc = config_fail(w, "%s must be %s, a number or a string such as %s, got %s: %s", field,
                     bounds, units_examples(kind), strbuf_cstr(&q), bad);
  else if (v < min || v > max)
    rc = config_fail(w, "%s must be %s, got %s (%" PRId64 ")", field, bounds, strbuf_cstr(&q), v);
  else
    *out = v;
  strbuf_free(&q);
  return rc;
}

/* The string at idx (borrowed from Lua: valid while the value is reachable),
 * refusing a NUL byte and, when nonempty, "". */
int
config_string(ConfigWalk *w, int idx, const char *field, bool nonempty, const char **out,
              size_t *lenp)
{
  lua_State *L = w->L;
  if (lua_type(L, idx) != LUA_TSTRING)
    return config_fail(w, "%s must be a %sstring, got %s", field, nonempty ? "non-empty " : "",
                       luaL_typename(L, idx));
  size_t len;
  const char *s = lua_tolstring(L, idx, &len);
  if (nonempty && len == 0)
    return config_fail(w, "%s must be a non-empty string, got \"\"", field);
  if (strlen(s) != len)
    return config_fail(w, "%s must not contain a NUL byte", field);
  *out = s;
  if (lenp)
    *lenp = len;
  return 0;
}

/* A copy of the string at idx into *dst (freeing what was there). */
int
config_string_dup(ConfigWalk *w, int idx, const char *field, bool nonempty, char **dst)
{
  const char *s = NULL;
  if (config_string(w, idx, field, nonempty, &s, NULL) != 0)
    return -1;
  free(*dst);
  *dst = xstrdup(s);
  return 0;
}

/* Checks that the value at idx is an array (a table whose keys are exactly
 * 1..n) and stores n. `what` completes "must be an array of ...". */
int
config_array(ConfigWalk *w, int idx, const char *field, const char *what, size_t *n)
{
  lua_State *L = w->L;
  if (lua_type(L, idx) != LUA_TTABLE)
    return config_fail(w, "%s must be an array of %s, got %s", field, what,
                       luaL_typename(L, idx));
  lua_Unsigned len = lua_rawlen(L, idx);
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {
    lua_Integer k = lua_isinteger(L, -2) ? lua_tointeger(L, -2) : 0;
    if (k < 1 || (lua_Unsigned)k > len) {
      char name[CONFIG_NAME_MAX];
      config_key_name(L, -2, "", name);
      lua_pop(L, 2);
      return config_fail(w, "%s must be an array of %s, got a table with the key %s", field,
                         what, name);
    }
    lua_pop(L, 1);
  }
  *n = (size_t)len;
  return 0;
}

/* Reads the array of strings at idx into a NULL-terminated list of copies
 * (*out, *n entries), which the caller owns even on error. */
int
config_string_list(ConfigWalk *w, int idx, const char *field, bool nonempty, char ***out,
                   size_t *n)
{
  lua_State *L = w->L;
  size_t len;
  *out = NULL;
  *n = 0;
  if (config_array(w, idx, field, "strings", &len) != 0)
    return -1;
  *out = xcalloc(len + 1, sizeof **out);
  for (size_t i = 0; i < len; i++) {
    char name[CONFIG_NAME_MAX];
    config_name(name, "%s[%zu]", field, i + 1);
    lua_rawgeti(L, idx, (lua_Integer)(i + 1));
    const char *s = NULL;
    int rc = config_string(w, -1, name, nonempty, &s, NULL);
    if (rc == 0)
      (*out)[(*n)++] = xstrdup(s);
    lua_pop(L, 1);
    if (rc != 0)
      return -1;
  }
  return 0;
}

/* Frees a list from config_string_list. */
void
config_list_free(char **list, size_t n)
{
  for (size_t i = 0; i < n; i++)
    free(list[i]);
  free(list);
}


/* The value at idx as one of `choices` (NULL-terminated), stored as its
 * index; the refusal lists every choice. */
int
config_choice(ConfigWalk *w, int idx, const char *field, const char *const *choices, int *out)
{
  const char *s = NULL;
  size_t len;
  if (config_string(w, idx, field, false, &s, &len) != 0)
    return -1;
  for (int i = 0; choices[i]; i++) {
    if (strcmp(choices[i], s) == 0) {
      *out = i;
      return 0;
    }
  }
  StrBuf msg = STRBUF_INIT;
  for (int i = 0; choices[i]; i++)
    strbuf_printf(&msg, "%s\"%s\"", i ? " | " : "", choices[i]);
  strbuf_puts(&msg, ", got ");
  config_quote(&msg, s, len);
  int rc = config_fail(w, "%s must be %s", field, strbuf_cstr(&msg));
  strbuf_free(&msg);
  return rc;
}

/* Orders "K=V" strings, for an env list that does not depend on the order
 * lua_next happens to visit keys in. */
static int
config_env_cmp(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* monitors[i].env: a table of name = value strings, kept as sorted "K=V"
 * in *out (owned by the caller even on error); with numbers, a value may be
 * a non-negative integer too (told in decimal). */
int
config_env(ConfigWalk *w, int idx, const char *field, bool numbers, char ***out)
{
  lua_State *L = w->L;
  if (lua_type(L, idx) != LUA_TTABLE)
    return config_fail(w, "%s must be a table of strings, got %s", field, luaL_typename(L, idx));
  size_t n = 0;
  (*out) = xcalloc(1, sizeof *(*out));
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {
    char name[CONFIG_NAME_MAX];
    config_key_name(L, -2, field, name);
    const char *key = config_key(L, -2);
    const char *value;
    int rc = 0;
    if (key == NULL || key[0] == '\0' || strchr(key, '=') != NULL)
      rc = config_fail(w, "%s: an environment variable name must be a non-empty string "
                          "without \"=\"", name);
    else if (numbers && lua_isinteger(L, -1) && lua_tointeger(L, -1) >= 0)
      value = lua_tostring(L, -1); /* converts the copy lua_next left: next needs only the key */
    else
      rc = config_string(w, -1, name, false, &value, NULL);
    if (rc != 0) {
      lua_pop(L, 2);
      return -1;
    }
    StrBuf kv = STRBUF_INIT;
    strbuf_printf(&kv, "%s=%s", key, value);
    (*out) = xrealloc((*out), (n + 2) * sizeof *(*out));
    (*out)[n++] = strbuf_take(&kv);
    (*out)[n] = NULL;
    lua_pop(L, 1);
  }
  qsort((*out), n, sizeof *(*out), config_env_cmp);
  return 0;
}

/* A number within [min, max]. */
int
config_number(ConfigWalk *w, int idx, const char *field, double min, double max, double *out)
{
  if (lua_type(w->L, idx) != LUA_TNUMBER)
    return config_fail(w, "%s must be a number, got %s", field, luaL_typename(w->L, idx));
  double v = (double)lua_tonumber(w->L, idx);
  if (!(v >= min && v <= max)) {
    StrBuf b = STRBUF_INIT;
    textfmt_number(&b, min);
    strbuf_puts(&b, "..");
    textfmt_number(&b, max);
    strbuf_puts(&b, ", got ");
    textfmt_number(&b, v);
    config_fail(w, "%s must be %s", field, strbuf_cstr(&b));
    strbuf_free(&b);
    return -1;
  }
  *out = v;
  return 0;
}
