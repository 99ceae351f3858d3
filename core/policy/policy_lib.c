/*
 * What a policy's Lua state holds besides the sandbox's libraries (see
 * policy.h for what a policy sees, policy_internal.h for the host's files):
 *   - `vigil`: nonce(), escape(text), time([ms]), log(level, msg), also
 *     reachable as require "vigil";
 *   - vigil.log is rate-limited per policy: at most log_lines_per_call lines
 *     per call (or load) and log_lines_per_s per one-second window. A line
 *     past either is dropped for the cost of a comparison (a policy logging
 *     in a tight loop used to stall the loop for seconds), counted, and the
 *     drops are summed up in one log line at the end of a call, at most
 *     every POLICY_LOG_SUMMARY_MS per policy (and when the policy is freed),
 *     so the summaries cannot flood the log either;
 *   - `require`, which resolves "a.b" to a/b.lua under lua_dir, then under
 *     the bundled plugin directory, then under each plugin path, and nowhere
 *     else (no package.path, no C modules, no "..", no "/": a name is
 *     [A-Za-z0-9_] words joined by dots). A module is read whole (at most
 *     POLICY_FILE_MAX bytes) and compiled as text with luasandbox_load,
 *     which charges it a piece at a time, with the state's globals as its
 *     environment, inside the call that requires it (so under its budget and
 *     clock), and cached in a table in the registry, as package.loaded
 *     would. A module that fails is not cached, so each require of it
 *     compiles it again, charged again.
 * Each policy has its own state, so its globals are its own: one policy
 * cannot see or change another's. Every C function here charges its call to
 * the budget, as the sandbox's own do (luasandbox_libs.c).
 */
#include "policy/policy_internal.h"

#include <lauxlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/clock.h"
#include "render/envelope.h"
#include "base/log.h"
#include "base/textfmt.h"
#include "base/utf8.h"

/* Registry keys (their addresses) of the loaded-modules table and of the
 * set of modules being loaded. */
static const char policy_loaded_key = 'L';
static const char policy_loading_key = 'l';

/* vigil.log lines dropped by every policy (policy_log_lines_dropped). */
static uint64_t policy_log_dropped_total;

/* The Policy a C function of the state belongs to (its upvalue 1). */
static Policy *
policy_self(lua_State *L)
{
  return lua_touserdata(L, lua_upvalueindex(1));
}

/* Charges a call of one of the functions here as luasandbox_libs.c charges
 * Lua's own: 1, 1 per argument, and the bytes of argument `numeric` (0:
 * none) when it is a string, which Lua converts to a number. What each does
 * beyond that is bounded (a level is one of four words, a log line is cut
 * to POLICY_LOG_MAX, and one dropped by the rate limit costs a comparison;
 * a module name is checked against POLICY_MODULE_NAME_MAX first) or charged
 * where it is done (vigil.escape's text, require's compiling). */
static void
policy_charge_call(lua_State *L, int numeric)
{
  size_t bytes = numeric > 0 && lua_type(L, numeric) == LUA_TSTRING ? lua_rawlen(L, numeric) : 0;
  luasandbox_charge(L, 1 + (uint64_t)lua_gettop(L) + bytes / LUASANDBOX_SCAN_BYTES);
}

/* --- the vigil module ---------------------------------------------------- */

/* vigil.nonce() -> 32 random lowercase hex digits. */
static int
policy_vigil_nonce(lua_State *L)
{
  policy_charge_call(L, 0);
  char nonce[ENVELOPE_NONCE_HEX + 1];
  envelope_nonce(nonce);
  lua_pushstring(L, nonce);
  return 1;
}

/* vigil.escape(text) -> text with every control character, ANSI escape and
 * invisible character shown as an escape, backslashes kept
 * (textfmt_sanitize): what a policy has to escape is already escaped text
 * (n's fields), which this leaves unchanged. */
static int
policy_vigil_escape(lua_State *L)
{
  size_t len;
  const char *text = luaL_checklstring(L, 1, &len);
  policy__push_filtered(L, policy_self(L), text, len, textfmt_sanitize);
  return 1;
}

/* vigil.time([ms]) -> RFC 3339 with milliseconds of now, or of ms since the
 * epoch. */
static int
policy_vigil_time(lua_State *L)
{
  policy_charge_call(L, 1);
  Policy *p = policy_self(L);
  int64_t ms = lua_isnoneornil(L, 1) ? clock_now_ms() : (int64_t)luaL_checkinteger(L, 1);
  strbuf_reset(&p->scratch);
  textfmt_time(&p->scratch, ms);
  policy__push_scratch(L, p);
  return 1;
}

/* Whether p may write one more vigil.log line now (file comment); counts
 * it when so, counts a drop when not. */
static bool
policy_log_allowed(Policy *p)
{
  uint64_t now = p->set->clock_ms();
  if (now - p->log_window_ms >= 1000u) {
    p->log_window_ms = now;
    p->log_in_window = 0;
  }
  if (p->log_in_call >= p->set->log_per_call || p->log_in_window >= p->set->log_per_s) {
    p->log_untold++;
    policy_log_dropped_total++;
    return false;
  }
  p->log_in_call++;
  p->log_in_window++;
  return true;
}

/* See policy_internal.h. */
void
policy__log_begin(Policy *p)
{
  p->log_in_call = 0;
}

/* See policy_internal.h. A summary more recent than POLICY_LOG_SUMMARY_MS
 * makes the count wait for a later call, unless `force`. */
void
policy__log_end(Policy *p, bool force)
{
  if (p->log_untold == 0)
    return;
  uint64_t now = p->set->clock_ms();
  if (!force && p->log_told_ms != 0 && now - p->log_told_ms < POLICY_LOG_SUMMARY_MS)
    return;
  char module[POLICY_NAME_MAX + 16];
  snprintf(module, sizeof module, "policy %s", p->name);
  log_msg(kLogWarn, module,
          "%llu vigil.log lines dropped (log.policy_lines_per_call is %u, "
          "log.policy_lines_per_s is %u)",
          (unsigned long long)p->log_untold, p->set->log_per_call, p->set->log_per_s);
  p->log_untold = 0;
  p->log_told_ms = now ? now : 1;
}

/* vigil.log(level, msg): one line in the engine's log from module "policy
 * NAME", msg cut to POLICY_LOG_MAX bytes (the log escapes it), within the
 * rate limit (file comment); past it the line is dropped and counted. A bad
 * level or message is an error either way. */
static int
policy_vigil_log(lua_State *L)
{
  static const char *const levels[] = {"debug", "info", "warn", "error", NULL};
  static const LogLevel values[] = {kLogDebug, kLogInfo, kLogWarn, kLogError};
  policy_charge_call(L, 0);
  Policy *p = policy_self(L);
  int level = luaL_checkoption(L, 1, NULL, levels);
  size_t len;
  const char *msg = luaL_checklstring(L, 2, &len);
  if ((int)values[level] < (int)log_level() || !policy_log_allowed(p))
    return 0;
  char text[POLICY_LOG_MAX + 1];
  len = utf8_cut(msg, len, POLICY_LOG_MAX);
  memcpy(text, msg, len);
  text[len] = '\0';
  char module[POLICY_NAME_MAX + 16];
  snprintf(module, sizeof module, "policy %s", p->name);
  log_msg(values[level], module, "%s", text);
  return 0;
}

/* See policy.h. */
uint64_t
policy_log_lines_dropped(void)
{
  return policy_log_dropped_total;
}

/* --- require ------------------------------------------------------------- */

/* Whether name (len bytes) is a module name: [A-Za-z0-9_] words joined by
 * single dots, at most POLICY_MODULE_NAME_MAX bytes. */
static bool
policy_module_name_ok(const char *name, size_t len)
{
  if (len == 0 || len > POLICY_MODULE_NAME_MAX || name[0] == '.' || name[len - 1] == '.')
    return false;
  for (size_t i = 0; i < len; i++) {
    char c = name[i];
    if (c == '.') {
      if (name[i + 1] == '.')
        return false;
    } else if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '_')) {
      return false;
    }
  }
  return true;
}

/* The search directories for modules, in order: lua_dir, bundled_dir, then
 * plugin_paths. Fills dirs (room for 2 + nplugin_paths) and returns the
 * count. */
static size_t
policy_module_dirs(const PolicySet *ps, const char **dirs)
{
  size_t n = 0;
  if (ps->lua_dir)
    dirs[n++] = ps->lua_dir;
  if (ps->bundled_dir)
    dirs[n++] = ps->bundled_dir;
  for (size_t i = 0; i < ps->nplugin_paths; i++)
    dirs[n++] = ps->plugin_paths[i];
  return n;
}

/* Raises require's error for a bad module name (len bytes at name). */
static int
policy_bad_module_name(lua_State *L, Policy *p, const char *name, size_t len)
{
  strbuf_reset(&p->scratch);
  strbuf_puts(&p->scratch, "bad module name \"");
  policy__quote(&p->scratch, name, len);
  strbuf_puts(&p->scratch, "\" (want words of [A-Za-z0-9_] joined by dots)");
  policy__push_scratch(L, p);
  luaL_where(L, 1);
  lua_insert(L, -2);
  lua_concat(L, 2);
  return lua_error(L);
}

/* Finds module `name` (a good name, len bytes): "a.b" -> "a/b.lua", looked
 * up in each directory of policy_module_dirs in turn. Writes its path into
 * path (size bytes) or raises "module 'a.b' not found (looked in ...)".
 * Leaves a userdata (the directory list) on the stack. */
static void
policy_find_module(lua_State *L, Policy *p, const char *name, size_t len, char *path,
                   size_t size)
{
  char rel[POLICY_MODULE_NAME_MAX + 8];
  memcpy(rel, name, len);
  for (size_t i = 0; i < len; i++)
    if (rel[i] == '.')
      rel[i] = '/';
  memcpy(rel + len, ".lua", 5);
  const char **dirs = lua_newuserdatauv(L, (2 + p->set->nplugin_paths) * sizeof *dirs, 0);
  size_t ndirs = policy_module_dirs(p->set, dirs);
  for (size_t i = 0; i < ndirs; i++)
    if (policy__join(path, size, dirs[i], rel) && policy__is_file(path))
      return;
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (size_t i = 0; i < ndirs; i++) {
    if (i > 0)
      luaL_addstring(&b, ", ");
    luaL_addstring(&b, dirs[i]);
  }
  luaL_pushresult(&b);
  luaL_error(L, "module '%s' not found (looked in %s)", name, lua_tostring(L, -1));
}

/* require(name): see the file comment. Returns the module's value (true
 * when it returned nothing) and the file it came from. */
static int
policy_require(lua_State *L)
{
  policy_charge_call(L, 0);
  Policy *p = policy_self(L);
  size_t len;
  const char *name = luaL_checklstring(L, 1, &len);
  if (!policy_module_name_ok(name, len) || strlen(name) != len)
    return policy_bad_module_name(L, p, name, len);
  lua_settop(L, 1);
  lua_rawgetp(L, LUA_REGISTRYINDEX, &policy_loaded_key);  /* 2 */
  lua_rawgetp(L, LUA_REGISTRYINDEX, &policy_loading_key); /* 3 */
  lua_pushvalue(L, 1);
  if (lua_rawget(L, 2) != LUA_TNIL)
    return 1;
  lua_pop(L, 1);
  lua_pushvalue(L, 1);
  if (lua_rawget(L, 3) != LUA_TNIL)
    return luaL_error(L, "module '%s' requires itself (a loop of require)", name);
  lua_pop(L, 1);

  char path[4096];
  policy_find_module(L, p, name, len, path, sizeof path);
  struct stat st;
  if (stat(path, &st) == 0 && (uint64_t)st.st_size > POLICY_FILE_MAX)
    return luaL_error(L, "module '%s': %s: larger than %d bytes", name, path,
                      (int)POLICY_FILE_MAX);

  /* Marked as loading while it runs, so a loop of require is an error
   * rather than a stack overflow; the mark goes whatever happens. */
  lua_pushvalue(L, 1);
  lua_pushboolean(L, 1);
  lua_rawset(L, 3);
  int status = luasandbox_load_file(L, path, POLICY_FILE_MAX);
  if (status == LUA_OK)
    status = lua_pcall(L, 0, 1, 0);
  lua_pushvalue(L, 1);
  lua_pushnil(L);
  lua_rawset(L, 3);
  if (status != LUA_OK)
    return lua_error(L); /* the error object as it was */
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lua_pushboolean(L, 1);
  }
  lua_pushvalue(L, 1);
  lua_pushvalue(L, -2);
  lua_rawset(L, 2);
  lua_pushstring(L, path);
  return 2;
}

/* See policy_internal.h. */
int
policy__setup(lua_State *L)
{
  static const luaL_Reg vigil_funcs[] = {
    {"nonce", policy_vigil_nonce}, {"escape", policy_vigil_escape},
    {"time", policy_vigil_time},   {"log", policy_vigil_log},
    {NULL, NULL},
  };
  Policy *p = lua_touserdata(L, 1);
  lua_newtable(L); /* loaded */
  lua_newtable(L); /* vigil */
  for (const luaL_Reg *f = vigil_funcs; f->name; f++) {
    lua_pushlightuserdata(L, p);
    lua_pushcclosure(L, f->func, 1);
    lua_setfield(L, -2, f->name);
  }
  lua_pushvalue(L, -1);
  lua_setglobal(L, "vigil");
  lua_setfield(L, -2, "vigil");
  lua_rawsetp(L, LUA_REGISTRYINDEX, &policy_loaded_key);
  lua_newtable(L);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &policy_loading_key);
  lua_pushlightuserdata(L, p);
  lua_pushcclosure(L, policy_require, 1);
  lua_setglobal(L, "require");
  return 0;
}
