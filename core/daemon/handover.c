/*
 * The graceful restart's exec (handover.h).
 *
 * Before the exec: the log is flushed (its thread dies with the image),
 * the signal mask is emptied (a mask survives execve, and the new image
 * must get its SIGCHLD and SIGTERM), and the listening socket alone loses
 * close-on-exec. If execve fails, each of those is put back.
 */
#include "daemon/handover.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"

int
handover_exec(const char *exe, char *const argv[], int listen_fd, bool keep_file,
              VigilError *err)
{
  char value[16];
  snprintf(value, sizeof value, "%d", listen_fd);
  if (listen_fd < 0 || setenv(HANDOVER_LISTEN_ENV, value, 1) != 0)
    return error_set(err, kErrInternal, "handover: no listening socket to hand over");
  if (keep_file)
    setenv(HANDOVER_KEEP_FILE_ENV, "1", 1);
  int flags = fcntl(listen_fd, F_GETFD);
  sigset_t all, was;
  sigemptyset(&all);
  sigprocmask(SIG_SETMASK, &all, &was);
  log_flush(1000);
  if (flags >= 0 && fcntl(listen_fd, F_SETFD, flags & ~FD_CLOEXEC) == 0)
    execv(exe, argv);
  int saved = errno;
  if (flags >= 0)
    fcntl(listen_fd, F_SETFD, flags);
  sigprocmask(SIG_SETMASK, &was, NULL);
  unsetenv(HANDOVER_LISTEN_ENV);
  unsetenv(HANDOVER_KEEP_FILE_ENV);
  return error_set(err, kErrInternal, "handover: cannot run %s: %s", exe, strerror(saved));
}

int
handover_listen_fd(bool *keep_file)
{
  const char *keep = getenv(HANDOVER_KEEP_FILE_ENV);
  *keep_file = keep != NULL && strcmp(keep, "1") == 0;
  unsetenv(HANDOVER_KEEP_FILE_ENV);
  const char *v = getenv(HANDOVER_LISTEN_ENV);
  int fd = -1;
  if (v != NULL) {
    char *end = NULL;
    long n = strtol(v, &end, 10);
    if (end != v && *end == '\0' && n > 2 && n < 1 << 20 && fcntl((int)n, F_GETFD) >= 0)
      fd = (int)n;
  }
  unsetenv(HANDOVER_LISTEN_ENV);
  return fd;
}
