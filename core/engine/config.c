/*
 * The configuration loader: runs a config file in a fresh sandbox, takes the
 * one table it returns, and walks that table strictly into a VigilConfig
 * (see config.h for the shape).
 *
 * Strict means: every key is known (an unknown one, at any depth, is refused
 * as "unknown field" so a typo never falls back to a default silently),
 * every value has its type (integers may be written as floats with an
 * integral value, 3e4, but never 1.5), every array is a proper sequence, and
 * no string holds a NUL byte. A setting in ms or bytes may also be a string
 * with units ("15m", "64KiB": units.h). The numbers are set through the settings table
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
#include "engine/config.h"
#include "engine/config_walk.h"

#include <errno.h>
#include <inttypes.h>
#include <lauxlib.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "proc/childenv.h"
#include "policy/luasandbox.h"
#include "base/memory.h"
#include "monitor/monitor.h"
#include "engine/monitor_fields.h"
#include "base/strbuf.h"
#include "spec/units.h"

/* Largest config file read, and the sandbox it runs in. */
#define CONFIG_FILE_MAX (1u << 20)
#define CONFIG_MEMORY_MAX LUASANDBOX_DEFAULT_MEMORY
#define CONFIG_INSTRUCTION_MAX LUASANDBOX_DEFAULT_INSTRUCTIONS

/* Longest monitor.path, and most entries of an env_* list. */
#define CONFIG_SEARCH_PATH_MAX 16384
#define CONFIG_ENV_LIST_MAX 1024
/* Longest state.dir: what a path may be (PATH_MAX, its NUL included). */
#define CONFIG_STATE_DIR_MAX 4095

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
  /* A setting in ms or bytes may be written with units: "30s", "64KiB". */
  UnitKind unit = settings_unit_kind(spec);
  if (unit != kUnitNone && lua_type(w->L, idx) == LUA_TSTRING) {
    const char *text;
    if (config_string(w, idx, spec->name, false, &text, NULL) != 0)
      return -1;
    return settings_set_text(&w->cfg->settings, spec->name, text, w->err);
  }
  if (unit != kUnitNone && lua_type(w->L, idx) != LUA_TNUMBER)
    return config_fail(w, "%s must be an integer or a string such as %s, got %s", spec->name,
                       units_examples(unit), luaL_typename(w->L, idx));
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
  if (strcmp(key, "line_buffered") == 0)
    return config_bool(w, idx, name, &cfg->line_buffered);
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

/* state.dir: the engine's state directory (docs/restart.md), an absolute
 * path. Relative is refused: the file does not say what it would be
 * relative to (vigild's cwd, the file's directory), and a reload from
 * another cwd must not mean another directory. Nothing is checked on disk
 * here: vigild opens and checks it at start (statedir.h), and a reload
 * never moves it. */
static int
config_state_dir(ConfigWalk *w, int idx)
{
  const char *field = "state.dir";
  const char *dir = NULL;
  size_t len = 0;
  if (config_string(w, idx, field, true, &dir, &len) != 0)
    return -1;
  if (len > CONFIG_STATE_DIR_MAX)
    return config_fail(w, "%s must be at most %d bytes, got %zu", field, CONFIG_STATE_DIR_MAX,
                       len);
  if (dir[0] != '/') {
    StrBuf q = STRBUF_INIT;
    config_quote(&q, dir, len);
    int rc = config_fail(w, "%s must be an absolute path, got %s", field, strbuf_cstr(&q));
    strbuf_free(&q);
    return rc;
  }
  free(w->cfg->state_dir);
  w->cfg->state_dir = xstrdup(dir);
  return 0;
}

/* The longest nats.url, nats.creds, nats.tls_*, nats.stream or nats.engine. */
#define CONFIG_NATS_STRING_MAX 4096

/* nats.url, nats.creds, nats.tls_ca, nats.tls_cert, nats.tls_key,
 * nats.stream, nats.engine: strings, checked for their shape here and for
 * what they name when vigild connects (fleet_link.h); that tls_cert and
 * tls_key come together is checked once the whole table is read
 * (config_nats_pair). Returns 1 for any other key. */
static int
config_nats_field(ConfigWalk *w, const char *key, int idx)
{
  char **slot = strcmp(key, "url") == 0      ? &w->cfg->nats_url
                : strcmp(key, "creds") == 0  ? &w->cfg->nats_creds
                : strcmp(key, "tls_ca") == 0   ? &w->cfg->nats_tls_ca
                : strcmp(key, "tls_cert") == 0 ? &w->cfg->nats_tls_cert
                : strcmp(key, "tls_key") == 0  ? &w->cfg->nats_tls_key
                : strcmp(key, "stream") == 0 ? &w->cfg->nats_stream
                : strcmp(key, "engine") == 0 ? &w->cfg->nats_engine
                                             : NULL;
  if (slot == NULL)
    return 1;
  char field[32];
  snprintf(field, sizeof field, "nats.%s", key);
  const char *text = NULL;
  size_t len = 0;
  if (config_string(w, idx, field, true, &text, &len) != 0)
    return -1;
  if (len > CONFIG_NATS_STRING_MAX || strlen(text) != len)
    return config_fail(w, "%s must be at most %d bytes without NUL, got %zu bytes", field,
                       CONFIG_NATS_STRING_MAX, len);
  bool ok = true;
  const char *want = "";
  if (strcmp(key, "creds") == 0 || strncmp(key, "tls_", 4) == 0) {
    ok = text[0] == '/';
    want = "an absolute path";
  } else if (strcmp(key, "stream") == 0 || strcmp(key, "engine") == 0) {
    for (size_t i = 0; i < len && ok; i++) {
      char c = text[i];
      ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '-';
    }
    ok = ok && len <= 64;
    want = "1..64 of A-Z a-z 0-9 _ -";
  } else {
    for (size_t i = 0; i < len && ok; i++)
      ok = (unsigned char)text[i] > 0x20 && text[i] != 0x7f;
    want = "one or more URLs (nats://host:port), comma-separated, without spaces";
  }
  if (!ok) {
    StrBuf q = STRBUF_INIT;
    config_quote(&q, text, len);
    int rc = config_fail(w, "%s must be %s, got %s", field, want, strbuf_cstr(&q));
    strbuf_free(&q);
    return rc;
  }
  free(*slot);
  *slot = xstrdup(text);
  return 0;
}

/* nats.tls_cert and nats.tls_key: the client certificate and its private
 * key are one thing to the server (mutual TLS), so one without the other is
 * a mistake said at load rather than a handshake refused later. */
static int
config_nats_pair(ConfigWalk *w)
{
  const char *cert = w->cfg->nats_tls_cert, *key = w->cfg->nats_tls_key;
  if ((cert == NULL) == (key == NULL))
    return 0;
  return config_fail(w, "nats.tls_cert and nats.tls_key go together (a client certificate and "
                        "its private key), got only %s = \"%s\"",
                     cert ? "nats.tls_cert" : "nats.tls_key", cert ? cert : key);
}

/* Walks the group table at idx ("monitor", "rate_limit", ...): each key is a
 * setting group.key of the table or, in `monitor`, one of its other fields;
 * in `state`, dir is such a field. */
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
    else if (key != NULL && strcmp(group, "state") == 0 && strcmp(key, "dir") == 0)
      rc = config_state_dir(w, v);
    else if (key != NULL && strcmp(group, "nats") == 0)
      rc = config_nats_field(w, key, v);
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

/* --- the top level ------------------------------------------------------- */

static const char *const config_top_keys[] = {
  "monitor", "rate_limit", "incident", "envelope", "keeper", "session", "log", "rpc", "state",
  "nats", "policy", "gate", "plugin_paths", "monitors", NULL,
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

  static const char *const groups[] = {"monitor", "rate_limit", "incident", "envelope", "keeper",
                                       "session", "log",        "rpc",      "state",
                                       "nats",    NULL};
  for (size_t i = 0; groups[i]; i++) {
    int rc = 0;
    if (config_rawfield(L, idx, groups[i]) != LUA_TNIL)
      rc = config_group(w, lua_gettop(L), groups[i]);
    lua_pop(L, 1);
    if (rc != 0)
      return -1;
  }
  if (config_nats_pair(w) != 0)
    return -1;
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
  cfg->line_buffered = true;
  cfg->allowed_commands = (Allowlist)ALLOWLIST_INIT;
  cfg->policy = xstrdup("envelope");
  cfg->env_deny = xstrv_dup(childenv_default_deny);
  cfg->env_allow = xstrv_dup(childenv_default_allow);
  cfg->env_inherit = xstrv_dup(childenv_default_inherit);
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
  /* The file's identity and key lines are read before the load, so the
   * engine never reports a state newer than the one it runs: an edit in
   * between makes `vigil mcp` see a difference and say to reload, which
   * is then right. */
  StrBuf text = STRBUF_INIT;
  if (config_identity(path, &tmp.ident, &text))
    config_hint_find_lines(strbuf_cstr(&text), text.len, &tmp.key_lines);
  strbuf_free(&text);
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
  free(cm->group);
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
  free(cfg->state_dir);
  free(cfg->nats_url);
  free(cfg->nats_creds);
  free(cfg->nats_tls_ca);
  free(cfg->nats_tls_cert);
  free(cfg->nats_tls_key);
  free(cfg->nats_stream);
  free(cfg->nats_engine);
  xstrv_free(cfg->env_deny);
  xstrv_free(cfg->env_allow);
  xstrv_free(cfg->env_inherit);
  free(cfg->policy);
  free(cfg->gate);
  config_list_free(cfg->plugin_paths, cfg->nplugin_paths);
  for (size_t i = 0; i < cfg->nmonitors; i++)
    config_monitor_free(&cfg->monitors[i]);
  free(cfg->monitors);
  memset(cfg, 0, sizeof *cfg);
}
