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
#include "policy/policy_internal.h"
#include "pipeline/incident.h"

#include <lauxlib.h>
#include <string.h>

#include "pipeline/fingerprint.h"
#include "spec/monitor_defs.h"
#include "base/signals.h"
#include "spec/stream.h"
#include "base/textfmt.h"

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
  luasandbox_charge(L, 1); /* read the clock, as every C function does */
  policy_ro_real(L, 1);
  lua_pushinteger(L, (lua_Integer)lua_rawlen(L, -1));
  return 1;
}

/* The iterator __pairs returns: next over the real table (upvalue 1), which
 * the policy never gets hold of. */
static int
policy_ro_next(lua_State *L)
{
  luasandbox_charge(L, 1);
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
  luasandbox_charge(L, 1);
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

/* Pushes one incident of n as a read-only table: {id, kind, fingerprint,
 * pattern, pattern_name, first_seq, last_seq, lines, repeats,
 * repeat_span_ms, last_repeat_at, truncated_lines, summary}. Its `lines`
 * list is empty here; its real table is stored at lists[pos] for the
 * caller to fill with the notification's line tables. */
static void
policy_push_incident(lua_State *L, Policy *p, const NoteIncident *inc, int lists,
                     lua_Integer pos)
{
  lua_createtable(L, 0, 13);
  policy_set_int(L, "id", policy_int(inc->id));
  policy_set_str(L, "kind", incident_kind_name(inc->kind));
  char hex[17];
  fingerprint_hex(inc->fingerprint, hex);
  policy_set_str(L, "fingerprint", hex);
  if (inc->pattern >= 0)
    policy_set_int(L, "pattern", inc->pattern);
  policy_set_str(L, "pattern_name", inc->pattern_name);
  policy_set_int(L, "first_seq", policy_int(inc->first_seq));
  policy_set_int(L, "last_seq", policy_int(inc->last_seq));
  policy_set_int(L, "repeats", policy_int(inc->repeats));
  policy_set_int(L, "repeat_span_ms", policy_int(inc->repeat_span_ms));
  if (inc->repeats > 0) {
    strbuf_reset(&p->scratch);
    textfmt_time(&p->scratch, inc->repeat_last_at);
    policy__push_scratch(L, p);
    lua_setfield(L, -2, "last_repeat_at");
  }
  policy_set_int(L, "truncated_lines", policy_int(inc->truncated_lines));
  lua_pushboolean(L, inc->summary);
  lua_setfield(L, -2, "summary");
  lua_createtable(L, (int)(inc->nlines < INT32_MAX ? inc->nlines : 0), 0);
  lua_pushvalue(L, -1);
  lua_rawseti(L, lists, pos);
  policy_push_readonly(L, policy_ro_newindex_notification);
  lua_setfield(L, -2, "lines");
  policy_push_readonly(L, policy_ro_newindex_notification);
}

/* Sets n.lines and n.incidents on the table at the top. The incidents are
 * made first (their line lists filled below), so that each line can name
 * its incident: l.incident is the same table as n.incidents[k]. */
static void
policy_push_lines(lua_State *L, Policy *p, const Notification *n)
{
  lua_createtable(L, (int)(n->nincidents < INT32_MAX ? n->nincidents : 0), 0);
  int incidents = lua_gettop(L);
  lua_createtable(L, (int)(n->nincidents < INT32_MAX ? n->nincidents : 0), 0);
  int lists = lua_gettop(L);
  for (size_t k = 0; k < n->nincidents; k++) {
    policy_push_incident(L, p, &n->incidents[k], lists, (lua_Integer)k + 1);
    lua_rawseti(L, incidents, (lua_Integer)k + 1);
  }

  lua_createtable(L, (int)(n->nlines < INT32_MAX ? n->nlines : 0), 0);
  size_t k = 0;
  for (size_t i = 0; i < n->nlines; i++) {
    const NoteLine *l = &n->lines[i];
    while (k < n->nincidents && i >= n->incidents[k].first_line + n->incidents[k].nlines)
      k++;
    bool in_incident = k < n->nincidents && i >= n->incidents[k].first_line;
    lua_createtable(L, 0, 6);
    policy_set_int(L, "seq", policy_int(l->seq));
    policy_set_str(L, "stream", stream_name(l->stream));
    policy__push_filtered(L, p, l->text ? l->text : "", l->text ? l->len : 0, textfmt_escape);
    lua_setfield(L, -2, "text");
    if (l->pattern >= 0)
      policy_set_int(L, "pattern", l->pattern);
    lua_pushboolean(L, l->truncated);
    lua_setfield(L, -2, "truncated");
    if (in_incident) {
      lua_rawgeti(L, incidents, (lua_Integer)k + 1);
      lua_setfield(L, -2, "incident");
    }
    policy_push_readonly(L, policy_ro_newindex_notification);
    if (in_incident) {
      lua_rawgeti(L, lists, (lua_Integer)k + 1);
      lua_pushvalue(L, -2);
      lua_rawseti(L, -2, (lua_Integer)(i - n->incidents[k].first_line) + 1);
      lua_pop(L, 1);
    }
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  policy_push_readonly(L, policy_ro_newindex_notification);
  lua_setfield(L, -4, "lines");
  lua_pop(L, 1); /* lists */
  policy_push_readonly(L, policy_ro_newindex_notification);
  lua_setfield(L, -2, "incidents");
}

/* See policy_internal.h. */
void
policy__push_notification(lua_State *L, Policy *p, const Notification *n)
{
  bool ending = notification_is_ending(n->type);
  lua_createtable(L, 0, 16);
  policy_set_str(L, "type", notification_type_name(n->type));
  policy_set_str(L, "monitor_id", n->monitor_id[0] ? n->monitor_id : NULL);
  if (n->label) {
    policy__push_filtered(L, p, n->label, strlen(n->label), textfmt_escape);
    lua_setfield(L, -2, "label");
  }
  policy_set_str(L, "mode", monitor_mode_name(n->mode));
  if (n->type == kNotifOutput)
    policy_set_int(L, "batch", policy_int(n->batch));

  policy_push_lines(L, p, n);
  policy_set_int(L, "incidents_withheld", policy_int(n->incidents_withheld));
  policy_set_int(L, "incidents_coalesced", policy_int(n->incidents_coalesced));
  policy_set_int(L, "incidents_dropped", policy_int(n->incidents_dropped));
  policy_set_str(L, "style", monitor_envelope_names[n->style == kEnvelopeCompact ? 1 : 0]);

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
    policy__push_filtered(L, p, n->reason, strlen(n->reason), textfmt_escape);
    lua_setfield(L, -2, "reason");
  }
  if (ending && n->exceeded)
    policy_set_str(L, "exceeded", n->exceeded);
  if (n->type == kNotifDropped)
    policy_set_int(L, "dropped", policy_int(n->dropped_count));
  strbuf_reset(&p->scratch);
  textfmt_time(&p->scratch, n->at_ms);
  policy__push_scratch(L, p);
  lua_setfield(L, -2, "at");
  policy_push_readonly(L, policy_ro_newindex_notification);
}

/* See policy_internal.h. */
void
policy__push_request(lua_State *L, const PolicyGateRequest *req)
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
