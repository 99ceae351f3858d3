/*
 * Socket activation (activation.h): reading the LISTEN_FDS variables.
 *
 * The variables are checked as strictly as any other input: a number that
 * does not parse, a count of zero or more than one, or a descriptor that
 * is not open is an error that names the variable and its value, since a
 * service manager that set them meant vigild to serve that socket and
 * listening anywhere else would be a silent surprise.
 */
#include "activation.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* A decimal number of at most 9 digits from s into *out, or false. */
static bool
activation_number(const char *s, long *out)
{
  if (s == NULL || *s == '\0' || strlen(s) > 9)
    return false;
  char *end = NULL;
  errno = 0;
  long n = strtol(s, &end, 10);
  if (errno != 0 || *end != '\0' || n < 0)
    return false;
  *out = n;
  return true;
}

int
activation_listen_fd(VigilError *err)
{
  const char *pid_s = getenv("LISTEN_PID"), *fds_s = getenv("LISTEN_FDS");
  int fd = -1;
  long pid = 0, fds = 0;
  if (pid_s == NULL && fds_s == NULL) {
    fd = -1;
  } else if (!activation_number(pid_s, &pid)) {
    error_set(err, kErrInternal, "socket activation: LISTEN_PID must be a process id, got \"%s\"",
              pid_s ? pid_s : "");
    fd = -2;
  } else if (pid != (long)getpid()) {
    fd = -1; /* meant for another process (an ancestor's, inherited) */
  } else if (!activation_number(fds_s, &fds) || fds < 1 || fds > 1) {
    error_set(err, kErrInternal, "socket activation: vigild serves exactly 1 socket, "
              "LISTEN_FDS must be 1..1, got \"%s\"", fds_s ? fds_s : "");
    fd = -2;
  } else if (fcntl(ACTIVATION_FIRST_FD, F_GETFD) < 0) {
    error_set(err, kErrInternal, "socket activation: LISTEN_FDS=1 but descriptor %d is not open",
              ACTIVATION_FIRST_FD);
    fd = -2;
  } else {
    fd = ACTIVATION_FIRST_FD;
    fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
  unsetenv("LISTEN_PID");
  unsetenv("LISTEN_FDS");
  unsetenv("LISTEN_FDNAMES");
  return fd;
}

int
activation_socket_path(int fd, char *out, size_t size)
{
  struct sockaddr_un addr;
  socklen_t len = sizeof addr;
  memset(&addr, 0, sizeof addr);
  if (getsockname(fd, (struct sockaddr *)&addr, &len) != 0 || addr.sun_family != AF_UNIX ||
      len <= offsetof(struct sockaddr_un, sun_path) || addr.sun_path[0] == '\0')
    return -1;
  size_t n = strnlen(addr.sun_path, sizeof addr.sun_path);
  if (n >= size)
    return -1;
  memcpy(out, addr.sun_path, n);
  out[n] = '\0';
  return 0;
}
