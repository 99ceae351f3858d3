/*
 * msgpack-rpc framing (see decoder.h). The decoder keeps the received bytes
 * in one buffer and walks the headers of the message at its front with an
 * explicit stack of element counts, resuming where it stopped when more
 * bytes arrive, so a message that trickles in byte by byte is walked once.
 * The walk allocates nothing and trusts no declared size: every header is
 * checked against what the size limit still allows before it is believed.
 * Only the exact slice of a complete message is handed to msgpack-c, whose
 * objects point into that buffer (strings and bins are not copied), so a
 * message stays valid until the next call of feed or next.
 *
 * Memory: the buffer holds at most the unfinished message (never more than
 * max_message bytes) plus the chunk just fed. Consumed bytes are skipped
 * with an offset and moved down only when new bytes are appended; a buffer
 * grown past RPC_DECODER_KEEP is freed once it is empty, so one large
 * message does not pin its memory to an idle connection.
 *
 * Skipping: once the walk knows the message at the front cannot fit in
 * max_message, it goes on walking it (headers only, to find its end and to
 * still refuse bytes that are not msgpack or nesting past the depth) but
 * drops its bytes from the buffer as soon as they are walked, keeping only
 * a header that has not fully arrived and a copy of the message's first
 * RPC_DECODER_HEAD bytes, where its type and msgid are. `dropped` counts
 * the bytes of the message already gone, so walk.pos stays an offset in
 * the message while the buffer holds only its tail.
 *
 * Decisions the header leaves open:
 * - The depth counts containers: the message array is level 1, params level
 *   2, the argument map level 3. An empty container counts like any other.
 * - The bad-shape checks run in message order (type, length, msgid, method,
 *   params, keys), and the first failure is the one reported. The msgid of a
 *   request is recovered whenever element 1 is a uint32, whatever else is
 *   wrong, so the peer can match the error to its call.
 * - Only the keys of the argument map itself are checked; values (and maps
 *   inside them) are the method's to check.
 * - A response from the peer is checked for its length only ([1, msgid,
 *   error, result]); its msgid is reported when it is a uint32.
 * - Fatal errors carry kErrInvalidParams, so the message reads
 *   "invalid_params: not msgpack: ...".
 * - A skipped message is reported once it has ended, not when it is found
 *   too big: its exact size is known then, and requests are still answered
 *   in the order they started. A peer that never finishes it gets no
 *   answer, like any message it never finishes.
 */
#include "rpc/decoder.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "link/frame.h"
#include "base/memory.h"
#include "rpc/typename.h"
#include "base/strbuf.h"
#include "base/textfmt.h"

/* The smallest buffer worth allocating; it doubles from here. */
#define RPC_DECODER_MIN 4096
/* An empty buffer larger than this is freed rather than kept. */
#define RPC_DECODER_KEEP 65536
/* How much of a wrong value an error message quotes. */
#define RPC_DECODER_QUOTE_MAX 60
/* The first bytes of a skipped message kept to find its type and msgid:
 * an array32 header (5), the type (1) and a uint64 msgid (9) fit. */
#define RPC_DECODER_HEAD 16

/* Where the header walk of the message at the front of the buffer stands.
 * Offsets are relative to the message's first byte. */
typedef struct {
  uint64_t pos;                        /* the next header, or the end of a skipped payload */
  uint64_t owed;                       /* elements declared but not yet begun (1 byte each at least) */
  unsigned depth;                      /* containers open */
  uint64_t remaining[RPC_MAX_DEPTH];   /* elements still to begin, per open container */
  bool complete;                       /* the message ends at pos */
  bool skipping;                       /* over max_message: walked, not kept */
  uint64_t dropped;                    /* bytes of the message gone from the buffer */
} RpcWalk;

struct RpcDecoder {
  size_t max_message;
  char *buf;
  size_t start;          /* first unconsumed byte */
  size_t end;            /* one past the last received byte */
  size_t cap;
  RpcWalk walk;
  msgpack_unpacked unpacked; /* the last message handed out */
  unsigned char head[RPC_DECODER_HEAD]; /* a skipped message's first bytes */
  bool fatal;
  VigilError fatal_err;  /* repeated by every call after a fatal result */
};

typedef enum { kWalkNeedMore, kWalkComplete, kWalkFatal } RpcWalkResult;

RpcDecoder *
rpc_decoder_new(size_t max_message)
{
  RpcDecoder *d = xcalloc(1, sizeof *d);
  d->max_message = max_message;
  msgpack_unpacked_init(&d->unpacked);
  error_clear(&d->fatal_err);
  return d;
}

void
rpc_decoder_free(RpcDecoder *d)
{
  if (d == NULL)
    return;
  msgpack_unpacked_destroy(&d->unpacked);
  free(d->buf);
  free(d);
}

size_t
rpc_decoder_buffered(const RpcDecoder *d)
{
  return d->end - d->start;
}

/* Frees the buffer once everything in it has been consumed and it grew past
 * what an idle connection should keep; otherwise just rewinds it. Only safe
 * when no message handed out still points into it. */
static void
rpc_decoder_release(RpcDecoder *d)
{
  if (d->start != d->end)
    return;
  d->start = d->end = 0;
  if (d->cap > RPC_DECODER_KEEP) {
    free(d->buf);
    d->buf = NULL;
    d->cap = 0;
  }
}

void
rpc_decoder_feed(RpcDecoder *d, const char *data, size_t len)
{
  if (d->fatal || len == 0)
    return;
  /* The last message handed out dies here (the contract says so), so the
   * buffer may move. */
  msgpack_unpacked_destroy(&d->unpacked);
  rpc_decoder_release(d);
  if (d->start > 0) {
    memmove(d->buf, d->buf + d->start, d->end - d->start);
    d->end -= d->start;
    d->start = 0;
  }
  size_t need = d->end + len;
  if (need > d->cap) {
    /* Doubling, but never past one message plus this chunk unless the
     * caller fed more than that without draining. */
    size_t cap = d->cap ? d->cap * 2 : RPC_DECODER_MIN;
    size_t bound = d->max_message + len;
    if (cap > bound)
      cap = bound;
    if (cap < need)
      cap = need;
    d->buf = xrealloc(d->buf, cap);
    d->cap = cap;
  }
  memcpy(d->buf + d->end, data, len);
  d->end += len;
}

/* Marks the decoder dead with the reason; every later call repeats it. */
static RpcDecodeResult
rpc_decoder_die(RpcDecoder *d, VigilError *err)
{
  d->fatal = true;
  msgpack_unpacked_destroy(&d->unpacked);
  free(d->buf);
  d->buf = NULL;
  d->cap = d->start = d->end = 0;
  if (err != NULL && !err->set)
    *err = d->fatal_err;
  return kDecodeFatal;
}

/* Continues the header walk of the message at the front of the buffer.
 * On kWalkFatal d->fatal_err says why; on kWalkComplete the message is
 * walk.pos bytes long and all of them are buffered. */
static RpcWalkResult
rpc_decoder_walk(RpcDecoder *d)
{
  RpcWalk *w = &d->walk;
  if (d->buf == NULL)
    return kWalkNeedMore; /* nothing received yet (or since the buffer was freed) */
  /* Byte i of the message (dropped <= i < avail) is p[i - dropped]. */
  const unsigned char *p = (const unsigned char *)d->buf + d->start;
  uint64_t avail = w->dropped + (d->end - d->start);
  uint64_t max = d->max_message;
  while (!w->complete) {
    if (w->pos >= avail)
      return kWalkNeedMore;
    unsigned char b = p[w->pos - w->dropped];
    /* The one table of msgpack's headers, shared with the C clients'
     * framer (clients/c/link/frame.h). */
    FrameHeader h = frame_header_kind(b);
    if (h.reserved) {
      error_set(&d->fatal_err, kErrInvalidParams,
                "not msgpack: reserved byte 0x%02x at offset %" PRIu64 " of the message", b,
                w->pos);
      return kWalkFatal;
    }
    /* A header that cannot fit is known before its bytes arrive. */
    if (w->pos + h.header + w->owed - (w->depth > 0 ? 1 : 0) > max)
      w->skipping = true;
    if (w->pos + h.header > avail)
      return kWalkNeedMore;
    if (h.size_len > 0) {
      uint32_t n = (uint32_t)frame_be(p + (w->pos - w->dropped) + 1, h.size_len);
      if (!h.container)
        h.payload += n; /* an ext's type byte is in payload already */
      else if (b == 0xde || b == 0xdf)
        h.elements = 2ull * n;
      else
        h.elements = n;
    }
    if (h.container && w->depth == RPC_MAX_DEPTH) {
      error_set(&d->fatal_err, kErrInvalidParams,
                "message nested deeper than %d levels", RPC_MAX_DEPTH);
      return kWalkFatal;
    }
    /* The header is sound: this element has begun. */
    if (w->depth > 0) {
      w->remaining[w->depth - 1]--;
      w->owed--;
    }
    w->pos += h.header + h.payload;
    if (h.container) {
      w->remaining[w->depth++] = h.elements;
      w->owed += h.elements;
    }
    if (w->pos + w->owed > max)
      w->skipping = true;
    while (w->depth > 0 && w->remaining[w->depth - 1] == 0)
      w->depth--;
    if (w->depth == 0)
      w->complete = true;
  }
  return w->pos <= avail ? kWalkComplete : kWalkNeedMore;
}

/* Drops from the buffer the bytes of the message being skipped that the
 * walk has passed (all of them up to walk.pos, or up to what has arrived),
 * copying those among its first RPC_DECODER_HEAD bytes to d->head first. */
static void
rpc_decoder_drop_skipped(RpcDecoder *d)
{
  RpcWalk *w = &d->walk;
  uint64_t avail = w->dropped + (d->end - d->start);
  uint64_t upto = w->pos < avail ? w->pos : avail;
  if (upto <= w->dropped)
    return;
  for (uint64_t i = w->dropped; i < upto && i < RPC_DECODER_HEAD; i++)
    d->head[i] = (unsigned char)d->buf[d->start + (i - w->dropped)];
  d->start += (size_t)(upto - w->dropped);
  w->dropped = upto;
}

/* Reads a msgpack unsigned integer at p (n bytes there) into *v. Returns its
 * length, or 0 when it is not one or not all there. */
static size_t
rpc_decoder_peek_uint(const unsigned char *p, size_t n, uint64_t *v)
{
  if (n == 0)
    return 0;
  if (p[0] <= 0x7f) {
    *v = p[0];
    return 1;
  }
  if (p[0] < 0xcc || p[0] > 0xcf)
    return 0;
  size_t len = (size_t)1 << (p[0] - 0xcc);
  if (n < 1 + len)
    return 0;
  *v = 0;
  for (size_t i = 0; i < len; i++)
    *v = (*v << 8) | p[1 + i];
  return 1 + len;
}

/* Fills msg's type and msgid for a skipped message from its first bytes
 * (n of them in d->head): an array whose element 0 is 0, 1 or 2, and for a
 * request or response a uint32 element 1. Anything else counts as a
 * notification without a msgid (answered, if at all, by vigil.error). */
static void
rpc_decoder_peek_head(const RpcDecoder *d, size_t n, RpcMessage *msg)
{
  const unsigned char *h = d->head;
  size_t at;
  uint64_t count, type, id;
  msg->type = kRpcNotification;
  if (n == 0)
    return;
  if (h[0] >= 0x90 && h[0] <= 0x9f) {
    count = h[0] & 0x0fu;
    at = 1;
  } else if ((h[0] == 0xdc && n >= 3) || (h[0] == 0xdd && n >= 5)) {
    at = h[0] == 0xdc ? 3 : 5;
    count = (uint32_t)frame_be(h + 1, (unsigned)(at - 1));
  } else {
    return;
  }
  size_t len = count > 0 ? rpc_decoder_peek_uint(h + at, n - at, &type) : 0;
  if (len == 0 || type > 2)
    return;
  msg->type = (RpcType)type;
  at += len;
  if (type != kRpcNotification && count > 1 && rpc_decoder_peek_uint(h + at, n - at, &id) > 0 &&
      id <= UINT32_MAX) {
    msg->has_msgid = true;
    msg->msgid = (uint32_t)id;
  }
}

/* Appends a short rendering of o ([1, 2], {"a": 1}, "text") to sb, giving
 * up with "..." once sb holds RPC_DECODER_QUOTE_MAX bytes, so a hostile value
 * cannot make a long error. Control and non-ASCII bytes are escaped. */
static void
rpc_quote(StrBuf *sb, const msgpack_object *o)
{
  if (sb->len >= RPC_DECODER_QUOTE_MAX) {
    strbuf_puts(sb, "...");
    return;
  }
  switch (o->type) {
  case MSGPACK_OBJECT_NIL:
    strbuf_puts(sb, "nil");
    break;
  case MSGPACK_OBJECT_BOOLEAN:
    strbuf_puts(sb, o->via.boolean ? "true" : "false");
    break;
  case MSGPACK_OBJECT_POSITIVE_INTEGER:
    strbuf_printf(sb, "%" PRIu64, o->via.u64);
    break;
  case MSGPACK_OBJECT_NEGATIVE_INTEGER:
    strbuf_printf(sb, "%" PRId64, o->via.i64);
    break;
  case MSGPACK_OBJECT_FLOAT32:
  case MSGPACK_OBJECT_FLOAT64:
    textfmt_number(sb, o->via.f64);
    break;
  case MSGPACK_OBJECT_STR:
  case MSGPACK_OBJECT_BIN: {
    const char *s = o->type == MSGPACK_OBJECT_STR ? o->via.str.ptr : o->via.bin.ptr;
    uint32_t n = o->type == MSGPACK_OBJECT_STR ? o->via.str.size : o->via.bin.size;
    strbuf_putc(sb, '"');
    for (uint32_t i = 0; i < n; i++) {
      if (sb->len >= RPC_DECODER_QUOTE_MAX) {
        strbuf_puts(sb, "...");
        break;
      }
      unsigned char c = (unsigned char)s[i];
      if (c == '"' || c == '\\')
        strbuf_printf(sb, "\\%c", c);
      else if (c < 0x20 || c >= 0x7f)
        strbuf_printf(sb, "\\x%02x", c);
      else
        strbuf_putc(sb, (char)c);
    }
    strbuf_putc(sb, '"');
    break;
  }
  case MSGPACK_OBJECT_ARRAY:
    strbuf_putc(sb, '[');
    for (uint32_t i = 0; i < o->via.array.size; i++) {
      if (i > 0)
        strbuf_puts(sb, ", ");
      if (sb->len >= RPC_DECODER_QUOTE_MAX) {
        strbuf_puts(sb, "...");
        break;
      }
      rpc_quote(sb, &o->via.array.ptr[i]);
    }
    strbuf_putc(sb, ']');
    break;
  case MSGPACK_OBJECT_MAP:
    strbuf_putc(sb, '{');
    for (uint32_t i = 0; i < o->via.map.size; i++) {
      if (i > 0)
        strbuf_puts(sb, ", ");
      if (sb->len >= RPC_DECODER_QUOTE_MAX) {
        strbuf_puts(sb, "...");
        break;
      }
      rpc_quote(sb, &o->via.map.ptr[i].key);
      strbuf_puts(sb, ": ");
      rpc_quote(sb, &o->via.map.ptr[i].val);
    }
    strbuf_putc(sb, '}');
    break;
  case MSGPACK_OBJECT_EXT:
    strbuf_printf(sb, "ext(%d, %" PRIu32 " bytes)", o->via.ext.type, o->via.ext.size);
    break;
  }
}

/* Sets err to "invalid_params: <what>: <expected>, got <o quoted>". */
static RpcDecodeResult
rpc_bad_value(VigilError *err, const char *what, const char *expected, const msgpack_object *o)
{
  StrBuf sb = STRBUF_INIT;
  rpc_quote(&sb, o);
  error_set(err, kErrInvalidParams, "%s: %s, got %s", what, expected, strbuf_cstr(&sb));
  strbuf_free(&sb);
  return kDecodeBadShape;
}

/* The length of an array, as a message says "got an array of 5". */
static RpcDecodeResult
rpc_bad_length(VigilError *err, const char *expected, uint32_t size)
{
  error_set(err, kErrInvalidParams, "message: %s, got an array of %" PRIu32, expected, size);
  return kDecodeBadShape;
}

/* Whether o is an unsigned 32-bit integer; stores it in *out. */
static bool
rpc_uint32(const msgpack_object *o, uint32_t *out)
{
  if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER || o->via.u64 > UINT32_MAX)
    return false;
  *out = (uint32_t)o->via.u64;
  return true;
}

/* Checks the method (element `at` of the message) and params (the next
 * one) of a request or notification and fills msg. */
static RpcDecodeResult
rpc_check_call(const msgpack_object *elems, uint32_t at, RpcMessage *msg, VigilError *err)
{
  const msgpack_object *method = &elems[at];
  if (method->type == MSGPACK_OBJECT_STR) {
    msg->method = method->via.str.ptr;
    msg->method_len = method->via.str.size;
  } else if (method->type == MSGPACK_OBJECT_BIN) {
    msg->method = method->via.bin.ptr;
    msg->method_len = method->via.bin.size;
  } else {
    error_set(err, kErrInvalidParams, "method: expected a string, got %s", rpc_type_name(method));
    return kDecodeBadShape;
  }
  if (msg->method_len > RPC_METHOD_MAX) {
    error_set(err, kErrInvalidParams, "method: at most %d bytes, got %zu", RPC_METHOD_MAX,
              msg->method_len);
    msg->method = NULL;
    msg->method_len = 0;
    return kDecodeBadShape;
  }
  const msgpack_object *params = &elems[at + 1];
  if (params->type != MSGPACK_OBJECT_ARRAY || params->via.array.size > 1 ||
      (params->via.array.size == 1 && params->via.array.ptr[0].type != MSGPACK_OBJECT_MAP))
    return rpc_bad_value(err, "params", "expected [] or [map]", params);
  if (params->via.array.size == 1) {
    const msgpack_object *map = &params->via.array.ptr[0];
    for (uint32_t i = 0; i < map->via.map.size; i++) {
      const msgpack_object *key = &map->via.map.ptr[i].key;
      if (key->type != MSGPACK_OBJECT_STR) {
        error_set(err, kErrInvalidParams, "params: every key must be a string, key %" PRIu32
                  " is %s", i, rpc_type_name_a(key));
        return kDecodeBadShape;
      }
    }
    msg->args = map;
  }
  return kDecodeMessage;
}

/* Checks the shape of an unpacked message and fills msg (see decoder.h). */
static RpcDecodeResult
rpc_check_message(const msgpack_object *o, RpcMessage *msg, VigilError *err)
{
  static const char expected[] = "expected an array of 4 (request) or 3 (notification)";
  msg->type = kRpcNotification;
  if (o->type != MSGPACK_OBJECT_ARRAY) {
    error_set(err, kErrInvalidParams, "message: %s, got %s", expected, rpc_type_name(o));
    return kDecodeBadShape;
  }
  uint32_t size = o->via.array.size;
  const msgpack_object *e = o->via.array.ptr;
  if (size == 0) {
    error_set(err, kErrInvalidParams, "message: %s, got an empty array", expected);
    return kDecodeBadShape;
  }
  if (e[0].type != MSGPACK_OBJECT_POSITIVE_INTEGER || e[0].via.u64 > 2)
    return rpc_bad_value(err, "message",
                         "element 0 must be 0 (request), 1 (response) or 2 (notification)",
                         &e[0]);
  switch (e[0].via.u64) {
  case 0:
    msg->type = kRpcRequest;
    if (size >= 2)
      msg->has_msgid = rpc_uint32(&e[1], &msg->msgid);
    if (size != 4)
      return rpc_bad_length(err, "a request is [0, msgid, method, params]", size);
    if (!msg->has_msgid)
      return rpc_bad_value(err, "msgid", "expected an unsigned 32-bit integer", &e[1]);
    return rpc_check_call(e, 2, msg, err);
  case 1:
    msg->type = kRpcResponse;
    if (size >= 2)
      msg->has_msgid = rpc_uint32(&e[1], &msg->msgid);
    if (size != 4)
      return rpc_bad_length(err, "a response is [1, msgid, error, result]", size);
    return kDecodeMessage;
  default:
    if (size != 3)
      return rpc_bad_length(err, "a notification is [2, method, params]", size);
    return rpc_check_call(e, 1, msg, err);
  }
}

RpcDecodeResult
rpc_decoder_next(RpcDecoder *d, RpcMessage *msg, VigilError *err)
{
  memset(msg, 0, sizeof *msg);
  if (d->fatal) {
    if (err != NULL && !err->set)
      *err = d->fatal_err;
    return kDecodeFatal;
  }
  /* The previous message (and its zone) is no longer needed. */
  msgpack_unpacked_destroy(&d->unpacked);
  rpc_decoder_release(d);
  switch (rpc_decoder_walk(d)) {
  case kWalkNeedMore:
    if (d->walk.skipping)
      rpc_decoder_drop_skipped(d);
    return kDecodeNeedMore;
  case kWalkFatal:
    return rpc_decoder_die(d, err);
  case kWalkComplete:
    break;
  }
  if (d->walk.skipping) {
    rpc_decoder_drop_skipped(d);
    uint64_t size = d->walk.pos;
    rpc_decoder_peek_head(d, size < RPC_DECODER_HEAD ? (size_t)size : RPC_DECODER_HEAD, msg);
    memset(&d->walk, 0, sizeof d->walk);
    error_set(err, kErrLimitExceeded,
              "message: %" PRIu64 " bytes, over rpc.max_message_bytes (%zu); it was skipped "
              "unread",
              size, d->max_message);
    return kDecodeTooBig;
  }
  size_t len = (size_t)d->walk.pos;
  const char *data = d->buf + d->start;
  d->start += len;
  memset(&d->walk, 0, sizeof d->walk);
  size_t off = 0;
  msgpack_unpack_return ret = msgpack_unpack_next(&d->unpacked, data, len, &off);
  if (ret != MSGPACK_UNPACK_SUCCESS || off != len) {
    /* The walk accepted it, so this is msgpack-c disagreeing (or out of
     * memory); either way the stream cannot be trusted past here. */
    error_set(&d->fatal_err, kErrInvalidParams, "not msgpack: msgpack-c refused the message (%d)",
              (int)ret);
    return rpc_decoder_die(d, err);
  }
  return rpc_check_message(&d->unpacked.data, msg, err);
}
