// One msgpack-rpc connection to a remote engine, carried by NATS
// request-reply (docs/fleet.md section 6) instead of a socket: the same
// calls and answers as connection.js, one frame per NATS message.
//
// Each call is published to the engine's request subject (`vigil.<engine>.rpc`,
// or a session's `vigil.<engine>.<token>.rpc`) with the reply subject
// `<inbox>.<msgid>` and the header Vigil-Client, so that the engine serves
// every call of this connection from one virtual connection of its own
// (the sessions it opened stay open between calls). The answers come to
// one subscription on `<inbox>.*`; the inbox's prefix is the caller's, so
// a user whose permissions allow only `_INBOX_<user>.>` can read them.
//
// NATS request-reply is at most once: a request or an answer lost with the
// broker's connection is never sent again. So every call has a deadline,
// callTimeoutMs past what the call may rightly wait for by its own
// arguments (monitor_wait's timeout_ms, a foreground process_run's
// timeout_s, ...: ownWaitMs), and a connection to the broker that drops
// fails every call still waiting at once (its answer, if any, is lost).
//
// An answer is hostile input: anyone allowed to publish into the inbox can
// put anything there. It must be one msgpack value, a response
// `[1, msgid, error, result]` whose msgid is that of the reply subject it
// came to, its error nil or `[code, message, ...]`, its result a map or
// nil. One that is not fails its call with a VigilError (code internal)
// saying what was wrong, counted (malformed); one for no call waiting (a
// late answer after a timeout, or a stray) is dropped, counted (stray).

import { decode } from '@msgpack/msgpack';
import { nextFreeMsgid } from './connection.js';
import {
  ERROR_CODES, VigilConnectionError, VigilError, VigilFleetError, VigilTimeoutError,
} from './errors.js';
import { ITEM_MAX_BYTES, encodeMessage, paramsOf } from './framing.js';
import { describe } from './notification.js';

/** How long past its own wait (ownWaitMs) a call waits for its answer, by default. */
export const CALL_TIMEOUT_MS = 30000;

/** The largest delay setTimeout takes (a larger one fires at once). */
const TIMER_MAX_MS = 2 ** 31 - 1;


/** The header naming the requester's virtual connection (docs/fleet.md section 6). */
export const CLIENT_HEADER = 'Vigil-Client';

/** The engine's defaults for the arguments that make a call wait
 * (docs/protocol.md): monitor_wait's timeout_ms, process_run's timeout_s,
 * monitor_stop's grace_ms (monitor.kill_grace_ms, 2000 unless configured). */
const MONITOR_WAIT_DEFAULT_MS = 30000;
const PROCESS_RUN_DEFAULT_S = 300;
const STOP_GRACE_DEFAULT_MS = 2000;

/** A duration argument as ms: 0 for one that is not a positive number (the
 * engine refuses it at once). */
function durationMs(value, scale = 1) {
  return Number.isFinite(value) && value > 0 ? value * scale : 0;
}

/**
 * How long a call may rightly wait before the engine answers it (ms), by
 * its own arguments: monitor_wait's timeout_ms, cursor_take's wait_ms, a
 * foreground process_run's timeout_s, monitor_stop's grace_ms; 0 for a
 * call answered at once. A monitor_stop with `escalate: false` waits for
 * the process to go by itself, however long: give such a call a timeoutMs.
 */
export function ownWaitMs(method, args) {
  const a = args !== null && typeof args === 'object' ? args : {};
  switch (method) {
    case 'monitor_wait':
      return a.timeout_ms === undefined ? MONITOR_WAIT_DEFAULT_MS : durationMs(a.timeout_ms);
    case 'cursor_take':
      return durationMs(a.wait_ms);
    case 'process_run':
      if (a.background === true) return 0;
      return a.timeout_s === undefined ? PROCESS_RUN_DEFAULT_S * 1000 : durationMs(a.timeout_s, 1000);
    case 'monitor_stop':
      return a.grace_ms === undefined ? STOP_GRACE_DEFAULT_MS : durationMs(a.grace_ms);
    default:
      return 0;
  }
}

/** True for a decoded msgpack map (not an array, not bytes). */
function isMap(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && !ArrayBuffer.isView(v);
}

/**
 * What is wrong with an answer's payload for the call msgid, or the
 * response frame when nothing is.
 * @returns {{problem: string} | {frame: unknown[]}}
 */
export function readAnswer(data, msgid) {
  if (data.length === 0) return { problem: 'the answer is empty (0 bytes)' };
  let frame;
  try {
    frame = decode(data, {
      maxStrLength: ITEM_MAX_BYTES, maxBinLength: ITEM_MAX_BYTES, maxArrayLength: ITEM_MAX_BYTES,
      maxMapLength: ITEM_MAX_BYTES, maxExtLength: ITEM_MAX_BYTES,
    });
  } catch (e) {
    return { problem: `its ${data.length} bytes are not one msgpack value (${e.message})` };
  }
  if (!Array.isArray(frame) || frame.length !== 4 || frame[0] !== 1) {
    return { problem: `it is not a msgpack-rpc response [1, msgid, error, result]: got ${describe(frame)}` };
  }
  if (frame[1] !== msgid) {
    return { problem: `it answers msgid ${describe(frame[1])}, not ${msgid} (the msgid of the reply subject it came to)` };
  }
  const [, , error, result] = frame;
  if (error !== null && error !== undefined) {
    if (!Array.isArray(error) || error.length < 2 || !Number.isInteger(error[0]) || typeof error[1] !== 'string') {
      return { problem: `its error is not [code, message, ...]: got ${describe(error)}` };
    }
  } else if (result !== null && result !== undefined && !isMap(result)) {
    return { problem: `its result is not a map: got ${describe(result)}` };
  }
  return { frame };
}

export class NatsRpcConnection {
  /**
   * @param {object} io
   * @param {object} io.nc the NATS.js connection (connected)
   * @param {(entries: [string, string][]) => object} io.makeHeaders NATS.js headers from entries
   * @param {string} io.subject the engine's request subject
   * @param {string} io.engine the engine's name, for messages
   * @param {string} io.clientId this connection's Vigil-Client
   * @param {string} io.inbox the answers' subject, without the msgid token
   * @param {number} io.callTimeoutMs how long past its own wait a call waits
   * @param {(why: Error) => void} io.onClose called once, when it ends
   */
  constructor({ nc, makeHeaders, subject, engine, clientId, inbox, callTimeoutMs, onClose }) {
    this.nc = nc;
    this.makeHeaders = makeHeaders;
    this.subject = subject;
    this.engine = engine;
    this.clientId = clientId;
    this.inbox = inbox;
    this.callTimeoutMs = callTimeoutMs;
    this.onClose = onClose;
    this.name = `engine ${engine} on ${subject}`;
    this.pending = new Map(); // msgid -> {resolve, reject, method, timer}
    this.lastMsgid = 0;
    this.connected = true; // to the broker; false between a disconnect and a reconnect
    this.closedBy = null;
    this.sub = null;
    /** What was counted: calls sent, answers taken, answers malformed (the
     * call failed), answers for no call waiting (dropped), calls that met
     * no responder, calls that timed out, calls failed by a lost broker. */
    this.counters = { sent: 0, answered: 0, malformed: 0, stray: 0, noResponders: 0, timedOut: 0, lost: 0 };
  }

  get closed() {
    return this.closedBy !== null;
  }

  /** Subscribes to the inbox and waits for the server to have taken the
   * subscription: a user who may not subscribe there is refused now, not
   * at the first call's deadline. */
  async start() {
    this.sub = this.nc.subscribe(`${this.inbox}.*`, { callback: (err, msg) => this.received(err, msg) });
    await this.nc.flush();
    if (this.closed) throw this.closedBy;
  }

  /** Where the server is, for messages. */
  get server() {
    return this.nc.getServer();
  }

  nextMsgid() {
    return nextFreeMsgid(this);
  }

  /** The headers of every message: the virtual connection's id. */
  headers() {
    return this.makeHeaders([[CLIENT_HEADER, this.clientId]]);
  }

  /** Throws a VigilError (limit_exceeded) when the message would be over
   * the server's max_payload: the server would refuse it, and say so only
   * in its log. */
  checkSize(method, bytes, headers) {
    const max = this.nc.info?.max_payload;
    const size = bytes.length + headers.encode().length;
    if (Number.isInteger(max) && size > max) {
      throw new VigilError(ERROR_CODES.limit_exceeded, `limit_exceeded: ${method}: the request is ${size} bytes ` +
        `(its frame ${bytes.length} and its headers), over the max_payload of the NATS server at ${this.server} ` +
        `(${max}); nothing was sent`, { method });
    }
  }

  /** Why a call cannot be sent now (closed, or the broker is away), or null. */
  unsendable(method) {
    if (this.closed) return this.closedBy;
    if (!this.connected) {
      return new VigilConnectionError(`${method}: not connected to the NATS server at ${this.server} ` +
        `(reconnecting): nothing was sent to ${this.subject}`);
    }
    return null;
  }

  /**
   * Calls method and resolves with its result map, or rejects with a
   * VigilError (the engine's answer, no responder, a malformed answer, a
   * request over max_payload), a VigilConnectionError (the broker lost),
   * a VigilFleetError (the server refused the publish) or, when the
   * deadline passes, a VigilTimeoutError. The deadline is timeoutMs when
   * given, else callTimeoutMs past the call's own wait (ownWaitMs).
   */
  request(method, args, { timeoutMs } = {}) {
    const why = this.unsendable(method);
    if (why !== null) return Promise.reject(why);
    let msgid;
    let bytes;
    let headers;
    try {
      msgid = this.nextMsgid();
      bytes = encodeMessage([0, msgid, method, paramsOf(args)]);
      headers = this.headers();
      this.checkSize(method, bytes, headers);
    } catch (e) {
      return Promise.reject(e);
    }
    const deadline = Math.min(timeoutMs ?? this.callTimeoutMs + ownWaitMs(method, args), TIMER_MAX_MS);
    return new Promise((resolve, reject) => {
      const call = { resolve, reject, method, timer: undefined };
      call.timer = setTimeout(() => {
        this.pending.delete(msgid);
        this.counters.timedOut += 1;
        const how = timeoutMs !== undefined ? 'timeoutMs'
          : `callTimeoutMs ${this.callTimeoutMs} past the call's own wait of ${ownWaitMs(method, args)} ms`;
        reject(new VigilTimeoutError(`${method}: no answer from ${this.name} within ${deadline} ms (${how}); ` +
          'NATS request-reply is at most once: the call may or may not have taken effect'));
      }, deadline);
      this.pending.set(msgid, call);
      try {
        this.nc.publish(this.subject, bytes, { reply: `${this.inbox}.${msgid}`, headers });
        this.counters.sent += 1;
      } catch (e) {
        this.pending.delete(msgid);
        clearTimeout(call.timer);
        reject(new VigilConnectionError(`${method}: cannot send to ${this.subject} on the NATS server at ` +
          `${this.server}: ${e.message}`, { cause: e }));
      }
    });
  }

  /** Sends method as a notification frame: carried out, answered with
   * nothing (a failure is not sent anywhere over NATS). */
  notify(method, args) {
    const why = this.unsendable(method);
    if (why !== null) throw why;
    const bytes = encodeMessage([2, method, paramsOf(args)]);
    const headers = this.headers();
    this.checkSize(method, bytes, headers);
    this.nc.publish(this.subject, bytes, { headers });
    this.counters.sent += 1;
  }

  /** A message on the inbox subscription (or the subscription's error). */
  received(err, msg) {
    if (err) {
      this.subscriptionFailed(err);
      return;
    }
    const token = msg.subject.slice(this.inbox.length + 1);
    const call = /^[1-9][0-9]{0,9}$/.test(token) ? this.pending.get(Number(token)) : undefined;
    if (call === undefined) {
      this.counters.stray += 1; // given up on (its deadline), or nobody's
      return;
    }
    const msgid = Number(token);
    this.pending.delete(msgid);
    clearTimeout(call.timer);
    if (msg.data.length === 0 && msg.headers?.code === 503) {
      this.counters.noResponders += 1;
      call.reject(new VigilError(ERROR_CODES.internal, `internal: no engine answers on ${this.subject} (is a ` +
        `vigild --nats-engine ${this.engine} connected to the NATS server at ${this.server}, and may this user ` +
        'publish there?); nothing was done', { method: call.method }));
      return;
    }
    const read = readAnswer(msg.data, msgid);
    if (read.problem !== undefined) {
      this.counters.malformed += 1;
      call.reject(new VigilError(ERROR_CODES.internal, `internal: ${call.method}: the answer that came to ` +
        `${msg.subject} is not the engine's: ${read.problem} (someone other than engine ${this.engine} answers ` +
        `on ${this.subject}, or publishes into this client's inbox)`, { method: call.method }));
      return;
    }
    this.counters.answered += 1;
    const [, , error, result] = read.frame;
    if (error !== null && error !== undefined) call.reject(VigilError.fromWire(error, call.method));
    else call.resolve(result ?? {});
  }

  /** The inbox's subscription failed (the server refused it: this user may
   * not subscribe there): no answer can come any more. */
  subscriptionFailed(err) {
    const refused = err?.code === 'PERMISSIONS_VIOLATION';
    this.close(new VigilFleetError(`the NATS server at ${this.server} ${refused ? 'refused' : 'ended'} the ` +
      `subscription to ${this.inbox}.*, where the answers come: ${err?.message ?? err}` +
      (refused ? '; give inboxPrefix, a prefix this user may subscribe to (subscribe: "_INBOX_<user>.>", ' +
        'docs/fleet.md section 6)' : ''), { cause: err }));
  }

  /** Every call waiting fails with why (the connection stays). */
  failPending(why) {
    for (const call of this.pending.values()) {
      clearTimeout(call.timer);
      call.reject(why);
    }
    this.pending.clear();
  }

  /** The server refused a publish to the request subject (permissions):
   * every call waiting went there, and none will be answered. */
  publishRefused(words) {
    this.failPending(new VigilFleetError(`the NATS server at ${this.server} refused the request: ${words} ` +
      `(this NATS user may not publish to ${this.subject}: docs/fleet.md section 5)`));
  }

  /** The broker's connection dropped: answers on their way are lost with
   * it, so every call waiting fails now; new calls fail until it is back. */
  disconnected() {
    this.connected = false;
    const n = this.pending.size;
    this.counters.lost += n;
    if (n > 0) {
      this.failPending(new VigilConnectionError(`lost the NATS server at ${this.server} while ${n} call(s) waited ` +
        `for ${this.name}: their answers are lost (NATS request-reply is at most once); the calls may or may ` +
        'not have taken effect'));
    }
  }

  /** The broker's connection is back. */
  reconnected() {
    this.connected = true;
  }

  /** Ends the connection (once): every waiting call is rejected with why,
   * the inbox is unsubscribed (the NATS connection is the owner's). */
  close(why = new VigilConnectionError(`the connection to ${this.name} was closed`)) {
    if (this.closed) return;
    this.closedBy = why;
    this.failPending(why);
    try {
      this.sub?.unsubscribe();
    } catch {
      // the NATS connection is closed already
    }
    this.onClose(why);
  }
}
