/*
 * The Lua sandbox: one lua_State with a counting allocator, a chosen set of
 * libraries and an instruction budget, and the three ways the engine runs
 * Lua in it (a text chunk, a file, a call), each protected and each
 * reporting failure as a VigilError (see luasandbox.h).
 *
 * The libraries a state gets, what is taken out of them and the wrappers
 * that charge their C work are luasandbox_libs.c; compiling a chunk a
 * charged piece at a time (luasandbox_load), for the host and for Lua's
 * load and require, is here, and so is xpcall's replacement, with the rest
 * of the budget's error paths.
 *
 * The budget is a count hook every LUASANDBOX_HOOK_STEP instructions. Past
 * the budget the hook raises an error and re-arms itself for every single
 * instruction, so a pcall that catches the error cannot run on: the next
 * instruction of its caller raises again, and so on out to the host.
 *
 * Work done inside a C function executes no VM instructions, so the hook
 * alone cannot see it: string.rep("", math.maxinteger) loops for centuries
 * inside one call without running an instruction or allocating a byte, a
 * string.find with a backtracking pattern or a table.sort of long strings
 * runs for hours, and a loop of calls that each scan megabytes (packsize
 * of a long format, load of a big chunk, upper of a long string) costs
 * milliseconds per instruction. So the C work is charged to the same
 * budget, through luasandbox_charge, before or as it is done:
 *   - every C function a sandbox can reach is wrapped or replaced to charge
 *     what its arguments say it will do (luasandbox_libs.c, which has the
 *     audit of each one), the pattern functions charge their steps as they
 *     go (luapattern.c), a chunk is compiled a piece at a time with each
 *     piece charged (luasandbox_load), and the host's own C functions
 *     charge themselves (policy_lib.c);
 *   - the allocator charges every LUASANDBOX_ALLOC_BYTES bytes it hands out
 *     as one instruction (copies in bulk: concatenation, string.rep, table
 *     growth), and when that passes the budget it arms the hook to stop at
 *     the next instruction (it cannot raise an error itself).
 * The wall-clock limit of each run or call, LUASANDBOX_TIME_BASE_MS plus
 * 100 ns per budgeted instruction (tens of times what the budget costs in
 * Lua code), is the backstop for what no charge sees exactly (a parse
 * whose cost grows faster than its text; comparing, or converting to a
 * number, a string of megabytes, which is one VM instruction). It is read
 * by the hook, by every charge, so at every call of a C function and
 * between two pieces of a chunk, and by the allocator every
 * LUASANDBOX_HOOK_STEP instructions it charges; past it the run stops as it
 * does past the budget, with "time limit of N ms exceeded". A charge is
 * made before the work it pays for, and one charged instruction pays for a
 * few nanoseconds of work, so whatever passes the budget's check also fits
 * in the 100 ns an instruction the clock allows. So a run overshoots its
 * limit by at most one charged step of C work or LUASANDBOX_HOOK_STEP
 * instructions, whichever is longer.
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
 * tests/unit/policy/test_luasandbox.c tries each of these.
 *
 * Memory: the allocator counts the bytes the state holds and refuses an
 * allocation that would pass memory_max. Lua then runs an emergency
 * collection, retries once and raises a memory error, which leaves the state
 * consistent and usable.
 */
#include "policy/luasandbox.h"

#include <errno.h>
#include <inttypes.h>
#include <lauxlib.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "policy/luasandbox_libs.h"
#include "base/memory.h"
#include "base/strbuf.h"

/* Instructions between two calls of the count hook, which also reads the
 * clock: small enough that a run overshoots its limits by at most this many
 * instructions, even when each is costly (a comparison or a conversion to a
 * number of a string of megabytes takes some milliseconds), large enough
 * that the hook costs little (some 10% of Lua code's time at 100). */
#define LUASANDBOX_HOOK_STEP 100

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

/* Longest message luasandbox_load_file pushes for a file it cannot read: a
 * path as long as the system allows and the reason. */
#define LUASANDBOX_FILE_MSG_MAX (PATH_MAX + 256)

/* Longest text of a limit message ("instruction budget of N exceeded"). */
#define LUASANDBOX_STOP_MAX 64

struct LuaSandbox {
  lua_State *L;
  LuaSandboxLimits limits;
  size_t used;        /* bytes held by the state now */
  size_t refusals;    /* allocations refused since luasandbox_new */
  uint64_t executed;  /* instructions counted in the current run or call */
  uint64_t unclocked; /* of which charged by the allocator since it last read the clock */
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

/* Levels of the stack luasandbox_raise_stop looks through for Lua code to
 * name (a charge may come from a C function that a C function called:
 * table.sort's comparator). */
#define LUASANDBOX_WHERE_LEVELS 8

/* Raises the limit error, prefixed with where the nearest Lua function at
 * or above `level` of the stack is (luaL_where: 0 is the running function,
 * 1 its caller), so the message names the line that asked for the work. */
static int
luasandbox_raise_stop(lua_State *L, LuaSandbox *sb, int level)
{
  lua_Debug ar;
  int at = level;
  for (int i = level; i < level + LUASANDBOX_WHERE_LEVELS && lua_getstack(L, i, &ar); i++) {
    lua_getinfo(L, "l", &ar);
    if (ar.currentline > 0) {
      at = i;
      break;
    }
  }
  luaL_where(L, at);
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
  /* The clock is read once per LUASANDBOX_HOOK_STEP instructions charged
   * here, not at each allocation, which is too hot a path for it. */
  if (nsize > old) {
    uint64_t n = (nsize - old) / LUASANDBOX_ALLOC_BYTES;
    sb->executed += n;
    sb->unclocked += n;
    if (sb->executed > sb->limits.instruction_max) {
      luasandbox_stop(sb, false);
    } else if (sb->unclocked >= LUASANDBOX_HOOK_STEP) {
      sb->unclocked = 0;
      if (clock_mono_ns() > sb->deadline_ns)
        luasandbox_stop(sb, true);
    }
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

/* See luasandbox.h. */
void
luasandbox_charge_bytes(lua_State *L, size_t bytes)
{
  luasandbox_charge(L, 1 + bytes / LUASANDBOX_SCAN_BYTES);
}

/* Starts a new budget and clock for one run or call. */
static void
luasandbox_reset_budget(LuaSandbox *sb)
{
  sb->executed = 0;
  sb->unclocked = 0;
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
  luasandbox_charge(L, 1 + (uint64_t)n); /* like every C function (luasandbox_libs.c) */
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

/* See luasandbox_libs.h. */
size_t
luasandbox_room(lua_State *L)
{
  LuaSandbox *sb = luasandbox_of(L);
  return sb->limits.memory_max - sb->used;
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

/* Runs the function under nargs arguments at the top, under the budget and
 * clock the caller started (luasandbox_reset_budget), with the traceback
 * handler. On success leaves nresults results where the function was; on
 * failure sets err (invalid_params) and leaves the stack as it was below
 * the function. Either way the budget is left reset, with no stop armed. */
static int
luasandbox_pcall(LuaSandbox *sb, int nargs, int nresults, const char *chunkname,
                 VigilError *err)
{
  lua_State *L = sb->L;
  int base = lua_gettop(L) - nargs;
  size_t refusals_before = sb->refusals;
  lua_pushcfunction(L, luasandbox_msghandler);
  lua_insert(L, base);
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

/* Where luasandbox_read_piece is in a chunk. */
typedef struct {
  const char *next;
  size_t left;
} LuaSandboxChunk;

/* The lua_Reader of luasandbox_load: hands out the next piece of at most
 * LUASANDBOX_LOAD_PIECE bytes, charged first (lua_load runs the reader
 * protected, so the limit's error ends the load). */
static const char *
luasandbox_read_piece(lua_State *L, void *ud, size_t *size)
{
  LuaSandboxChunk *c = ud;
  size_t n = c->left < LUASANDBOX_LOAD_PIECE ? c->left : LUASANDBOX_LOAD_PIECE;
  *size = n;
  if (n == 0)
    return NULL;
  luasandbox_charge_bytes(L, n);
  const char *piece = c->next;
  c->next += n;
  c->left -= n;
  return piece;
}

/* See luasandbox.h. */
int
luasandbox_load(lua_State *L, const char *chunk, size_t len, const char *chunkname)
{
  LuaSandboxChunk c = {chunk, len};
  return lua_load(L, luasandbox_read_piece, &c, chunkname, "t");
}

/* Reads path whole into text, refusing more than max bytes. On failure
 * returns false with why holding "path: what". */
static bool
luasandbox_read_file(const char *path, size_t max, StrBuf *text, StrBuf *why)
{
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    strbuf_printf(why, "%s: cannot open: %s", path, strerror(errno));
    return false;
  }
  char buf[8192];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
    if (text->len + n > max) {
      fclose(f);
      strbuf_printf(why, "%s: larger than %zu bytes", path, max);
      return false;
    }
    strbuf_append(text, buf, n);
  }
  if (ferror(f)) {
    int e = errno;
    fclose(f);
    strbuf_printf(why, "%s: cannot read: %s", path, strerror(e));
    return false;
  }
  fclose(f);
  return true;
}

/* The text of a file as Lua should see it: without a UTF-8 byte order mark
 * at its start, as lua.c does, since some editors write one. */
static const char *
luasandbox_skip_bom(const StrBuf *text, size_t *len)
{
  const char *chunk = strbuf_cstr(text);
  *len = text->len;
  if (*len >= 3 && memcmp(chunk, "\xEF\xBB\xBF", 3) == 0) {
    chunk += 3;
    *len -= 3;
  }
  return chunk;
}

/* See luasandbox.h. Nothing that can raise a Lua error runs while the C
 * buffers are held, except lua_load, which is protected. */
int
luasandbox_load_file(lua_State *L, const char *path, size_t max)
{
  StrBuf text = STRBUF_INIT, why = STRBUF_INIT, name = STRBUF_INIT;
  int status;
  if (luasandbox_read_file(path, max, &text, &why)) {
    size_t len;
    const char *chunk = luasandbox_skip_bom(&text, &len);
    strbuf_printf(&name, "@%s", path);
    status = luasandbox_load(L, chunk, len, strbuf_cstr(&name));
    strbuf_free(&name);
    strbuf_free(&text);
    return status;
  }
  strbuf_free(&text);
  char msg[LUASANDBOX_FILE_MSG_MAX];
  snprintf(msg, sizeof msg, "%s", strbuf_cstr(&why));
  strbuf_free(&why);
  lua_pushstring(L, msg);
  return LUA_ERRFILE;
}

/* Compiles chunk as text (a binary chunk is refused by mode "t") under a
 * fresh budget and clock, then runs it under the same ones; see
 * luasandbox.h. */
int
luasandbox_run(LuaSandbox *sb, const char *chunk, size_t len, const char *chunkname,
               int nresults, VigilError *err)
{
  lua_State *L = sb->L;
  size_t refusals_before = sb->refusals;
  if (!lua_checkstack(L, 8))
    return error_set(err, kErrInvalidParams, "memory limit of %zu bytes exceeded",
                     sb->limits.memory_max);
  luasandbox_reset_budget(sb);
  int status = luasandbox_load(L, chunk, len, chunkname ? chunkname : "=chunk");
  if (status != LUA_OK) {
    StrBuf s = STRBUF_INIT;
    luasandbox_error_text(sb, status, sb->over_budget, refusals_before, &s);
    luasandbox_reset_budget(sb);
    luasandbox_expand_source(&s, chunkname);
    error_set(err, kErrInvalidParams, "%s", strbuf_cstr(&s));
    strbuf_free(&s);
    return -1;
  }
  return luasandbox_pcall(sb, 0, nresults, chunkname, err);
}

/* Reads path whole (refusing more than max bytes) and runs it as "@path";
 * see luasandbox.h. */
int
luasandbox_run_file(LuaSandbox *sb, const char *path, size_t max, int nresults,
                    VigilError *err)
{
  StrBuf text = STRBUF_INIT, why = STRBUF_INIT;
  if (!luasandbox_read_file(path, max, &text, &why)) {
    error_set(err, kErrInvalidParams, "%s", strbuf_cstr(&why));
    strbuf_free(&text);
    strbuf_free(&why);
    return -1;
  }
  size_t len;
  const char *chunk = luasandbox_skip_bom(&text, &len);
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
  luasandbox_reset_budget(sb);
  return luasandbox_pcall(sb, nargs, nresults, NULL, err);
}
