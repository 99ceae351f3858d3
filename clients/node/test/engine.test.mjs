// The embedded engine (Engine.spawn, `vigild --stdio`): it starts, runs a
// monitor, pushes its notifications as objects, and close() ends it and
// everything it started. An engine that cannot start, or dies, is reported
// as a VigilConnectionError with its reasons, never as a hang.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { Engine, VigilConnectionError } from '../index.js';
import {
  SANITIZER_REPORT, TEST_TIMEOUT, VIGILD, WAIT_MS, processesWithEnv, removeTempDirs, sh, tempDir, testConfig, testEnv,
  waitNoneLeft, writeConfig,
} from './helpers.mjs';

after(async () => {
  // An engine a failed test left open would keep this file running until
  // its timeout (its stdin pipe holds the event loop): close them all.
  await Promise.allSettled(spawned.map((e) => e.close()));
  removeTempDirs();
  for (const e of spawned) assert.doesNotMatch(e.logTail, SANITIZER_REPORT, 'vigild reported no sanitizer error');
  assert.deepEqual(await waitNoneLeft(), [], 'no process of this file is left');
});

const spawned = [];
async function spawnEngine(config = testConfig()) {
  const engine = await Engine.spawn({ vigild: VIGILD, config: writeConfig(tempDir('embed'), config), env: testEnv(), log: 'quiet' });
  spawned.push(engine);
  return engine;
}

test('an embedded engine starts, runs a command, notifies what matched and how it ended, and its close stops everything it started',
  { timeout: TEST_TIMEOUT }, async () => {
    const engine = await spawnEngine();
    assert.deepEqual(await engine.ping(), { version: '0.1.0', api_level: 1 });

    const started = await engine.monitorStart({
      command: sh('echo ready; echo Error: disk full >&2; exit 3'), label: 'build', patterns: ['^Error:'],
    });
    assert.match(started.monitor_id, /^mon_[0-9a-z]{8,}$/);
    assert.equal(started.notify, 'matches');

    const output = await engine.wait({ timeoutMs: WAIT_MS });
    assert.ok(output, 'an output notification came');
    assert.equal(output.type, 'output');
    assert.equal(output.monitor_id, started.monitor_id);
    assert.equal(output.label, 'build');
    assert.deepEqual(output.lines.map((l) => [l.stream, l.text, l.pattern]), [['stderr', 'Error: disk full', 0]]);
    assert.match(output.text, /stream_policy: untrusted_observation/);
    assert.match(output.text, /^\[stderr seq=2\] Error: disk full$/m);

    const ending = await engine.wait({ timeoutMs: WAIT_MS });
    assert.equal(ending.type, 'exit');
    assert.equal(ending.exit_code, 3);
    assert.equal(ending.seq, output.seq + 1);

    // A long-running command, then close: it must not outlive the engine.
    const sleeper = await engine.monitorStart({ command: 'sleep 301' });
    const status = await engine.monitorStatus({ monitor_id: sleeper.monitor_id });
    assert.equal(status.state, 'running');
    // The engine answers once the child is forked; its exec of sleep may
    // come a moment later on a loaded machine.
    const deadline = Date.now() + WAIT_MS;
    while (!processesWithEnv().some((p) => p.cmdline === 'sleep 301')) {
      assert.ok(Date.now() < deadline, `the monitored sleep runs within ${WAIT_MS} ms`);
      await new Promise((r) => setTimeout(r, 50));
    }

    assert.deepEqual(await engine.close(), { code: 0, signal: null }, 'vigild exits 0 once its stdin is closed');
    assert.deepEqual(await waitNoneLeft(), [], 'neither vigild nor the sleep it started is left');
    await assert.rejects(engine.ping(), VigilConnectionError, 'a closed engine answers nothing');
  });

test('a config the engine refuses fails the spawn with the engine\'s own words', { timeout: TEST_TIMEOUT }, async () => {
  await assert.rejects(spawnEngine(testConfig({ line_max_bytes: 12 })), (e) => {
    assert.ok(e instanceof VigilConnectionError, e.stack);
    assert.match(e.message, /exited \(status 1\) before answering/);
    assert.match(e.message, /monitor\.line_max_bytes must be 256\.\.1048576, got 12/);
    return true;
  });
});

test('a vigild that is not there fails the spawn naming it', { timeout: TEST_TIMEOUT }, async () => {
  await assert.rejects(Engine.spawn({ vigild: '/nonexistent/vigild', log: 'quiet' }), (e) => {
    assert.ok(e instanceof VigilConnectionError);
    assert.match(e.message, /cannot start \/nonexistent\/vigild: spawn \/nonexistent\/vigild ENOENT/);
    return true;
  });
});

test('an engine that dies fails the calls and the waits in progress, and says why on "close"',
  { timeout: TEST_TIMEOUT }, async () => {
    const engine = await spawnEngine();
    const m = await engine.monitorStart({ command: 'sleep 302' });
    const closed = new Promise((resolve) => engine.once('close', resolve));
    const waiting = engine.monitorWait({ monitor_id: m.monitor_id, timeout_ms: 600000 });
    const next = engine.wait();
    // Requests start in order: once monitor_status is answered, the
    // monitor_wait before it is waiting in the engine.
    await engine.monitorStatus({ monitor_id: m.monitor_id });
    // SIGKILL: a graceful shutdown would answer the wait (the monitor ends).
    process.kill(engine.pid, 'SIGKILL');
    await assert.rejects(waiting, VigilConnectionError);
    await assert.rejects(next, VigilConnectionError);
    const why = await closed;
    assert.ok(why instanceof VigilConnectionError);
    assert.match(why.message, /vigild --stdio \(pid \d+\) closed the connection/);
    assert.deepEqual(await engine.exited, { code: null, signal: 'SIGKILL' });
    assert.equal(engine.closed, true);
    // An engine killed outright cannot stop its monitors (docs/protocol.md
    // 2.1): the sleep is the test's to end.
    for (const p of processesWithEnv().filter((x) => x.cmdline === 'sleep 302')) process.kill(p.pid, 'SIGKILL');
  });
