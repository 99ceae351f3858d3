// The wire of a fleet (docs/fleet.md section 1), read side: the names, the
// subjects (the notifications' and the requests'), and what a message on
// the stream must be before a host may inject it.
//
// An engine publishes each notification of a named session as one message
// on `vigil.<engine>.<session token>.n`, its payload the notification's
// msgpack map, its headers saying the engine, the session, the seq and the
// epoch for routing. A message on a broker can come from anyone allowed to
// publish there, so readMessage() trusts nothing: the subject must be one
// of the fleet's, the payload bounded in size, a msgpack map of the
// notification's shape (notification.js), and the headers must agree with
// the subject and the payload. What fails is described in words naming
// what is wrong; it never reaches the host.
//
// Nats-Msg-Id is not checked: it is JetStream's key for dropping a
// republish, and the reader's own guarantee (exactly once into the host)
// rests on the epoch and the seq, which are.

import { decode } from '@msgpack/msgpack';
import { EPOCH, SESSION_NAME, describe, notificationProblem } from './notification.js';

/** An engine's name (docs/fleet.md, "Names"): 1..64 of [A-Za-z0-9_-]. */
export const ENGINE_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** The stream engines publish into, unless configured otherwise (nats.stream). */
export const FLEET_STREAM = 'VIGIL';

/** The largest payload a FleetSubscriber accepts by default: NATS's own
 * default max_payload (1 MiB), which a server may raise. */
export const FLEET_PAYLOAD_MAX_BYTES = 1 << 20;

/** The most bytes one header value may have (a seq, an epoch, a name: all short). */
const HEADER_VALUE_MAX = 256;

/** A session name as one subject token: every '.' written '%2E' (a name
 * never holds '%', so the token reads back to exactly one name). */
export function sessionToken(name) {
  return name.replaceAll('.', '%2E');
}

/** The session name a subject token stands for. */
export function sessionFromToken(token) {
  return token.replaceAll('%2E', '.');
}

/**
 * The subject of one session's notifications, or a filter over several:
 * engine and session may each be '*' (any).
 */
export function fleetSubject(engine = '*', session = '*') {
  return `vigil.${engine}.${session === '*' ? '*' : sessionToken(session)}.n`;
}

/** The subject an engine answers requests on (docs/fleet.md section 6):
 * `vigil.<engine>.rpc`, every method; with a session,
 * `vigil.<engine>.<session token>.rpc`, that session alone. */
export function rpcSubject(engine, session) {
  return session === undefined ? `vigil.${engine}.rpc` : `vigil.${engine}.${sessionToken(session)}.rpc`;
}

/** The one value of header name, or a problem in words. */
function oneHeader(headers, name) {
  const values = headers.values(name);
  if (values.length === 0) return { problem: `the header ${name} is missing` };
  if (values.length > 1) return { problem: `the header ${name} is given ${values.length} times` };
  const [value] = values;
  if (value.length > HEADER_VALUE_MAX) return { problem: `the header ${name} is longer than ${HEADER_VALUE_MAX} bytes` };
  return { value };
}

/**
 * Reads one message of the stream.
 * @param {{subject: string, headers?: {values(name: string): string[]}, data: Uint8Array}} msg
 * @param {number} maxPayloadBytes the largest payload accepted
 * @returns {{engine: string, notification: object} | {problem: string}}
 *   the engine that published it and the notification map, or what is wrong
 */
export function readMessage({ subject, headers, data }, maxPayloadBytes) {
  const parts = subject.split('.');
  if (parts.length !== 4 || parts[0] !== 'vigil' || parts[3] !== 'n') {
    return { problem: `the subject ${describe(subject)} is not vigil.<engine>.<session>.n` };
  }
  const [, engine, token] = parts;
  if (!ENGINE_NAME.test(engine)) return { problem: `the subject's engine ${describe(engine)} is not an engine name` };
  const session = sessionFromToken(token);
  if (!SESSION_NAME.test(session) || sessionToken(session) !== token) {
    return { problem: `the subject's session token ${describe(token)} is not a session name's` };
  }

  if (data.length > maxPayloadBytes) {
    return { problem: `the payload has ${data.length} bytes, over the bound of ${maxPayloadBytes}` };
  }
  let n;
  try {
    n = decode(data);
  } catch (e) {
    return { problem: `the payload is not one msgpack value: ${e.message}` };
  }
  const shape = notificationProblem(n);
  if (shape !== null) return { problem: shape };

  if (headers === undefined) return { problem: 'the message has no headers' };
  const fields = {};
  for (const name of ['Vigil-Engine', 'Vigil-Session', 'Vigil-Seq', 'Vigil-Epoch']) {
    const h = oneHeader(headers, name);
    if (h.problem !== undefined) return { problem: h.problem };
    fields[name] = h.value;
  }
  if (fields['Vigil-Engine'] !== engine) {
    return { problem: `the header Vigil-Engine ${describe(fields['Vigil-Engine'])} is not the subject's engine ${describe(engine)}` };
  }
  if (fields['Vigil-Session'] !== n.session) {
    return { problem: `the header Vigil-Session ${describe(fields['Vigil-Session'])} is not the payload's session ${describe(n.session)}` };
  }
  if (n.session !== session) {
    return { problem: `the payload's session ${describe(n.session)} is not the subject's ${describe(session)}` };
  }
  if (fields['Vigil-Seq'] !== String(n.seq)) {
    return { problem: `the header Vigil-Seq ${describe(fields['Vigil-Seq'])} is not the payload's seq ${n.seq}` };
  }
  if (!EPOCH.test(fields['Vigil-Epoch']) || fields['Vigil-Epoch'] !== n.epoch) {
    return { problem: `the header Vigil-Epoch ${describe(fields['Vigil-Epoch'])} is not the payload's epoch ${describe(n.epoch)}` };
  }
  return { engine, notification: n };
}
