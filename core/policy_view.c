/*
 * What a policy is handed: a notification (`n`, for format and route) or a
 * start request (`req`, for gate) as a Lua table, read-only and already
 * safe to show.
 *
 * `n` and `req` are proxy tables: an empty table whose metatable sends reads
 * to the real table, refuses writes with "notification is read-only" (or
 * "request is read-only"), answers # and pairs, and hides itself behind
 * __metatable, so getmetatable cannot reach the real table. (rawset on a
 * proxy writes to the proxy itself, which changes only what this call
 * sees.) Every line's text, the label and the reason are passed through
 * textfmt_escape first: no raw control character, ANSI escape or bidi
 * control reaches a policy at all. A line's `pattern` is the index of the
 * pattern that matched, counted from 0 as on the wire.
 *
 * The tables are built inside the call (luasandbox_call), so their
 * allocations are charged to its budget and may fail under the memory cap.
 */
#include "policy_internal.h"

#include <lauxlib.h>
#include <string.h>

#include "monitor_defs.h"
#include "signals.h"
#include "stream.h"
#include "textfmt.h"

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

/* Sets field k of the table at the top to the integer v. */
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

/* See policy_internal.h. */
void
policy_push_notification(lua_State *L, Policy *p, const Notification *n)
{
  bool ending = notification_is_ending(n->type);
  lua_createtable(L, 0, 16);
  policy_set_str(L, "type", notification_type_name(n->type));
  policy_set_str(L, "monitor_id", n->monitor_id[0] ? n->monitor_id : NULL);
  if (n->label) {
    policy_push_filtered(L, p, n->label, strlen(n->label), textfmt_escape);
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
    policy_push_filtered(L, p, l->text ? l->text : "", l->text ? l->len : 0, textfmt_escape);
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
    policy_push_filtered(L, p, n->reason, strlen(n->reason), textfmt_escape);
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

/* See policy_internal.h. */
void
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
