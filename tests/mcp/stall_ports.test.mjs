// Issue 26 through `vigil mcp`'s vigil profile: monitor_status and
// monitor_list carry the TCP ports a monitor's processes listen on (`ports`:
// [{port, address}], found from /proc by the engine) in the structured
// result and in its text; monitor_start takes `quiet_after_ms`, and a quiet
// monitor is told once ("no output for ...", a channel notification) and
// its status says `quiet_since`.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Engine, Adapter, sessionName, sh, textOf, TEST_TIMEOUT, WAIT_MS, within } from './harness.mjs';

let engine;
before(async () => { engine = await Engine.start(); });
after(async () => { await engine?.stop(); });

// Binds an ephemeral loopback port, prints it, waits (python3 through sh:
// the test config allows sh).
const SERVER = 'import socket,time\n' +
  "s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen()\n" +
  "print('port=%d' % s.getsockname()[1], flush=True)\ntime.sleep(600)\n";

test('monitor_status and monitor_list name the port the server listens on', { timeout: TEST_TIMEOUT }, async () => {
  const a = await Adapter.start(engine, { session: sessionName('ports') });
  const server = path.join(engine.dir, 'server.py');
  fs.writeFileSync(server, SERVER);
  const id = (await a.ok('monitor_start', {
    command: sh(`exec python3 ${server}`), label: 'server', patterns: ['^port='],
  })).structuredContent.monitor_id;
  const n = await a.waitChannel(id, { contains: 'port=' });
  const port = Number(/port=(\d+)/.exec(JSON.stringify(n.params))[1]);
  const st = await within(a.ok('monitor_status', { monitor_id: id }), WAIT_MS, 'monitor_status');
  assert.deepEqual(st.structuredContent.ports, [{ port, address: '127.0.0.1' }], JSON.stringify(st.structuredContent));
  assert.ok(textOf(st).includes(`"port": ${port}`) || textOf(st).includes(`"port":${port}`), textOf(st));
  const listed = await a.ok('monitor_list', {});
  const entry = listed.structuredContent.monitors.find((m) => m.monitor_id === id);
  assert.deepEqual(entry.ports.map((p) => p.port), [port], JSON.stringify(entry));
  await a.ok('monitor_stop', { monitor_id: id });
  assert.deepEqual(await a.endInput(), { code: 0, signal: null });
});

test('quiet_after_ms tells once that a monitor went quiet, and status says since when', { timeout: TEST_TIMEOUT }, async () => {
  const a = await Adapter.start(engine, { session: sessionName('quiet') });
  const id = (await a.ok('monitor_start', {
    command: sh('echo the last line; exec sleep 600'), quiet_after_ms: 300, patterns: [],
  })).structuredContent.monitor_id;
  const n = await a.waitChannel(id, { contains: 'no output for 300ms' });
  assert.ok(JSON.stringify(n.params).includes('the last line'), JSON.stringify(n.params));
  const st = await a.ok('monitor_status', { monitor_id: id });
  assert.equal(typeof st.structuredContent.quiet_since, 'string', JSON.stringify(st.structuredContent));
  await a.ok('monitor_stop', { monitor_id: id });
  assert.deepEqual(await a.endInput(), { code: 0, signal: null });
});
