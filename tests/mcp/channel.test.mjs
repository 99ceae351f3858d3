// Channel delivery (MCP.md section 4, the default): the vigil profile's
// monitor_start with patterns, a matching line pushed as
// notifications/claude/channel with the envelope and the ids, the ending,
// the notifications/message twin, each once and in seq order.
//
// Assumptions where the contract leaves a shape open:
// - notifications/message: `data` is the structured notification with at
//   least its `seq` (a number), `type` and `monitor_id`; its `level` is one of
//   MCP's levels. Which level each type gets is not fixed, so the test only
//   requires that at the default level (info) every channel notification has
//   its notifications/message twin (output is the least severe of them).
// - The monitor_start result's structuredContent carries `monitor_id` (the
//   engine's key, docs/protocol.md) and its content starts with a text item.
// - A new session's notifications are numbered from 1 (docs/protocol.md
//   section 3), so "every notification once, in order" is seqs 1..N.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  Engine, Adapter, sessionName, sh, envelopeLine, isChannel, isVigilLog, ENDINGS, TEST_TIMEOUT, textOf,
} from './harness.mjs';

let engine;
before(async () => { engine = await Engine.start(); });
after(async () => { await engine?.stop(); });

const META_KEYS = ['label', 'mode', 'monitor_id', 'seq', 'source', 'type'];

function checkMeta(n, { monitorId, label, type }) {
  const meta = n.params.meta;
  assert.deepEqual(Object.keys(meta).sort(), META_KEYS, `meta has exactly MCP.md's keys: ${JSON.stringify(meta)}`);
  for (const [k, v] of Object.entries(meta)) {
    assert.equal(typeof v, 'string', `meta.${k} is a string: ${JSON.stringify(meta)}`);
  }
  assert.equal(meta.source, 'vigil');
  assert.equal(meta.monitor_id, monitorId);
  assert.equal(meta.label, label);
  assert.equal(meta.type, type);
  assert.match(meta.seq, /^[1-9][0-9]*$/);
  assert.equal(meta.mode, 'idle');
}

test('a line matching a pattern arrives as notifications/claude/channel with the envelope and string ids, then the ending',
  { timeout: TEST_TIMEOUT }, async () => {
    const a = await Adapter.start(engine, { session: sessionName('chan') });
    const gate = engine.gate('chan');
    const started = await a.ok('monitor_start', {
      command: sh(`echo starting; echo "ERROR: disk full"; echo calm; ${gate.until()}; echo finished`),
      label: 'build',
      patterns: ['^ERROR'],
    });
    assert.equal(typeof textOf(started), 'string', 'the start result renders as text');
    const id = started.structuredContent.monitor_id;
    assert.match(id, /^mon_[0-9a-z]{12}$/);

    const out = await a.waitChannel(id, { type: 'output', contains: 'ERROR: disk full' });
    const content = out.params.content;
    assert.ok(content.startsWith('<<<VIGIL OBSERVATION '), `content is the envelope: ${content}`);
    assert.match(content, /^<<<VIGIL OBSERVATION [0-9a-f]{32} END>>>\n$/m, 'the envelope is whole');
    assert.match(content, /stream_policy: untrusted_observation/);
    assert.match(content, envelopeLine('stdout', 'ERROR: disk full'));
    assert.doesNotMatch(content, envelopeLine('stdout', 'starting'), 'an unmatched line is not pushed');
    assert.doesNotMatch(content, envelopeLine('stdout', 'calm'), 'an unmatched line is not pushed');
    checkMeta(out, { monitorId: id, label: 'build', type: 'output' });

    gate.open();
    const end = await a.waitEnding(id);
    checkMeta(end, { monitorId: id, label: 'build', type: 'exit' });
    assert.match(end.params.content, /^<<<VIGIL OBSERVATION [0-9a-f]{32} BEGIN>>>\n/);
    assert.match(end.params.content, /exited with code 0/);
    assert.ok(Number(end.params.meta.seq) > Number(out.params.meta.seq), 'the ending comes after the output');

    // The structured twin, with logger "vigil".
    const log = await a.inbox.waitFor((m) => isVigilLog(m) && m.params.data?.seq === Number(out.params.meta.seq),
      { what: 'the notifications/message of the output notification' });
    assert.ok(['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'].includes(log.params.level));
    assert.equal(log.params.data.type, 'output');
    assert.equal(log.params.data.monitor_id, id);
    await a.inbox.waitFor((m) => isVigilLog(m) && m.params.data?.seq === Number(end.params.meta.seq),
      { what: 'the notifications/message of the ending' });
    const seqs = a.channel().map((n) => Number(n.params.meta.seq));
    assert.deepEqual(seqs, seqs.map((_, i) => i + 1), `each notification once, in order: ${seqs.join(' ')}`);
    await a.close();
  });

test('the notifications of several monitors reach the harness each once, in seq order, each with its notifications/message',
  { timeout: TEST_TIMEOUT }, async () => {
    const a = await Adapter.start(engine, { session: sessionName('order') });
    const ids = [];
    for (const label of ['one', 'two', 'three']) {
      const r = await a.ok('monitor_start', {
        command: sh(`for i in 1 2 3 4 5; do echo ${label}-$i; done`), label, notify: 'lines',
      });
      ids.push(r.structuredContent.monitor_id);
    }
    const endings = await Promise.all(ids.map((id) => a.waitEnding(id)));
    for (const end of endings) assert.equal(end.params.meta.type, 'exit');
    // The last notification is an ending; once its twin is in, everything written before it is.
    const lastEnding = endings.reduce((x, y) => (Number(x.params.meta.seq) > Number(y.params.meta.seq) ? x : y));
    await a.twinOf(lastEnding);

    const channel = a.channel();
    const seqs = channel.map((n) => Number(n.params.meta.seq));
    assert.deepEqual(seqs, seqs.map((_, i) => i + 1), `seqs 1..N, once each, in order: ${seqs.join(' ')}`);
    for (const id of ids) {
      const own = channel.filter((n) => n.params.meta.monitor_id === id);
      const kinds = own.map((n) => n.params.meta.type);
      assert.equal(kinds.filter((t) => ENDINGS.includes(t)).length, 1, `one ending for ${id}: ${kinds}`);
      assert.ok(ENDINGS.includes(kinds.at(-1)), `the ending is ${id}'s last notification: ${kinds}`);
      const label = own[0].params.meta.label;
      const text = own.filter((n) => n.params.meta.type === 'output').map((n) => n.params.content).join('');
      for (let i = 1; i <= 5; i++) {
        assert.match(text, envelopeLine('stdout', `${label}-${i}`), `${label}-${i} was pushed`);
      }
    }
    const logs = a.vigilLogs();
    for (const s of seqs) {
      assert.equal(logs.filter((m) => m.params.data?.seq === s).length, 1, `one notifications/message for seq ${s}`);
    }
    assert.equal(a.inbox.items.filter(isChannel).length, seqs.length);
    await a.close();
  });
