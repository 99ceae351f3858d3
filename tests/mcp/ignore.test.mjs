// Silencing a known incident through `vigil mcp` (docs/mcp.md, "Silencing
// a known incident"): the vigil profile's incident_ignore / incident_ignored
// / incident_unignore, and each seed profile's one tool in its own words
// (process.ignore, watch_process_ignore, MonitorIgnore, Hermes'
// process(action="ignore")). What a model notices: after it ignores a
// fingerprint, an incident with it no longer reaches it while another
// incident still does, and the list shows the hit; in every profile the
// tool takes the fingerprint a notification's "to silence" line gives.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Engine, Adapter, sessionName, sh, untilEnding, TEST_TIMEOUT } from './harness.mjs';

const ABORT = 'Error: request aborted (client closed the connection)';

let engine;
before(async () => { engine = await Engine.start(); });
after(async () => { await engine?.stop(); });

const incidentsOf = (notes) => notes.flatMap((n) => n.incidents ?? []);

test('vigil profile: an ignored fingerprint no longer wakes the model, another incident still does',
  { timeout: TEST_TIMEOUT }, async () => {
    const a = await Adapter.start(engine, { session: sessionName('ign'), delivery: 'poll' });
    const first = await a.ok('monitor_start', { command: sh(`echo "${ABORT}"`), label: 'first' });
    const [inc] = incidentsOf(await untilEnding(a, first.structuredContent.monitor_id));
    assert.equal(inc.lines[0].text, ABORT);

    const got = await a.ok('incident_ignore', { fingerprint: inc.fingerprint, reason: 'benign', for: 'always' });
    assert.equal(got.structuredContent.ignored.fingerprint, inc.fingerprint);
    assert.equal(got.structuredContent.ignored.expires_at, null);

    const again = await a.ok('monitor_start', { command: sh(`echo "${ABORT}"; echo "TypeError: boom" >&2`), label: 'again' });
    const notes = await untilEnding(a, again.structuredContent.monitor_id);
    assert.deepEqual(incidentsOf(notes).map((i) => i.lines[0].text), ['TypeError: boom']);

    const listed = (await a.ok('incident_ignored', {})).structuredContent.ignored;
    assert.deepEqual(listed.map((e) => [e.fingerprint, e.reason, e.hits]), [[inc.fingerprint, 'benign', 1]]);
    // Bad input is the engine's error, named.
    await a.toolError('incident_ignore', { fingerprint: 'zzzzzzzzzzzzzzzz' }, 'invalid_params');
    await a.ok('incident_unignore', { fingerprint: inc.fingerprint });
    assert.deepEqual((await a.ok('incident_ignored', {})).structuredContent.ignored, []);
    await a.close();
  });

for (const [profile, tool, extra] of [
  ['process', 'process.ignore', {}],
  ['watch_process', 'watch_process_ignore', {}],
  ['monitor', 'MonitorIgnore', {}],
  ['hermes', 'process', { action: 'ignore' }],
]) {
  test(`--profile ${profile}: ${tool} ignores, lists and unignores a fingerprint`,
    { timeout: TEST_TIMEOUT }, async () => {
      const a = await Adapter.start(engine, { session: sessionName(`ign-${profile}`), profile, delivery: 'poll' });
      const fp = '00000000000000ab';
      const got = await a.ok(tool, { ...extra, fingerprint: fp, reason: 'known', for: 60000 });
      assert.equal(got.structuredContent.ignored.fingerprint, fp);
      assert.notEqual(got.structuredContent.ignored.expires_at, null);
      const list = profile === 'hermes' ? { action: 'ignored' } : { action: 'list' };
      const listed = (await a.ok(tool, list)).structuredContent.ignored;
      assert.deepEqual(listed.map((e) => e.fingerprint), [fp]);
      await a.ok(tool, { action: 'unignore', fingerprint: fp });
      assert.deepEqual((await a.ok(tool, list)).structuredContent.ignored, []);
      await a.close();
    });
}
