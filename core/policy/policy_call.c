/*
 * Calling a policy's format, route and gate (see policy.h), and checking
 * what they return. Everything a call does to the Lua state runs inside
 * luasandbox_call: building the argument (policy_view.c) as well as the
 * call itself, so a failure anywhere, the memory cap or the budget included,
 * leaves the state as it was, usable for the next call. A call that fails
 * or returns the wrong thing is counted (policy_failures) and reported as
 * "policy NAME: FN: what"; the caller then falls back to the built-in C
 * envelope.
 *
 * The string format returns is appended as it is; the caller (the envelope)
 * checks and wraps it.
 */
#include "policy/policy_internal.h"

#include <lauxlib.h>
#include <string.h>

#include "base/memory.h"
#include "base/textfmt.h"
#include "base/utf8.h"

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
    policy__push_request(L, c->req);
  else
    policy__push_notification(L, c->p, c->n);
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
  return error_set(err, kErrInternal, "policy %s: %s: %s", p->name, policy__fn_names[fn], what);
}

/* Fails the call of p's function fn for its result at idx (file comment):
 * "returned ", the value (a string quoted, escaped and cut; anything else
 * by its type), then `want`. Returns -1. */
static int
policy_bad_result(Policy *p, int fn, int idx, const char *want, VigilError *err)
{
  lua_State *L = luasandbox_state(p->sb);
  StrBuf what = STRBUF_INIT;
  strbuf_puts(&what, "returned ");
  if (lua_type(L, idx) == LUA_TSTRING) {
    size_t len;
    const char *s = lua_tolstring(L, idx, &len);
    strbuf_putc(&what, '"');
    policy__quote(&what, s, len);
    strbuf_putc(&what, '"');
  } else {
    strbuf_printf(&what, "a %s", luaL_typename(L, idx));
  }
  strbuf_puts(&what, want);
  int rc = policy_fail(p, fn, err, strbuf_cstr(&what));
  strbuf_free(&what);
  return rc;
}

/* Calls p's function fn with n (format, route) or req (gate). On success
 * returns 0 with its results (1, or 2 for gate) on the stack above *top;
 * returns 1 when p has no such function, and -1 with err set and the stack
 * as it was when the call failed. */
static int
policy_call(Policy *p, int fn, const Notification *n, const PolicyGateRequest *req, int *top,
            VigilError *err)
{
  if (p->fn[fn] == LUA_NOREF)
    return 1;
  PolicyCall c = {p, fn, n, req};
  lua_State *L = luasandbox_state(p->sb);
  *top = lua_gettop(L);
  if (!lua_checkstack(L, 4))
    return policy_fail(p, fn, err, "no room on the Lua stack");
  lua_pushcfunction(L, policy_trampoline);
  lua_pushlightuserdata(L, &c);
  VigilError local = VIGIL_ERROR_INIT;
  policy__log_begin(p);
  int rc = luasandbox_call(p->sb, 1, fn == kPolicyGate ? 2 : 1, &local);
  policy__log_end(p, false);
  if (rc != 0) {
    lua_settop(L, *top);
    strbuf_reset(&p->scratch);
    return policy_fail(p, fn, err, policy__inner(&local));
  }
  return 0;
}

/* See policy.h. */
int
policy_format(Policy *p, const Notification *n, StrBuf *body, VigilError *err)
{
  int top;
  int rc = policy_call(p, kPolicyFormat, n, NULL, &top, err);
  if (rc != 0)
    return rc;
  lua_State *L = luasandbox_state(p->sb);
  if (lua_type(L, -1) == LUA_TSTRING) {
    size_t len;
    const char *s = lua_tolstring(L, -1, &len);
    strbuf_append(body, s, len);
  } else {
    rc = policy_bad_result(p, kPolicyFormat, -1, ", not a string", err);
  }
  lua_settop(L, top);
  return rc;
}

/* See policy.h. */
int
policy_route(Policy *p, const Notification *n, DeliveryMode *mode, bool *drop,
             VigilError *err)
{
  int top;
  int rc = policy_call(p, kPolicyRoute, n, NULL, &top, err);
  if (rc != 0)
    return rc;
  lua_State *L = luasandbox_state(p->sb);
  const char *s = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
  if (s && strcmp(s, "idle") == 0) {
    *mode = kModeIdle;
    *drop = false;
  } else if (s && strcmp(s, "live_safe") == 0) {
    *mode = kModeLiveSafe;
    *drop = false;
  } else if (s && strcmp(s, "drop") == 0) {
    *drop = true;
  } else {
    rc = policy_bad_result(p, kPolicyRoute, -1, " (want \"idle\", \"live_safe\" or \"drop\")",
                           err);
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
  int top;
  int rc = policy_call(p, kPolicyGate, NULL, req, &top, err);
  if (rc != 0)
    return rc;
  lua_State *L = luasandbox_state(p->sb);
  int t2 = lua_type(L, -1);
  if (lua_type(L, -2) != LUA_TBOOLEAN) {
    rc = policy_bad_result(p, kPolicyGate, -2, " (want true, or false and a reason)", err);
  } else if (t2 != LUA_TNIL && t2 != LUA_TSTRING) {
    /* Neither nil nor a string: described by its type, "returned a table". */
    rc = policy_bad_result(p, kPolicyGate, -1, " as the reason (want a string or nil)", err);
  } else {
    *allow = lua_toboolean(L, -2);
    if (!*allow && t2 == LUA_TSTRING) {
      size_t len;
      const char *s = lua_tolstring(L, -1, &len);
      StrBuf r = STRBUF_INIT;
      textfmt_escape(&r, s, utf8_cut(s, len, POLICY_REASON_MAX));
      *reason = r.data ? strbuf_take(&r) : xstrdup("");
    }
  }
  lua_settop(L, top);
  return rc;
}

/* See policy.h. */
uint64_t
policy_failures(const Policy *p)
{
  return p->failures;
}
