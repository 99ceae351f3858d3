// wait_ready on the start tools (docs/readiness.md, docs/mcp.md): a start
// that declares readiness and asks wait_ready returns once the engine says
// the monitor is ready, with `ready` in its result; when it is not ready by
// ready_timeout_ms the result says so with the last lines, escaped and
// framed like every process text, and the monitor runs on.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { Engine, Adapter, sessionName, sh, textOf, TEST_TIMEOUT } from './harness.mjs';

let engine;
before(async () => { engine = await Engine.start(); });
after(async () => { await engine?.stop(); });

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

test('vigil monitor_start with wait_ready returns at readiness, with its reason',
  { timeout: TEST_TIMEOUT }, async () => {
    const a = await Adapter.start(engine, { session: sessionName('ready') });
    const r = await a.ok('monitor_start', {
      command: sh('echo booting; sleep 0.4; echo Local: http://x:5173/; sleep 30'),
      ready_log: 'Local:\\s+http', wait_ready: true,
    });
    const sc = r.structuredContent;
    assert.equal(sc.ready?.ready, true, JSON.stringify(sc));
    assert.match(sc.ready.reason, /^ready after \d+\.\d s \(a line matched ready_log\)$/);
    const out = await a.ok('monitor_output', { monitor_id: sc.monitor_id });
    assert.ok(out.structuredContent.lines.some((l) => l.text.startsWith('Local:')),
      'the ready line was read before the start returned');
    await a.ok('monitor_stop', { monitor_id: sc.monitor_id });
    await a.close();
  });

test('not ready by ready_timeout_ms is a result with the last lines framed, the monitor left running',
  { timeout: TEST_TIMEOUT }, async () => {
    const a = await Adapter.start(engine, { session: sessionName('notready') });
    const port = await freePort();
    const r = await a.ok('monitor_start', {
      command: sh('printf "EADDRINUSE \\033[2J\\n"; exec sleep 30'),
      ready_tcp: port, ready_timeout_ms: 1000, wait_ready: true,
    });
    const sc = r.structuredContent;
    assert.equal(sc.ready?.ready, false, JSON.stringify(sc));
    assert.match(sc.ready.reason, new RegExp(`^not ready after 1\\.0 s \\(port ${port}: `));
    assert.equal(sc.ready.state, 'running');
    assert.ok(sc.ready.output.includes('EADDRINUSE'), JSON.stringify(sc.ready));
    assert.ok(!sc.ready.output.includes('\u001b'), 'the escape is escaped');
    const text = textOf(r);
    assert.match(text, /BEGIN/, 'the text item frames the process text');
    assert.ok(!text.includes('\u001b'), 'no raw escape in the text item');
    await a.ok('monitor_stop', { monitor_id: sc.monitor_id });
    // An off-loopback URL is refused before anything starts.
    await a.toolError('monitor_start', { command: 'sleep 5', ready_http: 'http://example.com/' },
      'invalid_params');
    await a.close();
  });
