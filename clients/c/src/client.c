/*
 * The conversation with the engine (the calls of vigil/client.h): requests
 * out, and everything that comes back sorted into answers (by msgid) and
 * queued notifications.
 *
 * Nothing reads unless the host calls in. A blocking call waits in poll()
 * with its deadline and reads whatever arrives; a notification read then is
 * queued for vigil_client_next_notification, an answer to another request
 * is kept with that request until it is taken. Both are bounded: at most
 * VIGIL_CLIENT_PENDING_MAX requests awaiting answers (a request given up at
 * its timeout is forgotten first when room is needed), and the queue drops
 * its oldest, counted, past its limit.
 *
 * A connection that fails (the engine hangs up, sends what is not
 * msgpack-rpc or more than the message limit) stays failed: every later
 * call reports the same error, while what was read before it can still be
 * taken.
 */
#include "connection.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "client_error.h"
#include "link/endpoint.h"
#include "message.h"
#include "notification.h"

/* How much is read from the descriptor at a time. */
#define CLIENT_READ_CHUNK ((size_t)64 << 10)
/* The engine refuses method names longer than this (docs/protocol.md 2.3). */
#define CLIENT_METHOD_MAX 100

/* The limits' names, bounds and places, one table. */
static const struct {
  const char *name;
  size_t min, max;
} client_limits[] = {
  [VIGIL_CLIENT_LIMIT_MESSAGE_BYTES] = {"max_message_bytes", 1024, (size_t)1 << 30},
  [VIGIL_CLIENT_LIMIT_REQUEST_BYTES] = {"max_request_bytes", 64, (size_t)64 << 20},
  [VIGIL_CLIENT_LIMIT_QUEUED_NOTIFICATIONS] = {"max_queued_notifications", 1, 1048576},
};

/* The deadline for a timeout: -1 for none. */
static int64_t
client_deadline(int timeout_ms)
{
  return timeout_ms < 0 ? -1 : endpoint_now_ms() + timeout_ms;
}

vigil_client *
client_new(int fd, pid_t engine_pid, const char *where, vigil_error *err)
{
  vigil_client *c = calloc(1, sizeof *c);
  if (c == NULL) {
    close(fd);
    client_error(err, VIGIL_ERR_CONNECTION, "out of memory for a client");
    return NULL;
  }
  c->fd = fd;
  c->engine_pid = engine_pid;
  snprintf(c->where, sizeof c->where, "%s", where);
  frame_init(&c->frame, CLIENT_DEFAULT_MESSAGE_BYTES);
  c->max_request = CLIENT_DEFAULT_REQUEST_BYTES;
  c->max_queued = CLIENT_DEFAULT_QUEUED;
  c->next_msgid = 1;
  return c;
}

void
client_release(vigil_client *c)
{
  frame_free(&c->frame);
  for (size_t i = 0; i < c->npending; i++)
    message_free(c->pending[i].answer);
  c->npending = 0;
  while (c->head != NULL) {
    QueuedNotification *q = c->head;
    c->head = q->next;
    vigil_notification_free(&q->n);
    free(q);
  }
  c->tail = NULL;
  c->queued = 0;
}

int
client_fail(vigil_client *c, vigil_error *err, int code, const char *fmt, ...)
{
  char text[VIGIL_ERROR_MESSAGE_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  c->failed = true;
  client_error(&c->failure, code, "%s", text);
  return client_error_copy(err, &c->failure);
}

/* --- limits -------------------------------------------------------------- */

int
vigil_client_set_limit(vigil_client *c, vigil_client_limit limit, size_t value, vigil_error *err)
{
  if (c == NULL)
    return client_error(err, VIGIL_ERR_USAGE, "vigil_client_set_limit: the client is NULL");
  if ((unsigned)limit >= sizeof client_limits / sizeof client_limits[0])
    return client_error(err, VIGIL_ERR_USAGE, "vigil_client_set_limit: no limit %d", (int)limit);
  if (value < client_limits[limit].min || value > client_limits[limit].max)
    return client_error(err, VIGIL_ERR_USAGE, "%s must be %zu..%zu, got %zu",
                        client_limits[limit].name, client_limits[limit].min,
                        client_limits[limit].max, value);
  switch (limit) {
  case VIGIL_CLIENT_LIMIT_MESSAGE_BYTES: c->frame.max_message = value; break;
  case VIGIL_CLIENT_LIMIT_REQUEST_BYTES: c->max_request = value; break;
  case VIGIL_CLIENT_LIMIT_QUEUED_NOTIFICATIONS: c->max_queued = value; break;
  }
  return 0;
}

size_t
vigil_client_get_limit(const vigil_client *c, vigil_client_limit limit)
{
  switch (limit) {
  case VIGIL_CLIENT_LIMIT_MESSAGE_BYTES: return c->frame.max_message;
  case VIGIL_CLIENT_LIMIT_REQUEST_BYTES: return c->max_request;
  case VIGIL_CLIENT_LIMIT_QUEUED_NOTIFICATIONS: return c->max_queued;
  }
  return 0;
}

/* --- requests awaiting answers ------------------------------------------ */

static Pending *
client_pending_find(vigil_client *c, uint32_t msgid)
{
  for (size_t i = 0; i < c->npending; i++)
    if (c->pending[i].msgid == msgid)
      return &c->pending[i];
  return NULL;
}

static void
client_pending_remove(vigil_client *c, Pending *p)
{
  message_free(p->answer);
  *p = c->pending[--c->npending];
}

/* Room for one more request: forgets the oldest given-up one when full.
 * false when every slot awaits an answer someone may take. */
static bool
client_pending_room(vigil_client *c)
{
  if (c->npending < VIGIL_CLIENT_PENDING_MAX)
    return true;
  for (size_t i = 0; i < c->npending; i++)
    if (c->pending[i].state == kPendingAbandoned) {
      client_pending_remove(c, &c->pending[i]);
      return true;
    }
  return false;
}

/* --- notifications ------------------------------------------------------- */

/* Queues n (taken over), dropping the oldest past the limit. */
static void
client_enqueue(vigil_client *c, QueuedNotification *q)
{
  while (c->queued >= c->max_queued && c->head != NULL) {
    QueuedNotification *old = c->head;
    c->head = old->next;
    if (c->head == NULL)
      c->tail = NULL;
    c->queued--;
    uint64_t lost = old->n.lost_before + 1;
    if (c->head != NULL)
      c->head->n.lost_before += lost;
    else
      c->lost_carry += lost;
    vigil_notification_free(&old->n);
    free(old);
  }
  q->n.lost_before += c->lost_carry;
  c->lost_carry = 0;
  q->next = NULL;
  if (c->tail != NULL)
    c->tail->next = q;
  else
    c->head = q;
  c->tail = q;
  c->queued++;
}

size_t
vigil_client_queued(const vigil_client *c)
{
  return c ? c->queued : 0;
}

/* --- reading ------------------------------------------------------------- */

/* Sorts one complete message (m, taken over). 0, or -1 when it breaks the
 * protocol (the connection is then failed). */
static int
client_dispatch(vigil_client *c, struct vigil_message *m, vigil_error *err)
{
  const msgpack_object *root = message_root(m);
  int64_t type;
  if (root->type != MSGPACK_OBJECT_ARRAY || root->via.array.size < 3 ||
      !vigil_object_int(&root->via.array.ptr[0], &type)) {
    message_free(m);
    return client_fail(c, err, VIGIL_ERR_PROTOCOL,
                       "%s sent a message that is not a msgpack-rpc array", c->where);
  }
  const msgpack_object *a = root->via.array.ptr;
  if (type == 1 && root->via.array.size == 4) {
    int64_t msgid;
    Pending *p = vigil_object_int(&a[1], &msgid) && msgid >= 0 && msgid <= UINT32_MAX
                     ? client_pending_find(c, (uint32_t)msgid)
                     : NULL;
    if (p == NULL || p->state == kPendingAnswered) {
      message_free(m);               /* an answer to nothing we asked: ignored */
    } else if (p->state == kPendingAbandoned) {
      message_free(m);
      client_pending_remove(c, p);
    } else {
      p->answer = m;
      p->state = kPendingAnswered;
    }
    return 0;
  }
  if (type == 2 && root->via.array.size == 3) {
    const char *method = vigil_object_str(&a[1]);
    bool notification = method && strcmp(method, "vigil.notification") == 0;
    bool engine_error = method && strcmp(method, "vigil.error") == 0;
    if (!notification && !engine_error) {
      message_free(m);               /* a notification of a later engine: ignored */
      return 0;
    }
    QueuedNotification *q = calloc(1, sizeof *q);
    char why[200];
    if (q == NULL) {
      message_free(m);
      return client_fail(c, err, VIGIL_ERR_CONNECTION, "out of memory for a notification");
    }
    if (notification_read(&q->n, m, &a[2], engine_error, why, sizeof why) != 0) {
      free(q);
      message_free(m);
      return client_fail(c, err, VIGIL_ERR_PROTOCOL, "%s sent %s", c->where, why);
    }
    client_enqueue(c, q);
    return 0;
  }
  message_free(m);                   /* vigil never sends requests: ignored */
  return 0;
}

/* Reads everything the descriptor has now, without blocking. 0, or -1
 * when the connection has failed (now or before). */
static int
client_read_available(vigil_client *c, vigil_error *err)
{
  if (c->failed)
    return client_error_copy(err, &c->failure);
  for (;;) {
    size_t space;
    char *room = frame_reserve(&c->frame, CLIENT_READ_CHUNK, &space);
    if (room == NULL)
      return client_fail(c, err, VIGIL_ERR_CONNECTION, "out of memory reading from %s",
                         c->where);
    ssize_t n = read(c->fd, room, space);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return 0;
    if (n < 0)
      return client_fail(c, err, VIGIL_ERR_CONNECTION, "reading from %s: %s", c->where,
                         strerror(errno));
    if (n == 0)
      return client_fail(c, err, VIGIL_ERR_CONNECTION, "%s closed the connection", c->where);
    frame_commit(&c->frame, (size_t)n);
    for (;;) {
      const char *msg;
      size_t len;
      char why[300];
      FrameResult r = frame_next(&c->frame, &msg, &len, why, sizeof why);
      if (r == kFrameNeedMore)
        break;
      if (r == kFrameBad)
        return client_fail(c, err, VIGIL_ERR_PROTOCOL, "%s sent %s; the connection is given up",
                           c->where, why);
      struct vigil_message *m = message_new(msg, len, why, sizeof why);
      if (m == NULL)
        return client_fail(c, err, VIGIL_ERR_PROTOCOL, "%s sent %s", c->where, why);
      if (client_dispatch(c, m, err) != 0)
        return -1;
    }
  }
}

/* Waits until the descriptor is readable or the deadline passes, and reads.
 * 1 when it read, 0 at the deadline, -1 when the connection failed. */
static int
client_wait(vigil_client *c, int64_t deadline, vigil_error *err)
{
  if (c->failed)
    return client_error_copy(err, &c->failure);
  struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
  int rc;
  do
    rc = poll(&pfd, 1, endpoint_poll_timeout(deadline));
  while (rc < 0 && errno == EINTR);
  if (rc < 0)
    return client_fail(c, err, VIGIL_ERR_CONNECTION, "poll: %s", strerror(errno));
  if (rc == 0)
    return 0;
  return client_read_available(c, err) == 0 ? 1 : -1;
}

int
vigil_client_read(vigil_client *c, vigil_error *err)
{
  if (c == NULL)
    return client_error(err, VIGIL_ERR_USAGE, "vigil_client_read: the client is NULL");
  return client_read_available(c, err);
}

/* --- sending ------------------------------------------------------------- */

/* Writes all of data, waiting in poll() while the socket is full. */
static int
client_write(vigil_client *c, const char *data, size_t len, vigil_error *err)
{
  char why[200];
  if (endpoint_write(c->fd, data, len, -1, why, sizeof why) != kEndpointOk)
    return client_fail(c, err, VIGIL_ERR_CONNECTION, "writing to %s: %s", c->where, why);
  return 0;
}

/* The methods that start a process: without a cwd they are sent the
 * host's working directory, so a command runs where its caller is, as from
 * a shell ("." asks for the engine's own). */
static bool
client_starts_process(const char *method)
{
  return strcmp(method, "monitor_start") == 0 || strcmp(method, "process_run") == 0;
}

/* Packs and sends [0, msgid, method, params] (request) or
 * [2, method, params] (notification). */
static int
client_send(vigil_client *c, bool request, uint32_t msgid, const char *method,
            const vigil_args *args, vigil_error *err)
{
  if (method == NULL)
    return client_error(err, VIGIL_ERR_USAGE, "the method is NULL");
  size_t mlen = strlen(method);
  if (mlen == 0 || mlen > CLIENT_METHOD_MAX)
    return client_error(err, VIGIL_ERR_USAGE, "method must be 1..%d bytes, got %zu",
                        CLIENT_METHOD_MAX, mlen);
  if (args_check(args, method, err) != 0)
    return -1;
  if (c->failed)
    return client_error_copy(err, &c->failure);
  msgpack_sbuffer sb;
  msgpack_packer pk;
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_array(&pk, request ? 4 : 3);
  msgpack_pack_int(&pk, request ? 0 : 2);
  if (request)
    msgpack_pack_uint32(&pk, msgid);
  msgpack_pack_str_with_body(&pk, method, mlen);
  /* A working directory that cannot be read (removed, or longer than
   * PATH_MAX) leaves the engine's. */
  char here[PATH_MAX];
  const char *cwd = client_starts_process(method) && getcwd(here, sizeof here) ? here : NULL;
  args_pack_params(args, &pk, "cwd", cwd);
  int rc = 0;
  if (sb.size > c->max_request)
    rc = client_error(err, VIGIL_ERR_USAGE,
                      "%s: a request of %zu bytes, over max_request_bytes (%zu); nothing was "
                      "sent", method, sb.size, c->max_request);
  else
    rc = client_write(c, sb.data, sb.size, err);
  msgpack_sbuffer_destroy(&sb);
  return rc;
}

int
vigil_client_request(vigil_client *c, const char *method, const vigil_args *args,
                     uint32_t *msgid, vigil_error *err)
{
  if (c == NULL || msgid == NULL)
    return client_error(err, VIGIL_ERR_USAGE, "vigil_client_request: %s is NULL",
                        c == NULL ? "the client" : "msgid");
  if (!client_pending_room(c))
    return client_error(err, VIGIL_ERR_USAGE,
                        "%s: %d requests are awaiting their answer (VIGIL_CLIENT_PENDING_MAX); "
                        "take some answers first", method ? method : "(null)",
                        VIGIL_CLIENT_PENDING_MAX);
  /* The next msgid that is not awaiting an answer (0 is skipped: some
   * peers read it as "none"). */
  uint32_t id = c->next_msgid;
  while (id == 0 || client_pending_find(c, id) != NULL)
    id++;
  if (client_send(c, true, id, method, args, err) != 0)
    return -1;
  c->next_msgid = id + 1;
  Pending *p = &c->pending[c->npending++];
  *p = (Pending){.msgid = id, .state = kPendingWaiting};
  *msgid = id;
  return 0;
}

int
vigil_client_notify(vigil_client *c, const char *method, const vigil_args *args,
                    vigil_error *err)
{
  if (c == NULL)
    return client_error(err, VIGIL_ERR_USAGE, "vigil_client_notify: the client is NULL");
  return client_send(c, false, 0, method, args, err);
}

/* --- answers ------------------------------------------------------------- */

/* Takes p's answer: 1 with *result, or -1 with the engine's error. */
static int
client_take_answer(vigil_client *c, Pending *p, vigil_result *result, vigil_error *err)
{
  struct vigil_message *m = p->answer;
  p->answer = NULL;
  client_pending_remove(c, p);
  const msgpack_object *a = message_root(m)->via.array.ptr;
  if (a[2].type != MSGPACK_OBJECT_NIL) {
    int64_t code;
    const char *text = NULL;
    if (a[2].type != MSGPACK_OBJECT_ARRAY || a[2].via.array.size != 2 ||
        !vigil_object_int(&a[2].via.array.ptr[0], &code) ||
        (text = vigil_object_str(&a[2].via.array.ptr[1])) == NULL)
      client_error(err, VIGIL_ERR_PROTOCOL, "%s answered with an error that is not "
                   "[code, message]", c->where);
    else if (err != NULL) {
      err->code = (int)code;
      snprintf(err->message, sizeof err->message, "%s", text); /* it starts with its name */
    }
    message_free(m);
    return -1;
  }
  if (result != NULL) {
    result->message_ = m;
    result->map = &a[3];
  } else {
    message_free(m);
  }
  return 1;
}

int
vigil_client_response(vigil_client *c, uint32_t msgid, int timeout_ms, vigil_result *result,
                      vigil_error *err)
{
  if (result != NULL)
    *result = (vigil_result){0};
  if (c == NULL)
    return client_error(err, VIGIL_ERR_USAGE, "vigil_client_response: the client is NULL");
  Pending *p = client_pending_find(c, msgid);
  if (p == NULL || p->state == kPendingAbandoned)
    return client_error(err, VIGIL_ERR_USAGE, "no request with msgid %u is awaiting its answer",
                        (unsigned)msgid);
  int64_t deadline = client_deadline(timeout_ms);
  client_read_available(c, NULL); /* what is there now; a failure is seen below */
  for (;;) {
    /* Found again each time: reading may move entries in the table. */
    p = client_pending_find(c, msgid);
    if (p->state == kPendingAnswered)
      return client_take_answer(c, p, result, err);
    if (c->failed) {
      client_pending_remove(c, p);
      return client_error_copy(err, &c->failure);
    }
    if (deadline >= 0 && endpoint_now_ms() >= deadline)
      return 0;
    client_wait(c, deadline, NULL);
  }
}

int
vigil_client_call(vigil_client *c, const char *method, const vigil_args *args, int timeout_ms,
                  vigil_result *result, vigil_error *err)
{
  if (result != NULL)
    *result = (vigil_result){0};
  uint32_t msgid;
  if (vigil_client_request(c, method, args, &msgid, err) != 0)
    return -1;
  int rc = vigil_client_response(c, msgid, timeout_ms, result, err);
  if (rc == 1)
    return 0;
  if (rc == 0) {
    client_pending_find(c, msgid)->state = kPendingAbandoned;
    return client_error(err, VIGIL_ERR_TIMEOUT,
                        "no answer to %s within %d ms (it will be discarded when it comes)",
                        method, timeout_ms);
  }
  return -1;
}

/* --- taking notifications ------------------------------------------------ */

/* Moves the oldest queued notification into *n. */
static void
client_dequeue(vigil_client *c, vigil_notification *n)
{
  QueuedNotification *q = c->head;
  c->head = q->next;
  if (c->head == NULL)
    c->tail = NULL;
  c->queued--;
  *n = q->n;
  free(q);
}

int
vigil_client_next_notification(vigil_client *c, int timeout_ms, vigil_notification *n,
                               vigil_error *err)
{
  if (n != NULL)
    memset(n, 0, sizeof *n);
  if (c == NULL || n == NULL)
    return client_error(err, VIGIL_ERR_USAGE, "vigil_client_next_notification: %s is NULL",
                        c == NULL ? "the client" : "n");
  int64_t deadline = client_deadline(timeout_ms);
  if (c->head == NULL && !c->failed)
    client_read_available(c, NULL);
  for (;;) {
    if (c->head != NULL) {
      client_dequeue(c, n);
      return 1;
    }
    if (c->failed)
      return client_error_copy(err, &c->failure);
    if (deadline >= 0 && endpoint_now_ms() >= deadline)
      return 0;
    client_wait(c, deadline, NULL);
  }
}
