/*
 * Requests across machines (docs/fleet.md section 6): the engine answers
 * NATS request-reply on `vigil.<engine>.rpc` and on each session's
 * `vigil.<engine>.<token>.rpc`, carrying the socket's own msgpack-rpc
 * frames, so that a CLI, an MCP adapter or a client on another machine
 * works against this engine through the broker, with NATS's accounts and
 * permissions deciding who may send what. No port is opened here.
 *
 * The bridge serves requests through the API exactly as it serves a
 * socket connection: each requester (the subject it sends on, and its
 * Vigil-Client header) has a virtual connection, one end of a socketpair
 * the API adopted (api_adopt), with its own seat and anonymous session.
 * The bridge checks each request (one whole frame, its size, its scope),
 * writes it into its end under a msgid of its own, and reads the answers
 * there, each published to the reply subject of the request it answers
 * with the requester's msgid: so deferred answers (monitor_wait) reach the
 * requester that waits. Notifications pushed to a virtual connection are
 * dropped and counted (a fleet reads them from JetStream). A virtual
 * connection with no request for nats.client_idle_ms and no answer
 * pending is closed as a socket connection closing is: its anonymous
 * session ends, its named ones linger.
 *
 * Everything here runs on the loop; the broker is the link's (its thread
 * receives requests and publishes answers, fleet_link.h).
 */
#ifndef VIGIL_FLEET_RPC_H
#define VIGIL_FLEET_RPC_H

#include <msgpack.h>
#include <stdint.h>

#include "api/api.h"
#include "base/error.h"
#include "engine/engine.h"
#include "fleet/fleet_link.h"

typedef struct {
  const char *engine;       /* the engine's name in the subjects (checked) */
  int64_t max_clients;      /* nats.max_clients: virtual connections at once */
  int64_t client_idle_ms;   /* nats.client_idle_ms */
  int64_t connect_timeout_ms; /* nats.connect_timeout_ms: the start's wait, below */
} FleetRpcConfig;

typedef struct FleetRpc FleetRpc;

/* Serves the request subjects of c->engine through api, over link (which
 * must outlive the bridge). When the link is connected, waits (at most
 * c->connect_timeout_ms, before the engine serves its socket) until the
 * server has the subscriptions, so that a request sent once vigild has
 * started finds the engine; otherwise they are made at the connect.
 * rpc.max_message_bytes and rpc.max_pending are read from e's settings at
 * each request, so a reload applies. */
FleetRpc *fleet_rpc_start(Engine *e, Api *api, FleetLink *link, const FleetRpcConfig *c);

/* Closes every virtual connection (the API sees each close, as for a
 * socket) and frees the bridge; answers still pending are not sent. Call
 * before the link stops and before api_free. */
void fleet_rpc_free(FleetRpc *r);

/* api_info's nats "rpc": packs one map (its key is the caller's). */
void fleet_rpc_pack_info(FleetRpc *r, msgpack_packer *pk);

#endif
