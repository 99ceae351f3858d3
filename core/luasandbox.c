/*
 * The Lua sandbox: one lua_State with a counting allocator, a chosen set of
 * libraries and an instruction budget, and the three ways the engine runs
 * Lua in it (a text chunk, a file, a call), each protected and each
 * reporting failure as a VigilError (see luasandbox.h).
 *
 * The libraries a state gets, what is taken out of them and the wrappers
 * that charge their C work are luasandbox_libs.c; xpcall's replacement is
 * here, with the rest of the budget's error paths.
 *
 * The budget is a count hook every LUASANDBOX_HOOK_STEP instructions. Past
 * the budget the hook raises an error and re-arms itself for every single
 * instruction, so a pcall that catches the error cannot run on: the next
 * instruction of its caller raises again, and so on out to the host.
 *
 * Work done inside a C function executes no VM instructions, so the hook
 * alone cannot see it: a string.find with a backtracking pattern (".-.-.-x"
 * on a long subject) or a table.move over 2^50 indexes would run for hours
 * inside one call, and a loop of calls that each copy or scan megabytes
 * (table.insert at the front of a big table, utf8.len of a big string) costs
 * milliseconds per instruction. So the C work is charged to the same budget:
 *   - the pattern functions and the table and utf8 functions that loop
 *     charge what they do (luasandbox_libs.c), through luasandbox_charge;
 *   - the allocator charges every LUASANDBOX_ALLOC_BYTES bytes it hands out
 *     as one instruction (string.rep, concatenation, table growth), and
 *     when that passes the budget it arms the hook to stop at the next
 *     instruction (it cannot raise an error itself).
 * And, as a backstop for what no charge sees (comparing two distinct
 * multi-MiB strings is one VM instruction), each run or call also has a
 * wall-clock limit of LUASANDBOX_TIME_BASE_MS plus 100 ns per budgeted
 * instruction, tens of times what the budget costs in Lua code, checked by
 * the hook and by every charge; it reads "time limit of N ms exceeded".
 *
 * Error paths. The hook raises its error from inside the hook, and Lua
 * runs a hook with every hook off; whatever Lua runs before that error has
 * unwound to a protected call runs unhooked too. In Lua 5.4 that is the
 * message handler of the nearest xpcall or lua_pcall (luaG_errormsg calls
 * it at the point of the error), and through it anything the handler
 * calls. A policy's xpcall handler that loops there would run for ever,
 * deaf even to the clock, and so would one called again for the error the
 * hook raises in it. So:
 *   - xpcall installs a C handler around the policy's: within the limits it
 *     calls the policy's handler (which then runs hooked, since only the
 *     hook's own error is raised with hooks off, and that one comes only
 *     past the limits); past them it returns the error unchanged and calls
 *     no Lua at all;
 *   - the host's own handler asks a non-string error object's __tostring
 *     for its text only within the limits (past them the error is the
 *     hook's string anyway);
 *   - __close of a to-be-closed variable runs after luaD_pcall has restored
 *     the hook (hooked, and past the limits stopped at its first
 *     instruction, so each variable costs one instruction);
 *   - __gc is refused (luasandbox_libs.c); nothing else in ldo.c, ldebug.c or the
 *     libraries opened here calls Lua on an error path (messages read
 *     __name raw, never call metamethods).
 * tests/unit/test_luasandbox.c tries each of these.
 *
 * Memory: the allocator counts the bytes the state holds and refuses an
 * allocation that would pass memory_max. Lua then runs an emergency
 * collection, retries once and raises a memory error, which leaves the state
 * consistent and usable.
 */
#include "luasandbox.h"

#include <errno.h>
#include <inttypes.h>
#include <lauxlib.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "luasandbox_libs.h"
#include "memory.h"
#include "strbuf.h"

/* Instructions between two calls of the count hook: small enough that a
 * budget is overshot by at most this much, large enough that the hook costs
 * nothing measurable. */
#define LUASANDBOX_HOOK_STEP 1000

/* Bytes allocated that are charged as one instruction: about what copying
 * or filling them costs next to a VM instruction, with room to spare (a
 * policy that builds a few KiB of text pays a few dozen). */
#define LUASANDBOX_ALLOC_BYTES 256

/* The wall-clock limit of a run or call (file comment): a base, plus 1 ms
 * per LUASANDBOX_INSTRUCTIONS_PER_MS instructions of budget, that is 100 ns
 * an instruction where one takes a few (some 30 times as long, so also
 * under sanitizers); at most LUASANDBOX_TIME_MAX_MS. */
#define LUASANDBOX_TIME_BASE_MS 1000u
#define LUASANDBOX_INSTRUCTIONS_PER_MS 10000u
#define LUASANDBOX_TIME_MAX_MS (1000u * 86400u)

/* Longest text of a limit message ("instruction budget of N exceeded"). */
#define LUASANDBOX_STOP_MAX 64

struct LuaSandbox {
  lua_State *L;
  LuaSandboxLimits limits;
  size_t used;        /* bytes held by the state now */
  size_t refusals;    /* allocations refused since luasandbox_new */
  uint64_t executed;  /* instructions counted in the current run or call */
  bool over_budget;   /* the current run or call has passed a limit */
  uint64_t time_max_ms;  /* wall-clock limit of a run or call */
  uint64_t deadline_ns;  /* CLOCK_MONOTONIC time at which the current one ends */
  char stop[LUASANDBOX_STOP_MAX]; /* which limit it passed, in words */
};

static void luasandbox_hook(lua_State *L, lua_Debug *ar);

/* Marks the current run or call as over a limit (the budget unless `time`)
 * and arms the hook for every instruction, so that from here on the next
 * VM instruction raises the error, whatever catches it (file comment).
 * Safe anywhere, also inside the allocator: lua_sethook may even be called
 * from a signal handler. */
static void
luasandbox_stop(LuaSandbox *sb, bool time)
{
  if (sb->over_budget)
    return;
  sb->over_budget = true;
  if (time)
    snprintf(sb->stop, sizeof sb->stop, "time limit of %" PRIu64 " ms exceeded",
             sb->time_max_ms);
  else
    snprintf(sb->stop, sizeof sb->stop, "instruction budget of %" PRIu64 " exceeded",
             sb->limits.instruction_max);
  if (sb->L != NULL)
    lua_sethook(sb->L, luasandbox_hook, LUA_MASKCOUNT, 1);
}

/* Adds n instructions to the current count and stops the run or call when
 * that passes the budget or the clock passes the deadline. Whether it is
 * stopped now. */
static bool
luasandbox_count(LuaSandbox *sb, uint64_t n)
{
  if (sb->over_budget)
    return true;
  sb->executed = n > UINT64_MAX - sb->executed ? UINT64_MAX : sb->executed + n;
  if (sb->executed > sb->limits.instruction_max)
    luasandbox_stop(sb, false);
  else if (clock_mono_ns() > sb->deadline_ns)
    luasandbox_stop(sb, true);
  return sb->over_budget;
}

/* Raises the limit error, prefixed with where `level` of the stack is
 * (luaL_where: 0 is the running function, 1 its caller). */
static int
luasandbox_raise_stop(lua_State *L, LuaSandbox *sb, int level)
{
  luaL_where(L, level);
  lua_pushstring(L, sb->stop);
  lua_concat(L, 2);
  return lua_error(L);
}

/* The allocator (lua_Alloc). Counts what the state holds and refuses growth
 * past memory_max by returning NULL, which Lua turns into a memory error
 * (after an emergency collection and one retry). The cap never refuses a
 * shrink. For a new block osize is a type tag, not a size, so only a
 * non-NULL ptr has osize bytes to give back. */
static void *
luasandbox_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
  LuaSandbox *sb = ud;
  size_t old = ptr ? osize : 0;
  if (nsize == 0) {
    free(ptr);
    sb->used -= old;
    return NULL;
  }
  if (nsize > old && nsize - old > sb->limits.memory_max - sb->used) {
    sb->refusals++;
    return NULL;
  }
  void *p = realloc(ptr, nsize);
  if (p == NULL) {
    /* The system itself is out of memory: refuse like the cap would, so
     * one state's failure stays a Lua error rather than an abort. */
    if (nsize > old)
      sb->refusals++;
    return NULL;
  }
  sb->used = sb->used - old + nsize;
  /* Charged without a clock read, which the allocator is too hot for; the
   * hook and the other charges read it. */
  if (nsize > old) {
    sb->executed += (nsize - old) / LUASANDBOX_ALLOC_BYTES;
    if (sb->executed > sb->limits.instruction_max)
      luasandbox_stop(sb, false);
  }
  return p;
}

/* The sandbox a state belongs to (the allocator's user data). */
static LuaSandbox *
luasandbox_of(lua_State *L)
{
  void *ud = NULL;
  lua_getallocf(L, &ud);
  return ud;
}

/* The count hook. Past the budget it raises an error naming the budget and
 * the line that was running, and arms itself for every instruction so the
 * error cannot be caught and ignored (file comment). */
static void
luasandbox_hook(lua_State *L, lua_Debug *ar)
{
  (void)ar;
  LuaSandbox *sb = luasandbox_of(L);
  if (!luasandbox_count(sb, LUASANDBOX_HOOK_STEP))
    return;
  luasandbox_raise_stop(L, sb, 0);
}

/* The charge of C work (file comment), for luapattern.c, the wrappers of
 * luasandbox_libs.c and the host's own C functions; see luasandbox.h. */
void
luasandbox_charge(lua_State *L, uint64_t n)
{
  LuaSandbox *sb = luasandbox_of(L);
  if (luasandbox_count(sb, n))
    luasandbox_raise_stop(L, sb, 1);
}

/* Starts a new budget and clock for one run or call. */
static void
luasandbox_reset_budget(LuaSandbox *sb)
{
  sb->executed = 0;
  sb->over_budget = false;
  sb->stop[0] = '\0';
  sb->deadline_ns = clock_mono_ns() + sb->time_max_ms * 1000000u;
  lua_sethook(sb->L, luasandbox_hook, LUA_MASKCOUNT, LUASANDBOX_HOOK_STEP);
}

/* The message handler xpcall installs (file comment, "Error paths"): while
 * the run or call is within its limits, calls the policy's handler (upvalue
 * 1) with the error, which then runs hooked like any Lua code; once it is
 * over the budget or the clock, returns the error unchanged without calling
 * any Lua, because Lua may be running this from inside the count hook,
 * where no hook fires. The check also charges one instruction, so a handler
 * that errors and is called again (Lua does that until its C stack limit)
 * stays counted. */
static int
luasandbox_xpcall_handler(lua_State *L)
{
  if (luasandbox_count(luasandbox_of(L), 1))
    return 1;
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, 1);
  return 1;
}

/* Replaces base `xpcall(f, msgh, ...)`: the same call and results as the
 * original (true and f's results, or false and what the handler returned),
 * with msgh wrapped in luasandbox_xpcall_handler. No continuation is
 * needed: without coroutines nothing can yield across it. */
static int
luasandbox_xpcall(lua_State *L)
{
  int n = lua_gettop(L);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  lua_pushvalue(L, 2);
  lua_pushcclosure(L, luasandbox_xpcall_handler, 1);
  lua_replace(L, 2);
  lua_pushboolean(L, 1);     /* the first result on success */
  lua_pushvalue(L, 1);       /* f */
  lua_rotate(L, 3, 2);       /* both below f's arguments */
  int status = lua_pcall(L, n - 2, LUA_MULTRET, 2);
  if (status != LUA_OK) {
    lua_pushboolean(L, 0);
    lua_pushvalue(L, -2);
    return 2;
  }
  return lua_gettop(L) - 2;  /* true and f's results */
}

/* Opens the libraries (luasandbox_libs.c) and replaces xpcall. Run under
 * lua_pcall, so running out of memory here is an error, not a panic. */
static int
luasandbox_open(lua_State *L)
{
  luasandbox_open_libs(L);
  lua_pushcfunction(L, luasandbox_xpcall);
  lua_setglobal(L, "xpcall");
  return 0;
}

/* Lua's last resort for an error outside any pcall. Every entry point here
 * is protected, so reaching it is a bug: say what and abort. */
static int
luasandbox_panic(lua_State *L)
{
  const char *msg = lua_tostring(L, -1);
  fprintf(stderr, "vigil: unprotected Lua error: %s\n", msg ? msg : "(not a string)");
  abort();
  return 0;
}

/* Creates a sandbox. Zero fields of limits (or limits NULL) take the
 * LUASANDBOX_DEFAULT_* values. Returns NULL only when memory_max is too small
 * to hold the libraries themselves (a few tens of KiB). */
LuaSandbox *
luasandbox_new(const LuaSandboxLimits *limits)
{
  LuaSandbox *sb = xcalloc(1, sizeof *sb);
  sb->limits.memory_max = limits && limits->memory_max ? limits->memory_max
                                                       : LUASANDBOX_DEFAULT_MEMORY;
  sb->limits.instruction_max = limits && limits->instruction_max
                                   ? limits->instruction_max
                                   : LUASANDBOX_DEFAULT_INSTRUCTIONS;
  sb->time_max_ms = limits && limits->time_max_ms
                        ? limits->time_max_ms
                        : LUASANDBOX_TIME_BASE_MS +
                              sb->limits.instruction_max / LUASANDBOX_INSTRUCTIONS_PER_MS;
  sb->limits.time_max_ms = sb->time_max_ms;
  if (sb->time_max_ms > LUASANDBOX_TIME_MAX_MS)
    sb->time_max_ms = LUASANDBOX_TIME_MAX_MS;
  sb->deadline_ns = UINT64_MAX;
  sb->L = lua_newstate(luasandbox_alloc, sb);
  if (sb->L == NULL) {
    free(sb);
    return NULL;
  }
  lua_atpanic(sb->L, luasandbox_panic);
  lua_pushcfunction(sb->L, luasandbox_open);
  if (lua_pcall(sb->L, 0, 0, 0) != LUA_OK) {
    lua_close(sb->L);
    free(sb);
    return NULL;
  }
  luasandbox_reset_budget(sb);
  return sb;
}

/* Closes the state and frees the sandbox; NULL is ignored. */
void
luasandbox_free(LuaSandbox *sb)
{
  if (sb == NULL)
    return;
  lua_close(sb->L);
  free(sb);
}

/* The state, for pushing arguments and reading results. The sandbox keeps
 * owning it. */
lua_State *
luasandbox_state(LuaSandbox *sb)
{
  return sb->L;
}

size_t
luasandbox_memory(const LuaSandbox *sb)
{
  return sb->used;
}

size_t
luasandbox_refusals(const LuaSandbox *sb)
{
  return sb->refusals;
}

/* The message handler of every protected run: Lua's message (or a word on a
 * non-string error object) followed by a traceback. A table with __tostring
 * is asked for its text, as lua.c does, but only while the run is within
 * its limits: past them this may be running inside the count hook, where a
 * __tostring that loops would never be stopped (file comment, "Error
 * paths"). */
static int
luasandbox_msghandler(lua_State *L)
{
  const char *msg = lua_tostring(L, 1);
  if (msg == NULL) {
    if (!luasandbox_of(L)->over_budget && luaL_callmeta(L, 1, "__tostring") &&
        lua_type(L, -1) == LUA_TSTRING)
      return 1;
    msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}

/* Writes into s, for an error `status` of a run, the message the host
 * reports: the budget and memory errors in fixed words (a chunk may have
 * caught the first error and rethrown something else, or the handler may
 * have failed), otherwise the error value's text. `over` says whether the
 * run passed its budget, `refusals_before` is the refusal count when it
 * began. Pops the error value. */
static void
luasandbox_error_text(LuaSandbox *sb, int status, bool over, size_t refusals_before,
                      StrBuf *s)
{
  lua_State *L = sb->L;
  const char *msg = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
  bool memory = status == LUA_ERRMEM ||
                (sb->refusals != refusals_before &&
                 (status == LUA_ERRERR || (msg && strncmp(msg, "not enough memory", 17) == 0)));
  if (over && msg && strstr(msg, sb->stop) != NULL)
    strbuf_puts(s, msg);
  else if (over)
    strbuf_puts(s, sb->stop);
  else if (memory)
    strbuf_printf(s, "memory limit of %zu bytes exceeded", sb->limits.memory_max);
  else if (msg)
    strbuf_puts(s, msg);
  else
    strbuf_printf(s, "(error object is a %s value)", luaL_typename(L, -1));
  lua_pop(L, 1);
}

/* Lua shortens a long "@path" chunkname in messages to "..." and the last
 * LUA_IDSIZE - 4 bytes of the path. When msg starts with that short form and
 * a colon, replaces it with the whole path, so a message names the file a
 * person can open whatever its length. */
static void
luasandbox_expand_source(StrBuf *s, const char *chunkname)
{
  if (chunkname == NULL || chunkname[0] != '@' || s->data == NULL)
    return;
  const char *path = chunkname + 1;
  size_t plen = strlen(path);
  if (plen + 1 <= LUA_IDSIZE)
    return;
  size_t keep = LUA_IDSIZE - 4;
  StrBuf shortid = STRBUF_INIT;
  strbuf_puts(&shortid, "...");
  strbuf_puts(&shortid, path + plen - keep);
  if (strncmp(s->data, shortid.data, shortid.len) == 0 && s->data[shortid.len] == ':') {
    StrBuf out = STRBUF_INIT;
    strbuf_puts(&out, path);
    strbuf_puts(&out, s->data + shortid.len);
    strbuf_free(s);
    *s = out;
  }
  strbuf_free(&shortid);
}

/* Runs the function under nargs arguments at the top, under a fresh budget,
 * with the traceback handler. On success leaves nresults results where the
 * function was; on failure sets err (invalid_params) and leaves the stack as
 * it was below the function. */
static int
luasandbox_pcall(LuaSandbox *sb, int nargs, int nresults, const char *chunkname,
                 VigilError *err)
{
  lua_State *L = sb->L;
  int base = lua_gettop(L) - nargs;
  size_t refusals_before = sb->refusals;
  lua_pushcfunction(L, luasandbox_msghandler);
  lua_insert(L, base);
  luasandbox_reset_budget(sb);
  int status = lua_pcall(L, nargs, nresults, base);
  bool over = sb->over_budget;
  if (status == LUA_OK) {
    luasandbox_reset_budget(sb);
    lua_remove(L, base);
    return 0;
  }
  StrBuf s = STRBUF_INIT;
  luasandbox_error_text(sb, status, over, refusals_before, &s);
  luasandbox_reset_budget(sb);
  lua_pop(L, 1); /* the handler */
  luasandbox_expand_source(&s, chunkname);
  error_set(err, kErrInvalidParams, "%s", strbuf_cstr(&s));
  strbuf_free(&s);
  return -1;
}

/* Loads chunk as text (a binary chunk is refused by mode "t") and runs it;
 * see luasandbox.h. */
int
luasandbox_run(LuaSandbox *sb, const char *chunk, size_t len, const char *chunkname,
               int nresults, VigilError *err)
{
  lua_State *L = sb->L;
  size_t refusals_before = sb->refusals;
  if (!lua_checkstack(L, 8))
    return error_set(err, kErrInvalidParams, "memory limit of %zu bytes exceeded",
                     sb->limits.memory_max);
  int status = luaL_loadbufferx(L, chunk, len, chunkname ? chunkname : "=chunk", "t");
  if (status != LUA_OK) {
    StrBuf s = STRBUF_INIT;
    luasandbox_error_text(sb, status, false, refusals_before, &s);
    luasandbox_expand_source(&s, chunkname);
    error_set(err, kErrInvalidParams, "%s", strbuf_cstr(&s));
    strbuf_free(&s);
    return -1;
  }
  return luasandbox_pcall(sb, 0, nresults, chunkname, err);
}

/* Reads path whole (refusing more than max bytes) and runs it as "@path";
 * see luasandbox.h. A UTF-8 byte order mark at the start is skipped, as
 * lua.c does, since some editors write one. */
int
luasandbox_run_file(LuaSandbox *sb, const char *path, size_t max, int nresults,
                    VigilError *err)
{
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return error_set(err, kErrInvalidParams, "%s: cannot open: %s", path, strerror(errno));
  StrBuf text = STRBUF_INIT;
  char buf[8192];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
    if (text.len + n > max) {
      fclose(f);
      strbuf_free(&text);
      return error_set(err, kErrInvalidParams, "%s: larger than %zu bytes", path, max);
    }
    strbuf_append(&text, buf, n);
  }
  if (ferror(f)) {
    int e = errno;
    fclose(f);
    strbuf_free(&text);
    return error_set(err, kErrInvalidParams, "%s: cannot read: %s", path, strerror(e));
  }
  fclose(f);

  const char *chunk = strbuf_cstr(&text);
  size_t len = text.len;
  if (len >= 3 && memcmp(chunk, "\xEF\xBB\xBF", 3) == 0) {
    chunk += 3;
    len -= 3;
  }
  StrBuf name = STRBUF_INIT;
  strbuf_printf(&name, "@%s", path);
  int rc = luasandbox_run(sb, chunk, len, strbuf_cstr(&name), nresults, err);
  strbuf_free(&name);
  strbuf_free(&text);
  return rc;
}

/* See luasandbox.h. */
int
luasandbox_call(LuaSandbox *sb, int nargs, int nresults, VigilError *err)
{
  if (!lua_checkstack(sb->L, 8)) {
    lua_pop(sb->L, nargs + 1);
    return error_set(err, kErrInvalidParams, "memory limit of %zu bytes exceeded",
                     sb->limits.memory_max);
  }
  return luasandbox_pcall(sb, nargs, nresults, NULL, err);
}
