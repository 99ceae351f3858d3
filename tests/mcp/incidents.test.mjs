// Incidents through `vigil mcp` (vigil profile, poll delivery): a monitor
// started without patterns reports a crash as one notification holding its
// trace, `incidents` rides on the notification map, monitor_output
// {incident} returns the incident's lines, and the compact frame is an
// `envelope` argument away (docs/incidents.md); line_buffered reaches the
// engine the same way.
//
// Assumption where the contract leaves a shape open: the vigil profile's
// monitor_start and monitor_output take the engine's `incidents`, `envelope`
// and `incident` arguments as they are (docs/mcp-mapping.md).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Engine, Adapter, sessionName, sh, envelopeLine, untilEnding, TEST_TIMEOUT } from './harness.mjs';

let engine;
before(async () => { engine = await Engine.start(); });
after(async () => { await engine?.stop(); });

test('a crash with no patterns given is one incident with its trace, and monitor_output returns it',
  { timeout: TEST_TIMEOUT }, async () => {
    const a = await Adapter.start(engine, { session: sessionName('inc'), delivery: 'poll' });
    const crash = 'printf "TypeError: x is undefined\\n    at f (/app/a.js:1:2)\\n" >&2; echo "GET / 200 2ms"';
    const started = await a.ok('monitor_start', { command: sh(crash), label: 'api' });
    const id = started.structuredContent.monitor_id;
    assert.equal(started.structuredContent.notify, 'matches');
    const notes = await untilEnding(a, id);
    const outputs = notes.filter((n) => n.type === 'output');
    assert.equal(outputs.length, 1, JSON.stringify(notes.map((n) => n.text)));
    const inc = outputs[0].incidents;
    assert.equal(inc.length, 1);
    assert.equal(inc[0].kind, 'crash');
    assert.equal(inc[0].lines.length, 2);
    assert.match(outputs[0].text, envelopeLine('stderr', 'TypeError: x is undefined'));
    assert.ok(!outputs[0].text.includes('GET / 200'), 'the healthy line is not reported');

    const got = await a.ok('monitor_output', { monitor_id: id, incident: inc[0].id });
    assert.deepEqual(got.structuredContent.lines.map((l) => l.seq), inc[0].lines.map((l) => l.seq));
    assert.equal(got.structuredContent.incident.fingerprint, inc[0].fingerprint);
    await a.close();
  });

test('envelope compact and incidents false reach the engine',
  { timeout: TEST_TIMEOUT }, async () => {
    const a = await Adapter.start(engine, { session: sessionName('inc2'), delivery: 'poll' });
    const started = await a.ok('monitor_start', {
      command: sh('echo "Error: one"; echo "Error: two"'), patterns: ['^Error:'], incidents: false,
      envelope: 'compact',
    });
    const id = started.structuredContent.monitor_id;
    const notes = await untilEnding(a, id);
    const outputs = notes.filter((n) => n.type === 'output');
    const lines = outputs.flatMap((n) => n.lines.map((l) => l.text));
    assert.deepEqual(lines, ['Error: one', 'Error: two'], 'each matching line on its own, none coalesced');
    assert.ok(outputs.every((n) => n.incidents.length === 0));
    assert.match(outputs[0].text.split('\n')[1], /^stream_policy: untrusted_observation \(/);
    await a.close();
  });

// line_buffered, like envelope and incidents, is passed to the engine as
// given: false leaves the child's environment without the PYTHONUNBUFFERED=1
// the engine otherwise adds (the harness does not pass its own on).
test('line_buffered false reaches the engine, the default line-buffers',
  { timeout: TEST_TIMEOUT }, async () => {
    const a = await Adapter.start(engine, { session: sessionName('lb'), delivery: 'poll' });
    const probe = sh('echo "PYTHONUNBUFFERED=${PYTHONUNBUFFERED-unset}"');
    const seen = [];
    for (const extra of [{}, { line_buffered: false }]) {
      const started = await a.ok('monitor_start', { command: probe, patterns: [], ...extra });
      const id = started.structuredContent.monitor_id;
      await untilEnding(a, id);
      const got = await a.ok('monitor_output', { monitor_id: id });
      seen.push(got.structuredContent.lines.map((l) => l.text));
    }
    assert.deepEqual(seen, [['PYTHONUNBUFFERED=1'], ['PYTHONUNBUFFERED=unset']]);
    await a.close();
  });
