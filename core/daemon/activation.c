/*
 * Socket activation (activation.h): reading the LISTEN_FDS variables.
 *
 * The variables are checked as strictly as any other input: a number that
 * is not plain decimal digits (activation_number), a count of zero or more
 * than one, or a descriptor that is not open is an error that names the
 * variable and its value, since a service manager that set them meant
 * vigild to serve that socket and listening anywhere else would be a
 * silent surprise.
 */
#include "daemon/activation.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "base/textfmt.h"

/* A number as a service manager writes it, from s into *out: 1 to 9 ASCII
 * digits, the first not 0 unless it is all ("0"). Nothing else: no sign, no
 * space, no leading zero, no other base. strtol alone would take " 1",
 * "+1" and "01" as 1, but a variable that reads so was not written by the
 * protocol's side, and serving a socket on a guess is the surprise the
 * checks are here to prevent. */
static bool
activation_number(const char *s, long *out)
{
  if (s == NULL || s[0] < '0' || s[0] > '9' || (s[0] == '0' && s[1] != '\0'))
    return false;
  long n = 0;
  size_t i = 0;
  for (; s[i] >= '0' && s[i] <= '9' && i < 9; i++)
    n = n * 10 + (s[i] - '0');
  if (s[i] != '\0')
    return false;
  *out = n;
  return true;
}

/* Sets err: variable name's value s is not what it must be (what), the
 * value shown escaped (a variable may hold any bytes, a newline too). */
static void
activation_refuse(VigilError *err, const char *name, const char *what, const char *s)
{
  StrBuf shown = STRBUF_INIT;
  textfmt_escape(&shown, s ? s : "", s ? strlen(s) : 0);
  error_set(err, kErrInternal, "socket activation: %s must be %s, got \"%.200s\"", name, what,
            strbuf_cstr(&shown));
  strbuf_free(&shown);
}

int
activation_listen_fd(VigilError *err)
{
  const char *pid_s = getenv("LISTEN_PID"), *fds_s = getenv("LISTEN_FDS");
  int fd = -1;
  long pid = 0, fds = 0;
  if (pid_s == NULL && fds_s == NULL) {
    fd = -1;
  } else if (!activation_number(pid_s, &pid) || pid == 0) {
    activation_refuse(err, "LISTEN_PID", "a process id in plain decimal digits", pid_s);
    fd = -2;
  } else if (pid != (long)getpid()) {
    fd = -1; /* meant for another process (an ancestor's, inherited) */
  } else if (!activation_number(fds_s, &fds)) {
    activation_refuse(err, "LISTEN_FDS", "a count in plain decimal digits", fds_s);
    fd = -2;
  } else if (fds != 1) {
    error_set(err, kErrInternal, "socket activation: vigild serves exactly 1 socket, "
              "LISTEN_FDS must be 1..1, got \"%ld\"", fds);
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
