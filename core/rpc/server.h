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

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "rpc/channel.h"
#include "base/error.h"

typedef struct RpcServer RpcServer;

/* Fills out with the default socket path: $XDG_RUNTIME_DIR/vigil/vigil.sock,
 * else /tmp/vigil-$UID/vigil.sock. Returns -1 if it does not fit. */
int rpc_default_socket_path(char *out, size_t size);

/* Listens on path; every accepted (and uid-checked) connection becomes a
 * channel with these handlers and data. Errors: internal, naming the path
 * and the OS error (or the live listener). */
RpcServer *rpc_server_listen(uv_loop_t *loop, const char *path, const RpcLimits *limits,
                             const RpcHandlers *handlers, void *data, VigilError *err);

/* rpc_server_listen in two steps, for a caller with something to do once
 * the path is the engine's and before any peer can connect (vigild's
 * pidfile, so that a client that got in finds it): bind makes the socket
 * (refusing a live listener, replacing a stale file) without listening, so
 * a connect is refused until start. start listens; on failure it removes
 * the socket's file and frees srv. */
RpcServer *rpc_server_bind(uv_loop_t *loop, const char *path, const RpcLimits *limits,
                           const RpcHandlers *handlers, void *data, VigilError *err);
int rpc_server_start(RpcServer *srv, VigilError *err);

/* Listens on fd, a socket an earlier image of this engine listened on at
 * path and handed over across execve (docs/restart.md, the graceful
 * restart): used only if it is a listening Unix stream socket bound to
 * path, whose file is still that socket (so no connection attempt is
 * refused during the handover). Else NULL with err, fd closed, and the
 * caller binds afresh. */
RpcServer *rpc_server_listen_fd(uv_loop_t *loop, int fd, const char *path,
                                const RpcLimits *limits, const RpcHandlers *handlers, void *data,
                                VigilError *err);

/* The listening socket's descriptor (to hand over), or -1. */
int rpc_server_fd(const RpcServer *srv);

/* The checks rpc_server_listen makes before it binds, on their own: the
 * path's length, and the socket's directory made (0700) when missing, else
 * refused unless it is a real directory of the engine's euid (or root's)
 * that group and others cannot write. vigild runs them before it opens the state directory
 * beside the socket, so that a directory it must refuse gets nothing made
 * in it. *made says whether the directory was made here; nothing is
 * logged (the caller says so, when it may log). Errors: internal, as
 * rpc_server_listen's. */
int rpc_server_check_path(const char *path, bool *made, VigilError *err);

/* Logs that the directory of the socket at path was made (mode 0700). */
void rpc_server_log_made_dir(const char *path);

/* The directory a socket path lives in, as a new string: the path up to
 * its last slash (trailing slashes dropped), "/" for "/x", "." for "x". */
char *rpc_server_dir_of(const char *path);

/* Stops listening and removes the socket file (unless rpc_server_keep_file
 * said not to). Open channels stay open. */
void rpc_server_close(RpcServer *srv);

/* Leaves the socket's file in place at close: it was made by a service
 * manager that listens on it again (activation.h). */
void rpc_server_keep_file(RpcServer *srv);

/* Connections refused because of their uid. */
uint64_t rpc_server_refused(const RpcServer *srv);

/* Opens the --stdio channel on fds 0 and 1 (pipes, sockets or ttys). */
RpcChannel *rpc_stdio_open(uv_loop_t *loop, const RpcLimits *limits,
                           const RpcHandlers *handlers, void *data, VigilError *err);

#endif
