// A host's handle on one engine: the protocol's methods as async methods,
// the engine's notifications as objects, and named sessions that resume
// exactly where the host left off.
//
// A Client talks over one connection at a time. Client.connect() makes one
// to an engine's Unix socket; Engine.spawn() (engine.js) starts an engine of
// its own and talks over its stdin and stdout; Client.connectNats()
// (natsclient.js) reaches a remote engine through NATS. Notifications reach the host
// one of two ways, chosen by the host: 'notification' listeners, when it
// has any, get each as it arrives; otherwise they wait in a bounded inbox
// for wait() and `for await`. Either way a notification is handed over
// once, and handing it over advances its session's cursor (session.js).
//
// A lost socket connection ends the client ('close' with the reason) unless
// it was made with `autoReconnect`: then the client connects again (the
// engine may be restarting: SIGUSR2 closes every connection and keeps the
// socket), re-opens every session it had open with last_seq set to what it
// has received, and goes on; calls made meanwhile wait for it.

import { EventEmitter } from 'node:events';
import { setTimeout as delay } from 'node:timers/promises';
import { RpcConnection } from './connection.js';
import { VigilConnectionError } from './errors.js';
import { INBOX_MAX, Inbox } from './inbox.js';
import { installMethods } from './methods.js';
import { Session } from './session.js';
import { connectSocket, defaultSocketPath } from './socket.js';

/** The largest last_seq the engine takes (2^53 - 1, docs/protocol.md section 3). */
export const LAST_SEQ_MAX = Number.MAX_SAFE_INTEGER;

/** How long autoReconnect keeps trying by default. */
export const RECONNECT_TIMEOUT_MS = 30000;

/** The pause between two attempts to reconnect: a restarting engine takes
 * some tens of milliseconds to listen again. */
const RECONNECT_RETRY_MS = 100;

function checkTimeout(name, value) {
  if (value !== undefined && !(Number.isFinite(value) && value >= 0)) {
    throw new RangeError(`${name} must be a number of milliseconds, 0 or more, got ${value}`);
  }
}

export class Client extends EventEmitter {
  /** Use Client.connect() or Engine.spawn(). */
  constructor({ socketPath = null, inboxMax = INBOX_MAX, autoReconnect = false,
    reconnectTimeoutMs = RECONNECT_TIMEOUT_MS } = {}) {
    super();
    checkTimeout('reconnectTimeoutMs', reconnectTimeoutMs);
    this.socketPath = socketPath;
    this.autoReconnect = autoReconnect;
    this.reconnectTimeoutMs = reconnectTimeoutMs;
    this.inbox = new Inbox(inboxMax, (n) => this.taken(n));
    this.sessions = new Map(); // name -> Session, in the order opened
    this.conn = null;
    this.socket = null;
    this.reconnecting = null; // the reconnection under way
    this.closing = false; // the host asked to close
    this.closedBy = null; // set once closed for good
  }

  /**
   * Connects to the engine listening at socketPath (default: the engine's
   * default socket, docs/protocol.md 2.2).
   * @param {string} [socketPath]
   * @param {{autoReconnect?: boolean, reconnectTimeoutMs?: number, inboxMax?: number}} [options]
   */
  static async connect(socketPath = defaultSocketPath(), options = {}) {
    const client = new Client({ ...options, socketPath });
    client.attachSocket(await connectSocket(socketPath));
    return client;
  }

  /**
   * Connects to a remote engine through NATS (docs/fleet.md section 6):
   * every method as over the socket, its notifications read from JetStream
   * with a FleetSubscriber instead. See NatsClient (natsclient.js) and
   * README.md, "Remote engines".
   * @param {object} options {servers, engine, session, clientId, inboxPrefix,
   *   user, pass, token, creds, callTimeoutMs, name, natsOptions}
   * @returns {Promise<import('./natsclient.js').NatsClient>}
   */
  static async connectNats(options) {
    // Loaded here: natsclient.js extends this class.
    const { NatsClient } = await import('./natsclient.js');
    return NatsClient.connect(options);
  }

  /** Talks over a connected socket from now on. */
  attachSocket(socket) {
    this.socket = socket;
    this.attach(socket, socket, `the engine at ${this.socketPath}`);
  }

  /** Talks over these streams from now on. */
  attach(readable, writable, name) {
    const conn = new RpcConnection({
      readable,
      writable,
      name,
      onNotification: (n) => this.received(n),
      onEngineError: (e) => this.emit('engineError', e),
      onClose: (why) => this.lost(conn, why),
    });
    this.conn = conn;
  }

  /** True once the client is closed for good. */
  get closed() {
    return this.closedBy !== null;
  }

  /** How many notifications the inbox dropped for room (inboxMax). */
  get inboxDropped() {
    return this.inbox.dropped;
  }

  /**
   * Calls a protocol method by its protocol name with its arguments (as on
   * the wire: `{monitor_id, timeout_ms}`), and resolves with the result map.
   * Rejects with a VigilError carrying the protocol's code when the engine
   * refuses, a VigilConnectionError when there is no engine, and a
   * VigilTimeoutError when options.timeoutMs passes first.
   */
  async call(method, args = {}, { timeoutMs } = {}) {
    checkTimeout('timeoutMs', timeoutMs);
    if (this.reconnecting) await this.reconnecting;
    if (this.closed) throw this.closedBy;
    return this.conn.request(method, args, { timeoutMs });
  }

  /** Sends a method as a notification: no answer; if it fails the engine
   * says so with a vigil.error notification ('engineError'). */
  notify(method, args = {}) {
    if (this.closed) throw this.closedBy;
    this.conn.notify(method, args);
  }

  /**
   * Opens (or creates) the named session and makes it this connection's
   * current one. With lastSeq (the last seq the host handled, stored by the
   * host across its restarts), the engine first sends every notification
   * after it that it still keeps, then what is new; and says what it lost.
   * Without a name the engine makes one (`ses_...`).
   * @param {string} [name]
   * @param {{lastSeq?: number, lingerMs?: number, timeoutMs?: number}} [options]
   * @returns {Promise<Session>}
   */
  async session(name, { lastSeq = 0, lingerMs, timeoutMs } = {}) {
    if (!Number.isInteger(lastSeq) || lastSeq < 0 || lastSeq > LAST_SEQ_MAX) {
      throw new RangeError(`lastSeq must be an integer 0..${LAST_SEQ_MAX}, got ${lastSeq}`);
    }
    const known = name === undefined ? undefined : this.sessions.get(name);
    if (known !== undefined) {
      // Already open here: the engine would ignore a last_seq; make it current.
      known.opened(await this.call('session_open', { session: name, linger_ms: lingerMs }, { timeoutMs }));
      return known;
    }
    const s = new Session(this, { name: name ?? null, lastSeq, lingerMs });
    // Known before the answer: a resume's notifications come before it.
    if (name !== undefined) this.sessions.set(name, s);
    try {
      s.opened(await this.call('session_open', s.openArgs(), { timeoutMs }));
    } catch (e) {
      if (name !== undefined) this.sessions.delete(name);
      throw e;
    }
    this.sessions.set(s.name, s);
    return s;
  }

  /** Stops resuming s on reconnect (it was closed). */
  forgetSession(s) {
    if (this.sessions.get(s.name) === s) this.sessions.delete(s.name);
  }

  /**
   * The next notification (of one session, and accepted by filter, when
   * given), or null when timeoutMs passes first. Without timeoutMs it waits
   * as long as the client is open; it rejects with a VigilConnectionError
   * when the client closes.
   * @param {{timeoutMs?: number, session?: string, filter?: (n: object) => boolean}} [options]
   */
  wait({ timeoutMs, session, filter } = {}) {
    checkTimeout('timeoutMs', timeoutMs);
    const pred = (n) => (session === undefined || n.session === session) && (filter === undefined || filter(n));
    return this.inbox.wait(pred, timeoutMs);
  }

  /**
   * The notifications as they come (of one session, when given), for
   * `for await`. Ends when the host closes the client; throws the
   * VigilConnectionError when the engine goes away.
   */
  async* notifications({ session, filter } = {}) {
    for (;;) {
      let n;
      try {
        n = await this.wait({ session, filter });
      } catch (e) {
        if (this.closing) return;
        throw e;
      }
      yield n;
    }
  }

  [Symbol.asyncIterator]() {
    return this.notifications()[Symbol.asyncIterator]();
  }

  /** A notification arrived on the connection. */
  received(n) {
    const s = this.sessions.get(n.session);
    if (s !== undefined && typeof n.seq === 'number') {
      if (n.seq <= s.receivedSeq) return; // already had it (a resume overlapping what came before)
      s.receivedSeq = n.seq;
    }
    if (this.listenerCount('notification') > 0) {
      this.taken(n);
      this.emit('notification', n);
    } else if (this.inbox.push(n)) {
      this.emit('inboxOverflow', this.inbox.dropped);
    }
  }

  /** A notification was handed to the host: its session's cursor moves. */
  taken(n) {
    const s = this.sessions.get(n.session);
    if (s !== undefined && typeof n.seq === 'number' && n.seq > s.lastSeq) s.lastSeq = n.seq;
  }

  /** conn ended, for why. */
  lost(conn, why) {
    if (conn !== this.conn || this.closed) return; // an old one, or already handled
    if (this.reconnecting) return; // a reconnection under way sees its own failure and tries again
    if (this.closing || !this.autoReconnect || this.socketPath === null) {
      this.finish(this.closing ? null : why);
      return;
    }
    this.emit('disconnect', why);
    this.reconnecting = this.reconnect(why).then(
      () => { this.reconnecting = null; this.emit('reconnect'); },
      (e) => { this.reconnecting = null; this.finish(e); },
    );
  }

  /** Connects again and re-opens every session, resuming from what was
   * received; tries again (a restarting engine may accept and then go)
   * until reconnectTimeoutMs has passed. */
  async reconnect(why) {
    const deadline = Date.now() + this.reconnectTimeoutMs;
    for (;;) {
      try {
        const socket = await connectSocket(this.socketPath);
        if (this.closing) {
          socket.destroy();
          break;
        }
        this.attachSocket(socket);
        for (const s of [...this.sessions.values()]) {
          s.opened(await this.conn.request('session_open', s.openArgs()));
        }
        return;
      } catch (e) {
        // The engine refused to re-open a session: trying again will not help.
        if (!(e instanceof VigilConnectionError)) throw e;
        if (this.closing) break;
        if (Date.now() >= deadline) {
          throw new VigilConnectionError(`lost the engine at ${this.socketPath} (${why.message}) and could ` +
            `not reconnect within reconnectTimeoutMs (${this.reconnectTimeoutMs} ms): ${e.message}`, { cause: e });
        }
        await delay(RECONNECT_RETRY_MS);
      }
    }
    throw new VigilConnectionError('the client was closed while reconnecting');
  }

  /** Closed for good: why is null when the host closed it. */
  finish(why) {
    if (this.closed) return;
    this.closedBy = why ?? new VigilConnectionError('the client is closed');
    this.inbox.close(why);
    this.emit('close', why);
  }

  /** Closes the connection; calls still waiting are rejected, and `for
   * await` loops end. The engine keeps named sessions (and their monitors)
   * for their linger time, so a later client can resume them. */
  async close() {
    if (this.closed) return;
    this.closing = true;
    this.conn?.close(new VigilConnectionError('the client was closed'));
    this.socket?.destroy();
    this.finish(null);
  }
}

installMethods(Client.prototype);
