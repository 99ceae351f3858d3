/*
 * A timed JetStream gateway for bench/fleet: what a gateway of
 * docs/fleet.md section 3 does with each notification, with a clock on it.
 *
 * Each gateway has a connection of its own and, per filter subject it is
 * given, a durable consumer on the stream with explicit ack and deliver
 * all: one per session (`vigil.<engine>.<token>.n`) or one for an engine's
 * sessions (`vigil.<engine>.*.n`), docs/fleet.md's two ways. The consumers
 * are push consumers: the server sends each message as soon as it is
 * stored, and nats.c hands it to a callback on the subscription's own
 * thread, which is when the gateway "has" it. Subscriptions, hence
 * sessions with a consumer each, are served side by side; one
 * subscription's messages one after the other. The callback then checks
 * each as a gateway must (the payload a msgpack map whose session, seq and
 * epoch agree with the Vigil-* headers; each session's seq above the last
 * one seen), and acks it with
 * natsMsg_AckSync, which returns once the server confirmed the ack: that is
 * "the gateway's ack". Every "Error: N STAMP" line of an output
 * notification is timed against the stamp its child wrote three times:
 * when the stream stored it (the message's metadata), when the message
 * came, and when its ack returned.
 *
 * A pull consumer with a request always waiting (docs/fleet.md's gateway)
 * gets each message over the same path; nats.c 3.4's Fetch, though, holds
 * what came until its batch is full or it expires, which would time the
 * fetch and not JetStream, so the benchmark pushes.
 */
#ifndef VIGIL_BENCH_GATEWAY_H
#define VIGIL_BENCH_GATEWAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "benchrpc.h"

typedef struct BenchGateway BenchGateway;

/* What a gateway counted. */
typedef struct {
  uint64_t messages;       /* every message delivered */
  uint64_t outputs;        /* output notifications */
  uint64_t lines;          /* stamped lines in them (each timed) */
  uint64_t endings;        /* exit (or any other ending) notifications */
  uint64_t other;          /* notifications of any other type */
  uint64_t bad;            /* not a map, or headers that disagree with it: acked, not used */
  uint64_t duplicates;     /* a seq at or below its session's last: acked, not used */
  uint64_t gaps;           /* seqs skipped within a session */
  uint64_t redelivered;    /* delivered more than once by JetStream */
  uint64_t ack_errors;     /* acks that could not be sent (or, synchronous, not confirmed) */
  uint64_t max_pending;    /* the most messages the consumer had waiting behind one */
} BenchGatewayCounts;

/* Connects to url (as client name) and subscribes, for each of the
 * nfilters filter subjects, a durable consumer NAME-<i> on stream; returns
 * the gateway, or NULL with the reason in err (cap bytes). ack_sync: each
 * ack waits for the server's confirmation (natsMsg_AckSync) before the
 * next message of its consumer is handled, and is timed when confirmed;
 * else it is sent and not waited for (natsMsg_Ack), as vigil's readers
 * ack, and timed when sent. */
BenchGateway *bench_gateway_start(const char *url, const char *stream, const char *name,
                                  const char *const *filters, size_t nfilters, bool ack_sync,
                                  char *err, size_t cap);

/* The counts so far (taken under the gateway's lock). */
BenchGatewayCounts bench_gateway_counts(BenchGateway *g);

/* Drains the subscriptions (no callback runs after it returns) and closes
 * the connection; the samples and counts stay readable until
 * bench_gateway_free. */
void bench_gateway_stop(BenchGateway *g);

/* The timed lines of a stopped gateway: when the stream stored each (its
 * UTC timestamp in the message's metadata, set on the monotonic clock with
 * an offset read at start), when it came, and when its ack returned
 * (BenchSample: its stamp and the latency in ms). */
const BenchSamples *bench_gateway_stored(const BenchGateway *g);
const BenchSamples *bench_gateway_received(const BenchGateway *g);
const BenchSamples *bench_gateway_acked(const BenchGateway *g);

void bench_gateway_free(BenchGateway *g);

#endif
