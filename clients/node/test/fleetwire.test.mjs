// The fleet's read side without a server: names and subjects, what a
// message must be (readMessage), and the cursor that makes delivery
// exactly once into the host (FleetCursor). fleet.test.mjs runs the same
// against a real nats-server; these pin the rules case by case.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { encode } from '@msgpack/msgpack';
import * as vigil from '../index.js';
import {
  FleetCursor, NOTIFICATION_KEYS, PAST_EPOCHS_MAX, fleetSubject, notificationProblem, readMessage,
  sessionFromToken, sessionToken,
} from '../index.js';
import { PACKAGE_DIR } from './helpers.mjs';

const A = 'aaaaaaaaaaaaaaaa';
const B = 'bbbbbbbbbbbbbbbb';
const C = 'cccccccccccccccc';

function notification(over = {}) {
  const n = Object.fromEntries(NOTIFICATION_KEYS.map((k) => [k, null]));
  return {
    ...n, session: 'build.prod', seq: 7, type: 'exit', mode: 'idle', lines: [], incidents: [],
    incidents_withheld: 0, incidents_coalesced: 0, incidents_dropped: 0, suppressed: 0,
    epoch: A, text: 'done', at: '2026-11-21T06:41:55.223+00:00', ...over,
  };
}

/** Headers as NATS.js gives them: values(name) -> every value of name. */
function headers(map) {
  return { values: (name) => (map[name] === undefined ? [] : [].concat(map[name])) };
}

function message(n = notification(), over = {}) {
  return {
    subject: `vigil.host-1.${sessionToken(n.session)}.n`,
    data: encode(n),
    headers: headers({ 'Vigil-Engine': 'host-1', 'Vigil-Session': n.session, 'Vigil-Seq': String(n.seq), 'Vigil-Epoch': n.epoch }),
    ...over,
  };
}

test("session names become one subject token and read back exactly", () => {
  assert.equal(sessionToken('build.prod'), 'build%2Eprod');
  assert.equal(sessionFromToken('build%2Eprod'), 'build.prod');
  assert.equal(sessionToken('a:b-c_d'), 'a:b-c_d');
  assert.equal(fleetSubject(), 'vigil.*.*.n');
  assert.equal(fleetSubject('host-1', 'a.b.c'), 'vigil.host-1.a%2Eb%2Ec.n');
});

test('the keys a notification must have are the ones index.d.ts declares', () => {
  // socket.test.mjs checks those against what a real engine sends.
  const dts = fs.readFileSync(path.join(PACKAGE_DIR, 'index.d.ts'), 'utf8');
  const body = dts.match(/export interface Notification \{([\s\S]*?)\n\}/)[1];
  const declared = [...body.matchAll(/^ {2}(\w+)\??:/gm)].map((m) => m[1]).sort();
  assert.deepEqual([...NOTIFICATION_KEYS].sort(), declared);
});

test('everything index.js exports is declared in index.d.ts', () => {
  const dts = fs.readFileSync(path.join(PACKAGE_DIR, 'index.d.ts'), 'utf8');
  const declared = new Set([...dts.matchAll(/^export declare (?:class|function|const) (\w+)/gm)].map((m) => m[1]));
  const missing = Object.keys(vigil).filter((name) => !declared.has(name));
  assert.deepEqual(missing, []);
});

test('a well-formed message reads as its engine and notification', () => {
  const r = readMessage(message(), 1 << 20);
  assert.equal(r.problem, undefined);
  assert.equal(r.engine, 'host-1');
  assert.deepEqual(r.notification, notification());
  // Keys a newer engine may add go through.
  assert.equal(readMessage(message(notification({ newer: 1 })), 1 << 20).problem, undefined);
});

test('each way a message can be wrong is named', () => {
  const cases = [
    [{ subject: 'vigil.host-1.build%2Eprod' }, /subject "vigil.host-1.build%2Eprod" is not vigil.<engine>.<session>.n/],
    [{ subject: 'other.host-1.build%2Eprod.n' }, /is not vigil.<engine>/],
    [{ subject: 'vigil.host 1.build%2Eprod.n' }, /engine "host 1" is not an engine name/],
    [{ subject: 'vigil.host-1.build%2eprod.n' }, /session token "build%2eprod"/],
    [{ subject: 'vigil.host-1.build%2E%2Eprod.n' }, /payload's session "build.prod" is not the subject's "build..prod"/],
    [{ data: new Uint8Array(2000) }, /2000 bytes, over the bound of 1000/],
    [{ data: new Uint8Array([0xc1]) }, /not one msgpack value/],
    [{ data: encode('text') }, /payload is string, not a map/],
    [{ data: encode(null) }, /payload is nil, not a map/],
    [{ data: encode(notification({ mode: 'loud' })) }, /"mode" is not "idle" or "live_safe": "loud"/],
    [{ data: encode(notification({ seq: -1 })) }, /"seq" is not an integer 1\.\.2\^53-1: -1/],
    [{ data: encode(notification({ seq: 1.5 })) }, /"seq" is not/],
    [{ data: encode(notification({ text: new Uint8Array(3) })) }, /"text" is not a string: 3 bytes/],
    [{ data: encode(notification({ lines: [{ seq: 1, stream: 'tty', text: '', pattern: null, truncated: false }] })) },
      /lines\[0\] has a stream that is neither stdout nor stderr/],
    [{ data: encode(notification({ incidents: [1] })) }, /"incidents" is not an array of maps/],
    [{ data: encode((({ at, ...rest }) => rest)(notification())) }, /has no "at"/],
    [{ headers: undefined }, /no headers/],
    [{ headers: headers({ 'Vigil-Engine': 'host-1', 'Vigil-Session': 'build.prod', 'Vigil-Seq': '07', 'Vigil-Epoch': A }) },
      /Vigil-Seq "07" is not the payload's seq 7/],
    [{ headers: headers({ 'Vigil-Engine': 'host-1', 'Vigil-Session': 'build.prod', 'Vigil-Seq': '7', 'Vigil-Epoch': A.toUpperCase() }) },
      /Vigil-Epoch "AAAAAAAAAAAAAAAA" is not the payload's epoch "aaaaaaaaaaaaaaaa"/],
    [{ headers: headers({ 'Vigil-Engine': 'host-1', 'Vigil-Session': 'build%2Eprod', 'Vigil-Seq': '7', 'Vigil-Epoch': A }) },
      /Vigil-Session "build%2Eprod" is not the payload's session/],
    [{ headers: headers({ 'Vigil-Engine': 'host-1', 'Vigil-Session': 'build.prod', 'Vigil-Seq': '7', 'Vigil-Epoch': [A, B] }) },
      /Vigil-Epoch is given 2 times/],
    [{ headers: headers({ 'Vigil-Engine': 'x'.repeat(300), 'Vigil-Session': 'build.prod', 'Vigil-Seq': '7', 'Vigil-Epoch': A }) },
      /Vigil-Engine is longer than 256 bytes/],
  ];
  for (const [over, want] of cases) {
    const r = readMessage(message(notification(), over), 1000);
    assert.match(r.problem ?? '(none)', want, JSON.stringify(Object.keys(over)));
    assert.equal(r.notification, undefined);
  }
  assert.equal(notificationProblem(notification()), null);
});

test('the cursor: same epoch at or below is a duplicate, above is new, another epoch is new', () => {
  const c = new FleetCursor([{ engine: 'h', session: 's', epoch: A, seq: 5 }]);
  assert.equal(c.judge('h', 's', A, 4), 'duplicate');
  assert.equal(c.judge('h', 's', A, 5), 'duplicate');
  assert.equal(c.judge('h', 's', A, 6), 'new');
  assert.equal(c.judge('h', 's', B, 1), 'new');
  assert.equal(c.judge('h', 'other', A, 1), 'new');
  assert.equal(c.judge('h2', 's', A, 1), 'new');
  c.advance('h', 's', A, 3); // never back
  assert.equal(c.get('h', 's').seq, 5);
  c.advance('h', 's', B, 1);
  assert.deepEqual(c.get('h', 's'), { engine: 'h', session: 's', epoch: B, seq: 1, pastEpochs: [A] });
  // The epoch left behind: its messages are duplicates, and acking one late moves nothing.
  assert.equal(c.judge('h', 's', A, 6), 'duplicate');
  c.advance('h', 's', A, 6);
  assert.deepEqual(c.get('h', 's'), { engine: 'h', session: 's', epoch: B, seq: 1, pastEpochs: [A] });
  c.advance('h', 's', C, 2);
  assert.deepEqual(c.get('h', 's').pastEpochs, [A, B]);
  // What the host stores reads back to the same cursor.
  const again = new FleetCursor(c.entries());
  assert.deepEqual(again.entries(), c.entries());
  assert.equal(again.judge('h', 's', B, 100), 'duplicate');
});

test('the cursor keeps the last PAST_EPOCHS_MAX epochs left', () => {
  const c = new FleetCursor();
  const epochs = Array.from({ length: PAST_EPOCHS_MAX + 2 }, (_, i) => i.toString(16).padStart(16, '0'));
  for (const e of epochs) c.advance('h', 's', e, 1);
  const { epoch, pastEpochs } = c.get('h', 's');
  assert.equal(epoch, epochs.at(-1));
  assert.deepEqual(pastEpochs, epochs.slice(1, -1));
  assert.equal(pastEpochs.length, PAST_EPOCHS_MAX);
});

test('a bad cursor entry is refused, naming it', () => {
  const good = { engine: 'h', session: 's', epoch: A, seq: 1 };
  const cases = [
    [[null], /cursor\[0\] must be \{engine, session, epoch, seq\}/],
    [[good, { ...good, engine: 'a.b' }], /cursor\[1\]\.engine must be an engine name .* got "a.b"/],
    [[{ ...good, session: '' }], /cursor\[0\]\.session must be a session name/],
    [[{ ...good, seq: -1 }], /cursor\[0\]\.seq must be an integer 0\.\.2\^53-1, got -1/],
    [[{ ...good, seq: 2 ** 53 }], /cursor\[0\]\.seq must be/],
    [[{ ...good, pastEpochs: ['x'] }], /cursor\[0\]\.pastEpochs must be an array of at most 8 epochs/],
    [[good, good], /cursor\[1\] repeats engine h session s/],
  ];
  for (const [entries, want] of cases) assert.throws(() => new FleetCursor(entries), want);
  assert.throws(() => new FleetCursor(5), /cursor must be an array/);
});
