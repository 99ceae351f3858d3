// Nothing left behind (the "No process left behind"; the idea of
// tests/support/no_orphans.sh, for this file's own processes): adapters exit
// at stdin EOF, the monitors they started outlive them in the engine (MCP.md
// section 2), and once the engine stops no process this file started is
// alive. Also the engine an adapter starts itself when none is listening
// (MCP.md section 1): detached, outliving the adapter, and the only thing to
// stop afterwards.
//
// Processes are found by VIGIL_MCP_TEST_ID (harness.mjs), which every process
// of this file carries: the adapters and vigild by inheritance, the monitored
// children through the config's env_inherit.
//
// Assumptions where the contract leaves a shape open:
// - An adapter starting an engine finds vigild next to itself or on PATH;
//   the test puts the build directory first on PATH so either works.
// - The started engine keeps the adapter's environment, and uses the
//   --config the adapter was given.
// - "It says so on stderr": the adapter's stderr mentions vigild or an
//   engine being started.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import {
  Engine, Adapter, RawAdapter, BUILD_DIR, FILE_ID, defaultConfig, luaValue, processesWithEnv, sessionName,
  waitNoneLeft, TEST_TIMEOUT,
} from './harness.mjs';

const mine = () => processesWithEnv('VIGIL_MCP_TEST_ID', FILE_ID);
const isVigild = (p) => path.basename(p.cmdline.split(' ')[0]) === 'vigild';
const spawnedDirs = [];
let engine;

after(async () => {
  await engine?.stop().catch(() => {});
  // Only on a failure can an engine started by an adapter still run here: stop it.
  for (const p of mine().filter(isVigild)) {
    try { process.kill(p.pid, 'SIGTERM'); } catch { /* gone */ }
  }
  await waitNoneLeft();
  for (const d of spawnedDirs) fs.rmSync(d, { recursive: true, force: true });
});

test('adapters exit 0 at stdin EOF leaving their monitors running, and once the engine stops no process of theirs is left',
  { timeout: TEST_TIMEOUT }, async () => {
    engine = await Engine.start();
    const session = sessionName('orphans');
    const a = await Adapter.start(engine, { session, profile: 'vigil,process' });
    const m1 = await a.ok('monitor_start', { command: 'sleep 301', persistent: true, label: 'orphan-1' });
    const m2 = await a.ok('process.run', { command: 'sleep', args: ['302'], background: true });
    const raw = await RawAdapter.start(engine, { session: sessionName('orphans-raw') });
    await raw.initialize();
    const m3 = await raw.call('tools/call', { name: 'monitor_start', arguments: { command: 'sleep 303', label: 'orphan-3' } });
    assert.notEqual(m3.isError, true, JSON.stringify(m3));
    const adapterPids = [a.pid, raw.child.pid];

    assert.deepEqual(await a.endInput(), { code: 0, signal: null });
    assert.deepEqual(await raw.endInput(), { code: 0, signal: null });
    const alive = mine();
    for (const pid of adapterPids) assert.ok(!alive.some((p) => p.pid === pid), `adapter ${pid} is gone`);
    for (const n of ['301', '302', '303']) {
      assert.ok(alive.some((p) => p.cmdline === `sleep ${n}`), `the monitor "sleep ${n}" outlived its adapter: ${JSON.stringify(alive)}`);
    }
    assert.ok(m1.structuredContent.monitor_id && m2.structuredContent.process_id);

    await engine.stop();
    assert.deepEqual(await waitNoneLeft(), [], 'no process of this test is left once the engine has stopped');
  });

test('an adapter with no engine listening starts a detached one that outlives it, and later adapters use it instead of starting another',
  { timeout: TEST_TIMEOUT }, async () => {
    await engine?.stop().catch(() => {}); // the first test's, when it failed before stopping it
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vigil-mcp-spawn-'));
    spawnedDirs.push(dir);
    const config = path.join(dir, 'config.lua');
    fs.writeFileSync(config, `return ${luaValue(defaultConfig())}\n`);
    const socket = path.join(dir, 'run', 'vigil.sock');
    // Adapter needs an engine-like owner: the socket, a cwd, and a set to close from.
    const owner = { socket, dir, adapters: new Set() };
    const opts = {
      session: sessionName('spawn'), noSpawn: false, socket, args: ['--config', config],
      env: { PATH: `${BUILD_DIR}:${process.env.PATH ?? '/usr/bin:/bin'}` },
    };
    assert.deepEqual(mine().filter(isVigild), [], 'no engine of this file runs yet');

    const a = await Adapter.start(owner, opts);
    assert.match(a.stderr, /vigild|engine/i, `the adapter says on stderr that it started an engine: ${a.stderr}`);
    const started = await a.ok('monitor_start', { command: 'sleep 311', persistent: true, label: 'spawned' });
    const id = started.structuredContent.monitor_id;
    assert.deepEqual(await a.endInput(), { code: 0, signal: null });

    const engines = mine().filter(isVigild);
    assert.equal(engines.length, 1, `one engine runs after the adapter exited: ${JSON.stringify(mine())}`);
    const ownSid = Number(fs.readFileSync('/proc/self/stat', 'latin1').split(') ')[1].split(' ')[3]);
    assert.notEqual(engines[0].sid, ownSid, 'the engine was detached into a session of its own');
    assert.ok(mine().some((p) => p.cmdline === 'sleep 311'), 'the monitor outlived the adapter');
    await new Promise((resolve, reject) => {
      const s = net.connect(socket);
      s.once('connect', () => { s.destroy(); resolve(); });
      s.once('error', reject);
    });

    // A second adapter finds it listening: same engine, same monitor.
    const b = await Adapter.start(owner, opts);
    const status = await b.ok('monitor_status', { monitor_id: id });
    assert.equal(status.structuredContent.state, 'running');
    assert.deepEqual(mine().filter(isVigild).map((p) => p.pid), [engines[0].pid], 'no second engine');
    assert.deepEqual(await b.endInput(), { code: 0, signal: null });

    process.kill(engines[0].pid, 'SIGTERM');
    assert.deepEqual(await waitNoneLeft(), [], 'stopping the engine leaves no process of this test');
  });
