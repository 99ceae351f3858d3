/*
 * The fleet's link to NATS (docs/fleet.md): one thread of its own speaks
 * to the broker through nats.c, so that nothing the broker does (a slow
 * connect, a full socket, a server gone) can block the engine's loop.
 *
 * The loop hands the thread publishes (fleet_link_publish); the thread
 * connects, creates or checks the stream, publishes each with a reply
 * subject of its own, and JetStream's answers come back to the loop as
 * events (FleetEvent) through a uv_async: an acknowledgment, a refusal,
 * the connection up or down, an error the server reported. What to send
 * again, and when, is the loop's (fleet_publisher.c); the link keeps
 * nothing it was handed once it has sent it.
 */
#ifndef VIGIL_FLEET_LINK_H
#define VIGIL_FLEET_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "base/error.h"

/* Events waiting for the loop, at most: past it they are dropped and
 * counted (an acknowledgment lost this way is sent again after
 * nats.ack_timeout_ms, and JetStream drops the copy). */
#define FLEET_LINK_EVENTS_MAX 65536
/* The longest error text an event carries. */
#define FLEET_LINK_ERROR_MAX 256

typedef struct {
  const char *url;           /* one URL or a comma-separated list */
  const char *creds;         /* a .creds file, or NULL */
  /* TLS (docs/fleet.md section 5): on when any of these is given or the
   * url says tls://; each a PEM file, or NULL. cert and key together. */
  const char *tls_ca;        /* CA certificates to trust for the server's */
  const char *tls_cert;      /* the engine's client certificate (mutual TLS) */
  const char *tls_key;       /* its private key */
  const char *stream;        /* the stream's name */
  const char *client_name;   /* the connection's name, as the server shows it */
  int64_t max_age_ms;        /* the stream's, when it is made here */
  int64_t max_bytes;
  int64_t duplicate_window_ms;
  int64_t connect_timeout_ms; /* a connect, and each request to JetStream's API */
  int64_t retry_min_ms;      /* between connect attempts: from this, doubling, */
  int64_t retry_max_ms;      /* up to this */
} FleetLinkOptions;

typedef enum {
  kFleetAck,   /* JetStream has the message (duplicate: it had it already) */
  kFleetNack,  /* it was refused, or could not be sent; permanent: it never will be */
  kFleetUp,    /* connected and the stream is there: send again what is in flight */
  kFleetDown,  /* the connection is gone (nats.c reconnects), or a connect failed */
  kFleetError, /* the server reported an error (a permissions violation, ...) */
} FleetEventKind;

typedef struct {
  FleetEventKind kind;
  uint64_t id;          /* kFleetAck, kFleetNack: the publish's id and seq */
  uint64_t seq;
  bool duplicate;
  bool permanent;
  char error[FLEET_LINK_ERROR_MAX]; /* kFleetNack, kFleetDown, kFleetError */
} FleetEvent;

typedef void (*FleetLinkOnEvent)(void *data, const FleetEvent *ev);

/* Copies text into out (size bytes), cut to fit: error texts are longer
 * than an event's room at times, and the cut end is not worth a warning. */
void fleet_text_copy(char *out, size_t size, const char *text);

typedef struct FleetLink FleetLink;

/* Starts the link's thread, which connects at once. Events reach on_event
 * on the loop. NULL with err when the thread cannot start. */
FleetLink *fleet_link_start(uv_loop_t *loop, const FleetLinkOptions *o, FleetLinkOnEvent on_event,
                            void *data, VigilError *err);

typedef enum {
  kFleetReady,        /* connected, the stream is there */
  kFleetUnreachable,  /* no server answered yet: the link goes on trying */
  kFleetRefused,      /* the server said no (no JetStream, no rights, a stream
                         that does not fit): err says what */
} FleetReadiness;

/* Blocks (for vigild's start, before the loop runs) until the first
 * connect and stream check are decided, or timeout_ms passed. */
FleetReadiness fleet_link_wait_ready(FleetLink *l, int64_t timeout_ms, VigilError *err);

/* Hands the thread one message to publish: to subject, with the headers
 * (nheaders name/value pairs), the payload, and the id and seq its
 * acknowledgment will carry. Everything is copied. */
void fleet_link_publish(FleetLink *l, const char *subject, const char *const *headers,
                        size_t nheaders, const void *payload, size_t len, uint64_t id,
                        uint64_t seq);

/* --- requests (docs/fleet.md section 6; fleet_rpc.h serves them) --- */

/* Requests waiting for the loop, at most, and their payloads' bytes: past
 * either a request is dropped unanswered and counted (the requester's
 * own timeout tells it). */
#define FLEET_LINK_REQUESTS_MAX 4096
#define FLEET_LINK_REQUEST_BYTES_MAX (64u << 20)
/* The header that names a requester's virtual connection. */
#define FLEET_CLIENT_HEADER "Vigil-Client"

/* One message received on a request subject, owned by whoever it is
 * handed to (fleet_request_free). */
typedef struct FleetRequest {
  struct FleetRequest *next;
  char *subject;
  char *reply;          /* where the answer goes, or NULL: none is wanted */
  char *client;         /* the FLEET_CLIENT_HEADER's value, or NULL */
  char *payload;
  size_t len;
} FleetRequest;

void fleet_request_free(FleetRequest *r);

/* Takes a request, on the loop; r is the callee's to free. */
typedef void (*FleetLinkOnRequest)(void *data, FleetRequest *r);

/* Subscribes (now, and on every new connection; nats.c renews them on a
 * reconnect) to the subjects (nsubjects of them, wildcards allowed, copied)
 * and hands what arrives on them to on_request, on the loop. Call once. */
void fleet_link_serve(FleetLink *l, const char *const *subjects, size_t nsubjects,
                      FleetLinkOnRequest on_request, void *data);

/* Blocks (for vigild's start, before the loop runs) until the server has
 * the subscriptions of fleet_link_serve, or timeout_ms passed; whether it
 * has. */
bool fleet_link_wait_serving(FleetLink *l, int64_t timeout_ms);

/* Publishes payload to subject, with no reply subject and no headers: an
 * answer to a request. It waits, as publishes do, while there is no
 * connection. Everything is copied. */
void fleet_link_reply(FleetLink *l, const char *subject, const void *payload, size_t len);

/* What the link counts (read on the loop). */
typedef struct {
  bool connected;
  uint64_t events_dropped;
  uint64_t connects;     /* successful connects and reconnects */
  uint64_t requests_dropped; /* past FLEET_LINK_REQUESTS_MAX or its bytes */
  bool serving;          /* subscribed to the request subjects */
} FleetLinkStats;
void fleet_link_stats(FleetLink *l, FleetLinkStats *out);

/* Stops the thread (waits for it: at most the time of one request),
 * closes the connection and frees the link; the async handle is closed on
 * the loop. */
void fleet_link_stop(FleetLink *l);

#endif
