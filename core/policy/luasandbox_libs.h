/*
 * The library whitelist of a Lua sandbox, internal to it (callers include
 * luasandbox.h): luasandbox_libs.c opens Lua's libraries that a sandbox
 * allows and wraps the ones whose C work must be charged; luasandbox.c,
 * which owns the state and its budget, calls it once per new state.
 */
#ifndef VIGIL_LUASANDBOX_LIBS_H
#define VIGIL_LUASANDBOX_LIBS_H

#include <lua.h>
#include <stddef.h>

/* Opens base, string, table, math and utf8 in L, removes, replaces and
 * wraps what luasandbox_libs.c's comment lists (all but xpcall, which
 * luasandbox.c replaces). Allocates, so it may raise a memory error: call it
 * under lua_pcall. */
void luasandbox_open_libs(lua_State *L);

/* Bytes the state may still allocate under its memory cap (luasandbox.c),
 * for a wrapper that must know whether a result can be made at all. */
size_t luasandbox_room(lua_State *L);

#endif
