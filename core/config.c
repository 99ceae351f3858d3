/*
 * The configuration loader: runs a config file in a fresh sandbox, takes the
 * one table it returns, and walks that table strictly into a VigilConfig
 * (see config.h for the shape).
 *
 * Strict means: every key is known (an unknown one, at any depth, is refused
 * as "unknown field" so a typo never falls back to a default silently),
 * every value has its type (integers may be written as floats with an
 * integral value, 3e4, but never 1.5), every array is a proper sequence, and
 * no string holds a NUL byte. The numbers are set through the settings table
 * (settings_set_int, settings_set_choice), so their bounds and messages live
 * in one place; config.c only adds the file name in front. Array indexes in
 * messages count from 1, as the Lua table the person wrote does.
 *
 * The walk reads the table with raw access only (lua_next, lua_rawget), so
 * no metamethod, and thus no Lua code, runs outside the budget; and it runs
 * inside luasandbox_call, so even an allocation failure while walking is an
 * error message rather than a panic. Everything it builds hangs off the
 * VigilConfig under construction at once, so an error at any point is
 * cleaned up by config_free.
 *
 * Settings are walked before `monitors`, whatever order the file gives,
 * because a monitor is checked against them (max_patterns,
 * pattern_max_length, max_runtime_ms, allow_persistent).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <lauxlib.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "childenv.h"
#include "luasandbox.h"
#include "memory.h"
#include "monitor.h"
#include "monitor_fields.h"
#include "strbuf.h"
#include "utf8.h"

/* Largest config file read, and the sandbox it runs in. */
#define CONFIG_FILE_MAX (1u << 20)
#define CONFIG_MEMORY_MAX LUASANDBOX_DEFAULT_MEMORY
#define CONFIG_INSTRUCTION_MAX LUASANDBOX_DEFAULT_INSTRUCTIONS

/* Longest field name built for a message; longer names are cut. */
#define CONFIG_NAME_MAX 256
/* Longest part of a user string (a key, a path) quoted in a message. */
#define CONFIG_QUOTE_MAX 96
/* Longest monitor.path, and most entries of an env_* list. */
#define CONFIG_SEARCH_PATH_MAX 16384
#define CONFIG_ENV_LIST_MAX 1024

/* The state of one walk. */
typedef struct {
  lua_State *L;
  VigilConfig *cfg;
  VigilError *err; /* messages without the file name; config_finish adds it */
} ConfigWalk;

/* --- messages ------------------------------------------------------------ */

/* Sets the walk's error to the formatted text; returns -1. */
static int config_fail(ConfigWalk *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int
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
static void
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
static void config_name(char *buf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
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
static void
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
    else
      strbuf_printf(&s, "[%.14g]", (double)lua_tonumber(L, k));
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
static const char *
config_key(lua_State *L, int k)
{
  if (lua_type(L, k) != LUA_TSTRING)
    return NULL;
  size_t len;
  const char *key = lua_tolstring(L, k, &len);
  return strlen(key) == len ? key : NULL;
}

/* Refuses the key at stack index k under parent as an unknown field. */
static int
config_unknown(ConfigWalk *w, int k, const char *parent)
{
  char name[CONFIG_NAME_MAX];
  config_key_name(w->L, k, parent, name);
  return config_fail(w, "%s: unknown field", name);
}

/* --- values -------------------------------------------------------------- */

/* The boolean at idx. */
static int
config_bool(ConfigWalk *w, int idx, const char *field, bool *out)
{
  if (lua_type(w->L, idx) != LUA_TBOOLEAN)
    return config_fail(w, "%s must be a boolean, got %s", field, luaL_typename(w->L, idx));
  *out = lua_toboolean(w->L, idx);
  return 0;
}

/* The integer at idx: a Lua integer, or a float with an integral value that
 * fits in 64 bits. */
static int
config_integer(ConfigWalk *w, int idx, const char *field, int64_t *out)
{
  if (lua_type(w->L, idx) != LUA_TNUMBER)
    return config_fail(w, "%s must be an integer, got %s", field, luaL_typename(w->L, idx));
  int ok = 0;
  lua_Integer v = lua_tointegerx(w->L, idx, &ok);
  if (!ok)
    return config_fail(w, "%s must be an integer, got %.14g", field,
                       (double)lua_tonumber(w->L, idx));
  *out = (int64_t)v;
  return 0;
}

/* The integer at idx within [min, max]. */
static int
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

/* The string at idx (borrowed from Lua: valid while the value is reachable),
 * refusing a NUL byte and, when nonempty, "". */
static int
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
static int
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
static int
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
static int
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
static void
config_list_free(char **list, size_t n)
{
  for (size_t i = 0; i < n; i++)
    free(list[i]);
  free(list);
}

/* --- the settings groups ------------------------------------------------- */

/* Sets one setting of the table from the value at idx. */
static int
config_setting(ConfigWalk *w, const SettingSpec *spec, int idx)
{
  if (spec->kind == kSettingEnum) {
    const char *choice;
    if (config_string(w, idx, spec->name, false, &choice, NULL) != 0)
      return -1;
    return settings_set_choice(&w->cfg->settings, spec->name, choice, w->err);
  }
  int64_t v = 0;
  if (config_integer(w, idx, spec->name, &v) != 0)
    return -1;
  return settings_set_int(&w->cfg->settings, spec->name, v, w->err);
}

/* monitor.workspace_roots: absolute paths of existing directories, kept
 * resolved (realpath) so the engine can compare a resolved cwd with them. */
static int
config_roots(ConfigWalk *w, int idx)
{
  VigilConfig *cfg = w->cfg;
  const char *field = "monitor.workspace_roots";
  char **list;
  size_t n;
  int rc = config_string_list(w, idx, field, true, &list, &n);
  for (size_t i = 0; rc == 0 && i < n; i++) {
    StrBuf q = STRBUF_INIT;
    config_quote(&q, list[i], strlen(list[i]));
    struct stat st;
    char *real = NULL;
    if (list[i][0] != '/')
      rc = config_fail(w, "%s[%zu] must be an absolute path, got %s", field, i + 1,
                       strbuf_cstr(&q));
    else if ((real = realpath(list[i], NULL)) == NULL)
      rc = config_fail(w, "%s[%zu]: %s: %s", field, i + 1, strbuf_cstr(&q), strerror(errno));
    else if (stat(real, &st) != 0 || !S_ISDIR(st.st_mode))
      rc = config_fail(w, "%s[%zu]: %s is not a directory", field, i + 1, strbuf_cstr(&q));
    strbuf_free(&q);
    if (rc != 0) {
      free(real);
      break;
    }
    cfg->workspace_roots = xrealloc(cfg->workspace_roots,
                                    (cfg->nroots + 1) * sizeof *cfg->workspace_roots);
    cfg->workspace_roots[cfg->nroots++] = real;
  }
  config_list_free(list, n);
  return rc;
}

/* monitor.path: a string of absolute directories separated by ':'. An
 * empty or relative entry is refused, naming it: it would make the child's
 * cwd, which the caller picks, part of the search path. */
static int
config_search_path(ConfigWalk *w, int idx)
{
  const char *field = "monitor.path";
  const char *path = NULL;
  size_t len = 0;
  if (config_string(w, idx, field, false, &path, &len) != 0)
    return -1;
  if (len > CONFIG_SEARCH_PATH_MAX)
    return config_fail(w, "%s must be at most %d bytes, got %zu", field, CONFIG_SEARCH_PATH_MAX,
                       len);
  size_t i = 1;
  for (const char *s = path;; i++) {
    const char *colon = strchr(s, ':');
    size_t n = colon ? (size_t)(colon - s) : strlen(s);
    if (n == 0 || s[0] != '/') {
      StrBuf q = STRBUF_INIT;
      config_quote(&q, s, n);
      int rc = config_fail(w, "%s: entry %zu, %s, is not an absolute directory (entries are "
                              "absolute paths separated by \":\")",
                           field, i, strbuf_cstr(&q));
      strbuf_free(&q);
      return rc;
    }
    if (colon == NULL)
      break;
    s = colon + 1;
  }
  free(w->cfg->search_path);
  w->cfg->search_path = xstrdup(path);
  return 0;
}

/* monitor.env_deny, env_allow or env_inherit (field) into *dst, replacing
 * the default: at most CONFIG_ENV_LIST_MAX names or PREFIX* patterns. */
static int
config_env_list(ConfigWalk *w, int idx, const char *field, char ***dst)
{
  char **list;
  size_t n;
  if (config_string_list(w, idx, field, false, &list, &n) != 0) {
    config_list_free(list, n);
    return -1;
  }
  int rc = 0;
  if (n > CONFIG_ENV_LIST_MAX)
    rc = config_fail(w, "%s must have at most %d entries, got %zu", field, CONFIG_ENV_LIST_MAX,
                     n);
  for (size_t i = 0; rc == 0 && i < n; i++) {
    const char *why = childenv_pattern_problem(list[i]);
    if (why != NULL) {
      StrBuf q = STRBUF_INIT;
      config_quote(&q, list[i], strlen(list[i]));
      rc = config_fail(w, "%s[%zu] %s, got %s", field, i + 1, why, strbuf_cstr(&q));
      strbuf_free(&q);
    }
  }
  if (rc != 0) {
    config_list_free(list, n);
    return -1;
  }
  char **old = *dst;
  for (size_t i = 0; old != NULL && old[i] != NULL; i++)
    free(old[i]);
  free(old);
  *dst = list;
  return 0;
}

/* The fields of `monitor` that are not settings. Returns 1 when key is not
 * one of them, else 0 or -1. */
static int
config_monitor_field(ConfigWalk *w, const char *key, int idx)
{
  VigilConfig *cfg = w->cfg;
  char name[CONFIG_NAME_MAX];
  config_name(name, "monitor.%s", key);
  if (strcmp(key, "enabled") == 0)
    return config_bool(w, idx, name, &cfg->enabled);
  if (strcmp(key, "live_mode_enabled") == 0)
    return config_bool(w, idx, name, &cfg->live_mode_enabled);
  if (strcmp(key, "allow_shell") == 0)
    return config_bool(w, idx, name, &cfg->allow_shell);
  if (strcmp(key, "allow_persistent") == 0)
    return config_bool(w, idx, name, &cfg->allow_persistent);
  if (strcmp(key, "allowed_commands") == 0) {
    char **list;
    size_t n;
    int rc = config_string_list(w, idx, name, true, &list, &n);
    for (size_t i = 0; rc == 0 && i < n; i++)
      allowlist_add(&cfg->allowed_commands, list[i]);
    config_list_free(list, n);
    return rc;
  }
  if (strcmp(key, "workspace_roots") == 0)
    return config_roots(w, idx);
  if (strcmp(key, "path") == 0)
    return config_search_path(w, idx);
  if (strcmp(key, "env_deny") == 0)
    return config_env_list(w, idx, name, &cfg->env_deny);
  if (strcmp(key, "env_allow") == 0)
    return config_env_list(w, idx, name, &cfg->env_allow);
  if (strcmp(key, "env_inherit") == 0)
    return config_env_list(w, idx, name, &cfg->env_inherit);
  return 1;
}

/* Walks the group table at idx ("monitor", "rate_limit", ...): each key is a
 * setting group.key of the table or, in `monitor`, one of its other fields. */
static int
config_group(ConfigWalk *w, int idx, const char *group)
{
  lua_State *L = w->L;
  if (lua_type(L, idx) != LUA_TTABLE)
    return config_fail(w, "%s must be a table, got %s", group, luaL_typename(L, idx));
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {
    int v = lua_gettop(L);
    const char *key = config_key(L, v - 1);
    int rc = 1;
    if (key != NULL && strcmp(group, "monitor") == 0)
      rc = config_monitor_field(w, key, v);
    if (rc == 1 && key != NULL) {
      char name[CONFIG_NAME_MAX];
      config_name(name, "%s.%s", group, key);
      const SettingSpec *spec = settings_find(name);
      if (spec != NULL)
        rc = config_setting(w, spec, v);
    }
    if (rc == 1)
      rc = config_unknown(w, v - 1, group);
    if (rc != 0) {
      lua_pop(L, 2);
      return -1;
    }
    lua_pop(L, 1);
  }
  return 0;
}

/* --- monitors ------------------------------------------------------------ */

/* The value at idx as one of `choices` (NULL-terminated), stored as its
 * index; the refusal lists every choice. */
static int
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
 * in *out (owned by the caller even on error). */
static int
config_env(ConfigWalk *w, int idx, const char *field, char ***out)
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
static int
config_number(ConfigWalk *w, int idx, const char *field, double min, double max, double *out)
{
  if (lua_type(w->L, idx) != LUA_TNUMBER)
    return config_fail(w, "%s must be a number, got %s", field, luaL_typename(w->L, idx));
  double v = (double)lua_tonumber(w->L, idx);
  if (!(v >= min && v <= max))
    return config_fail(w, "%s must be %g..%g, got %g", field, min, max, v);
  *out = v;
  return 0;
}

/* An entry of `monitors` as a FieldSource (monitor_fields.h): its table is
 * at idx, and its values are read with the config's own types and
 * messages, so a field of the table works here exactly as on the wire. */
typedef struct {
  ConfigWalk *w;
  int idx;
} ConfigEntry;

static void
config_field_name(const FieldSource *src, const char *key, char *buf, size_t size)
{
  snprintf(buf, size, "%s.%s", src->base, key);
}

/* Pushes entry[key] (raw) and returns 1, or pushes nothing and returns 0
 * when it is nil. */
static int
config_field_push(const FieldSource *src, const char *key, ConfigWalk **w, char *name)
{
  const ConfigEntry *e = src->ctx;
  lua_State *L = e->w->L;
  *w = e->w;
  config_field_name(src, key, name, CONFIG_NAME_MAX);
  lua_pushstring(L, key);
  if (lua_rawget(L, e->idx) == LUA_TNIL) {
    lua_pop(L, 1);
    return 0;
  }
  return 1;
}

/* Pops the value config_field_push pushed and turns a config_* result
 * (0 or -1) into a getter's (1 or -1). */
static int
config_field_pop(ConfigWalk *w, int rc)
{
  lua_pop(w->L, 1);
  return rc == 0 ? 1 : -1;
}

static int
config_field_string(const FieldSource *src, const char *key, char **out, VigilError *err)
{
  ConfigWalk *w;
  char name[CONFIG_NAME_MAX];
  if (!config_field_push(src, key, &w, name))
    return 0;
  return config_field_pop(w, config_string_dup(w, lua_gettop(w->L), name, false, out));
}

static int
config_field_strings(const FieldSource *src, const char *key, char ***out, size_t *n,
                     VigilError *err)
{
  ConfigWalk *w;
  char name[CONFIG_NAME_MAX];
  if (!config_field_push(src, key, &w, name))
    return 0;
  int rc = config_string_list(w, lua_gettop(w->L), name, false, out, n);
  if (rc != 0) {
    config_list_free(*out, *n);
    *out = NULL;
  }
  return config_field_pop(w, rc);
}

static int
config_field_bool(const FieldSource *src, const char *key, bool *out, VigilError *err)
{
  ConfigWalk *w;
  char name[CONFIG_NAME_MAX];
  if (!config_field_push(src, key, &w, name))
    return 0;
  return config_field_pop(w, config_bool(w, lua_gettop(w->L), name, out));
}

static int
config_field_uint(const FieldSource *src, const char *key, uint64_t min, uint64_t max,
                  const char *why, uint64_t *out, VigilError *err)
{
  ConfigWalk *w;
  char name[CONFIG_NAME_MAX];
  if (!config_field_push(src, key, &w, name))
    return 0;
  int64_t v = 0;
  int64_t top = max > INT64_MAX ? INT64_MAX : (int64_t)max;
  int rc = config_integer_in(w, lua_gettop(w->L), name, (int64_t)min, top, why, &v);
  if (rc == 0)
    *out = (uint64_t)v;
  return config_field_pop(w, rc);
}

static int
config_field_number(const FieldSource *src, const char *key, double min, double max,
                    double *out, VigilError *err)
{
  ConfigWalk *w;
  char name[CONFIG_NAME_MAX];
  if (!config_field_push(src, key, &w, name))
    return 0;
  return config_field_pop(w, config_number(w, lua_gettop(w->L), name, min, max, out));
}

static int
config_field_choice(const FieldSource *src, const char *key, const char *const *choices,
                    int *out, VigilError *err)
{
  ConfigWalk *w;
  char name[CONFIG_NAME_MAX];
  if (!config_field_push(src, key, &w, name))
    return 0;
  return config_field_pop(w, config_choice(w, lua_gettop(w->L), name, choices, out));
}

static int
config_field_env(const FieldSource *src, const char *key, size_t max, char ***out,
                 VigilError *err)
{
  ConfigWalk *w;
  char name[CONFIG_NAME_MAX];
  if (!config_field_push(src, key, &w, name))
    return 0;
  int rc = config_env(w, lua_gettop(w->L), name, out);
  size_t n = 0;
  while (rc == 0 && (*out)[n])
    n++;
  if (rc == 0 && n > max)
    rc = config_fail(w, "%s: at most %zu variables, got %zu", name, max, n);
  return config_field_pop(w, rc);
}

/* The rules of a config entry the wire leaves to later stages: the
 * patterns against monitor.max_patterns and monitor.pattern_max_length
 * (the matcher checks them again at start), and persistent against
 * monitor.allow_persistent, so a config that could never boot is refused as
 * it loads. */
static int
config_entry_rules(ConfigWalk *w, const char *base, const ConfigMonitor *cm, bool match_pattern)
{
  const VigilConfig *cfg = w->cfg;
  const StartRequest *req = &cm->req;
  if (req->persistent && !cfg->allow_persistent)
    return config_fail(w, "%s.persistent is true but monitor.allow_persistent is false", base);
  const VigilSettings *s = &cfg->settings;
  if (req->npatterns > (size_t)s->max_patterns)
    return config_fail(w, "%s.patterns must have at most %" PRId64
                          " entries (monitor.max_patterns), got %zu",
                       base, s->max_patterns, req->npatterns);
  for (size_t i = 0; i < req->npatterns; i++) {
    size_t len = strlen(req->patterns[i]);
    if (len > (size_t)s->pattern_max_length) {
      char name[CONFIG_NAME_MAX];
      if (match_pattern)
        config_name(name, "%s.match_pattern", base);
      else
        config_name(name, "%s.patterns[%zu]", base, i + 1);
      return config_fail(w, "%s must be at most %" PRId64
                            " bytes (monitor.pattern_max_length), got %zu",
                         name, s->pattern_max_length, len);
    }
  }
  return 0;
}

/* Refuses a key of the entry at idx that no config monitor field has. */
static int
config_entry_keys(ConfigWalk *w, int idx, const char *base)
{
  lua_State *L = w->L;
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {
    const char *key = config_key(L, -2);
    if (key == NULL || !monitor_fields_accepts(kFormConfig, key)) {
      int rc = config_unknown(w, lua_gettop(L) - 1, base);
      lua_pop(L, 2);
      return rc;
    }
    lua_pop(L, 1);
  }
  return 0;
}

/* One entry of `monitors` (at idx), the index-th (from 1), into cm: its
 * session (the config's own field), then every field of the table. */
static int
config_entry(ConfigWalk *w, int idx, size_t index, ConfigMonitor *cm)
{
  char base[CONFIG_NAME_MAX];
  config_name(base, "monitors[%zu]", index);
  if (lua_type(w->L, idx) != LUA_TTABLE)
    return config_fail(w, "%s must be a table, got %s", base, luaL_typename(w->L, idx));
  if (config_entry_keys(w, idx, base) != 0)
    return -1;
  ConfigEntry entry = {w, idx};
  FieldSource src = {
    &entry, base, config_field_name, config_field_string, config_field_strings,
    config_field_bool, config_field_uint, config_field_number, config_field_choice,
    config_field_env,
  };
  ConfigWalk *walk;
  char name[CONFIG_NAME_MAX];
  if (!config_field_push(&src, "session", &walk, name))
    return config_fail(w, "%s.session is required", base);
  if (config_field_pop(w, config_string_dup(w, lua_gettop(w->L), name, true, &cm->session)) < 0)
    return -1;
  if (start_request_read(&src, kFormConfig, &w->cfg->settings, &cm->req, w->err) != 0)
    return -1;
  bool match_pattern = config_field_push(&src, "match_pattern", &walk, name);
  if (match_pattern)
    lua_pop(w->L, 1);
  return config_entry_rules(w, base, cm, match_pattern);
}

/* `monitors`: an array of monitor tables. */
static int
config_monitors(ConfigWalk *w, int idx)
{
  lua_State *L = w->L;
  VigilConfig *cfg = w->cfg;
  size_t n;
  if (config_array(w, idx, "monitors", "tables", &n) != 0)
    return -1;
  /* Every entry exists (zeroed) before any is filled, so config_free can
   * free a half-built list. */
  cfg->monitors = xcalloc(n ? n : 1, sizeof *cfg->monitors);
  cfg->nmonitors = n;
  for (size_t i = 0; i < n; i++) {
    lua_rawgeti(L, idx, (lua_Integer)(i + 1));
    int rc = config_entry(w, lua_gettop(L), i + 1, &cfg->monitors[i]);
    lua_pop(L, 1);
    if (rc != 0)
      return -1;
  }
  return 0;
}

/* --- the top level ------------------------------------------------------- */

static const char *const config_top_keys[] = {
  "monitor", "rate_limit", "session", "log", "rpc", "policy", "gate", "plugin_paths", "monitors",
  NULL,
};

/* Pushes t[key] (raw) and returns its type. */
static int
config_rawfield(lua_State *L, int t, const char *key)
{
  lua_pushstring(L, key);
  return lua_rawget(L, t);
}

/* Walks the top-level table at idx into w->cfg. */
static int
config_walk(ConfigWalk *w, int idx)
{
  lua_State *L = w->L;
  VigilConfig *cfg = w->cfg;

  /* Unknown keys first, so a typo is named even if another field is bad. */
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {
    const char *key = config_key(L, -2);
    bool known = false;
    for (size_t i = 0; key && config_top_keys[i]; i++)
      known = known || strcmp(key, config_top_keys[i]) == 0;
    if (!known) {
      int rc = config_unknown(w, lua_gettop(L) - 1, "");
      lua_pop(L, 2);
      return rc;
    }
    lua_pop(L, 1);
  }

  static const char *const groups[] = {"monitor", "rate_limit", "session", "log", "rpc", NULL};
  for (size_t i = 0; groups[i]; i++) {
    int rc = 0;
    if (config_rawfield(L, idx, groups[i]) != LUA_TNIL)
      rc = config_group(w, lua_gettop(L), groups[i]);
    lua_pop(L, 1);
    if (rc != 0)
      return -1;
  }
  if (settings_check(&cfg->settings, w->err) != 0)
    return -1;

  int rc = 0;
  if (config_rawfield(L, idx, "policy") != LUA_TNIL)
    rc = config_string_dup(w, lua_gettop(L), "policy", true, &cfg->policy);
  lua_pop(L, 1);
  if (rc != 0)
    return -1;

  /* gate: which policy's gate decides every start (engine.c); whether it
   * exists and has a gate is checked when the policies load. */
  if (config_rawfield(L, idx, "gate") != LUA_TNIL)
    rc = config_string_dup(w, lua_gettop(L), "gate", true, &cfg->gate);
  lua_pop(L, 1);
  if (rc != 0)
    return -1;

  if (config_rawfield(L, idx, "plugin_paths") != LUA_TNIL)
    rc = config_string_list(w, lua_gettop(L), "plugin_paths", true, &cfg->plugin_paths,
                            &cfg->nplugin_paths);
  lua_pop(L, 1);
  if (rc != 0)
    return -1;

  if (config_rawfield(L, idx, "monitors") != LUA_TNIL)
    rc = config_monitors(w, lua_gettop(L));
  lua_pop(L, 1);
  return rc;
}

/* The walk as a lua_CFunction, so luasandbox_call runs it protected:
 * argument 1 is the ConfigWalk, argument 2 the table. */
static int
config_walk_lua(lua_State *L)
{
  ConfigWalk *w = lua_touserdata(L, 1);
  luaL_checkstack(L, 32, "config walk");
  w->L = L;
  config_walk(w, 2);
  return 0;
}

/* --- loading ------------------------------------------------------------- */

/* After the chunk ran (its results above `top`): checks that it returned one
 * table and walks it into cfg. `lua_err` is set when the failure came from
 * Lua itself rather than from a field. */
static int
config_evaluate(LuaSandbox *sb, int top, VigilConfig *cfg, VigilError *err, bool *lua_err)
{
  lua_State *L = luasandbox_state(sb);
  int nres = lua_gettop(L) - top;
  if (nres != 1 || lua_type(L, -1) != LUA_TTABLE) {
    if (nres == 0)
      return error_set(err, kErrInvalidParams, "the config must return a table, got nothing");
    if (nres > 1)
      return error_set(err, kErrInvalidParams,
                       "the config must return one table, got %d values", nres);
    return error_set(err, kErrInvalidParams, "the config must return a table, got %s",
                     luaL_typename(L, -1));
  }
  ConfigWalk w = {L, cfg, err};
  lua_pushcfunction(L, config_walk_lua);
  lua_pushlightuserdata(L, &w);
  lua_pushvalue(L, top + 1);
  if (luasandbox_call(sb, 2, 0, err) != 0) {
    *lua_err = true;
    return -1;
  }
  return err->set ? -1 : 0;
}

/* Ends a load: on success moves tmp into cfg (recording the name); on
 * failure frees tmp, leaves cfg as the defaults and sets err to
 * "invalid_params: NAME: what", keeping a Lua message that already starts
 * with "NAME:" (a line number follows) and dropping its traceback, which
 * adds nothing a person editing a config can use. */
static int
config_finish(const char *name, int rc, bool lua_err, VigilConfig *tmp, VigilConfig *cfg,
              const VigilError *local, VigilError *err)
{
  if (rc == 0) {
    tmp->path = xstrdup(name);
    *cfg = *tmp;
    return 0;
  }
  config_free(tmp);
  config_defaults(cfg);

  const char *body = local->msg;
  const char *prefix = error_name(local->code);
  size_t plen = strlen(prefix);
  if (strncmp(body, prefix, plen) == 0 && strncmp(body + plen, ": ", 2) == 0)
    body += plen + 2;
  const char *tb = strstr(body, LUASANDBOX_TRACEBACK);
  int len = tb ? (int)(tb - body) : (int)strlen(body);
  size_t nlen = strlen(name);
  if (lua_err && strncmp(body, name, nlen) == 0 && body[nlen] == ':')
    return error_set(err, kErrInvalidParams, "%.*s", len, body);
  return error_set(err, kErrInvalidParams, "%s: %.*s", name, len, body);
}

/* A NULL-terminated copy of a NULL-terminated list. */
static char **
config_list_copy(const char *const *list)
{
  size_t n = 0;
  while (list[n] != NULL)
    n++;
  char **out = xcalloc(n + 1, sizeof *out);
  for (size_t i = 0; i < n; i++)
    out[i] = xstrdup(list[i]);
  return out;
}

/* Frees a NULL-terminated list. */
static void
config_strv_free(char **list)
{
  for (size_t i = 0; list != NULL && list[i] != NULL; i++)
    free(list[i]);
  free(list);
}

/* The built-in configuration (config.h). cfg is overwritten, not freed
 * first; it owns allocations (policy, the env lists), so pair it with
 * config_free. */
void
config_defaults(VigilConfig *cfg)
{
  memset(cfg, 0, sizeof *cfg);
  settings_defaults(&cfg->settings);
  cfg->enabled = true;
  cfg->live_mode_enabled = false;
  cfg->allow_shell = false;
  cfg->allow_persistent = true;
  cfg->allowed_commands = (Allowlist)ALLOWLIST_INIT;
  cfg->policy = xstrdup("envelope");
  cfg->env_deny = config_list_copy(childenv_default_deny);
  cfg->env_allow = xcalloc(1, sizeof *cfg->env_allow);
  cfg->env_inherit = config_list_copy(childenv_default_inherit);
}

/* The sandbox a config runs in. */
static LuaSandbox *
config_sandbox(void)
{
  LuaSandboxLimits limits = {CONFIG_MEMORY_MAX, CONFIG_INSTRUCTION_MAX, 0};
  LuaSandbox *sb = luasandbox_new(&limits);
  if (sb == NULL) {
    /* 16 MiB always holds the libraries; only a broken build gets here. */
    fprintf(stderr, "vigil: cannot create the config sandbox\n");
    abort();
  }
  return sb;
}

/* Loads path (config.h). cfg is overwritten, not freed first: on success it
 * owns the loaded configuration, on failure the defaults; either way the
 * caller frees it with config_free. */
int
config_load(const char *path, VigilConfig *cfg, VigilError *err)
{
  VigilConfig tmp;
  config_defaults(&tmp);
  LuaSandbox *sb = config_sandbox();
  int top = lua_gettop(luasandbox_state(sb));
  VigilError local = VIGIL_ERROR_INIT;
  bool lua_err = true;
  int rc = luasandbox_run_file(sb, path, CONFIG_FILE_MAX, LUA_MULTRET, &local);
  if (rc == 0) {
    lua_err = false;
    rc = config_evaluate(sb, top, &tmp, &local, &lua_err);
  }
  luasandbox_free(sb);
  return config_finish(path, rc, lua_err, &tmp, cfg, &local, err);
}

/* Loads a config from memory as if it were the file `name` (config.h). */
int
config_load_buffer(const char *text, size_t len, const char *name, VigilConfig *cfg,
                   VigilError *err)
{
  VigilConfig tmp;
  config_defaults(&tmp);
  LuaSandbox *sb = config_sandbox();
  int top = lua_gettop(luasandbox_state(sb));
  VigilError local = VIGIL_ERROR_INIT;
  bool lua_err = true;
  StrBuf chunkname = STRBUF_INIT;
  strbuf_printf(&chunkname, "@%s", name);
  int rc = len > CONFIG_FILE_MAX
               ? error_set(&local, kErrInvalidParams, "larger than %u bytes", CONFIG_FILE_MAX)
               : luasandbox_run(sb, text, len, strbuf_cstr(&chunkname), LUA_MULTRET, &local);
  strbuf_free(&chunkname);
  if (rc == 0) {
    lua_err = false;
    rc = config_evaluate(sb, top, &tmp, &local, &lua_err);
  }
  luasandbox_free(sb);
  return config_finish(name, rc, lua_err, &tmp, cfg, &local, err);
}

/* Frees one config monitor. */
static void
config_monitor_free(ConfigMonitor *cm)
{
  free(cm->session);
  start_request_free(&cm->req);
}

/* Frees everything cfg owns and leaves it zeroed, so freeing twice is
 * harmless (a zeroed config is not the defaults: call config_defaults to
 * use it again). */
void
config_free(VigilConfig *cfg)
{
  free(cfg->path);
  allowlist_free(&cfg->allowed_commands);
  config_list_free(cfg->workspace_roots, cfg->nroots);
  free(cfg->search_path);
  config_strv_free(cfg->env_deny);
  config_strv_free(cfg->env_allow);
  config_strv_free(cfg->env_inherit);
  free(cfg->policy);
  free(cfg->gate);
  config_list_free(cfg->plugin_paths, cfg->nplugin_paths);
  for (size_t i = 0; i < cfg->nmonitors; i++)
    config_monitor_free(&cfg->monitors[i]);
  free(cfg->monitors);
  memset(cfg, 0, sizeof *cfg);
}
