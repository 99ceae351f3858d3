/*
 * Lua policies: finding and loading a policy by name (bundled first, then
 * the plugin paths; bad names, unknown names, syntax and load errors with
 * file and line), what a policy is handed (a read-only, already escaped
 * notification; a read-only request) and how its answers are checked, the
 * vigil module and require, and every sandbox point as a hostile policy
 * (tests/support/policies/hostile.lua) that is stopped with a traceback
 * while the state stays usable for the next call.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "base/log.h"
#include "base/memory.h"
#include "policy/policy.h"
#include "base/textfmt.h"

#define POLICIES_DIR VIGIL_SOURCE_DIR "/tests/support/policies"

/* The small budget every test runs policies under, so the suite stays fast. */
#define TEST_BUDGET 200000u

/* The wall-clock limit of the tests' policy calls: far above what any
 * attack takes before its instruction budget stops it, even under the
 * sanitizers on a loaded machine, so what stops an attack is the
 * mechanism its test names (the message says which), never the scheduler.
 * The one test of the wall-clock limit itself sets its own. */
#define TEST_TIME_MS 60000u

/* --- helpers ------------------------------------------------------------- */

/* A set over the test policies with the given extra plugin paths, lua_dir,
 * instruction budget and wall-clock limit (memory: the default). */
static PolicySet *
make_set_timed(const char *lua_dir, const char *const *paths, size_t npaths, uint64_t budget,
               uint64_t time_ms)
{
  PolicyOptions opts = {
    .lua_dir = lua_dir,
    .bundled_dir = POLICIES_DIR,
    .plugin_paths = paths,
    .nplugin_paths = npaths,
    .limits = {0, budget, time_ms},
  };
  return policyset_new(&opts);
}

/* The same with TEST_TIME_MS. */
static PolicySet *
make_set(const char *lua_dir, const char *const *paths, size_t npaths, uint64_t budget)
{
  return make_set_timed(lua_dir, paths, npaths, budget, TEST_TIME_MS);
}

/* Loads `name`, recording a failure (with the message) if it does not load. */
static Policy *
get(PolicySet *ps, const char *name)
{
  VigilError err = VIGIL_ERROR_INIT;
  Policy *p = policyset_get(ps, name, &err);
  if (p == NULL)
    check_fail(__FILE__, __LINE__, "policy %s did not load: %s", name, err.msg);
  return p;
}

/* An output notification labelled `label` with two lines, one with an ANSI
 * escape. */
static Notification *
make_note(const char *label)
{
  Notification *n = notification_new(kNotifOutput, "mon_abc123def456", label, kModeIdle);
  n->batch = 7;
  n->suppressed = 3;
  n->at_ms = 1700000000123;
  notification_add_line(n, 41, 0, 0, false, "hello", 5);
  notification_add_line(n, 42, 1, -1, true, "\x1b[31mred\x1b[0m", 12);
  return n;
}

/* Calls format with a notification labelled `label`. Returns the body
 * (malloc'd) on success, NULL on failure with err set. */
static char *
format_label(Policy *p, const char *label, VigilError *err)
{
  error_clear(err);
  Notification *n = make_note(label);
  StrBuf body = STRBUF_INIT;
  int rc = policy_format(p, n, &body, err);
  notification_free(n);
  if (rc != 0) {
    CHECK_INT(rc, -1);
    CHECK(err->set);
    strbuf_free(&body);
    return NULL;
  }
  return strbuf_take(&body);
}

/* Asserts that format(label) succeeds with exactly want. */
#define CHECK_FORMAT(p, label, want)                                              \
  do {                                                                            \
    VigilError e_ = VIGIL_ERROR_INIT;                                             \
    char *got_ = format_label(p, label, &e_);                                     \
    if (got_ == NULL)                                                             \
      check_fail(__FILE__, __LINE__, "format(%s) failed: %s", label, e_.msg);     \
    else                                                                          \
      CHECK_STR(got_, want);                                                      \
    free(got_);                                                                   \
  } while (0)

/* Runs the hostile policy's attack `label`: it must fail as an internal
 * error of format carrying want and a traceback, count as a failure, and
 * leave the state working for the next call. How long it took is nobody's
 * business here (timing goals live in bench/): what stopped it is in the
 * message. */
static void
attack_at(Policy *p, const char *label, const char *want, const char *file, int line)
{
  uint64_t failures = policy_failures(p);
  VigilError err = VIGIL_ERROR_INIT;
  char *body = format_label(p, label, &err);
  if (body != NULL) {
    check_fail(file, line, "attack %s was not stopped: returned \"%.200s\"", label, body);
    free(body);
    return;
  }
  if (err.code != kErrInternal)
    check_fail(file, line, "attack %s: code %d, want internal", label, (int)err.code);
  char prefix[128];
  snprintf(prefix, sizeof prefix, "internal: policy %s: format: ", policy_name(p));
  if (strncmp(err.msg, prefix, strlen(prefix)) != 0)
    check_fail(file, line, "attack %s: message \"%s\" does not start with \"%s\"", label,
               err.msg, prefix);
  if (strstr(err.msg, want) == NULL)
    check_fail(file, line, "attack %s: message \"%s\" lacks \"%s\"", label, err.msg, want);
  /* Lua runs no message handler for a memory error, so that one has none. */
  if (strstr(err.msg, "stack traceback:") == NULL && strstr(want, "memory limit") == NULL)
    check_fail(file, line, "attack %s: no traceback in \"%s\"", label, err.msg);
  if (policy_failures(p) != failures + 1)
    check_fail(file, line, "attack %s: failures %llu, want %llu", label,
               (unsigned long long)policy_failures(p), (unsigned long long)failures + 1);
  /* The state still works. */
  char *after = format_label(p, "after", &err);
  if (after == NULL || strcmp(after, "ok after") != 0)
    check_fail(file, line, "after attack %s the state does not work: %s", label,
               after ? after : err.msg);
  free(after);
}
#define ATTACK(p, label, want) attack_at(p, label, want, __FILE__, __LINE__)

/* The bound on an attack that must be cut off: tens of times what the
 * slowest sanitizer build takes, so only an attack that escaped the budget
 * (and would never return) reaches it. */
#define WATCHDOG_S 60

/* SIGALRM: an attack did not come back; fail the whole program. */
static void
watchdog_fired(int sig)
{
  (void)sig;
  static const char msg[] = "FAIL: a policy call did not return within the watchdog's "
                            "bound: Lua code escaped the instruction budget\n";
  ssize_t w = write(2, msg, sizeof msg - 1);
  (void)w;
  _exit(1);
}

static void
watchdog_arm(void)
{
  signal(SIGALRM, watchdog_fired);
  alarm(WATCHDOG_S);
}

/* A fresh temporary directory (static storage, overwritten per call). */
static const char *
make_tmpdir(void)
{
  static char dir[64];
  snprintf(dir, sizeof dir, "/tmp/vigil-test-policy-XXXXXX");
  if (mkdtemp(dir) == NULL)
    check_fail(__FILE__, __LINE__, "mkdtemp: %s", strerror(errno));
  return dir;
}

/* Writes text to dir/rel, making rel's directories. */
static void
write_file(const char *dir, const char *rel, const char *text)
{
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, rel);
  for (char *s = path + strlen(dir) + 1; (s = strchr(s, '/')) != NULL; s++) {
    *s = '\0';
    mkdir(path, 0700);
    *s = '/';
  }
  FILE *f = fopen(path, "w");
  if (f == NULL) {
    check_fail(__FILE__, __LINE__, "%s: %s", path, strerror(errno));
    return;
  }
  fputs(text, f);
  fclose(f);
}

static int
remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(path);
}

/* Removes a directory tree made by make_tmpdir. */
static void
remove_tree(const char *dir)
{
  nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* --- finding and loading ------------------------------------------------- */

TEST(bad_names_are_refused)
{
  PolicySet *ps = make_set(NULL, NULL, 0, TEST_BUDGET);
  static const char *const bad[] = {
    "../x", "", "Friendly", "a/b", "a.b", "x y", "\x1b[2J",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", /* 65 */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    VigilError err = VIGIL_ERROR_INIT;
    CHECK(policyset_get(ps, bad[i], &err) == NULL);
    CHECK_INT(err.code, kErrInvalidParams);
    CHECK_CONTAINS(err.msg, "invalid_params: policy: bad policy name \"");
    CHECK(strchr(err.msg, '\x1b') == NULL);
  }
  VigilError err = VIGIL_ERROR_INIT;
  CHECK(policyset_get(ps, "../x", &err) == NULL);
  CHECK_STR(err.msg,
            "invalid_params: policy: bad policy name \"../x\" (want 1..64 bytes of [a-z0-9_-])");
  const char **names;
  CHECK_INT(policyset_names(ps, &names), 0);
  policyset_free(ps);
}

TEST(unknown_policy_names_the_directories)
{
  const char *paths[] = {"/nonexistent/one", "/nonexistent/two/"};
  PolicySet *ps = make_set(NULL, paths, 2, TEST_BUDGET);
  VigilError err = VIGIL_ERROR_INIT;
  CHECK(policyset_get(ps, "nope", &err) == NULL);
  CHECK_INT(err.code, kErrInvalidParams);
  CHECK_STR(err.msg, "invalid_params: policy: unknown policy \"nope\" (looked in " POLICIES_DIR
                     ", /nonexistent/one, /nonexistent/two/)");
  policyset_free(ps);
}

TEST(syntax_error_is_refused_with_file_and_line)
{
  PolicySet *ps = make_set(NULL, NULL, 0, TEST_BUDGET);
  VigilError err = VIGIL_ERROR_INIT;
  CHECK(policyset_get(ps, "broken", &err) == NULL);
  CHECK_INT(err.code, kErrInvalidParams);
  CHECK_STR(err.msg, "invalid_params: policy \"broken\": " POLICIES_DIR
                     "/broken.lua:3: syntax error near 'x'");
  /* Not cached: asking again fails the same way. */
  error_clear(&err);
  CHECK(policyset_get(ps, "broken", &err) == NULL);
  CHECK_CONTAINS(err.msg, "broken.lua:3:");
  policyset_free(ps);
}

TEST(bad_files_are_refused)
{
  PolicySet *ps = make_set(NULL, NULL, 0, TEST_BUDGET);
  VigilError err = VIGIL_ERROR_INIT;
  CHECK(policyset_get(ps, "number", &err) == NULL);
  CHECK_STR(err.msg, "invalid_params: policy \"number\": " POLICIES_DIR
                     "/number.lua: returns a number, not a table");
  error_clear(&err);
  CHECK(policyset_get(ps, "badfield", &err) == NULL);
  CHECK_STR(err.msg, "invalid_params: policy \"badfield\": " POLICIES_DIR
                     "/badfield.lua: field 'route' is a string, not a function (format, "
                     "route and gate are functions or absent)");
  error_clear(&err);
  CHECK(policyset_get(ps, "loaderror", &err) == NULL);
  CHECK_CONTAINS(err.msg, "invalid_params: policy \"loaderror\": " POLICIES_DIR
                          "/loaderror.lua:3: boom at load");
  /* A policy without functions loads, and every call says "none". */
  Policy *p = get(ps, "noop");
  if (p) {
    CHECK(!policy_has_format(p) && !policy_has_route(p) && !policy_has_gate(p));
    Notification *n = make_note("x");
    StrBuf body = STRBUF_INIT;
    CHECK_INT(policy_format(p, n, &body, &err), 1);
    CHECK_INT(body.len, 0);
    DeliveryMode mode = kModeLiveSafe;
    bool drop = true;
    CHECK_INT(policy_route(p, n, &mode, &drop, &err), 1);
    CHECK_INT(mode, kModeLiveSafe);
    CHECK(drop);
    notification_free(n);
  }
  policyset_free(ps);
}

TEST(policies_are_cached_and_listed_in_load_order)
{
  PolicySet *ps = make_set(NULL, NULL, 0, TEST_BUDGET);
  Policy *a = get(ps, "friendly");
  Policy *b = get(ps, "noop");
  CHECK(a != NULL && b != NULL && a != b);
  CHECK(get(ps, "friendly") == a);
  if (a) {
    CHECK_STR(policy_name(a), "friendly");
    CHECK_STR(policy_path(a), POLICIES_DIR "/friendly.lua");
    CHECK(policy_has_format(a) && policy_has_route(a) && policy_has_gate(a));
  }
  const char **names;
  CHECK_INT(policyset_names(ps, &names), 2);
  CHECK_STR(names[0], "friendly");
  CHECK_STR(names[1], "noop");
  policyset_free(ps);
}

TEST(plugin_paths_are_searched_after_the_bundled_dir)
{
  char dir1[64], dir2[64];
  snprintf(dir1, sizeof dir1, "%s", make_tmpdir());
  snprintf(dir2, sizeof dir2, "%s", make_tmpdir());
  write_file(dir1, "friendly.lua", "return { format = function() return 'shadow' end }");
  write_file(dir1, "only_here.lua", "return { format = function() return 'first' end }");
  write_file(dir2, "only_here.lua", "return { format = function() return 'second' end }");
  write_file(dir2, "only_last.lua", "return { format = function() return 'last' end }");
  const char *paths[] = {dir1, dir2};
  PolicySet *ps = make_set(NULL, paths, 2, TEST_BUDGET);
  Policy *p = get(ps, "friendly");
  if (p)
    CHECK_STR(policy_path(p), POLICIES_DIR "/friendly.lua");
  p = get(ps, "only_here");
  if (p)
    CHECK_FORMAT(p, "x", "first");
  p = get(ps, "only_last");
  if (p) {
    CHECK_FORMAT(p, "x", "last");
    CHECK_CONTAINS(policy_path(p), dir2);
  }
  policyset_free(ps);
  remove_tree(dir1);
  remove_tree(dir2);
}

TEST(each_policy_has_its_own_globals)
{
  PolicySet *ps = make_set(NULL, NULL, 0, TEST_BUDGET);
  Policy *a = get(ps, "globals_a");
  Policy *b = get(ps, "globals_b");
  if (a && b) {
    CHECK_FORMAT(a, "x", "X=2");
    CHECK_FORMAT(b, "x", "X=nil");
    CHECK_FORMAT(a, "x", "X=3"); /* a's globals persist between its calls */
  }
  policyset_free(ps);
}

/* --- what a policy is handed, and its answers ---------------------------- */

TEST(format_sees_the_notification_read_only_and_escaped)
{
  PolicySet *ps = make_set(NULL, NULL, 0, TEST_BUDGET);
  Policy *p = get(ps, "friendly");
  if (p == NULL) {
    policyset_free(ps);
    return;
  }
  StrBuf at = STRBUF_INIT;
  textfmt_time(&at, 1700000000123);
  StrBuf want = STRBUF_INIT;
  /* keys counts every field n has: those of before the signal stage (9
   * here, 11 for the ending below) plus the five it added to every
   * notification (incidents, incidents_withheld, incidents_coalesced,
   * incidents_dropped, style; docs/policies.md). */
  strbuf_printf(&want,
                "type=output monitor_id=mon_abc123def456 label=lbl mode=idle batch=7 "
                "suppressed=3 state=running exit_code=nil signal=nil duration_ms=nil "
                "reason=nil dropped=nil lines=2 [41 stdout hello 0 false] "
                "[42 stderr \\e[31mred\\e[0m nil true] keys=14 at=%s",
                strbuf_cstr(&at));
  CHECK_FORMAT(p, "lbl", strbuf_cstr(&want));

  /* An ending notification: exit code, signal name, duration, reason. */
  Notification *n = notification_new(kNotifExit, "mon_x", NULL, kModeLiveSafe);
  n->state = kMonExited;
  n->has_exit_code = true;
  n->exit_code = 143;
  n->signal = 15;
  n->has_duration = true;
  n->duration_ms = 1234;
  n->reason = strdup("killed by\x1b[2J SIGTERM");
  n->at_ms = 1700000000123;
  StrBuf body = STRBUF_INIT;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(policy_format(p, n, &body, &err), 0);
  strbuf_reset(&want);
  strbuf_printf(&want,
                "type=exit monitor_id=mon_x label=nil mode=live_safe batch=nil suppressed=0 "
                "state=exited exit_code=143 signal=SIGTERM duration_ms=1234 "
                "reason=killed by\\e[2J SIGTERM dropped=nil lines=0 keys=16 at=%s",
                strbuf_cstr(&at));
  CHECK_STR(strbuf_cstr(&body), strbuf_cstr(&want));
  notification_free(n);

  /* A dropped notice carries its count. */
  n = notification_new(kNotifDropped, "mon_x", "d", kModeIdle);
  n->dropped_count = 12;
  strbuf_reset(&body);
  CHECK_INT(policy_format(p, n, &body, &err), 0);
  CHECK_CONTAINS(strbuf_cstr(&body), "type=dropped");
  CHECK_CONTAINS(strbuf_cstr(&body), "state=nil");
  CHECK_CONTAINS(strbuf_cstr(&body), "dropped=12");
  notification_free(n);

  strbuf_free(&body);
  strbuf_free(&want);
  strbuf_free(&at);
  policyset_free(ps);
}

TEST(writing_to_the_notification_is_refused)
{
  PolicySet *ps = make_set(NULL, NULL, 0, TEST_BUDGET);
  Policy *p = get(ps, "hostile");
  if (p) {
    ATTACK(p, "write_n", "hostile.lua:80: notification is read-only");
    ATTACK(p, "write_line", "notification is read-only");
    ATTACK(p, "setmetatable_n", "cannot change a protected metatable");
    CHECK_FORMAT(p, "getmetatable_n", "meta=read-only");
    /* rawset changes only the proxy this call sees. */
    CHECK_FORMAT(p, "rawset_n", "type=x");
  }
  policyset_free(ps);
}

TEST(format_must_return_a_string)
{
  PolicySet *ps = make_set(NULL, NULL, 0, TEST_BUDGET);
  Policy *p = get(ps, "friendly");
  if (p) {
    VigilError err = VIGIL_ERROR_INIT;
    CHECK(format_label(p, "number", &err) == NULL);
    CHECK_INT(err.code, kErrInternal);
    CHECK_STR(err.msg, "internal: policy friendly: format: returned a number, not a string");
    CHECK_INT(policy_failures(p), 1);
    char *fine = format_label(p, "fine", &err);
    CHECK(fine != NULL);
    free(fine);
  }
  policyset_free(ps);
}

/* route(n) with the label as the answer. */
static int
route_label(Policy *p, const char *label, DeliveryMode *mode, bool *drop, VigilError *err)
{
  error_clear(err);
  Notification *n = make_note(label);
  int rc = policy_route(p, n, mode, drop, err);
  notification_free(n);
  return rc;
}

TEST(route_answers_are_checked)
{
  PolicySet *ps = make_set(NULL, NULL, 0, TEST_BUDGET);
  Policy *p = get(ps, "friendly");
  if (p) {
    VigilError err = VIGIL_ERROR_INIT;
    DeliveryMode mode = kModeIdle;
    bool drop = true;
    CHECK_INT(route_label(p, "live_safe", &mode, &drop, &err), 0);
    CHECK_INT(mode, kModeLiveSafe);
    CHECK(!drop);
    CHECK_INT(route_label(p, "idle", &mode, &drop, &err), 0);
    CHECK_INT(mode, kModeIdle);
    CHECK(!drop);
    CHECK_INT(route_label(p, "drop", &mode, &drop, &err), 0);
    CHECK(drop);
    CHECK_INT(route_label(p, "sometimes", &mode, &drop, &err), -1);
    CHECK_INT(err.code, kErrInternal);
    CHECK_STR(err.msg, "internal: policy friendly: route: returned \"sometimes\" (want "
                       "\"idle\", \"live_safe\" or \"drop\")");
    /* A hostile value is quoted escaped and cut. */
    CHECK_INT(route_label(p, "\x1b[2Jaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                          &mode, &drop, &err),
              -1);
    CHECK(strchr(err.msg, '\x1b') == NULL);
    /* The label was escaped already ("\e[2J"); quoting it escapes its
     * backslash too, so the message shows what the policy returned. */
    CHECK_CONTAINS(err.msg, "returned \"\\\\e[2J");
    CHECK_CONTAINS(err.msg, "...\" (want");
    CHECK_INT(policy_failures(p), 2);
  }
  policyset_free(ps);
}

/* gate(req) for argv. */
static int
gate_argv(Policy *p, const char *program, const char *const *argv, bool *allow, char **reason,
          VigilError *err)
{
  error_clear(err);
  PolicyGateRequest req = {program, argv, false, "/tmp", "sess", NULL, NULL};
  return policy_gate(p, &req, allow, reason, err);
}

TEST(gate_allows_or_denies_with_a_reason)
{
  PolicySet *ps = make_set(NULL, NULL, 0, TEST_BUDGET);
  Policy *p = get(ps, "friendly");
  if (p) {
    VigilError err = VIGIL_ERROR_INIT;
    bool allow = false;
    char *reason = NULL;
    const char *rm[] = {"rm", "-rf", "/", NULL};
    CHECK_INT(gate_argv(p, "rm", rm, &allow, &reason, &err), 0);
    CHECK(!allow);
    CHECK_STR(reason, "no rm please");
    free(reason);
    const char *sh[] = {"sh", "-c", "x", NULL};
    CHECK_INT(gate_argv(p, "sh", sh, &allow, &reason, &err), 0);
    CHECK(!allow);
    CHECK(reason == NULL);
    const char *ls[] = {"ls", NULL};
    CHECK_INT(gate_argv(p, "ls", ls, &allow, &reason, &err), 0);
    CHECK(allow);
    CHECK(reason == NULL);
    CHECK_INT(gate_argv(p, "weird", ls, &allow, &reason, &err), -1);
    CHECK_STR(err.msg, "internal: policy friendly: gate: returned \"yes\" (want true, or "
                       "false and a reason)");
  }
  Policy *noop = get(ps, "noop");
  if (noop) {
    VigilError err = VIGIL_ERROR_INIT;
    bool allow = false;
    char *reason = NULL;
    const char *ls[] = {"ls", NULL};
    CHECK_INT(gate_argv(noop, "ls", ls, &allow, &reason, &err), 1);
  }
  policyset_free(ps);
}

/* One start request for the example gate and what it must answer. */
typedef struct {
  const char *argv[8];
  bool shell;
  const char *env[3];
  const char *label;
  bool allow;
  const char *why; /* in the reason when denied */
} GateCase;

/* examples/policies/gate.lua, an allow-by-argv-shape gate: the three
 * bypasses of the old word filter (r''m, $(printf r)m, find -delete), a
 * program allowed by its basename from any directory, a trusted label, and
 * every way of loading code the shapes refuse; and what it allows. */
TEST(the_example_gate_allows_by_argv_shape_only)
{
  const char *examples = VIGIL_SOURCE_DIR "/examples/policies";
  PolicySet *ps = make_set(NULL, &examples, 1, TEST_BUDGET);
  Policy *p = get(ps, "gate");
  static const GateCase cases[] = {
    /* The bypasses. */
    {{"/bin/sh", "-c", "r''m -rf /tmp/x"}, true, {NULL}, "deploy", false, "shell"},
    {{"/bin/sh", "-c", "$(printf r)m -rf /tmp/x"}, true, {NULL}, "deploy", false, "shell"},
    {{"find", ".", "-delete"}, false, {NULL}, NULL, false, "absolute path"},
    {{"/usr/bin/find", ".", "-delete"}, false, {NULL}, NULL, false, "not a program"},
    /* By basename from anywhere, and the label. */
    {{"/tmp/evil/npm", "run", "build"}, false, {NULL}, NULL, false, "not a program"},
    {{"/usr/bin/../../tmp/make"}, false, {NULL}, NULL, false, "not a program"},
    {{"npm", "run", "build"}, false, {NULL}, "deploy", false, "absolute path"},
    {{"/bin/sh", "-c", "echo hi"}, true, {NULL}, "deploy", false, "shell"},
    {{"rm", "-rf", "/"}, false, {NULL}, NULL, false, "absolute path"},
    {{"/bin/rm", "-rf", "/"}, false, {NULL}, NULL, false, "not a program"},
    /* make: one target, never an option or a variable. */
    {{"/usr/bin/make", "-f", "/tmp/evil.mk"}, false, {NULL}, NULL, false, "make"},
    {{"/usr/bin/make", "CC=/tmp/evil"}, false, {NULL}, NULL, false, "make"},
    {{"/usr/bin/make", "--eval=x:"}, false, {NULL}, NULL, false, "make"},
    {{"/usr/bin/make", "a", "b"}, false, {NULL}, NULL, false, "make"},
    /* npm: run SCRIPT or test, nothing after. */
    {{"/usr/bin/npm", "exec", "evil"}, false, {NULL}, NULL, false, "npm"},
    {{"/usr/bin/npm", "run", "-s"}, false, {NULL}, NULL, false, "npm"},
    {{"/usr/bin/npm", "run", "build", "--", "--x"}, false, {NULL}, NULL, false, "npm"},
    {{"/usr/bin/npm", "install", "evil"}, false, {NULL}, NULL, false, "npm"},
    /* pytest: nothing that loads code or configuration from elsewhere. */
    {{"/usr/bin/pytest", "-p", "evil"}, false, {NULL}, NULL, false, "pytest"},
    {{"/usr/bin/pytest", "-pevil"}, false, {NULL}, NULL, false, "pytest"},
    {{"/usr/bin/pytest", "--pyargs", "pkg"}, false, {NULL}, NULL, false, "pytest"},
    {{"/usr/bin/pytest", "-c", "/tmp/x.ini"}, false, {NULL}, NULL, false, "pytest"},
    {{"/usr/bin/pytest", "-o", "addopts=-p evil"}, false, {NULL}, NULL, false, "pytest"},
    {{"/usr/bin/pytest", "--rootdir=/tmp"}, false, {NULL}, NULL, false, "pytest"},
    {{"/usr/bin/pytest", "/tmp/evil_test.py"}, false, {NULL}, NULL, false, "pytest"},
    {{"/usr/bin/pytest", "tests/../../tmp/x.py"}, false, {NULL}, NULL, false, "pytest"},
    {{"/usr/bin/pytest", "-k", "__import__('os')"}, false, {NULL}, NULL, false, "pytest"},
    {{"/usr/bin/python3", "-c", "import os"}, false, {NULL}, NULL, false, "python3"},
    {{"/usr/bin/python3", "-m", "pip"}, false, {NULL}, NULL, false, "python3"},
    {{"/usr/bin/python3", "-m", "pytest", "-p", "x"}, false, {NULL}, NULL, false, "pytest"},
    /* The environment a start adds can load code too. */
    {{"/usr/bin/pytest"}, false, {"PYTEST_ADDOPTS=-p evil", NULL}, NULL, false, "env"},
    {{"/usr/bin/make", "test"}, false, {"MAKEFLAGS=-f/tmp/evil", NULL}, NULL, false, "env"},
    {{"/usr/bin/npm", "test"}, false, {"PATH=/tmp/evil", NULL}, NULL, false, "env"},
    /* Allowed shapes. */
    {{"/usr/bin/make"}, false, {NULL}, NULL, true, NULL},
    {{"/usr/bin/make", "test"}, false, {"CI=1", NULL}, NULL, true, NULL},
    {{"/usr/bin/make", "build/app.o"}, false, {NULL}, NULL, true, NULL},
    {{"/usr/bin/npm", "run", "build"}, false, {NULL}, NULL, true, NULL},
    {{"/usr/bin/npm", "run", "test:unit"}, false, {NULL}, NULL, true, NULL},
    {{"/usr/bin/npm", "test"}, false, {NULL}, NULL, true, NULL},
    {{"/usr/bin/pytest"}, false, {NULL}, NULL, true, NULL},
    {{"/usr/bin/pytest", "-q", "-x", "tests/test_a.py::test_b", "-k", "not slow"},
     false, {NULL}, NULL, true, NULL},
    {{"/usr/bin/python3", "-m", "pytest", "-q", "--tb=short", "tests"}, false, {NULL}, NULL,
     true, NULL},
  };
  for (size_t i = 0; p && i < sizeof cases / sizeof cases[0]; i++) {
    const GateCase *c = &cases[i];
    PolicyGateRequest req = {c->argv[0], c->argv, c->shell, "/tmp", "sess", c->label, c->env};
    bool allow = !c->allow;
    char *reason = NULL;
    VigilError err = VIGIL_ERROR_INIT;
    int rc = policy_gate(p, &req, &allow, &reason, &err);
    if (rc != 0)
      check_fail(__FILE__, __LINE__, "case %zu (%s %s): gate failed: %s", i, c->argv[0],
                 c->argv[1] ? c->argv[1] : "", err.msg);
    else if (allow != c->allow)
      check_fail(__FILE__, __LINE__, "case %zu (%s %s %s): %s, want %s", i, c->argv[0],
                 c->argv[1] ? c->argv[1] : "", c->argv[1] && c->argv[2] ? c->argv[2] : "",
                 allow ? "allowed" : "denied", c->allow ? "allowed" : "denied");
    else if (!allow && (reason == NULL || strstr(reason, c->why) == NULL))
      check_fail(__FILE__, __LINE__, "case %zu (%s): reason \"%s\" lacks \"%s\"", i,
                 c->argv[0], reason ? reason : "(none)", c->why);
    free(reason);
  }
  policyset_free(ps);
}

/* --- the vigil module and require ---------------------------------------- */

TEST(vigil_nonce_escape_time)
{
  PolicySet *ps = make_set(NULL, NULL, 0, TEST_BUDGET);
  Policy *p = get(ps, "vigil_api");
  if (p) {
    VigilError err = VIGIL_ERROR_INIT;
    char *a = format_label(p, "nonce", &err);
    char *b = format_label(p, "nonce", &err);
    CHECK(a && b);
    if (a && b) {
      CHECK_INT(strlen(a), 32);
      CHECK_INT(strspn(a, "0123456789abcdef"), 32);
      CHECK(strcmp(a, b) != 0);
    }
    free(a);
    free(b);
    CHECK_FORMAT(p, "escape", "\\e[31mred\\u{202e}x\\n");
    StrBuf t0 = STRBUF_INIT;
    textfmt_time(&t0, 0);
    CHECK_FORMAT(p, "time0", strbuf_cstr(&t0));
    strbuf_free(&t0);
    char *now = format_label(p, "time", &err);
    CHECK(now && strlen(now) == strlen("2026-04-24T15:59:59.120+01:00"));
    free(now);
  }
  policyset_free(ps);
}

TEST(vigil_log_writes_a_line_naming_the_policy)
{
  PolicySet *ps = make_set(NULL, NULL, 0, TEST_BUDGET);
  Policy *p = get(ps, "vigil_api");
  if (p) {
    int fds[2];
    CHECK_INT(pipe(fds), 0);
    int saved = dup(2);
    dup2(fds[1], 2);
    uint64_t before = log_lines_written();
    VigilError err = VIGIL_ERROR_INIT;
    char *body = format_label(p, "log", &err);
    CHECK(log_flush(10000)); /* the log's writer thread writes it */
    dup2(saved, 2);
    close(saved);
    close(fds[1]);
    char buf[4096];
    ssize_t n = read(fds[0], buf, sizeof buf - 1);
    close(fds[0]);
    buf[n > 0 ? n : 0] = '\0';
    CHECK_STR(body, "logged");
    free(body);
    CHECK_INT(log_lines_written(), before + 1);
    CHECK_CONTAINS(buf, " warn policy vigil_api: hello from a policy\\e[2J\n");
    /* Any other level is an error. */
    CHECK(format_label(p, "badlog", &err) == NULL);
    CHECK_CONTAINS(err.msg, "invalid option 'loud'");
  }
  policyset_free(ps);
}

/* Runs format("flood:COUNT") of the logger policy with stderr on a pipe
 * and returns what reached stderr (owned) and, in *ms, how long the call
 * took. */
static char *
flood_log(Policy *p, int count, double *ms)
{
  int fds[2];
  CHECK_INT(pipe(fds), 0);
  fcntl(fds[0], F_SETFL, O_NONBLOCK);
  fcntl(fds[0], F_SETPIPE_SZ, 1 << 20);
  int saved = dup(2);
  dup2(fds[1], 2);
  close(fds[1]);
  char label[32];
  snprintf(label, sizeof label, "flood:%d", count);
  VigilError err = VIGIL_ERROR_INIT;
  struct timespec t0, t1;
  watchdog_arm();
  clock_gettime(CLOCK_MONOTONIC, &t0);
  char *body = format_label(p, label, &err);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  alarm(0);
  bool flushed = log_flush(10000);
  dup2(saved, 2);
  close(saved);
  *ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
  CHECK(flushed);
  StrBuf out = STRBUF_INIT;
  char buf[65536];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0)
    strbuf_append(&out, buf, (size_t)n);
  close(fds[0]);
  if (body == NULL)
    check_fail(__FILE__, __LINE__, "flood:%d failed: %s", count, err.msg);
  free(body);
  return out.data ? strbuf_take(&out) : xstrdup("");
}

/* Occurrences of needle in s. */
static size_t
count_of(const char *s, const char *needle)
{
  size_t n = 0;
  for (const char *p = s; (p = strstr(p, needle)) != NULL; p += strlen(needle))
    n++;
  return n;
}

/* vigil.log is rate-limited per policy, per call and per second: a policy
 * logging in a tight loop writes a few lines and is cheap, and what it
 * dropped is counted and summed up in one line. (Before the limit, every
 * call was a write(2) of its own: 124k lines in one call stalled the loop
 * 1.2 s.) */
/* The rate limit's clock in the test below: it moves only when the test
 * says, so "the same second" does not depend on how fast the machine is. */
static uint64_t fake_now_ms = 1000000;

static uint64_t
fake_clock_ms(void)
{
  return fake_now_ms;
}

TEST(vigil_log_is_rate_limited_per_call_and_per_second)
{
  PolicyOptions opts = {
    .bundled_dir = POLICIES_DIR,
    .limits = {0, TEST_BUDGET, TEST_TIME_MS},
    .log_lines_per_s = 8,
    .log_lines_per_call = 5,
    .clock_ms = fake_clock_ms,
  };
  PolicySet *ps = policyset_new(&opts);
  Policy *p = get(ps, "logger");
  if (p) {
    uint64_t dropped_before = policy_log_lines_dropped();
    double ms;
    char *out = flood_log(p, 100, &ms);
    /* The first 5, then the summary of the 95 others. */
    CHECK_INT(count_of(out, " vigild info policy logger: flood line "), 5);
    CHECK_CONTAINS(out, "flood line 5\n");
    CHECK_CONTAINS(out, " vigild warn policy logger: 95 vigil.log lines dropped "
                        "(log.policy_lines_per_call is 5, log.policy_lines_per_s is 8)\n");
    CHECK_INT(policy_log_lines_dropped() - dropped_before, 95);
    free(out);
    /* In the same second only 3 more fit; the next summary waits (at most
     * one every 10 s per policy), the count does not. */
    out = flood_log(p, 100, &ms);
    CHECK_INT(count_of(out, " vigild info policy logger: flood line "), 3);
    CHECK_INT(count_of(out, "lines dropped"), 0);
    CHECK_INT(policy_log_lines_dropped() - dropped_before, 95 + 97);
    free(out);
    /* A second later the window has room again: the per-call limit (5)
     * applies; the summary still waits for its 10 s. */
    fake_now_ms += 1000;
    out = flood_log(p, 100, &ms);
    CHECK_INT(count_of(out, " vigild info policy logger: flood line "), 5);
    CHECK_INT(count_of(out, "lines dropped"), 0);
    free(out);
    /* Ten seconds after the first summary, the next one comes. */
    fake_now_ms += 10000;
    out = flood_log(p, 100, &ms);
    CHECK_INT(count_of(out, " vigild info policy logger: flood line "), 5);
    CHECK_CONTAINS(out, " vigil.log lines dropped (log.policy_lines_per_call is 5, ");
    free(out);
    /* A tight loop of vigil.log until the budget is cheap and writes
     * nothing more. */
    VigilError err = VIGIL_ERROR_INIT;
    int fds[2];
    CHECK_INT(pipe(fds), 0);
    int saved = dup(2);
    dup2(fds[1], 2);
    close(fds[1]);
    uint64_t written = log_lines_written();
    struct timespec t0, t1;
    watchdog_arm();
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char *body = format_label(p, "flood:100000000", &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    alarm(0);
    CHECK(log_flush(10000));
    dup2(saved, 2);
    close(saved);
    close(fds[0]);
    ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    printf("     a tight vigil.log loop ran to the budget in %.1f ms, writing %llu lines\n", ms,
           (unsigned long long)(log_lines_written() - written));
    CHECK(body == NULL);
    CHECK_CONTAINS(err.msg, "instruction budget of 200000 exceeded");
    free(body);
    /* The clock stands still: only the 3 lines left in this second's
     * window (8, of which the flood above took 5) are written. */
    CHECK_INT(log_lines_written() - written, 3);
  }
  /* Freeing the policy sums up what is still untold. */
  int fds[2];
  CHECK_INT(pipe(fds), 0);
  fcntl(fds[0], F_SETFL, O_NONBLOCK);
  int saved = dup(2);
  dup2(fds[1], 2);
  close(fds[1]);
  policyset_free(ps);
  CHECK(log_flush(10000));
  dup2(saved, 2);
  close(saved);
  char buf[4096];
  ssize_t n = read(fds[0], buf, sizeof buf - 1);
  close(fds[0]);
  buf[n > 0 ? n : 0] = '\0';
  CHECK_CONTAINS(buf, " vigild warn policy logger: ");
  CHECK_CONTAINS(buf, " vigil.log lines dropped (log.policy_lines_per_call is 5, ");
}

TEST(require_finds_modules_in_lua_dir_only_by_name)
{
  const char *lua_dir = make_tmpdir();
  char dir[64];
  snprintf(dir, sizeof dir, "%s", lua_dir);
  write_file(dir, "vigil/envelope.lua",
             "envelope_loads = (envelope_loads or 0) + 1\n"
             "return { wrap = function(s) return '<<' .. s .. '>>' end }\n");
  write_file(dir, "loop/a.lua", "return require 'loop.b'\n");
  write_file(dir, "loop/b.lua", "return require 'loop.a'\n");
  PolicySet *ps = make_set(dir, NULL, 0, TEST_BUDGET);
  Policy *p = get(ps, "vigil_api");
  if (p) {
    CHECK_FORMAT(p, "envelope", "<<body>> loads=1");
    CHECK_FORMAT(p, "envelope", "<<body>> loads=1"); /* cached */
    CHECK_FORMAT(p, "require_vigil", "true");
    VigilError err = VIGIL_ERROR_INIT;
    CHECK(format_label(p, "missing", &err) == NULL);
    char want[512];
    snprintf(want, sizeof want, "module 'nope.none' not found (looked in %s, %s)", dir,
             POLICIES_DIR);
    CHECK_CONTAINS(err.msg, want);
    CHECK(format_label(p, "loop", &err) == NULL);
    CHECK_CONTAINS(err.msg, "module 'loop.a' requires itself");
    /* The state still works, and the failed module was not cached. */
    CHECK_FORMAT(p, "envelope", "<<body>> loads=1");
    CHECK(format_label(p, "loop", &err) == NULL);
    CHECK_CONTAINS(err.msg, "requires itself");
  }
  policyset_free(ps);
  remove_tree(dir);
}

/* --- the sandbox, one hostile policy per point ---------------------------- */

TEST(no_io_os_require_os_or_path_escape)
{
  PolicySet *ps = make_set(NULL, NULL, 0, TEST_BUDGET);
  Policy *p = get(ps, "hostile");
  if (p) {
    ATTACK(p, "io_open", "attempt to index a nil value (global 'io')");
    ATTACK(p, "os_execute", "attempt to index a nil value (global 'os')");
    ATTACK(p, "require_os", "module 'os' not found (looked in " POLICIES_DIR ")");
    ATTACK(p, "require_escape", "bad module name \"../etc/passwd\"");
    ATTACK(p, "require_slash", "bad module name \"vigil/envelope\"");
  }
  policyset_free(ps);
}

TEST(bytecode_is_refused)
{
  PolicySet *ps = make_set(NULL, NULL, 0, TEST_BUDGET);
  Policy *p = get(ps, "hostile");
  if (p)
    CHECK_FORMAT(p, "bytecode",
                 "f=nil e=attempt to load a binary chunk (mode is 't') g=nil "
                 "e2=attempt to load a binary chunk (mode is 't') dump=nil");
  policyset_free(ps);
}

TEST(no_debug_library_and_no_collectgarbage)
{
  PolicySet *ps = make_set(NULL, NULL, 0, TEST_BUDGET);
  Policy *p = get(ps, "hostile");
  if (p) {
    ATTACK(p, "debug_getinfo", "attempt to index a nil value (global 'debug')");
    ATTACK(p, "debug_sethook", "attempt to index a nil value (global 'debug')");
    ATTACK(p, "gc_stop", "attempt to call a nil value (global 'collectgarbage')");
  }
  policyset_free(ps);
}

TEST(endless_loops_are_stopped_by_the_budget)
{
  PolicySet *ps = make_set(NULL, NULL, 0, TEST_BUDGET);
  Policy *p = get(ps, "hostile");
  if (p) {
    ATTACK(p, "loop", "hostile.lua:27: instruction budget of 200000 exceeded");
    ATTACK(p, "pcall_loop", "instruction budget of 200000 exceeded");
  }
  policyset_free(ps);
}

/* xpcall's message handler runs where the budget's error is raised, inside
 * the count hook: a handler that loops must still be cut off, in a call
 * and while the file loads. */
TEST(xpcall_handlers_are_stopped_by_the_budget)
{
  PolicySet *ps = make_set(NULL, NULL, 0, TEST_BUDGET);
  Policy *p = get(ps, "hostile");
  if (p) {
    watchdog_arm();
    ATTACK(p, "xpcall_loop", "instruction budget of 200000 exceeded");
    ATTACK(p, "xpcall_error", "instruction budget of 200000 exceeded");
    ATTACK(p, "xpcall_close", "instruction budget of 200000 exceeded");
    alarm(0);
  }
  VigilError err = VIGIL_ERROR_INIT;
  watchdog_arm();
  CHECK(policyset_get(ps, "xpcall_load", &err) == NULL);
  alarm(0);
  CHECK_INT(err.code, kErrInvalidParams);
  CHECK_CONTAINS(err.msg, "policy \"xpcall_load\": ");
  CHECK_CONTAINS(err.msg, "xpcall_load.lua:");
  CHECK_CONTAINS(err.msg, "instruction budget of 200000 exceeded");
  policyset_free(ps);
}

TEST(unbounded_recursion_is_an_error_not_a_crash)
{
  PolicySet *ps = make_set(NULL, NULL, 0, TEST_BUDGET);
  Policy *p = get(ps, "hostile");
  if (p) {
    ATTACK(p, "recurse", "");
    ATTACK(p, "recurse_c", "");
  }
  policyset_free(ps);
  /* With budget to spare, Lua's own stack limits are what stop it. */
  ps = make_set(NULL, NULL, 0, 100000000);
  p = get(ps, "hostile");
  if (p) {
    VigilError err = VIGIL_ERROR_INIT;
    CHECK(format_label(p, "recurse", &err) == NULL);
    CHECK(strstr(err.msg, "stack overflow") || strstr(err.msg, "memory limit"));
    ATTACK(p, "recurse_c", "stack overflow");
  }
  policyset_free(ps);
}

TEST(gigantic_strings_hit_the_memory_cap)
{
  PolicySet *ps = make_set(NULL, NULL, 0, TEST_BUDGET);
  Policy *p = get(ps, "hostile");
  if (p) {
    ATTACK(p, "big_string", "memory limit of 16777216 bytes exceeded");
    ATTACK(p, "format_big", "memory limit of 16777216 bytes exceeded");
    ATTACK(p, "concat_big", "memory limit of 16777216 bytes exceeded");
    /* Allocation is charged to the budget: a loop of 1 MB strings stops
     * there (uncharged, only the wall-clock limit would end it). */
    ATTACK(p, "rep_loop", "instruction budget of 200000 exceeded");
  }
  policyset_free(ps);
}

TEST(pathological_patterns_are_stopped)
{
  /* With a budget too large to matter, the step limit stops one call. */
  PolicySet *ps = make_set(NULL, NULL, 0, 1000000000);
  Policy *p = get(ps, "hostile");
  if (p) {
    ATTACK(p, "find", "pattern too complex: step limit of 10000000 exceeded");
  }
  policyset_free(ps);
  /* Under the usual budget, pattern steps are charged as instructions: one
   * call, and a loop of calls that each stay under the step limit. */
  ps = make_set(NULL, NULL, 0, TEST_BUDGET);
  p = get(ps, "hostile");
  if (p) {
    ATTACK(p, "find", "hostile.lua:58: instruction budget of 200000 exceeded");
    ATTACK(p, "find_loop", "instruction budget of 200000 exceeded");
    ATTACK(p, "gsub_loop", "instruction budget of 200000 exceeded");
  }
  policyset_free(ps);
}

TEST(long_c_calls_are_charged_or_timed_out)
{
  PolicySet *ps = make_set(NULL, NULL, 0, TEST_BUDGET);
  Policy *p = get(ps, "hostile");
  if (p) {
    /* table.move over 2^62 indexes would run for ever in one call. */
    ATTACK(p, "table_move", "instruction budget of 200000 exceeded");
  }
  policyset_free(ps);
  /* Comparing two distinct 3 MB strings is one instruction: only the
   * wall-clock limit sees it. This set has the engine's own limit (1 s +
   * 100 ns per budgeted instruction); the message names it, and the
   * watchdog catches a call that it would not stop. */
  ps = make_set_timed(NULL, NULL, 0, TEST_BUDGET, 0);
  p = get(ps, "hostile");
  if (p)
    ATTACK(p, "compare_loop", "time limit of 1020 ms exceeded");
  policyset_free(ps);
}

/* CLOCK_MONOTONIC in milliseconds. */
static double
now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The text of a module that takes seconds to compile although it is some
 * 500 KB (tests/unit/policy/test_luasandbox.c's SLOW_PARSE): 100 nested functions
 * with 198 locals each, then 100,000 references to a global, each looked up
 * through every local of every level. Freed by the caller. */
static char *
slow_module(void)
{
  StrBuf s = STRBUF_INIT;
  for (int level = 0; level < 100; level++) {
    strbuf_puts(&s, "local function f() local a1");
    for (int i = 2; i <= 198; i++)
      strbuf_printf(&s, ",a%d", i);
    strbuf_putc(&s, ' ');
  }
  for (int i = 0; i < 100000; i++)
    strbuf_puts(&s, "x=y ");
  for (int level = 0; level < 100; level++)
    strbuf_puts(&s, " end");
  strbuf_puts(&s, "\nreturn {}\n");
  return strbuf_take(&s);
}

/* require compiles its module under the call's limits (issue 22): a module
 * that takes seconds to compile is cut off by the wall-clock limit within
 * twice the limit, and a loop requiring a large module that fails to
 * compile (so it is never cached) is charged for every compile. */
TEST(require_compiles_under_the_limits)
{
  const char *tmp = make_tmpdir();
  char dir[64];
  snprintf(dir, sizeof dir, "%s", tmp);
  char *slow = slow_module();
  write_file(dir, "slow.lua", slow);
  free(slow);
  StrBuf big = STRBUF_INIT;
  strbuf_puts(&big, "--[[");
  for (int i = 0; i < 512 * 1024 / 64; i++)
    strbuf_puts(&big, "a long comment, sixty-four bytes a line, before a syntax error\n");
  strbuf_puts(&big, "]] x = = 1\n");
  write_file(dir, "broken.lua", strbuf_cstr(&big));
  strbuf_free(&big);
  write_file(dir, "requirer.lua",
             "return { format = function(n)\n"
             "  if n.label ~= 'slow' and n.label ~= 'broken' then return 'ok ' .. n.label end\n"
             "  while true do pcall(require, n.label) end\n"
             "end }\n");
  const char *paths[] = {dir};

  PolicySet *ps = make_set_timed(dir, paths, 1, UINT64_C(1) << 50, 1000);
  Policy *p = get(ps, "requirer");
  if (p) {
    watchdog_arm();
    double t0 = now_ms();
    ATTACK(p, "slow", "time limit of 1000 ms exceeded");
    double took = now_ms() - t0;
    alarm(0);
    if (took >= 2000.0)
      check_fail(__FILE__, __LINE__, "require of a slow module took %.0f ms, over twice "
                 "the limit of 1000 ms", took);
  }
  policyset_free(ps);

  ps = make_set_timed(dir, paths, 1, TEST_BUDGET, 5000);
  p = get(ps, "requirer");
  if (p) {
    watchdog_arm();
    ATTACK(p, "broken", "instruction budget of 200000 exceeded");
    alarm(0);
  }
  policyset_free(ps);
  remove_tree(dir);
}

int
main(void)
{
  RUN(bad_names_are_refused);
  RUN(unknown_policy_names_the_directories);
  RUN(syntax_error_is_refused_with_file_and_line);
  RUN(bad_files_are_refused);
  RUN(policies_are_cached_and_listed_in_load_order);
  RUN(plugin_paths_are_searched_after_the_bundled_dir);
  RUN(each_policy_has_its_own_globals);
  RUN(format_sees_the_notification_read_only_and_escaped);
  RUN(writing_to_the_notification_is_refused);
  RUN(format_must_return_a_string);
  RUN(route_answers_are_checked);
  RUN(gate_allows_or_denies_with_a_reason);
  RUN(the_example_gate_allows_by_argv_shape_only);
  RUN(vigil_nonce_escape_time);
  RUN(vigil_log_writes_a_line_naming_the_policy);
  RUN(vigil_log_is_rate_limited_per_call_and_per_second);
  RUN(require_finds_modules_in_lua_dir_only_by_name);
  RUN(no_io_os_require_os_or_path_escape);
  RUN(bytecode_is_refused);
  RUN(no_debug_library_and_no_collectgarbage);
  RUN(endless_loops_are_stopped_by_the_budget);
  RUN(xpcall_handlers_are_stopped_by_the_budget);
  RUN(unbounded_recursion_is_an_error_not_a_crash);
  RUN(gigantic_strings_hit_the_memory_cap);
  RUN(pathological_patterns_are_stopped);
  RUN(long_c_calls_are_charged_or_timed_out);
  RUN(require_compiles_under_the_limits);
  return check_summary();
}
