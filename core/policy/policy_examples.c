/*
 * The examples a policy carries (see policy.h: policy_examples): the
 * `examples` field of the table a policy file returns, read into C for
 * `vigil policy test` (policytry.h). Each example's notification table is
 * packed as msgpack, so that it is read by the one reader of a
 * wire-shaped notification (notification_map.h) that --notification JSON
 * goes through too.
 *
 * The table is the policy's, so it is read as hostile: raw access only (no
 * metamethod runs), inside luasandbox_call (the budget and the memory cap
 * apply, every element read is charged), nesting bounded, and a badly
 * shaped example is reported as that example's failure, not as the whole
 * file's.
 */
#include "policy/policy_internal.h"

#include <lauxlib.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/memory.h"

/* How deep an example's notification table may nest (the wire's deepest
 * is 4: notification, incidents, an incident, its lines, a line). */
#define POLICY_EXAMPLE_DEPTH 8

/* What policy_examples_collect fills, and its scratch: owned by the
 * caller of luasandbox_call, so that an error raised anywhere in the
 * reading (the budget, the memory cap) leaks nothing. */
typedef struct {
  PolicyExample *ex;
  size_t n;
  StrBuf why;            /* what is wrong with the example being read */
  StrBuf inner;          /* what is wrong inside its notification table */
  msgpack_sbuffer sb;    /* its notification table, packed */
} ExampleList;

/* Packs the Lua value at idx as msgpack; false with why set when it holds
 * something that is not data (a function, userdata) or nests too deep. */
static bool
policy_example_pack(lua_State *L, int idx, msgpack_packer *pk, int depth, StrBuf *why)
{
  luasandbox_charge(L, 1);
  idx = lua_absindex(L, idx);
  switch (lua_type(L, idx)) {
  case LUA_TNIL:
    msgpack_pack_nil(pk);
    return true;
  case LUA_TBOOLEAN:
    if (lua_toboolean(L, idx))
      msgpack_pack_true(pk);
    else
      msgpack_pack_false(pk);
    return true;
  case LUA_TNUMBER:
    if (lua_isinteger(L, idx))
      msgpack_pack_int64(pk, lua_tointeger(L, idx));
    else
      msgpack_pack_double(pk, lua_tonumber(L, idx));
    return true;
  case LUA_TSTRING: {
    size_t len;
    const char *s = lua_tolstring(L, idx, &len);
    msgpack_pack_str(pk, len);
    msgpack_pack_str_body(pk, s, len);
    return true;
  }
  case LUA_TTABLE:
    break;
  default:
    strbuf_printf(why, "holds a %s, which is not data", luaL_typename(L, idx));
    return false;
  }
  if (depth >= POLICY_EXAMPLE_DEPTH) {
    strbuf_printf(why, "nests deeper than %d tables", POLICY_EXAMPLE_DEPTH);
    return false;
  }
  /* A sequence 1..n with nothing else is an array; anything else a map. */
  lua_Unsigned len = lua_rawlen(L, idx);
  size_t count = 0;
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {
    lua_pop(L, 1);
    count++;
    luasandbox_charge(L, 1);
  }
  bool array = count == len;
  if (array) {
    msgpack_pack_array(pk, (size_t)len);
    for (lua_Unsigned i = 1; i <= len; i++) {
      lua_rawgeti(L, idx, (lua_Integer)i);
      bool ok = policy_example_pack(L, -1, pk, depth + 1, why);
      lua_pop(L, 1);
      if (!ok)
        return false;
    }
    return true;
  }
  msgpack_pack_map(pk, count);
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {
    bool ok = policy_example_pack(L, -2, pk, depth + 1, why) &&
              policy_example_pack(L, -1, pk, depth + 1, why);
    lua_pop(L, 1);
    if (!ok) {
      lua_pop(L, 1);
      return false;
    }
  }
  return true;
}

/* A string field of the example at idx, copied; NULL when absent, with
 * why set when it is there but not a string. */
static char *
policy_example_string(lua_State *L, int idx, const char *key, StrBuf *why)
{
  lua_pushstring(L, key);
  int t = lua_rawget(L, idx);
  char *out = NULL;
  if (t == LUA_TSTRING)
    out = xstrdup(lua_tostring(L, -1));
  else if (t != LUA_TNIL && why->len == 0)
    strbuf_printf(why, "%s is a %s, not a string", key, luaL_typename(L, -1));
  lua_pop(L, 1);
  return out;
}

/* must / must_not: a list of strings (or one string). */
static void
policy_example_strings(lua_State *L, int idx, const char *key, char ***out, size_t *n,
                       StrBuf *why)
{
  lua_pushstring(L, key);
  int t = lua_rawget(L, idx);
  if (t == LUA_TSTRING) {
    *out = xcalloc(1, sizeof **out);
    (*out)[(*n)++] = xstrdup(lua_tostring(L, -1));
  } else if (t == LUA_TTABLE) {
    lua_Unsigned len = lua_rawlen(L, -1);
    *out = xcalloc(len ? len : 1, sizeof **out);
    for (lua_Unsigned i = 1; i <= len; i++) {
      luasandbox_charge(L, 1);
      if (lua_rawgeti(L, -1, (lua_Integer)i) == LUA_TSTRING)
        (*out)[(*n)++] = xstrdup(lua_tostring(L, -1));
      else if (why->len == 0)
        strbuf_printf(why, "%s[%u] is a %s, not a string", key, (unsigned)i,
                      luaL_typename(L, -1));
      lua_pop(L, 1);
    }
  } else if (t != LUA_TNIL && why->len == 0) {
    strbuf_printf(why, "%s is a %s, not a list of strings", key, luaL_typename(L, -1));
  }
  lua_pop(L, 1);
}

/* Reads the example at idx into ex. */
static void
policy_example_read(lua_State *L, int idx, PolicyExample *ex, ExampleList *list)
{
  static const char *const keys[] = {"name", "sample", "notification", "mode", "route", "must",
                                     "must_not", NULL};
  StrBuf *why = &list->why;
  strbuf_reset(why);
  if (lua_type(L, idx) != LUA_TTABLE) {
    strbuf_printf(why, "is a %s, not a table", luaL_typename(L, idx));
    ex->error = xstrdup(strbuf_cstr(why));
    return;
  }
  idx = lua_absindex(L, idx);
  char *name = policy_example_string(L, idx, "name", why);
  if (name) {
    free(ex->name);
    ex->name = name;
  }
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {
    lua_pop(L, 1);
    luasandbox_charge(L, 1);
    bool known = false;
    for (size_t i = 0; keys[i] && lua_type(L, -1) == LUA_TSTRING; i++)
      known = known || strcmp(lua_tostring(L, -1), keys[i]) == 0;
    if (!known && why->len == 0) {
      strbuf_puts(why, "unknown key ");
      if (lua_type(L, -1) == LUA_TSTRING)
        policy__quote(why, lua_tostring(L, -1), lua_rawlen(L, -1));
      else
        strbuf_printf(why, "of type %s", luaL_typename(L, -1));
      strbuf_puts(why, " (an example has name, sample or notification, mode, route, must, "
                        "must_not)");
    }
  }
  ex->sample = policy_example_string(L, idx, "sample", why);
  ex->mode = policy_example_string(L, idx, "mode", why);
  ex->route = policy_example_string(L, idx, "route", why);
  policy_example_strings(L, idx, "must", &ex->must, &ex->nmust, why);
  policy_example_strings(L, idx, "must_not", &ex->must_not, &ex->nmust_not, why);
  lua_pushstring(L, "notification");
  int t = lua_rawget(L, idx);
  if (t == LUA_TTABLE) {
    msgpack_sbuffer_clear(&list->sb);
    strbuf_reset(&list->inner);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &list->sb, msgpack_sbuffer_write);
    if (policy_example_pack(L, -1, &pk, 0, &list->inner)) {
      ex->notification = xmemdupz(list->sb.data, list->sb.size);
      ex->notification_len = list->sb.size;
    } else if (why->len == 0) {
      strbuf_printf(why, "notification %s", strbuf_cstr(&list->inner));
    }
  } else if (t != LUA_TNIL && why->len == 0) {
    strbuf_printf(why, "notification is a %s, not a table", luaL_typename(L, -1));
  }
  lua_pop(L, 1);
  if (why->len == 0 && (ex->sample != NULL) == (ex->notification != NULL))
    strbuf_puts(why, "give it either a sample or a notification");
  if (why->len)
    ex->error = xstrdup(strbuf_cstr(why));
}

/* Runs inside luasandbox_call with the policy's table and the list (light
 * userdata): reads its examples. Raises a message for an examples field
 * that is not a table. */
static int
policy_examples_collect(lua_State *L)
{
  ExampleList *list = lua_touserdata(L, 2);
  lua_pushstring(L, "examples");
  int t = lua_rawget(L, 1);
  if (t == LUA_TNIL)
    return 0;
  if (t != LUA_TTABLE)
    return luaL_error(L, "field 'examples' is a %s, not a table of examples",
                      luaL_typename(L, -1));
  lua_Unsigned len = lua_rawlen(L, -1);
  list->ex = xcalloc(len ? len : 1, sizeof *list->ex);
  for (lua_Unsigned i = 1; i <= len; i++) {
    PolicyExample *ex = &list->ex[list->n++];
    char name[32];
    snprintf(name, sizeof name, "example %u", (unsigned)i);
    ex->name = xstrdup(name);
    lua_rawgeti(L, -1, (lua_Integer)i);
    policy_example_read(L, -1, ex, list);
    lua_pop(L, 1);
  }
  return 0;
}

/* See policy.h. */
int
policy_examples(Policy *p, PolicyExample **out, size_t *n, VigilError *err)
{
  ExampleList list = {NULL, 0, STRBUF_INIT, STRBUF_INIT, {0}};
  msgpack_sbuffer_init(&list.sb);
  lua_State *L = luasandbox_state(p->sb);
  int top = lua_gettop(L);
  *out = NULL;
  *n = 0;
  if (!lua_checkstack(L, 4)) {
    msgpack_sbuffer_destroy(&list.sb);
    return error_set(err, kErrInvalidParams, "policy %s: no room on the Lua stack", p->name);
  }
  lua_pushcfunction(L, policy_examples_collect);
  lua_rawgeti(L, LUA_REGISTRYINDEX, p->table_ref);
  lua_pushlightuserdata(L, &list);
  VigilError local = VIGIL_ERROR_INIT;
  int rc = luasandbox_call(p->sb, 2, 0, &local);
  lua_settop(L, top);
  strbuf_free(&list.why);
  strbuf_free(&list.inner);
  msgpack_sbuffer_destroy(&list.sb);
  if (rc != 0) {
    policy_examples_free(list.ex, list.n);
    return error_set(err, kErrInvalidParams, "policy %s: examples: %s", p->name,
                     policy__inner(&local));
  }
  *out = list.ex;
  *n = list.n;
  return 0;
}

/* See policy.h. */
void
policy_examples_free(PolicyExample *ex, size_t n)
{
  for (size_t i = 0; ex && i < n; i++) {
    free(ex[i].name);
    free(ex[i].sample);
    free(ex[i].notification);
    free(ex[i].mode);
    free(ex[i].route);
    free(ex[i].error);
    for (size_t k = 0; k < ex[i].nmust; k++)
      free(ex[i].must[k]);
    free(ex[i].must);
    for (size_t k = 0; k < ex[i].nmust_not; k++)
      free(ex[i].must_not[k]);
    free(ex[i].must_not);
  }
  free(ex);
}
