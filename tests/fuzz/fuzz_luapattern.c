/*
 * libFuzzer harness for the bounded Lua pattern matcher (luapattern.c), the
 * copy of Lua's string.find/match/gmatch/gsub that policies run on process
 * text. Pattern and subject come from the input; one call of each function
 * runs under a small step bound (FUZZ_MAX_STEPS).
 *
 * Properties:
 *   - no crash, no memory error, no undefined behaviour (ASan, UBSan), and
 *     no call that runs long (libFuzzer's -timeout catches one that the
 *     bound does not stop);
 *   - never over its step bound: the steps one call hands to the charge
 *     function stay within FUZZ_MAX_STEPS (plus what a plain find is
 *     charged for the bytes it scans);
 *   - the same answers as Lua's own functions: whenever the bounded call
 *     ends without hitting the step limit, Lua 5.4's unbounded string
 *     library, run on the same arguments, returns the same values or raises
 *     the same error.
 *
 * Input: byte 0 chooses the function (bits 0-1: find, match, gmatch, gsub),
 * a plain find (bit 2), the init argument (bits 3-5) and gsub's replacement
 * (bits 6-7); byte 1 is the pattern's length (its low 6 bits); then the
 * pattern, then the subject.
 */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vendor/luapattern.h"
#include "base/strbuf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_STEPS 200000u
#define FUZZ_GMATCH_MAX 64

static lua_State *fuzz_L;
static int fuzz_orig = LUA_NOREF;    /* Lua's own find, match, gmatch, gsub */
static int fuzz_bounded = LUA_NOREF; /* the bounded copies */
static uint64_t fuzz_charged;        /* steps charged since the last reset */

static void
fuzz_charge(lua_State *L, uint64_t steps)
{
  (void)L;
  fuzz_charged += steps;
}

/* A table {find, match, gmatch, gsub} of the string library at idx. */
static int
fuzz_save_functions(lua_State *L, int idx)
{
  static const char *const names[] = {"find", "match", "gmatch", "gsub"};
  lua_createtable(L, 0, 4);
  for (size_t i = 0; i < 4; i++) {
    lua_getfield(L, idx, names[i]);
    lua_setfield(L, -2, names[i]);
  }
  return luaL_ref(L, LUA_REGISTRYINDEX);
}

static void
fuzz_init(void)
{
  if (fuzz_L != NULL)
    return;
  fuzz_L = luaL_newstate();
  if (fuzz_L == NULL)
    abort();
  luaL_requiref(fuzz_L, LUA_STRLIBNAME, luaopen_string, 1);
  int lib = lua_gettop(fuzz_L);
  fuzz_orig = fuzz_save_functions(fuzz_L, lib);
  luapattern_install(fuzz_L, lib, FUZZ_MAX_STEPS, fuzz_charge);
  fuzz_bounded = fuzz_save_functions(fuzz_L, lib);
  lua_settop(fuzz_L, 0);
}

/* Appends the values at the top of the stack from index base + 1 on, or
 * the error, to out, and pops them. */
static void
fuzz_describe(lua_State *L, int base, int status, StrBuf *out)
{
  strbuf_printf(out, "%s:", status == LUA_OK ? "ok" : "error");
  for (int i = base + 1; i <= lua_gettop(L); i++) {
    size_t len;
    const char *s;
    switch (lua_type(L, i)) {
    case LUA_TNUMBER:
      if (lua_isinteger(L, i))
        strbuf_printf(out, " i%lld", (long long)lua_tointeger(L, i));
      else
        strbuf_printf(out, " f%.17g", lua_tonumber(L, i));
      break;
    case LUA_TSTRING:
      s = lua_tolstring(L, i, &len);
      strbuf_printf(out, " s%zu:", len);
      strbuf_append(out, s, len);
      break;
    case LUA_TNIL:
      strbuf_puts(out, " nil");
      break;
    case LUA_TBOOLEAN:
      strbuf_puts(out, lua_toboolean(L, i) ? " true" : " false");
      break;
    default:
      strbuf_printf(out, " %s", lua_typename(L, lua_type(L, i)));
      break;
    }
  }
  lua_settop(L, base);
}

/* Pushes gsub's replacement number k. */
static void
fuzz_push_repl(lua_State *L, unsigned k)
{
  switch (k) {
  case 0:
    lua_pushliteral(L, "<%0>");
    break;
  case 1:
    lua_pushliteral(L, "%1%%");
    break;
  case 2:
    lua_pushliteral(L, "x");
    break;
  default:
    lua_createtable(L, 0, 2);
    lua_pushliteral(L, "A");
    lua_setfield(L, -2, "a");
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "b");
    break;
  }
}

/* Calls function op of the table ref with the input's arguments; appends
 * what it returned to out. Returns whether it hit the step limit. Checks
 * the steps charged against the bound. */
static bool
fuzz_call(int ref, unsigned op, unsigned flags, const char *pat, size_t plen, const char *subj,
          size_t slen, StrBuf *out)
{
  static const char *const names[] = {"find", "match", "gmatch", "gsub"};
  static const lua_Integer inits[] = {0, 1, 2, -1, -3, 5, 1000, -1000};
  lua_State *L = fuzz_L;
  int base = lua_gettop(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
  lua_getfield(L, -1, names[op]);
  lua_remove(L, -2);
  lua_pushlstring(L, subj, slen);
  lua_pushlstring(L, pat, plen);
  unsigned init = (flags >> 3) & 7;
  int nargs = 2;
  if (op == 3) {
    fuzz_push_repl(L, flags >> 6);
    nargs++;
    if (init != 0) {
      lua_pushinteger(L, init); /* gsub's 4th argument: at most init replacements */
      nargs++;
    }
  } else if (init != 0) {
    lua_pushinteger(L, inits[init]);
    nargs++;
    if (op == 0 && (flags & 4)) {
      lua_pushboolean(L, 1); /* plain */
      nargs++;
    }
  }
  uint64_t allowance = FUZZ_MAX_STEPS + (slen + plen) / 16 + 1;
  fuzz_charged = 0;
  int status = lua_pcall(L, nargs, op == 2 ? 1 : LUA_MULTRET, 0);
  bool limited = false;
  if (op == 2 && status == LUA_OK) {
    /* Call the iterator until it ends, FUZZ_GMATCH_MAX times at most; each
     * of its calls has a bound of its own. */
    int iter = lua_gettop(L);
    strbuf_puts(out, "gmatch:");
    for (int k = 0; k < FUZZ_GMATCH_MAX; k++) {
      if (fuzz_charged > allowance)
        abort();
      fuzz_charged = 0;
      lua_pushvalue(L, iter);
      int top = lua_gettop(L) - 1;
      status = lua_pcall(L, 0, LUA_MULTRET, 0);
      bool end = status == LUA_OK && (lua_gettop(L) == top || lua_isnil(L, top + 1));
      if (status != LUA_OK && strstr(lua_tostring(L, -1) ? lua_tostring(L, -1) : "", "step limit"))
        limited = true;
      fuzz_describe(L, top, status, out);
      if (end || status != LUA_OK)
        break;
    }
    lua_settop(L, base);
  } else {
    if (status != LUA_OK && lua_type(L, -1) == LUA_TSTRING &&
        strstr(lua_tostring(L, -1), "step limit"))
      limited = true;
    fuzz_describe(L, base, status, out);
  }
  if (fuzz_charged > allowance)
    abort();
  return limited;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 2)
    return 0;
  fuzz_init();
  unsigned flags = data[0];
  size_t plen = data[1] & 63;
  if (plen > size - 2)
    plen = size - 2;
  const char *pat = (const char *)data + 2;
  const char *subj = pat + plen;
  size_t slen = size - 2 - plen;
  unsigned op = flags & 3;

  StrBuf bounded = STRBUF_INIT, orig = STRBUF_INIT;
  bool limited = fuzz_call(fuzz_bounded, op, flags, pat, plen, subj, slen, &bounded);
  if (!limited) {
    fuzz_call(fuzz_orig, op, flags, pat, plen, subj, slen, &orig);
    if (bounded.len != orig.len ||
        memcmp(strbuf_cstr(&bounded), strbuf_cstr(&orig), orig.len) != 0) {
      fprintf(stderr, "bounded: %s\nlua:     %s\n", strbuf_cstr(&bounded), strbuf_cstr(&orig));
      abort();
    }
  }
  strbuf_free(&bounded);
  strbuf_free(&orig);
  lua_settop(fuzz_L, 0);
  return 0;
}
