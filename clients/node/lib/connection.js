// One msgpack-rpc connection to an engine, over any pair of byte streams:
// a Unix socket (both ends one Duplex) or an embedded engine's stdout and
// stdin. It sends requests with fresh msgids, matches the answers to them
// by msgid (answers may come out of order: monitor_wait, foreground
// process_run and monitor_stop answer later), and hands the engine's
// notifications to the owner. When the stream ends, every call still
// waiting is rejected at once: no answer can come any more.
//
// It knows nothing of sessions or of what the notifications say; the
// Client (client.js) does.

import { VigilConnectionError, VigilError, VigilTimeoutError } from './errors.js';
import { encodeMessage, paramsOf, readMessages } from './framing.js';

/** msgids are unsigned 32-bit (docs/protocol.md 2.3): 1..MSGID_MAX, then around again. */
const MSGID_MAX = 0xffffffff;

/** How many calls may wait for their answer at once on one connection. The
 * engine bounds its own side (rpc.max_pending waits); this bounds ours, so
 * a host stuck in a loop of calls fails with a message rather than growing
 * without end. */
export const IN_FLIGHT_MAX = 4096;

/**
 * The next msgid of link (a socket's or a NATS transport's: its `pending`
 * Map by msgid, `lastMsgid` and `name`) that no call waiting holds.
 * Throws VigilConnectionError when IN_FLIGHT_MAX calls already wait.
 */
export function nextFreeMsgid(link) {
  if (link.pending.size >= IN_FLIGHT_MAX) {
    throw new VigilConnectionError(`${link.name}: ${IN_FLIGHT_MAX} calls are already waiting for an answer ` +
      `(IN_FLIGHT_MAX); await some before making more`);
  }
  do {
    link.lastMsgid = link.lastMsgid >= MSGID_MAX ? 1 : link.lastMsgid + 1;
  } while (link.pending.has(link.lastMsgid));
  return link.lastMsgid;
}

export class RpcConnection {
  /**
   * @param {object} io
   * @param {AsyncIterable<Uint8Array>} io.readable where the engine's bytes come from
   * @param {import('node:stream').Writable} io.writable where ours go
   * @param {string} io.name what to call the engine in messages ("the engine at PATH")
   * @param {(n: object) => void} io.onNotification a vigil.notification's map
   * @param {(e: VigilError) => void} io.onEngineError a vigil.error notification
   * @param {(why: VigilConnectionError) => void} io.onClose called once, when it ends
   */
  constructor({ readable, writable, name, onNotification, onEngineError, onClose }) {
    this.writable = writable;
    this.name = name;
    this.onNotification = onNotification;
    this.onEngineError = onEngineError;
    this.onClose = onClose;
    this.pending = new Map(); // msgid -> {resolve, reject, method, timer}
    this.lastMsgid = 0;
    this.closedBy = null; // the VigilConnectionError once closed
    // A write to a peer that went away fails here, not as an uncaught error.
    writable.on('error', (e) => this.close(new VigilConnectionError(`${name}: cannot write: ${e.message}`, { cause: e })));
    this.reading = this.readLoop(readable);
  }

  get closed() {
    return this.closedBy !== null;
  }

  async readLoop(readable) {
    let why;
    try {
      for await (const message of readMessages(readable)) {
        this.dispatch(message);
        if (this.closed) return;
      }
      why = new VigilConnectionError(`${this.name} closed the connection`);
    } catch (e) {
      why = e instanceof VigilConnectionError ? e
        : new VigilConnectionError(`${this.name}: the connection broke: ${e.message}`, { cause: e });
    }
    this.close(why);
  }

  dispatch(message) {
    if (!Array.isArray(message)) return; // not msgpack-rpc; the engine never sends it
    if (message[0] === 1) {
      const call = this.pending.get(message[1]);
      if (call === undefined) return; // given up on (timeoutMs): dropped, as promised
      this.pending.delete(message[1]);
      clearTimeout(call.timer);
      if (message[2] !== null && message[2] !== undefined) {
        call.reject(VigilError.fromWire(message[2], call.method));
      } else {
        call.resolve(message[3] ?? {});
      }
    } else if (message[0] === 2) {
      const params = Array.isArray(message[2]) ? message[2] : [];
      if (message[1] === 'vigil.notification' && params[0] && typeof params[0] === 'object') {
        this.onNotification(params[0]);
      } else if (message[1] === 'vigil.error') {
        this.onEngineError(VigilError.fromWire(params));
      }
    }
    // [0, ...]: vigil never sends requests; nothing to answer.
  }

  nextMsgid() {
    return nextFreeMsgid(this);
  }

  /**
   * Calls method and resolves with its result map, or rejects with a
   * VigilError (the engine's answer), a VigilConnectionError or, when
   * timeoutMs passes first, a VigilTimeoutError.
   */
  request(method, args, { timeoutMs } = {}) {
    if (this.closed) return Promise.reject(this.closedBy);
    let msgid;
    let bytes;
    try {
      msgid = this.nextMsgid();
      bytes = encodeMessage([0, msgid, method, paramsOf(args)]);
    } catch (e) {
      return Promise.reject(e);
    }
    return new Promise((resolve, reject) => {
      const call = { resolve, reject, method, timer: undefined };
      if (timeoutMs !== undefined) {
        call.timer = setTimeout(() => {
          this.pending.delete(msgid);
          reject(new VigilTimeoutError(`${method}: no answer from ${this.name} within ${timeoutMs} ms`));
        }, timeoutMs);
      }
      this.pending.set(msgid, call);
      this.writable.write(bytes);
    });
  }

  /** Sends method as a notification: no answer; a failure comes back as a
   * vigil.error notification (onEngineError). */
  notify(method, args) {
    if (this.closed) throw this.closedBy;
    this.writable.write(encodeMessage([2, method, paramsOf(args)]));
  }

  /** Ends the connection (once): every waiting call is rejected with why. */
  close(why = new VigilConnectionError(`the connection to ${this.name} was closed`)) {
    if (this.closed) return;
    this.closedBy = why;
    for (const call of this.pending.values()) {
      clearTimeout(call.timer);
      call.reject(why);
    }
    this.pending.clear();
    this.onClose(why);
  }
}
