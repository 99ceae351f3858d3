/*
 * The transports of vigild: a Unix socket that accepts many connections,
 * and --stdio, one connection on stdin/stdout.
 *
 * The socket lives in a directory that is created 0700 (its parent must
 * exist), is itself 0600, and every peer's uid is read from the kernel
 * (SO_PEERCRED, getpeereid elsewhere) and refused, with a log line, unless it
 * is the engine's own. A stale socket file (nothing accepting on it) is
 * replaced; a live one is an error ("another vigild is listening on PATH").
 */
#ifndef VIGIL_RPC_SERVER_H
#define VIGIL_RPC_SERVER_H

#include <stddef.h>
#include <uv.h>

#include "channel.h"
#include "error.h"

typedef struct RpcServer RpcServer;

/* Fills out with the default socket path: $XDG_RUNTIME_DIR/vigil/vigil.sock,
 * else /tmp/vigil-$UID/vigil.sock. Returns -1 if it does not fit. */
int rpc_default_socket_path(char *out, size_t size);

/* Listens on path; every accepted (and uid-checked) connection becomes a
 * channel with these handlers and data. Errors: internal, naming the path
 * and the OS error (or the live listener). */
RpcServer *rpc_server_listen(uv_loop_t *loop, const char *path, const RpcLimits *limits,
                             const RpcHandlers *handlers, void *data, VigilError *err);

/* Stops listening and removes the socket file. Open channels stay open. */
void rpc_server_close(RpcServer *srv);

/* Connections refused because of their uid. */
uint64_t rpc_server_refused(const RpcServer *srv);

/* Opens the --stdio channel on fds 0 and 1 (pipes, sockets or ttys). */
RpcChannel *rpc_stdio_open(uv_loop_t *loop, const RpcLimits *limits,
                           const RpcHandlers *handlers, void *data, VigilError *err);

#endif
