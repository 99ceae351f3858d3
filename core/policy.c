/*
 * The Lua policy host: finds a policy file by name, loads it into a sandbox
 * of its own (luasandbox.h), and calls its format, route and gate functions
 * with a notification or a start request, turning everything that can go
 * wrong in Lua into a VigilError (see policy.h for the API).
 *
 * Each policy state holds, besides the sandbox's libraries:
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
 *     [A-Za-z0-9_] words joined by dots). A module is loaded as text with
 *     the state's globals as its environment, inside the call that requires
 *     it (so under its budget), and cached in a table in the registry, as
 *     package.loaded would.
 * Each policy has its own state, so its globals are its own: one policy
 * cannot see or change another's.
 *
 * What a policy is handed is read-only and already safe to show: `n` and
 * `req` are proxy tables (an empty table whose metatable sends reads to the
 * real table, refuses writes with "notification is read-only", answers #
 * and pairs, and hides itself behind __metatable, so getmetatable cannot
 * reach the real table), and every line's text is passed through
 * textfmt_escape first: no raw control character, ANSI escape or bidi
 * control reaches a policy at all. (rawset on a proxy writes to the proxy
 * itself, which changes only what this call sees.) A line's `pattern` is
 * the index of the pattern that matched, counted from 0 as on the wire.
 *
 * The string format returns is appended as it is; the caller (the envelope)
 * checks and wraps it.
 *
 * Everything that touches the Lua state after loading runs inside
 * luasandbox_call: building the tables (whose allocations are charged to
 * the call's budget, and may fail under the memory cap) as well as the call
 * itself. A failure leaves the state as it was, usable for the next call.
 */
#include "policy.h"

#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "clock.h"
#include "envelope.h"
#include "log.h"
#include "memory.h"
#include "stream.h"
#include "signals.h"
#include "textfmt.h"

/* Largest policy or module file read. */
#define POLICY_FILE_MAX (1u << 20)
/* Longest policy name, and longest module name given to require. */
#define POLICY_NAME_MAX 64
#define POLICY_MODULE_NAME_MAX 128
/* A gate's reason and a vigil.log message are cut to these many bytes. */
#define POLICY_REASON_MAX 512
#define POLICY_LOG_MAX 1024
/* Longest piece of a bad value (a name, a route) quoted in a message. */
#define POLICY_QUOTE_MAX 64
/* A scratch buffer that grew past this is given back after use. */
#define POLICY_SCRATCH_KEEP (64u << 10)
/* The least time between two "vigil.log lines dropped" lines of a policy. */
#define POLICY_LOG_SUMMARY_MS 10000u

/* The three functions a policy may define, indexes of Policy.fn. */
enum { kPolicyFormat = 0, kPolicyRoute, kPolicyGate, kPolicyFnCount };
static const char *const policy_fn_names[kPolicyFnCount] = {"format", "route", "gate"};

struct Policy {
  PolicySet *set;
  char *name;
  char *path;
  LuaSandbox *sb;
  int table_ref;             /* the returned table, kept in the registry */
  int fn[kPolicyFnCount];    /* registry refs of the functions, LUA_NOREF when absent */
  uint64_t failures;
  /* Text built in C for Lua (escapes, times). Owned here rather than by the
   * C function, so an error raised while pushing it cannot leak it. */
  StrBuf scratch;
  /* vigil.log's rate limit (file comment). */
  uint64_t log_window_ms;    /* start of the current one-second window */
  uint32_t log_in_window;    /* lines written in it */
  uint32_t log_in_call;      /* lines written in the current call or load */
  uint64_t log_untold;       /* dropped and not yet summed up in the log */
  uint64_t log_told_ms;      /* when the last summary was written; 0: never */
};

struct PolicySet {
  char *lua_dir;             /* may be NULL */
  char *bundled_dir;         /* may be NULL */
  char **plugin_paths;
  size_t nplugin_paths;
  LuaSandboxLimits limits;   /* zeros already replaced by the defaults */
  uint32_t log_per_s;        /* vigil.log's rate limit, likewise */
  uint32_t log_per_call;
  uint64_t (*clock_ms)(void); /* the rate limit's clock (never NULL) */
  Policy **policies;         /* in load order */
  const char **names;        /* their names, for policyset_names */
  size_t npolicies;
  size_t cap;
};

/* Registry keys (their addresses) of the loaded-modules table and of the
 * set of modules being loaded. */
static const char policy_loaded_key = 'L';
static const char policy_loading_key = 'l';

/* vigil.log lines dropped by every policy (policy_log_lines_dropped). */
static uint64_t policy_log_dropped_total;

/* --- small helpers ------------------------------------------------------- */

/* Appends s (len bytes) to out escaped and cut to POLICY_QUOTE_MAX bytes,
 * for quoting a bad value in a message. */
static void
policy_quote(StrBuf *out, const char *s, size_t len)
{
  bool cut = len > POLICY_QUOTE_MAX;
  textfmt_escape(out, s, cut ? POLICY_QUOTE_MAX : len);
  if (cut)
    strbuf_puts(out, "...");
}

/* The length of s cut to at most max bytes, backing off so that a UTF-8
 * sequence is never split. */
static size_t
policy_cut_utf8(const char *s, size_t len, size_t max)
{
  if (len <= max)
    return len;
  size_t n = max;
  while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
    n--;
  return n;
}

/* Whether name is a policy name: 1..64 bytes of [a-z0-9_-]. */
static bool
policy_name_ok(const char *name)
{
  size_t len = strlen(name);
  if (len == 0 || len > POLICY_NAME_MAX)
    return false;
  for (size_t i = 0; i < len; i++) {
    char c = name[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
      return false;
  }
  return true;
}

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

/* Writes dir "/" rel into out (size bytes); false when it does not fit. */
static bool
policy_join(char *out, size_t size, const char *dir, const char *rel)
{
  size_t dl = strlen(dir);
  bool slash = dl > 0 && dir[dl - 1] == '/';
  int n = snprintf(out, size, "%s%s%s", dir, slash ? "" : "/", rel);
  return n >= 0 && (size_t)n < size;
}

/* Whether path is a regular file (following links). */
static bool
policy_is_file(const char *path)
{
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
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

/* The message of a sandbox error without its "code: " prefix. */
static const char *
policy_inner(const VigilError *e)
{
  const char *name = error_name(e->code);
  size_t len = strlen(name);
  if (strncmp(e->msg, name, len) == 0 && e->msg[len] == ':' && e->msg[len + 1] == ' ')
    return e->msg + len + 2;
  return e->msg;
}

/* The Policy a C function of the state belongs to (its upvalue 1). */
static Policy *
policy_self(lua_State *L)
{
  return lua_touserdata(L, lua_upvalueindex(1));
}

/* Pushes the contents of p->scratch and gives back a scratch that grew
 * large. May raise a memory error, after which scratch is still owned by p. */
static void
policy_push_scratch(lua_State *L, Policy *p)
{
  lua_pushlstring(L, p->scratch.data ? p->scratch.data : "", p->scratch.len);
  if (p->scratch.cap > POLICY_SCRATCH_KEEP)
    strbuf_free(&p->scratch);
  else
    strbuf_reset(&p->scratch);
}

/* Pushes text escaped with textfmt_escape, charging the work. */
static void
policy_push_escaped(lua_State *L, Policy *p, const char *text, size_t len)
{
  luasandbox_charge(L, len / 4);
  strbuf_reset(&p->scratch);
  textfmt_escape(&p->scratch, text, len);
  policy_push_scratch(L, p);
}

/* --- the vigil module ---------------------------------------------------- */

/* vigil.nonce() -> 32 random lowercase hex digits. */
static int
policy_vigil_nonce(lua_State *L)
{
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
  Policy *p = policy_self(L);
  luasandbox_charge(L, len / 4);
  strbuf_reset(&p->scratch);
  textfmt_sanitize(&p->scratch, text, len);
  policy_push_scratch(L, p);
  return 1;
}

/* vigil.time([ms]) -> RFC 3339 with milliseconds of now, or of ms since the
 * epoch. */
static int
policy_vigil_time(lua_State *L)
{
  Policy *p = policy_self(L);
  int64_t ms = lua_isnoneornil(L, 1) ? clock_now_ms() : (int64_t)luaL_checkinteger(L, 1);
  strbuf_reset(&p->scratch);
  textfmt_time(&p->scratch, ms);
  policy_push_scratch(L, p);
  return 1;
}

/* CLOCK_MONOTONIC in ms: the rate limit's clock unless the set was given
 * another. */
static uint64_t
policy_monotonic_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
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

/* Starts the per-call count of a call or load. */
static void
policy_log_begin(Policy *p)
{
  p->log_in_call = 0;
}

/* Ends a call or load: sums up the lines dropped so far in one log line,
 * unless the last summary is more recent than POLICY_LOG_SUMMARY_MS (then
 * the count waits for a later call); `force` writes it regardless. */
static void
policy_log_end(Policy *p, bool force)
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
  Policy *p = policy_self(L);
  int level = luaL_checkoption(L, 1, NULL, levels);
  size_t len;
  const char *msg = luaL_checklstring(L, 2, &len);
  if ((int)values[level] < (int)log_level() || !policy_log_allowed(p))
    return 0;
  char text[POLICY_LOG_MAX + 1];
  len = policy_cut_utf8(msg, len, POLICY_LOG_MAX);
  memcpy(text, msg, len);
  text[len] = '\0';
  char module[POLICY_NAME_MAX + 16];
  snprintf(module, sizeof module, "policy %s", p->name);
  log_msg(values[level], module, "%s", text);
  return 0;
}

/* --- require ------------------------------------------------------------- */

/* require(name): see the file comment. Returns the module's value (true
 * when it returned nothing) and the file it came from. */
static int
policy_require(lua_State *L)
{
  Policy *p = policy_self(L);
  size_t len;
  const char *name = luaL_checklstring(L, 1, &len);
  if (!policy_module_name_ok(name, len) || strlen(name) != len) {
    strbuf_reset(&p->scratch);
    strbuf_puts(&p->scratch, "bad module name \"");
    policy_quote(&p->scratch, name, len);
    strbuf_puts(&p->scratch, "\" (want words of [A-Za-z0-9_] joined by dots)");
    policy_push_scratch(L, p);
    luaL_where(L, 1);
    lua_insert(L, -2);
    lua_concat(L, 2);
    return lua_error(L);
  }
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

  /* "a.b" -> "a/b.lua", looked up in each directory in turn. */
  char rel[POLICY_MODULE_NAME_MAX + 8];
  memcpy(rel, name, len);
  for (size_t i = 0; i < len; i++)
    if (rel[i] == '.')
      rel[i] = '/';
  memcpy(rel + len, ".lua", 5);
  const char **dirs = lua_newuserdatauv(L, (2 + p->set->nplugin_paths) * sizeof *dirs, 0);
  size_t ndirs = policy_module_dirs(p->set, dirs);
  char path[4096];
  bool found = false;
  for (size_t i = 0; i < ndirs && !found; i++)
    found = policy_join(path, sizeof path, dirs[i], rel) && policy_is_file(path);
  if (!found) {
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (size_t i = 0; i < ndirs; i++) {
      if (i > 0)
        luaL_addstring(&b, ", ");
      luaL_addstring(&b, dirs[i]);
    }
    luaL_pushresult(&b);
    return luaL_error(L, "module '%s' not found (looked in %s)", name, lua_tostring(L, -1));
  }
  struct stat st;
  if (stat(path, &st) == 0 && (uint64_t)st.st_size > POLICY_FILE_MAX)
    return luaL_error(L, "module '%s': %s: larger than %d bytes", name, path,
                      (int)POLICY_FILE_MAX);

  /* Marked as loading while it runs, so a loop of require is an error
   * rather than a stack overflow; the mark goes whatever happens. */
  lua_pushvalue(L, 1);
  lua_pushboolean(L, 1);
  lua_rawset(L, 3);
  int status = luaL_loadfilex(L, path, "t");
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

/* Sets up a new state for policy p (argument 1, light userdata): the vigil
 * module, require and its tables. Runs inside luasandbox_call. */
static int
policy_setup(lua_State *L)
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

/* --- read-only proxies --------------------------------------------------- */

/* The real table behind the proxy at idx (its metatable's __index; the C
 * API does not honour __metatable). */
static void
policy_ro_real(lua_State *L, int idx)
{
  if (!lua_getmetatable(L, idx)) {
    lua_pushnil(L);
    return;
  }
  lua_pushliteral(L, "__index");
  lua_rawget(L, -2);
  lua_remove(L, -2);
}

static int
policy_ro_newindex_notification(lua_State *L)
{
  return luaL_error(L, "notification is read-only");
}

static int
policy_ro_newindex_request(lua_State *L)
{
  return luaL_error(L, "request is read-only");
}

/* __len: the length of the real table. */
static int
policy_ro_len(lua_State *L)
{
  policy_ro_real(L, 1);
  lua_pushinteger(L, (lua_Integer)lua_rawlen(L, -1));
  return 1;
}

/* The iterator __pairs returns: next over the real table (upvalue 1), which
 * the policy never gets hold of. */
static int
policy_ro_next(lua_State *L)
{
  lua_settop(L, 2);
  if (lua_next(L, lua_upvalueindex(1)))
    return 2;
  lua_pushnil(L);
  return 1;
}

/* __pairs: the iterator above, the proxy, nil. */
static int
policy_ro_pairs(lua_State *L)
{
  policy_ro_real(L, 1);
  lua_pushcclosure(L, policy_ro_next, 1);
  lua_pushvalue(L, 1);
  lua_pushnil(L);
  return 3;
}

/* Replaces the table at the top with a read-only proxy of it (file
 * comment); newindex says what it is when written to. */
static void
policy_push_readonly(lua_State *L, lua_CFunction newindex)
{
  lua_createtable(L, 0, 0);
  lua_createtable(L, 0, 5);
  lua_pushvalue(L, -3);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, newindex);
  lua_setfield(L, -2, "__newindex");
  lua_pushcfunction(L, policy_ro_len);
  lua_setfield(L, -2, "__len");
  lua_pushcfunction(L, policy_ro_pairs);
  lua_setfield(L, -2, "__pairs");
  lua_pushliteral(L, "read-only");
  lua_setfield(L, -2, "__metatable");
  lua_setmetatable(L, -2);
  lua_replace(L, -2);
}

/* Sets field k of the table at the top to the string s, if s is not NULL. */
static void
policy_set_str(lua_State *L, const char *k, const char *s)
{
  if (s == NULL)
    return;
  lua_pushstring(L, s);
  lua_setfield(L, -2, k);
}

static void
policy_set_int(lua_State *L, const char *k, lua_Integer v)
{
  lua_pushinteger(L, v);
  lua_setfield(L, -2, k);
}

/* A uint64 as a Lua integer, saturated (counts never get near 2^63). */
static lua_Integer
policy_int(uint64_t v)
{
  return v > (uint64_t)LUA_MAXINTEGER ? LUA_MAXINTEGER : (lua_Integer)v;
}

/* Pushes the read-only table n of a notification, shaped as on the wire. */
static void
policy_push_notification(lua_State *L, Policy *p, const Notification *n)
{
  bool ending = notification_is_ending(n->type);
  lua_createtable(L, 0, 16);
  policy_set_str(L, "type", notification_type_name(n->type));
  policy_set_str(L, "monitor_id", n->monitor_id[0] ? n->monitor_id : NULL);
  if (n->label) {
    policy_push_escaped(L, p, n->label, strlen(n->label));
    lua_setfield(L, -2, "label");
  }
  policy_set_str(L, "mode", monitor_mode_name(n->mode));
  if (n->type == kNotifOutput)
    policy_set_int(L, "batch", policy_int(n->batch));

  lua_createtable(L, (int)(n->nlines < INT32_MAX ? n->nlines : 0), 0);
  for (size_t i = 0; i < n->nlines; i++) {
    const NoteLine *l = &n->lines[i];
    lua_createtable(L, 0, 5);
    policy_set_int(L, "seq", policy_int(l->seq));
    policy_set_str(L, "stream", stream_name(l->stream));
    policy_push_escaped(L, p, l->text ? l->text : "", l->text ? l->len : 0);
    lua_setfield(L, -2, "text");
    if (l->pattern >= 0)
      policy_set_int(L, "pattern", l->pattern);
    lua_pushboolean(L, l->truncated);
    lua_setfield(L, -2, "truncated");
    policy_push_readonly(L, policy_ro_newindex_notification);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  policy_push_readonly(L, policy_ro_newindex_notification);
  lua_setfield(L, -2, "lines");

  policy_set_int(L, "suppressed", policy_int(n->suppressed));
  if (ending || n->type == kNotifOutput)
    policy_set_str(L, "state", monitor_state_name(n->state));
  if (ending && n->has_exit_code)
    policy_set_int(L, "exit_code", n->exit_code);
  if (ending && n->signal != 0) {
    const char *sig = signals_name(n->signal);
    if (sig)
      policy_set_str(L, "signal", sig);
    else
      policy_set_int(L, "signal", n->signal);
  }
  if (ending && n->has_duration)
    policy_set_int(L, "duration_ms", policy_int(n->duration_ms));
  if (n->reason) {
    policy_push_escaped(L, p, n->reason, strlen(n->reason));
    lua_setfield(L, -2, "reason");
  }
  if (ending && n->exceeded)
    policy_set_str(L, "exceeded", n->exceeded);
  if (n->type == kNotifDropped)
    policy_set_int(L, "dropped", policy_int(n->dropped_count));
  strbuf_reset(&p->scratch);
  textfmt_time(&p->scratch, n->at_ms);
  policy_push_scratch(L, p);
  lua_setfield(L, -2, "at");
  policy_push_readonly(L, policy_ro_newindex_notification);
}

/* Pushes the read-only table req of a start request. */
static void
policy_push_request(lua_State *L, const PolicyGateRequest *req)
{
  lua_createtable(L, 0, 7);
  policy_set_str(L, "program", req->program);
  lua_newtable(L);
  for (lua_Integer i = 0; req->argv && req->argv[i]; i++) {
    lua_pushstring(L, req->argv[i]);
    lua_rawseti(L, -2, i + 1);
  }
  policy_push_readonly(L, policy_ro_newindex_request);
  lua_setfield(L, -2, "argv");
  lua_pushboolean(L, req->shell);
  lua_setfield(L, -2, "shell");
  policy_set_str(L, "cwd", req->cwd);
  policy_set_str(L, "session", req->session);
  policy_set_str(L, "label", req->label);
  lua_newtable(L);
  for (size_t i = 0; req->env && req->env[i]; i++) {
    const char *eq = strchr(req->env[i], '=');
    if (eq == NULL)
      continue;
    lua_pushlstring(L, req->env[i], (size_t)(eq - req->env[i]));
    lua_pushstring(L, eq + 1);
    lua_rawset(L, -3);
  }
  policy_push_readonly(L, policy_ro_newindex_request);
  lua_setfield(L, -2, "env");
  policy_push_readonly(L, policy_ro_newindex_request);
}

/* --- calls --------------------------------------------------------------- */

/* What policy_trampoline is asked to do. */
typedef struct {
  Policy *p;
  int fn;                         /* kPolicyFormat... */
  const Notification *n;          /* format, route */
  const PolicyGateRequest *req;   /* gate */
} PolicyCall;

/* Runs inside luasandbox_call with a PolicyCall (light userdata): builds
 * the argument and calls the policy's function, returning its results (1,
 * or 2 for gate). */
static int
policy_trampoline(lua_State *L)
{
  const PolicyCall *c = lua_touserdata(L, 1);
  lua_settop(L, 0);
  lua_rawgeti(L, LUA_REGISTRYINDEX, c->p->fn[c->fn]);
  if (c->fn == kPolicyGate)
    policy_push_request(L, c->req);
  else
    policy_push_notification(L, c->p, c->n);
  int nresults = c->fn == kPolicyGate ? 2 : 1;
  lua_call(L, 1, nresults);
  return nresults;
}

/* Records a failed call of p's function fn and sets err (internal, "policy
 * NAME: FN: what"). Returns -1. */
static int
policy_fail(Policy *p, int fn, VigilError *err, const char *what)
{
  p->failures++;
  return error_set(err, kErrInternal, "policy %s: %s: %s", p->name, policy_fn_names[fn], what);
}

/* Describes the value at idx for a message: a string quoted (escaped, cut),
 * anything else by its type. */
static void
policy_describe(lua_State *L, int idx, StrBuf *out)
{
  if (lua_type(L, idx) == LUA_TSTRING) {
    size_t len;
    const char *s = lua_tolstring(L, idx, &len);
    strbuf_putc(out, '"');
    policy_quote(out, s, len);
    strbuf_putc(out, '"');
  } else {
    strbuf_printf(out, "a %s", luaL_typename(L, idx));
  }
}

/* Calls p's function fn. On success returns 0 with its nresults results on
 * the stack above *top; on failure returns -1 with err set and the stack
 * as it was. */
static int
policy_call(Policy *p, PolicyCall *c, int nresults, int *top, VigilError *err)
{
  lua_State *L = luasandbox_state(p->sb);
  *top = lua_gettop(L);
  if (!lua_checkstack(L, 4))
    return policy_fail(p, c->fn, err, "no room on the Lua stack");
  lua_pushcfunction(L, policy_trampoline);
  lua_pushlightuserdata(L, c);
  VigilError local = VIGIL_ERROR_INIT;
  policy_log_begin(p);
  int rc = luasandbox_call(p->sb, 1, nresults, &local);
  policy_log_end(p, false);
  if (rc != 0) {
    lua_settop(L, *top);
    strbuf_reset(&p->scratch);
    return policy_fail(p, c->fn, err, policy_inner(&local));
  }
  return 0;
}

/* See policy.h. */
int
policy_format(Policy *p, const Notification *n, StrBuf *body, VigilError *err)
{
  if (p->fn[kPolicyFormat] == LUA_NOREF)
    return 1;
  PolicyCall c = {p, kPolicyFormat, n, NULL};
  int top;
  if (policy_call(p, &c, 1, &top, err) != 0)
    return -1;
  lua_State *L = luasandbox_state(p->sb);
  int rc = 0;
  if (lua_type(L, -1) == LUA_TSTRING) {
    size_t len;
    const char *s = lua_tolstring(L, -1, &len);
    strbuf_append(body, s, len);
  } else {
    StrBuf what = STRBUF_INIT;
    strbuf_puts(&what, "returned ");
    policy_describe(L, -1, &what);
    strbuf_puts(&what, ", not a string");
    rc = policy_fail(p, kPolicyFormat, err, strbuf_cstr(&what));
    strbuf_free(&what);
  }
  lua_settop(L, top);
  return rc;
}

/* See policy.h. */
int
policy_route(Policy *p, const Notification *n, DeliveryMode *mode, bool *drop,
             VigilError *err)
{
  if (p->fn[kPolicyRoute] == LUA_NOREF)
    return 1;
  PolicyCall c = {p, kPolicyRoute, n, NULL};
  int top;
  if (policy_call(p, &c, 1, &top, err) != 0)
    return -1;
  lua_State *L = luasandbox_state(p->sb);
  const char *s = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
  int rc = 0;
  if (s && strcmp(s, "idle") == 0) {
    *mode = kModeIdle;
    *drop = false;
  } else if (s && strcmp(s, "live_safe") == 0) {
    *mode = kModeLiveSafe;
    *drop = false;
  } else if (s && strcmp(s, "drop") == 0) {
    *drop = true;
  } else {
    StrBuf what = STRBUF_INIT;
    strbuf_puts(&what, "returned ");
    policy_describe(L, -1, &what);
    strbuf_puts(&what, " (want \"idle\", \"live_safe\" or \"drop\")");
    rc = policy_fail(p, kPolicyRoute, err, strbuf_cstr(&what));
    strbuf_free(&what);
  }
  lua_settop(L, top);
  return rc;
}

/* See policy.h. The reason is cut to POLICY_REASON_MAX bytes (at a UTF-8
 * boundary) and escaped, since it may quote the request. */
int
policy_gate(Policy *p, const PolicyGateRequest *req, bool *allow, char **reason,
            VigilError *err)
{
  *reason = NULL;
  if (p->fn[kPolicyGate] == LUA_NOREF)
    return 1;
  PolicyCall c = {p, kPolicyGate, NULL, req};
  int top;
  if (policy_call(p, &c, 2, &top, err) != 0)
    return -1;
  lua_State *L = luasandbox_state(p->sb);
  int rc = 0;
  int t2 = lua_type(L, -1);
  if (lua_type(L, -2) != LUA_TBOOLEAN) {
    StrBuf what = STRBUF_INIT;
    strbuf_puts(&what, "returned ");
    policy_describe(L, -2, &what);
    strbuf_puts(&what, " (want true, or false and a reason)");
    rc = policy_fail(p, kPolicyGate, err, strbuf_cstr(&what));
    strbuf_free(&what);
  } else if (t2 != LUA_TNIL && t2 != LUA_TSTRING) {
    StrBuf what = STRBUF_INIT;
    strbuf_printf(&what, "returned a %s as the reason (want a string or nil)",
                  luaL_typename(L, -1));
    rc = policy_fail(p, kPolicyGate, err, strbuf_cstr(&what));
    strbuf_free(&what);
  } else {
    *allow = lua_toboolean(L, -2);
    if (!*allow && t2 == LUA_TSTRING) {
      size_t len;
      const char *s = lua_tolstring(L, -1, &len);
      StrBuf r = STRBUF_INIT;
      textfmt_escape(&r, s, policy_cut_utf8(s, len, POLICY_REASON_MAX));
      *reason = r.data ? strbuf_take(&r) : xstrdup("");
    }
  }
  lua_settop(L, top);
  return rc;
}

/* --- loading ------------------------------------------------------------- */

/* Runs inside luasandbox_call with the table a policy file returned and the
 * Policy (light userdata): checks format/route/gate (raw fields, so no
 * metamethod runs) and keeps them and the table in the registry. Returns
 * nothing when they are fine, else a message. */
static int
policy_collect(lua_State *L)
{
  Policy *p = lua_touserdata(L, 2);
  for (int i = 0; i < kPolicyFnCount; i++) {
    lua_pushstring(L, policy_fn_names[i]);
    int t = lua_rawget(L, 1);
    if (t == LUA_TFUNCTION) {
      p->fn[i] = luaL_ref(L, LUA_REGISTRYINDEX);
    } else if (t == LUA_TNIL) {
      lua_pop(L, 1);
    } else {
      lua_pushfstring(L, "field '%s' is a %s, not a function (format, route and gate are "
                         "functions or absent)",
                      policy_fn_names[i], luaL_typename(L, -1));
      return 1;
    }
  }
  lua_pushvalue(L, 1);
  p->table_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  return 0;
}

/* Frees a policy and its state; NULL is ignored. */
static void
policy_free(Policy *p)
{
  if (p == NULL)
    return;
  policy_log_end(p, true);
  luasandbox_free(p->sb);
  free(p->name);
  free(p->path);
  strbuf_free(&p->scratch);
  free(p);
}

/* Loads policy `name` from path into a new state. NULL with err
 * (invalid_params, "policy \"NAME\": ...") on failure. */
static Policy *
policy_load(PolicySet *ps, const char *name, const char *path, VigilError *err)
{
  Policy *p = xcalloc(1, sizeof *p);
  p->set = ps;
  p->name = xstrdup(name);
  p->path = xstrdup(path);
  p->table_ref = LUA_NOREF;
  for (int i = 0; i < kPolicyFnCount; i++)
    p->fn[i] = LUA_NOREF;
  p->sb = luasandbox_new(&ps->limits);
  if (p->sb == NULL) {
    error_set(err, kErrInvalidParams,
              "policy \"%s\": a memory cap of %zu bytes is too small for a Lua state", name,
              ps->limits.memory_max);
    policy_free(p);
    return NULL;
  }
  lua_State *L = luasandbox_state(p->sb);
  VigilError local = VIGIL_ERROR_INIT;
  int top = lua_gettop(L);
  if (!lua_checkstack(L, 4)) {
    error_set(err, kErrInvalidParams, "policy \"%s\": no room on the Lua stack", name);
    policy_free(p);
    return NULL;
  }
  lua_pushcfunction(L, policy_setup);
  lua_pushlightuserdata(L, p);
  policy_log_begin(p);
  int rc = luasandbox_call(p->sb, 1, 0, &local);
  if (rc == 0)
    rc = luasandbox_run_file(p->sb, path, POLICY_FILE_MAX, 1, &local);
  policy_log_end(p, false);
  if (rc != 0) {
    error_set(err, kErrInvalidParams, "policy \"%s\": %s", name, policy_inner(&local));
    policy_free(p);
    return NULL;
  }
  if (lua_type(L, -1) != LUA_TTABLE) {
    error_set(err, kErrInvalidParams, "policy \"%s\": %s: returns a %s, not a table", name,
              path, luaL_typename(L, -1));
    policy_free(p);
    return NULL;
  }
  lua_pushcfunction(L, policy_collect);
  lua_insert(L, -2);
  lua_pushlightuserdata(L, p);
  if (luasandbox_call(p->sb, 2, 1, &local) != 0) {
    error_set(err, kErrInvalidParams, "policy \"%s\": %s", name, policy_inner(&local));
    policy_free(p);
    return NULL;
  }
  if (lua_type(L, -1) == LUA_TSTRING) {
    error_set(err, kErrInvalidParams, "policy \"%s\": %s: %s", name, path, lua_tostring(L, -1));
    policy_free(p);
    return NULL;
  }
  lua_settop(L, top);
  return p;
}

/* --- the set ------------------------------------------------------------- */

/* See policy.h. */
PolicySet *
policyset_new(const PolicyOptions *opts)
{
  PolicySet *ps = xcalloc(1, sizeof *ps);
  ps->lua_dir = opts->lua_dir ? xstrdup(opts->lua_dir) : NULL;
  ps->bundled_dir = opts->bundled_dir ? xstrdup(opts->bundled_dir) : NULL;
  ps->nplugin_paths = opts->nplugin_paths;
  ps->plugin_paths = xcalloc(opts->nplugin_paths + 1, sizeof *ps->plugin_paths);
  for (size_t i = 0; i < opts->nplugin_paths; i++)
    ps->plugin_paths[i] = xstrdup(opts->plugin_paths[i]);
  ps->limits.memory_max = opts->limits.memory_max ? opts->limits.memory_max
                                                  : POLICY_DEFAULT_MEMORY;
  ps->limits.instruction_max = opts->limits.instruction_max ? opts->limits.instruction_max
                                                            : POLICY_DEFAULT_INSTRUCTIONS;
  ps->limits.time_max_ms = opts->limits.time_max_ms; /* 0: the sandbox's derived default */
  ps->log_per_s = opts->log_lines_per_s ? opts->log_lines_per_s : POLICY_DEFAULT_LOG_PER_S;
  ps->clock_ms = opts->clock_ms ? opts->clock_ms : policy_monotonic_ms;
  ps->log_per_call = opts->log_lines_per_call ? opts->log_lines_per_call
                                              : POLICY_DEFAULT_LOG_PER_CALL;
  return ps;
}

/* See policy.h. */
void
policyset_free(PolicySet *ps)
{
  if (ps == NULL)
    return;
  for (size_t i = 0; i < ps->npolicies; i++)
    policy_free(ps->policies[i]);
  free(ps->policies);
  free(ps->names);
  for (size_t i = 0; i < ps->nplugin_paths; i++)
    free(ps->plugin_paths[i]);
  free(ps->plugin_paths);
  free(ps->lua_dir);
  free(ps->bundled_dir);
  free(ps);
}

/* See policy.h. */
Policy *
policyset_get(PolicySet *ps, const char *name, VigilError *err)
{
  if (name == NULL || !policy_name_ok(name)) {
    StrBuf q = STRBUF_INIT;
    if (name)
      policy_quote(&q, name, strlen(name));
    error_set(err, kErrInvalidParams,
              "policy: bad policy name \"%s\" (want 1..%d bytes of [a-z0-9_-])",
              strbuf_cstr(&q), POLICY_NAME_MAX);
    strbuf_free(&q);
    return NULL;
  }
  for (size_t i = 0; i < ps->npolicies; i++)
    if (strcmp(ps->policies[i]->name, name) == 0)
      return ps->policies[i];

  char rel[POLICY_NAME_MAX + 8];
  snprintf(rel, sizeof rel, "%s.lua", name);
  const char *dirs[2];
  size_t ndirs = 0;
  if (ps->bundled_dir)
    dirs[ndirs++] = ps->bundled_dir;
  char path[4096];
  bool found = false;
  for (size_t i = 0; !found && i < ndirs + ps->nplugin_paths; i++) {
    const char *dir = i < ndirs ? dirs[i] : ps->plugin_paths[i - ndirs];
    found = policy_join(path, sizeof path, dir, rel) && policy_is_file(path);
  }
  if (!found) {
    StrBuf looked = STRBUF_INIT;
    for (size_t i = 0; i < ndirs + ps->nplugin_paths; i++) {
      if (i > 0)
        strbuf_puts(&looked, ", ");
      strbuf_puts(&looked, i < ndirs ? dirs[i] : ps->plugin_paths[i - ndirs]);
    }
    error_set(err, kErrInvalidParams, "policy: unknown policy \"%s\" (looked in %s)", name,
              looked.len ? strbuf_cstr(&looked) : "no directory");
    strbuf_free(&looked);
    return NULL;
  }

  Policy *p = policy_load(ps, name, path, err);
  if (p == NULL)
    return NULL;
  if (ps->npolicies == ps->cap) {
    ps->cap = ps->cap ? 2 * ps->cap : 4;
    ps->policies = xrealloc(ps->policies, ps->cap * sizeof *ps->policies);
    ps->names = xrealloc(ps->names, ps->cap * sizeof *ps->names);
  }
  ps->policies[ps->npolicies] = p;
  ps->names[ps->npolicies] = p->name;
  ps->npolicies++;
  return p;
}

/* See policy.h. The array stays owned by ps and valid until the next
 * policyset_get or policyset_free. */
size_t
policyset_names(const PolicySet *ps, const char ***names)
{
  *names = ps->names;
  return ps->npolicies;
}

const char *
policy_name(const Policy *p)
{
  return p->name;
}

const char *
policy_path(const Policy *p)
{
  return p->path;
}

bool
policy_has_format(const Policy *p)
{
  return p->fn[kPolicyFormat] != LUA_NOREF;
}

bool
policy_has_route(const Policy *p)
{
  return p->fn[kPolicyRoute] != LUA_NOREF;
}

bool
policy_has_gate(const Policy *p)
{
  return p->fn[kPolicyGate] != LUA_NOREF;
}

uint64_t
policy_failures(const Policy *p)
{
  return p->failures;
}

uint64_t
policy_log_lines_dropped(void)
{
  return policy_log_dropped_total;
}
