// The adapter survives its engine (issue 22 point 9; docs/mcp.md, "When the
// engine restarts"): on SIGUSR2 (the graceful restart, an upgrade) or a crash
// the connection ends, and `vigil mcp` reconnects (starting an engine again
// unless --no-spawn), re-opens its session with the last seq it received, and
// goes on serving: the next tool call works, a notification made after the
// restart arrives, and none arrives twice. A call in flight when the
// connection drops is retried when it only reads (monitor_wait), and answered
// with a tool error saying so when it acts (a foreground process_run): whether
// it took effect is unknown.
//
// Before: "the engine connection ended" on stderr and exit 1, and the harness
// lost its MCP server at every upgrade.
//
// Assumptions where the contract leaves a shape open:
// - The adapter says on stderr that the connection ended and that it
//   reconnected ("reconnected"): the tests wait for that line, the one event
//   that says the new connection is up.
// - The harness's engine (harness.mjs) has a state directory (the default,
//   beside the socket), so SIGUSR2 restarts it in place and a crash loses no
//   named session; the engine an adapter starts has one the same way.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  Engine, Adapter, BUILD_DIR, VIGILD, FILE_ID, WAIT_MS, TEST_TIMEOUT, defaultConfig, luaValue,
  processesWithEnv, sessionName, sh, envelopeLine, textOf, testEnv, exitOf, waitNoneLeft, within,
} from './harness.mjs';

let engine;
const dirs = [];
const owners = []; // the adapters' owners of the spawning test, closed first
const mine = () => processesWithEnv('VIGIL_MCP_TEST_ID', FILE_ID);
const isVigild = (p) => path.basename(p.cmdline.split(' ')[0]) === 'vigild';

before(async () => { engine = await Engine.start(); });
after(async () => {
  // Adapters first: one that is alive starts an engine again when its engine stops.
  for (const o of owners) await Promise.allSettled([...o.adapters].map((a) => a.close()));
  await engine?.stop().catch(() => {});
  for (const p of mine().filter(isVigild)) {
    try { process.kill(p.pid, 'SIGTERM'); } catch { /* gone */ }
  }
  await waitNoneLeft();
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

/** Resolves once the adapter's stderr has said `re` count times in all. */
function stderrSays(a, re, count = 1) {
  const seen = () => (a.stderr.match(new RegExp(re.source, 'g')) ?? []).length >= count;
  return within(new Promise((resolve) => {
    const check = () => { if (seen()) { a.transport.stderr.off('data', check); resolve(); } };
    a.transport.stderr.on('data', check);
    check();
  }), WAIT_MS, `the adapter's stderr to say ${re} (${count}x)`).catch((e) => {
    throw new Error(`${e.message}; it said:\n${a.stderr}`);
  });
}

/** The seqs of the channel notifications a has received, in order. */
const seqsOf = (a) => a.channel().map((n) => Number(n.params.meta.seq));

function assertNoneTwice(a) {
  const seqs = seqsOf(a);
  assert.deepEqual(seqs, [...new Set(seqs)].sort((x, y) => x - y),
    `every seq once and in order: ${seqs.join(' ')}`);
}

test('SIGUSR2 (the engine restarts in place): the next tool call works, a notification made after it arrives, none arrives twice',
  { timeout: TEST_TIMEOUT }, async () => {
    const a = await Adapter.start(engine, { session: sessionName('usr2') });
    const g1 = engine.gate('usr2-1');
    const g2 = engine.gate('usr2-2');
    const id = (await a.ok('monitor_start', {
      command: sh(`echo line-one; ${g1.until()}; echo line-two; ${g2.until()}; echo line-three`),
      label: 'usr2', notify: 'lines',
    })).structuredContent.monitor_id;
    await a.waitChannel(id, { contains: 'line-one' });

    process.kill(engine.proc.pid, 'SIGUSR2');
    // At once, whether or not the adapter has seen the connection end yet:
    // a read-only call is answered (by the new engine, or retried on it).
    const listed = await a.ok('monitor_list', {});
    assert.ok(listed.structuredContent.monitors.some((m) => m.monitor_id === id), JSON.stringify(listed.structuredContent));
    await stderrSays(a, /reconnected/);
    const status = await a.ok('monitor_status', { monitor_id: id });
    assert.equal(status.structuredContent.state, 'running', 'the monitor went on across the restart');

    g1.open();
    await a.waitChannel(id, { contains: 'line-two' });
    // A start on the new connection works too.
    const other = (await a.ok('monitor_start', { command: sh('echo line-other'), label: 'usr2-other', notify: 'lines' }))
      .structuredContent.monitor_id;
    await a.waitEnding(other);
    g2.open();
    const end = await a.waitEnding(id, { type: 'exit' });
    await a.twinOf(end);

    assertNoneTwice(a);
    const text = a.channel().filter((n) => n.params.meta.monitor_id === id && n.params.meta.type === 'output')
      .map((n) => n.params.content).join('\n');
    for (const line of ['line-one', 'line-two', 'line-three']) {
      assert.equal(text.split('\n').filter((l) => envelopeLine('stdout', line).test(l)).length, 1,
        `${line} arrived exactly once:\n${text}`);
    }
    assert.deepEqual(await a.endInput(), { code: 0, signal: null }, 'the adapter still ends cleanly');
  });

test('calls in flight across SIGUSR2: monitor_wait (read-only) is retried and answers, a foreground process_run gets a tool error saying so',
  { timeout: TEST_TIMEOUT }, async () => {
    const a = await Adapter.start(engine, { session: sessionName('inflight') });
    const gw = engine.gate('inflight-wait');
    const gr = engine.gate('inflight-run');
    const id = (await a.ok('monitor_start', { command: sh(`${gw.until()}; echo done-waiting`), label: 'waited' }))
      .structuredContent.monitor_id;

    // The foreground run is in flight once its process runs.
    const run = a.call('process_run', { command: sh(`echo marker-${FILE_ID}; ${gr.until()}`), timeout_s: 120 });
    const deadline = Date.now() + WAIT_MS;
    while (!mine().some((p) => p.cmdline.includes(`marker-${FILE_ID}`))) {
      assert.ok(Date.now() < deadline, 'the foreground process_run started');
      await new Promise((r) => setTimeout(r, 20)); // /proc is the only witness
    }
    process.kill(engine.proc.pid, 'SIGUSR2');
    const r = await run;
    assert.equal(r.isError, true, `an isError result: ${JSON.stringify(r)}`);
    assert.match(textOf(r), /^unavailable: .*in flight/s, textOf(r));
    await stderrSays(a, /reconnected/);
    gr.open();

    const waited = a.ok('monitor_wait', { monitor_id: id, for: 'exit', timeout_ms: 60000 });
    // monitor_wait is sent before the next restart or retried after it.
    process.kill(engine.proc.pid, 'SIGUSR2');
    await stderrSays(a, /reconnected/, 2);
    gw.open();
    const w = await waited;
    assert.equal(w.structuredContent.timed_out, false, JSON.stringify(w.structuredContent));
    assert.equal(w.structuredContent.state, 'exited');
    assert.deepEqual(await a.endInput(), { code: 0, signal: null });
  });

test('SIGKILL (the engine crashes): the adapter starts an engine again, which takes the monitor back; the next call lists it, and its output after the crash arrives once',
  { timeout: TEST_TIMEOUT }, async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vigil-mcp-crash-'));
    dirs.push(dir);
    const config = path.join(dir, 'config.lua');
    fs.writeFileSync(config, `return ${luaValue(defaultConfig())}\n`);
    const socket = path.join(dir, 'run', 'vigil.sock');
    const owner = { socket, dir, adapters: new Set(), everyAdapter: [] };
    owners.push(owner);
    const ours = () => mine().filter((p) => isVigild(p) && p.cmdline.includes(socket));
    const a = await Adapter.start(owner, {
      session: sessionName('crash'), noSpawn: false, socket, args: ['--config', config],
      env: { PATH: `${BUILD_DIR}:${process.env.PATH ?? '/usr/bin:/bin'}` },
    });
    const gate = engine.gate('crash');
    const id = (await a.ok('monitor_start', {
      command: sh(`echo before-crash; ${gate.until()}; echo after-crash; sleep 300`), label: 'crash', notify: 'lines',
    })).structuredContent.monitor_id;
    await a.waitChannel(id, { contains: 'before-crash' });
    const first = ours();
    assert.equal(first.length, 1, JSON.stringify(mine()));

    process.kill(first[0].pid, 'SIGKILL');
    const listed = await a.ok('monitor_list', {});
    assert.deepEqual(listed.structuredContent.monitors.map((m) => [m.monitor_id, m.state]), [[id, 'running']],
      'the monitor started before the crash is listed, running');
    await stderrSays(a, /reconnected/);
    const now = ours();
    assert.equal(now.length, 1, `one engine runs: ${JSON.stringify(mine())}`);
    assert.notEqual(now[0].pid, first[0].pid, 'a new engine');

    gate.open();
    await a.waitChannel(id, { contains: 'after-crash' });
    const seqs = seqsOf(a);
    assert.deepEqual(seqs, [...new Set(seqs)].sort((x, y) => x - y), `every seq once: ${seqs.join(' ')}`);
    const text = a.channel().filter((n) => n.params.meta.type === 'output').map((n) => n.params.content).join('\n');
    assert.equal(text.split('\n').filter((l) => envelopeLine('stdout', 'before-crash').test(l)).length, 1, text);
    await a.ok('monitor_stop', { monitor_id: id });
    assert.deepEqual(await a.endInput(), { code: 0, signal: null });
    process.kill(now[0].pid, 'SIGTERM');
    // Everything of this test but the file's own engine (harness.mjs) goes;
    // /proc is the only witness of that (as in waitNoneLeft).
    const left = () => mine().filter((p) => !p.cmdline.includes(engine.socket));
    const deadline = Date.now() + WAIT_MS;
    while (left().length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(left(), [], 'stopping the engine leaves no process of this test');
  });

test('with --no-spawn and the engine gone for good: a call gets an unavailable tool error after the bounded wait, the adapter goes on serving, and the next call uses a later engine on the socket',
  { timeout: TEST_TIMEOUT }, async () => {
    const gone = await Engine.start();
    const a = await Adapter.start(gone, { session: sessionName('gone') });
    gone.proc.kill('SIGTERM');
    assert.deepEqual(await within(gone.exited, WAIT_MS, 'the engine to exit'), { code: 0, signal: null });

    const t0 = Date.now();
    const r = await a.call('monitor_list', {});
    assert.equal(r.isError, true, JSON.stringify(r));
    assert.match(textOf(r), /^unavailable: no engine answers on /, textOf(r));
    assert.ok(Date.now() - t0 < 2 * WAIT_MS, `answered within the bound (${Date.now() - t0} ms)`);
    await stderrSays(a, /no engine on .* after \d+ s/);
    assert.deepEqual(await a.client.ping(), {}, 'the adapter still answers');

    // An engine on the same socket again (as the harness starts one).
    gone.proc = spawn(VIGILD, ['--listen', gone.socket, '--config', gone.configPath],
      { stdio: ['ignore', 'ignore', 'ignore'], env: testEnv(), cwd: gone.dir });
    gone.exited = exitOf(gone.proc);
    await gone.waitListening();
    await a.ok('monitor_list', {});
    await stderrSays(a, /reconnected/);
    assert.deepEqual(await a.endInput(), { code: 0, signal: null });
    await gone.stop();
  });
