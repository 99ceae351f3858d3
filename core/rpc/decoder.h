/*
 * msgpack-rpc framing: turns a byte stream into messages, one at a time,
 * under the protocol's limits. msgpack-rpc has no length prefix, so the
 * decoder walks each message's headers first (no allocation, no trust in
 * declared sizes) to find where it ends, to check its nesting depth, and to
 * refuse a container whose declared count could not fit in the size limit;
 * only a complete message that passed that walk is unpacked with msgpack-c.
 *
 * Outcomes, per docs/protocol.md section 2:
 *  - bytes that are not msgpack, or a message nested deeper than max_depth,
 *    are fatal: the connection is closed;
 *  - a message over max_message bytes (rpc.max_message_bytes) is skipped:
 *    from the moment the walk knows it cannot fit (a str/bin/ext header
 *    declaring too much, a container count that cannot fit, or simply its
 *    bytes so far) its bytes are dropped as they arrive, never buffered, and
 *    once it has ended it is reported (kDecodeTooBig) so that it can be
 *    answered limit_exceeded; whether the connection then closes is the
 *    channel's business (channel.h: a socket closes, as the contract says (docs/protocol.md section 2.4);
 *    stdio, whose closing would stop the engine, goes on).
 *  - a well-formed message of the wrong shape is answered: an error
 *    response when its msgid can be read, a vigil.error notification if not;
 *  - a good message is handed on with its type, msgid, method and arguments.
 * Shape: [0, msgid u32, method, params] or [2, method, params]; method is a
 * str or bin of at most 100 bytes; params is [] or [map] and every key of
 * that map is a str. A response ([1, ...]) from the peer is reported as
 * kRpcResponse and otherwise ignored by callers (vigild sends no requests).
 */
#ifndef VIGIL_RPC_DECODER_H
#define VIGIL_RPC_DECODER_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define RPC_METHOD_MAX 100
#define RPC_MAX_DEPTH 32

typedef enum {
  kRpcRequest = 0,
  kRpcResponse = 1,
  kRpcNotification = 2,
} RpcType;

typedef struct {
  RpcType type;
  bool has_msgid;              /* the msgid could be read (also on a bad shape) */
  uint32_t msgid;
  const char *method;          /* not NUL-terminated */
  size_t method_len;
  const msgpack_object *args;  /* the argument map, or NULL for params [] */
} RpcMessage;

typedef enum {
  kDecodeMessage,   /* *msg is a good message, valid until the next call */
  kDecodeNeedMore,  /* no complete message buffered */
  kDecodeBadShape,  /* well-formed, wrong shape: err says why, msg->has_msgid/msgid/type set */
  kDecodeTooBig,    /* a message over max_message was skipped: err (limit_exceeded) names its
                       size and the limit; msg->type/has_msgid/msgid say whom to answer (a
                       message that is not an array has type kRpcNotification, no msgid) */
  kDecodeFatal,     /* close the connection: err says why */
} RpcDecodeResult;

typedef struct RpcDecoder RpcDecoder;

RpcDecoder *rpc_decoder_new(size_t max_message);
void rpc_decoder_free(RpcDecoder *d);

/* Appends received bytes. Never fails; after a fatal result further bytes
 * are ignored. The buffer never holds more than max_message bytes of an
 * incomplete message plus the chunk just fed (past max_message the message
 * is being skipped, and next drops its bytes). */
void rpc_decoder_feed(RpcDecoder *d, const char *data, size_t len);

/* The next message. Call until it returns kDecodeNeedMore or kDecodeFatal. */
RpcDecodeResult rpc_decoder_next(RpcDecoder *d, RpcMessage *msg, VigilError *err);

/* Bytes buffered and not yet consumed. */
size_t rpc_decoder_buffered(const RpcDecoder *d);

#endif
