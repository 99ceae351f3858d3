/*
 * One waiting hook per harness session (see hook_waiter.h).
 */
#include "cli/hook_waiter.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli_conn.h"

/* The lock file's path for key in dir. Returns 0, or -1 when it does not
 * fit. */
static int
hook_waiter_path(char *out, size_t cap, const char *dir, const char *key)
{
  int n = snprintf(out, cap, "%s/hook-wait-%s", dir, key);
  return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* Opens the lock file (made if missing: this user's only, never through a
 * link). Returns its fd or -1. */
static int
hook_waiter_open(const char *path)
{
  int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return -1;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
    close(fd);
    return -1;
  }
  return fd;
}

/* Sends SIGTERM to whoever holds the lock on fd (not this process). */
static void
hook_waiter_signal_holder(int fd)
{
  struct flock fl;
  memset(&fl, 0, sizeof fl);
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  if (fcntl(fd, F_GETLK, &fl) != 0 || fl.l_type == F_UNLCK || fl.l_pid <= 0 ||
      fl.l_pid == getpid())
    return;
  /* The holder's pid is live while it holds the lock: the kernel drops
   * the lock when the process ends. */
  kill(fl.l_pid, SIGTERM);
}

void
hook_waiter_end(const char *dir, const char *key)
{
  char path[4200];
  if (hook_waiter_path(path, sizeof path, dir, key) != 0)
    return;
  int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return;
  hook_waiter_signal_holder(fd);
  close(fd);
}

/* Whether fd is still the file at path: a waiter that leaves removes its
 * file while it holds the lock, so one who locked it just after has a file
 * no one else will find, and must open the path again. */
static int
hook_waiter_still_there(int fd, const char *path)
{
  struct stat a, b;
  return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
         a.st_ino == b.st_ino;
}

int
hook_waiter_begin(HookWaiter *w, const char *dir, const char *key)
{
  w->fd = -1;
  if (hook_waiter_path(w->path, sizeof w->path, dir, key) != 0)
    return -1;
  /* The old waiter leaves at its signal; a stopped one is not waited for
   * past the handover bound. */
  int64_t deadline = cli_now_ms() + HOOK_WAITER_HANDOVER_MS;
  for (;;) {
    int fd = hook_waiter_open(w->path);
    if (fd < 0)
      return -1;
    hook_waiter_signal_holder(fd);
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    int rc = fcntl(fd, F_SETLK, &fl);
    if (rc == 0 && hook_waiter_still_there(fd, w->path)) {
      w->fd = fd;
      return 0;
    }
    int failed = rc != 0 && errno != EACCES && errno != EAGAIN;
    close(fd);
    if (failed || cli_now_ms() >= deadline)
      return -1;
    struct timespec pause = {0, 20 * 1000000};
    nanosleep(&pause, NULL);
  }
}

int
hook_waiter_try(HookWaiter *w, const char *dir, const char *key)
{
  w->fd = -1;
  if (hook_waiter_path(w->path, sizeof w->path, dir, key) != 0)
    return -1;
  /* A holder that leaves removes its file: the one who locked it just then
   * opens the path again (a few times at most: each time, someone left). */
  for (int attempt = 0; attempt < 3; attempt++) {
    int fd = hook_waiter_open(w->path);
    if (fd < 0)
      return -1;
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    if (fcntl(fd, F_SETLK, &fl) != 0) {
      int held = errno == EACCES || errno == EAGAIN;
      close(fd);
      return held ? 1 : -1;
    }
    if (hook_waiter_still_there(fd, w->path)) {
      w->fd = fd;
      return 0;
    }
    close(fd);
  }
  return -1;
}

void
hook_waiter_done(HookWaiter *w)
{
  if (w->fd < 0)
    return;
  unlink(w->path);
  close(w->fd);
  w->fd = -1;
}
