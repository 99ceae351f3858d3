/*
 * The fleet's link to NATS (fleet_link.h): a thread that owns the nats.c
 * connection.
 *
 * Why a thread: nats.c's connect, its JetStream API requests and, when a
 * socket is full, its publish, all wait. The engine's loop must never
 * wait on the network, so the loop only appends to `outbox` under the
 * mutex and signals; the thread takes the list and sends. nats.c delivers
 * JetStream's answers on threads of its own (the subscription's): those
 * callbacks only append to `events` and wake the loop through `async`.
 *
 * Acknowledgments: every publish carries the reply subject
 * "<inbox>.<id>.<seq>", and one wildcard subscription on "<inbox>.*.*"
 * receives them all, so an answer names what it answers without a table
 * of pending requests here (what is pending is the loop's to know).
 *
 * The first connect and the stream check happen on the thread too; vigild
 * waits for their outcome before it serves (fleet_link_wait_ready), so a
 * server that refuses (no JetStream, no rights) stops the start with its
 * reason, while one that is not there yet does not.
 *
 * Requests (fleet_link_serve, docs/fleet.md section 6) take the same road
 * the other way: the subscriptions are made on the thread, nats.c hands
 * each message to a callback on its own thread, which copies it into
 * `requests` (bounded) and wakes the loop; answers go out through the
 * outbox like publishes, without a reply subject of their own.
 */
#include "fleet/fleet_link.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <nats/nats.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/memory.h"
#include "spec/fleet_names.h"

/* One message handed to the thread. */
typedef struct FleetOut {
  struct FleetOut *next;
  char *subject;
  char **headers;   /* nheaders name/value pairs, 2 * nheaders strings */
  size_t nheaders;
  char *payload;
  size_t len;
  uint64_t id;
  uint64_t seq;
  bool plain;       /* an answer to a request: no reply subject */
} FleetOut;

typedef struct FleetEventNode {
  struct FleetEventNode *next;
  FleetEvent ev;
} FleetEventNode;

struct FleetLink {
  uv_loop_t *loop;
  uv_async_t async;
  FleetLinkOnEvent on_event;
  void *data;

  /* The options, owned. */
  char *url, *creds, *stream, *client_name;
  char *tls_ca, *tls_cert, *tls_key;
  char url_shown[512];       /* url without its user information, for messages */
  FleetLinkOptions o;

  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cond;       /* the thread's wake-up, and the readiness's */

  /* Under mu. */
  bool stop;
  FleetOut *out_head, *out_tail;
  FleetEventNode *ev_head, *ev_tail;
  size_t nevents;
  uint64_t events_dropped;
  uint64_t connects;
  bool connected;
  bool stream_ok;            /* cleared when a publish found no stream */
  FleetReadiness ready;
  bool ready_known;
  char ready_error[VIGIL_ERROR_MSG_MAX];
  char async_error[FLEET_LINK_ERROR_MAX]; /* the server's last -ERR */
  /* Requests (fleet_link_serve): what to subscribe to, and what came. */
  char **serve_subjects;
  size_t nserve;
  FleetLinkOnRequest on_request;
  void *request_data;
  bool serving;              /* the subscriptions are made on this connection */
  FleetRequest *rq_head, *rq_tail;
  size_t nrequests;
  size_t request_bytes;
  uint64_t requests_dropped;

  /* The thread's alone. */
  natsOptions *opts;
  natsConnection *nc;
  natsSubscription *sub;
  jsCtx *js;
  char inbox[128];
  natsSubscription **request_subs; /* nserve of them, or NULL */
  bool serve_tried;                /* on this connection */
};

/* The most of a file's path an error message shows. */
#define FLEET_LINK_PATH_SHOWN 200

/* --- events, from any thread to the loop --------------------------------- */

static void
fleet_link_post(FleetLink *l, const FleetEvent *ev)
{
  pthread_mutex_lock(&l->mu);
  if (l->nevents >= FLEET_LINK_EVENTS_MAX) {
    l->events_dropped++;
    pthread_mutex_unlock(&l->mu);
    return;
  }
  FleetEventNode *node = xcalloc(1, sizeof *node);
  node->ev = *ev;
  if (l->ev_tail)
    l->ev_tail->next = node;
  else
    l->ev_head = node;
  l->ev_tail = node;
  l->nevents++;
  pthread_mutex_unlock(&l->mu);
  uv_async_send(&l->async);
}

void
fleet_text_copy(char *out, size_t size, const char *text)
{
  if (size == 0)
    return;
  size_t n = text ? strnlen(text, size - 1) : 0;
  memcpy(out, text ? text : "", n);
  out[n] = '\0';
}

static void
fleet_link_post_kind(FleetLink *l, FleetEventKind kind, const char *error)
{
  FleetEvent ev = {.kind = kind};
  if (error)
    fleet_text_copy(ev.error, sizeof ev.error, error);
  fleet_link_post(l, &ev);
}

/* On the loop: every event waiting, in order. */
static void
fleet_link_async_cb(uv_async_t *h)
{
  FleetLink *l = h->data;
  pthread_mutex_lock(&l->mu);
  FleetEventNode *node = l->ev_head;
  l->ev_head = l->ev_tail = NULL;
  l->nevents = 0;
  pthread_mutex_unlock(&l->mu);
  while (node) {
    FleetEventNode *next = node->next;
    l->on_event(l->data, &node->ev);
    free(node);
    node = next;
  }
  pthread_mutex_lock(&l->mu);
  FleetRequest *r = l->rq_head;
  l->rq_head = l->rq_tail = NULL;
  l->nrequests = 0;
  l->request_bytes = 0;
  pthread_mutex_unlock(&l->mu);
  while (r) {
    FleetRequest *next = r->next;
    r->next = NULL;
    l->on_request(l->request_data, r);
    r = next;
  }
}

void
fleet_request_free(FleetRequest *r)
{
  if (r == NULL)
    return;
  free(r->subject);
  free(r->reply);
  free(r->client);
  free(r->payload);
  free(r);
}

/* A message on a request subject (nats.c's thread): copied and queued for
 * the loop, or dropped and counted past the bounds. */
static void
fleet_link_on_request(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
  FleetLink *l = closure;
  int len = natsMsg_GetDataLength(msg);
  size_t n = len > 0 ? (size_t)len : 0;
  pthread_mutex_lock(&l->mu);
  bool room = l->nrequests < FLEET_LINK_REQUESTS_MAX &&
              l->request_bytes + n <= FLEET_LINK_REQUEST_BYTES_MAX;
  if (!room)
    l->requests_dropped++;
  pthread_mutex_unlock(&l->mu);
  if (!room) {
    natsMsg_Destroy(msg);
    return;
  }
  FleetRequest *r = xcalloc(1, sizeof *r);
  r->subject = xstrdup(natsMsg_GetSubject(msg));
  const char *reply = natsMsg_GetReply(msg);
  r->reply = reply && *reply ? xstrdup(reply) : NULL;
  const char *client = NULL;
  if (natsMsgHeader_Get(msg, FLEET_CLIENT_HEADER, &client) == NATS_OK && client)
    r->client = xstrdup(client);
  r->payload = xmalloc(n ? n : 1);
  if (n)
    memcpy(r->payload, natsMsg_GetData(msg), n);
  r->len = n;
  natsMsg_Destroy(msg);
  pthread_mutex_lock(&l->mu);
  if (l->rq_tail)
    l->rq_tail->next = r;
  else
    l->rq_head = r;
  l->rq_tail = r;
  l->nrequests++;
  l->request_bytes += n;
  pthread_mutex_unlock(&l->mu);
  uv_async_send(&l->async);
}

/* --- nats.c's callbacks (its threads) ------------------------------------ */

/* Reads "<id>.<seq>" after the inbox's prefix of an answer's subject. */
static bool
fleet_link_answer_ids(const FleetLink *l, const char *subject, uint64_t *id, uint64_t *seq)
{
  size_t plen = strlen(l->inbox);
  if (strncmp(subject, l->inbox, plen) != 0 || subject[plen] != '.')
    return false;
  const char *p = subject + plen + 1;
  char *end;
  errno = 0;
  unsigned long long a = strtoull(p, &end, 10);
  if (errno != 0 || end == p || *end != '.')
    return false;
  p = end + 1;
  unsigned long long b = strtoull(p, &end, 10);
  if (errno != 0 || end == p || *end != '\0')
    return false;
  *id = a;
  *seq = b;
  return true;
}

/* Reads JetStream's answer to a publish: {"stream":..,"seq":..,
 * "duplicate":true?} or {"error":{"code":..,"err_code":..,"description":..}}. */
static void
fleet_link_read_answer(FleetLink *l, natsMsg *msg, FleetEvent *ev)
{
  if (natsMsg_IsNoResponders(msg)) {
    ev->kind = kFleetNack;
    snprintf(ev->error, sizeof ev->error, "no stream takes the subject (503 no responders): "
             "the stream %s is gone; it is made again", l->stream);
    pthread_mutex_lock(&l->mu);
    l->stream_ok = false;
    pthread_mutex_unlock(&l->mu);
    pthread_cond_broadcast(&l->cond);
    return;
  }
  json_error_t jerr;
  const char *data = natsMsg_GetData(msg);
  int len = natsMsg_GetDataLength(msg);
  json_t *root = data && len > 0 ? json_loadb(data, (size_t)len, 0, &jerr) : NULL;
  json_t *error = root ? json_object_get(root, "error") : NULL;
  if (root && json_is_object(root) && error == NULL && json_is_integer(json_object_get(root, "seq"))) {
    ev->kind = kFleetAck;
    ev->duplicate = json_is_true(json_object_get(root, "duplicate"));
  } else {
    ev->kind = kFleetNack;
    const char *desc = error ? json_string_value(json_object_get(error, "description")) : NULL;
    json_int_t code = error ? json_integer_value(json_object_get(error, "err_code")) : 0;
    /* 10054: larger than the stream's maximum message size, every time. */
    ev->permanent = code == 10054;
    snprintf(ev->error, sizeof ev->error, "JetStream refused it: %s (err_code %lld)",
             desc ? desc : "an answer that is not a publish acknowledgment", (long long)code);
  }
  json_decref(root);
}

static void
fleet_link_on_answer(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
  FleetLink *l = closure;
  FleetEvent ev = {0};
  if (fleet_link_answer_ids(l, natsMsg_GetSubject(msg), &ev.id, &ev.seq)) {
    fleet_link_read_answer(l, msg, &ev);
    fleet_link_post(l, &ev);
  }
  natsMsg_Destroy(msg);
}

static void
fleet_link_on_disconnected(natsConnection *nc, void *closure)
{
  FleetLink *l = closure;
  pthread_mutex_lock(&l->mu);
  l->connected = false;
  pthread_mutex_unlock(&l->mu);
  fleet_link_post_kind(l, kFleetDown, "the connection to the server was lost; reconnecting");
}

static void
fleet_link_on_reconnected(natsConnection *nc, void *closure)
{
  FleetLink *l = closure;
  pthread_mutex_lock(&l->mu);
  l->connected = true;
  l->connects++;
  bool stream_ok = l->stream_ok;
  pthread_mutex_unlock(&l->mu);
  if (stream_ok)
    fleet_link_post_kind(l, kFleetUp, NULL);
}

static void
fleet_link_on_error(natsConnection *nc, natsSubscription *sub, natsStatus s, void *closure)
{
  FleetLink *l = closure;
  const char *text = NULL;
  natsConnection_GetLastError(nc, &text);
  char line[FLEET_LINK_ERROR_MAX];
  snprintf(line, sizeof line, "%s", text && *text ? text : natsStatus_GetText(s));
  pthread_mutex_lock(&l->mu);
  snprintf(l->async_error, sizeof l->async_error, "%s", line);
  pthread_mutex_unlock(&l->mu);
  fleet_link_post_kind(l, kFleetError, line);
}

/* --- the thread: connecting and the stream ------------------------------- */

/* How a connect or a check ended. */
typedef enum { kTryOk, kTryLater, kTryRefused } FleetTry;

/* The server's last -ERR, when it speaks of permissions (a request the
 * account may not make times out; the reason came as an -ERR). */
static bool
fleet_link_permission_error(FleetLink *l, char *out, size_t size)
{
  pthread_mutex_lock(&l->mu);
  bool yes = strstr(l->async_error, "ermission") != NULL;
  if (yes)
    snprintf(out, size, "%s", l->async_error);
  pthread_mutex_unlock(&l->mu);
  return yes;
}

static void
fleet_link_drop_requests(FleetLink *l)
{
  for (size_t i = 0; l->request_subs && i < l->nserve; i++)
    if (l->request_subs[i])
      natsSubscription_Destroy(l->request_subs[i]);
  free(l->request_subs);
  l->request_subs = NULL;
  l->serve_tried = false;
  pthread_mutex_lock(&l->mu);
  l->serving = false;
  pthread_mutex_unlock(&l->mu);
}

/* Subscribes to the request subjects on this connection (the thread's).
 * A failure is told to the loop as an error; the next connection tries
 * again. */
static void
fleet_link_subscribe_requests(FleetLink *l)
{
  l->serve_tried = true;
  l->request_subs = xcalloc(l->nserve, sizeof *l->request_subs);
  natsStatus s = NATS_OK;
  size_t i = 0;
  for (; s == NATS_OK && i < l->nserve; i++) {
    s = natsConnection_Subscribe(&l->request_subs[i], l->nc, l->serve_subjects[i],
                                 fleet_link_on_request, l);
    if (s == NATS_OK)
      s = natsSubscription_SetPendingLimits(l->request_subs[i], FLEET_LINK_REQUESTS_MAX,
                                            (int)FLEET_LINK_REQUEST_BYTES_MAX);
  }
  if (s != NATS_OK) {
    char why[FLEET_LINK_ERROR_MAX];
    snprintf(why, sizeof why, "cannot subscribe to %s: %s; requests are not served until the "
             "next connection", l->serve_subjects[i - 1], natsStatus_GetText(s));
    fleet_link_post_kind(l, kFleetError, why);
    return;
  }
  /* A round trip, so the server has the subscriptions before anyone is
   * told the engine serves (a request sent before would find nobody). */
  s = natsConnection_FlushTimeout(l->nc, l->o.connect_timeout_ms);
  if (s != NATS_OK) {
    char why[FLEET_LINK_ERROR_MAX];
    snprintf(why, sizeof why, "subscribed to the request subjects, but the server did not "
             "confirm it: %s", natsStatus_GetText(s));
    fleet_link_post_kind(l, kFleetError, why);
  }
  pthread_mutex_lock(&l->mu);
  l->serving = true;
  pthread_mutex_unlock(&l->mu);
  pthread_cond_broadcast(&l->cond);
}

static void
fleet_link_drop_connection(FleetLink *l)
{
  fleet_link_drop_requests(l);
  if (l->sub) {
    natsSubscription_Destroy(l->sub);
    l->sub = NULL;
  }
  if (l->js) {
    jsCtx_Destroy(l->js);
    l->js = NULL;
  }
  if (l->nc) {
    natsConnection_Close(l->nc);
    natsConnection_Destroy(l->nc);
    l->nc = NULL;
  }
}

/* Whether TLS was asked for: a tls:// URL or any nats.tls_* file. */
static bool
fleet_link_tls_on(const FleetLink *l)
{
  return l->tls_ca || l->tls_cert || l->tls_key || fleet_url_says_tls(l->url);
}

/* nats.c's last error of this thread without the source location it puts
 * first ("(conn.c:2088): SSL handshake error: ..."), or the status's text
 * when it left none. */
static const char *
fleet_link_nats_words(natsStatus s)
{
  const char *text = nats_GetLastError(NULL);
  if (text == NULL || text[0] == '\0')
    return natsStatus_GetText(s);
  const char *close = text[0] == '(' ? strstr(text, "): ") : NULL;
  return close ? close + 3 : text;
}

static FleetTry
fleet_link_connect(FleetLink *l, char *why, size_t size)
{
  natsStatus s = natsConnection_Connect(&l->nc, l->opts);
  if (s != NATS_OK) {
    l->nc = NULL;
    /* A TLS failure's status says only "SSL Error"; what failed (the
     * certificate did not verify) is in the words nats.c left for this
     * thread. With TLS 1.3 a server that wants a client certificate (or
     * does not trust this one) says so only by closing the connection
     * after the handshake, which nats.c reports as a protocol error. */
    bool tls = s == NATS_SSL_ERROR || s == NATS_SECURE_CONNECTION_REQUIRED ||
               s == NATS_SECURE_CONNECTION_WANTED ||
               (fleet_link_tls_on(l) && s == NATS_PROTOCOL_ERROR);
    const char *hint = "";
    if (s == NATS_SSL_ERROR && !l->tls_ca)
      hint = " (nats.tls_ca names the CA that signed a private server's certificate)";
    else if (s == NATS_SECURE_CONNECTION_REQUIRED)
      hint = " (the server wants TLS: a tls:// URL, or nats.tls_ca)";
    else if (s == NATS_PROTOCOL_ERROR && tls)
      hint = l->tls_cert ? " (the server closed the TLS connection: does it trust the CA that "
                           "signed nats.tls_cert?)"
                         : " (the server closed the TLS connection: does it ask for a client "
                           "certificate? nats.tls_cert and nats.tls_key name one and its key)";
    if (tls)
      snprintf(why, size, "cannot connect to %s: TLS: %s%s", l->url_shown,
               fleet_link_nats_words(s), hint);
    else
      snprintf(why, size, "cannot connect to %s: %s", l->url_shown, natsStatus_GetText(s));
    /* A server that answered and refused the credentials will again, and
     * one whose certificate this engine does not trust (or that wants one
     * it does not have) too. */
    return s == NATS_CONNECTION_AUTH_FAILED || s == NATS_NOT_PERMITTED || tls ? kTryRefused
                                                                               : kTryLater;
  }
  natsInbox *inbox = NULL;
  natsInbox_Create(&inbox);
  snprintf(l->inbox, sizeof l->inbox, "%s", (const char *)inbox);
  natsInbox_Destroy(inbox);
  char wildcard[sizeof l->inbox + 8];
  snprintf(wildcard, sizeof wildcard, "%s.*.*", l->inbox);
  s = natsConnection_Subscribe(&l->sub, l->nc, wildcard, fleet_link_on_answer, l);
  if (s == NATS_OK)
    s = natsSubscription_SetPendingLimits(l->sub, FLEET_LINK_EVENTS_MAX, 64 << 20);
  jsOptions jo;
  jsOptions_Init(&jo);
  jo.Wait = l->o.connect_timeout_ms;
  if (s == NATS_OK)
    s = natsConnection_JetStream(&l->js, l->nc, &jo);
  if (s != NATS_OK) {
    snprintf(why, size, "connected to %s, but cannot subscribe to its answers: %s", l->url_shown,
             natsStatus_GetText(s));
    fleet_link_drop_connection(l);
    return kTryLater;
  }
  return kTryOk;
}

/* Whether a stream's subjects hold ours. */
static bool
fleet_link_subjects_fit(const jsStreamConfig *cfg)
{
  for (int i = 0; cfg && i < cfg->SubjectsLen; i++)
    if (strcmp(cfg->Subjects[i], FLEET_STREAM_SUBJECTS) == 0)
      return true;
  return false;
}

/* Creates the stream, or checks the one of that name. */
static FleetTry
fleet_link_check_stream(FleetLink *l, char *why, size_t size)
{
  jsStreamInfo *si = NULL;
  jsErrCode jerr = 0;
  natsStatus s = js_GetStreamInfo(&si, l->js, l->stream, NULL, &jerr);
  char perm[FLEET_LINK_ERROR_MAX];
  if (s == NATS_OK) {
    bool fits = fleet_link_subjects_fit(si->Config);
    if (!fits) {
      size_t used = (size_t)snprintf(why, size, "the stream %s exists on %s with subjects [", l->stream,
                                     l->url_shown);
      for (int i = 0; si->Config && i < si->Config->SubjectsLen && used < size; i++)
        used += (size_t)snprintf(why + used, size - used, "%s%s", i ? ", " : "",
                                 si->Config->Subjects[i]);
      if (used < size)
        snprintf(why + used, size - used, "], which do not include " FLEET_STREAM_SUBJECTS
                 " (docs/fleet.md: vigil.> would also take the engines' requests)");
    }
    jsStreamInfo_Destroy(si);
    return fits ? kTryOk : kTryRefused;
  }
  if (s == NATS_NO_RESPONDERS) {
    snprintf(why, size, "the server at %s has no JetStream (start nats-server with -js, or enable "
             "jetstream in its config)", l->url_shown);
    return kTryRefused;
  }
  if (jerr == JSNotEnabledForAccountErr || jerr == JSNotEnabledErr) {
    snprintf(why, size, "JetStream is not enabled for this account on %s (err_code %d)", l->url_shown,
             (int)jerr);
    return kTryRefused;
  }
  if (fleet_link_permission_error(l, perm, sizeof perm)) {
    snprintf(why, size, "the account on %s lacks the right to use JetStream's API for the stream "
             "%s: %s", l->url_shown, l->stream, perm);
    return kTryRefused;
  }
  if (!(s == NATS_NOT_FOUND || jerr == JSStreamNotFoundErr)) {
    snprintf(why, size, "cannot read the stream %s on %s: %s (err_code %d)", l->stream, l->url_shown,
             natsStatus_GetText(s), (int)jerr);
    return kTryLater;
  }
  jsStreamConfig cfg;
  jsStreamConfig_Init(&cfg);
  const char *subjects[] = {FLEET_STREAM_SUBJECTS};
  cfg.Name = l->stream;
  cfg.Subjects = subjects;
  cfg.SubjectsLen = 1;
  cfg.Storage = js_FileStorage;
  cfg.Discard = js_DiscardOld;
  cfg.MaxAge = l->o.max_age_ms * 1000000;
  cfg.MaxBytes = l->o.max_bytes;
  cfg.Duplicates = l->o.duplicate_window_ms * 1000000;
  jerr = 0;
  s = js_AddStream(&si, l->js, &cfg, NULL, &jerr);
  if (s == NATS_OK) {
    jsStreamInfo_Destroy(si);
    return kTryOk;
  }
  if (fleet_link_permission_error(l, perm, sizeof perm)) {
    snprintf(why, size, "the account on %s lacks the right to create the stream %s: %s", l->url_shown,
             l->stream, perm);
    return kTryRefused;
  }
  const char *err_text = nats_GetLastError(NULL);
  snprintf(why, size, "cannot create the stream %s on %s: %s (err_code %d)", l->stream, l->url_shown,
           err_text && *err_text ? err_text : natsStatus_GetText(s), (int)jerr);
  /* Another engine made it between our read and our create: read again. */
  if (jerr == JSStreamNameExistErr)
    return kTryLater;
  return jerr == JSStreamSubjectOverlapErr ? kTryRefused : kTryLater;
}

static void
fleet_link_set_ready(FleetLink *l, FleetReadiness r, const char *why)
{
  pthread_mutex_lock(&l->mu);
  if (!l->ready_known) {
    l->ready = r;
    l->ready_known = true;
    snprintf(l->ready_error, sizeof l->ready_error, "%s", why ? why : "");
  }
  pthread_mutex_unlock(&l->mu);
  pthread_cond_broadcast(&l->cond);
}

/* The moment ms from now, as pthread_cond_timedwait takes it. */
static void
fleet_link_deadline(int64_t ms, struct timespec *until)
{
  clock_gettime(CLOCK_REALTIME, until);
  until->tv_sec += ms / 1000;
  until->tv_nsec += (ms % 1000) * 1000000;
  if (until->tv_nsec >= 1000000000) {
    until->tv_sec++;
    until->tv_nsec -= 1000000000;
  }
}

/* Waits, on the thread, ms or until told to stop; returns whether to stop. */
static bool
fleet_link_pause(FleetLink *l, int64_t ms)
{
  struct timespec until;
  fleet_link_deadline(ms, &until);
  pthread_mutex_lock(&l->mu);
  while (!l->stop && pthread_cond_timedwait(&l->cond, &l->mu, &until) != ETIMEDOUT)
    ;
  bool stop = l->stop;
  pthread_mutex_unlock(&l->mu);
  return stop;
}

/* --- the thread: publishing ---------------------------------------------- */

static void
fleet_out_free(FleetOut *o)
{
  for (size_t i = 0; i < 2 * o->nheaders; i++)
    free(o->headers[i]);
  free(o->headers);
  free(o->subject);
  free(o->payload);
  free(o);
}

static void
fleet_link_send(FleetLink *l, FleetOut *o)
{
  /* A notification is not left in nats.c's reconnect buffer: sent first
   * once the connection is back, it would land ahead of those of its
   * session that were lost with the old one. The publisher sends its
   * whole window again when told the link is up (kFleetUp), in order. */
  if (!o->plain && natsConnection_Status(l->nc) != NATS_CONN_STATUS_CONNECTED)
    return;
  char reply[sizeof l->inbox + 48];
  snprintf(reply, sizeof reply, "%s.%" PRIu64 ".%" PRIu64, l->inbox, o->id, o->seq);
  natsMsg *msg = NULL;
  natsStatus s = natsMsg_Create(&msg, o->subject, o->plain ? NULL : reply, o->payload, (int)o->len);
  for (size_t i = 0; s == NATS_OK && i < o->nheaders; i++)
    s = natsMsgHeader_Set(msg, o->headers[2 * i], o->headers[2 * i + 1]);
  if (s == NATS_OK)
    s = natsConnection_PublishMsg(l->nc, msg);
  natsMsg_Destroy(msg);
  if (s != NATS_OK && o->plain) {
    /* An answer that cannot go: the requester's own timeout tells it. */
    char why[FLEET_LINK_ERROR_MAX];
    snprintf(why, sizeof why, "cannot answer on %s: %s", o->subject, natsStatus_GetText(s));
    fleet_link_post_kind(l, kFleetError, why);
  } else if (s != NATS_OK) {
    FleetEvent ev = {.kind = kFleetNack, .id = o->id, .seq = o->seq};
    ev.permanent = s == NATS_MAX_PAYLOAD;
    snprintf(ev.error, sizeof ev.error, "cannot publish to %s: %s", o->subject,
             natsStatus_GetText(s));
    fleet_link_post(l, &ev);
  }
}

static void *
fleet_link_main(void *arg)
{
  FleetLink *l = arg;
  int64_t backoff = l->o.retry_min_ms;
  char why[VIGIL_ERROR_MSG_MAX];
  for (;;) {
    pthread_mutex_lock(&l->mu);
    while (!l->stop && l->nc && l->stream_ok && l->out_head == NULL &&
           !(l->nserve > 0 && !l->serve_tried))
      pthread_cond_wait(&l->cond, &l->mu);
    bool stop = l->stop;
    bool stream_ok = l->stream_ok;
    bool subscribe = !stop && l->nc && stream_ok && l->nserve > 0 && !l->serve_tried;
    FleetOut *batch = NULL;
    if (!stop && l->nc && stream_ok) {
      batch = l->out_head;
      l->out_head = l->out_tail = NULL;
    }
    pthread_mutex_unlock(&l->mu);
    if (stop)
      break;
    if (subscribe)
      fleet_link_subscribe_requests(l);
    if (batch || subscribe) {
      while (batch) {
        FleetOut *next = batch->next;
        fleet_link_send(l, batch);
        fleet_out_free(batch);
        batch = next;
      }
      continue;
    }
    /* No connection, or no stream: make them. */
    if (l->nc && natsConnection_IsClosed(l->nc))
      fleet_link_drop_connection(l);
    FleetTry t = l->nc ? kTryOk : fleet_link_connect(l, why, sizeof why);
    if (t == kTryOk)
      t = fleet_link_check_stream(l, why, sizeof why);
    if (t == kTryOk) {
      backoff = l->o.retry_min_ms;
      pthread_mutex_lock(&l->mu);
      l->stream_ok = true;
      l->connected = true;
      l->connects++;
      pthread_mutex_unlock(&l->mu);
      fleet_link_set_ready(l, kFleetReady, NULL);
      fleet_link_post_kind(l, kFleetUp, NULL);
      continue;
    }
    fleet_link_set_ready(l, t == kTryRefused ? kFleetRefused : kFleetUnreachable, why);
    fleet_link_post_kind(l, kFleetDown, why);
    if (t == kTryRefused || !l->nc)
      fleet_link_drop_connection(l);
    if (fleet_link_pause(l, backoff))
      break;
    backoff = backoff * 2 > l->o.retry_max_ms ? l->o.retry_max_ms : backoff * 2;
  }
  fleet_link_drop_connection(l);
  return NULL;
}

/* --- the loop's side ----------------------------------------------------- */

/* TLS, when asked for: a tls:// URL (nats.c then wants TLS of the server
 * by itself) or any nats.tls_* file. The files are read here, at start, so
 * one that cannot be loaded stops the start: failed (size bytes) is then
 * its setting and path, for the message. */
static natsStatus
fleet_link_tls_options(FleetLink *l, char *failed, size_t size)
{
  if (!fleet_link_tls_on(l))
    return NATS_OK;
  natsStatus s = natsOptions_SetSecure(l->opts, true);
  if (s == NATS_OK && l->tls_ca) {
    s = natsOptions_LoadCATrustedCertificates(l->opts, l->tls_ca);
    if (s != NATS_OK)
      snprintf(failed, size, "nats.tls_ca %.*s", FLEET_LINK_PATH_SHOWN, l->tls_ca);
  }
  /* The config takes both or neither; a caller that gave one gets nats.c's
   * refusal, named. */
  if (s == NATS_OK && (l->tls_cert || l->tls_key)) {
    s = natsOptions_LoadCertificatesChain(l->opts, l->tls_cert, l->tls_key);
    if (s != NATS_OK)
      snprintf(failed, size, "nats.tls_cert %.*s with nats.tls_key %.*s", FLEET_LINK_PATH_SHOWN,
               l->tls_cert ? l->tls_cert : "(none)", FLEET_LINK_PATH_SHOWN,
               l->tls_key ? l->tls_key : "(none)");
  }
  return s;
}

/* Makes l->opts from l's options. When a TLS file could not be loaded,
 * failed (size bytes) names it; otherwise it is left as it was. */
static natsStatus
fleet_link_options(FleetLink *l, char *failed, size_t size)
{
  natsStatus s = natsOptions_Create(&l->opts);
  /* nats.c takes a comma-separated list here as well as one URL. */
  if (s == NATS_OK)
    s = natsOptions_SetURL(l->opts, l->url);
  if (s == NATS_OK)
    s = natsOptions_SetName(l->opts, l->client_name);
  if (s == NATS_OK)
    s = natsOptions_SetTimeout(l->opts, l->o.connect_timeout_ms);
  if (s == NATS_OK)
    s = natsOptions_SetMaxReconnect(l->opts, -1);
  /* Answers to requests go out at once rather than when nats.c's flusher
   * next runs (about 1 ms later, per hop: measured 1.6 ms per request
   * round trip before, docs/fleet.md section 6); notifications are few. */
  if (s == NATS_OK)
    s = natsOptions_SetSendAsap(l->opts, true);
  if (s == NATS_OK)
    s = natsOptions_SetReconnectWait(l->opts, l->o.retry_min_ms);
  if (s == NATS_OK)
    s = natsOptions_SetDisconnectedCB(l->opts, fleet_link_on_disconnected, l);
  if (s == NATS_OK)
    s = natsOptions_SetReconnectedCB(l->opts, fleet_link_on_reconnected, l);
  if (s == NATS_OK)
    s = natsOptions_SetErrorHandler(l->opts, fleet_link_on_error, l);
  if (s == NATS_OK && l->creds)
    s = natsOptions_SetUserCredentialsFromFiles(l->opts, l->creds, NULL);
  if (s == NATS_OK)
    s = fleet_link_tls_options(l, failed, size);
  return s;
}

/* Frees the options fleet_link_start copied. */
static void
fleet_link_free_options(FleetLink *l)
{
  free(l->url), free(l->creds), free(l->stream), free(l->client_name);
  free(l->tls_ca), free(l->tls_cert), free(l->tls_key);
}

FleetLink *
fleet_link_start(uv_loop_t *loop, const FleetLinkOptions *o, FleetLinkOnEvent on_event,
                 void *data, VigilError *err)
{
  FleetLink *l = xcalloc(1, sizeof *l);
  l->loop = loop;
  l->on_event = on_event;
  l->data = data;
  l->o = *o;
  l->url = xstrdup(o->url);
  fleet_url_redacted(o->url, l->url_shown, sizeof l->url_shown);
  l->creds = o->creds ? xstrdup(o->creds) : NULL;
  l->tls_ca = o->tls_ca ? xstrdup(o->tls_ca) : NULL;
  l->tls_cert = o->tls_cert ? xstrdup(o->tls_cert) : NULL;
  l->tls_key = o->tls_key ? xstrdup(o->tls_key) : NULL;
  l->stream = xstrdup(o->stream);
  l->client_name = xstrdup(o->client_name ? o->client_name : "vigild");
  pthread_mutex_init(&l->mu, NULL);
  pthread_cond_init(&l->cond, NULL);
  /* Every signal blocked in the link's thread and in the threads nats.c
   * starts (its library's, at the first options made, and each
   * connection's): the engine's signals are its loop's. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  char failed[2 * FLEET_LINK_PATH_SHOWN + 64] = "";
  natsStatus s = fleet_link_options(l, failed, sizeof failed);
  if (s != NATS_OK) {
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    const char *why = fleet_link_nats_words(s);
    if (failed[0])
      error_set(err, kErrInvalidParams, "nats: %s cannot be loaded: %s", failed, why);
    else
      error_set(err, kErrInvalidParams, "nats: %s (nats.url %s%s%s)", why, l->url_shown,
                l->creds ? ", nats.creds " : "", l->creds ? l->creds : "");
    natsOptions_Destroy(l->opts);
    fleet_link_free_options(l);
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cond);
    free(l);
    return NULL;
  }
  uv_async_init(loop, &l->async, fleet_link_async_cb);
  l->async.data = l;
  int rc = pthread_create(&l->thread, NULL, fleet_link_main, l);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc == 0)
    pthread_setname_np(l->thread, "vigild-nats"); /* top and perf tell it apart */
  if (rc != 0) {
    error_set(err, kErrInternal, "nats: cannot start its thread: %s", strerror(rc));
    l->stop = true;
    fleet_link_stop(l);
    return NULL;
  }
  return l;
}

FleetReadiness
fleet_link_wait_ready(FleetLink *l, int64_t timeout_ms, VigilError *err)
{
  struct timespec until;
  fleet_link_deadline(timeout_ms, &until);
  pthread_mutex_lock(&l->mu);
  while (!l->ready_known && pthread_cond_timedwait(&l->cond, &l->mu, &until) != ETIMEDOUT)
    ;
  FleetReadiness r = l->ready_known ? l->ready : kFleetUnreachable;
  if (r != kFleetReady)
    error_set(err, r == kFleetRefused ? kErrInvalidParams : kErrInternal, "nats: %s",
              l->ready_known ? l->ready_error : "no answer from the server in time");
  pthread_mutex_unlock(&l->mu);
  return r;
}

/* Hands o to the thread: appended to what it sends, in order. */
static void
fleet_link_queue(FleetLink *l, FleetOut *o)
{
  pthread_mutex_lock(&l->mu);
  if (l->out_tail)
    l->out_tail->next = o;
  else
    l->out_head = o;
  l->out_tail = o;
  pthread_mutex_unlock(&l->mu);
  pthread_cond_broadcast(&l->cond);
}

void
fleet_link_publish(FleetLink *l, const char *subject, const char *const *headers,
                   size_t nheaders, const void *payload, size_t len, uint64_t id, uint64_t seq)
{
  FleetOut *o = xcalloc(1, sizeof *o);
  o->subject = xstrdup(subject);
  o->nheaders = nheaders;
  o->headers = xcalloc(2 * nheaders + 1, sizeof *o->headers);
  for (size_t i = 0; i < 2 * nheaders; i++)
    o->headers[i] = xstrdup(headers[i]);
  o->payload = xmalloc(len ? len : 1);
  memcpy(o->payload, payload, len);
  o->len = len;
  o->id = id;
  o->seq = seq;
  fleet_link_queue(l, o);
}

void
fleet_link_serve(FleetLink *l, const char *const *subjects, size_t nsubjects,
                 FleetLinkOnRequest on_request, void *data)
{
  char **copy = xcalloc(nsubjects, sizeof *copy);
  for (size_t i = 0; i < nsubjects; i++)
    copy[i] = xstrdup(subjects[i]);
  pthread_mutex_lock(&l->mu);
  l->on_request = on_request;
  l->request_data = data;
  l->serve_subjects = copy;
  l->nserve = nsubjects;
  pthread_mutex_unlock(&l->mu);
  pthread_cond_broadcast(&l->cond);
}

bool
fleet_link_wait_serving(FleetLink *l, int64_t timeout_ms)
{
  struct timespec until;
  fleet_link_deadline(timeout_ms, &until);
  pthread_mutex_lock(&l->mu);
  while (!l->serving && pthread_cond_timedwait(&l->cond, &l->mu, &until) != ETIMEDOUT)
    ;
  bool serving = l->serving;
  pthread_mutex_unlock(&l->mu);
  return serving;
}

void
fleet_link_reply(FleetLink *l, const char *subject, const void *payload, size_t len)
{
  FleetOut *o = xcalloc(1, sizeof *o);
  o->subject = xstrdup(subject);
  o->headers = xcalloc(1, sizeof *o->headers);
  o->payload = xmalloc(len ? len : 1);
  memcpy(o->payload, payload, len);
  o->len = len;
  o->plain = true;
  fleet_link_queue(l, o);
}

void
fleet_link_stats(FleetLink *l, FleetLinkStats *out)
{
  pthread_mutex_lock(&l->mu);
  out->connected = l->connected && l->stream_ok;
  out->events_dropped = l->events_dropped;
  out->connects = l->connects;
  out->requests_dropped = l->requests_dropped;
  out->serving = l->serving;
  pthread_mutex_unlock(&l->mu);
}

static void
fleet_link_closed_cb(uv_handle_t *h)
{
  free(h->data);
}

void
fleet_link_stop(FleetLink *l)
{
  if (l == NULL)
    return;
  pthread_mutex_lock(&l->mu);
  bool started = !l->stop;
  l->stop = true;
  pthread_mutex_unlock(&l->mu);
  pthread_cond_broadcast(&l->cond);
  if (started)
    pthread_join(l->thread, NULL);
  natsOptions_Destroy(l->opts);
  /* nats.c's own threads end with the last connection. */
  nats_CloseAndWait(2000);
  while (l->out_head) {
    FleetOut *next = l->out_head->next;
    fleet_out_free(l->out_head);
    l->out_head = next;
  }
  while (l->ev_head) {
    FleetEventNode *next = l->ev_head->next;
    free(l->ev_head);
    l->ev_head = next;
  }
  while (l->rq_head) {
    FleetRequest *next = l->rq_head->next;
    fleet_request_free(l->rq_head);
    l->rq_head = next;
  }
  for (size_t i = 0; i < l->nserve; i++)
    free(l->serve_subjects[i]);
  free(l->serve_subjects);
  fleet_link_free_options(l);
  pthread_mutex_destroy(&l->mu);
  pthread_cond_destroy(&l->cond);
  uv_close((uv_handle_t *)&l->async, fleet_link_closed_cb);
}
