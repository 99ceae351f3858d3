/*
 * The timed JetStream gateway of bench/fleet (benchgateway.h).
 *
 * nats.c calls gateway_on_msg on each subscription's delivery thread (one
 * thread per subscription), one message of that subscription at a time;
 * everything it records is under the gateway's mutex,
 * since the benchmark's main thread reads the counts while it runs. The
 * clock is read first thing in the callback (the message is "had") and
 * right after the ack: sent (natsMsg_Ack, as vigil's readers ack: the next
 * message does not wait for the server), or with --ack sync confirmed
 * (natsMsg_AckSync, a round trip before the next message of the consumer
 * is handled); parsing and checking happen between the two, as they would
 * in a gateway that checks before it injects and acks after.
 */
#include "benchgateway.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <msgpack.h>
#include <nats/nats.h>

/* The sessions a gateway keeps a last seq for; one engine has tens. More
 * are checked for nothing but their shape. */
#define BENCH_GATEWAY_SESSIONS 256
/* The longest session name (docs/protocol.md: 64). */
#define BENCH_GATEWAY_NAME_MAX 64

typedef struct {
  char name[BENCH_GATEWAY_NAME_MAX + 1];
  uint64_t last_seq;
} BenchGatewaySession;

struct BenchGateway {
  natsOptions *opts;
  natsConnection *nc;
  jsCtx *js;
  natsSubscription **subs;     /* one per filter subject */
  size_t nsubs;
  bool ack_sync;
  pthread_mutex_t mu;
  BenchGatewayCounts c;
  BenchSamples stored, received, acked;
  int64_t realtime_offset_ns;  /* CLOCK_REALTIME - CLOCK_MONOTONIC, at start */
  BenchGatewaySession sessions[BENCH_GATEWAY_SESSIONS];
  size_t nsessions;
};

/* Copies header key of msg into out (cap bytes); false when it is absent. */
static bool
gateway_header(natsMsg *msg, const char *key, char *out, size_t cap)
{
  const char *v = NULL;
  if (natsMsgHeader_Get(msg, key, &v) != NATS_OK || v == NULL)
    return false;
  snprintf(out, cap, "%s", v);
  return true;
}

/* Whether the payload's session, seq and epoch are the headers'
 * (docs/fleet.md section 1: a reader trusts the payload only then). */
static bool
gateway_agrees(natsMsg *msg, const msgpack_object *n, char *session, size_t cap, uint64_t *seq)
{
  char h_session[128], h_seq[32], h_epoch[32], p_epoch[32];
  if (!gateway_header(msg, "Vigil-Session", h_session, sizeof h_session) ||
      !gateway_header(msg, "Vigil-Seq", h_seq, sizeof h_seq) ||
      !gateway_header(msg, "Vigil-Epoch", h_epoch, sizeof h_epoch))
    return false;
  bench_rpc_str(bench_rpc_get(n, "session"), session, cap);
  bench_rpc_str(bench_rpc_get(n, "epoch"), p_epoch, sizeof p_epoch);
  int64_t s = bench_rpc_uint(bench_rpc_get(n, "seq"));
  char *end = NULL;
  unsigned long long hs = strtoull(h_seq, &end, 10);
  if (s <= 0 || end == h_seq || *end != '\0' || hs != (unsigned long long)s ||
      strcmp(session, h_session) != 0 || strcmp(p_epoch, h_epoch) != 0 || session[0] == '\0')
    return false;
  *seq = (uint64_t)s;
  return true;
}

/* The session's last seq slot, made on first sight; NULL past the table. */
static BenchGatewaySession *
gateway_session(BenchGateway *g, const char *name)
{
  for (size_t i = 0; i < g->nsessions; i++)
    if (strcmp(g->sessions[i].name, name) == 0)
      return &g->sessions[i];
  if (g->nsessions == BENCH_GATEWAY_SESSIONS)
    return NULL;
  BenchGatewaySession *s = &g->sessions[g->nsessions++];
  snprintf(s->name, sizeof s->name, "%s", name);
  s->last_seq = 0;
  return s;
}

/* One delivered message: timed, checked, acked, timed again. */
static void
gateway_on_msg(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
  (void)nc;
  (void)sub;
  BenchGateway *g = closure;
  int64_t got_ns = bench_rpc_now_ns();

  msgpack_unpacked u;
  msgpack_unpacked_init(&u);
  const char *data = natsMsg_GetData(msg);
  int len = natsMsg_GetDataLength(msg);
  bool map = data != NULL && len > 0 &&
             msgpack_unpack_next(&u, data, (size_t)len, NULL) == MSGPACK_UNPACK_SUCCESS &&
             u.data.type == MSGPACK_OBJECT_MAP;
  char session[BENCH_GATEWAY_NAME_MAX + 8] = "";
  uint64_t seq = 0;
  bool ok = map && gateway_agrees(msg, &u.data, session, sizeof session, &seq);

  /* The stream's own time of storing it (UTC), on the monotonic clock. */
  jsMsgMetaData *meta = NULL;
  uint64_t delivered = 1, pending = 0;
  int64_t stored_ns = 0;
  if (natsMsg_GetMetaData(&meta, msg) == NATS_OK) {
    delivered = meta->NumDelivered;
    pending = meta->NumPending;
    stored_ns = meta->Timestamp - g->realtime_offset_ns;
    jsMsgMetaData_Destroy(meta);
  }

  jsErrCode jerr = 0;
  natsStatus as = g->ack_sync ? natsMsg_AckSync(msg, NULL, &jerr) : natsMsg_Ack(msg, NULL);
  int64_t acked_ns = bench_rpc_now_ns();

  pthread_mutex_lock(&g->mu);
  g->c.messages++;
  if (delivered > 1)
    g->c.redelivered++;
  if (pending > g->c.max_pending)
    g->c.max_pending = pending;
  if (as != NATS_OK)
    g->c.ack_errors++;
  BenchGatewaySession *s = ok ? gateway_session(g, session) : NULL;
  if (!ok) {
    g->c.bad++;
  } else if (s != NULL && seq <= s->last_seq) {
    g->c.duplicates++;
  } else {
    if (s != NULL) {
      if (s->last_seq > 0 && seq > s->last_seq + 1)
        g->c.gaps += seq - s->last_seq - 1;
      s->last_seq = seq;
    }
    char type[32];
    bench_rpc_str(bench_rpc_get(&u.data, "type"), type, sizeof type);
    if (strcmp(type, "output") == 0) {
      g->c.outputs++;
      const msgpack_object *lines = bench_rpc_get(&u.data, "lines");
      for (uint32_t i = 0; lines && lines->type == MSGPACK_OBJECT_ARRAY &&
                           i < lines->via.array.size; i++) {
        char text[128];
        long k;
        long long stamp;
        bench_rpc_str(bench_rpc_get(&lines->via.array.ptr[i], "text"), text, sizeof text);
        if (sscanf(text, "Error: %ld %lld", &k, &stamp) != 2)
          continue;
        g->c.lines++;
        if (stored_ns > 0)
          bench_samples_add(&g->stored, (int64_t)stamp, stored_ns);
        bench_samples_add(&g->received, (int64_t)stamp, got_ns);
        bench_samples_add(&g->acked, (int64_t)stamp, acked_ns);
      }
    } else if (strcmp(type, "exit") == 0 || strcmp(type, "stopped") == 0 ||
               strcmp(type, "timed_out") == 0 || strcmp(type, "idle_timeout") == 0 ||
               strcmp(type, "overload") == 0) {
      g->c.endings++;
    } else {
      g->c.other++;
    }
  }
  pthread_mutex_unlock(&g->mu);
  msgpack_unpacked_destroy(&u);
  natsMsg_Destroy(msg);
}

/* CLOCK_REALTIME - CLOCK_MONOTONIC in ns: the smallest-gap of a few
 * readings (a reading between two of the other clock), so that the
 * stream's UTC timestamps can be set beside the children's stamps. */
static int64_t
gateway_realtime_offset(void)
{
  int64_t best = 0, best_gap = INT64_MAX;
  for (int i = 0; i < 16; i++) {
    struct timespec a, r, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    clock_gettime(CLOCK_REALTIME, &r);
    clock_gettime(CLOCK_MONOTONIC, &b);
    int64_t an = (int64_t)a.tv_sec * 1000000000LL + a.tv_nsec;
    int64_t bn = (int64_t)b.tv_sec * 1000000000LL + b.tv_nsec;
    int64_t rn = (int64_t)r.tv_sec * 1000000000LL + r.tv_nsec;
    if (bn - an < best_gap) {
      best_gap = bn - an;
      best = rn - (an + (bn - an) / 2);
    }
  }
  return best;
}

/* Says what failed into err, with nats.c's last error. */
static void
gateway_fail(char *err, size_t cap, const char *what, natsStatus s, jsErrCode jerr)
{
  snprintf(err, cap, "%s: %s (%s, JetStream error %d)", what, natsStatus_GetText(s),
           nats_GetLastError(NULL) ? nats_GetLastError(NULL) : "", (int)jerr);
}

/* See benchgateway.h. */
BenchGateway *
bench_gateway_start(const char *url, const char *stream, const char *name,
                    const char *const *filters, size_t nfilters, bool ack_sync, char *err,
                    size_t cap)
{
  BenchGateway *g = calloc(1, sizeof *g);
  if (g == NULL) {
    snprintf(err, cap, "out of memory");
    return NULL;
  }
  g->ack_sync = ack_sync;
  pthread_mutex_init(&g->mu, NULL);
  g->realtime_offset_ns = gateway_realtime_offset();
  natsStatus s = natsOptions_Create(&g->opts);
  if (s == NATS_OK)
    s = natsOptions_SetURL(g->opts, url);
  if (s == NATS_OK)
    s = natsOptions_SetName(g->opts, name);
  if (s == NATS_OK)
    s = natsConnection_Connect(&g->nc, g->opts);
  if (s != NATS_OK) {
    gateway_fail(err, cap, "connect", s, 0);
    bench_gateway_free(g);
    return NULL;
  }
  if ((s = natsConnection_JetStream(&g->js, g->nc, NULL)) != NATS_OK) {
    gateway_fail(err, cap, "JetStream context", s, 0);
    bench_gateway_free(g);
    return NULL;
  }
  g->subs = calloc(nfilters ? nfilters : 1, sizeof *g->subs);
  if (g->subs == NULL) {
    snprintf(err, cap, "out of memory");
    bench_gateway_free(g);
    return NULL;
  }
  for (size_t i = 0; i < nfilters; i++) {
    char durable[64];
    snprintf(durable, sizeof durable, "%s-%zu", name, i + 1);
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = stream;
    so.ManualAck = true;
    so.Config.Durable = durable;
    so.Config.AckPolicy = js_AckExplicit;
    so.Config.DeliverPolicy = js_DeliverAll;
    so.Config.MaxAckPending = 20000;
    jsErrCode jerr = 0;
    s = js_Subscribe(&g->subs[i], g->js, filters[i], gateway_on_msg, g, NULL, &so, &jerr);
    if (s != NATS_OK) {
      char what[128];
      snprintf(what, sizeof what, "subscribe to %s", filters[i]);
      gateway_fail(err, cap, what, s, jerr);
      bench_gateway_free(g);
      return NULL;
    }
    g->nsubs = i + 1;
  }
  return g;
}

/* See benchgateway.h. */
BenchGatewayCounts
bench_gateway_counts(BenchGateway *g)
{
  pthread_mutex_lock(&g->mu);
  BenchGatewayCounts c = g->c;
  pthread_mutex_unlock(&g->mu);
  return c;
}

/* See benchgateway.h. */
void
bench_gateway_stop(BenchGateway *g)
{
  for (size_t i = 0; i < g->nsubs; i++)
    if (natsSubscription_Drain(g->subs[i]) != NATS_OK)
      natsSubscription_Unsubscribe(g->subs[i]);
  for (size_t i = 0; i < g->nsubs; i++) {
    natsSubscription_WaitForDrainCompletion(g->subs[i], 10000);
    natsSubscription_Destroy(g->subs[i]);
  }
  g->nsubs = 0;
  jsCtx_Destroy(g->js);
  g->js = NULL;
  if (g->nc != NULL) {
    natsConnection_Close(g->nc);
    natsConnection_Destroy(g->nc);
    g->nc = NULL;
  }
}

/* See benchgateway.h. */
const BenchSamples *
bench_gateway_stored(const BenchGateway *g)
{
  return &g->stored;
}

/* See benchgateway.h. */
const BenchSamples *
bench_gateway_received(const BenchGateway *g)
{
  return &g->received;
}

/* See benchgateway.h. */
const BenchSamples *
bench_gateway_acked(const BenchGateway *g)
{
  return &g->acked;
}

/* See benchgateway.h. */
void
bench_gateway_free(BenchGateway *g)
{
  if (g == NULL)
    return;
  bench_gateway_stop(g);
  natsOptions_Destroy(g->opts);
  free(g->subs);
  bench_samples_free(&g->stored);
  bench_samples_free(&g->received);
  bench_samples_free(&g->acked);
  pthread_mutex_destroy(&g->mu);
  free(g);
}
