/*
 * The Lua sandbox: what is gone (io, os, package, debug, require, dofile,
 * loadfile, print, string.dump, bytecode), what bounds a chunk (the
 * instruction budget, also through pcall; the memory cap; the stack), that a
 * state stays usable after each kind of failure, and that messages name the
 * chunk and the line.
 */
#include <lauxlib.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "luasandbox.h"

/* Runs src in sb expecting one result, and returns it as an integer (or
 * -999 after recording a failure). */
static long long
run_int(LuaSandbox *sb, const char *src)
{
  VigilError err = VIGIL_ERROR_INIT;
  lua_State *L = luasandbox_state(sb);
  if (luasandbox_run(sb, src, strlen(src), "=test", 1, &err) != 0) {
    check_fail(__FILE__, __LINE__, "run of %s failed: %s", src, err.msg);
    return -999;
  }
  int isnum = 0;
  long long v = (long long)lua_tointegerx(L, -1, &isnum);
  lua_pop(L, 1);
  if (!isnum)
    check_fail(__FILE__, __LINE__, "%s returned no integer", src);
  return v;
}

/* Runs src expecting a failure; returns the message in err. */
static int
run_err(LuaSandbox *sb, const char *src, VigilError *err)
{
  error_clear(err);
  int top = lua_gettop(luasandbox_state(sb));
  int rc = luasandbox_run(sb, src, strlen(src), "=test", 0, err);
  CHECK_INT(lua_gettop(luasandbox_state(sb)), top); /* nothing pushed */
  return rc;
}

/* The bound on one run that must be cut off by the budget: tens of times
 * what the slowest sanitizer build takes, so only a run that escaped the
 * budget (and would never return) reaches it. */
#define WATCHDOG_S 60

/* SIGALRM: a run did not come back. Say so and fail the whole program,
 * since the run that escaped will never return to be checked. */
static void
watchdog_fired(int sig)
{
  (void)sig;
  static const char msg[] = "FAIL: a sandboxed run did not return within the watchdog's "
                            "bound: Lua code escaped the instruction budget\n";
  ssize_t w = write(2, msg, sizeof msg - 1);
  (void)w;
  _exit(1);
}

/* run_err under the watchdog: for chunks that would loop for ever if the
 * budget did not stop them. */
static int
run_err_bounded(LuaSandbox *sb, const char *src, VigilError *err)
{
  signal(SIGALRM, watchdog_fired);
  alarm(WATCHDOG_S);
  int rc = run_err(sb, src, err);
  alarm(0);
  return rc;
}

TEST(removed_globals_are_absent)
{
  LuaSandbox *sb = luasandbox_new(NULL);
  CHECK(sb != NULL);
  static const char *const absent[] = {
    "io", "os", "package", "debug", "require", "dofile", "loadfile", "print",
    "collectgarbage", "coroutine", "string.dump", "loadstring", "module",
  };
  for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++) {
    char src[128];
    snprintf(src, sizeof src, "return %s == nil and 1 or 0", absent[i]);
    if (run_int(sb, src) != 1)
      check_fail(__FILE__, __LINE__, "%s is reachable", absent[i]);
  }
  /* What stays. */
  CHECK_INT(run_int(sb, "return #string.rep('ab', 3) + math.max(1, 2) + #table.pack(1, 2)"
                        " + utf8.len('\\u{e9}') + select('#', pcall(type, 1))"),
            6 + 2 + 2 + 1 + 2);
  CHECK_INT(run_int(sb, "return ('x'):upper() == 'X' and 1 or 0"), 1);
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(run_err(sb, "io.open('/etc/passwd')", &err), -1);
  CHECK_CONTAINS(err.msg, "global 'io'");
  luasandbox_free(sb);
}

TEST(load_takes_text_only_and_defaults_to_the_sandbox_globals)
{
  LuaSandbox *sb = luasandbox_new(NULL);
  /* Bytecode: the signature ESC "Lua" is enough for load to call it binary. */
  CHECK_INT(run_int(sb, "local f, e = load('\\27Lua\\x54\\0'); "
                        "return (f == nil and e:find('binary chunk')) and 1 or 0"),
            1);
  CHECK_INT(run_int(sb, "local f, e = load('\\27Lua', 'x', 'b'); "
                        "return (f == nil and e:find('binary chunk')) and 1 or 0"),
            1);
  /* A reader function that yields bytecode is refused as well. */
  CHECK_INT(run_int(sb, "local done; local f, e = load(function() if done then return nil end "
                        "done = true; return '\\27Lua' end); return f == nil and 1 or 0"),
            1);
  CHECK_INT(run_int(sb, "sandbox_global = 41; return load('return sandbox_global + 1')()"),
            42);
  CHECK_INT(run_int(sb, "return load('return x', 'c', 't', {x = 7})()"), 7);
  /* Text still loads, also with a mode of "bt". */
  CHECK_INT(run_int(sb, "return load('return 5', 'c', 'bt')()"), 5);
  /* And the host side refuses bytecode too. */
  VigilError err = VIGIL_ERROR_INIT;
  const char bin[] = "\x1bLua\x54\x00";
  CHECK_INT(luasandbox_run(sb, bin, sizeof bin - 1, "=bin", 0, &err), -1);
  CHECK_CONTAINS(err.msg, "binary chunk");
  luasandbox_free(sb);
}

TEST(gc_metamethods_are_refused)
{
  LuaSandbox *sb = luasandbox_new(NULL);
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(run_err(sb, "setmetatable({}, {__gc = function() while true do end end})", &err),
            -1);
  CHECK_CONTAINS(err.msg, "__gc metamethods are not allowed");
  /* Ordinary metatables work. */
  CHECK_INT(run_int(sb, "local t = setmetatable({}, {__index = function() return 3 end}); "
                        "return t.anything"),
            3);
  luasandbox_free(sb);
}

TEST(infinite_loop_is_stopped_by_the_budget)
{
  LuaSandboxLimits lim = {0, 100000, 0};
  LuaSandbox *sb = luasandbox_new(&lim);
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(run_err(sb, "local n = 0\nwhile true do n = n + 1 end", &err), -1);
  CHECK_INT(err.code, kErrInvalidParams);
  CHECK_CONTAINS(err.msg, "invalid_params: test:2: instruction budget of 100000 exceeded");
  CHECK_CONTAINS(err.msg, LUASANDBOX_TRACEBACK);
  /* The budget is per run: the next one starts afresh. */
  CHECK_INT(run_int(sb, "local n = 0 for i = 1, 20000 do n = n + 1 end return n"), 20000);
  luasandbox_free(sb);
}

TEST(pcall_cannot_swallow_the_budget)
{
  LuaSandboxLimits lim = {0, 100000, 0};
  LuaSandbox *sb = luasandbox_new(&lim);
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(run_err(sb, "while true do pcall(function() while true do end end) end", &err), -1);
  CHECK_CONTAINS(err.msg, "instruction budget of 100000 exceeded");
  /* Nested pcalls, xpcall with a handler that loops, error() from a handler. */
  CHECK_INT(run_err(sb,
                    "local function spin() while true do end end\n"
                    "while true do\n"
                    "  pcall(pcall, pcall, spin)\n"
                    "  xpcall(spin, function() while true do end end)\n"
                    "  xpcall(spin, function(e) error('swallowed') end)\n"
                    "end",
                    &err),
            -1);
  CHECK_CONTAINS(err.msg, "instruction budget of 100000 exceeded");
  /* A loop whose body is almost all inside pcall, whatever its period. */
  for (int body = 1; body < 40; body += 3) {
    char src[256];
    snprintf(src, sizeof src,
             "local function g() for i = 1, %d do end end\n"
             "while true do pcall(g) end",
             body * 37);
    CHECK_INT(run_err(sb, src, &err), -1);
    CHECK_CONTAINS(err.msg, "instruction budget");
  }
  CHECK_INT(run_int(sb, "return 1"), 1);
  luasandbox_free(sb);
}

/* Lua calls xpcall's message handler at the point of the error, and when
 * the error is the budget's (raised by the count hook) that is inside the
 * hook, where Lua runs no hook at all: a handler that loops there would
 * never be stopped. Each chunk here did that before xpcall was wrapped. */
TEST(xpcall_handlers_cannot_escape_the_budget)
{
  LuaSandboxLimits lim = {0, 100000, 0};
  LuaSandbox *sb = luasandbox_new(&lim);
  VigilError err = VIGIL_ERROR_INIT;
  static const char *const escapes[] = {
    /* The reproduction: the budget runs out in f, the handler loops. */
    "xpcall(function() while true do end end, function(e) while true do end end)",
    /* A plain error: the handler runs hooked, runs out of budget, and the
     * hook's error calls the handler again, inside the hook. */
    "xpcall(function() error('x') end, function(e) while true do end end)",
    /* The handler loops in a function it calls. */
    "xpcall(function() while true do end end,\n"
    "       function(e) local function f() while true do end end f() end)",
    /* The handler swallows every later error with pcall and loops. */
    "xpcall(function() error('x') end,\n"
    "       function(e) while true do pcall(function() while true do end end) end end)",
    /* xpcall inside the handler, and xpcall called through pcall. */
    "xpcall(function() while true do end end, function(e)\n"
    "  return xpcall(function() while true do end end, function() while true do end end)\n"
    "end)",
    "pcall(xpcall, function() while true do end end, function() while true do end end)",
    /* A handler that errors itself: Lua calls it again, until its C stack
     * limit; each call must stay bounded. */
    "xpcall(function() while true do end end, function(e) error(e) end)",
    "xpcall(function() error('x') end, function(e) for i = 1, 1e12 do end error(e) end)",
  };
  for (size_t i = 0; i < sizeof escapes / sizeof escapes[0]; i++) {
    if (run_err_bounded(sb, escapes[i], &err) != -1)
      check_fail(__FILE__, __LINE__, "chunk %zu ran to the end", i);
    if (strstr(err.msg, "instruction budget of 100000 exceeded") == NULL)
      check_fail(__FILE__, __LINE__, "chunk %zu: \"%s\" does not name the budget", i, err.msg);
    CHECK_INT(run_int(sb, "return 5"), 5);
  }
  /* What xpcall does is unchanged: results, arguments, the handler's answer. */
  CHECK_INT(run_int(sb, "return select('#', xpcall(function(...) return ... end, "
                        "function(e) return e end, 1, 2, 3))"),
            4);
  CHECK_INT(run_int(sb, "local ok, a, b = xpcall(function(x, y) return x + y, x * y end, "
                        "error, 3, 4) return (ok and a == 7 and b == 12) and 1 or 0"),
            1);
  CHECK_INT(run_int(sb, "local ok, e = xpcall(error, function(m) return 'handled: ' .. m end, "
                        "'boom', 0) return (ok == false and e == 'handled: boom') and 1 or 0"),
            1);
  CHECK_INT(run_int(sb, "local ok, e = xpcall(error, function(m) return {m} end, 'x', 0) "
                        "return (not ok and type(e) == 'table' and e[1] == 'x') and 1 or 0"),
            1);
  /* A handler that errors gives Lua's own answer. */
  CHECK_INT(run_int(sb, "local ok, e = xpcall(error, function(m) error('again') end, 'x') "
                        "return (not ok and type(e) == 'string') and 1 or 0"),
            1);
  CHECK_INT(run_err(sb, "xpcall(function() end)", &err), -1);
  CHECK_CONTAINS(err.msg, "bad argument #2 to 'xpcall' (function expected, got no value)");
  luasandbox_free(sb);
}

/* The other ways Lua code runs on an error path: to-be-closed variables
 * (__close runs while the error unwinds), the error object's __tostring
 * (the host's message handler asks it for its text), and both inside an
 * xpcall. Each stays under the budget. */
TEST(close_and_tostring_on_error_paths_stay_under_the_budget)
{
  LuaSandboxLimits lim = {0, 100000, 0};
  LuaSandbox *sb = luasandbox_new(&lim);
  VigilError err = VIGIL_ERROR_INIT;
  static const char *const escapes[] = {
    "local x <close> = setmetatable({}, {__close = function() while true do end end})\n"
    "while true do end",
    "local x <close> = setmetatable({}, {__close = function() while true do end end})\n"
    "error('x')",
    "local x <close> = setmetatable({}, {__close = function() while true do end end})\n"
    "local y <close> = setmetatable({}, {__close = function() while true do end end})\n"
    "return 1",
    "xpcall(function()\n"
    "  local x <close> = setmetatable({}, {__close = function() while true do end end})\n"
    "  while true do end\n"
    "end, function(e) return e end)",
    "xpcall(function()\n"
    "  local x <close> = setmetatable({}, {__close = function() while true do end end})\n"
    "  error('x')\n"
    "end, function(e) while true do end end)",
    "error(setmetatable({}, {__tostring = function() while true do end end}))",
    "xpcall(function() error(setmetatable({}, {__tostring = function() while true do end end})) "
    "end, function(e) return tostring(e) end)",
    "local t = setmetatable({}, {__tostring = function() while true do end end})\n"
    "xpcall(function() while true do end end, function(e) error(t) end)",
  };
  for (size_t i = 0; i < sizeof escapes / sizeof escapes[0]; i++) {
    if (run_err_bounded(sb, escapes[i], &err) != -1)
      check_fail(__FILE__, __LINE__, "chunk %zu ran to the end", i);
    if (strstr(err.msg, "instruction budget of 100000 exceeded") == NULL)
      check_fail(__FILE__, __LINE__, "chunk %zu: \"%s\" does not name the budget", i, err.msg);
    CHECK_INT(run_int(sb, "return 6"), 6);
  }
  /* An ordinary __close and __tostring still work. */
  CHECK_INT(run_int(sb, "local n = 0 do local x <close> = setmetatable({}, "
                        "{__close = function() n = n + 1 end}) end return n"),
            1);
  CHECK_INT(run_err(sb, "error(setmetatable({}, {__tostring = function() return 'mine' end}))",
                    &err),
            -1);
  CHECK_STR(err.msg, "invalid_params: mine");
  luasandbox_free(sb);
}

TEST(unbounded_recursion_is_an_error_not_a_crash)
{
  /* With room to spare, Lua's own stack limit stops it. */
  LuaSandboxLimits lim = {256u << 20, 100000000, 0};
  LuaSandbox *sb = luasandbox_new(&lim);
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(run_err(sb, "local function f(n) return 1 + f(n + 1) end return f(1)", &err), -1);
  CHECK_CONTAINS(err.msg, "stack overflow");
  /* Through C functions: the C stack limit. */
  CHECK_INT(run_err(sb, "local t = setmetatable({}, {}); getmetatable(t).__index = "
                        "function(t, k) return t[k] end; return t.x",
                        &err),
            -1);
  CHECK_CONTAINS(err.msg, "stack overflow");
  CHECK_INT(run_int(sb, "return 2"), 2);
  luasandbox_free(sb);

  /* With the default cap, whichever limit comes first, cleanly. */
  sb = luasandbox_new(NULL);
  CHECK_INT(run_err(sb, "local function f(n) return 1 + f(n + 1) end return f(1)", &err), -1);
  CHECK(strstr(err.msg, "stack overflow") || strstr(err.msg, "memory limit"));
  CHECK_INT(run_int(sb, "return 3"), 3);
  luasandbox_free(sb);
}

TEST(memory_cap_refuses_and_state_survives)
{
  LuaSandbox *sb = luasandbox_new(NULL);
  size_t before = luasandbox_memory(sb);
  CHECK(before > 0 && before < LUASANDBOX_DEFAULT_MEMORY);
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(run_err(sb, "local s = string.rep('x', 1e9) return #s", &err), -1);
  CHECK_STR(err.msg, "invalid_params: memory limit of 16777216 bytes exceeded");
  CHECK(luasandbox_refusals(sb) > 0);
  CHECK(luasandbox_memory(sb) <= LUASANDBOX_DEFAULT_MEMORY);
  /* Many small allocations reach the cap too. */
  CHECK_INT(run_err(sb, "local t = {} for i = 1, 1e8 do t[i] = {i} end", &err), -1);
  CHECK_STR(err.msg, "invalid_params: memory limit of 16777216 bytes exceeded");
  /* Caught inside the chunk and rethrown as it was: still the memory error. */
  CHECK_INT(run_err(sb, "local ok, e = pcall(string.rep, 'x', 1e9) error(e, 0)", &err), -1);
  CHECK_STR(err.msg, "invalid_params: memory limit of 16777216 bytes exceeded");
  /* Caught and ignored: the chunk goes on. */
  CHECK_INT(run_int(sb, "local ok = pcall(string.rep, 'x', 1e9) return ok and 0 or 1"), 1);
  CHECK_INT(run_int(sb, "return #string.rep('y', 1000)"), 1000);
  luasandbox_free(sb);
}

TEST(errors_name_chunk_and_line)
{
  LuaSandbox *sb = luasandbox_new(NULL);
  VigilError err = VIGIL_ERROR_INIT;
  const char *src = "local a = 1\nlocal b = = 2\n";
  CHECK_INT(luasandbox_run(sb, src, strlen(src), "@conf/x.lua", 0, &err), -1);
  CHECK_STR(err.msg, "invalid_params: conf/x.lua:2: unexpected symbol near '='");

  error_clear(&err);
  src = "local t = nil\n\nreturn t.x\n";
  CHECK_INT(luasandbox_run(sb, src, strlen(src), "@conf/y.lua", 1, &err), -1);
  CHECK_CONTAINS(err.msg, "invalid_params: conf/y.lua:3: attempt to index a nil value");
  CHECK_CONTAINS(err.msg, "stack traceback:");

  /* error() with a non-string value. */
  CHECK_INT(run_err(sb, "error({})", &err), -1);
  CHECK_CONTAINS(err.msg, "(error object is a table value)");
  CHECK_INT(run_err(sb, "error(setmetatable({}, {__tostring = function() return 'mine' end}))",
                    &err),
            -1);
  CHECK_STR(err.msg, "invalid_params: mine");

  /* A path longer than Lua's 60-byte source ids is named whole. */
  char longname[256];
  snprintf(longname, sizeof longname, "@/%s/%s/config.lua",
           "a-rather-long-directory-name-for-a-project",
           "and-another-level-of-directories-below-it");
  error_clear(&err);
  src = "\n\n\nx = = 1";
  CHECK_INT(luasandbox_run(sb, src, strlen(src), longname, 0, &err), -1);
  char want[400];
  snprintf(want, sizeof want, "invalid_params: %s:4: unexpected symbol near '='", longname + 1);
  CHECK_STR(err.msg, want);
  luasandbox_free(sb);
}

TEST(call_runs_a_function_under_the_budget)
{
  LuaSandboxLimits lim = {0, 50000, 0};
  LuaSandbox *sb = luasandbox_new(&lim);
  lua_State *L = luasandbox_state(sb);
  VigilError err = VIGIL_ERROR_INIT;
  const char *src = "return function(a, b) return a * b end, function() while true do end end";
  CHECK_INT(luasandbox_run(sb, src, strlen(src), "=fns", 2, &err), 0);
  int top = lua_gettop(L);
  lua_pushvalue(L, -2);
  lua_pushinteger(L, 6);
  lua_pushinteger(L, 7);
  CHECK_INT(luasandbox_call(sb, 2, 1, &err), 0);
  CHECK_INT(lua_tointeger(L, -1), 42);
  lua_pop(L, 1);
  CHECK_INT(lua_gettop(L), top);
  for (int i = 0; i < 3; i++) {
    error_clear(&err);
    lua_pushvalue(L, -1);
    CHECK_INT(luasandbox_call(sb, 0, 0, &err), -1);
    CHECK_CONTAINS(err.msg, "instruction budget of 50000 exceeded");
    CHECK_INT(lua_gettop(L), top);
  }
  lua_pop(L, 2);
  luasandbox_free(sb);
}

TEST(run_file_reads_and_bounds_the_file)
{
  char dir[] = "/tmp/vigil_lsb_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char path[64];
  snprintf(path, sizeof path, "%s/conf.lua", dir);
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  fputs("\xEF\xBB\xBFreturn 40 + 2\n", f);
  fclose(f);

  LuaSandbox *sb = luasandbox_new(NULL);
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(luasandbox_run_file(sb, path, 1 << 20, 1, &err), 0);
  CHECK_INT(lua_tointeger(luasandbox_state(sb), -1), 42);
  lua_pop(luasandbox_state(sb), 1);

  CHECK_INT(luasandbox_run_file(sb, path, 5, 1, &err), -1);
  char want[400];
  snprintf(want, sizeof want, "invalid_params: %s: larger than 5 bytes", path);
  CHECK_STR(err.msg, want);

  error_clear(&err);
  CHECK_INT(luasandbox_run_file(sb, "/nonexistent/vigil.lua", 1 << 20, 1, &err), -1);
  CHECK_STR(err.msg, "invalid_params: /nonexistent/vigil.lua: cannot open: No such file or "
                     "directory");
  error_clear(&err);
  CHECK_INT(luasandbox_run_file(sb, dir, 1 << 20, 1, &err), -1);
  CHECK_CONTAINS(err.msg, "Is a directory");
  CHECK_INT(lua_gettop(luasandbox_state(sb)), 0);
  luasandbox_free(sb);
  unlink(path);
  rmdir(dir);
}

TEST(tiny_memory_cap_fails_cleanly)
{
  LuaSandboxLimits lim = {1024, 0, 0};
  CHECK(luasandbox_new(&lim) == NULL);
  LuaSandboxLimits small = {256 * 1024, 0, 0};
  LuaSandbox *sb = luasandbox_new(&small);
  CHECK(sb != NULL);
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(run_err(sb, "local t = {} for i = 1, 1e6 do t[i] = tostring(i) end", &err), -1);
  CHECK_STR(err.msg, "invalid_params: memory limit of 262144 bytes exceeded");
  CHECK_INT(run_int(sb, "return 9"), 9);
  luasandbox_free(sb);
}

int
main(void)
{
  RUN(removed_globals_are_absent);
  RUN(load_takes_text_only_and_defaults_to_the_sandbox_globals);
  RUN(gc_metamethods_are_refused);
  RUN(infinite_loop_is_stopped_by_the_budget);
  RUN(pcall_cannot_swallow_the_budget);
  RUN(xpcall_handlers_cannot_escape_the_budget);
  RUN(close_and_tostring_on_error_paths_stay_under_the_budget);
  RUN(unbounded_recursion_is_an_error_not_a_crash);
  RUN(memory_cap_refuses_and_state_survives);
  RUN(errors_name_chunk_and_line);
  RUN(call_runs_a_function_under_the_budget);
  RUN(run_file_reads_and_bounds_the_file);
  RUN(tiny_memory_cap_fails_cleanly);
  return check_summary();
}
