// Poll delivery (MCP.md sections 3 and 4, --delivery poll): nothing is
// pushed or appended; notifications_read {since_seq?, wait_ms?, limit?}
// returns the session's notifications, waiting up to wait_ms for the first.
//
// Assumptions where the contract leaves a shape open:
// - notifications_read's structuredContent has `notifications`: the engine's
//   notification maps (at least seq, type, monitor_id, text), oldest first
//   (docs/mcp-mapping.md 7.1); its text content holds their envelopes.
// - An explicit since_seq re-reads what this adapter already returned (MCP.md:
//   "returns the session's notifications after since_seq").
// - wait_ms over 60000 fails the tool's schema: JSON-RPC -32602 naming
//   wait_ms (MCP.md sections 1 and 3).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  Engine, Adapter, sessionName, sh, envelopeLine, isChannel, isNotificationLog, TEST_TIMEOUT, WAIT_MS,
} from './harness.mjs';

let engine;
before(async () => { engine = await Engine.start(); });
after(async () => { await engine?.stop(); });

async function read(a, args) {
  const r = await a.ok('notifications_read', args);
  const list = r.structuredContent?.notifications;
  assert.ok(Array.isArray(list), `structuredContent.notifications: ${JSON.stringify(r.structuredContent)}`);
  const text = r.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
  for (const n of list) {
    assert.equal(typeof n.seq, 'number');
    assert.ok(text.includes(n.text), `the text content holds notification ${n.seq}'s envelope`);
  }
  return list;
}

test('with --delivery poll nothing is pushed, and notifications_read with wait_ms returns each notification once, in order',
  { timeout: TEST_TIMEOUT }, async () => {
    const a = await Adapter.start(engine, { session: sessionName('poll'), delivery: 'poll' });
    assert.ok(a.tool('notifications_read'), 'notifications_read is listed');
    const gate = engine.gate('poll');
    const started = await a.ok('monitor_start', {
      command: sh(`echo "ERROR: one"; ${gate.until()}; echo "ERROR: two"`), label: 'poller', patterns: ['^ERROR'],
    });
    const id = started.structuredContent.monitor_id;
    assert.deepEqual(started.content.length, 1, 'nothing is appended to results in poll mode');

    const first = await read(a, { wait_ms: WAIT_MS });
    assert.ok(first.length >= 1, 'the wait returned the first notification');
    assert.equal(first[0].monitor_id, id);
    assert.equal(first[0].type, 'output');
    assert.match(first[0].text, envelopeLine('stdout', 'ERROR: one'));
    assert.ok(first.every((n) => !n.text.includes('ERROR: two')), 'nothing from after the gate yet');

    // The child now waits for the gate: nothing new, and nothing returned twice.
    assert.deepEqual(await read(a, { wait_ms: 0 }), [], 'a second read returns nothing already returned');

    gate.open();
    const all = [...first];
    for (let i = 0; !all.some((n) => n.monitor_id === id && n.type === 'exit'); i++) {
      assert.ok(i < 20, `the ending came: ${JSON.stringify(all.map((n) => [n.seq, n.type]))}`);
      const more = await read(a, { wait_ms: WAIT_MS });
      assert.ok(more.length >= 1, `a read waiting ${WAIT_MS} ms returned something`);
      all.push(...more);
    }
    const seqs = all.map((n) => n.seq);
    assert.deepEqual(seqs, seqs.map((_, i) => i + 1), `seqs 1..N, once each, in order: ${seqs.join(' ')}`);
    assert.match(all.filter((n) => n.type === 'output').map((n) => n.text).join(''), envelopeLine('stdout', 'ERROR: two'));

    // since_seq reads again from a cursor of the harness's choosing.
    assert.deepEqual((await read(a, { since_seq: 0 })).map((n) => n.seq), seqs);
    assert.deepEqual((await read(a, { since_seq: seqs[0] })).map((n) => n.seq), seqs.slice(1));
    assert.deepEqual((await read(a, { since_seq: 0, limit: 1 })).map((n) => n.seq), [seqs[0]], 'limit bounds a read');

    assert.deepEqual(a.inbox.items.filter(isChannel), [], 'no notifications/claude/channel in poll mode');
    assert.deepEqual(a.inbox.items.filter(isNotificationLog), [], 'no notifications/message for notifications in poll mode');
    await a.close();
  });

test('notifications_read waits up to wait_ms and then returns an empty list when nothing comes', { timeout: TEST_TIMEOUT }, async () => {
  const a = await Adapter.start(engine, { session: sessionName('poll-empty'), delivery: 'poll' });
  const t0 = Date.now();
  assert.deepEqual(await read(a, { wait_ms: 1000 }), []);
  assert.ok(Date.now() - t0 >= 900, `it waited about 1000 ms, not ${Date.now() - t0} ms`);
  await a.close();
});

test('notifications_read refuses a wait_ms over 60000 with -32602 naming wait_ms', { timeout: TEST_TIMEOUT }, async () => {
  const a = await Adapter.start(engine, { session: sessionName('poll-bound'), delivery: 'poll' });
  const e = await a.rpcError('notifications_read', { wait_ms: 60001 }, -32602);
  assert.match(e.message, /wait_ms/);
  await a.close();
});

// Issue 22 point 23: --profile hermes --delivery poll listed no tool that
// reads notifications, so they were never seen. Every profile, in every
// delivery mode, lists notifications_read (MCP.md section 4: "a read tool
// in every profile"; no seed has a tool of its own for notifications).
for (const profile of ['vigil', 'watch_process', 'process', 'monitor', 'hermes']) {
  test(`--profile ${profile} lists notifications_read in every delivery mode`,
    { timeout: TEST_TIMEOUT }, async () => {
      for (const delivery of ['channel', 'piggyback', 'poll']) {
        const a = await Adapter.start(engine, { session: sessionName(`rd-${profile}`), profile, delivery });
        assert.ok(a.tool('notifications_read'), `${profile} x ${delivery}: ${a.tools.map((t) => t.name).join(', ')}`);
        await a.close();
      }
    });
}

test('--profile hermes --delivery poll: a background terminal\'s ending is read with notifications_read',
  { timeout: TEST_TIMEOUT }, async () => {
    const a = await Adapter.start(engine, { session: sessionName('rd-h'), profile: 'hermes', delivery: 'poll' });
    const id = (await a.ok('terminal', { command: sh('echo done; exit 4'), background: true, notify_on_complete: true }))
      .structuredContent.session_id;
    const got = await read(a, { wait_ms: WAIT_MS });
    assert.deepEqual(got.map((n) => [n.monitor_id, n.type]), [[id, 'exit']]);
    assert.match(got[0].text, /exited with code 4/);
    await a.close();
  });
