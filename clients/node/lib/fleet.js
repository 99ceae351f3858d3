// A gateway's reader of a fleet (docs/fleet.md section 3): the
// notifications of sessions on many engines, read from the NATS JetStream
// stream the engines publish into, handed to the host exactly once.
//
// It binds a durable pull consumer on the stream (creating it when it is
// missing): explicit ack, deliver all, filtered to one engine's or every
// engine's sessions, one session or all. The consumer's ack floor is the
// gateway's place in the stream: a gateway that restarts, or a second one
// binding the same durable, goes on from what was never acked.
//
// JetStream delivers at least once, so the subscriber also keeps, per
// engine and session, the epoch and the last seq the host injected
// (fleetcursor.js), restored by the host from its own records at start:
// a message at or below it is acked and skipped (a duplicate). Each message
// is checked first (fleetwire.js): one that is not a notification of the
// fleet's shape, or whose headers disagree with it, is counted (malformed),
// termed so JetStream does not send it again, and never handed over.
//
// The host takes a notification (next() or `for await`), injects it, then
// calls its ack(): the cursor moves and JetStream is told, and confirms.
//
// In order (docs/fleet.md section 3): JetStream delivers a message whose
// ack never came again after the consumer's ack_wait, behind what it
// delivered since. So only the next seq of an (engine, session) is handed
// over (fleetcursor.js, place()); one further ahead is held back: nak'ed
// with a delay (a quarter of ack_wait, within FLEET_NAK_DELAY_MIN_MS ..
// FLEET_NAK_DELAY_MAX_MS) so that JetStream delivers it again once what
// comes before it has, counted (heldBack). One held back for longer than
// the hold bound (2 * ack_wait + FLEET_HOLD_EXTRA_MS) is taken with the
// gap counted (gaps): what it waited for is no longer coming (the stream's
// max_age took it, or the engine could never publish it). The ack_wait is
// the consumer's own, read when binding it.

import { EventEmitter } from 'node:events';
import { VigilConnectionError, VigilFleetError } from './errors.js';
import { FleetCursor, Verdict } from './fleetcursor.js';
import { ENGINE_NAME, FLEET_PAYLOAD_MAX_BYTES, FLEET_STREAM, fleetSubject, readMessage } from './fleetwire.js';
import {
  authOptions, connectNats, inboxPrefixOption, isUnreachable, loadNats, natsAuth, natsWords,
  serverUrls, stringOption,
} from './natsconnect.js';
import { SESSION_NAME, describe } from './notification.js';

/** How long JetStream waits for an ack before delivering a message again,
 * for a consumer this subscriber creates (JetStream's own default). */
export const FLEET_ACK_WAIT_MS = 30000;

/** How many messages are pulled ahead of the host at most. */
export const FLEET_BATCH = 64;

/** How long ack() waits for the server to confirm an ack. */
export const FLEET_ACK_CONFIRM_MS = 10000;

/** A message ahead of the host is nak'ed with a delay of a quarter of the
 * consumer's ack_wait, within these bounds (ms). */
export const FLEET_NAK_DELAY_MIN_MS = 100;
export const FLEET_NAK_DELAY_MAX_MS = 5000;

/** How long past twice the ack_wait a message ahead is held back at most
 * (ms), by default: what it waits for comes again after one ack_wait. */
export const FLEET_HOLD_EXTRA_MS = 30000;

/** How many held-back messages are remembered (by stream seq) at most; past
 * that the one held first is forgotten (its hold starts again). */
export const FLEET_HELD_MAX = 10000;

/** A stream's or a durable consumer's name: NATS forbids '.', '*', '>' and
 * spaces in them; this keeps to a plain set. */
const NATS_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** JetStream's error codes this subscriber tells apart (err_code). */
const JS_CONSUMER_NOT_FOUND = 10014;
const JS_STREAM_NOT_FOUND = 10059;

/** A checked integer option, or a throw naming it, its bounds and its value. */
function intOption(name, value, min, max) {
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new RangeError(`${name} must be an integer ${min}..${max}, got ${describe(value)}`);
  }
  return value;
}

export class FleetSubscriber extends EventEmitter {
  /**
   * Connects to the NATS server, binds (or creates) the durable consumer,
   * and resolves with the subscriber, ready to be read. Throws a RangeError
   * or TypeError for a bad option (before connecting), a
   * VigilConnectionError when no server can be reached, a VigilFleetError
   * when the server refuses (authentication, permissions, no JetStream, no
   * stream, a durable of another shape).
   * @param {object} options see README.md, section "Fleet"
   */
  static async connect(options) {
    const s = new FleetSubscriber(options);
    await s.start();
    return s;
  }

  /** Checks the options; use FleetSubscriber.connect(). */
  constructor({
    url, user, pass, token, creds, name = 'vigil-fleet-subscriber',
    stream = FLEET_STREAM, durable, engine = '*', session = '*', cursor = [],
    ackWaitMs = FLEET_ACK_WAIT_MS, batch = FLEET_BATCH, maxPayloadBytes = FLEET_PAYLOAD_MAX_BYTES,
    holdMs, natsOptions = {}, inboxPrefix,
  } = {}) {
    super();
    const urls = serverUrls('url', url);
    const auth = natsAuth({ user, pass, token, creds });
    stringOption('name', name);
    if (typeof stream !== 'string' || !NATS_NAME.test(stream)) {
      throw new RangeError(`stream must be a stream name (1..64 of [A-Za-z0-9_-]), got ${describe(stream)}`);
    }
    if (typeof durable !== 'string' || !NATS_NAME.test(durable)) {
      throw new RangeError(`durable must name the gateway's durable consumer (1..64 of [A-Za-z0-9_-]), got ${describe(durable)}`);
    }
    if (engine !== '*' && !(typeof engine === 'string' && ENGINE_NAME.test(engine))) {
      throw new RangeError(`engine must be '*' or an engine name (1..64 of [A-Za-z0-9_-]), got ${describe(engine)}`);
    }
    if (session !== '*' && !(typeof session === 'string' && SESSION_NAME.test(session))) {
      throw new RangeError(`session must be '*' or a session name (1..64 of [A-Za-z0-9._:-]), got ${describe(session)}`);
    }
    if (natsOptions === null || typeof natsOptions !== 'object') {
      throw new TypeError(`natsOptions must be an object of NATS.js connect options, got ${describe(natsOptions)}`);
    }
    this.urls = urls;
    this.auth = auth;
    /** Where the pulled messages come: a user who may read another's
     * inbox could read the sessions it pulls (docs/fleet.md section 5). */
    this.inboxPrefix = inboxPrefixOption(inboxPrefix);
    this.connectionName = name;
    this.stream = stream;
    this.durable = durable;
    /** The filter subject of the consumer. */
    this.subject = fleetSubject(engine, session);
    this.ledger = new FleetCursor(cursor);
    this.ackWaitMs = intOption('ackWaitMs', ackWaitMs, 100, 86400000);
    this.batch = intOption('batch', batch, 1, 1024);
    this.maxPayloadBytes = intOption('maxPayloadBytes', maxPayloadBytes, 1, 64 << 20);
    /** The hold bound asked for, or undefined: 2 * ack_wait + FLEET_HOLD_EXTRA_MS
     * of the consumer bound (holdBound, set by bind()). */
    this.holdMs = holdMs === undefined ? undefined : intOption('holdMs', holdMs, 0, 7 * 86400000);
    this.natsOptions = natsOptions;

    this.delivered = 0;
    this.duplicates = 0;
    this.malformed = 0;
    this.heldBack = 0;
    this.gaps = 0;
    /** Messages held back, by stream seq: when each was first held (ms, monotonic). */
    this.held = new Map();
    /** The consumer's ack_wait (ms), and what follows from it; set by bind(). */
    this.consumerAckWaitMs = this.ackWaitMs;
    this.holdBound = 0;
    this.nakDelayMs = 0;
    /** What was wrong with the last malformed message, or null. */
    this.lastMalformed = null;
    /** True when start() created the durable consumer (false: it bound one). */
    this.created = false;

    this.nc = null;
    this.consumer = null;
    this.messages = null; // the consume() of the consumer, once reading
    this.pump = null; // the generator of checked notifications, once reading
    this.pending = null; // its next() not yet taken by a caller
    this.taking = false; // a next() is under way
    this.closing = false; // the host asked to close
    this.closedBy = null; // why no more notifications will come, once so
  }

  /** Where the server is, for messages. */
  get server() {
    return this.nc?.getServer() ?? this.urls.join(',');
  }

  /** The counters: notifications handed to the host, duplicates skipped,
   * malformed messages refused, deliveries held back (ahead of the host),
   * notifications taken past the hold bound with a gap before them. */
  get counters() {
    return {
      delivered: this.delivered, duplicates: this.duplicates, malformed: this.malformed,
      heldBack: this.heldBack, gaps: this.gaps,
    };
  }

  /** Where the host is, per (engine, session): store it with what was
   * injected; pass it back as `cursor` after a restart. */
  cursor() {
    return this.ledger.entries();
  }

  /** Connects and binds the consumer. */
  async start() {
    const nats = await loadNats();
    const opts = {
      servers: this.urls,
      name: this.connectionName,
      maxReconnectAttempts: -1,
      ...(this.inboxPrefix === undefined ? {} : { inboxPrefix: this.inboxPrefix }),
      ...this.natsOptions,
      ...authOptions(nats, this.auth),
    };
    this.nc = await connectNats(nats, opts, this.urls);
    this.watchConnection();
    try {
      await this.bind();
    } catch (e) {
      await this.nc.close().catch(() => {});
      this.closedBy = e;
      throw e;
    }
  }

  /** Turns a failed step of start() into the error a host can act on. */
  refusal(step, e) {
    const where = `the NATS server at ${this.server}`;
    if (e instanceof VigilFleetError) return e;
    if (isUnreachable(e)) return new VigilConnectionError(`${step}: no answer from ${where}: ${natsWords(e)}`, { cause: e });
    if (e?.api_error?.err_code === JS_STREAM_NOT_FOUND) {
      return new VigilFleetError(`${step}: ${where} has no stream ${this.stream}; engines create it when they ` +
        'start (docs/fleet.md): start one, or give the stream the engines use (nats.stream)', { cause: e });
    }
    if (e?.code === '503' || /jetstream not enabled/i.test(natsWords(e))) {
      return new VigilFleetError(`${step}: ${where} has no JetStream (nats-server -js), or not for this account: ${natsWords(e)}`, { cause: e });
    }
    return new VigilFleetError(`${step}: ${where} refused: ${natsWords(e)}`, { cause: e });
  }

  /** Binds the durable consumer, creating it when it is missing, and checks
   * that one already there is one this subscriber can read right. */
  async bind() {
    const { AckPolicy, DeliverPolicy, nanos } = await loadNats();
    const step = `durable consumer ${this.durable} on stream ${this.stream} (filter ${this.subject})`;
    let jsm;
    try {
      jsm = await this.nc.jetstreamManager();
    } catch (e) {
      throw this.refusal(`JetStream, for ${step}`, e);
    }
    let info = null;
    try {
      info = await jsm.consumers.info(this.stream, this.durable);
    } catch (e) {
      if (e?.api_error?.err_code !== JS_CONSUMER_NOT_FOUND) throw this.refusal(`looking up ${step}`, e);
    }
    if (info === null) {
      try {
        info = await jsm.consumers.add(this.stream, {
          durable_name: this.durable,
          ack_policy: AckPolicy.Explicit,
          deliver_policy: DeliverPolicy.All,
          filter_subject: this.subject,
          ack_wait: nanos(this.ackWaitMs),
        });
        this.created = true;
      } catch (e) {
        throw this.refusal(`creating ${step}`, e);
      }
    }
    const c = info.config;
    this.setAckWait(c.ack_wait);
    const shape = c.deliver_subject ? 'is a push consumer (it has a deliver subject), not a pull one'
      : c.ack_policy !== AckPolicy.Explicit ? `acks ${c.ack_policy}, not explicit`
        : (c.filter_subject ?? '') !== this.subject ? `filters ${describe(c.filter_subject ?? '')}, not ${this.subject}`
          : null;
    if (shape !== null) {
      throw new VigilFleetError(`${step}: the consumer on the NATS server at ${this.server} ${shape}; ` +
        'give another durable name, or delete that consumer');
    }
    try {
      this.consumer = await this.nc.jetstream().consumers.get(this.stream, this.durable);
    } catch (e) {
      throw this.refusal(`binding ${step}`, e);
    }
  }

  /** Takes the consumer's ack_wait (ns; JetStream's default of 30 s when it
   * says none) as the base of the nak delay and the hold bound. */
  setAckWait(ackWaitNs) {
    const ms = Number.isSafeInteger(ackWaitNs) && ackWaitNs > 0 ? Math.ceil(ackWaitNs / 1e6) : FLEET_ACK_WAIT_MS;
    this.consumerAckWaitMs = ms;
    this.nakDelayMs = Math.min(Math.max(Math.round(ms / 4), FLEET_NAK_DELAY_MIN_MS), FLEET_NAK_DELAY_MAX_MS);
    this.holdBound = this.holdMs ?? 2 * ms + FLEET_HOLD_EXTRA_MS;
  }

  /** Passes the connection's changes on as 'status' events, and notices
   * when it is closed for good. */
  watchConnection() {
    const nc = this.nc;
    (async () => {
      for await (const s of nc.status()) this.emit('status', { type: s.type, data: s.data });
    })().catch(() => {});
    nc.closed().then((err) => {
      if (this.closedBy === null && !this.closing) {
        this.closedBy = new VigilConnectionError(`lost the NATS server at ${this.server}` +
          (err ? `: ${natsWords(err)}` : ''), { cause: err ?? undefined });
      }
      this.messages?.stop();
    });
  }

  /** The checked notifications of the consumer, as they come; ends when the
   * subscriber is closed, throws when the connection is lost for good. */
  async* checkedNotifications() {
    let messages;
    try {
      messages = await this.consumer.consume({ max_messages: this.batch });
    } catch (e) {
      throw this.refusal(`reading durable consumer ${this.durable} on stream ${this.stream}`, e);
    }
    this.messages = messages;
    if (this.closing || this.closedBy !== null) messages.stop();
    (async () => {
      for await (const s of await messages.status()) this.emit('status', { type: s.type, data: s.data });
    })().catch(() => {});
    for await (const m of messages) {
      const n = this.admit(m);
      if (n !== null) yield n;
    }
    // The messages end before the connection says why: wait for its word.
    if (!this.closing && this.nc.isClosed()) await this.nc.closed();
    throw this.closedBy ?? new VigilConnectionError(`the durable consumer ${this.durable} stopped delivering`);
  }

  /** A message of the consumer: the notification to hand over, or null
   * when it was a duplicate (acked) or malformed (termed), counted. */
  admit(m) {
    const read = readMessage({ subject: m.subject, headers: m.headers, data: m.data }, this.maxPayloadBytes);
    if (read.problem !== undefined) {
      this.malformed += 1;
      this.lastMalformed = `stream seq ${m.seq} on ${describe(m.subject)}: ${read.problem}`;
      m.term();
      this.emit('malformed', { problem: read.problem, subject: m.subject, streamSeq: m.seq });
      return null;
    }
    const { engine, notification: n } = read;
    const where = { engine, session: n.session, epoch: n.epoch, seq: n.seq, streamSeq: m.seq };
    const place = this.ledger.place(engine, n.session, n.epoch, n.seq, { type: n.type, fromSeq: n.from_seq });
    if (place === Verdict.duplicate) {
      this.held.delete(m.seq);
      this.duplicates += 1;
      m.ack();
      this.emit('duplicate', where);
      return null;
    }
    if (place === Verdict.ahead) {
      const heldMs = this.holdBack(m);
      if (heldMs === null) {
        this.heldBack += 1;
        this.emit('held', where);
        return null;
      }
      this.gaps += 1;
      this.emit('gap', { ...where, heldMs });
    }
    this.held.delete(m.seq);
    this.ledger.hand(engine, n.session, n.epoch, n.seq);
    this.delivered += 1;
    return this.handOver(engine, n, m);
  }

  /** m is ahead of the host: null when it is held back (nak'ed with a
   * delay, so JetStream delivers it again later); how long it was held (ms)
   * when that passed the hold bound, and it is to be taken with the gap
   * counted. */
  holdBack(m) {
    const now = performance.now();
    let first = this.held.get(m.seq);
    if (first === undefined) {
      first = now;
      this.held.set(m.seq, now);
      // Bounded: the one held first is forgotten (on its next delivery its
      // hold starts again).
      if (this.held.size > FLEET_HELD_MAX) this.held.delete(this.held.keys().next().value);
    }
    if (now - first >= this.holdBound) {
      this.held.delete(m.seq);
      return Math.round(now - first);
    }
    m.nak(this.nakDelayMs);
    return null;
  }

  /** n with what the host needs past the protocol's keys, not enumerable
   * (so n still reads as the protocol's map): engine, streamSeq,
   * redeliveries, ack() and nak(). */
  handOver(engine, n, m) {
    let acked = false;
    const ack = async () => {
      if (acked) return;
      acked = true;
      this.ledger.advance(engine, n.session, n.epoch, n.seq);
      try {
        await m.ackAck({ timeout: FLEET_ACK_CONFIRM_MS });
      } catch (e) {
        throw new VigilConnectionError(`the ack of ${engine} ${n.session} seq ${n.seq} was not confirmed by the ` +
          `NATS server at ${this.server} (${natsWords(e)}): JetStream will deliver it again, and this subscriber ` +
          'will skip it as a duplicate', { cause: e });
      }
    };
    const nak = (delayMs) => {
      if (acked) return;
      if (delayMs !== undefined) intOption('delayMs', delayMs, 0, 86400000);
      acked = true;
      m.nak(delayMs);
    };
    return Object.defineProperties(n, {
      engine: { value: engine },
      streamSeq: { value: m.seq },
      redeliveries: { value: m.info.redeliveryCount - 1 },
      ack: { value: ack },
      nak: { value: nak },
    });
  }

  /**
   * The next notification, or null when timeoutMs passes first (without
   * timeoutMs: waits). Rejects with a VigilConnectionError once the
   * subscriber is closed or has lost the server for good. One at a time.
   * @param {{timeoutMs?: number}} [options]
   */
  async next({ timeoutMs } = {}) {
    if (timeoutMs !== undefined && !(Number.isFinite(timeoutMs) && timeoutMs >= 0)) {
      throw new RangeError(`timeoutMs must be a number of milliseconds, 0 or more, got ${describe(timeoutMs)}`);
    }
    if (this.taking) throw new Error('next() is already waiting: take notifications one at a time');
    if (this.closing) throw this.closedBy ?? new VigilConnectionError('the subscriber is closed');
    this.taking = true;
    try {
      this.pump ??= this.checkedNotifications();
      // A next() that timed out leaves its pending result for the next call.
      this.pending ??= this.pump.next().then((r) => ({ r }), (e) => ({ e }));
      let timer;
      const timedOut = new Promise((resolve) => {
        if (timeoutMs !== undefined) timer = setTimeout(() => resolve(null), timeoutMs);
      });
      const got = await Promise.race([this.pending, timedOut]);
      clearTimeout(timer);
      if (got === null) return null;
      this.pending = null;
      if (got.e !== undefined) throw got.e;
      if (got.r.done) throw this.closedBy ?? new VigilConnectionError('the subscriber is closed');
      return got.r.value;
    } finally {
      this.taking = false;
    }
  }

  /** The notifications as they come, for `for await`; ends when the host
   * closes the subscriber, throws the VigilConnectionError when the server
   * is lost for good. */
  async* notifications() {
    for (;;) {
      let n;
      try {
        n = await this.next();
      } catch (e) {
        if (this.closing) return;
        throw e;
      }
      yield n;
    }
  }

  [Symbol.asyncIterator]() {
    return this.notifications();
  }

  /** Closes the connection. What was handed over and not acked is delivered
   * again (to this durable's next reader) once the ack wait passes; the
   * durable consumer stays on the server. */
  async close() {
    if (this.closing) return;
    this.closing = true;
    this.closedBy ??= new VigilConnectionError('the subscriber is closed');
    this.messages?.stop();
    await this.nc?.close();
  }
}
