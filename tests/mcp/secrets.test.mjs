// What a model reads never holds what starts a monitor (docs/protocol.md,
// monitor_status): the argv and env a person gave `vigil start` in the
// session an agent shares are no tool's result. monitor_status and
// monitor_list through the vigil profile carry no `start`, and the tool
// cannot be asked for one.
//
// Assumption where the contract leaves a shape open: the vigil profile's
// monitor_status result has no `start` key at all (not even null), so no
// harness shows the model that there is something to ask for.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Engine, Adapter, VIGIL, sessionName, testEnv, TEST_TIMEOUT } from './harness.mjs';

const run = promisify(execFile);

let engine;
before(async () => { engine = await Engine.start(); });
after(async () => { await engine?.stop(); });

const SECRET = 'sk-live-mcp-0123456789abcdef';

test('monitor_status and monitor_list never carry the argv or env a monitor was started with',
  { timeout: TEST_TIMEOUT }, async () => {
    const session = sessionName('secrets');
    const a = await Adapter.start(engine, { session });
    // A person starts a dev server with a key, in the session the agent uses.
    const { stdout } = await run(VIGIL, ['--socket', engine.socket, '--session', session, 'start',
      '--env', `API_KEY=${SECRET}`, '--', 'sh', '-c', 'exec sleep 60', 'sh', `--token=${SECRET}`],
    { env: testEnv() });
    const id = stdout.trim();
    assert.match(id, /^mon_[0-9a-z]{12}$/);

    const status = await a.ok('monitor_status', { monitor_id: id });
    assert.equal(status.structuredContent.monitor_id, id);
    assert.equal(status.structuredContent.state, 'running');
    assert.ok(!('start' in status.structuredContent), JSON.stringify(status.structuredContent));
    assert.ok(!JSON.stringify(status).includes(SECRET), `the secret is in the result: ${JSON.stringify(status)}`);
    const list = await a.ok('monitor_list', {});
    assert.ok(list.structuredContent.monitors.some((m) => m.monitor_id === id));
    assert.ok(!JSON.stringify(list).includes(SECRET), `the secret is in the list: ${JSON.stringify(list)}`);

    // The tool takes no argument that would ask the engine for it.
    await a.rpcError('monitor_status', { monitor_id: id, include_start: true }, -32602);
    await a.rpcError('monitor_status', { monitor_id: id, include_start: true, reveal_env: true }, -32602);

    await a.ok('monitor_stop', { monitor_id: id, grace_ms: 0 });
    await a.close();
  });
