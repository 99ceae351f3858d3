// Seed 001's common patterns (--profile process; docs/mcp-mapping.md
// section 3 and 9.2): run and check output; a timeout returning partial
// output; a background run monitored, listed, logged, killed, and its ending
// pushed; errors.
//
// Assumptions where the contract leaves a shape open (keys are seed 001's
// documented outputs, docs/mcp-mapping.md 3.1-3.5):
// - process.run -> {process_id, state, exit_code, stdout_summary,
//   stderr_summary, duration_ms, resource_usage {cpu_ms, memory_peak_bytes,
//   io_read_bytes, io_write_bytes}}; state is completed/running/killed/
//   timed_out; exit_code is null when killed or timed out.
// - stdout_summary is the last lines of stdout, without a trailing newline
//   added or kept (compared after trimEnd).
// - process.monitor -> {process_id, state, exit_code, command}; process.list
//   -> {processes: [{process_id, state}], total}; process.logs -> {stdout,
//   stderr, stdout_size, truncated}, `truncated` meaning "cut by limit" (the
//   seed's meaning), `offset` a byte offset; process.kill -> {killed,
//   process_id, state}.
// - Killing a process that exited by itself is isError `already_exited:`
//   (seed 001's ProcessAlreadyExited; the engine's error name comes first).
// - A background run sends one ending notification (mapping 3.7).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Engine, Adapter, sessionName, TEST_TIMEOUT } from './harness.mjs';

let engine;
before(async () => { engine = await Engine.start(); });
after(async () => { await engine?.stop(); });

const USAGE_KEYS = ['cpu_ms', 'io_read_bytes', 'io_write_bytes', 'memory_peak_bytes'];

test('process.run runs to completion and returns the exit code, the output and the resource usage', { timeout: TEST_TIMEOUT }, async () => {
  const a = await Adapter.start(engine, { session: sessionName('run'), profile: 'process' });
  const r = (await a.ok('process.run', { command: 'echo', args: ['ok'] })).structuredContent;
  assert.match(r.process_id, /^mon_[0-9a-z]{12}$/);
  assert.equal(r.state, 'completed');
  assert.equal(r.exit_code, 0);
  assert.equal(r.stdout_summary.trimEnd(), 'ok');
  assert.equal(r.stderr_summary, '');
  assert.ok(Number.isInteger(r.duration_ms) && r.duration_ms >= 0);
  for (const k of USAGE_KEYS) assert.ok(Number.isInteger(r.resource_usage[k]), `resource_usage.${k}: ${JSON.stringify(r.resource_usage)}`);

  const failed = (await a.ok('process.run', { command: 'sh', args: ['-c', 'echo oops >&2; exit 3'] })).structuredContent;
  assert.equal(failed.state, 'completed');
  assert.equal(failed.exit_code, 3);
  assert.equal(failed.stderr_summary.trimEnd(), 'oops');
  await a.close();
});

test('process.run with a timeout returns the partial output as a timed_out result, not an error', { timeout: TEST_TIMEOUT }, async () => {
  const a = await Adapter.start(engine, { session: sessionName('timeout'), profile: 'process' });
  const r = await a.ok('process.run', { command: 'sh', args: ['-c', 'echo partial; exec sleep 30'], timeout: 1 });
  const s = r.structuredContent;
  assert.equal(s.state, 'timed_out');
  assert.equal(s.exit_code, null);
  assert.equal(s.stdout_summary.trimEnd(), 'partial');
  assert.ok(s.duration_ms >= 1000 && s.duration_ms < 30000, `duration_ms ${s.duration_ms}`);
  await a.close();
});

test('process.logs pages a run\'s output by byte offset and limit, every byte once', { timeout: TEST_TIMEOUT }, async () => {
  const a = await Adapter.start(engine, { session: sessionName('logs'), profile: 'process' });
  const id = (await a.ok('process.run', { command: 'printf', args: ['0123456789'] })).structuredContent.process_id;
  let offset = 0;
  let text = '';
  for (let page = 0; ; page++) {
    assert.ok(page < 10, 'paging ends');
    const s = (await a.ok('process.logs', { process_id: id, stream: 'stdout', offset, limit: 4 })).structuredContent;
    assert.equal(s.stdout_size, 10);
    text += s.stdout;
    offset += Buffer.byteLength(s.stdout);
    if (!s.truncated) break;
    assert.equal(Buffer.byteLength(s.stdout), 4, 'a page cut by limit holds limit bytes');
  }
  assert.equal(text, '0123456789');
  await a.close();
});

test('a background process.run is monitored, listed and killed, and its ending is pushed', { timeout: TEST_TIMEOUT }, async () => {
  const a = await Adapter.start(engine, { session: sessionName('bg'), profile: 'process' });
  const started = (await a.ok('process.run', { command: 'sh', args: ['-c', 'echo started; exec sleep 300'], background: true })).structuredContent;
  assert.equal(started.state, 'running');
  const id = started.process_id;
  assert.match(id, /^mon_[0-9a-z]{12}$/);

  const mon = (await a.ok('process.monitor', { process_id: id })).structuredContent;
  assert.equal(mon.process_id, id);
  assert.equal(mon.state, 'running');
  assert.equal(mon.exit_code, null);
  assert.equal(typeof mon.command, 'string');
  assert.match(mon.command, /\bsh\b/, 'the command is echoed');

  const running = (await a.ok('process.list', { state_filter: 'running' })).structuredContent;
  assert.ok(running.processes.some((p) => p.process_id === id && p.state === 'running'), JSON.stringify(running));
  assert.ok(running.processes.every((p) => p.state === 'running'));
  assert.ok(running.total >= 1);

  const killed = (await a.ok('process.kill', { process_id: id, signal: 'SIGTERM', force_after: 5 })).structuredContent;
  assert.equal(killed.killed, true);
  assert.equal(killed.process_id, id);
  assert.equal(killed.state, 'killed');
  const end = await a.waitEnding(id);
  assert.equal(end.params.meta.type, 'stopped');
  assert.equal(a.channel().filter((n) => n.params.meta.monitor_id === id).length, 1, 'one notification: the ending');

  const after = (await a.ok('process.monitor', { process_id: id })).structuredContent;
  assert.equal(after.state, 'killed');
  assert.equal(after.exit_code, null);
  const list = (await a.ok('process.list', { state_filter: 'killed' })).structuredContent;
  assert.ok(list.processes.some((p) => p.process_id === id), JSON.stringify(list));
  assert.ok(!(await a.ok('process.list', { state_filter: 'running' })).structuredContent.processes.some((p) => p.process_id === id));
  await a.close();
});

test('process tools refuse a bad state_filter or stream with -32602 and answer a kill after exit with already_exited', { timeout: TEST_TIMEOUT }, async () => {
  const a = await Adapter.start(engine, { session: sessionName('perr'), profile: 'process' });
  const e1 = await a.rpcError('process.list', { state_filter: 'bogus' }, -32602);
  assert.match(e1.message, /state_filter/);
  const done = (await a.ok('process.run', { command: 'true' })).structuredContent;
  const e2 = await a.rpcError('process.logs', { process_id: done.process_id, stream: 'x' }, -32602);
  assert.match(e2.message, /stream/);
  await a.toolError('process.kill', { process_id: done.process_id }, 'already_exited');
  await a.toolError('process.monitor', { process_id: 'mon_000000000000' }, 'not_found');
  await a.close();
});

// Issue 22 point 18. The child ignores SIGTERM; monitor_wait (the vigil
// profile, listed beside) waits for its "ready" line, so SIGTERM never
// arrives before the trap is set.
async function startTrapper(a) {
  const id = (await a.ok('process.run', {
    command: 'sh', args: ['-c', 'trap "" TERM; echo ready; exec sleep 300'], background: true,
  })).structuredContent.process_id;
  const w = (await a.ok('monitor_wait', { monitor_id: id, for: 'output', timeout_ms: 30000 })).structuredContent;
  assert.equal(w.timed_out, false, 'the child printed its ready line');
  return id;
}

test('process.kill with SIGKILL during a long grace kills at once: a stronger signal always goes through',
  { timeout: TEST_TIMEOUT }, async () => {
    const a = await Adapter.start(engine, { session: sessionName('kill9'), profile: 'process,vigil' });
    const id = await startTrapper(a);
    const soft = (await a.ok('process.kill', { process_id: id, signal: 'SIGTERM', force_after: 600 })).structuredContent;
    assert.equal(soft.state, 'running', 'SIGTERM is ignored: still running when the early answer comes');
    assert.equal(soft.signal_sent, 'SIGTERM');
    const t0 = Date.now();
    const hard = (await a.ok('process.kill', { process_id: id, signal: 'SIGKILL' })).structuredContent;
    const took = Date.now() - t0;
    assert.deepEqual([hard.killed, hard.signal_sent, hard.state], [true, 'SIGKILL', 'killed'], JSON.stringify(hard));
    assert.ok(took < 30000, `SIGKILL took ${took} ms: it waited for the 600 s grace`);
    const end = await a.waitEnding(id);
    assert.equal(end.params.meta.type, 'stopped');
    const after = (await a.ok('process.monitor', { process_id: id })).structuredContent;
    assert.equal(after.state, 'killed');
    assert.equal(after.signal, 'SIGKILL');
    await a.close();
  });

test('process.kill with force_after 0 sends SIGTERM without escalation, as seed 001 says, and SIGKILL still ends it',
  { timeout: TEST_TIMEOUT }, async () => {
    const a = await Adapter.start(engine, { session: sessionName('kill0'), profile: 'process,vigil' });
    const id = await startTrapper(a);
    const soft = (await a.ok('process.kill', { process_id: id, force_after: 0 })).structuredContent;
    assert.deepEqual([soft.signal_sent, soft.state], ['SIGTERM', 'running'], JSON.stringify(soft));
    assert.match(soft.note, /no SIGKILL follows/);
    assert.doesNotMatch(soft.note, /10 min/, 'no hidden escalation after the longest grace');
    // The answer came after 2 s, four times the tests' kill_grace_ms: still alive.
    assert.equal((await a.ok('process.monitor', { process_id: id })).structuredContent.state, 'running');
    const again = (await a.ok('process.kill', { process_id: id, force_after: 0 })).structuredContent;
    assert.equal(again.killed, false, 'an equal stop sends nothing');
    const hard = (await a.ok('process.kill', { process_id: id, signal: 'SIGKILL' })).structuredContent;
    assert.deepEqual([hard.killed, hard.signal_sent, hard.state], [true, 'SIGKILL', 'killed'], JSON.stringify(hard));
    await a.close();
  });

// Issue 22 point 22: after a restart of the adapter (which remembered the
// command in memory only), command showed the program vigil resolved
// (/usr/bin/sh) instead of the command that was run. Environment values are
// never shown.
test('process.monitor and process.list show the command as it was given, after a restart of the adapter too, and no environment value',
  { timeout: TEST_TIMEOUT }, async () => {
    const session = sessionName('cmd');
    let a = await Adapter.start(engine, { session, profile: 'process' });
    const id = (await a.ok('process.run', {
      command: 'sh', args: ['-c', 'echo "a b"; exec sleep 300'], background: true,
      environment: { VIGIL_TEST_SECRET: 'hunter2-value' },
    })).structuredContent.process_id;
    const given = `sh -c 'echo "a b"; exec sleep 300'`;
    for (const round of [1, 2]) {
      const mon = await a.ok('process.monitor', { process_id: id });
      assert.equal(mon.structuredContent.command, given, `round ${round}: process.monitor`);
      const list = await a.ok('process.list', { state_filter: 'running' });
      assert.equal(list.structuredContent.processes.find((p) => p.process_id === id)?.command, given,
        `round ${round}: process.list`);
      for (const r of [mon, list]) assert.doesNotMatch(JSON.stringify(r), /hunter2-value/, 'no environment value');
      await a.close();
      a = await Adapter.start(engine, { session, profile: 'process' });
    }
    await a.ok('process.kill', { process_id: id, signal: 'SIGKILL' });
    await a.close();
  });
