/*
 * The tiny test harness (see check.h).
 */
#include "check.h"

#include <fcntl.h>
#include <unistd.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "proc/reaper.h"

int check_failures_in_test;
static int check_passed;
static int check_failed;

void
check_fail(const char *file, int line, const char *fmt, ...)
{
  check_failures_in_test++;
  fprintf(stderr, "  %s:%d: ", file, line);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

void
check_run(const char *name, void (*fn)(void))
{
  check_failures_in_test = 0;
  fn();
  if (check_failures_in_test == 0) {
    check_passed++;
    printf("ok   %s\n", name);
  } else {
    check_failed++;
    printf("FAIL %s\n", name);
  }
  fflush(stdout);
}

int
check_summary(void)
{
  printf("%d passed, %d failed\n", check_passed, check_failed);
  return check_failed == 0 ? 0 : 1;
}

const char *const test_env_inherit[] = {
  "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_*", "TERM", "TZ", "TMPDIR",
  "VIGIL_TEST_RUN", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", NULL,
};

const char *
test_child_path(const char *name)
{
  static char path[4096];
  const char *dir = getenv("VIGIL_TEST_HELPERS");
  snprintf(path, sizeof path, "%s/%s", dir ? dir : ".", name);
  return path;
}

static void
check_tick_cb(uv_timer_t *t)
{
  (void)t;
}

bool
test_run_loop_until(uv_loop_t *loop, bool (*done)(void *ctx), void *ctx, uint64_t timeout_ms,
                    const char *what, const char *file, int line)
{
  uint64_t deadline = uv_hrtime() / 1000000 + timeout_ms;
  while (!done(ctx)) {
    if (uv_hrtime() / 1000000 > deadline) {
      check_fail(file, line, "timed out after %llu ms waiting for %s",
                 (unsigned long long)timeout_ms, what);
      return false;
    }
    /* UV_RUN_NOWAIT when nothing is active would spin; a short timer keeps the
     * deadline honest without sleeping past an event. */
    uv_timer_t tick;
    uv_timer_init(loop, &tick);
    uv_timer_start(&tick, check_tick_cb, 10, 0);
    uv_run(loop, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&tick, NULL);
    uv_run(loop, UV_RUN_NOWAIT);
  }
  return true;
}

static void
check_close_walk(uv_handle_t *h, void *arg)
{
  if (!uv_is_closing(h))
    uv_close(h, NULL);
}

void
test_loop_close(uv_loop_t *loop)
{
  /* First let the loop finish on its own (pending reaps, closing handles),
   * within a bound; only then close whatever a test left open. */
  uint64_t deadline = uv_hrtime() / 1000000 + 5000;
  while (uv_loop_alive(loop) && uv_hrtime() / 1000000 < deadline) {
    uv_timer_t tick;
    uv_timer_init(loop, &tick);
    uv_timer_start(&tick, check_tick_cb, 10, 0);
    uv_run(loop, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&tick, NULL);
    uv_run(loop, UV_RUN_NOWAIT);
  }
  uv_walk(loop, check_close_walk, NULL);
  uv_run(loop, UV_RUN_DEFAULT);
  if (uv_loop_close(loop) != 0)
    check_fail(__FILE__, __LINE__, "loop could not be closed: handles still open");
}

bool
test_aborts(void (*fn)(void *arg), void *arg)
{
  fflush(NULL); /* nothing buffered is written twice */
  pid_t pid = fork();
  if (pid < 0) {
    check_fail(__FILE__, __LINE__, "fork: %s", strerror(errno));
    return false;
  }
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0)
      dup2(null, STDERR_FILENO);
    fn(arg);
    _exit(0);
  }
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return false;
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

bool
test_pid_alive(int pid)
{
  if (kill(pid, 0) != 0)
    return errno != ESRCH;
  /* A zombie still answers kill(); read its state. */
  ReaperProc rp;
  return !reaper_read(pid, &rp) || rp.state != 'Z';
}

bool
test_group_alive(int pgid)
{
  ReaperTable t = {0};
  reaper_scan(&t);
  bool alive = false;
  for (size_t i = 0; i < t.n && !alive; i++)
    alive = t.procs[i].pgrp == pgid && t.procs[i].state != 'Z';
  bool scanned = t.n > 0;
  reaper_table_free(&t);
  return scanned ? alive : kill(-pgid, 0) == 0;
}

bool
test_wait_group_gone(int pgid, uint64_t timeout_ms)
{
  uint64_t deadline = uv_hrtime() / 1000000 + timeout_ms;
  while (test_group_alive(pgid)) {
    if (uv_hrtime() / 1000000 >= deadline)
      return false;
    struct timespec pause = {0, 5 * 1000000};
    nanosleep(&pause, NULL);
  }
  return true;
}

/* CI runs the tests with no stdin. A closed fd 0..2 would be reused by the
 * next open (libuv's own descriptors included) and then clobbered by a
 * child's dup2, so every test program starts with all three open. */
__attribute__((constructor)) static void
check_std_fds(void)
{
  for (int fd = 0; fd <= 2; fd++) {
    if (fcntl(fd, F_GETFD) == -1) {
      int null = open("/dev/null", O_RDWR);
      if (null >= 0 && null != fd) {
        dup2(null, fd);
        close(null);
      }
    }
  }
}

void
check_generated(const char *file, int line, const char *path, const char *want, size_t len,
                const char *regen, const char *how)
{
  if (getenv(regen)) {
    FILE *w = fopen(path, "w");
    if (w) {
      fwrite(want, 1, len, w);
      fclose(w);
    }
  }
  FILE *f = fopen(path, "r");
  if (f == NULL) {
    check_fail(file, line, "%s cannot be read", path);
    return;
  }
  char *got = malloc(len + 2);
  size_t n = got ? fread(got, 1, len + 1, f) : 0;
  fclose(f);
  if (got == NULL || n != len || memcmp(got, want, len) != 0)
    check_fail(file, line, "%s is stale; regenerate it with `%s`", path, how);
  free(got);
}
