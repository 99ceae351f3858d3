/*
 * The libraries of a Lua sandbox (see luasandbox.h): which of Lua's own are
 * opened, what is taken out of them, and the wrappers that make the C work
 * of the rest count against the instruction budget (luasandbox.c keeps the
 * budget itself, the state and the protected runs).
 *
 * What is taken away, and why:
 *   - io, os, package, debug, coroutine: never opened. Without package there
 *     is no require, and without debug nothing can reach the hook or the
 *     registry.
 *   - dofile, loadfile: read files. print: writes to stdout, which is the
 *     wire under `vigild --stdio`.
 *   - collectgarbage: "stop" would let one chunk leave the collector off for
 *     every later call of a long-lived state, which then runs out of memory
 *     for nothing; the allocator's emergency collection covers the rest.
 *   - string.dump: makes bytecode, and bytecode is never loaded anyway.
 *   - load: replaced by a wrapper that forces mode "t", because crafted
 *     bytecode can break the VM's memory safety.
 *   - setmetatable: replaced by a wrapper that refuses a metatable with a
 *     __gc field, because Lua runs finalizers with hooks off, so a __gc that
 *     loops would escape the instruction budget. (An object is only marked
 *     for finalization when its metatable already has __gc at setmetatable
 *     time, so checking there is enough.)
 *   - xpcall: replaced too, but in luasandbox.c, since its message handler
 *     is part of the budget's error paths.
 *
 * Work done inside a C function executes no VM instructions, so the count
 * hook cannot see it (luasandbox.c). Here it is charged before it runs:
 *   - string.find/match/gmatch/gsub are luapattern.c's bounded copies, which
 *     also stop one call past LUAPATTERN_MAX_STEPS steps, and charge each
 *     step as an instruction;
 *   - table.insert/remove/move/concat/sort and utf8.len/codepoint/offset are
 *     wrapped to charge, before they run, the elements or bytes they will
 *     touch (luasandbox_costly), so a call that would pass the budget never
 *     starts.
 */
#include "luasandbox_libs.h"

#include <lauxlib.h>
#include <lualib.h>
#include <stdint.h>

#include "luapattern.h"
#include "luasandbox.h"

/* Bytes that utf8.len/codepoint/offset decode per instruction charged. */
#define LUASANDBOX_UTF8_BYTES 4

/* What a wrapped C function (luasandbox_costly) is charged by. */
typedef enum {
  kCostInsert = 0, /* table.insert(t, pos, v): the elements moved up */
  kCostRemove,     /* table.remove(t, pos): the elements moved down */
  kCostMove,       /* table.move(a, f, e, ...): e - f + 1 */
  kCostConcat,     /* table.concat(t, sep, i, j): j - i + 1 */
  kCostSort,       /* table.sort(t): n log2 n */
  kCostBytes,      /* utf8.*(s, ...): the bytes of s */
} LuaSandboxCost;

/* Calls the original function a wrapper was made around (upvalue 1) with
 * the wrapper's arguments, and returns all its results: the tail of every
 * wrapper below. */
static int
luasandbox_call_original(lua_State *L)
{
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

/* #t as the table functions see it (respecting __len, which when it is Lua
 * runs under the budget), or 0 when t is not a table. */
static uint64_t
luasandbox_len(lua_State *L, int idx)
{
  if (lua_type(L, idx) != LUA_TTABLE)
    return 0;
  lua_Integer n = luaL_len(L, idx);
  return n > 0 ? (uint64_t)n : 0;
}

/* The span [f, e] as a count, without overflow; 0 when empty. */
static uint64_t
luasandbox_span(lua_Integer f, lua_Integer e)
{
  if (e < f)
    return 0;
  uint64_t n = (uint64_t)e - (uint64_t)f;
  return n == UINT64_MAX ? n : n + 1;
}

/* What the call on the stack will cost, read from its arguments without
 * raising anything the original would not (a bad argument costs 0 and is
 * left for the original to refuse). */
static uint64_t
luasandbox_cost(lua_State *L, LuaSandboxCost kind)
{
  int nargs = lua_gettop(L);
  switch (kind) {
  case kCostInsert: {
    if (nargs != 3 || !lua_isinteger(L, 2))
      return 1;
    uint64_t n = luasandbox_len(L, 1);
    lua_Integer pos = lua_tointeger(L, 2);
    return pos >= 1 && (uint64_t)pos <= n ? n - (uint64_t)pos + 1 : 1;
  }
  case kCostRemove: {
    if (nargs < 2 || !lua_isinteger(L, 2))
      return 1;
    uint64_t n = luasandbox_len(L, 1);
    lua_Integer pos = lua_tointeger(L, 2);
    return pos >= 1 && (uint64_t)pos <= n ? n - (uint64_t)pos + 1 : 1;
  }
  case kCostMove:
    if (!lua_isinteger(L, 2) || !lua_isinteger(L, 3))
      return 1;
    return luasandbox_span(lua_tointeger(L, 2), lua_tointeger(L, 3));
  case kCostConcat: {
    lua_Integer i = lua_isinteger(L, 3) ? lua_tointeger(L, 3) : 1;
    lua_Integer j;
    if (lua_isinteger(L, 4))
      j = lua_tointeger(L, 4);
    else {
      uint64_t n = luasandbox_len(L, 1);
      j = n > (uint64_t)LUA_MAXINTEGER ? LUA_MAXINTEGER : (lua_Integer)n;
    }
    return luasandbox_span(i, j);
  }
  case kCostSort: {
    uint64_t n = luasandbox_len(L, 1), log = 1;
    while (log < 64 && (n >> log) != 0)
      log++;
    return n > UINT64_MAX / log ? UINT64_MAX : n * log;
  }
  case kCostBytes: {
    size_t len = 0;
    if (lua_type(L, 1) == LUA_TSTRING)
      lua_tolstring(L, 1, &len);
    return 1 + len / LUASANDBOX_UTF8_BYTES;
  }
  }
  return 1;
}

/* A C library function that may do work proportional to its arguments:
 * charges that work to the budget first (raising the limit error if it
 * would pass it), then calls the original (upvalue 1). Upvalue 2 is the
 * LuaSandboxCost. */
static int
luasandbox_costly(lua_State *L)
{
  LuaSandboxCost kind = (LuaSandboxCost)lua_tointeger(L, lua_upvalueindex(2));
  luasandbox_charge(L, luasandbox_cost(L, kind));
  return luasandbox_call_original(L);
}

/* Wraps field `name` of the library table `lib` (a global) in
 * luasandbox_costly with the given cost. */
static void
luasandbox_wrap_costly(lua_State *L, const char *lib, const char *name, LuaSandboxCost kind)
{
  lua_getglobal(L, lib);
  lua_getfield(L, -1, name);
  lua_pushinteger(L, kind);
  lua_pushcclosure(L, luasandbox_costly, 2);
  lua_setfield(L, -2, name);
  lua_pop(L, 1);
}

/* Replaces base `load`: the original (upvalue 1) called with mode forced to
 * "t", so bytecode is refused whatever the caller asks. Other arguments pass
 * through unchanged, so a missing env means the sandbox's globals, as with
 * the original, and an explicit env is kept. */
static int
luasandbox_load(lua_State *L)
{
  if (lua_gettop(L) < 3)
    lua_settop(L, 3);
  lua_pushliteral(L, "t");
  lua_replace(L, 3);
  return luasandbox_call_original(L);
}

/* Replaces base `setmetatable`: refuses a metatable with a __gc field (file
 * comment), then calls the original (upvalue 1). */
static int
luasandbox_setmetatable(lua_State *L)
{
  if (lua_type(L, 2) == LUA_TTABLE) {
    lua_pushliteral(L, "__gc");
    int t = lua_rawget(L, 2);
    lua_pop(L, 1);
    if (t != LUA_TNIL)
      return luaL_error(L, "setmetatable: __gc metamethods are not allowed in the sandbox");
  }
  return luasandbox_call_original(L);
}

/* Replaces global `name` with the C closure fn, whose one upvalue is the
 * original function. */
static void
luasandbox_wrap(lua_State *L, const char *name, lua_CFunction fn)
{
  lua_getglobal(L, name);
  lua_pushcclosure(L, fn, 1);
  lua_setglobal(L, name);
}

/* See luasandbox_libs.h. */
void
luasandbox_open_libs(lua_State *L)
{
  static const luaL_Reg libs[] = {
    {LUA_GNAME, luaopen_base},         {LUA_STRLIBNAME, luaopen_string},
    {LUA_TABLIBNAME, luaopen_table},   {LUA_MATHLIBNAME, luaopen_math},
    {LUA_UTF8LIBNAME, luaopen_utf8},   {NULL, NULL},
  };
  for (const luaL_Reg *lib = libs; lib->func; lib++) {
    luaL_requiref(L, lib->name, lib->func, 1);
    lua_pop(L, 1);
  }
  static const char *const removed[] = {"dofile", "loadfile", "print", "collectgarbage", NULL};
  for (const char *const *name = removed; *name; name++) {
    lua_pushnil(L);
    lua_setglobal(L, *name);
  }
  luasandbox_wrap(L, "load", luasandbox_load);
  luasandbox_wrap(L, "setmetatable", luasandbox_setmetatable);

  lua_getglobal(L, LUA_STRLIBNAME);
  lua_pushnil(L);
  lua_setfield(L, -2, "dump");
  luapattern_install(L, -1, LUAPATTERN_MAX_STEPS, luasandbox_charge);
  lua_pop(L, 1);

  static const struct {
    const char *lib, *name;
    LuaSandboxCost kind;
  } costly[] = {
    {LUA_TABLIBNAME, "insert", kCostInsert}, {LUA_TABLIBNAME, "remove", kCostRemove},
    {LUA_TABLIBNAME, "move", kCostMove},     {LUA_TABLIBNAME, "concat", kCostConcat},
    {LUA_TABLIBNAME, "sort", kCostSort},     {LUA_UTF8LIBNAME, "len", kCostBytes},
    {LUA_UTF8LIBNAME, "codepoint", kCostBytes}, {LUA_UTF8LIBNAME, "offset", kCostBytes},
  };
  for (size_t i = 0; i < sizeof costly / sizeof costly[0]; i++)
    luasandbox_wrap_costly(L, costly[i].lib, costly[i].name, costly[i].kind);
}
