// msgpack-rpc framing (docs/protocol.md section 2.3): the stream is msgpack
// values one after another with no length prefix, so a message may arrive
// split over several reads and one read may carry many messages. This file
// turns a stream of byte chunks into whole messages and a message into
// bytes; it knows nothing of what the messages mean.
//
// Requests are `[0, msgid, method, params]`, responses `[1, msgid, error,
// result]`, notifications `[2, method, params]`. `params` is `[]` or `[map]`.

import { Encoder, decodeMultiStream } from '@msgpack/msgpack';

/** The largest string, byte array, array or map the client accepts in one
 * message. The engine caps what it queues for one connection at
 * rpc.max_output_bytes (at most 1 GiB), so anything declaring more is not
 * the engine talking; the decoder refuses it at its header, before reading
 * its body. */
export const ITEM_MAX_BYTES = 1 << 30;

// undefined is left out of maps, so an option not given is an argument not
// sent (the engine's default applies), not a nil.
const encoder = new Encoder({ ignoreUndefined: true });

/** The bytes of one message. */
export function encodeMessage(message) {
  return encoder.encode(message);
}

/** The params of a call: `[]` when no argument is set, else `[args]`. */
export function paramsOf(args) {
  if (args === undefined || args === null) return [];
  if (typeof args !== 'object' || Array.isArray(args)) {
    throw new TypeError(`arguments must be an object of named arguments, got ${Array.isArray(args) ? 'an array' : typeof args}`);
  }
  const set = Object.entries(args).filter(([, v]) => v !== undefined);
  return set.length === 0 ? [] : [Object.fromEntries(set)];
}

/**
 * The messages of a byte stream, in order, however its chunks are cut.
 * @param {AsyncIterable<Uint8Array>} chunks a socket, a pipe, or any async
 *   iterable of byte chunks
 * @returns {AsyncGenerator<unknown>} each decoded message; throws a
 *   DecodeError on bytes that are not msgpack or on an item over
 *   ITEM_MAX_BYTES. A message cut short by the end of the stream is not
 *   one: it is left undecoded (the connection is gone with it).
 */
export function readMessages(chunks) {
  return decodeMultiStream(chunks, {
    maxStrLength: ITEM_MAX_BYTES,
    maxBinLength: ITEM_MAX_BYTES,
    maxArrayLength: ITEM_MAX_BYTES,
    maxMapLength: ITEM_MAX_BYTES,
    maxExtLength: ITEM_MAX_BYTES,
  });
}
