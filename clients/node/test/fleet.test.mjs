// FleetSubscriber against a real nats-server with JetStream
// (docs/fleet.md): the tests play the engines, publishing notifications
// into the stream VIGIL as an engine does (subject, msgpack payload,
// headers, Nats-Msg-Id), and read them as a gateway.
//
// Each test uses engine names of its own, so its consumer (filtered to
// them) sees only its messages on the one shared server. Waits are on
// events (a notification, an error) bounded by WAIT_MS; where a test shows
// that something did not come, it publishes a marker after it and checks
// the marker is what comes.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { encode } from '@msgpack/msgpack';
import { AckPolicy, connect, headers as natsHeaders, nanos } from 'nats';
import {
  FleetSubscriber, VigilConnectionError, VigilFleetError, NOTIFICATION_KEYS, sessionToken,
} from '../index.js';
import { within } from './helpers.mjs';
import { NatsServer } from './natsserver.mjs';

const WAIT_MS = 30000;
const EPOCH_A = '3f9c2a61d07be485';
const EPOCH_B = '0123456789abcdef';

/** A notification map as an engine publishes it: all 25 keys. */
function notification({ session, seq, epoch = EPOCH_A, type = 'output', text = `line ${seq}` }) {
  return {
    session, seq, type, monitor_id: 'mon_test', label: 'web', mode: 'idle', batch: seq,
    lines: [{ seq, stream: 'stdout', text, pattern: null, truncated: false }],
    incidents: [], incidents_withheld: 0, incidents_coalesced: 0, incidents_dropped: 0, suppressed: 0,
    state: 'running', exit_code: null, signal: null, duration_ms: null, reason: null, exceeded: null,
    dropped: null, from_seq: null, to_seq: null, epoch, text: `[vigil] ${text}`, at: '2026-11-21T06:41:55.223+00:00',
  };
}

/** Headers as an engine sets them; `extra` overrides or adds (a value of
 * null leaves that header out, an array gives it several times). */
function engineHeaders(engine, n, extra = {}) {
  const want = {
    'Nats-Msg-Id': `${n.epoch}:${n.session}:${n.seq}`,
    'Vigil-Engine': engine,
    'Vigil-Session': n.session,
    'Vigil-Seq': String(n.seq),
    'Vigil-Epoch': n.epoch,
    ...extra,
  };
  const h = natsHeaders();
  for (const [k, v] of Object.entries(want)) {
    if (v === null) continue;
    for (const one of Array.isArray(v) ? v : [v]) h.append(k, one);
  }
  return h;
}

/** Publishes one engine-like message into the stream and waits for
 * JetStream's ack. payload (bytes) and headers replace the well-formed
 * ones when given. */
async function publish(js, engine, n, { payload, headers, subject, noHeaders = false } = {}) {
  const data = payload ?? encode(n);
  return js.publish(subject ?? `vigil.${engine}.${sessionToken(n.session)}.n`, data,
    noHeaders ? {} : { headers: headers ?? engineHeaders(engine, n) });
}

/** The msgpack of map with one more key, written raw (an encoder would
 * not write `__proto__`): map must have 16 or more keys (a map16). */
function withRawKey(map, key) {
  const bytes = encode(map);
  assert.equal(bytes[0], 0xde, 'a map16');
  const count = (bytes[1] << 8) + bytes[2] + 1;
  const k = Buffer.from(key);
  return new Uint8Array([0xde, count >> 8, count & 0xff, ...bytes.slice(3), 0xa0 + k.length, ...k, 0x80]);
}

/** A subscriber's notifications until `count` have come (each acked unless
 * ack is false), bounded by WAIT_MS. */
async function take(sub, count, { ack = true } = {}) {
  const got = [];
  while (got.length < count) {
    const n = await sub.next({ timeoutMs: WAIT_MS });
    assert.notEqual(n, null, `only ${got.length} of ${count} notifications came within ${WAIT_MS} ms`);
    if (ack) await n.ack();
    got.push(n);
  }
  return got;
}

let server;
let nc; // the tests' own connection, as the engines'
let js;
let jsm;
const subscribers = [];

/** A subscriber on the shared server, closed after the file. */
async function subscriber(options) {
  const sub = await FleetSubscriber.connect({ url: server.url, ...options });
  subscribers.push(sub);
  return sub;
}

before(async () => {
  server = await NatsServer.start();
  nc = await connect({ servers: server.url });
  jsm = await nc.jetstreamManager();
  js = nc.jetstream();
  // As an engine creates it (docs/fleet.md, "The stream").
  await jsm.streams.add({ name: 'VIGIL', subjects: ['vigil.*.*.n'], duplicate_window: nanos(120000) });
});

after(async () => {
  for (const s of subscribers) await s.close().catch(() => {});
  await nc?.close().catch(() => {});
  await server?.stop();
});

test('notifications come typed, in order, from the session asked for; acked ones are not delivered again', async () => {
  const engine = 'e-order';
  for (let seq = 1; seq <= 5; seq++) {
    await publish(js, engine, notification({ session: 'build.prod', seq }));
    await publish(js, engine, notification({ session: 'other', seq })); // not this subscriber's
  }
  // An engine's republish inside the duplicate window is dropped by JetStream.
  const again = await publish(js, engine, notification({ session: 'build.prod', seq: 5 }));
  assert.equal(again.duplicate, true);

  const sub = await subscriber({ durable: 'gw-order', engine, session: 'build.prod' });
  assert.equal(sub.subject, 'vigil.e-order.build%2Eprod.n');
  assert.equal(sub.created, true);
  const got = await take(sub, 5);
  assert.deepEqual(got.map((n) => n.seq), [1, 2, 3, 4, 5]);
  for (const n of got) {
    assert.equal(n.session, 'build.prod');
    assert.equal(n.engine, engine);
    assert.equal(n.epoch, EPOCH_A);
    assert.equal(n.type, 'output');
    assert.equal(n.lines[0].text, `line ${n.seq}`);
    assert.equal(typeof n.ack, 'function');
    // The map reads as the protocol's: what the subscriber adds is not enumerable.
    assert.deepEqual(Object.keys(n).sort(), [...NOTIFICATION_KEYS].sort());
  }
  assert.deepEqual(sub.counters, { delivered: 5, duplicates: 0, malformed: 0, heldBack: 0, gaps: 0 });
  assert.deepEqual(sub.cursor(), [{ engine, session: 'build.prod', epoch: EPOCH_A, seq: 5, pastEpochs: [] }]);
  const info = await jsm.consumers.info('VIGIL', 'gw-order');
  assert.equal(info.num_ack_pending, 0);
  assert.equal(info.num_pending, 0);
  await sub.close();
  // The closed reader's pull request is gone from the server before seq 6
  // is published: else the server may hand 6 to it (its connection not yet
  // seen closed), and the next reader gets 6 only after the ack wait,
  // delivered again.
  for (const deadline = Date.now() + WAIT_MS; (await jsm.consumers.info('VIGIL', 'gw-order')).num_waiting > 0;) {
    assert.ok(Date.now() < deadline, `the closed reader's pull request still waits after ${WAIT_MS} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }

  // A second reader of the same durable (a restarted gateway) goes on from
  // the ack floor: the next it gets is the new seq 6, not 1..5 again.
  await publish(js, engine, notification({ session: 'build.prod', seq: 6 }));
  const resumed = await subscriber({ durable: 'gw-order', engine, session: 'build.prod' });
  assert.equal(resumed.created, false);
  const [n6] = await take(resumed, 1);
  assert.equal(n6.seq, 6);
  assert.equal(n6.redeliveries, 0);
});

test('a second subscriber on the same durable takes what the first never acked', async () => {
  const engine = 'e-takeover';
  for (let seq = 1; seq <= 3; seq++) await publish(js, engine, notification({ session: 's1', seq }));
  const first = await subscriber({ durable: 'gw-takeover', engine, ackWaitMs: 1000 });
  const [n1] = await take(first, 1);
  const [n2] = await take(first, 1, { ack: false });
  assert.deepEqual([n1.seq, n2.seq], [1, 2]);
  // The first gateway goes away with seq 2 injected but not acked (its
  // records say seq 1), as one that died.
  await first.close();

  const second = await subscriber({
    durable: 'gw-takeover', engine, cursor: [{ engine, session: 's1', epoch: EPOCH_A, seq: 1 }],
  });
  const got = await take(second, 2);
  assert.deepEqual(got.map((n) => n.seq), [2, 3]);
  assert.ok(got[0].redeliveries >= 1, `seq 2 came as a redelivery (redeliveries ${got[0].redeliveries})`);
  assert.deepEqual(second.counters, { delivered: 2, duplicates: 0, malformed: 0, heldBack: 0, gaps: 0 });
});

test("what the host's cursor says it injected is acked and skipped, counted as duplicates", async () => {
  const engine = 'e-dup';
  for (let seq = 1; seq <= 4; seq++) await publish(js, engine, notification({ session: 'agent-7', seq }));
  const sub = await subscriber({
    durable: 'gw-dup', engine, cursor: [{ engine, session: 'agent-7', epoch: EPOCH_A, seq: 2 }],
  });
  const dups = [];
  sub.on('duplicate', (d) => dups.push(d.seq));
  const got = await take(sub, 2);
  assert.deepEqual(got.map((n) => n.seq), [3, 4]);
  assert.deepEqual(dups, [1, 2]);
  assert.deepEqual(sub.counters, { delivered: 2, duplicates: 2, malformed: 0, heldBack: 0, gaps: 0 });
  assert.equal(sub.cursor()[0].seq, 4);
  // The skipped ones were acked: nothing waits on the consumer.
  assert.equal((await jsm.consumers.info('VIGIL', 'gw-dup')).num_ack_pending, 0);
});

test("a new epoch is a new numbering and is taken; the epoch left behind is not taken again", async () => {
  const engine = 'e-epoch';
  const s = 'agent-9';
  const sub = await subscriber({ durable: 'gw-epoch', engine, cursor: [{ engine, session: s, epoch: EPOCH_A, seq: 10 }] });
  await publish(js, engine, notification({ session: s, seq: 9 })); // injected before: duplicate
  await publish(js, engine, notification({ session: s, seq: 11 }));
  // The engine lost its state directory: a new epoch, numbered from 1.
  await publish(js, engine, notification({ session: s, seq: 1, epoch: EPOCH_B }));
  await publish(js, engine, notification({ session: s, seq: 2, epoch: EPOCH_B }));
  const got = await take(sub, 3);
  assert.deepEqual(got.map((n) => [n.epoch, n.seq]), [[EPOCH_A, 11], [EPOCH_B, 1], [EPOCH_B, 2]]);
  assert.deepEqual(sub.cursor(), [{ engine, session: s, epoch: EPOCH_B, seq: 2, pastEpochs: [EPOCH_A] }]);

  // The old epoch's seq 11 once more (a copy without its Nats-Msg-Id, so
  // JetStream keeps it, as a redelivery would come), then a marker.
  const old = notification({ session: s, seq: 11 });
  await publish(js, engine, old, { headers: engineHeaders(engine, old, { 'Nats-Msg-Id': null }) });
  await publish(js, engine, notification({ session: s, seq: 3, epoch: EPOCH_B }));
  const [marker] = await take(sub, 1);
  assert.deepEqual([marker.epoch, marker.seq], [EPOCH_B, 3]);
  assert.deepEqual(sub.counters, { delivered: 4, duplicates: 2, malformed: 0, heldBack: 0, gaps: 0 });
});

test('what comes ahead of the cursor is held back until it is next', async () => {
  // JetStream delivers a dead reader's unacked message again behind what
  // came since: the stream order here is what a second reader sees.
  const engine = 'e-ahead';
  const s = 'agent-5';
  for (const seq of [5, 4, 6]) await publish(js, engine, notification({ session: s, seq }));
  const sub = await subscriber({
    durable: 'gw-ahead', engine, ackWaitMs: 1000, cursor: [{ engine, session: s, epoch: EPOCH_A, seq: 3 }],
  });
  const held = [];
  sub.on('held', (h) => held.push(h.seq));
  const got = await take(sub, 3);
  assert.deepEqual(got.map((n) => n.seq), [4, 5, 6]);
  assert.ok(sub.counters.heldBack >= 1, `held back ${sub.counters.heldBack}`);
  assert.ok(held.includes(5), `held: ${held}`);
  assert.equal(sub.counters.gaps, 0);
  assert.equal(sub.counters.delivered, 3);
  // seq 5 came again after its nak: a redelivery, not a second copy.
  assert.ok(got[1].redeliveries >= 1, `seq 5 redeliveries ${got[1].redeliveries}`);
  assert.deepEqual(sub.cursor(), [{ engine, session: s, epoch: EPOCH_A, seq: 6, pastEpochs: [] }]);
  const info = await jsm.consumers.info('VIGIL', 'gw-ahead');
  assert.equal(info.num_ack_pending, 0);
  assert.equal(info.num_pending, 0);
});

test('a message ahead with nothing coming before it is taken after the hold bound, the gap counted', async () => {
  const engine = 'e-gap';
  const s = 'agent-6';
  // Seq 4 is never published (the stream's max_age took it, say).
  await publish(js, engine, notification({ session: s, seq: 5 }));
  const holdMs = 3000;
  const sub = await subscriber({
    durable: 'gw-gap', engine, ackWaitMs: 1000, holdMs, cursor: [{ engine, session: s, epoch: EPOCH_A, seq: 3 }],
  });
  const gaps = [];
  sub.on('gap', (g) => gaps.push(g));
  const start = performance.now();
  const [n5] = await take(sub, 1);
  const waited = performance.now() - start;
  assert.equal(n5.seq, 5);
  assert.ok(waited >= holdMs, `taken after ${Math.round(waited)} ms, before the hold bound of ${holdMs} ms`);
  assert.equal(sub.counters.gaps, 1);
  assert.ok(sub.counters.heldBack >= 2, `held back ${sub.counters.heldBack} times (a nak every 250 ms)`);
  assert.equal(gaps.length, 1);
  assert.equal(gaps[0].seq, 5);
  assert.ok(gaps[0].heldMs >= holdMs, `heldMs ${gaps[0].heldMs}`);
  // From there on it is in order again: 6 is next.
  await publish(js, engine, notification({ session: s, seq: 6 }));
  const [n6] = await take(sub, 1);
  assert.equal(n6.seq, 6);
  assert.equal(sub.counters.gaps, 1);
});

test('a dropped notification standing for the next seq, and a new epoch from 1, are next', async () => {
  const engine = 'e-next';
  const s = 'agent-8';
  const sub = await subscriber({ durable: 'gw-next', engine, ackWaitMs: 1000, cursor: [{ engine, session: s, epoch: EPOCH_A, seq: 3 }] });
  // The engine fell behind: seqs 4..6 are one `dropped` notification of seq 6.
  await publish(js, engine, { ...notification({ session: s, seq: 6, type: 'dropped' }), dropped: 3, from_seq: 4, to_seq: 6 });
  await publish(js, engine, notification({ session: s, seq: 7 }));
  // The engine lost its state directory: epoch B numbers from 1.
  await publish(js, engine, notification({ session: s, seq: 1, epoch: EPOCH_B }));
  const got = await take(sub, 3);
  assert.deepEqual(got.map((n) => [n.epoch, n.seq]), [[EPOCH_A, 6], [EPOCH_A, 7], [EPOCH_B, 1]]);
  assert.deepEqual(sub.counters, { delivered: 3, duplicates: 0, malformed: 0, heldBack: 0, gaps: 0 });
});

test('malformed and hostile messages are counted, termed, and never handed over', async () => {
  const engine = 'e-bad';
  const s = 'agent-x';
  const good = (seq) => notification({ session: s, seq });
  const bad = [];
  const add = (what, n, opts) => bad.push({ what, n, opts });
  add('not msgpack', good(1), { payload: new Uint8Array([0xc1, 0xff, 0x00]) });
  add('an array', good(1), { payload: encode([1, 2, 3]) });
  add('a map without text', good(1), { payload: encode((({ text, ...rest }) => rest)(good(1))) });
  add('seq as a string', good(1), { payload: encode({ ...good(1), seq: '1' }) });
  add('seq 0', { ...good(1), seq: 0 }, {});
  add('seq past 2^53', good(1), { payload: encode({ ...good(1), seq: 2 ** 60 }) });
  add('an epoch that is not hex', { ...good(1), epoch: 'zzzzzzzzzzzzzzzz' }, {});
  add('lines not an array', good(1), { payload: encode({ ...good(1), lines: 'boom' }) });
  add('a line of wrong shape', good(1), { payload: encode({ ...good(1), lines: [{ text: 1 }] }) });
  add('trailing bytes', good(1), { payload: new Uint8Array([...encode(good(1)), 0x01]) });
  add('a __proto__ key', good(1), { payload: withRawKey(good(1), '__proto__') });
  add('Vigil-Seq disagreeing', good(1), { headers: engineHeaders(engine, good(1), { 'Vigil-Seq': '2' }) });
  add('Vigil-Session disagreeing', good(1), { headers: engineHeaders(engine, good(1), { 'Vigil-Session': 'agent-y' }) });
  add('Vigil-Epoch disagreeing', good(1), { headers: engineHeaders(engine, good(1), { 'Vigil-Epoch': EPOCH_B }) });
  add('Vigil-Engine disagreeing', good(1), { headers: engineHeaders(engine, good(1), { 'Vigil-Engine': 'e-else' }) });
  add('Vigil-Seq missing', good(1), { headers: engineHeaders(engine, good(1), { 'Vigil-Seq': null }) });
  add('Vigil-Seq twice', good(1), { headers: engineHeaders(engine, good(1), { 'Vigil-Seq': ['1', '1'] }) });
  add("a payload of another session than the subject's", { ...good(1), session: 'agent-y' },
    { subject: `vigil.${engine}.${s}.n` });
  add('a payload over the bound', { ...good(1), text: 'x'.repeat(9000) }, {});
  add('no headers', good(1), { noHeaders: true });

  for (const { n, opts } of bad) {
    // Each once: a distinct Nats-Msg-Id so that JetStream keeps them all.
    const h = opts.headers ?? engineHeaders(engine, n);
    h.set('Nats-Msg-Id', `bad-${Math.random()}`);
    await publish(js, engine, n, { ...opts, headers: h });
  }
  await publish(js, engine, good(1));

  const sub = await subscriber({ durable: 'gw-bad', engine, maxPayloadBytes: 8192 });
  const problems = [];
  sub.on('malformed', (m) => problems.push(m.problem));
  const [first] = await take(sub, 1);
  assert.equal(first.seq, 1);
  assert.equal(first.text, '[vigil] line 1');
  assert.equal(sub.counters.malformed, bad.length, `malformed: ${JSON.stringify(problems, null, 1)}`);
  assert.deepEqual(sub.counters, { delivered: 1, duplicates: 0, malformed: bad.length, heldBack: 0, gaps: 0 });
  // Each says what is wrong in words.
  for (const [i, p] of problems.entries()) assert.match(p, /payload|header|subject/, `${bad[i].what}: ${p}`);
  const problemOf = (what) => problems[bad.findIndex((b) => b.what === what)];
  assert.match(problemOf('Vigil-Session disagreeing'), /Vigil-Session "agent-y" is not the payload's session "agent-x"/);
  assert.match(problemOf('a payload over the bound'), /has \d+ bytes, over the bound of 8192/);
  assert.match(problemOf('seq past 2^53'), /"seq" is not an integer 1\.\.2\^53-1/);
  assert.match(problemOf('no headers'), /no headers/);
  assert.match(sub.lastMalformed, /stream seq \d+/);
  // Termed and acked: nothing of them is waiting to come again.
  const info = await jsm.consumers.info('VIGIL', 'gw-bad');
  assert.equal(info.num_ack_pending, 0);
  assert.equal(info.num_pending, 0);
});

test('a missing stream, a consumer of another shape and bad options are refused, saying why', async () => {
  await assert.rejects(subscriber({ durable: 'gw-x', stream: 'NOPE' }),
    (e) => e instanceof VigilFleetError && /has no stream NOPE/.test(e.message));
  await jsm.consumers.add('VIGIL', { durable_name: 'gw-shape', ack_policy: AckPolicy.Explicit, filter_subject: 'vigil.e-shape.*.n' });
  await assert.rejects(subscriber({ durable: 'gw-shape', engine: 'e-other' }),
    (e) => e instanceof VigilFleetError && /filters "vigil.e-shape.\*.n", not vigil.e-other.\*.n/.test(e.message));
  assert.throws(() => new FleetSubscriber({ url: server.url }), /durable must name/);
  assert.throws(() => new FleetSubscriber({ url: server.url, durable: 'a.b' }), /durable must name .* got "a.b"/);
  assert.throws(() => new FleetSubscriber({ url: server.url, durable: 'g', session: 'a b' }), /session must be/);
  assert.throws(() => new FleetSubscriber({ url: server.url, durable: 'g', ackWaitMs: 5 }), /ackWaitMs must be an integer 100\.\.86400000, got 5/);
  assert.throws(() => new FleetSubscriber({ url: server.url, durable: 'g', cursor: [{ engine: 'e', session: 's', epoch: 'x', seq: 1 }] }),
    /cursor\[0\]\.epoch must be 16 hex digits, got "x"/);
  assert.throws(() => new FleetSubscriber({ durable: 'g' }), /url must be/);
});

test('an unreachable server is a VigilConnectionError naming it', async () => {
  // A port nothing listens on: the one of a server that has gone.
  const gone = await NatsServer.start();
  await gone.stop();
  await assert.rejects(FleetSubscriber.connect({ url: gone.url, durable: 'g', natsOptions: { maxReconnectAttempts: 0 } }),
    (e) => e instanceof VigilConnectionError && e.message.includes(gone.url));
});

describe('a server with accounts and permissions', () => {
  let secured;
  before(async () => {
    // alice may use JetStream for the consumers of her own sessions only:
    // creating one is allowed by its filter subject (the extended create
    // subject of nats-server 2.9, $JS.API.CONSUMER.CREATE.<stream>.<name>.<filter>).
    secured = await NatsServer.start({
      config: `
accounts {
  FLEET {
    jetstream: enabled
    users [
      { user: engine, password: enginepw }
      { user: alice, password: alicepw, permissions: {
          publish: { allow: ["$JS.API.INFO", "$JS.API.CONSUMER.INFO.VIGIL.*",
                             "$JS.API.CONSUMER.CREATE.VIGIL.*.vigil.*.alice.n",
                             "$JS.API.CONSUMER.MSG.NEXT.VIGIL.*", "$JS.ACK.VIGIL.>"] }
          subscribe: { allow: ["_INBOX_alice.>"] } } }
    ]
  }
}`,
    });
  });
  after(async () => {
    await secured?.stop();
  });

  test('a user without the right to a session is refused with a clear error; with it, it reads', async () => {
    const enc = await connect({ servers: secured.url, user: 'engine', pass: 'enginepw' });
    try {
      const ejsm = await enc.jetstreamManager();
      await ejsm.streams.add({ name: 'VIGIL', subjects: ['vigil.*.*.n'], duplicate_window: nanos(120000) });
      const ejs = enc.jetstream();
      await publish(ejs, 'e1', notification({ session: 'bob', seq: 1 }));
      await publish(ejs, 'e1', notification({ session: 'alice', seq: 1 }));

      await assert.rejects(FleetSubscriber.connect({ url: secured.url, user: 'alice', pass: 'alicepw', durable: 'alice-bob', session: 'bob', inboxPrefix: '_INBOX_alice' }),
        (e) => e instanceof VigilFleetError && /creating durable consumer alice-bob on stream VIGIL \(filter vigil\.\*\.bob\.n\)/.test(e.message) &&
          /Permissions Violation/.test(e.message));
      await assert.rejects(FleetSubscriber.connect({ url: secured.url, user: 'alice', pass: 'wrong', durable: 'x' }),
        (e) => e instanceof VigilFleetError && /refused the connection: '?Authorization Violation/.test(e.message));

      const sub = await FleetSubscriber.connect({ url: secured.url, user: 'alice', pass: 'alicepw', durable: 'alice', session: 'alice', inboxPrefix: '_INBOX_alice' });
      try {
        const [n] = await take(sub, 1);
        assert.deepEqual([n.session, n.seq], ['alice', 1]);
      } finally {
        await sub.close();
      }
    } finally {
      await enc.close();
    }
  });
});

test('a server restarted under a subscriber: it reconnects by itself and goes on from where it was', async () => {
  const own = await NatsServer.start();
  const enc = await connect({ servers: own.url, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
  let sub;
  try {
    await (await enc.jetstreamManager()).streams.add({ name: 'VIGIL', subjects: ['vigil.*.*.n'], duplicate_window: nanos(120000) });
    const ejs = enc.jetstream();
    await publish(ejs, 'e1', notification({ session: 's', seq: 1 }));
    sub = await FleetSubscriber.connect({ url: own.url, durable: 'gw', natsOptions: { reconnectTimeWait: 100 } });
    const statuses = [];
    sub.on('status', (st) => statuses.push(st.type));
    const [n1] = await take(sub, 1);
    assert.equal(n1.seq, 1);

    const engineBack = (async () => {
      for await (const st of enc.status()) if (st.type === 'reconnect') return;
    })();
    await own.restart();
    // The engine publishes again once its own connection is back.
    await within(engineBack, WAIT_MS, "the engine's connection to reconnect");
    await publish(ejs, 'e1', notification({ session: 's', seq: 2 }));
    const [n2] = await take(sub, 1);
    assert.equal(n2.seq, 2);
    assert.ok(statuses.includes('disconnect') && statuses.includes('reconnect'), `statuses: ${statuses}`);
    assert.deepEqual(sub.counters, { delivered: 2, duplicates: 0, malformed: 0, heldBack: 0, gaps: 0 });
  } finally {
    await sub?.close();
    await enc.close();
    await own.stop();
  }
});

test('close() ends a for-await loop, and next() after it says the subscriber is closed', async () => {
  const engine = 'e-close';
  await publish(js, engine, notification({ session: 's', seq: 1 }));
  const sub = await subscriber({ durable: 'gw-close', engine });
  const seen = [];
  for await (const n of sub) {
    seen.push(n.seq);
    await n.ack();
    await sub.close();
  }
  assert.deepEqual(seen, [1]);
  await assert.rejects(sub.next(), (e) => e instanceof VigilConnectionError && /closed/.test(e.message));

  // A close while a next() waits ends that wait.
  const idle = await subscriber({ durable: 'gw-close-idle', engine });
  const [n1] = await take(idle, 1);
  assert.equal(n1.seq, 1);
  const waiting = idle.next();
  await idle.close();
  await assert.rejects(waiting, (e) => e instanceof VigilConnectionError && /the subscriber is closed/.test(e.message));
});

test('a server lost for good (reconnecting bounded by natsOptions) ends the reading with a VigilConnectionError', async () => {
  const own = await NatsServer.start();
  let sub;
  try {
    const enc = await connect({ servers: own.url });
    await (await enc.jetstreamManager()).streams.add({ name: 'VIGIL', subjects: ['vigil.*.*.n'] });
    await enc.close();
    sub = await FleetSubscriber.connect({ url: own.url, durable: 'gw', natsOptions: { maxReconnectAttempts: 0 } });
    const waiting = sub.next();
    await own.stop();
    await assert.rejects(within(waiting, WAIT_MS, 'next() to fail'),
      (e) => e instanceof VigilConnectionError && e.message.startsWith('lost the NATS server at 127.0.0.1:'));
  } finally {
    await sub?.close();
    await own.stop();
  }
});
