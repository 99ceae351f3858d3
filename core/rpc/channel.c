/*
 * One msgpack-rpc connection (see channel.h). Reads land in one fixed block
 * per channel and go straight to the decoder; each decoded message is
 * handled before the next is decoded, so requests start in order. Writes
 * are packed into one buffer per message and offered to the kernel at once
 * (uv_try_write); whatever it does not take is queued with uv_write, in
 * order, and counted in pending_output, which is what the output bound
 * (rpc.max_output_bytes) bounds.
 *
 * Pacing. A paced send (rpc_channel_notify_paced: the engine's
 * notifications) is refused when it would take pending_output past the
 * bound; its size is kept in room_wanted and on_room runs from the write
 * callback that makes room, so a burst goes out as fast as the peer reads
 * and never piles up here. Answers are never refused (each request gets
 * its answer); when one takes pending_output past the bound, the channel
 * stops reading and handling calls (input_held) until half the bound has
 * drained, so a peer that sends requests without reading their answers
 * cannot grow the queue either.
 *
 * Stopped readers. While the channel is behind (a paced send waits for
 * room, or calls are held), a timer checks every rpc.output_stall_ms that
 * the peer read some bytes since the last check (rpc_channel_taken: what
 * the kernel took less what it still holds unread); one that read none
 * has stopped reading and is closed, counted. A peer that reads, however
 * slowly, is never cut.
 *
 * Turns. Calls are handled until RPC_CHANNEL_TURN_NS has passed in one
 * turn of the loop (one call at least); the rest of what was read waits
 * for the next turn (reading stopped; an idle handle, which runs once a
 * turn and keeps that turn's poll from waiting, resumes: a zero timer
 * would not do, as libuv runs a timer re-armed at 0 again in the same
 * turn), so a peer
 * that pipelines many calls (a burst of 1000 monitor_start) holds the loop
 * for about one call at a time, not for all of them: other connections'
 * calls, running monitors' lines and timers are served in between.
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
#include <sys/ioctl.h>

#include "base/log.h"
#include "base/memory.h"
#include "rpc/decoder.h"
#include "rpc/pack.h"
#include "base/strbuf.h"

/* Connections closed because their peer fell more than rpc.max_output_bytes
 * behind: the one thing the output bound throws away, counted for api_info. */
static uint64_t rpc_channel_slow_closed_count;

/* The read block of a channel. */
#define RPC_CHANNEL_READ_BLOCK 65536
/* How long one turn may handle one channel's calls before the rest waits
 * for the next turn (see Turns above). */
#define RPC_CHANNEL_TURN_NS 1000000

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
  uint64_t sent_total;       /* bytes the kernel took at once (for the stall check) */
  uint64_t queued_total;     /* bytes ever handed to uv_write (for the stall check) */
  size_t room_wanted;        /* a paced send was refused: its size (0: none) */
  bool input_held;           /* over the bound: calls wait until output drains */
  uv_timer_t *stall;         /* while behind: checks that the peer takes bytes */
  uv_idle_t *resume;         /* a turn's budget was spent: goes on next turn */
  bool turn_spent;           /* calls wait for resume (reading stopped) */
  uint64_t stall_mark;       /* bytes the peer had taken at the last check */
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
  uv_close((uv_handle_t *)ch->stall, rpc_channel_handle_closed);
  uv_close((uv_handle_t *)ch->resume, rpc_channel_handle_closed);
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

/* Whether len more bytes fit the output bound: always when nothing is
 * queued (a message larger than the bound still goes, alone). */
static bool
rpc_channel_fits(const RpcChannel *ch, size_t len)
{
  return ch->pending_output == 0 || ch->pending_output + len <= ch->limits.max_output_bytes;
}

/* Whether output waits for the peer beyond what the bound lets through: a
 * paced send was refused, or calls are held. The stall check runs then. */
static bool
rpc_channel_behind(const RpcChannel *ch)
{
  return ch->room_wanted > 0 || ch->input_held;
}

/* Bytes the kernel holds for the peer, written but not yet read: TIOCOUTQ
 * (SIOCOUTQ for a socket) on the descriptor, FIONREAD for a pipe (either
 * end tells the pipe's content); 0 when neither tells. */
static uint64_t
rpc_channel_unread(const RpcChannel *ch)
{
  uv_os_fd_t fd;
  int n = 0;
  if (uv_fileno((const uv_handle_t *)ch->out, &fd) != 0)
    return 0;
  if (ioctl(fd, TIOCOUTQ, &n) == 0 && n >= 0)
    return (uint64_t)n;
  if (ioctl(fd, FIONREAD, &n) == 0 && n >= 0)
    return (uint64_t)n;
  return 0;
}

/* Bytes the peer has read of everything sent: what the kernel took (at
 * once, or from libuv's write queue, a partly written message in part)
 * less what it still holds unread. Read that finely, a reader is seen
 * making progress at each read, not only when the kernel's buffer has
 * drained enough to take more. */
static uint64_t
rpc_channel_taken(const RpcChannel *ch)
{
  uint64_t kernel = ch->sent_total + ch->queued_total - uv_stream_get_write_queue_size(ch->out);
  uint64_t unread = rpc_channel_unread(ch);
  return unread < kernel ? kernel - unread : 0;
}

/* Every rpc.output_stall_ms while the channel is behind: a peer that took
 * no byte since the last check has stopped reading, and is closed; one
 * that took some is behind but reading, and waits on. */
static void
rpc_channel_stall_check(uv_timer_t *t)
{
  RpcChannel *ch = t->data;
  if (ch->closing || !rpc_channel_behind(ch)) {
    uv_timer_stop(t);
    return;
  }
  uint64_t taken = rpc_channel_taken(ch);
  if (taken != ch->stall_mark) {
    ch->stall_mark = taken;
    return;
  }
  char reason[200];
  snprintf(reason, sizeof reason,
           "client stopped reading: %zu bytes waiting, none taken in %" PRIu64
           " ms (rpc.output_stall_ms)",
           ch->pending_output, ch->limits.output_stall_ms);
  LOG_WARN("rpc", "%s: closing the connection: %s", ch->peer, reason);
  rpc_channel_slow_closed_count++;
  rpc_channel_close(ch, reason);
}

/* Marks the channel behind by one more cause; the first starts the stall
 * check. */
static void
rpc_channel_fall_behind(RpcChannel *ch)
{
  if (uv_is_active((uv_handle_t *)ch->stall))
    return;
  ch->stall_mark = rpc_channel_taken(ch);
  uint64_t every = ch->limits.output_stall_ms > 0 ? ch->limits.output_stall_ms : 1;
  uv_timer_start(ch->stall, rpc_channel_stall_check, every, every);
}

static void rpc_channel_drain(RpcChannel *ch);
static void rpc_channel_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);
static void rpc_channel_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf);

/* What a write that finished made room for: held calls go on once the
 * output is back under half the bound (so that reading does not flap at
 * the bound), and a refused paced send is told it may try again. */
static void
rpc_channel_drained(RpcChannel *ch)
{
  if (ch->input_held && ch->pending_output <= ch->limits.max_output_bytes / 2) {
    ch->input_held = false;
    if (ch->close_when_flushed == NULL && !ch->turn_spent) {
      int r = uv_read_start(ch->in, rpc_channel_alloc, rpc_channel_read);
      if (r < 0) {
        rpc_channel_io_failed(ch, "uv_read_start", r);
        return;
      }
      rpc_channel_drain(ch); /* the calls already read */
    }
  }
  if (ch->room_wanted > 0 && !ch->closing && rpc_channel_fits(ch, ch->room_wanted)) {
    ch->room_wanted = 0;
    if (ch->handlers.on_room != NULL)
      ch->handlers.on_room(ch->data, ch);
  }
  if (!rpc_channel_behind(ch) && !ch->closing)
    uv_timer_stop(ch->stall);
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
  else if (!ch->closing)
    rpc_channel_drained(ch);
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
  ch->sent_total += written;
  if (written == len) {
    free(data);
    return;
  }
  size_t rest = len - written;
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
  ch->queued_total += rest;
  /* Past the bound (answers can take it there: paced notifications never
   * do), the peer's further calls wait until it has read. */
  if (ch->pending_output > ch->limits.max_output_bytes && !ch->input_held) {
    ch->input_held = true;
    uv_read_stop(ch->in);
    rpc_channel_fall_behind(ch);
  }
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

/* Packs [2, method, params] into sb. */
static void
rpc_channel_pack_notify(StrBuf *sb, const char *method, const char *params, size_t params_len)
{
  msgpack_packer pk;
  msgpack_packer_init(&pk, sb, rpc_channel_pack_write);
  msgpack_pack_array(&pk, 3);
  msgpack_pack_int(&pk, 2);
  rpc_pack_str(&pk, method, strlen(method));
  if (params != NULL && params_len > 0)
    strbuf_append(sb, params, params_len);
  else
    msgpack_pack_array(&pk, 0);
}

void
rpc_channel_notify(RpcChannel *ch, const char *method, const char *params, size_t params_len)
{
  if (ch == NULL || ch->closing || ch->close_when_flushed != NULL)
    return;
  StrBuf sb = STRBUF_INIT;
  rpc_channel_pack_notify(&sb, method, params, params_len);
  rpc_channel_send_strbuf(ch, &sb);
}

bool
rpc_channel_notify_paced(RpcChannel *ch, const char *method, const char *params,
                         size_t params_len)
{
  if (ch == NULL || ch->closing || ch->close_when_flushed != NULL)
    return true; /* going away: nothing will be sent, nothing to wait for */
  StrBuf sb = STRBUF_INIT;
  rpc_channel_pack_notify(&sb, method, params, params_len);
  if (!rpc_channel_fits(ch, sb.len)) {
    ch->room_wanted = sb.len;
    rpc_channel_fall_behind(ch);
    strbuf_free(&sb);
    return false;
  }
  rpc_channel_send_strbuf(ch, &sb);
  return true;
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

/* The next turn goes on with the calls already read (see Turns above). */
static void
rpc_channel_resume(uv_idle_t *idle)
{
  RpcChannel *ch = idle->data;
  uv_idle_stop(idle);
  ch->turn_spent = false;
  if (ch->closing || ch->input_held || ch->close_when_flushed != NULL)
    return;
  int r = uv_read_start(ch->in, rpc_channel_alloc, rpc_channel_read);
  if (r < 0) {
    rpc_channel_io_failed(ch, "uv_read_start", r);
    return;
  }
  rpc_channel_drain(ch);
}

/* This turn's budget is spent: reading stops, and the next turn resumes. */
static void
rpc_channel_spend_turn(RpcChannel *ch)
{
  ch->turn_spent = true;
  uv_read_stop(ch->in);
  uv_idle_start(ch->resume, rpc_channel_resume);
}

/* Handles every complete message buffered, stopping early if the channel
 * closes (from a handler, a failed write, or bad bytes). */
static void
rpc_channel_drain(RpcChannel *ch)
{
  uint64_t t0 = uv_hrtime();
  bool handled = false;
  while (!ch->closing && ch->close_when_flushed == NULL && !ch->input_held) {
    if (handled && uv_hrtime() - t0 >= RPC_CHANNEL_TURN_NS) {
      rpc_channel_spend_turn(ch);
      return;
    }
    handled = true;
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
  ch->stall = xmalloc(sizeof *ch->stall);
  uv_timer_init(loop, ch->stall);
  ch->stall->data = ch;
  ch->resume = xmalloc(sizeof *ch->resume);
  uv_idle_init(loop, ch->resume);
  ch->resume->data = ch;
  ch->open_handles = in == out ? 3 : 4;
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
