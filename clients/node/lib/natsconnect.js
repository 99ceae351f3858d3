// What the client's two users of NATS share: the FleetSubscriber
// (fleet.js), which reads a fleet's notifications from JetStream, and the
// NatsClient (natsclient.js), which sends an engine its requests through
// the broker. Both load NATS.js only when first used (a host that talks to
// an engine's socket alone does not need it installed), take the same
// credentials (user and pass, a token, or a .creds file), and tell a
// server that could not be reached from one that refused, in the same
// words.

import fs from 'node:fs';
import { VigilConnectionError, VigilFleetError } from './errors.js';
import { describe } from './notification.js';

/** NATS.js, loaded at the first connect. */
let natsModule = null;

/** The NATS.js module; a VigilFleetError saying how to install it when it
 * is missing. */
export async function loadNats() {
  if (natsModule === null) {
    try {
      natsModule = await import('nats');
    } catch (e) {
      throw new VigilFleetError('the npm package nats (NATS.js) is not installed beside vigil-client: ' +
        'run npm install (in a checkout: scripts/install-deps.sh, which runs npm ci in clients/node)', { cause: e });
    }
  }
  return natsModule;
}

/** The NATS client's words for an error, with the JetStream API's when it gave them. */
export function natsWords(e) {
  const api = e?.api_error;
  if (api?.description) return `${api.description} (JetStream error ${api.err_code})`;
  return e?.message ?? String(e);
}

/** True for NATS client errors that mean no server was there to answer. */
export function isUnreachable(e) {
  return ['CONNECTION_REFUSED', 'CONNECTION_TIMEOUT', 'CONNECTION_CLOSED', 'CONNECTION_DRAINING',
    'DISCONNECT', 'TIMEOUT'].includes(e?.code);
}

/**
 * nats.connect(opts), its failure said as vigil says it: a
 * VigilConnectionError when no server of urls could be reached, a
 * VigilFleetError when one refused (authentication, permissions).
 */
export async function connectNats(nats, opts, urls) {
  try {
    return await nats.connect(opts);
  } catch (e) {
    const where = `the NATS server at ${urls.join(', ')}`;
    if (isUnreachable(e)) throw new VigilConnectionError(`cannot reach ${where}: ${natsWords(e)}`, { cause: e });
    throw new VigilFleetError(`${where} refused the connection: ${natsWords(e)}`, { cause: e });
  }
}

/** An inbox prefix: dot-separated tokens, no wildcard. */
const INBOX_PREFIX = /^[A-Za-z0-9_$:-]+(\.[A-Za-z0-9_$:-]+)*$/;
const INBOX_PREFIX_MAX = 128;

/**
 * The checked inboxPrefix option (undefined allowed: NATS.js's `_INBOX`),
 * or a RangeError naming it. Answers and pulled messages come under it, so
 * a user whose permissions give it `_INBOX_<user>.>` alone passes
 * `_INBOX_<user>` (docs/fleet.md sections 5 and 6).
 */
export function inboxPrefixOption(value) {
  if (value !== undefined && !(typeof value === 'string' && value.length <= INBOX_PREFIX_MAX &&
      INBOX_PREFIX.test(value))) {
    throw new RangeError(`inboxPrefix must be 1..${INBOX_PREFIX_MAX} characters of dot-separated tokens of ` +
      `[A-Za-z0-9_$:-] (no wildcard), got ${describe(value)}`);
  }
  return value;
}

/** A checked string option (undefined allowed), or a TypeError naming it. */
export function stringOption(name, value) {
  if (value !== undefined && typeof value !== 'string') {
    throw new TypeError(`${name} must be a string, got ${describe(value)}`);
  }
  return value;
}

/** The checked server URLs: one URL or an array of them (a cluster). */
export function serverUrls(name, value) {
  const urls = Array.isArray(value) ? value : [value];
  if (urls.length === 0 || !urls.every((u) => typeof u === 'string' && u.length > 0)) {
    throw new TypeError(`${name} must be a NATS server's URL (nats://host:port) or an array of them, got ${describe(value)}`);
  }
  return urls;
}

/** The checked credentials: at most one way of user (with pass), token or
 * creds (a .creds file's path). Throws a TypeError naming what is wrong. */
export function natsAuth({ user, pass, token, creds }) {
  stringOption('user', user);
  stringOption('pass', pass);
  stringOption('token', token);
  stringOption('creds', creds);
  if (pass !== undefined && user === undefined) throw new TypeError('pass is given without user');
  const ways = [user, token, creds].filter((v) => v !== undefined).length;
  if (ways > 1) throw new TypeError('give one of user (with pass), token or creds, not several');
  return { user, pass, token, creds };
}

/** The NATS.js connect options that present auth (checked by natsAuth). A
 * creds file that cannot be read is a VigilFleetError naming it. */
export function authOptions(nats, auth) {
  if (auth.user !== undefined) return { user: auth.user, pass: auth.pass };
  if (auth.token !== undefined) return { token: auth.token };
  if (auth.creds !== undefined) {
    let bytes;
    try {
      bytes = fs.readFileSync(auth.creds);
    } catch (e) {
      throw new VigilFleetError(`creds: cannot read ${auth.creds}: ${e.message}`, { cause: e });
    }
    return { authenticator: nats.credsAuthenticator(new Uint8Array(bytes)) };
  }
  return {};
}
