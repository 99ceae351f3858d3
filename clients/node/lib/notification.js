// What a well-formed notification map is (docs/protocol.md section 6), for
// a reader that gets notifications from somewhere it cannot trust.
//
// Over the engine's socket a notification comes from the engine the client
// chose to talk to. Through a broker (docs/fleet.md) anyone with the right
// to publish on a subject can put a message there, so a FleetSubscriber
// checks each one before its host injects it into a model's turn: the map
// must have the 25 keys the protocol says it always has, each of its
// documented type. Keys the protocol does not name are let through (an
// engine newer than this client may add some). What is checked is the
// shape, not the sense: a well-formed notification can still say anything.

/** A session name (docs/protocol.md section 3): 1..64 of [A-Za-z0-9._:-]. */
export const SESSION_NAME = /^[A-Za-z0-9._:-]{1,64}$/;

/** An engine's epoch: 16 hex digits (docs/protocol.md section 3). */
export const EPOCH = /^[0-9a-fA-F]{16}$/;

const isStr = (v) => typeof v === 'string';
const isStrOrNull = (v) => v === null || typeof v === 'string';
const isUint = (v) => Number.isSafeInteger(v) && v >= 0;
const isUintOrNull = (v) => v === null || isUint(v);
const isIntOrNull = (v) => v === null || Number.isSafeInteger(v);
const isBool = (v) => typeof v === 'boolean';
const isMap = (v) => v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype;

/** A line of `lines`: {seq, stream, text, pattern, truncated}. */
function lineProblem(line) {
  if (!isMap(line)) return 'is not a map';
  if (!isUint(line.seq)) return 'has no unsigned integer seq';
  if (line.stream !== 'stdout' && line.stream !== 'stderr') return 'has a stream that is neither stdout nor stderr';
  if (!isStr(line.text)) return 'has no string text';
  if (!isIntOrNull(line.pattern)) return 'has a pattern that is neither an integer nor nil';
  if (!isBool(line.truncated)) return 'has no boolean truncated';
  return null;
}

/** Every key the protocol says a notification has, with its check and its
 * type in words (for the message that says what is wrong). */
const KEYS = [
  ['session', (v) => isStr(v) && SESSION_NAME.test(v), 'a session name (1..64 of [A-Za-z0-9._:-])'],
  ['seq', (v) => isUint(v) && v >= 1, 'an integer 1..2^53-1'],
  ['type', (v) => isStr(v) && /^[a-z_]{1,32}$/.test(v), 'a type name (1..32 of [a-z_])'],
  ['monitor_id', isStrOrNull, 'a string or nil'],
  ['label', isStrOrNull, 'a string or nil'],
  ['mode', (v) => v === 'idle' || v === 'live_safe', '"idle" or "live_safe"'],
  ['batch', isUintOrNull, 'an unsigned integer or nil'],
  ['lines', Array.isArray, 'an array'],
  ['incidents', (v) => Array.isArray(v) && v.every(isMap), 'an array of maps'],
  ['incidents_withheld', isUint, 'an unsigned integer'],
  ['incidents_coalesced', isUint, 'an unsigned integer'],
  ['incidents_dropped', isUint, 'an unsigned integer'],
  ['suppressed', isUint, 'an unsigned integer'],
  ['state', isStrOrNull, 'a string or nil'],
  ['exit_code', isIntOrNull, 'an integer or nil'],
  ['signal', (v) => isStrOrNull(v) || Number.isSafeInteger(v), 'a string, an integer or nil'],
  ['duration_ms', isUintOrNull, 'an unsigned integer or nil'],
  ['reason', isStrOrNull, 'a string or nil'],
  ['exceeded', isStrOrNull, 'a string or nil'],
  ['dropped', isUintOrNull, 'an unsigned integer or nil'],
  ['from_seq', isUintOrNull, 'an unsigned integer or nil'],
  ['to_seq', isUintOrNull, 'an unsigned integer or nil'],
  ['epoch', (v) => isStr(v) && EPOCH.test(v), '16 hex digits'],
  ['text', isStr, 'a string'],
  ['at', isStr, 'a string'],
];

/** The names of the keys every notification has. */
export const NOTIFICATION_KEYS = Object.freeze(KEYS.map(([key]) => key));

/**
 * What is wrong with a decoded value as a notification map, in words
 * naming the key and what it should be; null when it is well-formed.
 * @param {unknown} n what the payload decoded to
 * @returns {string | null}
 */
export function notificationProblem(n) {
  if (!isMap(n)) return `the payload is ${Array.isArray(n) ? 'an array' : n === null ? 'nil' : typeof n}, not a map`;
  for (const [key, check, what] of KEYS) {
    if (!Object.hasOwn(n, key)) return `the payload has no "${key}"`;
    if (!check(n[key])) return `the payload's "${key}" is not ${what}: ${describe(n[key])}`;
  }
  for (let i = 0; i < n.lines.length; i++) {
    const problem = lineProblem(n.lines[i]);
    if (problem !== null) return `the payload's lines[${i}] ${problem}`;
  }
  return null;
}

/** A short description of a value for an error message (never the whole of a
 * long string: a hostile payload could be large). */
export function describe(v) {
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}...` : v);
  if (v === null || v === undefined || typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  if (Array.isArray(v)) return `an array of ${v.length}`;
  if (v instanceof Uint8Array) return `${v.length} bytes`;
  return `a ${v.constructor?.name ?? 'value'}`;
}
