/*
 * Lua's pattern matching with a bound on its work. Lua's own string.find,
 * string.match, string.gmatch and string.gsub run inside one C call, where
 * the sandbox's instruction budget cannot reach, and a backtracking pattern
 * can make that call run for hours (string.find(("a"):rep(5000),
 * ".-.-.-.-b")). This is the same matcher (a copy of Lua 5.4's lstrlib.c
 * pattern code) with a step counter: past max_steps in one call it raises
 * "pattern too complex: step limit of N exceeded", and as it goes it hands
 * its steps to a charge function, so that many calls that each stay under
 * the limit still use up the caller's instruction budget.
 */
#ifndef VIGIL_LUAPATTERN_H
#define VIGIL_LUAPATTERN_H

#include <lua.h>
#include <stdint.h>

/* Steps one call of find/match/gsub (or one step of a gmatch iterator) may
 * take; a step is one byte of subject or pattern looked at, about the cost
 * of a VM instruction. */
#define LUAPATTERN_MAX_STEPS 10000000u

/* Steps handed to the charge function at a time. */
#define LUAPATTERN_CHARGE_STEP 4096u

/* Called with L and a number of steps every LUAPATTERN_CHARGE_STEP steps;
 * it may raise a Lua error (to stop the call), and must not return
 * otherwise abnormally. */
typedef void (*LuaPatternCharge)(lua_State *L, uint64_t steps);

/* Replaces find, match, gmatch and gsub in the table at index idx (the
 * string library, which is also the __index of the string metatable, so
 * s:find(...) takes the new ones too) with the bounded copies. max_steps 0
 * means LUAPATTERN_MAX_STEPS; charge may be NULL. Raises a Lua error only on
 * running out of memory, so call it protected. */
void luapattern_install(lua_State *L, int idx, uint64_t max_steps, LuaPatternCharge charge);

#endif
