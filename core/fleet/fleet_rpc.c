/*
 * The request bridge (fleet_rpc.h): requests from the link, checked, sent
 * into virtual connections of the API, and their answers sent back.
 *
 * A request is checked in the order a reader of the refusal would want:
 * the subject (a session's token that names no session), the requester's
 * id, the size (rpc.max_message_bytes, before anything is decoded), the
 * frame (one whole msgpack-rpc request or notification, decoded by the
 * socket's own decoder, nothing after it), the scope (fleet_scope.h), the
 * virtual connections' bound (nats.max_clients), the requester's pending
 * answers (rpc.max_pending). Each refusal is answered on the request's
 * reply subject when it has one, as [1, msgid or 0, [code, message], nil],
 * and counted; none changes anything.
 *
 * A virtual connection of a session's subject opens that session on its
 * first call that acts on one (unless that call is the session_open), so a
 * requester that sends nothing but monitor_list on `vigil.e1.s1.rpc` gets
 * s1's monitors; the answer to that session_open is the bridge's own.
 *
 * Msgids: the API sees the bridge's (a counter per virtual connection),
 * never the requester's, so two requesters sharing a virtual connection
 * (no Vigil-Client header) cannot answer each other's msgids; each is
 * mapped back with the reply subject it came with.
 */
#include "fleet/fleet_rpc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api/wire.h"
#include "base/log.h"
#include "base/memory.h"
#include "spec/fleet_names.h"
#include "fleet/fleet_scope.h"
#include "rpc/decoder.h"
#include "rpc/pack.h"
#include "session/session.h"

#define L "nats"

/* The bytes a virtual connection's reader asks libuv for at a time. */
#define FLEET_RPC_READ_CHUNK 65536

typedef struct FleetClient FleetClient;

/* A request written into a virtual connection and not answered yet. */
typedef struct FleetPending {
  struct FleetPending *next;
  uint32_t ours;            /* the msgid the API sees */
  uint32_t theirs;          /* the requester's */
  char *reply;              /* where the answer goes; NULL: nowhere (none wanted) */
  bool opens_session;       /* the bridge's own session_open (no requester) */
} FleetPending;

struct FleetClient {
  FleetRpc *r;
  char subject[FLEET_SUBJECT_MAX];     /* the request subject it serves */
  char id[FLEET_CLIENT_ID_MAX + 1];    /* the requester's Vigil-Client, "": shared */
  char session[SESSION_NAME_MAX + 1];  /* a session's subject: its session, else "" */
  bool session_opened;                 /* that session is open (or being opened) here */
  char peer[FLEET_SUBJECT_MAX + FLEET_CLIENT_ID_MAX + 32]; /* for log lines */
  uv_pipe_t pipe;                      /* the bridge's end of the socketpair */
  uv_timer_t idle;
  int open_handles;
  msgpack_unpacker answers;            /* what the API writes back */
  FleetPending *pending;
  size_t npending;
  uint32_t next_msgid;
  bool closing;
  FleetClient *prev, *next;
};

struct FleetRpc {
  Engine *e;
  Api *api;
  FleetLink *link;
  char engine[FLEET_ENGINE_NAME_MAX + 1];
  char subject_engine[FLEET_SUBJECT_MAX];   /* vigil.<engine>.rpc */
  char subject_sessions[FLEET_SUBJECT_MAX]; /* vigil.<engine>.*.rpc */
  int64_t max_clients;
  int64_t idle_ms;
  FleetClient *clients;
  size_t nclients;
  /* What api_info reports. */
  uint64_t requests;        /* every message received on a request subject */
  uint64_t answered;        /* answers published (the API's and the refusals) */
  uint64_t refused;         /* well-formed, refused by a bound, the scope, a bad header */
  uint64_t malformed;       /* not one well-formed request or notification frame */
  uint64_t notifications_dropped; /* pushed to a virtual connection */
  uint64_t clients_opened;
  uint64_t clients_idle_closed;
};

/* --- answers ------------------------------------------------------------- */

/* Publishes an error answer to reply (when there is one). */
static void
fleet_rpc_answer_error(FleetRpc *r, const char *reply, uint32_t msgid, const VigilError *err)
{
  if (reply == NULL)
    return;
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_array(&pk, 4);
  msgpack_pack_int(&pk, 1);
  msgpack_pack_uint32(&pk, msgid);
  msgpack_pack_array(&pk, 2);
  msgpack_pack_int(&pk, (int)err->code);
  rpc_pack_str(&pk, err->msg, strlen(err->msg));
  msgpack_pack_nil(&pk);
  fleet_link_reply(r->link, reply, sb.data, sb.size);
  msgpack_sbuffer_destroy(&sb);
  r->answered++;
}

/* A request refused before it reached the API: counted as malformed or
 * refused, logged at debug (a flood must not fill the log), answered. */
static void
fleet_rpc_refuse(FleetRpc *r, const FleetRequest *req, bool malformed, uint32_t msgid,
                 const VigilError *err)
{
  if (malformed)
    r->malformed++;
  else
    r->refused++;
  LOG_DEBUG(L, "request on %s%s%s refused: %s", req->subject, req->client ? " from " : "",
            req->client ? req->client : "", err->msg);
  fleet_rpc_answer_error(r, req->reply, msgid, err);
}

/* --- virtual connections -------------------------------------------------- */

static void fleet_client_close(FleetClient *c, const char *why);

static void
fleet_client_handle_closed(uv_handle_t *h)
{
  FleetClient *c = h->data;
  if (--c->open_handles > 0)
    return;
  msgpack_unpacker_destroy(&c->answers);
  while (c->pending) {
    FleetPending *next = c->pending->next;
    free(c->pending->reply);
    free(c->pending);
    c->pending = next;
  }
  free(c);
}

static FleetPending *
fleet_client_take_pending(FleetClient *c, uint32_t ours)
{
  for (FleetPending **p = &c->pending; *p; p = &(*p)->next) {
    if ((*p)->ours == ours) {
      FleetPending *found = *p;
      *p = found->next;
      c->npending--;
      return found;
    }
  }
  return NULL;
}

/* One message the API wrote to the virtual connection. */
static void
fleet_client_on_message(FleetClient *c, const msgpack_object *o)
{
  FleetRpc *r = c->r;
  if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size < 1)
    return;
  const msgpack_object *a = o->via.array.ptr;
  if (a[0].type == MSGPACK_OBJECT_POSITIVE_INTEGER && a[0].via.u64 == 2) {
    /* A notification (vigil.notification, vigil.error of a call sent as
     * a notification): a fleet reads notifications from JetStream. */
    r->notifications_dropped++;
    return;
  }
  if (o->via.array.size != 4 || a[0].type != MSGPACK_OBJECT_POSITIVE_INTEGER ||
      a[0].via.u64 != 1 || a[1].type != MSGPACK_OBJECT_POSITIVE_INTEGER ||
      a[1].via.u64 > UINT32_MAX)
    return;
  FleetPending *p = fleet_client_take_pending(c, (uint32_t)a[1].via.u64);
  if (p == NULL)
    return;
  if (p->opens_session && a[2].type != MSGPACK_OBJECT_NIL) {
    /* The session could not be opened (session.max_sessions, say): the
     * call behind it is refused not_found; the next one tries again. */
    c->session_opened = false;
    LOG_WARN(L, "%s: cannot open the session \"%s\" for its requests (the requests answer "
             "not_found until it can be)", c->peer, c->session);
  }
  if (p->reply != NULL) {
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_array(&pk, 4);
    msgpack_pack_int(&pk, 1);
    msgpack_pack_uint32(&pk, p->theirs);
    msgpack_pack_object(&pk, a[2]);
    msgpack_pack_object(&pk, a[3]);
    fleet_link_reply(r->link, p->reply, sb.data, sb.size);
    msgpack_sbuffer_destroy(&sb);
    r->answered++;
  }
  free(p->reply);
  free(p);
  /* The idle bound counts from the last answer too. */
  if (!c->closing)
    uv_timer_again(&c->idle);
}

static void
fleet_client_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
  FleetClient *c = h->data;
  (void)suggested;
  if (!msgpack_unpacker_reserve_buffer(&c->answers, FLEET_RPC_READ_CHUNK)) {
    *buf = uv_buf_init(NULL, 0);
    return;
  }
  *buf = uv_buf_init(msgpack_unpacker_buffer(&c->answers),
                     (unsigned)msgpack_unpacker_buffer_capacity(&c->answers));
}

static void
fleet_client_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
  FleetClient *c = s->data;
  (void)buf;
  if (nread < 0) {
    fleet_client_close(c, nread == UV_EOF ? "the engine closed it" : uv_strerror((int)nread));
    return;
  }
  msgpack_unpacker_buffer_consumed(&c->answers, (size_t)nread);
  msgpack_unpacked u;
  msgpack_unpacked_init(&u);
  int rc;
  while ((rc = msgpack_unpacker_next(&c->answers, &u)) == MSGPACK_UNPACK_SUCCESS && !c->closing)
    fleet_client_on_message(c, &u.data);
  msgpack_unpacked_destroy(&u);
  if (rc == MSGPACK_UNPACK_PARSE_ERROR && !c->closing)
    fleet_client_close(c, "the engine wrote something that is not msgpack");
}

typedef struct {
  uv_write_t req;
  char data[];
} FleetWrite;

static void
fleet_client_written(uv_write_t *w, int status)
{
  FleetClient *c = w->data;
  free(w);
  if (status < 0 && status != UV_ECANCELED && !c->closing)
    fleet_client_close(c, uv_strerror(status));
}

/* Writes one frame into the virtual connection. */
static void
fleet_client_write(FleetClient *c, const char *data, size_t len)
{
  FleetWrite *w = xmalloc(sizeof *w + len);
  memcpy(w->data, data, len);
  w->req.data = c;
  uv_buf_t b = uv_buf_init(w->data, (unsigned)len);
  int rc = uv_write(&w->req, (uv_stream_t *)&c->pipe, &b, 1, fleet_client_written);
  if (rc < 0) {
    free(w);
    fleet_client_close(c, uv_strerror(rc));
  }
}

static void
fleet_client_idle_cb(uv_timer_t *t)
{
  FleetClient *c = t->data;
  if (c->npending > 0)
    return; /* an answer is awaited: the timer repeats, and each answer restarts it */
  c->r->clients_idle_closed++;
  fleet_client_close(c, "idle for nats.client_idle_ms");
}

/* Closes a virtual connection: its end of the socketpair goes, so the API
 * sees it close as a socket's. Requests still pending are answered with
 * why (the API can no longer answer them). */
static void
fleet_client_close(FleetClient *c, const char *why)
{
  if (c->closing)
    return;
  c->closing = true;
  FleetRpc *r = c->r;
  LOG_INFO(L, "%s: virtual connection closed: %s", c->peer, why);
  VigilError err = VIGIL_ERROR_INIT;
  error_set(&err, kErrInternal, "the virtual connection of %s closed before answering: %s",
            c->peer, why);
  for (FleetPending *p = c->pending; p; p = p->next)
    if (r != NULL && p->reply != NULL)
      fleet_rpc_answer_error(r, p->reply, p->theirs, &err);
  if (r != NULL) {
    if (c->prev)
      c->prev->next = c->next;
    else
      r->clients = c->next;
    if (c->next)
      c->next->prev = c->prev;
    r->nclients--;
  }
  uv_read_stop((uv_stream_t *)&c->pipe);
  uv_close((uv_handle_t *)&c->pipe, fleet_client_handle_closed);
  uv_close((uv_handle_t *)&c->idle, fleet_client_handle_closed);
}

static FleetClient *
fleet_client_find(FleetRpc *r, const char *subject, const char *id)
{
  for (FleetClient *c = r->clients; c; c = c->next)
    if (strcmp(c->subject, subject) == 0 && strcmp(c->id, id) == 0)
      return c;
  return NULL;
}

/* A new virtual connection for (subject, id): a socketpair whose one end
 * the API serves. NULL with err when one cannot be made. */
static FleetClient *
fleet_client_open(FleetRpc *r, const char *subject, const char *id, const char *session,
                  VigilError *err)
{
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds) != 0) {
    error_set(err, kErrLimitExceeded, "the engine cannot make a connection for this requester: "
              "socketpair: %s", strerror(errno));
    return NULL;
  }
  FleetClient *c = xcalloc(1, sizeof *c);
  c->r = r;
  snprintf(c->subject, sizeof c->subject, "%s", subject);
  snprintf(c->id, sizeof c->id, "%s", id);
  snprintf(c->session, sizeof c->session, "%s", session);
  snprintf(c->peer, sizeof c->peer, "nats %s%s%s", subject, id[0] ? " client " : "", id);
  c->next_msgid = 1;
  if (!msgpack_unpacker_init(&c->answers, FLEET_RPC_READ_CHUNK))
    abort();
  uv_pipe_init(r->e->loop, &c->pipe, 0);
  c->pipe.data = c;
  uv_timer_init(r->e->loop, &c->idle);
  c->idle.data = c;
  c->open_handles = 2;
  int rc = uv_pipe_open(&c->pipe, fds[0]);
  if (rc != 0) {
    /* Neither end is anyone's yet. */
    close(fds[0]);
    close(fds[1]);
  } else if (api_adopt(r->api, fds[1], c->peer, err) != 0) {
    rc = UV_EINVAL; /* err says why; api_adopt closed its end */
  } else {
    rc = uv_read_start((uv_stream_t *)&c->pipe, fleet_client_alloc, fleet_client_read);
  }
  if (rc != 0) {
    error_set(err, kErrInternal, "the engine cannot serve this requester: %s", uv_strerror(rc));
    c->r = NULL; /* not listed */
    fleet_client_close(c, err->msg);
    return NULL;
  }
  /* The idle bound repeats: each request and answer restarts it. */
  uv_timer_start(&c->idle, fleet_client_idle_cb, (uint64_t)r->idle_ms, (uint64_t)r->idle_ms);
  c->next = r->clients;
  if (r->clients)
    r->clients->prev = c;
  r->clients = c;
  r->nclients++;
  r->clients_opened++;
  return c;
}

/* The next msgid of c that is not pending (after 2^32 requests it wraps). */
static uint32_t
fleet_client_msgid(FleetClient *c)
{
  for (;;) {
    uint32_t id = c->next_msgid++;
    bool used = false;
    for (FleetPending *p = c->pending; p && !used; p = p->next)
      used = p->ours == id;
    if (!used)
      return id;
  }
}

static void
fleet_client_add_pending(FleetClient *c, uint32_t ours, uint32_t theirs, const char *reply,
                         bool opens_session)
{
  FleetPending *p = xcalloc(1, sizeof *p);
  p->ours = ours;
  p->theirs = theirs;
  p->reply = reply ? xstrdup(reply) : NULL;
  p->opens_session = opens_session;
  p->next = c->pending;
  c->pending = p;
  c->npending++;
}

/* The bridge's own session_open of c's session, ahead of a call on it. */
static void
fleet_client_open_session(FleetClient *c)
{
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  uint32_t ours = fleet_client_msgid(c);
  msgpack_pack_array(&pk, 4);
  msgpack_pack_int(&pk, 0);
  msgpack_pack_uint32(&pk, ours);
  wire_str(&pk, "session_open");
  msgpack_pack_array(&pk, 1);
  msgpack_pack_map(&pk, 1);
  wire_key(&pk, "session");
  wire_str(&pk, c->session);
  fleet_client_add_pending(c, ours, 0, NULL, true);
  c->session_opened = true;
  fleet_client_write(c, sb.data, sb.size);
  msgpack_sbuffer_destroy(&sb);
}

/* Packs a call's parameters for c: as sent on the engine's subject; on a
 * session's, without any `session` argument, and with c's session for a
 * method that acts on one. */
static void
fleet_pack_params(msgpack_packer *pk, const FleetClient *c, const msgpack_object *args,
                  FleetScopeKind kind)
{
  if (c->session[0] == '\0') {
    if (args == NULL)
      msgpack_pack_array(pk, 0);
    else {
      msgpack_pack_array(pk, 1);
      msgpack_pack_object(pk, *args);
    }
    return;
  }
  uint32_t keep = 0;
  for (uint32_t i = 0; args && i < args->via.map.size; i++) {
    const msgpack_object *k = &args->via.map.ptr[i].key;
    if (!(k->via.str.size == 7 && memcmp(k->via.str.ptr, "session", 7) == 0))
      keep++;
  }
  bool add = kind == kScopeSession;
  msgpack_pack_array(pk, 1);
  msgpack_pack_map(pk, keep + (add ? 1 : 0));
  for (uint32_t i = 0; args && i < args->via.map.size; i++) {
    const msgpack_object *k = &args->via.map.ptr[i].key;
    if (k->via.str.size == 7 && memcmp(k->via.str.ptr, "session", 7) == 0)
      continue;
    msgpack_pack_object(pk, *k);
    msgpack_pack_object(pk, args->via.map.ptr[i].val);
  }
  if (add) {
    wire_key(pk, "session");
    wire_str(pk, c->session);
  }
}

/* --- requests ------------------------------------------------------------ */

/* Decodes req's payload as exactly one frame into *msg (valid while d
 * lives). -1 with err (and *msgid when it could be read) when it is not. */
static int
fleet_rpc_decode(RpcDecoder *d, const FleetRequest *req, RpcMessage *msg, uint32_t *msgid,
                 VigilError *err)
{
  rpc_decoder_feed(d, req->payload, req->len);
  RpcDecodeResult rc = rpc_decoder_next(d, msg, err);
  if (rc == kDecodeBadShape || rc == kDecodeTooBig) {
    if (msg->has_msgid)
      *msgid = msg->msgid;
    return -1;
  }
  if (rc == kDecodeFatal)
    return -1;
  if (rc == kDecodeNeedMore)
    return error_set(err, kErrInvalidParams, "the payload (%zu bytes) is not one whole "
                     "msgpack-rpc frame: it ends inside one", req->len);
  if (msg->has_msgid)
    *msgid = msg->msgid;
  if (msg->type == kRpcResponse)
    return error_set(err, kErrInvalidParams, "message: a response frame [1, ...]: the engine "
                     "answers requests and takes no answers");
  size_t rest = rpc_decoder_buffered(d);
  if (rest > 0)
    return error_set(err, kErrInvalidParams, "the payload holds more than one frame: %zu bytes "
                     "follow the first (send one frame per request)", rest);
  return 0;
}

static void
fleet_rpc_on_request(void *data, FleetRequest *req)
{
  FleetRpc *r = data;
  const VigilSettings *st = &r->e->config.settings;
  r->requests++;
  VigilError err = VIGIL_ERROR_INIT;
  uint32_t msgid = 0;
  char session[SESSION_NAME_MAX + 1] = "";
  FleetScopeKind kind = kScopeSession;
  RpcDecoder *d = NULL;
  FleetRpcScope scope = fleet_rpc_subject_read(req->subject, r->engine, session, sizeof session);
  if (scope == kFleetRpcNotOurs || (scope == kFleetRpcSession && !session_name_ok(session))) {
    error_set(&err, kErrInvalidParams, "subject: %.200s names no session of this engine (a "
              "session's token is its name with each '.' written %%2E, docs/fleet.md)",
              req->subject);
    fleet_rpc_refuse(r, req, false, 0, &err);
    goto done;
  }
  if (req->client && !fleet_client_id_ok(req->client)) {
    error_set(&err, kErrInvalidParams, FLEET_CLIENT_HEADER " must be 1..%d of A-Z a-z 0-9 _ - "
              ": . (it names the requester's connection), got %zu bytes", FLEET_CLIENT_ID_MAX,
              strlen(req->client));
    fleet_rpc_refuse(r, req, false, 0, &err);
    goto done;
  }
  if (req->len > (size_t)st->rpc_max_message_bytes) {
    error_set(&err, kErrLimitExceeded, "the request is %zu bytes, over rpc.max_message_bytes "
              "(%lld)", req->len, (long long)st->rpc_max_message_bytes);
    fleet_rpc_refuse(r, req, false, 0, &err);
    goto done;
  }
  d = rpc_decoder_new((size_t)st->rpc_max_message_bytes);
  RpcMessage msg;
  if (fleet_rpc_decode(d, req, &msg, &msgid, &err) != 0) {
    fleet_rpc_refuse(r, req, err.code != kErrLimitExceeded, msgid, &err);
    goto done;
  }
  if (scope == kFleetRpcSession) {
    kind = fleet_scope_of(msg.method, msg.method_len);
    if (kind == kScopeDenied) {
      error_set(&err, kErrDenied, "%.*s acts on more than one session; %s serves the session "
                "\"%s\" alone (vigil.%s.rpc serves the whole engine)", (int)msg.method_len,
                msg.method, req->subject, session, r->engine);
      fleet_rpc_refuse(r, req, false, msgid, &err);
      goto done;
    }
    if (fleet_scope_check_session(msg.args, session, req->subject, &err) != 0) {
      fleet_rpc_refuse(r, req, false, msgid, &err);
      goto done;
    }
  }
  const char *id = req->client ? req->client : "";
  FleetClient *c = fleet_client_find(r, req->subject, id);
  if (c == NULL && r->nclients >= (size_t)r->max_clients) {
    error_set(&err, kErrLimitExceeded, "nats.max_clients (%lld) requesters have a connection "
              "open; one closes after nats.client_idle_ms without requests", (long long)r->max_clients);
    fleet_rpc_refuse(r, req, false, msgid, &err);
    goto done;
  }
  if (c != NULL && msg.type == kRpcRequest && c->npending >= (size_t)st->rpc_max_pending) {
    error_set(&err, kErrLimitExceeded, "rpc.max_pending (%lld) requests of this requester "
              "wait for their answers", (long long)st->rpc_max_pending);
    fleet_rpc_refuse(r, req, false, msgid, &err);
    goto done;
  }
  if (c == NULL && (c = fleet_client_open(r, req->subject, id, session, &err)) == NULL) {
    fleet_rpc_refuse(r, req, false, msgid, &err);
    goto done;
  }
  if (c->session[0] && kind == kScopeSession && !c->session_opened) {
    if (msg.method_len == 12 && memcmp(msg.method, "session_open", 12) == 0)
      c->session_opened = true;
    else
      fleet_client_open_session(c);
  }
  /* A session closed here is opened again by the next call on it. */
  if (c->session[0] && msg.method_len == 13 && memcmp(msg.method, "session_close", 13) == 0)
    c->session_opened = false;
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  if (msg.type == kRpcRequest) {
    uint32_t ours = fleet_client_msgid(c);
    fleet_client_add_pending(c, ours, msg.msgid, req->reply, false);
    msgpack_pack_array(&pk, 4);
    msgpack_pack_int(&pk, 0);
    msgpack_pack_uint32(&pk, ours);
  } else {
    msgpack_pack_array(&pk, 3);
    msgpack_pack_int(&pk, 2);
  }
  rpc_pack_str(&pk, msg.method, msg.method_len);
  fleet_pack_params(&pk, c, msg.args, kind);
  fleet_client_write(c, sb.data, sb.size);
  msgpack_sbuffer_destroy(&sb);
  if (!c->closing)
    uv_timer_again(&c->idle);
done:
  rpc_decoder_free(d);
  fleet_request_free(req);
}

/* --- the bridge ------------------------------------------------------------ */

FleetRpc *
fleet_rpc_start(Engine *e, Api *api, FleetLink *link, const FleetRpcConfig *c)
{
  FleetRpc *r = xcalloc(1, sizeof *r);
  r->e = e;
  r->api = api;
  r->link = link;
  snprintf(r->engine, sizeof r->engine, "%s", c->engine);
  r->max_clients = c->max_clients;
  r->idle_ms = c->client_idle_ms;
  fleet_rpc_subject(r->subject_engine, sizeof r->subject_engine, r->engine, NULL);
  fleet_rpc_subject_any_session(r->subject_sessions, sizeof r->subject_sessions, r->engine);
  const char *subjects[] = {r->subject_engine, r->subject_sessions};
  fleet_link_serve(link, subjects, 2, fleet_rpc_on_request, r);
  FleetLinkStats ls = {0};
  fleet_link_stats(link, &ls);
  if (!ls.connected)
    LOG_INFO(L, "requests on %s and %s are served once the server is reached",
             r->subject_engine, r->subject_sessions);
  else if (!fleet_link_wait_serving(link, c->connect_timeout_ms))
    LOG_WARN(L, "the server did not take the subscriptions to %s and %s within "
             "nats.connect_timeout_ms (%lld ms): requests are served once it does",
             r->subject_engine, r->subject_sessions, (long long)c->connect_timeout_ms);
  else
    LOG_INFO(L, "serving requests on %s and %s (docs/fleet.md section 6)", r->subject_engine,
             r->subject_sessions);
  return r;
}

void
fleet_rpc_free(FleetRpc *r)
{
  if (r == NULL)
    return;
  while (r->clients) {
    FleetClient *c = r->clients;
    /* Nothing is answered any more: the link stops next. */
    while (c->pending) {
      FleetPending *next = c->pending->next;
      free(c->pending->reply);
      free(c->pending);
      c->pending = next;
    }
    c->npending = 0;
    fleet_client_close(c, "the engine is stopping");
  }
  free(r);
}

void
fleet_rpc_pack_info(FleetRpc *r, msgpack_packer *pk)
{
  FleetLinkStats ls = {0};
  fleet_link_stats(r->link, &ls);
  msgpack_pack_map(pk, 10);
  wire_key(pk, "subjects");
  msgpack_pack_array(pk, 2);
  wire_str(pk, r->subject_engine);
  wire_str(pk, r->subject_sessions);
  wire_key(pk, "serving");
  ls.serving ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
  wire_key(pk, "requests");
  msgpack_pack_uint64(pk, r->requests);
  wire_key(pk, "answered");
  msgpack_pack_uint64(pk, r->answered);
  wire_key(pk, "refused");
  msgpack_pack_uint64(pk, r->refused);
  wire_key(pk, "malformed");
  msgpack_pack_uint64(pk, r->malformed);
  /* Dropped unanswered before the loop saw them (the link's queue full). */
  wire_key(pk, "dropped");
  msgpack_pack_uint64(pk, ls.requests_dropped);
  wire_key(pk, "clients");
  msgpack_pack_uint64(pk, r->nclients);
  wire_key(pk, "clients_idle_closed");
  msgpack_pack_uint64(pk, r->clients_idle_closed);
  wire_key(pk, "notifications_dropped");
  msgpack_pack_uint64(pk, r->notifications_dropped);
}
