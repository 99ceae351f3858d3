/*
 * The fleet's publisher (docs/fleet.md section 2): every notification of
 * every named session, published into JetStream after the session
 * numbered it and its journal took it, in seq order per session, each
 * until JetStream acknowledged it.
 *
 * It reads each named session through a tap (session.h), so the session's
 * own rules apply to it as to a connection: idle notifications come once
 * the session is idle; a tap that refuses a push falls behind and is
 * resumed, catching up from the kept notifications; one that falls more
 * than session.queue_max behind is given a `dropped` notification in
 * place of what it lost. The publisher keeps one notification of a session
 * in flight at a time and refuses the next until JetStream acknowledged
 * it: so the kept notifications are the outbox, bounded by
 * session.queue_max, and a session's messages reach the stream in order
 * whatever is lost and sent again. What JetStream acknowledged is the
 * session's cursor FLEET_CURSOR (journaled), from which a restarted
 * engine publishes again.
 */
#ifndef VIGIL_FLEET_PUBLISHER_H
#define VIGIL_FLEET_PUBLISHER_H

#include <msgpack.h>
#include <stdint.h>

#include "base/error.h"
#include "engine/engine.h"

/* The cursor that holds, per session, the last seq JetStream acknowledged. */
#define FLEET_CURSOR "nats:published"

typedef struct {
  const char *url;            /* nats://host:port, or a comma-separated list */
  const char *creds;          /* a .creds file, or NULL */
  const char *tls_ca;         /* PEM files for TLS (fleet_link.h), or NULL */
  const char *tls_cert;
  const char *tls_key;
  const char *stream;         /* "VIGIL" by default */
  const char *engine;         /* the engine's name (fleet_names.h), checked */
  int64_t connect_timeout_ms;
  int64_t ack_timeout_ms;
  int64_t max_in_flight;      /* per session: sent, not acknowledged yet */
  int64_t retry_min_ms;
  int64_t retry_max_ms;
  int64_t max_age_ms;
  int64_t max_bytes;
  int64_t duplicate_window_ms;
} FleetConfig;

typedef struct FleetPublisher FleetPublisher;

/* Connects (waiting at most connect_timeout_ms, before the engine serves),
 * creates or checks the stream, and taps every named session e has and
 * will have. A server that refuses (no JetStream, no rights, a stream of
 * that name that does not fit) returns NULL with err; one that does not
 * answer is logged and tried again in the background. */
FleetPublisher *fleet_publisher_start(Engine *e, const FleetConfig *c, VigilError *err);

/* Stops publishing: the taps are detached, the link's thread stopped.
 * What was in flight is published again by the next engine on the same
 * state directory. Call before engine_free, with the loop still there to
 * close the timers (they close on its next run). */
void fleet_publisher_free(FleetPublisher *p);

/* The engine is stopping and every monitor has ended: calls done(data)
 * once nothing is in flight (every notification the sessions hold has
 * been acknowledged), or after timeout_ms, saying in the log what did not
 * make it. At once when nothing is in flight. */
void fleet_publisher_drain(FleetPublisher *p, uint64_t timeout_ms, void (*done)(void *data),
                           void *data);

/* api_info's "nats": packs one map, of its keys and `extra` more, which
 * the caller packs after it (the request bridge's "rpc", fleet_rpc.h). */
void fleet_publisher_pack_info(FleetPublisher *p, msgpack_packer *pk, size_t extra);

/* The publisher's link to NATS, which the request bridge shares: one
 * connection per engine. */
struct FleetLink *fleet_publisher_link(FleetPublisher *p);

#endif
