// A Client of a remote engine, reached through NATS instead of its socket
// (docs/fleet.md section 6): `vigild --nats URL --nats-engine NAME` answers
// msgpack-rpc frames by request-reply on `vigil.<engine>.rpc`, and on
// `vigil.<engine>.<session token>.rpc` for that session alone. Every
// method of a Client works as over the socket, sessions included
// (natsrpc.js carries the frames).
//
// What differs, and why:
// - Notifications do not come this way: the engine drops what it would
//   push to a requester's virtual connection, since a fleet reads them from
//   JetStream, exactly once, with a FleetSubscriber (fleet.js). So wait()
//   and `for await` fail at once, saying so, instead of waiting for ever.
// - The engine keeps one virtual connection per requester (the
//   Vigil-Client header, stable for the life of this client), and closes
//   it after nats.client_idle_ms without a call: its anonymous session ends
//   (its monitors stop) and the named sessions it opened are no longer open
//   to it. A call on such a session is refused not_found; the client then
//   opens the session again (as a socket client re-opens its sessions when
//   it reconnects) and makes the call once more: refused, it changed
//   nothing ('sessionReopened' event).
// - The broker may go away and come back; NATS.js reconnects by itself. A
//   call waiting when it goes fails at once (its answer is lost: NATS
//   request-reply is at most once), a call made while it is away fails at
//   once, and calls work again once it is back ('disconnect' and
//   'reconnect' events). The client closes only when the host closes it or
//   the NATS connection closes for good.

import crypto from 'node:crypto';
import { Client } from './client.js';
import { ERROR_CODES, VigilConnectionError, VigilError } from './errors.js';
import { ENGINE_NAME, rpcSubject } from './fleetwire.js';
import {
  authOptions, connectNats, inboxPrefixOption, loadNats, natsAuth, natsWords, serverUrls,
  stringOption,
} from './natsconnect.js';
import { CALL_TIMEOUT_MS, NatsRpcConnection } from './natsrpc.js';
import { SESSION_NAME, describe } from './notification.js';

/** A Vigil-Client id (docs/fleet.md section 6): 1..64 of A-Z a-z 0-9 _ - : . */
export const CLIENT_ID = /^[A-Za-z0-9_:.-]{1,64}$/;

/** The words of the error wait() and `for await` fail with. */
const NO_NOTIFICATIONS = 'notifications of a remote engine do not come over NATS requests (the engine ' +
  'drops those of a virtual connection): read them from JetStream with a FleetSubscriber ' +
  '(docs/fleet.md section 3)';

/** The message of the engine's refusal of a session this connection has
 * not opened (core/engine/seat.c), for the session name. */
function notOpenHere(name) {
  return `session: no session "${name}" is open on this connection`;
}

export class NatsClient extends Client {
  /**
   * Connects to the NATS server and subscribes to this client's inbox.
   * Resolves without asking the engine anything: an engine that is not
   * there is said by the first call (no responders). Throws a RangeError
   * or TypeError for a bad option (before connecting), a
   * VigilConnectionError when no server can be reached, a VigilFleetError
   * when the server refuses (authentication, the inbox's subscription).
   * @param {object} options see README.md, "Remote engines"
   */
  static async connect(options) {
    const client = new NatsClient(options);
    await client.start();
    return client;
  }

  /** Checks the options; use NatsClient.connect() or Client.connectNats(). */
  constructor({
    servers, url, engine, session, clientId, inboxPrefix, user, pass, token, creds,
    callTimeoutMs = CALL_TIMEOUT_MS, name = 'vigil-client', natsOptions = {},
  } = {}) {
    super({});
    if (servers !== undefined && url !== undefined) throw new TypeError('give servers or url, not both');
    this.urls = serverUrls(servers !== undefined ? 'servers' : 'url', servers ?? url);
    this.auth = natsAuth({ user, pass, token, creds });
    stringOption('name', name);
    if (typeof engine !== 'string' || !ENGINE_NAME.test(engine)) {
      throw new RangeError(`engine must name the engine (its --nats-engine: 1..64 of [A-Za-z0-9_-]), got ${describe(engine)}`);
    }
    if (session !== undefined && !(typeof session === 'string' && SESSION_NAME.test(session))) {
      throw new RangeError(`session must be a session name (1..64 of [A-Za-z0-9._:-]), got ${describe(session)}`);
    }
    if (clientId !== undefined && !(typeof clientId === 'string' && CLIENT_ID.test(clientId))) {
      throw new RangeError(`clientId must be 1..64 of [A-Za-z0-9_:.-] (the Vigil-Client header), got ${describe(clientId)}`);
    }
    inboxPrefixOption(inboxPrefix);
    if (!Number.isSafeInteger(callTimeoutMs) || callTimeoutMs < 1 || callTimeoutMs > 86400000) {
      throw new RangeError(`callTimeoutMs must be an integer 1..86400000 (ms), got ${describe(callTimeoutMs)}`);
    }
    if (natsOptions === null || typeof natsOptions !== 'object') {
      throw new TypeError(`natsOptions must be an object of NATS.js connect options, got ${describe(natsOptions)}`);
    }
    this.engine = engine;
    /** The session this client is limited to (its subject's), or null. */
    this.scope = session ?? null;
    /** Where the requests go. */
    this.subject = rpcSubject(engine, session);
    /** This client's Vigil-Client id: the engine's virtual connection is one per id. */
    this.clientId = clientId ?? `vigil-node-${process.pid}-${crypto.randomBytes(6).toString('hex')}`;
    this.inboxPrefix = inboxPrefix;
    this.callTimeoutMs = callTimeoutMs;
    this.connectionName = name;
    this.natsOptions = natsOptions;
    this.nc = null;
    /** Sessions opened again after the engine closed this client's idle virtual connection. */
    this.sessionsReopened = 0;
  }

  /** Where the server is, for messages. */
  get server() {
    return this.nc?.getServer() ?? this.urls.join(',');
  }

  /** What the transport counted (natsrpc.js): sent, answered, malformed,
   * stray, noResponders, timedOut, lost; and sessionsReopened. */
  get counters() {
    return { ...(this.conn?.counters ?? {}), sessionsReopened: this.sessionsReopened };
  }

  /** Connects, subscribes to the inbox, and watches the connection. */
  async start() {
    const nats = await loadNats();
    const opts = {
      servers: this.urls,
      name: this.connectionName,
      maxReconnectAttempts: -1,
      ...this.natsOptions,
      ...authOptions(nats, this.auth),
    };
    this.nc = await connectNats(nats, opts, this.urls);
    const conn = new NatsRpcConnection({
      nc: this.nc,
      makeHeaders: (entries) => {
        const h = nats.headers();
        for (const [k, v] of entries) h.set(k, v);
        return h;
      },
      subject: this.subject,
      engine: this.engine,
      clientId: this.clientId,
      inbox: nats.createInbox(this.inboxPrefix),
      callTimeoutMs: this.callTimeoutMs,
      onClose: (why) => this.lost(conn, why),
    });
    this.conn = conn;
    this.watchConnection();
    try {
      await conn.start();
    } catch (e) {
      await this.close();
      throw e;
    }
  }

  /** Passes the broker's connection changes on to the transport and as
   * events; notices when it is closed for good. */
  watchConnection() {
    const nc = this.nc;
    (async () => {
      for await (const s of nc.status()) {
        if (s.type === 'disconnect') {
          this.conn.disconnected();
          this.emit('disconnect', new VigilConnectionError(`lost the NATS server at ${s.data}`));
        } else if (s.type === 'reconnect') {
          this.conn.reconnected();
          this.emit('reconnect');
        } else if (s.type === 'error' && s.permissionContext?.operation === 'publish' &&
            s.permissionContext.subject === this.subject) {
          this.conn.publishRefused(`Permissions Violation for Publish to "${this.subject}"`);
        }
      }
    })().catch(() => {});
    nc.closed().then((err) => {
      this.conn?.close(new VigilConnectionError(`lost the NATS server at ${this.server} for good` +
        (err ? `: ${natsWords(err)}` : ''), { cause: err ?? undefined }));
    });
  }

  /**
   * Calls a protocol method (as Client.call). A call on a named session
   * this client opened, refused because the engine closed the client's
   * idle virtual connection, opens the session again and is made once
   * more.
   */
  async call(method, args = {}, options = {}) {
    try {
      return await super.call(method, args, options);
    } catch (e) {
      const s = this.reopenable(e, method, args);
      if (s === null) throw e;
      s.opened(await super.call('session_open', s.openArgs(), options));
      this.sessionsReopened += 1;
      this.emit('sessionReopened', s.name);
      return super.call(method, args, options);
    }
  }

  /** The Session to open again before making the call once more, when e is
   * the engine's refusal of a session this client opened and the engine's
   * virtual connection no longer has; else null. */
  reopenable(e, method, args) {
    if (!(e instanceof VigilError) || e.code !== ERROR_CODES.not_found || method === 'session_open') return null;
    const name = args?.session;
    if (typeof name !== 'string' || !e.message.includes(notOpenHere(name))) return null;
    return this.sessions.get(name) ?? null;
  }

  /** Rejects at once: notifications come through a FleetSubscriber. */
  wait() {
    return Promise.reject(new Error(NO_NOTIFICATIONS));
  }

  /** Ends the client: calls still waiting are rejected, and the NATS
   * connection is closed. The engine closes this client's virtual
   * connection once it has been idle for nats.client_idle_ms (its
   * anonymous session then ends; named ones linger). */
  async close() {
    await super.close();
    await this.nc?.close().catch(() => {});
  }
}
