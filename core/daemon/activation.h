/*
 * Socket activation: vigild started by systemd (or any service manager
 * speaking the same LISTEN_FDS protocol) with its listening socket already
 * made, so the socket exists before the engine does, a connection made
 * while the engine starts waits in the backlog instead of being refused,
 * and `systemctl --user start` is never needed by hand.
 *
 * The protocol: LISTEN_PID names the process the sockets are for,
 * LISTEN_FDS how many there are, from descriptor 3 on. vigild serves one
 * socket, so it takes exactly one and refuses more; variables meant for
 * another process are ignored. All three variables (LISTEN_FDNAMES too)
 * are removed either way, so no monitored program inherits them.
 *
 * The socket file belongs to the service manager: vigild leaves it in
 * place when it exits (the manager listens on it again), where a socket
 * vigild bound itself is removed.
 */
#ifndef VIGIL_ACTIVATION_H
#define VIGIL_ACTIVATION_H

#include <stddef.h>

#include "base/error.h"

/* The first descriptor of the protocol. */
#define ACTIVATION_FIRST_FD 3

/* The socket passed to this process: its descriptor (close-on-exec set),
 * -1 when none was passed, -2 with err when the variables are malformed
 * or pass more than one socket. */
int activation_listen_fd(VigilError *err);

/* The path a listening Unix socket is bound to, into out. Returns 0, or
 * -1 when fd is not a Unix socket bound to a path that fits. */
int activation_socket_path(int fd, char *out, size_t size);

#endif
