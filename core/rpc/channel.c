/*
 * One msgpack-rpc connection (see channel.h). Reads land in one fixed block
 * per channel and go straight to the decoder; each decoded message is
 * handled before the next is decoded, so requests start in order. Writes
 * are packed into one buffer per message and offered to the kernel at once
 * (uv_try_write); whatever it does not take is queued with uv_write, in
 * order, and counted in pending_output, which is what the slow-peer limit
 * bounds.
 *
 * Closing is one path whatever the cause: mark the channel closing (every
 * send becomes a no-op), stop reading, uv_close the handles. on_close runs
 * from the last close callback, just before the channel is freed. That
 * makes closing safe from anywhere, inside on_call or a write that failed
 * in the middle of a respond: the channel and everything the caller holds
 * stay valid until control is back in the loop, and on_close never runs
 * inside a call the user made into the channel. libuv cancels pending
 * writes (their callbacks run with UV_ECANCELED) before the close callback.
 *
 * Decisions the header leaves open:
 * - The handles passed to rpc_channel_open must come from xmalloc (or
 *   malloc): the channel frees them after closing them.
 * - A respond with no result (NULL or 0 bytes) sends an empty map, and a
 *   notify with no params an empty array, so the wire is always well formed.
 * - A peer going away (EOF, ECONNRESET, EPIPE) is logged at debug level;
 *   bad bytes and a slow peer are warnings that name the peer.
 */
#include "rpc/channel.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "memory.h"
#include "rpc/decoder.h"
#include "rpc/pack.h"
#include "strbuf.h"

/* Connections closed because their peer fell more than rpc.max_output_bytes
 * behind: the one thing the output bound throws away, counted for api_info. */
static uint64_t rpc_channel_slow_closed_count;

/* The read block of a channel. */
#define RPC_CHANNEL_READ_BLOCK 65536

struct RpcChannel {
  uv_loop_t *loop;
  uv_stream_t *in;
  uv_stream_t *out;          /* == in for a socket */
  RpcLimits limits;
  RpcHandlers handlers;
  void *data;
  void *user;
  char *peer;
  RpcDecoder *decoder;
  char *read_block;          /* RPC_CHANNEL_READ_BLOCK bytes */
  size_t pending_output;     /* bytes handed to uv_write and not yet written */
  int open_handles;          /* handles not yet through their close callback */
  bool closing;
  char *close_reason;
  char *close_when_flushed;  /* closing after what is queued is written: the reason */
};

/* One queued write: the packed message and where the unwritten part starts. */
typedef struct {
  uv_write_t req;
  RpcChannel *ch;
  char *data;                /* the whole packed message, owned */
  size_t len;                /* bytes still to write (counted in pending_output) */
} RpcWrite;

/* Runs when a handle of the channel has closed; the last one hands over
 * the reason and frees the channel. */
static void
rpc_channel_handle_closed(uv_handle_t *handle)
{
  RpcChannel *ch = handle->data;
  free(handle);
  if (--ch->open_handles > 0)
    return;
  if (ch->handlers.on_close != NULL)
    ch->handlers.on_close(ch->data, ch, ch->close_reason);
  rpc_decoder_free(ch->decoder);
  free(ch->read_block);
  free(ch->close_reason);
  free(ch->close_when_flushed);
  free(ch->peer);
  free(ch);
}

void
rpc_channel_close(RpcChannel *ch, const char *reason)
{
  if (ch == NULL || ch->closing)
    return;
  ch->closing = true;
  ch->close_reason = xstrdup(reason ? reason : "closed");
  /* uv_close stops reading, cancels queued writes (their callbacks see
   * UV_ECANCELED) and calls back later from the loop, never from here. */
  uv_close((uv_handle_t *)ch->in, rpc_channel_handle_closed);
  if (ch->out != ch->in)
    uv_close((uv_handle_t *)ch->out, rpc_channel_handle_closed);
}

/* Closes the channel because a read or write failed: the peer is gone
 * (EOF, ECONNRESET, EPIPE, or any read error, which is logged), or a write
 * failed for another reason, which is named. */
static void
rpc_channel_io_failed(RpcChannel *ch, const char *what, int status)
{
  bool gone = status == UV_EOF || status == UV_EPIPE || status == UV_ECONNRESET;
  if (gone || strcmp(what, "read") == 0) {
    if (gone)
      LOG_DEBUG("rpc", "%s: peer closed the connection", ch->peer);
    else
      LOG_WARN("rpc", "%s: read failed (%s): the peer is gone", ch->peer, uv_strerror(status));
    rpc_channel_close(ch, "peer closed the connection");
    return;
  }
  char reason[256];
  snprintf(reason, sizeof reason, "%s failed: %s", what, uv_strerror(status));
  LOG_WARN("rpc", "%s: closing the connection: %s", ch->peer, reason);
  rpc_channel_close(ch, reason);
}

/* A queued write has finished (or was cancelled by the close). */
static void
rpc_channel_write_done(uv_write_t *req, int status)
{
  RpcWrite *w = (RpcWrite *)req;
  RpcChannel *ch = w->ch;
  ch->pending_output -= w->len;
  free(w->data);
  free(w);
  if (status < 0 && status != UV_ECANCELED)
    rpc_channel_io_failed(ch, "write", status);
  else if (ch->close_when_flushed != NULL && ch->pending_output == 0)
    rpc_channel_close(ch, ch->close_when_flushed);
}

/* Stops reading and sending anything new, and closes the channel as soon as
 * what is already queued has been written (at once when nothing is), so a
 * last answer reaches the peer before the connection goes. */
static void
rpc_channel_close_flushed(RpcChannel *ch, const char *reason)
{
  if (ch->closing || ch->close_when_flushed != NULL)
    return;
  uv_read_stop(ch->in);
  if (ch->pending_output == 0) {
    rpc_channel_close(ch, reason);
    return;
  }
  ch->close_when_flushed = xstrdup(reason);
}

/* Sends one packed message: what the kernel takes now, then the rest queued
 * behind earlier writes. Takes ownership of data (a malloc'd buffer). */
static void
rpc_channel_send(RpcChannel *ch, char *data, size_t len)
{
  uv_buf_t buf = uv_buf_init(data, (unsigned int)len);
  /* uv_try_write refuses (UV_EAGAIN) while writes are queued, so order holds. */
  int n = uv_try_write(ch->out, &buf, 1);
  if (n < 0 && n != UV_EAGAIN) {
    free(data);
    rpc_channel_io_failed(ch, "write", n);
    return;
  }
  size_t written = n > 0 ? (size_t)n : 0;
  if (written == len) {
    free(data);
    return;
  }
  size_t rest = len - written;
  if (ch->pending_output + rest > ch->limits.max_output_bytes) {
    char reason[160];
    snprintf(reason, sizeof reason, "client too far behind: %zu bytes waiting, limit %zu",
             ch->pending_output + rest, ch->limits.max_output_bytes);
    LOG_WARN("rpc", "%s: closing the connection: %s", ch->peer, reason);
    rpc_channel_slow_closed_count++;
    free(data);
    rpc_channel_close(ch, reason);
    return;
  }
  RpcWrite *w = xmalloc(sizeof *w);
  w->ch = ch;
  w->data = data;
  w->len = rest;
  buf = uv_buf_init(data + written, (unsigned int)rest);
  int r = uv_write(&w->req, ch->out, &buf, 1, rpc_channel_write_done);
  if (r < 0) {
    free(data);
    free(w);
    rpc_channel_io_failed(ch, "write", r);
    return;
  }
  ch->pending_output += rest;
}

/* msgpack_packer's write callback: appends to a StrBuf (which never fails). */
static int
rpc_channel_pack_write(void *data, const char *buf, size_t len)
{
  strbuf_append(data, buf, len);
  return 0;
}

/* Packs [code, message] for err. */
static void
rpc_channel_pack_error(msgpack_packer *pk, const VigilError *err)
{
  msgpack_pack_array(pk, 2);
  msgpack_pack_int(pk, (int)err->code);
  rpc_pack_str(pk, err->msg, strlen(err->msg));
}

/* Hands a packed message in sb to rpc_channel_send. */
static void
rpc_channel_send_strbuf(RpcChannel *ch, StrBuf *sb)
{
  size_t len = sb->len;
  rpc_channel_send(ch, strbuf_take(sb), len);
}

void
rpc_channel_respond(RpcChannel *ch, uint32_t msgid, const VigilError *err, const char *result,
                    size_t result_len)
{
  if (ch == NULL || ch->closing || ch->close_when_flushed != NULL)
    return;
  StrBuf sb = STRBUF_INIT;
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, rpc_channel_pack_write);
  msgpack_pack_array(&pk, 4);
  msgpack_pack_int(&pk, 1);
  msgpack_pack_uint32(&pk, msgid);
  if (err != NULL && err->set) {
    rpc_channel_pack_error(&pk, err);
    msgpack_pack_nil(&pk);
  } else {
    msgpack_pack_nil(&pk);
    if (result != NULL && result_len > 0)
      strbuf_append(&sb, result, result_len);
    else
      msgpack_pack_map(&pk, 0);
  }
  rpc_channel_send_strbuf(ch, &sb);
}

void
rpc_channel_notify(RpcChannel *ch, const char *method, const char *params, size_t params_len)
{
  if (ch == NULL || ch->closing || ch->close_when_flushed != NULL)
    return;
  StrBuf sb = STRBUF_INIT;
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, rpc_channel_pack_write);
  msgpack_pack_array(&pk, 3);
  msgpack_pack_int(&pk, 2);
  rpc_pack_str(&pk, method, strlen(method));
  if (params != NULL && params_len > 0)
    strbuf_append(&sb, params, params_len);
  else
    msgpack_pack_array(&pk, 0);
  rpc_channel_send_strbuf(ch, &sb);
}

void
rpc_channel_error_notify(RpcChannel *ch, const VigilError *err)
{
  if (ch == NULL || ch->closing || ch->close_when_flushed != NULL)
    return;
  StrBuf sb = STRBUF_INIT;
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, rpc_channel_pack_write);
  msgpack_pack_array(&pk, 3);
  msgpack_pack_int(&pk, 2);
  rpc_pack_str(&pk, "vigil.error", strlen("vigil.error"));
  rpc_channel_pack_error(&pk, err);
  rpc_channel_send_strbuf(ch, &sb);
}

/* Handles every complete message buffered, stopping early if the channel
 * closes (from a handler, a failed write, or bad bytes). */
static void
rpc_channel_drain(RpcChannel *ch)
{
  while (!ch->closing && ch->close_when_flushed == NULL) {
    RpcMessage msg;
    VigilError err = VIGIL_ERROR_INIT;
    switch (rpc_decoder_next(ch->decoder, &msg, &err)) {
    case kDecodeNeedMore:
      return;
    case kDecodeMessage:
      if (msg.type == kRpcResponse) {
        LOG_DEBUG("rpc", "%s: ignoring a response (msgid %" PRIu32 ")", ch->peer,
                  msg.msgid);
        break;
      }
      if (ch->handlers.on_call != NULL)
        ch->handlers.on_call(ch->data, ch, msg.type == kRpcRequest, msg.msgid, msg.method,
                             msg.method_len, msg.args);
      break;
    case kDecodeBadShape:
      if (msg.type == kRpcRequest && msg.has_msgid)
        rpc_channel_respond(ch, msg.msgid, &err, NULL, 0);
      else
        rpc_channel_error_notify(ch, &err);
      break;
    case kDecodeTooBig:
      /* Skipped without reading it, and answered; then the connection goes
       * on, or closes once the answer is out (channel.h). */
      LOG_WARN("rpc", "%s: %s", ch->peer, err.msg);
      if (msg.type == kRpcRequest && msg.has_msgid)
        rpc_channel_respond(ch, msg.msgid, &err, NULL, 0);
      else if (msg.type != kRpcResponse)
        rpc_channel_error_notify(ch, &err);
      if (ch->limits.oversize_closes) {
        LOG_WARN("rpc", "%s: closing the connection: a message over rpc.max_message_bytes",
                 ch->peer);
        rpc_channel_close_flushed(ch, "message over rpc.max_message_bytes");
      }
      break;
    case kDecodeFatal: {
      /* The reason without the error's name: "not msgpack: ..." */
      const char *reason = err.msg;
      size_t skip = strlen(error_name(err.code));
      if (strncmp(reason, error_name(err.code), skip) == 0 && reason[skip] == ':')
        reason += skip + 2;
      LOG_WARN("rpc", "%s: closing the connection: %s", ch->peer, reason);
      rpc_channel_close(ch, reason);
      return;
    }
    }
  }
}

/* libuv asks for a buffer to read into: the channel's one block. */
static void
rpc_channel_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf)
{
  RpcChannel *ch = handle->data;
  *buf = uv_buf_init(ch->read_block, RPC_CHANNEL_READ_BLOCK);
}

/* Bytes arrived (or the peer went away). */
static void
rpc_channel_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
  RpcChannel *ch = stream->data;
  if (ch->closing)
    return;
  if (nread < 0) {
    rpc_channel_io_failed(ch, "read", (int)nread);
    return;
  }
  if (nread == 0)
    return;
  rpc_decoder_feed(ch->decoder, buf->base, (size_t)nread);
  rpc_channel_drain(ch);
}

RpcChannel *
rpc_channel_open(uv_loop_t *loop, uv_stream_t *in, uv_stream_t *out, const RpcLimits *limits,
                 const RpcHandlers *handlers, void *data, const char *peer)
{
  RpcChannel *ch = xcalloc(1, sizeof *ch);
  ch->loop = loop;
  ch->in = in;
  ch->out = out;
  ch->limits = *limits;
  ch->handlers = *handlers;
  ch->data = data;
  ch->peer = xstrdup(peer ? peer : "peer");
  ch->decoder = rpc_decoder_new(limits->max_message_bytes);
  ch->read_block = xmalloc(RPC_CHANNEL_READ_BLOCK);
  in->data = ch;
  out->data = ch;
  ch->open_handles = in == out ? 1 : 2;
  int r = uv_read_start(in, rpc_channel_alloc, rpc_channel_read);
  if (r < 0)
    rpc_channel_io_failed(ch, "uv_read_start", r);
  return ch;
}

void
rpc_channel_set_user(RpcChannel *ch, void *user)
{
  ch->user = user;
}

void *
rpc_channel_user(const RpcChannel *ch)
{
  return ch->user;
}

const char *
rpc_channel_peer(const RpcChannel *ch)
{
  return ch->peer;
}

bool
rpc_channel_closing(const RpcChannel *ch)
{
  return ch->closing;
}

uint64_t
rpc_channel_slow_closed(void)
{
  return rpc_channel_slow_closed_count;
}

size_t
rpc_channel_pending_output(const RpcChannel *ch)
{
  return ch->pending_output;
}
