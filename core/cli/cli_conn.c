/*
 * A blocking msgpack-rpc connection to vigild (see cli_conn.h). Connecting
 * (with the check of who serves the socket), writing a request and cutting
 * the stream into messages under a bound are the C clients' shared ones
 * (clients/c/link: endpoint.h, frame.h), as libvigilclient and the
 * benchmarks use them; what is the CLI's own is the conversation: answers
 * kept by msgid, notifications to a callback, the wake and hangup fds. The
 * socket is non-blocking underneath so that every read and write can wait
 * in poll() with the caller's deadline. An answer that nobody is waiting
 * for yet is kept in a short list until it is taken: the client sends at
 * most a few requests at once, so the list stays small.
 */
#include "cli/cli_conn.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli_natsreq.h"
#include "link/endpoint.h"
#include "link/frame.h"
#include "base/memory.h"
#include "base/utf8.h"

/* The largest message the client accepts. The engine caps what it queues
 * for one connection at rpc.max_output_bytes (at most 1 GiB), so anything
 * bigger is not the engine talking. */
#define CLI_CONN_MESSAGE_MAX ((size_t)1100 << 20)

/* How much the read buffer grows by at a time. */
#define CLI_CONN_READ_CHUNK ((size_t)64 << 10)

/* An answer that arrived before anyone asked for it. */
typedef struct CliKept {
  struct CliKept *next;
  uint32_t msgid;
  msgpack_unpacked msg;
} CliKept;

/* How many given-up requests a connection remembers. */
#define CLI_CONN_ABANDONED_MAX 64

struct CliConn {
  int fd;
  CliNatsReq *nats; /* requests over NATS (cli_natsreq.h): fd reads its answers; NULL: the socket */
  uint32_t next_msgid;
  Frame frame; /* its bound is CLI_CONN_MESSAGE_MAX */
  CliKept *kept;
  /* Requests given up on at their deadline: their late answers are dropped
   * when they come, not kept for nobody (the oldest is forgotten first). */
  uint32_t abandoned[CLI_CONN_ABANDONED_MAX];
  size_t nabandoned;
  CliNotifyFn notify;
  void *notify_ctx;
  int wake_fd; /* readable: stop waiting (cli_conn_set_wake_fd); -1: none */
  int hangup_fd; /* its reader gone: stop waiting (cli_conn_set_hangup_fd); -1: none */
};

int
cli_error_set(CliError *err, CliErrorKind kind, const char *fmt, ...)
{
  err->kind = kind;
  err->code = -1;
  va_list ap;
  va_start(ap, fmt);
  /* At a character boundary: vigil mcp sends the message on as JSON. */
  utf8_vsnprintf(err->msg, sizeof err->msg, fmt, ap);
  va_end(ap);
  return -1;
}

/* --- argument maps ------------------------------------------------------ */

void
cli_req_init(CliReq *r)
{
  msgpack_sbuffer_init(&r->body);
  msgpack_packer_init(&r->pk, &r->body, msgpack_sbuffer_write);
  r->count = 0;
}

void
cli_req_free(CliReq *r)
{
  msgpack_sbuffer_destroy(&r->body);
}

msgpack_packer *
cli_req_key(CliReq *r, const char *key)
{
  size_t n = strlen(key);
  msgpack_pack_str(&r->pk, n);
  msgpack_pack_str_body(&r->pk, key, n);
  r->count++;
  return &r->pk;
}

void
cli_req_str(CliReq *r, const char *key, const char *value)
{
  msgpack_packer *pk = cli_req_key(r, key);
  size_t n = strlen(value);
  msgpack_pack_str(pk, n);
  msgpack_pack_str_body(pk, value, n);
}

void
cli_req_uint(CliReq *r, const char *key, uint64_t value)
{
  msgpack_pack_uint64(cli_req_key(r, key), value);
}

void
cli_req_bool(CliReq *r, const char *key, bool value)
{
  msgpack_packer *pk = cli_req_key(r, key);
  if (value)
    msgpack_pack_true(pk);
  else
    msgpack_pack_false(pk);
}

void
cli_reply_free(CliReply *reply)
{
  msgpack_unpacked_destroy(&reply->msg);
  reply->result = NULL;
}

/* --- the connection ----------------------------------------------------- */

int64_t
cli_now_ms(void)
{
  return endpoint_now_ms();
}

CliConn *
cli_conn_open(const char *path, CliError *err)
{
  int fd;
  char why[CLI_ERROR_MSG_MAX];
  EndpointResult r = endpoint_connect(path, &fd, why, sizeof why);
  if (r != kEndpointOk) {
    /* No engine means "start one", which is what the caller will say. */
    cli_error_set(err, r == kEndpointNoEngine ? kCliErrNoEngine : kCliErrTransport, "%s", why);
    return NULL;
  }
  CliConn *c = xcalloc(1, sizeof *c);
  c->fd = fd;
  c->next_msgid = 1;
  c->wake_fd = -1;
  c->hangup_fd = -1;
  frame_init(&c->frame, CLI_CONN_MESSAGE_MAX);
  return c;
}

CliConn *
cli_conn_open_nats(const char *url, const char *engine, const char *session, CliError *err)
{
  char subject[512], why[CLI_ERROR_MSG_MAX];
  if (cli_natsreq_subject(subject, sizeof subject, engine, session) != 0) {
    cli_error_set(err, kCliErrTransport, "--engine must be 1..64 of A-Z a-z 0-9 _ -, got \"%.64s\"",
                  engine);
    return NULL;
  }
  int fd = -1;
  bool denied = false;
  CliNatsReq *n = cli_natsreq_open(url, subject, &fd, &denied, why, sizeof why);
  if (n == NULL) {
    /* A server out of reach is no engine; a refusal of this user's is a
     * mistake in the set-up, said (a hook is quiet only with no engine). */
    cli_error_set(err, denied ? kCliErrTransport : kCliErrNoEngine, "%s", why);
    return NULL;
  }
  CliConn *c = xcalloc(1, sizeof *c);
  c->fd = fd;
  c->nats = n;
  c->next_msgid = 1;
  c->wake_fd = -1;
  c->hangup_fd = -1;
  frame_init(&c->frame, CLI_CONN_MESSAGE_MAX);
  return c;
}

int
cli_conn_nats_listen(CliConn *c, const char *engine, const char *session, CliError *err)
{
  char why[CLI_ERROR_MSG_MAX];
  if (c->nats == NULL)
    return cli_error_set(err, kCliErrTransport, "not a connection through NATS");
  if (cli_natsreq_listen(c->nats, engine, session, why, sizeof why) != 0)
    return cli_error_set(err, kCliErrTransport, "%s", why);
  return 0;
}

int
cli_conn_fd(const CliConn *c)
{
  return c->fd;
}

void
cli_conn_close(CliConn *c)
{
  if (c == NULL)
    return;
  if (c->nats)
    cli_natsreq_close(c->nats); /* closes fd too */
  else
    close(c->fd);
  frame_free(&c->frame);
  while (c->kept) {
    CliKept *k = c->kept;
    c->kept = k->next;
    msgpack_unpacked_destroy(&k->msg);
    free(k);
  }
  free(c);
}

void
cli_conn_set_wake_fd(CliConn *c, int fd)
{
  c->wake_fd = fd;
}

void
cli_conn_set_hangup_fd(CliConn *c, int fd)
{
  c->hangup_fd = fd;
}

void
cli_conn_set_notify(CliConn *c, CliNotifyFn fn, void *ctx)
{
  c->notify = fn;
  c->notify_ctx = ctx;
}

/* Writes all of data by deadline. Returns 0 or -1 with err set. */
static int
cli_conn_write(CliConn *c, const char *data, size_t len, int64_t deadline, CliError *err)
{
  char why[200];
  switch (endpoint_write(c->fd, data, len, deadline, why, sizeof why)) {
  case kEndpointOk:
    return 0;
  case kEndpointDeadline:
    return cli_error_set(err, kCliErrDeadline, "%s", why);
  default:
    return cli_error_set(err, kCliErrTransport, "lost the connection to the engine: %s", why);
  }
}

int64_t
cli_conn_send(CliConn *c, const char *method, const CliReq *args, int64_t deadline,
              CliError *err)
{
  uint32_t msgid = c->next_msgid++;
  msgpack_sbuffer sb;
  msgpack_packer pk;
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_array(&pk, 4);
  msgpack_pack_int(&pk, 0);
  msgpack_pack_uint32(&pk, msgid);
  size_t mlen = strlen(method);
  msgpack_pack_str(&pk, mlen);
  msgpack_pack_str_body(&pk, method, mlen);
  if (args == NULL) {
    msgpack_pack_array(&pk, 0);
  } else {
    msgpack_pack_array(&pk, 1);
    msgpack_pack_map(&pk, args->count);
    msgpack_sbuffer_write(&sb, args->body.data, args->body.size);
  }
  int rc;
  if (c->nats) {
    char why[CLI_ERROR_MSG_MAX];
    rc = cli_natsreq_send(c->nats, msgid, sb.data, sb.size, why, sizeof why);
    if (rc != 0)
      cli_error_set(err, kCliErrTransport, "%s", why);
  } else {
    rc = cli_conn_write(c, sb.data, sb.size, deadline, err);
  }
  msgpack_sbuffer_destroy(&sb);
  return rc == 0 ? (int64_t)msgid : -1;
}

/* The text of a str or bin object, for messages. */
static bool
cli_conn_text(const msgpack_object *o, const char **p, size_t *n)
{
  if (o->type == MSGPACK_OBJECT_STR) {
    *p = o->via.str.ptr;
    *n = o->via.str.size;
    return true;
  }
  if (o->type == MSGPACK_OBJECT_BIN) {
    *p = o->via.bin.ptr;
    *n = o->via.bin.size;
    return true;
  }
  return false;
}

/* Whether msgid was given up on; if so it is forgotten (its answer came). */
static bool
cli_conn_abandoned(CliConn *c, uint32_t msgid)
{
  size_t n = c->nabandoned < CLI_CONN_ABANDONED_MAX ? c->nabandoned : CLI_CONN_ABANDONED_MAX;
  for (size_t i = 0; i < n; i++) {
    if (c->abandoned[i] == msgid) {
      c->abandoned[i] = 0; /* msgids start at 1 */
      return true;
    }
  }
  return false;
}

/* Handles one complete message; takes ownership of msg. Returns 0, or -1
 * with err set when it is not msgpack-rpc. */
static int
cli_conn_dispatch(CliConn *c, msgpack_unpacked *msg, CliError *err)
{
  const msgpack_object *o = &msg->data;
  if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size < 3 ||
      o->via.array.ptr[0].type != MSGPACK_OBJECT_POSITIVE_INTEGER) {
    msgpack_unpacked_destroy(msg);
    return cli_error_set(err, kCliErrProtocol, "the engine sent a message that is not msgpack-rpc");
  }
  const msgpack_object *a = o->via.array.ptr;
  uint64_t type = a[0].via.u64;
  if (type == 1 && o->via.array.size == 4 && a[1].type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
      a[1].via.u64 <= UINT32_MAX) {
    if (cli_conn_abandoned(c, (uint32_t)a[1].via.u64)) {
      msgpack_unpacked_destroy(msg);
      return 0;
    }
    CliKept *k = xmalloc(sizeof *k);
    k->msgid = (uint32_t)a[1].via.u64;
    k->msg = *msg; /* the zone moves with it */
    k->next = c->kept;
    c->kept = k;
    return 0;
  }
  if (type == 2 && o->via.array.size == 3) {
    const char *method;
    size_t mlen;
    if (c->notify && cli_conn_text(&a[1], &method, &mlen))
      c->notify(c->notify_ctx, method, mlen, &a[2]);
    msgpack_unpacked_destroy(msg);
    return 0;
  }
  msgpack_unpacked_destroy(msg);
  return cli_error_set(err, kCliErrProtocol, "the engine sent an unexpected message (type %llu)",
                       (unsigned long long)type);
}

/* Handles every complete message already buffered. Returns how many, or -1
 * with err set. */
static int
cli_conn_drain(CliConn *c, CliError *err)
{
  int handled = 0;
  for (;;) {
    const char *data;
    size_t len;
    char why[300];
    FrameResult r = frame_next(&c->frame, &data, &len, why, sizeof why);
    if (r == kFrameNeedMore)
      return handled;
    if (r == kFrameBad)
      return cli_error_set(err, kCliErrProtocol, "the engine sent %s", why);
    msgpack_unpacked msg;
    if (frame_unpack_copy(data, len, &msg) != 0)
      return cli_error_set(err, kCliErrProtocol, "the engine sent bytes that are not msgpack");
    if (cli_conn_dispatch(c, &msg, err) != 0)
      return -1;
    handled++;
  }
}

int
cli_conn_pump(CliConn *c, int64_t deadline, CliError *err)
{
  int handled = cli_conn_drain(c, err);
  while (handled == 0) {
    /* The hangup fd asks for no event: poll reports POLLERR (a pipe whose
     * reader closed), POLLHUP and POLLNVAL anyway, and nothing else, so a
     * terminal or a file there never ends the wait by being ready. */
    struct pollfd p[3];
    nfds_t n_fds = 0;
    p[n_fds++] = (struct pollfd){c->fd, POLLIN, 0};
    nfds_t wake = c->wake_fd >= 0 ? n_fds++ : 0;
    if (wake)
      p[wake] = (struct pollfd){c->wake_fd, POLLIN, 0};
    nfds_t hangup = c->hangup_fd >= 0 ? n_fds++ : 0;
    if (hangup)
      p[hangup] = (struct pollfd){c->hangup_fd, 0, 0};
    int rc = poll(p, n_fds, endpoint_poll_timeout(deadline));
    if (rc < 0 && errno == EINTR)
      continue;
    if (rc < 0)
      return cli_error_set(err, kCliErrTransport, "poll: %s", strerror(errno));
    if (rc == 0)
      return 0;
    if (wake && p[wake].revents != 0)
      return cli_error_set(err, kCliErrInterrupted, "interrupted");
    if (hangup && p[hangup].revents != 0)
      return cli_error_set(err, kCliErrHangup, "the reader of descriptor %d went away",
                           c->hangup_fd);
    if (p[0].revents == 0)
      continue;
    size_t space;
    char *room = frame_reserve(&c->frame, CLI_CONN_READ_CHUNK, &space);
    if (room == NULL) {
      fprintf(stderr, "vigil: out of memory\n");
      abort();
    }
    ssize_t n = read(c->fd, room, space);
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
      continue;
    if (n < 0)
      return cli_error_set(err, kCliErrTransport, "lost the connection to the engine: %s",
                           strerror(errno));
    if (n == 0) {
      char why[400];
      if (c->nats && cli_natsreq_lost(c->nats, why, sizeof why))
        return cli_error_set(err, kCliErrTransport, "%s", why);
      return cli_error_set(err, kCliErrTransport, "the engine closed the connection");
    }
    frame_commit(&c->frame, (size_t)n);
    handled = cli_conn_drain(c, err);
  }
  return handled < 0 ? -1 : 1;
}

int
cli_conn_take(CliConn *c, uint32_t msgid, CliReply *reply, CliError *err)
{
  CliKept **pp = &c->kept;
  while (*pp && (*pp)->msgid != msgid)
    pp = &(*pp)->next;
  CliKept *k = *pp;
  if (k == NULL)
    return 0;
  *pp = k->next;
  reply->msg = k->msg;
  free(k);
  const msgpack_object *a = reply->msg.data.via.array.ptr;
  if (a[2].type != MSGPACK_OBJECT_NIL) {
    /* [code, message]; anything else is still reported, as best we can. */
    int code = -1;
    const char *text = "the engine answered with a malformed error";
    size_t tlen = strlen(text);
    if (a[2].type == MSGPACK_OBJECT_ARRAY && a[2].via.array.size >= 2) {
      const msgpack_object *e = a[2].via.array.ptr;
      if (e[0].type == MSGPACK_OBJECT_POSITIVE_INTEGER && e[0].via.u64 < 1000)
        code = (int)e[0].via.u64;
      cli_conn_text(&e[1], &text, &tlen);
    }
    cli_error_set(err, kCliErrEngine, "%.*s", (int)utf8_cut(text, tlen, 1100), text);
    err->code = code;
    /* The server's own "no responders": the request reached no engine. */
    if (c->nats && cli_natsreq_no_responders(c->nats, msgid))
      err->kind = kCliErrNoEngine;
    msgpack_unpacked_destroy(&reply->msg);
    return -1;
  }
  if (a[3].type == MSGPACK_OBJECT_MAP) {
    reply->result = &a[3];
  } else {
    /* A nil result is an empty map; the protocol promises a map. */
    static const msgpack_object empty = {.type = MSGPACK_OBJECT_MAP};
    reply->result = &empty;
  }
  return 1;
}

void
cli_conn_abandon(CliConn *c, uint32_t msgid)
{
  CliKept **pp = &c->kept;
  while (*pp && (*pp)->msgid != msgid)
    pp = &(*pp)->next;
  if (*pp != NULL) {
    /* Its answer came already: dropped now. */
    CliKept *k = *pp;
    *pp = k->next;
    msgpack_unpacked_destroy(&k->msg);
    free(k);
    return;
  }
  c->abandoned[c->nabandoned++ % CLI_CONN_ABANDONED_MAX] = msgid;
}

int
cli_conn_call(CliConn *c, const char *method, const CliReq *args, int64_t deadline,
              CliReply *reply, CliError *err)
{
  int64_t msgid = cli_conn_send(c, method, args, deadline, err);
  if (msgid < 0)
    return -1;
  for (;;) {
    int rc = cli_conn_take(c, (uint32_t)msgid, reply, err);
    if (rc != 0)
      return rc > 0 ? 0 : -1;
    rc = cli_conn_pump(c, deadline, err);
    if (rc < 0 && (err->kind == kCliErrInterrupted || err->kind == kCliErrHangup)) {
      cli_conn_abandon(c, (uint32_t)msgid);
      return -1;
    }
    if (rc < 0)
      return -1;
    if (rc == 0) {
      cli_conn_abandon(c, (uint32_t)msgid);
      return cli_error_set(err, kCliErrDeadline, "no answer from the engine to %s in time",
                           method);
    }
  }
}
