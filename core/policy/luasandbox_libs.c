/*
 * The libraries of a Lua sandbox (see luasandbox.h): which of Lua's own are
 * opened, what is taken out of them, and how the work of every C function
 * left in them is charged to the instruction budget (luasandbox.c keeps the
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
 *   - load: replaced (luasandbox_load_lua), because crafted bytecode can
 *     break the VM's memory safety (text only, whatever mode is asked), and
 *     to charge the compiling a piece at a time.
 *   - setmetatable refuses a metatable with a __gc field, because Lua runs
 *     finalizers with hooks off, so a __gc that loops would escape the
 *     instruction budget. (An object is only marked for finalization when
 *     its metatable already has __gc at setmetatable time, so checking
 *     there is enough.)
 *   - xpcall: replaced too, but in luasandbox.c, since its message handler
 *     is part of the budget's error paths.
 *
 * Charging. Work done inside a C function executes no VM instructions, so
 * the count hook cannot see it (luasandbox.c). Every C function a sandbox
 * can reach is therefore wrapped (luasandbox_charged_call: its entry in
 * luasandbox_charged[] says how) or replaced, and charged before it works:
 *   - every call costs 1 plus 1 per argument (a call with many arguments
 *     moves them all), and the charge reads the clock, so a loop of calls
 *     is stopped by the wall-clock limit within one call whatever the call
 *     costs;
 *   - a string given where the function takes a number costs its bytes
 *     (Lua converts it, and a numeral of megabytes takes milliseconds);
 *   - then what the entry's LuaSandboxCost names: bytes looked at one by one
 *     at LUASANDBOX_SCAN_BYTES a charged instruction, elements moved or
 *     pushed at one each. Bytes copied in bulk (sub, concat, the result of
 *     rep or pack) are the allocator's to charge, and the pattern functions
 *     charge their steps as they go (luapattern.c).
 * The wrapper calls the original C function in its own frame (it does not
 * lua_call it), so error messages read as Lua's own ("test:1: bad argument
 * #1 to 'upper'"). The functions that return an iterator (pairs, ipairs,
 * utf8.codes) have it swapped for its wrapped self. A C function of a
 * library that the table does not list (a Lua built with other compat
 * options) is still wrapped, with the most cautious entry.
 *
 * The audit: every C function a sandbox can reach and what bounds it.
 * "n args" is the 1 + 1 per argument every call costs; "num" is the
 * numeric-string charge above.
 *
 *   base
 *     assert, error, getmetatable, rawget, rawset, rawlen, type, tostring,
 *     pcall, warn (a no-op: no warning function is set)
 *                             O(1) beyond n args (tostring of a number is
 *                             short; __tostring, __index, __name run as
 *                             Lua, counted by the hook, or as a wrapped
 *                             function); error's level walks at most the
 *                             stack, which the memory cap bounds
 *     rawequal                n args, num (comparing two long strings
 *                             reads them)
 *     select                  n args (it returns at most its arguments), num
 *     next, and pairs' iterator
 *                             n args; skips the empty slots after the key,
 *                             bounded by the table's size (the memory cap:
 *                             about a million slots, a millisecond)
 *     pairs, ipairs           n args; ipairs' iterator n args, num
 *     setmetatable            n args, and the __gc check
 *     tonumber                n args, num (the base), and the bytes of the
 *                             string it converts
 *     load                    replaced: the chunk is handed to the parser
 *                             LUASANDBOX_LOAD_PIECE bytes at a time, each
 *                             charged, and so is every piece a reader
 *                             function returns (split the same way); the
 *                             parse's own cost can grow faster than its text
 *                             (names looked up through deep nesting), which
 *                             the clock, read at each piece, bounds
 *     xpcall                  replaced in luasandbox.c: n args
 *   string (and its metatable)
 *     len, sub                n args, num; sub's copy is the allocator's
 *     upper, lower, reverse   n args, the bytes of the string
 *     rep                     n args, num, one per LUASANDBOX_SCAN_BYTES
 *                             copies Lua makes (rep("", math.maxinteger)
 *                             makes that many copies of nothing and passes
 *                             any budget at once); a result the memory cap
 *                             cannot hold fails on memory first
 *     byte                    n args, num, the values it pushes
 *     char                    n args, num (one byte per argument)
 *     format                  n args, the format's bytes, and the bytes of
 *                             every string argument an item reads one by
 *                             one (a %s with flags, width or precision, a
 *                             number item given a string; %q at
 *                             LUASANDBOX_QUOTE_COST a byte); widths and
 *                             precisions are at most 99 (Lua checks), so an
 *                             item's own output is bounded; a plain %s is a
 *                             copy, the allocator's
 *     pack                    n args, the format's bytes and every string
 *                             argument's (packed or converted); padding and
 *                             the result are the allocator's
 *     packsize                n args, the format's bytes
 *     unpack                  n args, num, the format's bytes (one result at
 *                             most per option), and the data's when the
 *                             format has a 'z' (it scans for the zero)
 *     find, match, gmatch, gsub
 *                             n args, num (init, max), and every pattern
 *                             step, charged as it goes, with a bound per
 *                             call (luapattern.c)
 *     __add, __sub, __mul, __mod, __pow, __div, __idiv, __unm
 *                             n args, num (arithmetic on strings converts
 *                             them)
 *   table
 *     insert, remove          n args, num, the elements moved
 *     move                    n args, num, e - f + 1
 *     concat                  n args, num, j - i + 1 (the copies are the
 *                             allocator's)
 *     unpack                  n args, num, the values it pushes
 *     pack                    n args (one per element)
 *     sort                    n args, n log2 n comparisons, and, without a
 *                             comparator of the caller's, one of ours that
 *                             charges the bytes of two long strings it
 *                             compares (strings of megabytes would take a
 *                             millisecond a comparison)
 *   math
 *     every function          n args, num
 *     max, min                n args, and replaced (the same code) to
 *                             charge each comparison of two long strings
 *                             as it is made: in 5.4.4 they compare with <,
 *                             strings too
 *     type                    n args
 *   utf8
 *     len, codepoint, offset  n args, num, the bytes of the string
 *     char                    n args, num, LUASANDBOX_UTF8_CHAR_COST per
 *                             argument (each is formatted on its own)
 *     codes                   n args; its iterator n args, num, and the
 *                             continuation bytes it skips, charged as it
 *                             counts them
 *   vigil (policy_lib.c), require: charge themselves (see there).
 *
 * What no charge sees is one VM instruction that works on a long string:
 * ==, < or <= of two strings of megabytes, a numeric for loop whose limit
 * is such a string, a vararg call of a huge number of values. Each is
 * bounded by the memory cap (a few milliseconds), and the hook reads the
 * clock every LUASANDBOX_HOOK_STEP instructions.
 */
#include "policy/luasandbox_libs.h"

#include <lauxlib.h>
#include <lualib.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "vendor/luapattern.h"
#include "policy/luasandbox.h"

/* The most values one call can push: Lua's own stack limit (LUAI_MAXSTACK
 * in luaconf.h); a range longer than this is refused by the function before
 * it does any work, so it is not charged. */
#define LUASANDBOX_MAX_RESULTS 1000000

/* Strings up to this long compare in about one instruction, which the call
 * already pays (sort's n log2 n, max's one per argument); longer ones are
 * charged their bytes, comparison by comparison. */
#define LUASANDBOX_COMPARE_FREE_BYTES 64

/* Instructions charged per byte string.format's %q quotes: it writes each
 * control character with snprintf, some 30 ns. */
#define LUASANDBOX_QUOTE_COST 2

/* Instructions charged per argument of utf8.char, which formats each one
 * with lua_pushfstring and appends it: some 100 ns. */
#define LUASANDBOX_UTF8_CHAR_COST 16

/* Bytes utf8.codes' iterator counts between two charges. */
#define LUASANDBOX_CODES_BLOCK 65536

/* The stack slot where load keeps the last piece a reader function
 * returned (after its four arguments, as Lua's load does). */
#define LUASANDBOX_LOAD_SLOT 5

/* What a wrapped C function is charged by, besides 1 + 1 per argument and
 * the numeric strings (file comment). */
typedef enum {
  kCostCall = 0,  /* nothing more */
  kCostText,      /* the bytes of argument 1, looked at one by one */
  kCostRep,       /* string.rep: the copies it makes */
  kCostByte,      /* string.byte: the values it pushes */
  kCostFormat,    /* string.format: the format, the strings its items read */
  kCostPack,      /* string.pack: the format and every string argument */
  kCostStrUnpack, /* string.unpack: the format, the data if it has a 'z' */
  kCostInsert,    /* table.insert(t, pos, v): the elements moved up */
  kCostRemove,    /* table.remove(t, pos): the elements moved down */
  kCostMove,      /* table.move(a, f, e, ...): e - f + 1 */
  kCostConcat,    /* table.concat(t, sep, i, j): j - i + 1 */
  kCostSort,      /* table.sort(t): n log2 n */
  kCostUnpack,    /* table.unpack(t, i, j): j - i + 1 */
  kCostCodes,     /* utf8.codes' iterator: the continuation bytes skipped */
  kCostUtf8Char,  /* utf8.char: LUASANDBOX_UTF8_CHAR_COST per argument */
} LuaSandboxCost;

/* Argument i as a bit of LuaSandboxCharged.numeric; every argument. */
#define NUM(i) (1u << ((i) - 1))
#define NUM_ALL UINT32_MAX

/* Where a wrapped function lives: a global table, the base library's
 * globals, the string metatable, or nowhere (an iterator another function
 * returns). */
#define LIB_BASE "_G"
#define LIB_STRING_MT "string metatable"
#define LIB_ITERATOR "iterator"

/* How one C function is charged (file comment). */
typedef struct {
  const char *lib, *name;
  LuaSandboxCost cost;
  uint32_t numeric;         /* the arguments Lua converts to numbers */
  bool iterator;            /* returns an iterator to swap for its wrapper */
  lua_CFunction before;     /* run after the charge, before the original */
  lua_CFunction instead;    /* run in place of the original, if not NULL */
} LuaSandboxCharged;

static int luasandbox_refuse_gc(lua_State *L);
static int luasandbox_sort_prepare(lua_State *L);
static int luasandbox_math_max(lua_State *L);
static int luasandbox_math_min(lua_State *L);

/* Every C function the libraries give a sandbox; the last entry is the
 * cautious one for a function not listed. */
static const LuaSandboxCharged luasandbox_charged[] = {
  {LIB_BASE, "assert", kCostCall, 0, false, NULL, NULL},
  {LIB_BASE, "error", kCostCall, NUM(2), false, NULL, NULL},
  {LIB_BASE, "getmetatable", kCostCall, 0, false, NULL, NULL},
  {LIB_BASE, "ipairs", kCostCall, 0, true, NULL, NULL},
  {LIB_BASE, "next", kCostCall, 0, false, NULL, NULL},
  {LIB_BASE, "pairs", kCostCall, 0, true, NULL, NULL},
  {LIB_BASE, "pcall", kCostCall, 0, false, NULL, NULL},
  {LIB_BASE, "rawequal", kCostCall, NUM_ALL, false, NULL, NULL},
  {LIB_BASE, "rawget", kCostCall, 0, false, NULL, NULL},
  {LIB_BASE, "rawlen", kCostCall, 0, false, NULL, NULL},
  {LIB_BASE, "rawset", kCostCall, 0, false, NULL, NULL},
  {LIB_BASE, "select", kCostCall, NUM(1), false, NULL, NULL},
  {LIB_BASE, "setmetatable", kCostCall, 0, false, luasandbox_refuse_gc, NULL},
  {LIB_BASE, "tonumber", kCostText, NUM(2), false, NULL, NULL},
  {LIB_BASE, "tostring", kCostCall, 0, false, NULL, NULL},
  {LIB_BASE, "type", kCostCall, 0, false, NULL, NULL},
  {LIB_BASE, "warn", kCostCall, 0, false, NULL, NULL},
  {LIB_BASE, "xpcall", kCostCall, 0, false, NULL, NULL}, /* replaced by luasandbox.c */
  {LIB_ITERATOR, "ipairs", kCostCall, NUM(2), false, NULL, NULL},
  {LIB_ITERATOR, "utf8.codes", kCostCodes, NUM(2), false, NULL, NULL},
  {LUA_STRLIBNAME, "byte", kCostByte, NUM(2) | NUM(3), false, NULL, NULL},
  {LUA_STRLIBNAME, "char", kCostCall, NUM_ALL, false, NULL, NULL},
  {LUA_STRLIBNAME, "find", kCostCall, NUM(3), false, NULL, NULL},
  {LUA_STRLIBNAME, "format", kCostFormat, 0, false, NULL, NULL},
  {LUA_STRLIBNAME, "gmatch", kCostCall, NUM(3), false, NULL, NULL},
  {LUA_STRLIBNAME, "gsub", kCostCall, NUM(4), false, NULL, NULL},
  {LUA_STRLIBNAME, "len", kCostCall, 0, false, NULL, NULL},
  {LUA_STRLIBNAME, "lower", kCostText, 0, false, NULL, NULL},
  {LUA_STRLIBNAME, "match", kCostCall, NUM(3), false, NULL, NULL},
  {LUA_STRLIBNAME, "pack", kCostPack, 0, false, NULL, NULL},
  {LUA_STRLIBNAME, "packsize", kCostText, 0, false, NULL, NULL},
  {LUA_STRLIBNAME, "rep", kCostRep, NUM(2), false, NULL, NULL},
  {LUA_STRLIBNAME, "reverse", kCostText, 0, false, NULL, NULL},
  {LUA_STRLIBNAME, "sub", kCostCall, NUM(2) | NUM(3), false, NULL, NULL},
  {LUA_STRLIBNAME, "unpack", kCostStrUnpack, NUM(3), false, NULL, NULL},
  {LUA_STRLIBNAME, "upper", kCostText, 0, false, NULL, NULL},
  {LIB_STRING_MT, "__add", kCostCall, NUM_ALL, false, NULL, NULL},
  {LIB_STRING_MT, "__sub", kCostCall, NUM_ALL, false, NULL, NULL},
  {LIB_STRING_MT, "__mul", kCostCall, NUM_ALL, false, NULL, NULL},
  {LIB_STRING_MT, "__mod", kCostCall, NUM_ALL, false, NULL, NULL},
  {LIB_STRING_MT, "__pow", kCostCall, NUM_ALL, false, NULL, NULL},
  {LIB_STRING_MT, "__div", kCostCall, NUM_ALL, false, NULL, NULL},
  {LIB_STRING_MT, "__idiv", kCostCall, NUM_ALL, false, NULL, NULL},
  {LIB_STRING_MT, "__unm", kCostCall, NUM_ALL, false, NULL, NULL},
  {LUA_TABLIBNAME, "concat", kCostConcat, NUM(3) | NUM(4), false, NULL, NULL},
  {LUA_TABLIBNAME, "insert", kCostInsert, NUM(2), false, NULL, NULL},
  {LUA_TABLIBNAME, "move", kCostMove, NUM(2) | NUM(3) | NUM(4), false, NULL, NULL},
  {LUA_TABLIBNAME, "pack", kCostCall, 0, false, NULL, NULL},
  {LUA_TABLIBNAME, "remove", kCostRemove, NUM(2), false, NULL, NULL},
  {LUA_TABLIBNAME, "sort", kCostSort, 0, false, luasandbox_sort_prepare, NULL},
  {LUA_TABLIBNAME, "unpack", kCostUnpack, NUM(2) | NUM(3), false, NULL, NULL},
  {LUA_MATHLIBNAME, "max", kCostCall, 0, false, NULL, luasandbox_math_max},
  {LUA_MATHLIBNAME, "min", kCostCall, 0, false, NULL, luasandbox_math_min},
  {LUA_MATHLIBNAME, "type", kCostCall, 0, false, NULL, NULL},
  /* Every other math function (abs ... ult, and with LUA_COMPAT_MATHLIB, as
   * Debian builds Lua, atan2, cosh, frexp, ldexp, log10, pow, sinh, tanh)
   * takes numbers only: the cautious last entry is exactly theirs. */
  {LUA_UTF8LIBNAME, "char", kCostUtf8Char, NUM_ALL, false, NULL, NULL},
  {LUA_UTF8LIBNAME, "codepoint", kCostText, NUM(2) | NUM(3), false, NULL, NULL},
  {LUA_UTF8LIBNAME, "codes", kCostCall, 0, true, NULL, NULL},
  {LUA_UTF8LIBNAME, "len", kCostText, NUM(2) | NUM(3), false, NULL, NULL},
  {LUA_UTF8LIBNAME, "offset", kCostText, NUM(2) | NUM(3), false, NULL, NULL},
  {NULL, NULL, kCostCall, NUM_ALL, false, NULL, NULL},
};

#define LUASANDBOX_NCHARGED (sizeof luasandbox_charged / sizeof luasandbox_charged[0])

/* Registry key (its address) of the table that maps an original C function
 * to its wrapper, for swapping returned iterators. */
static const char luasandbox_wrappers_key = 'W';

/* The length of the string at idx, 0 for anything else (numbers included:
 * their text is short). */
static size_t
luasandbox_strlen(lua_State *L, int idx)
{
  return lua_type(L, idx) == LUA_TSTRING ? lua_rawlen(L, idx) : 0;
}

/* Argument idx as an integer, as luaL_optinteger would read it, without
 * raising anything: def when it is absent or nil, and *ok false when it is
 * no integer (the original then refuses it, having done no work). A string
 * is converted on a copy (its bytes are charged with the numeric ones). */
static lua_Integer
luasandbox_intarg(lua_State *L, int idx, lua_Integer def, bool *ok)
{
  int t = lua_type(L, idx);
  if (t == LUA_TNONE || t == LUA_TNIL)
    return def;
  int isint = 0;
  lua_Integer v = 0;
  if (t == LUA_TNUMBER) {
    v = lua_tointegerx(L, idx, &isint);
  } else if (t == LUA_TSTRING) {
    size_t len;
    const char *s = lua_tolstring(L, idx, &len);
    if (lua_stringtonumber(L, s) == len + 1) {
      v = lua_tointegerx(L, -1, &isint);
      lua_pop(L, 1);
    }
  }
  if (!isint)
    *ok = false;
  return v;
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

/* The length of the range of the table at 1 that table.concat and
 * table.unpack read: from argument `first` (1 when absent) to the next one
 * (#t when absent, asked only then, as they do); 0 when either is no
 * integer. */
static uint64_t
luasandbox_table_range(lua_State *L, int first)
{
  bool ok = true;
  lua_Integer i = luasandbox_intarg(L, first, 1, &ok);
  lua_Integer j;
  if (lua_isnoneornil(L, first + 1)) {
    uint64_t n = luasandbox_len(L, 1);
    j = n > (uint64_t)LUA_MAXINTEGER ? LUA_MAXINTEGER : (lua_Integer)n;
  } else {
    j = luasandbox_intarg(L, first + 1, 0, &ok);
  }
  return ok ? luasandbox_span(i, j) : 0;
}

/* A span of values a function would push: 0 when it is longer than any
 * call can push, since the function then refuses it before any work. */
static uint64_t
luasandbox_pushed(uint64_t span)
{
  return span > LUASANDBOX_MAX_RESULTS ? 0 : span;
}

/* string.byte's range [i, j] of a string of len bytes, as lstrlib.c's
 * posrelatI and getendpos clip it, as a count. */
static uint64_t
luasandbox_byte_span(lua_Integer i, lua_Integer j, size_t len)
{
  lua_Integer l = (lua_Integer)len;
  lua_Integer posi = i > 0 ? i : i == 0 ? 1 : i < -l ? 1 : l + i + 1;
  lua_Integer pose = j > l ? l : j >= 0 ? j : j < -l ? 0 : l + j + 1;
  return luasandbox_span(posi, pose);
}

/* What string.format costs beyond its arguments: its format and the string
 * argument of every item other than a plain %s (which it copies whole) read
 * one by one, and for %q LUASANDBOX_QUOTE_COST a byte. The items are found
 * as lstrlib.c's str_format finds them. */
static uint64_t
luasandbox_format_cost(lua_State *L)
{
  size_t flen;
  const char *fmt = lua_tolstring(L, 1, &flen);
  if (fmt == NULL)
    return 0;
  uint64_t bytes = flen, quoted = 0;
  int nargs = lua_gettop(L), arg = 1;
  for (size_t i = 0; i < flen; i++) {
    if (fmt[i] != '%')
      continue;
    if (++i < flen && fmt[i] == '%')
      continue;
    size_t spec = strspn(fmt + i, "-+#0 123456789.");
    i += spec;
    char conv = i < flen ? fmt[i] : '\0';
    if (++arg > nargs)
      break;
    if (conv == 'q')
      quoted += luasandbox_strlen(L, arg);
    else if (spec > 0 || conv != 's')
      bytes += luasandbox_strlen(L, arg);
  }
  return bytes / LUASANDBOX_SCAN_BYTES + quoted * LUASANDBOX_QUOTE_COST;
}

/* Counts the continuation bytes utf8.codes' iterator will skip (from the
 * position in argument 2 of the string in argument 1), charging each block
 * of them as it counts, and returns the bytes not charged yet. */
static uint64_t
luasandbox_codes_skip(lua_State *L)
{
  size_t len;
  const char *s = lua_type(L, 1) == LUA_TSTRING ? lua_tolstring(L, 1, &len) : NULL;
  bool ok = true;
  lua_Unsigned n = (lua_Unsigned)luasandbox_intarg(L, 2, 0, &ok);
  if (s == NULL || !ok || n >= len)
    return 0;
  uint64_t block = 0;
  while (n < len && ((unsigned char)s[n] & 0xC0) == 0x80) {
    n++;
    if (++block == LUASANDBOX_CODES_BLOCK) {
      luasandbox_charge_bytes(L, block);
      block = 0;
    }
  }
  return block;
}

/* string.rep's copies: one instruction per LUASANDBOX_SCAN_BYTES of them
 * (they are what its loop does, whatever their size), or nothing when the
 * result cannot be made at all (too large, or over the memory the state
 * has left), since then rep fails before copying anything. */
static uint64_t
luasandbox_rep_copies(lua_State *L)
{
  bool ok = true;
  lua_Integer n = luasandbox_intarg(L, 2, 0, &ok);
  if (!ok || n <= 0)
    return 0;
  uint64_t piece = (uint64_t)luasandbox_strlen(L, 1) + luasandbox_strlen(L, 3);
  if (piece > 0 && (piece > SIZE_MAX / (uint64_t)n ||
                    piece * (uint64_t)n > luasandbox_room(L)))
    return 0;
  return (uint64_t)n / LUASANDBOX_SCAN_BYTES;
}

/* What calling the function costs before its own work: 1, 1 per argument,
 * and the bytes of the strings it is given where it takes a number (file
 * comment), which the cost of its work may convert to read them. */
static uint64_t
luasandbox_call_cost(lua_State *L, const LuaSandboxCharged *c)
{
  int nargs = lua_gettop(L);
  uint64_t bytes = 0;
  for (int i = 1; i <= nargs; i++)
    if (c->numeric == NUM_ALL || (i <= 32 && (c->numeric & NUM(i))))
      bytes += luasandbox_strlen(L, i);
  return 1 + (uint64_t)nargs + bytes / LUASANDBOX_SCAN_BYTES;
}

/* What the function's work will cost (its entry's LuaSandboxCost), read
 * from its arguments without raising anything the original would not (a
 * bad argument costs nothing and is left for the original to refuse). */
static uint64_t
luasandbox_work_cost(lua_State *L, const LuaSandboxCharged *c)
{
  int nargs = lua_gettop(L);
  uint64_t cost = 0, bytes = 0;
  bool ok = true;
  switch (c->cost) {
  case kCostCall:
    break;
  case kCostText:
    bytes += luasandbox_strlen(L, 1);
    break;
  case kCostRep:
    cost += luasandbox_rep_copies(L);
    break;
  case kCostByte: {
    lua_Integer i = luasandbox_intarg(L, 2, 1, &ok);
    lua_Integer j = luasandbox_intarg(L, 3, i, &ok);
    if (ok)
      cost += luasandbox_pushed(luasandbox_byte_span(i, j, luasandbox_strlen(L, 1)));
    break;
  }
  case kCostFormat:
    cost += luasandbox_format_cost(L);
    break;
  case kCostPack:
    for (int i = 1; i <= nargs; i++)
      bytes += luasandbox_strlen(L, i);
    break;
  case kCostStrUnpack: {
    size_t flen = luasandbox_strlen(L, 1);
    bytes += flen;
    if (flen > 0 && memchr(lua_tostring(L, 1), 'z', flen) != NULL)
      bytes += luasandbox_strlen(L, 2);
    break;
  }
  case kCostInsert:
  case kCostRemove: {
    if (c->cost == kCostInsert ? nargs != 3 : nargs < 2)
      break;
    lua_Integer pos = luasandbox_intarg(L, 2, 0, &ok);
    uint64_t n = luasandbox_len(L, 1);
    if (ok && pos >= 1 && (uint64_t)pos <= n)
      cost += n - (uint64_t)pos + 1;
    break;
  }
  case kCostMove: {
    lua_Integer f = luasandbox_intarg(L, 2, 0, &ok);
    lua_Integer e = luasandbox_intarg(L, 3, 0, &ok);
    if (ok)
      cost += luasandbox_span(f, e);
    break;
  }
  case kCostConcat:
    cost += luasandbox_table_range(L, 3);
    break;
  case kCostSort: {
    uint64_t n = luasandbox_len(L, 1), log = 1;
    while (log < 64 && (n >> log) != 0)
      log++;
    cost += n > UINT64_MAX / log ? UINT64_MAX : n * log;
    break;
  }
  case kCostUnpack:
    cost += luasandbox_pushed(luasandbox_table_range(L, 2));
    break;
  case kCostCodes:
    bytes += luasandbox_codes_skip(L);
    break;
  case kCostUtf8Char:
    cost += (uint64_t)nargs * LUASANDBOX_UTF8_CHAR_COST;
    break;
  }
  uint64_t scan = bytes / LUASANDBOX_SCAN_BYTES;
  return cost > UINT64_MAX - scan ? UINT64_MAX : cost + scan;
}

/* When the function just called returned an iterator (its first result, a
 * C function) that has a wrapper, puts the wrapper in its place. */
static void
luasandbox_swap_iterator(lua_State *L, int nresults)
{
  int idx = lua_gettop(L) - nresults + 1;
  if (nresults < 1 || !lua_iscfunction(L, idx))
    return;
  luaL_checkstack(L, 2, NULL);
  lua_rawgetp(L, LUA_REGISTRYINDEX, &luasandbox_wrappers_key);
  lua_pushvalue(L, idx);
  if (lua_rawget(L, -2) != LUA_TNIL)
    lua_replace(L, idx);
  else
    lua_pop(L, 1);
  lua_pop(L, 1);
}

/* The body of every wrapper (file comment): the original's own upvalues
 * come first (math.random's state, the pattern functions' bounds), then the
 * original (at `first`) and its entry in luasandbox_charged[]. Charges the
 * call, then its work, runs the entry's `before`, and calls the original
 * (or the entry's `instead`) in this frame. */
static int
luasandbox_charged_call(lua_State *L, int first)
{
  const LuaSandboxCharged *c =
      &luasandbox_charged[lua_tointeger(L, lua_upvalueindex(first + 1))];
  luasandbox_charge(L, luasandbox_call_cost(L, c));
  if (c->cost != kCostCall) {
    uint64_t work = luasandbox_work_cost(L, c);
    if (work > 0)
      luasandbox_charge(L, work);
  }
  if (c->before != NULL)
    c->before(L);
  lua_CFunction f = c->instead ? c->instead : lua_tocfunction(L, lua_upvalueindex(first));
  int nresults = f(L);
  if (c->iterator)
    luasandbox_swap_iterator(L, nresults);
  return nresults;
}

/* Wrappers of originals with no upvalue, and with one. */
static int
luasandbox_charged0(lua_State *L)
{
  return luasandbox_charged_call(L, 1);
}

static int
luasandbox_charged1(lua_State *L)
{
  return luasandbox_charged_call(L, 2);
}

/* setmetatable's `before`: refuses a metatable with a __gc field (file
 * comment). */
static int
luasandbox_refuse_gc(lua_State *L)
{
  if (lua_type(L, 2) == LUA_TTABLE) {
    lua_pushliteral(L, "__gc");
    int t = lua_rawget(L, 2);
    lua_pop(L, 1);
    if (t != LUA_TNIL)
      return luaL_error(L, "setmetatable: __gc metamethods are not allowed in the sandbox");
  }
  return 0;
}

/* Charges a comparison of the values at a and b when both are strings
 * longer than LUASANDBOX_COMPARE_FREE_BYTES: the bytes it may read. */
static void
luasandbox_charge_compare(lua_State *L, int a, int b)
{
  size_t la = luasandbox_strlen(L, a), lb = luasandbox_strlen(L, b);
  size_t shorter = la < lb ? la : lb;
  if (shorter > LUASANDBOX_COMPARE_FREE_BYTES)
    luasandbox_charge_bytes(L, shorter);
}

/* The comparator table.sort gets when the caller gives none: what sort
 * would do itself (a < b, metamethods included), with the comparison
 * charged first. */
static int
luasandbox_sort_less(lua_State *L)
{
  luasandbox_charge_compare(L, 1, 2);
  lua_pushboolean(L, lua_compare(L, 1, 2, LUA_OPLT));
  return 1;
}

/* math.max and math.min as lmathlib.c has them (in Lua 5.4.4 they compare
 * with <, so strings too), each comparison charged as it is made. */
static int
luasandbox_math_extreme(lua_State *L, bool max)
{
  int n = lua_gettop(L);
  int best = 1;
  luaL_argcheck(L, n >= 1, 1, "value expected");
  for (int i = 2; i <= n; i++) {
    luasandbox_charge_compare(L, best, i);
    if (max ? lua_compare(L, best, i, LUA_OPLT) : lua_compare(L, i, best, LUA_OPLT))
      best = i;
  }
  lua_pushvalue(L, best);
  return 1;
}

static int
luasandbox_math_max(lua_State *L)
{
  return luasandbox_math_extreme(L, true);
}

static int
luasandbox_math_min(lua_State *L)
{
  return luasandbox_math_extreme(L, false);
}

/* sort's `before`: gives it luasandbox_sort_less when it has no comparator
 * (without a table it is left to fail as it would). */
static int
luasandbox_sort_prepare(lua_State *L)
{
  if (lua_type(L, 1) == LUA_TTABLE && lua_isnoneornil(L, 2)) {
    lua_settop(L, 1);
    lua_pushcfunction(L, luasandbox_sort_less);
  }
  return 0;
}

/* The entry for lib.name, or the cautious last one. */
static size_t
luasandbox_entry(const char *lib, const char *name)
{
  for (size_t i = 0; i + 1 < LUASANDBOX_NCHARGED; i++)
    if (strcmp(luasandbox_charged[i].lib, lib) == 0 &&
        strcmp(luasandbox_charged[i].name, name) == 0)
      return i;
  return LUASANDBOX_NCHARGED - 1;
}

/* Replaces the C function at the top with its wrapper for entry `entry`,
 * and records original -> wrapper for luasandbox_swap_iterator. */
static void
luasandbox_wrap_top(lua_State *L, size_t entry)
{
  int fn = lua_gettop(L);
  int nup = 0;
  while (lua_getupvalue(L, fn, nup + 1) != NULL)
    nup++; /* each one pushed: the first upvalues of the wrapper */
  if (nup > 1)
    luaL_error(L, "cannot wrap %s.%s: %d upvalues", luasandbox_charged[entry].lib,
               luasandbox_charged[entry].name, nup);
  lua_pushvalue(L, fn);
  lua_pushinteger(L, (lua_Integer)entry);
  lua_pushcclosure(L, nup == 0 ? luasandbox_charged0 : luasandbox_charged1, nup + 2);
  lua_rawgetp(L, LUA_REGISTRYINDEX, &luasandbox_wrappers_key);
  lua_pushvalue(L, fn);
  lua_pushvalue(L, -3);
  lua_rawset(L, -3);
  lua_pop(L, 1);
  lua_replace(L, fn);
}

/* Wraps every C function in the table at idx, which is `lib`. */
static void
luasandbox_wrap_table(lua_State *L, int idx, const char *lib)
{
  idx = lua_absindex(L, idx);
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {
    if (lua_type(L, -2) == LUA_TSTRING && lua_iscfunction(L, -1)) {
      luasandbox_wrap_top(L, luasandbox_entry(lib, lua_tostring(L, -2)));
      lua_pushvalue(L, -2);
      lua_insert(L, -2);
      lua_rawset(L, idx); /* changing an existing field keeps lua_next valid */
    } else {
      lua_pop(L, 1);
    }
  }
}

/* Wraps the iterator at the top (one an original function returned), unless
 * it is wrapped already, and pops it. */
static void
luasandbox_wrap_iterator(lua_State *L, const char *name)
{
  lua_rawgetp(L, LUA_REGISTRYINDEX, &luasandbox_wrappers_key);
  lua_pushvalue(L, -2);
  bool wrapped = lua_rawget(L, -2) != LUA_TNIL;
  lua_pop(L, 2);
  if (!wrapped)
    luasandbox_wrap_top(L, luasandbox_entry(LIB_ITERATOR, name));
  lua_pop(L, 1);
}

/* Pushes the first result of calling lib.name (a global table's function,
 * still the original) with the string "" and, if lax, true. */
static void
luasandbox_push_iterator(lua_State *L, const char *lib, const char *name, bool lax)
{
  if (lib != NULL) {
    lua_getglobal(L, lib);
    lua_getfield(L, -1, name);
    lua_remove(L, -2);
  } else {
    lua_getglobal(L, name);
  }
  lua_pushliteral(L, "");
  lua_pushboolean(L, lax);
  lua_call(L, 2, 1);
}

/* The reader of load for a reader function (stack index 1): calls it for
 * the next string, kept in LUASANDBOX_LOAD_SLOT, and hands it to the parser
 * in pieces of at most LUASANDBOX_LOAD_PIECE bytes, each charged first.
 * Otherwise Lua's generic_reader (lbaselib.c), with its messages. */
typedef struct {
  size_t off, len; /* what of the kept string is handed out */
} LuaSandboxReader;

static const char *
luasandbox_read_function(lua_State *L, void *ud, size_t *size)
{
  LuaSandboxReader *r = ud;
  if (r->off == r->len) {
    luaL_checkstack(L, 2, "too many nested functions");
    lua_pushvalue(L, 1);
    lua_call(L, 0, 1);
    if (lua_isnil(L, -1)) {
      lua_pop(L, 1);
      *size = 0;
      return NULL;
    }
    if (!lua_isstring(L, -1))
      luaL_error(L, "reader function must return a string");
    lua_replace(L, LUASANDBOX_LOAD_SLOT);
    lua_tolstring(L, LUASANDBOX_LOAD_SLOT, &r->len);
    r->off = 0;
    if (r->len == 0) {
      *size = 0;
      return "";
    }
  }
  const char *s = lua_tostring(L, LUASANDBOX_LOAD_SLOT);
  size_t n = r->len - r->off;
  if (n > LUASANDBOX_LOAD_PIECE)
    n = LUASANDBOX_LOAD_PIECE;
  luasandbox_charge_bytes(L, n);
  *size = n;
  r->off += n;
  return s + r->off - n;
}

/* Replaces base `load(chunk [, chunkname [, mode [, env]]])`: Lua's load
 * (lbaselib.c) with mode always "t", so bytecode is refused whatever the
 * caller asks, and the compiling charged as it goes: a string through
 * luasandbox_load, a reader function's strings in pieces (file comment). A
 * missing env means the sandbox's globals, as with the original. */
static int
luasandbox_load_lua(lua_State *L)
{
  luasandbox_charge(L, 1 + (uint64_t)lua_gettop(L));
  int env = !lua_isnone(L, 4) ? 4 : 0;
  size_t len;
  const char *s = lua_tolstring(L, 1, &len);
  int status;
  if (s != NULL) {
    const char *chunkname = luaL_optstring(L, 2, s);
    luasandbox_charge_bytes(L, strlen(chunkname)); /* Lua copies it */
    status = luasandbox_load(L, s, len, chunkname);
  } else {
    const char *chunkname = luaL_optstring(L, 2, "=(load)");
    luaL_checktype(L, 1, LUA_TFUNCTION);
    lua_settop(L, LUASANDBOX_LOAD_SLOT);
    LuaSandboxReader r = {0, 0};
    status = lua_load(L, luasandbox_read_function, &r, chunkname, "t");
  }
  if (status != LUA_OK) {
    luaL_pushfail(L);
    lua_insert(L, -2);
    return 2;
  }
  if (env != 0) {
    lua_pushvalue(L, env);
    if (!lua_setupvalue(L, -2, 1))
      lua_pop(L, 1);
  }
  return 1;
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
  static const char *const removed[] = {"dofile", "loadfile", "print", "collectgarbage",
                                        "load", NULL};
  for (const char *const *name = removed; *name; name++) {
    lua_pushnil(L);
    lua_setglobal(L, *name);
  }
  lua_getglobal(L, LUA_STRLIBNAME);
  lua_pushnil(L);
  lua_setfield(L, -2, "dump");
  luapattern_install(L, -1, LUAPATTERN_MAX_STEPS, luasandbox_charge);
  lua_pop(L, 1);

  /* The iterators ipairs and utf8.codes return, got from the originals
   * (pairs' is next, a global of its own). */
  luasandbox_push_iterator(L, NULL, "ipairs", false);
  luasandbox_push_iterator(L, LUA_UTF8LIBNAME, "codes", false);
  luasandbox_push_iterator(L, LUA_UTF8LIBNAME, "codes", true);

  lua_newtable(L);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &luasandbox_wrappers_key);
  lua_pushglobaltable(L);
  luasandbox_wrap_table(L, -1, LIB_BASE);
  lua_pop(L, 1);
  for (const luaL_Reg *lib = libs + 1; lib->func; lib++) {
    lua_getglobal(L, lib->name);
    luasandbox_wrap_table(L, -1, lib->name);
    lua_pop(L, 1);
  }
  lua_pushliteral(L, "");
  lua_getmetatable(L, -1);
  luasandbox_wrap_table(L, -1, LIB_STRING_MT);
  lua_pop(L, 2);
  luasandbox_wrap_iterator(L, "utf8.codes");
  luasandbox_wrap_iterator(L, "utf8.codes");
  luasandbox_wrap_iterator(L, "ipairs");

  lua_pushcfunction(L, luasandbox_load_lua);
  lua_setglobal(L, "load");
}
