// Sessions that resume exactly (docs/protocol.md section 3): a gateway that
// restarts and passes the lastSeq it stored gets every notification after
// it and nothing before it; a client made with autoReconnect comes back by
// itself after the engine restarts in place (SIGUSR2) and goes on from
// where it was; a cursor the engine never reached is told as lost, not
// reused; and one client's sessions keep to their own notifications.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '../index.js';
import {
  Gate, SocketEngine, TEST_TIMEOUT, WAIT_MS, endingOf, processesWithEnv, removeTempDirs, sh, tempDir,
  waitNoneLeft, within,
} from './helpers.mjs';

const engines = [];
async function startEngine(options) {
  const e = await SocketEngine.start(options);
  engines.push(e);
  return e;
}

after(async () => {
  const exits = await Promise.all(engines.map((e) => e.stop()));
  removeTempDirs();
  for (const [i, exit] of exits.entries()) assert.deepEqual(exit, { code: 0, signal: null }, engines[i].log);
  assert.deepEqual(await waitNoneLeft(), [], 'no process of this file is left');
});

/** Notifications of session s until (and with) the ending of monitorId. */
async function untilEnding(s, monitorId) {
  const got = [];
  for (;;) {
    const n = await s.wait({ timeoutMs: WAIT_MS });
    assert.ok(n, `a notification within ${WAIT_MS} ms; so far ${JSON.stringify(got.map((x) => [x.seq, x.type]))}`);
    got.push(n);
    if (endingOf(monitorId)(n)) return got;
  }
}

const texts = (ns) => ns.flatMap((n) => (n.type === 'output' ? n.lines.map((l) => l.text) : []));

test('a restarted gateway that resumes with its stored lastSeq gets exactly what it had not handled',
  { timeout: TEST_TIMEOUT }, async () => {
    const engine = await startEngine();
    const dir = tempDir('gates');
    const [g1, g2] = [new Gate(dir, 'one'), new Gate(dir, 'two')];

    const first = await Client.connect(engine.socket);
    const s1 = await first.session('gateway-a', { lingerMs: 60000 });
    assert.equal(s1.resumed, false);
    const m = await s1.monitorStart({
      command: sh(`echo a; ${g1.until}; echo b; ${g2.until}; echo c`), patterns: [],
    });
    const a = await s1.wait({ timeoutMs: WAIT_MS });
    assert.deepEqual([a.seq, texts([a])], [1, ['a']]);
    g1.open();
    const b = await s1.wait({ timeoutMs: WAIT_MS });
    assert.deepEqual([b.seq, texts([b])], [2, ['b']]);
    assert.equal(s1.lastSeq, 2, 'the session remembers the last seq handed over');
    g2.open();
    const rest = await untilEnding(s1, m.monitor_id);
    assert.deepEqual(rest.map((n) => [n.seq, n.type]), [[3, 'output'], [4, 'exit']]);
    // The gateway "crashes" having acted on seq 2 only: 3 and 4 are what it stored as unhandled.
    const stored = 2;
    await first.close();

    const second = await Client.connect(engine.socket);
    const s2 = await second.session('gateway-a', { lastSeq: stored });
    assert.equal(s2.resumed, true);
    assert.equal(s2.epoch, s1.epoch, 'the same engine');
    const again = await untilEnding(s2, m.monitor_id);
    assert.deepEqual(again.map((n) => [n.seq, n.type]), [[3, 'output'], [4, 'exit']], 'exactly 3 and 4, in order');
    assert.deepEqual(texts(again), ['c']);
    // Nothing else was replayed: the next notification is a new one, seq 5.
    const d = await s2.monitorStart({ command: 'echo d', patterns: [] });
    const next = await s2.wait({ timeoutMs: WAIT_MS });
    assert.deepEqual([next.seq, next.monitor_id, texts([next])], [5, d.monitor_id, ['d']]);
    assert.equal(s2.lastSeq, 5);
    await s2.close();
    await second.close();
  });

test('a session\'s model cursor gives each notification to one of its readers, once',
  { timeout: TEST_TIMEOUT }, async () => {
    const engine = await startEngine();
    const [c1, c2] = [await Client.connect(engine.socket), await Client.connect(engine.socket)];
    const [s1, s2] = [await c1.session('cursors'), await c2.session('cursors')];
    const m = await s1.monitorStart({ command: 'echo built', patterns: [] });
    await untilEnding(s1, m.monitor_id); // seqs 1 and 2
    const first = await s2.cursorTake({ cursor: 'model', limit: 1 });
    assert.deepEqual([first.notifications.map((n) => n.seq), first.cursor, first.last_seq, first.dropped],
      [[1], 1, 2, 0]);
    assert.match(first.notifications[0].text, /stream_policy: untrusted_observation/);
    const second = await s1.cursorTake({ cursor: 'model' });
    assert.deepEqual(second.notifications.map((n) => n.seq), [2], 'the other reader had seq 1');
    assert.deepEqual((await s1.cursorTake({ cursor: 'model' })).notifications, []);
    assert.deepEqual(await s2.cursorGet({ cursor: 'model' }), { cursor: 2, last_seq: 2, kept_from: 1 });
    assert.deepEqual((await s2.notificationsSince({ since_seq: 0 })).notifications.map((n) => n.seq), [1, 2]);
    assert.deepEqual(await s2.cursorAdvance({ cursor: 'hook', to: 2 }), { cursor: 2 });
    // A take that waits is answered by the next notification.
    const waiting = s2.cursorTake({ cursor: 'model', wait_ms: 600000 });
    await s2.ping(); // the take is waiting in the engine
    await s1.monitorStart({ command: 'echo again', patterns: [] });
    const woken = await waiting;
    assert.equal(woken.notifications[0].seq, 3);
    const listed = (await s1.sessionList()).sessions.find((x) => x.session === 'cursors');
    assert.deepEqual(listed.cursors, { model: woken.cursor, hook: 2 });
    await c1.close();
    await c2.close();
  });

test('output made while no gateway was attached is delivered, and only it, to the one that resumes',
  { timeout: TEST_TIMEOUT }, async () => {
    const engine = await startEngine();
    const gate = new Gate(tempDir('gates'), 'detached');
    const first = await Client.connect(engine.socket);
    const s1 = await first.session('gateway-b', { lingerMs: 60000 });
    const m = await s1.monitorStart({ command: sh(`echo before; ${gate.until}; echo while-away; exit 4`), patterns: [] });
    const before = await s1.wait({ timeoutMs: WAIT_MS });
    assert.deepEqual(texts([before]), ['before']);
    const stored = s1.lastSeq;
    await first.close();

    gate.open();
    // Let the command finish while nobody is attached: reading /proc until
    // its process is gone (nothing else announces it to a detached host).
    const deadline = Date.now() + WAIT_MS;
    while (processesWithEnv().some((p) => p.pid === m.pid) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }

    const second = await Client.connect(engine.socket);
    const s2 = await second.session('gateway-b', { lastSeq: stored });
    const missed = await untilEnding(s2, m.monitor_id);
    assert.deepEqual(missed.map((n) => n.seq), [stored + 1, stored + 2]);
    assert.deepEqual(texts(missed), ['while-away']);
    assert.equal(missed.at(-1).exit_code, 4);
    await second.close();
  });

test('with autoReconnect a client comes back by itself after the engine restarts in place, and resumes',
  { timeout: TEST_TIMEOUT }, async () => {
    const engine = await startEngine({ stateDir: true });
    const gate = new Gate(tempDir('gates'), 'restart');
    const client = await Client.connect(engine.socket, { autoReconnect: true });
    try {
      const s = await client.session('gateway-c');
      const m = await s.monitorStart({ command: sh(`echo one; ${gate.until}; echo two`), patterns: [] });
      const one = await s.wait({ timeoutMs: WAIT_MS });
      assert.deepEqual([one.seq, texts([one])], [1, ['one']]);
      const epoch = s.epoch;

      const disconnected = new Promise((resolve) => client.once('disconnect', resolve));
      const reconnected = new Promise((resolve) => client.once('reconnect', resolve));
      process.kill(engine.child.pid, 'SIGUSR2');
      await within(disconnected, WAIT_MS, 'the client to see the connection go');
      await within(reconnected, WAIT_MS, 'the client to reconnect');
      assert.equal(s.resumed, true, 'the restarted engine took the session back');
      assert.equal(s.epoch, epoch, 'a restart in place keeps the epoch');
      assert.deepEqual(await client.ping(), { version: '0.1.0', api_level: 1 });

      gate.open();
      const rest = await untilEnding(s, m.monitor_id);
      assert.deepEqual(rest.map((n) => [n.seq, n.type]), [[2, 'output'], [3, 'exit']]);
      assert.deepEqual(texts(rest), ['two']);
    } finally {
      await client.close();
    }
  });

test('a cursor the engine never reached is told as lost, and the numbering goes on above it',
  { timeout: TEST_TIMEOUT }, async () => {
    const engine = await startEngine();
    const client = await Client.connect(engine.socket);
    try {
      const s = await client.session('gateway-d', { lastSeq: 150 });
      assert.equal(s.resumed, false);
      assert.equal(s.nextSeq, 152);
      const lost = await s.wait({ timeoutMs: WAIT_MS });
      assert.deepEqual([lost.type, lost.seq, lost.from_seq, lost.to_seq, lost.dropped], ['dropped', 151, 151, null, null]);
      await assert.rejects(client.session('gateway-d', { lastSeq: -1 }), /lastSeq must be an integer 0\.\.9007199254740991, got -1/);
    } finally {
      await client.close();
    }
  });

test('sessions on one client each get their own notifications', { timeout: TEST_TIMEOUT }, async () => {
  const engine = await startEngine();
  const client = await Client.connect(engine.socket);
  try {
    const [x, y] = [await client.session('gateway-x'), await client.session('gateway-y')];
    const mx = await x.monitorStart({ command: 'echo for-x', patterns: [] });
    const my = await y.monitorStart({ command: 'echo for-y', patterns: [] });
    const ofY = await untilEnding(y, my.monitor_id);
    const ofX = await untilEnding(x, mx.monitor_id);
    assert.deepEqual([texts(ofX), texts(ofY)], [['for-x'], ['for-y']]);
    assert.ok(ofX.every((n) => n.session === 'gateway-x') && ofY.every((n) => n.session === 'gateway-y'));
    assert.deepEqual([x.lastSeq, y.lastSeq], [2, 2], 'each session numbers its own');
    const list = await client.sessionList();
    assert.deepEqual(list.sessions.map((e) => e.session).slice(1), ['gateway-x', 'gateway-y']);
  } finally {
    await client.close();
  }
});
