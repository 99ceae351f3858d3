/*
 * The msgpack-rpc front end of the engine: the methods of docs/protocol.md
 * section 5 over a Unix socket (many connections) or stdio (one). The
 * engine (engine.h) knows nothing of it; this layer holds a Seat per
 * connection, the requests that answer later (waiters), and all packing.
 */
#ifndef VIGIL_API_H
#define VIGIL_API_H

#include <msgpack.h>
#include <stddef.h>

#include "engine/engine.h"
#include "base/error.h"

typedef struct Api Api;

/* A front end for e; gives the engine its hooks. */
Api *api_new(Engine *e);

/* Closes the listener and every connection (their clients first). Call
 * before engine_free. */
void api_free(Api *api);

/* Makes the socket at path (rpc_server_bind): the path is the engine's,
 * but a connect is refused until api_start_listening, which accepts
 * connections from then on. */
int api_bind(Api *api, const char *path, VigilError *err);
int api_start_listening(Api *api, VigilError *err);
/* Listens on fd, the socket an earlier image of this engine listened on at
 * path and handed over (rpc_server_listen_fd); -1 with err (fd closed)
 * when it is not that, and the caller listens afresh. */
int api_listen_handed_over(Api *api, int fd, const char *path, VigilError *err);
/* Leaves the socket's file in place when the engine stops listening: a
 * service manager made it (activation.h). */
void api_keep_socket_file(Api *api);
/* The listening socket's descriptor, or -1 (stdio, or not listening). */
int api_listen_fd(const Api *api);

/* What api_info reports under "nats": pack writes one map (the fleet's
 * publisher, docs/fleet.md), or the key is nil when pack is NULL. */
void api_set_nats_info(Api *api, void (*pack)(void *data, msgpack_packer *pk), void *data);

/* Serves fd, one end of a socketpair, as a connection like an accepted
 * one: a virtual connection of the fleet's request bridge (fleet_rpc.h),
 * which writes request frames into the other end and reads the answers
 * there. It has its own Seat and anonymous session, and closing the other
 * end closes it as a socket connection's close does. It is not counted
 * against rpc.max_connections (its owner bounds them); a message over
 * rpc.max_message_bytes is answered and the connection goes on. peer names
 * it in log lines. The channel takes fd (closed on failure too). */
int api_adopt(Api *api, int fd, const char *peer, VigilError *err);

/* Serves the one --stdio connection; its end shuts the engine down. */
int api_open_stdio(Api *api, VigilError *err);

/* The methods, in the order api_info lists them: the name of the i-th, or
 * NULL past the last. */
const char *api_method_name(size_t i);

/* The arguments method name takes ("session" first), NULL-terminated, or
 * NULL when there is no such method: what a front end that passes its own
 * arguments through (vigil mcp's pass-through tools) may send. */
const char *const *api_method_args(const char *name);

#endif
