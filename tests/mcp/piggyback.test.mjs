// Piggyback delivery (MCP.md section 4, --delivery piggyback): nothing is
// pushed; each tools/call result carries the notifications not yet
// delivered, as extra text content items and in
// structuredContent.notifications.
//
// In this mode nothing tells the harness that a notification has reached the
// adapter: the harness learns it from its next call. So after an event the
// test can await (monitor_wait for the exit), it calls a read-only tool again
// until the ending shows up, bounded by WAIT_MS: what is asserted is what the
// results carry, never how soon.
//
// Assumptions where the contract leaves a shape open:
// - The tool's own text is the first content item; the notifications' items
//   follow it, one per notification, in the order of
//   structuredContent.notifications, each item's text being that
//   notification's envelope (`text`).
// - Each entry of structuredContent.notifications is the engine's
//   notification map (docs/protocol.md section 6): at least seq, type,
//   monitor_id and text.
// - A result with nothing to carry has no extra content item and no (or an
//   empty) structuredContent.notifications.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  Engine, Adapter, sessionName, sh, envelopeLine, isChannel, isNotificationLog, TEST_TIMEOUT, WAIT_MS,
} from './harness.mjs';

let engine;
before(async () => { engine = await Engine.start(); });
after(async () => { await engine?.stop(); });

/** The notifications a result carries, checked against its content items. */
function carried(result) {
  const list = result.structuredContent?.notifications ?? [];
  assert.ok(Array.isArray(list), `structuredContent.notifications is a list: ${JSON.stringify(result.structuredContent)}`);
  assert.equal(result.content.length, 1 + list.length,
    `one text item for the tool, then one per notification: ${JSON.stringify(result.content)}`);
  assert.equal(result.content[0].type, 'text');
  assert.ok(!result.content[0].text.startsWith('<<<VIGIL OBSERVATION'), 'the tool\'s own text comes first');
  list.forEach((n, i) => {
    const item = result.content[i + 1];
    assert.equal(item.type, 'text');
    assert.equal(item.text, n.text, `content item ${i + 1} is notification ${n.seq}'s envelope`);
    assert.ok(item.text.startsWith('<<<VIGIL OBSERVATION '), `an envelope: ${item.text}`);
    assert.equal(typeof n.seq, 'number');
    assert.equal(typeof n.type, 'string');
  });
  return list;
}

test('with --delivery piggyback nothing is pushed, and the next tool results carry the match and the ending, each once and in order',
  { timeout: TEST_TIMEOUT }, async () => {
    const a = await Adapter.start(engine, { session: sessionName('piggy'), delivery: 'piggyback' });
    const all = [];
    const start = await a.ok('monitor_start', {
      command: sh('echo quiet; echo "ERROR: disk full"; echo quiet again'), label: 'piggy', patterns: ['^ERROR'],
    });
    all.push(...carried(start));
    const id = start.structuredContent.monitor_id;
    assert.match(id, /^mon_[0-9a-z]{12}$/);

    const waited = await a.ok('monitor_wait', { monitor_id: id, for: 'exit', timeout_ms: WAIT_MS });
    assert.equal(waited.structuredContent.timed_out, false, 'the monitor ended within the wait');
    all.push(...carried(waited));

    const deadline = Date.now() + WAIT_MS;
    while (!all.some((n) => n.monitor_id === id && n.type === 'exit')) {
      assert.ok(Date.now() < deadline,
        `the ending was piggybacked within ${WAIT_MS} ms; carried so far: ${JSON.stringify(all.map((n) => [n.seq, n.type]))}`);
      await new Promise((r) => setTimeout(r, 50));
      const status = await a.ok('monitor_status', { monitor_id: id });
      assert.equal(status.structuredContent.monitor_id, id, 'the tool\'s own result is still there');
      all.push(...carried(status));
    }

    const seqs = all.map((n) => n.seq);
    assert.deepEqual(seqs, seqs.map((_, i) => i + 1), `seqs 1..N, once each, in order: ${seqs.join(' ')}`);
    const output = all.filter((n) => n.type === 'output');
    assert.ok(output.length >= 1, 'the match was carried');
    assert.match(output.map((n) => n.text).join(''), envelopeLine('stdout', 'ERROR: disk full'));
    assert.ok(output.every((n) => n.monitor_id === id));

    // Nothing new: nothing carried, nothing carried twice.
    const again = await a.ok('monitor_list', { include_exited: true });
    assert.deepEqual(carried(again), [], 'a result after everything was delivered carries nothing');

    assert.deepEqual(a.inbox.items.filter(isChannel), [], 'no notifications/claude/channel in piggyback mode');
    assert.deepEqual(a.inbox.items.filter(isNotificationLog), [], 'no notifications/message for notifications in piggyback mode');
    await a.close();
  });
