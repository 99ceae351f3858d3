/*
 * The Lua sandbox: what is gone (io, os, package, debug, require, dofile,
 * loadfile, print, string.dump, bytecode), what bounds a chunk (the
 * instruction budget, also through pcall; the memory cap; the stack; the
 * wall clock, also inside and between costly C calls), that a state stays
 * usable after each kind of failure, and that messages name the chunk and
 * the line.
 */
#include <lauxlib.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "policy/luasandbox.h"

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

/* Every library function is wrapped to charge its work (luasandbox_libs.c),
 * and the wrappers call Lua's own in the same frame: results are Lua's,
 * and an error names the function and the line that called it, as Lua's
 * own messages do (the wrappers before issue 22 read "bad argument #1 to
 * '?'", without a line). */
TEST(wrapped_functions_behave_as_lua_s_own)
{
  LuaSandbox *sb = luasandbox_new(NULL);
  VigilError err = VIGIL_ERROR_INIT;
  static const struct {
    const char *src, *want;
  } errors[] = {
    {"table.insert(nil, 1)", "test:1: bad argument #1 to 'insert' (table expected, got nil)"},
    {"string.rep()", "test:1: bad argument #1 to 'rep' (string expected, got no value)"},
    {"local s = 'x' s:rep({})", "test:1: bad argument #1 to 'rep' (number expected, got table)"},
    {"utf8.len(nil)", "test:1: bad argument #1 to 'len' (string expected, got nil)"},
    {"math.max()", "test:1: bad argument #1 to 'max' (value expected)"},
    {"string.byte('abc', 'x')", "test:1: bad argument #2 to 'byte' (number expected, got string)"},
    {"setmetatable({}, {__gc = function() end})",
     "test:1: setmetatable: __gc metamethods are not allowed in the sandbox"},
  };
  for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) {
    CHECK_INT(run_err(sb, errors[i].src, &err), -1);
    CHECK_CONTAINS(err.msg, errors[i].want);
  }
  /* Results, iterators (pairs, ipairs, utf8.codes, gmatch), upvalues
   * (math.random's state), conversions and the replaced functions. */
  CHECK_INT(run_int(sb, "return (pairs({}) == next) and 1 or 0"), 1);
  CHECK_INT(run_int(sb, "local n = 0\n"
                        "for k, v in pairs({a = 1, b = 2}) do n = n + v end\n"
                        "for i, v in ipairs({10, 20}) do n = n + v end\n"
                        "for p, c in utf8.codes('h\\u{e9}') do n = n + c end\n"
                        "for p, c in utf8.codes('h\\u{e9}', true) do n = n + c end\n"
                        "for w in ('a b c'):gmatch('%a') do n = n + 1 end\n"
                        "return n"),
            3 + 30 + 2 * (104 + 233) + 3);
  CHECK_INT(run_int(sb, "local r = math.random(1, 3) return (r >= 1 and r <= 3) and 1 or 0"), 1);
  CHECK_INT(run_int(sb, "return ('10' + 5) + tonumber('0x10') + tonumber('z', 36) + "
                        "select('#', 1, 2, 3) + #string.rep('ab', 3, ',') + "
                        "math.max(3, 7, 5) + #math.max('b', 'c', 'a')"),
            15 + 16 + 35 + 3 + 8 + 7 + 1);
  CHECK_INT(run_int(sb, "local t = {3, 1, 2} table.sort(t)\n"
                        "local u = {'b', 'a'} table.sort(u, function(x, y) return x > y end)\n"
                        "return (table.concat(t) == '123' and table.concat(u) == 'ba') and 1 or 0"),
            1);
  CHECK_INT(run_int(sb, "return (string.format('%5s|%q|%d', 'ab', 'a\\0b', '42') == "
                        "'   ab|\"a\\\\0b\"|42') and 1 or 0"),
            1);
  CHECK_INT(run_int(sb, "local i = 0\n"
                        "local f = load(function() i = i + 1 if i == 1 then return 'return ' "
                        "elseif i == 2 then return '4' .. ('2'):rep(1) end end)\n"
                        "return f()"),
            42);
  CHECK_INT(run_int(sb, "local f, e = load('x = = 1') "
                        "return (f == nil and e:find('unexpected symbol', 1, true)) and 1 or 0"),
            1);
  CHECK_INT(run_int(sb, "return string.packsize('i4i8') + #string.pack('i4', 7) + "
                        "#string.unpack('z', 'ab\\0')"),
            12 + 4 + 2);
  luasandbox_free(sb);
}

/* Costly work in C: calls that do a lot inside one C function (or one VM
 * instruction), alone or in a loop of a few instructions, each with the
 * review's (issue 22) or the audit's example. Before the fix each of these
 * froze a run for good or overshot its wall-clock limit many times over,
 * because nothing charged the work and the clock was read only every 1000
 * instructions. `charged` says that the instruction budget stops it too
 * (its work is charged as it goes); the others are bounded by the clock
 * alone: a parse whose cost grows faster than its text, and a VM
 * instruction that converts a long string to a number. */
typedef struct {
  const char *what;
  const char *src;
  bool charged;
} CostlyCall;

/* A chunk that takes seconds to parse although it is only some 600 KB:
 * 100 nested functions with 198 locals each, then 100,000 references to a
 * global, each looked up through every local of every level. */
#define SLOW_PARSE                                                                       \
  "local names = {} for i = 1, 198 do names[i] = 'a' .. i end\n"                       \
  "local level = 'local function f() local ' .. table.concat(names, ',') .. ' '\n"       \
  "local src = level:rep(100) .. ('x=y '):rep(100000) .. (' end'):rep(100)\n"

static const CostlyCall costly_calls[] = {
  {"string.rep of an empty string (the review's)",
   "return string.rep('', math.maxinteger) .. 'x'", true},
  {"string.rep of empty pieces with a separator",
   "while true do string.rep('', 8e6, 'x') end", true},
  {"string.rep of one byte",
   "while true do string.rep('x', 8e6) end", true},
  {"string.format('%q') of control characters",
   "local s = ('\\0'):rep(1e6) while true do string.format('%q', s) end", true},
  {"string.packsize of a long format",
   "local f = ('i16'):rep(2e6) while true do string.packsize(f) end", true},
  {"string.pack of a long format",
   "local f = ('x'):rep(6e6) while true do string.pack(f) end", true},
  {"load of a large chunk",
   "local s = (' '):rep(8e6) while true do load(s) end", true},
  {"load of a chunk that is slow to parse", SLOW_PARSE "load(src)", false},
  {"load from a reader that never ends",
   "local p = (' '):rep(4e6) load(function() return p end)", true},
  {"string.upper", "local s = ('x'):rep(16e6) while true do s:upper() end", true},
  {"string.lower", "local s = ('X'):rep(16e6) while true do s:lower() end", true},
  {"string.reverse", "local s = ('x'):rep(16e6) while true do s:reverse() end", true},
  {"string.byte of a long range",
   "local s = ('x'):rep(9e5) while true do s:byte(1, -1) end", true},
  {"table.unpack of a long range", "while true do table.unpack({}, 1, 9e5) end", true},
  {"utf8.char of many arguments",
   "local t = {} for i = 1, 2e5 do t[i] = 65 end\n"
   "while true do utf8.char(table.unpack(t)) end", true},
  {"tonumber of a long string",
   "local s = ('1'):rep(16e6) while true do tonumber(s) end", true},
  {"tonumber of a long string in base 36",
   "local s = ('z'):rep(16e6) while true do tonumber(s, 36) end", true},
  {"arithmetic on a long numeric string",
   "local s = ('1'):rep(16e6) while true do local x = s + 0 end", true},
  {"a math function given a long numeric string",
   "local s = ('1'):rep(16e6) while true do math.floor(s) end", true},
  {"math.max of long strings",
   "local a, b = ('x'):rep(4e6), ('x'):rep(4e6 - 1) .. 'y'\n"
   "local t = {} for i = 1, 1e5 do t[i] = i % 2 == 0 and a or b end\n"
   "return math.max(table.unpack(t))", true},
  {"table.sort of long strings",
   "local a, b = ('x'):rep(1e6), ('x'):rep(1e6 - 1) .. 'y'\n"
   "local t = {} for i = 1, 2e4 do t[i] = i % 3 == 0 and a or b end\n"
   "table.sort(t)", true},
  {"utf8.codes' iterator over continuation bytes",
   "local s = ('\\x80'):rep(16e6) local f = utf8.codes(s) while true do f(s, 0) end", true},
  {"a numeric for loop whose limit is a long string (one VM instruction)",
   "local s = ('1'):rep(12e6) while true do for i = 1, s do break end end", false},
};

/* The wall-clock limit of the runs below, and their memory cap (room for a
 * few strings of 16 MB). */
#define COSTLY_LIMIT_MS 1000
#define COSTLY_MEMORY (64u << 20)

/* CLOCK_MONOTONIC in milliseconds. */
static double
now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Point 5 of issue 22: with a budget too large to matter, each costly call
 * is cut off by the wall-clock limit, within twice the limit measured on
 * the run itself (the limit is wall clock, so the bound is relative to it,
 * whatever the machine's load or the sanitizers). The review's string.rep
 * passes the budget at once, which is also a limit. */
TEST(costly_c_calls_stop_within_twice_the_time_limit)
{
  LuaSandboxLimits lim = {COSTLY_MEMORY, UINT64_C(1) << 50, COSTLY_LIMIT_MS};
  char time_msg[64];
  snprintf(time_msg, sizeof time_msg, "time limit of %d ms exceeded", COSTLY_LIMIT_MS);
  for (size_t i = 0; i < sizeof costly_calls / sizeof costly_calls[0]; i++) {
    const CostlyCall *c = &costly_calls[i];
    LuaSandbox *sb = luasandbox_new(&lim);
    VigilError err = VIGIL_ERROR_INIT;
    double t0 = now_ms();
    int rc = run_err_bounded(sb, c->src, &err);
    double took = now_ms() - t0;
    if (rc != -1)
      check_fail(__FILE__, __LINE__, "%s: ran to the end", c->what);
    else if (strstr(err.msg, time_msg) == NULL && strstr(err.msg, "instruction budget") == NULL)
      check_fail(__FILE__, __LINE__, "%s: \"%.300s\" names no limit", c->what, err.msg);
    if (took >= 2.0 * COSTLY_LIMIT_MS)
      check_fail(__FILE__, __LINE__, "%s: took %.0f ms, over twice the limit of %d ms",
                 c->what, took, COSTLY_LIMIT_MS);
    CHECK_INT(run_int(sb, "return 7"), 7);
    luasandbox_free(sb);
  }
}

/* Point 1 of issue 22: the same calls under an ordinary budget (the
 * sandbox's default, whose wall-clock limit is 2 s) are stopped by the
 * budget, because their C work is charged to it as it goes. */
TEST(costly_c_calls_are_charged_to_the_budget)
{
  LuaSandboxLimits lim = {COSTLY_MEMORY, LUASANDBOX_DEFAULT_INSTRUCTIONS, 0};
  char budget_msg[64];
  snprintf(budget_msg, sizeof budget_msg, "instruction budget of %u exceeded",
           LUASANDBOX_DEFAULT_INSTRUCTIONS);
  for (size_t i = 0; i < sizeof costly_calls / sizeof costly_calls[0]; i++) {
    const CostlyCall *c = &costly_calls[i];
    if (!c->charged)
      continue;
    LuaSandbox *sb = luasandbox_new(&lim);
    VigilError err = VIGIL_ERROR_INIT;
    if (run_err_bounded(sb, c->src, &err) != -1)
      check_fail(__FILE__, __LINE__, "%s: ran to the end", c->what);
    else if (strstr(err.msg, budget_msg) == NULL)
      check_fail(__FILE__, __LINE__, "%s: \"%.300s\" does not name the budget", c->what,
                 err.msg);
    luasandbox_free(sb);
  }
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
  RUN(wrapped_functions_behave_as_lua_s_own);
  RUN(costly_c_calls_stop_within_twice_the_time_limit);
  RUN(costly_c_calls_are_charged_to_the_budget);
  return check_summary();
}
