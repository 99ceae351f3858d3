/*
 * One msgpack-rpc connection: reads bytes from a libuv stream, decodes them
 * (decoder.h), answers malformed messages itself, hands good calls to its
 * handlers, and writes responses and notifications back in order.
 *
 * Bounds: bytes that are not msgpack close this connection (and only it)
 * after a log line; a message over rpc.max_message_bytes is skipped without
 * being buffered and answered limit_exceeded (a vigil.error notification
 * when it has no readable msgid); then, as docs/protocol.md section 2 has it, the
 * connection is closed once that answer is written, unless the transport
 * asks to go on (stdio, where closing the one connection would stop the
 * engine and every monitor: RpcLimits.oversize_closes). Output waiting for
 * a slow peer is bounded by rpc.max_output_bytes without cutting a peer
 * that reads: a paced send (notifications) goes only when it fits, else it
 * is refused and on_room says when to try again; past the bound (answers
 * can take it there) the peer's further calls wait, unread, until its
 * output is back under half the bound. A peer is closed as too slow
 * (logged, counted) only when it has stopped reading: output waits beyond
 * the bound and it has taken no byte for rpc.output_stall_ms. Nothing here
 * blocks: writes go through uv_try_write and then uv_write.
 */
#ifndef VIGIL_RPC_CHANNEL_H
#define VIGIL_RPC_CHANNEL_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "base/error.h"

typedef struct RpcChannel RpcChannel;

typedef struct {
  size_t max_message_bytes; /* rpc.max_message_bytes */
  size_t max_output_bytes;  /* rpc.max_output_bytes */
  bool oversize_closes;     /* after answering an oversized message, close once the
                               answer is written (a socket); false: go on (stdio) */
  uint64_t output_stall_ms; /* rpc.output_stall_ms (0 is taken as 1) */
} RpcLimits;

typedef struct {
  /* A new channel (accepted, or stdio). May be NULL. */
  void (*on_open)(void *data, RpcChannel *ch);
  /* A well-formed call: a request (is_request, msgid) or a notification.
   * method is not NUL-terminated; args is the argument map or NULL for [].
   * Everything passed is valid only during the call. A request must be
   * answered exactly once with rpc_channel_respond, now or later (unless the
   * channel closes first). A failed notification is reported by the handler
   * with rpc_channel_error_notify. */
  void (*on_call)(void *data, RpcChannel *ch, bool is_request, uint32_t msgid,
                  const char *method, size_t method_len, const msgpack_object *args);
  /* The channel is closing: the peer went away, sent bad bytes, fell too far
   * behind, or rpc_channel_close was called. Called exactly once; nothing may
   * be sent after it, and the channel is freed after it returns. */
  void (*on_close)(void *data, RpcChannel *ch, const char *reason);
  /* A paced send was refused (rpc_channel_notify_paced) and the output now
   * has room for it: send again. Called once per refusal, from the loop
   * (a write's callback), never from inside a call into the channel. May
   * be NULL. */
  void (*on_room)(void *data, RpcChannel *ch);
} RpcHandlers;

/* Starts reading `in` and writing `out` (the same stream for a socket; stdin
 * and stdout for --stdio). The channel owns both handles: they must come
 * from xmalloc (with data unused), and it closes and frees them. on_close
 * runs later from the loop (after the handles have closed), never from
 * inside a call into the channel.
 * `peer` names the peer in log lines ("stdio", "socket uid=1000 pid=42"). */
RpcChannel *rpc_channel_open(uv_loop_t *loop, uv_stream_t *in, uv_stream_t *out,
                             const RpcLimits *limits, const RpcHandlers *handlers, void *data,
                             const char *peer);

/* Answers a request: [1, msgid, nil, result] where result is one packed
 * msgpack value (a map), or [1, msgid, [code, message], nil] when err is set. */
void rpc_channel_respond(RpcChannel *ch, uint32_t msgid, const VigilError *err,
                         const char *result, size_t result_len);

/* Sends [2, method, params] where params is one packed msgpack array. */
void rpc_channel_notify(RpcChannel *ch, const char *method, const char *params,
                        size_t params_len);

/* Sends [2, method, params] only if it fits rpc.max_output_bytes (or
 * nothing is waiting): returns true when sent, or when the channel is
 * closing and nothing will be; false when it does not fit, and on_room
 * follows once it would. The sender keeps what it could not send, and
 * sends it then: how a burst of notifications is paced to the peer's
 * reading instead of overflowing the bound. */
bool rpc_channel_notify_paced(RpcChannel *ch, const char *method, const char *params,
                              size_t params_len);

/* Sends [2, "vigil.error", [code, message]]. */
void rpc_channel_error_notify(RpcChannel *ch, const VigilError *err);

/* Closes the channel (on_close follows, once). Pending writes are dropped. */
void rpc_channel_close(RpcChannel *ch, const char *reason);

/* Per-connection state of the user of the channel. */
void rpc_channel_set_user(RpcChannel *ch, void *user);
void *rpc_channel_user(const RpcChannel *ch);

const char *rpc_channel_peer(const RpcChannel *ch);
bool rpc_channel_closing(const RpcChannel *ch);
/* Bytes waiting to be written. */
size_t rpc_channel_pending_output(const RpcChannel *ch);

/* Connections closed so far (in this process) for having stopped reading
 * (rpc.output_stall_ms). */
uint64_t rpc_channel_slow_closed(void);

#endif
