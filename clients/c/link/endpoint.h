/*
 * Reaching an engine's Unix socket, for every C client of vigil: the
 * default socket path, connecting with the check of who serves the socket,
 * and writing a whole request with a deadline. libvigilclient, the vigil
 * CLI (and so vigil mcp) and the benchmarks all connect through here, so
 * the peer check that keeps an impostor from reading argv and tokens is
 * written once. It depends on libc only; messages go into the caller's
 * buffer, and what to call each failure (an exit status, an error code) is
 * the caller's.
 */
#ifndef VIGIL_CLIENT_ENDPOINT_H
#define VIGIL_CLIENT_ENDPOINT_H

#include <stddef.h>
#include <stdint.h>

/* What became of a connect or a write. */
typedef enum {
  kEndpointOk = 0,
  kEndpointBadPath,  /* the path is empty or longer than a socket address holds */
  kEndpointNoEngine, /* no file there, or a file nobody accepts on (an engine that died) */
  kEndpointFailed,   /* anything else: permissions, a server of another uid, a lost peer */
  kEndpointDeadline, /* the write did not finish by its deadline */
} EndpointResult;

/* Fills buf with the default socket path: $XDG_RUNTIME_DIR/vigil/vigil.sock
 * when XDG_RUNTIME_DIR is set and not empty, else /tmp/vigil-$UID/vigil.sock.
 * Returns 0, or -1 when it does not fit in size bytes. */
int endpoint_default_path(char *buf, size_t size);

/* Connects to the socket at path and checks, before anything is sent, that
 * the server runs as this user or as root (SO_PEERCRED). kEndpointOk with
 * *fd the connection (non-blocking, close-on-exec); otherwise *fd is -1
 * and why (why_size bytes) says what went wrong, naming the path (and both
 * uids when the server is another user's). */
EndpointResult endpoint_connect(const char *path, int *fd, char *why, size_t why_size);

/* The monotonic clock in ms: deadlines are absolute times on it. */
int64_t endpoint_now_ms(void);

/* The poll() timeout left until deadline (-1: no deadline), never
 * negative. */
int endpoint_poll_timeout(int64_t deadline);

/* Writes all of data to the non-blocking socket fd, waiting in poll() while
 * it is full, until deadline (-1: none). A peer that went away costs an
 * error, never SIGPIPE. kEndpointOk, kEndpointDeadline, or kEndpointFailed
 * with why set. */
EndpointResult endpoint_write(int fd, const char *data, size_t len, int64_t deadline, char *why,
                              size_t why_size);

#endif
