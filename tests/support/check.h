/*
 * A tiny test harness. Each tests/unit/test_*.c defines test functions with
 * TEST(name) and runs them from main with RUN(name); a failed CHECK prints
 * the file, line and values and marks the test failed, and check_summary()
 * prints "N passed, N failed" and returns the exit status.
 *
 * For tests with real children: test_child_path("child_flood") is the path of
 * a helper program built from tests/support/child_*.c, and test_run_loop_until
 * runs a libuv loop until a condition holds, failing on a deadline (a deadline
 * is a bound on a wait for an event, never a sleep).
 */
#ifndef VIGIL_CHECK_H
#define VIGIL_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <uv.h>

extern int check_failures_in_test;

void check_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void check_run(const char *name, void (*fn)(void));
int check_summary(void);

#define TEST(name) static void name(void)
#define RUN(name) check_run(#name, name)

#define CHECK(cond)                                                  \
  do {                                                               \
    if (!(cond))                                                     \
      check_fail(__FILE__, __LINE__, "CHECK(%s)", #cond);            \
  } while (0)

#define CHECK_INT(a, b)                                                          \
  do {                                                                           \
    long long check_a_ = (long long)(a), check_b_ = (long long)(b);              \
    if (check_a_ != check_b_)                                                    \
      check_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, check_a_, \
                 check_b_);                                                      \
  } while (0)

#define CHECK_STR(a, b)                                                              \
  do {                                                                               \
    const char *check_a_ = (a), *check_b_ = (b);                                     \
    if (check_a_ == NULL || check_b_ == NULL || strcmp(check_a_, check_b_) != 0)      \
      check_fail(__FILE__, __LINE__, "%s == %s:\n  got:  \"%s\"\n  want: \"%s\"", #a, #b, \
                 check_a_ ? check_a_ : "(null)", check_b_ ? check_b_ : "(null)");    \
  } while (0)

#define CHECK_MEM(p, n, s)                                                             \
  do {                                                                                 \
    const char *check_p_ = (const char *)(p), *check_s_ = (s);                         \
    size_t check_n_ = (size_t)(n);                                                     \
    if (check_n_ != strlen(check_s_) || memcmp(check_p_, check_s_, check_n_) != 0)     \
      check_fail(__FILE__, __LINE__, "%s == %s:\n  got:  \"%.*s\" (%zu)\n  want: \"%s\"", \
                 #p, #s, (int)check_n_, check_p_, check_n_, check_s_);                \
  } while (0)

/* Whether s contains needle. */
#define CHECK_CONTAINS(s, needle)                                                     \
  do {                                                                                \
    const char *check_s_ = (s), *check_n_ = (needle);                                 \
    if (check_s_ == NULL || strstr(check_s_, check_n_) == NULL)                       \
      check_fail(__FILE__, __LINE__, "%s contains %s:\n  in:   \"%s\"\n  want: \"%s\"", #s, \
                 #needle, check_s_ ? check_s_ : "(null)", check_n_);                 \
  } while (0)

/* Path of a helper child program (static storage, overwritten per call). */
const char *test_child_path(const char *name);

/* Checks that the file at path (under the source tree) holds exactly want,
 * a generated doc; with the environment variable regen set, rewrites it
 * first. A stale file fails naming the command that regenerates it. */
#define CHECK_GENERATED(path, want, len, regen, how) \
  check_generated(__FILE__, __LINE__, path, want, len, regen, how)
void check_generated(const char *file, int line, const char *path, const char *want, size_t len,
                     const char *regen, const char *how);

/* What children started by tests inherit of the test's environment (as
 * ProcSpawnOptions.env_inherit / MonitorSpec.env_inherit): the engine's
 * default list plus VIGIL_TEST_RUN, by which the no_orphans check finds a
 * leftover, and the sanitizers' options, so a helper built with them
 * reports the same way the test does. */
extern const char *const test_env_inherit[];

/* Runs loop (UV_RUN_ONCE steps) until done(ctx) is true or timeout_ms pass.
 * Returns true if done became true; on timeout records a failure naming
 * `what` and returns false. */
bool test_run_loop_until(uv_loop_t *loop, bool (*done)(void *ctx), void *ctx,
                         uint64_t timeout_ms, const char *what, const char *file, int line);
#define RUN_UNTIL(loop, done, ctx, ms, what) \
  test_run_loop_until(loop, done, ctx, ms, what, __FILE__, __LINE__)

/* Closes every handle left on loop, runs it until they are closed and closes
 * the loop; records a failure if the loop could not be closed. */
void test_loop_close(uv_loop_t *loop);

/* Whether fn(arg), run in a forked child, ends it by SIGABRT: the death
 * test of an assert()ed precondition. The child's stderr (the assert's
 * message) goes to /dev/null; a child that returns from fn exits 0, so a
 * precondition not asserted (or compiled out by NDEBUG) reads false. */
bool test_aborts(void (*fn)(void *arg), void *arg);
#define CHECK_ABORTS(fn, arg)                                                          \
  do {                                                                                 \
    if (!test_aborts(fn, arg))                                                         \
      check_fail(__FILE__, __LINE__, "%s(%s) did not end by an assert (SIGABRT)", #fn, #arg); \
  } while (0)

/* Whether a process exists (kill(pid, 0)); a zombie counts as gone. */
bool test_pid_alive(int pid);

/* Whether any process of process group pgid is alive (zombies, which only
 * wait for their parent to reap them, count as gone). */
bool test_group_alive(int pgid);

/* Waits until no process of group pgid is alive, checking every few ms, for
 * at most timeout_ms. A SIGKILL is delivered asynchronously: the killed
 * process must still be scheduled to exit, which on a loaded machine takes a
 * while, so a test awaits the group's end with a generous bound instead of
 * checking once. Returns whether the group was gone in time. */
bool test_wait_group_gone(int pgid, uint64_t timeout_ms);

#endif
