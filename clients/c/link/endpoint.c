/*
 * Reaching an engine's Unix socket (see endpoint.h).
 *
 * Why the peer check comes before any byte is sent: whoever owns the
 * socket's directory (one we were pointed at, or a squatted default one)
 * could have put their own socket there and would collect what we send,
 * argv and tokens included. The engine runs as its user, or as root for a
 * system install; anyone else is refused.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* struct ucred, to ask who serves the socket (SO_PEERCRED) */
#endif
#include "link/endpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int
endpoint_default_path(char *buf, size_t size)
{
  const char *xdg = getenv("XDG_RUNTIME_DIR");
  int n;
  if (xdg != NULL && xdg[0] != '\0')
    n = snprintf(buf, size, "%s/vigil/vigil.sock", xdg);
  else
    n = snprintf(buf, size, "/tmp/vigil-%u/vigil.sock", (unsigned)geteuid());
  return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* Refuses a server that runs as neither this user nor root (see the top of
 * this file). kEndpointOk or kEndpointFailed with why set. */
static EndpointResult
endpoint_check_peer(int fd, const char *path, char *why, size_t why_size)
{
  uid_t uid;
#if defined(SO_PEERCRED)
  struct ucred cred;
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    snprintf(why, why_size, "cannot tell who serves %s (SO_PEERCRED: %s); refusing it", path,
             strerror(errno));
    return kEndpointFailed;
  }
  uid = cred.uid;
#else
  gid_t gid;
  if (getpeereid(fd, &uid, &gid) != 0) {
    snprintf(why, why_size, "cannot tell who serves %s (getpeereid: %s); refusing it", path,
             strerror(errno));
    return kEndpointFailed;
  }
#endif
  if (uid == geteuid() || uid == 0)
    return kEndpointOk;
  snprintf(why, why_size,
           "refusing the engine at %s: it runs as uid %u, not as uid %u (yours) or root; "
           "whoever owns that socket may be impersonating vigild",
           path, (unsigned)uid, (unsigned)geteuid());
  return kEndpointFailed;
}

EndpointResult
endpoint_connect(const char *path, int *fd, char *why, size_t why_size)
{
  *fd = -1;
  struct sockaddr_un addr;
  memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  size_t len = strlen(path);
  if (len == 0 || len >= sizeof addr.sun_path) {
    snprintf(why, why_size, "socket path must be 1..%zu bytes, got %zu: %s",
             sizeof addr.sun_path - 1, len, path);
    return kEndpointBadPath;
  }
  memcpy(addr.sun_path, path, len + 1);
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) {
    snprintf(why, why_size, "socket: %s", strerror(errno));
    return kEndpointFailed;
  }
  int rc;
  do
    rc = connect(s, (struct sockaddr *)&addr, sizeof addr);
  while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    int e = errno;
    close(s);
    /* No file, or a file nobody accepts on (an engine that died): both
     * mean "start one", which is what a caller will say. */
    if (e == ENOENT || e == ECONNREFUSED) {
      snprintf(why, why_size, "no engine is listening on %s", path);
      return kEndpointNoEngine;
    }
    snprintf(why, why_size, "cannot connect to %s: %s", path, strerror(e));
    return kEndpointFailed;
  }
  EndpointResult r = endpoint_check_peer(s, path, why, why_size);
  if (r != kEndpointOk) {
    close(s);
    return r;
  }
  /* Non-blocking so that every wait goes through poll() and its deadline. */
  fcntl(s, F_SETFL, fcntl(s, F_GETFL) | O_NONBLOCK);
  *fd = s;
  return kEndpointOk;
}

int64_t
endpoint_now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int
endpoint_poll_timeout(int64_t deadline)
{
  if (deadline < 0)
    return -1;
  int64_t left = deadline - endpoint_now_ms();
  if (left <= 0)
    return 0;
  return left > 1000000000 ? 1000000000 : (int)left;
}

EndpointResult
endpoint_write(int fd, const char *data, size_t len, int64_t deadline, char *why,
               size_t why_size)
{
  size_t off = 0;
  while (off < len) {
    /* MSG_NOSIGNAL: a peer that went away costs an error, not SIGPIPE. */
    ssize_t n = send(fd, data + off, len - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += (size_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      struct pollfd p = {fd, POLLOUT, 0};
      int rc = poll(&p, 1, endpoint_poll_timeout(deadline));
      if (rc == 0) {
        snprintf(why, why_size, "the engine did not take the request in time");
        return kEndpointDeadline;
      }
      if (rc < 0 && errno != EINTR) {
        snprintf(why, why_size, "poll: %s", strerror(errno));
        return kEndpointFailed;
      }
      continue;
    }
    snprintf(why, why_size, "%s", n < 0 ? strerror(errno) : "short write");
    return kEndpointFailed;
  }
  return kEndpointOk;
}
