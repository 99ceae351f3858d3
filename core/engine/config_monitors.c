/*
 * The config's `monitors`: an array of entries, each the session a monitor
 * starts in and the same fields monitor_start takes, read through the
 * start table (monitor_fields.h) with the config's own types and messages.
 * An entry is also checked against the settings the same file sets
 * (monitor.max_patterns, monitor.pattern_max_length,
 * monitor.allow_persistent), so a config that could never boot is refused
 * as it loads. Its durations (timeout_ms, idle_timeout_ms) and its
 * memory_limit may be written with units, "90s" or "512MiB" (units.h), as
 * the settings may; the wire takes numbers only.
 */
#include "engine/config_walk.h"

#include <inttypes.h>
#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/memory.h"
#include "engine/monitor_fields.h"
#include "session/session.h"

/* An entry of `monitors` as a FieldSource (monitor_fields.h): its table is
 * at idx, and its values are read with the config's own types and
 * messages, so a field of the table works here exactly as on the wire. */
typedef struct {
  ConfigWalk *w;
  int idx;
} ConfigEntry;

/* The field's name for messages ("monitors[2].patterns"); a name past the
 * buffer is cut, which only shortens a message. */
static void
config_field_name(const FieldSource *src, const char *key, char *buf, size_t size)
{
  /* GCC -O3 warns about the cut unless the length is checked and acted on. */
  if (snprintf(buf, size, "%s.%s", src->base, key) >= (int)size)
    buf[size - 1] = '\0';
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

/* Which whole-number fields of an entry take units: a name in _ms is a
 * duration (the project's naming rule), memory_limit a size. */
static UnitKind
config_field_unit(const char *key)
{
  size_t len = strlen(key);
  if (len > 3 && strcmp(key + len - 3, "_ms") == 0)
    return kUnitMs;
  if (strcmp(key, "memory_limit") == 0)
    return kUnitBytes;
  return kUnitNone;
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
  UnitKind unit = config_field_unit(key);
  int rc = unit != kUnitNone
               ? config_quantity_in(w, lua_gettop(w->L), name, unit, (int64_t)min, top, why, &v)
               : config_integer_in(w, lua_gettop(w->L), name, (int64_t)min, top, why, &v);
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
config_field_env(const FieldSource *src, const char *key, size_t max, bool numbers, char ***out,
                 VigilError *err)
{
  ConfigWalk *w;
  char name[CONFIG_NAME_MAX];
  if (!config_field_push(src, key, &w, name))
    return 0;
  int rc = config_env(w, lua_gettop(w->L), name, numbers, out);
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

bool
config_group_name_ok(const char *name)
{
  size_t len = strlen(name);
  if (len == 0 || len > CONFIG_GROUP_MAX)
    return false;
  return strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == len;
}

/* The entry's group and autostart (config-only keys, so the start table
 * leaves them to this form): a group needs a label, which names the entry
 * in group_up's answer and ties a running monitor to it; autostart needs a
 * group. Read after the start fields, so the label is known. */
static int
config_entry_group(ConfigWalk *w, const FieldSource *src, const char *base, ConfigMonitor *cm)
{
  if (config_field_string(src, "group", &cm->group, w->err) < 0 ||
      config_field_bool(src, "autostart", &cm->autostart, w->err) < 0)
    return -1;
  if (cm->group == NULL)
    return cm->autostart ? config_fail(w, "%s.autostart needs group (an entry without a "
                                          "group starts at boot anyway)", base)
                         : 0;
  if (!config_group_name_ok(cm->group)) {
    char quoted[GATE_QUOTE_BUF];
    gate_quote(quoted, cm->group);
    return config_fail(w, "%s.group must be 1..%d of A-Z a-z 0-9 . _ -, got %s", base,
                       CONFIG_GROUP_MAX, quoted);
  }
  if (cm->req.label == NULL)
    return config_fail(w, "%s.label is required with group (it names the entry in its group)",
                       base);
  return 0;
}

/* Labels are unique within a group: a running monitor is the entry's by
 * its group, session and label (engine_group.h). */
static int
config_groups_unique(ConfigWalk *w)
{
  const VigilConfig *cfg = w->cfg;
  for (size_t i = 0; i < cfg->nmonitors; i++) {
    const ConfigMonitor *cm = &cfg->monitors[i];
    for (size_t k = 0; cm->group && k < i; k++) {
      const ConfigMonitor *other = &cfg->monitors[k];
      if (other->group && strcmp(other->group, cm->group) == 0 &&
          strcmp(other->req.label, cm->req.label) == 0) {
        char quoted[GATE_QUOTE_BUF];
        gate_quote(quoted, cm->req.label);
        return config_fail(w, "monitors[%zu].label %s is already in group %s (monitors[%zu]); "
                              "labels are unique in a group", i + 1, quoted, cm->group, k + 1);
      }
    }
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
  if (!session_name_ok(cm->session))
    return config_fail(w, "%s.session must be 1..%d of A-Z a-z 0-9 . _ - : and not start with "
                       "\"anon-\", got \"%s\"", base, SESSION_NAME_MAX, cm->session);
  if (start_request_read(&src, kFormConfig, &w->cfg->settings, &cm->req, w->err) != 0)
    return -1;
  if (config_entry_group(w, &src, base, cm) != 0)
    return -1;
  bool match_pattern = config_field_push(&src, "match_pattern", &walk, name);
  if (match_pattern)
    lua_pop(w->L, 1);
  return config_entry_rules(w, base, cm, match_pattern);
}

/* `monitors`: an array of monitor tables. */
int
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
  return config_groups_unique(w);
}

