// Sessions (MCP.md sections 1, 2 and 4): a harness restart, i.e. a second
// adapter on the same --session after the first has exited, receives what
// the first had not delivered and nothing the first delivered (exactly once
// across the restart); two adapters of one session each receive every
// notification; another session sees none of it.
//
// Assumptions where the contract leaves a shape open:
// - With --delivery channel (which trusts the push) the adapter moves the
//   session's model cursor past what it pushed, and its last seq pushed is
//   kept in a state file next to the socket, written by the time it exits
//   after stdin EOF; both adapters here use the same socket, so the same
//   file. (auto, the default, pushes without moving the cursor: auto.test.mjs.)
// - A notification made while no adapter is attached is held by the engine
//   (session linger, docs/protocol.md section 3) and numbered right after
//   the last one the first adapter delivered, so the second adapter's seqs
//   continue the first's without a gap.
// - In poll mode a fresh adapter's default cursor is the resumed one, so
//   notifications_read returns nothing an earlier adapter delivered.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Engine, Adapter, sessionName, sh, envelopeLine, TEST_TIMEOUT } from './harness.mjs';

let engine;
before(async () => { engine = await Engine.start(); });
after(async () => { await engine?.stop(); });

const seqsOf = (a) => a.channel().map((n) => Number(n.params.meta.seq));

test('channel: a second adapter on the same session after the first exited receives what the first had not delivered, and nothing it had',
  { timeout: TEST_TIMEOUT }, async () => {
    const session = sessionName('restart');
    const g1 = engine.gate('restart-1');
    const g2 = engine.gate('restart-2');
    const first = await Adapter.start(engine, { session, delivery: 'channel' });
    const id = (await first.ok('monitor_start', {
      command: sh(`echo line-alpha; ${g1.until()}; echo line-bravo; ${g2.until()}; echo line-charlie`),
      label: 'restart', notify: 'lines',
    })).structuredContent.monitor_id;
    await first.waitChannel(id, { type: 'output', contains: 'line-alpha' });
    const firstSeqs = seqsOf(first);
    assert.deepEqual(firstSeqs, firstSeqs.map((_, i) => i + 1));
    assert.deepEqual(await first.endInput(), { code: 0, signal: null }, 'the first adapter exits 0 at stdin EOF');

    // line-bravo is printed while no adapter is attached.
    g1.open();
    const second = await Adapter.start(engine, { session, delivery: 'channel' });
    await second.waitChannel(id, { type: 'output', contains: 'line-bravo' });
    g2.open();
    const end = await second.waitEnding(id);
    assert.equal(end.params.meta.type, 'exit');
    await second.twinOf(end);

    const secondSeqs = seqsOf(second);
    const last = firstSeqs.at(-1);
    assert.deepEqual(secondSeqs, secondSeqs.map((_, i) => last + 1 + i),
      `the second adapter's seqs continue the first's (${firstSeqs.join(' ')}) without a gap or a repeat: ${secondSeqs.join(' ')}`);
    const output = second.channel().filter((n) => n.params.meta.type === 'output').map((n) => n.params.content).join('');
    assert.match(output, envelopeLine('stdout', 'line-bravo'));
    assert.match(output, envelopeLine('stdout', 'line-charlie'));
    assert.doesNotMatch(output, envelopeLine('stdout', 'line-alpha'), 'what the first adapter delivered is not delivered again');
    assert.deepEqual(await second.endInput(), { code: 0, signal: null });

    // A third adapter finds nothing left to deliver.
    const third = await Adapter.start(engine, { session, delivery: 'poll' });
    const r = await third.ok('notifications_read', { wait_ms: 2000 });
    assert.deepEqual(r.structuredContent.notifications, [], 'nothing the second adapter delivered comes again');
    await third.close();
  });

test('two adapters attached to one session at once each receive every notification, once', { timeout: TEST_TIMEOUT }, async () => {
  const session = sessionName('twins');
  const a = await Adapter.start(engine, { session });
  const b = await Adapter.start(engine, { session });
  // A tool call needs the session: after these both adapters are attached.
  await a.ok('monitor_list', {});
  await b.ok('monitor_list', {});
  const id = (await a.ok('monitor_start', {
    command: sh('echo twin-1; echo twin-2'), label: 'twins', notify: 'lines',
  })).structuredContent.monitor_id;
  await Promise.all([a, b].map(async (x) => x.twinOf(await x.waitEnding(id))));
  for (const x of [a, b]) {
    const seqs = seqsOf(x);
    assert.deepEqual(seqs, seqs.map((_, i) => i + 1), `seqs 1..N once each: ${seqs.join(' ')}`);
    const output = x.channel().filter((n) => n.params.meta.type === 'output').map((n) => n.params.content).join('');
    assert.match(output, envelopeLine('stdout', 'twin-1'));
    assert.match(output, envelopeLine('stdout', 'twin-2'));
  }
  assert.deepEqual(seqsOf(a), seqsOf(b));
  await a.close();
  await b.close();
});

test('an adapter of another session cannot see a monitor and receives none of its notifications', { timeout: TEST_TIMEOUT }, async () => {
  const mine = await Adapter.start(engine, { session: sessionName('mine') });
  const other = await Adapter.start(engine, { session: sessionName('other') });
  const id = (await mine.ok('monitor_start', { command: sh('echo private-line'), label: 'mine', notify: 'lines' }))
    .structuredContent.monitor_id;
  await mine.twinOf(await mine.waitEnding(id));
  await other.toolError('monitor_status', { monitor_id: id }, 'not_found');
  await other.toolError('monitor_stop', { monitor_id: id }, 'not_found');
  const listed = await other.ok('monitor_list', { include_exited: true });
  assert.ok(!listed.structuredContent.monitors.some((m) => m.monitor_id === id));
  assert.deepEqual(other.channel(), [], 'no notification of another session');
  await mine.close();
  await other.close();
});
