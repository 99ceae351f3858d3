// Seed 000's typical flow (--profile watch_process; docs/mcp-mapping.md
// section 2 and 9.1): watch_process -> the stderr error pushed ->
// watch_process_events, then again with since_event_id -> BashOutput ->
// KillShell -> the exited event; the idle timeout; errors.
//
// Assumptions where the contract leaves a shape open (seed 000 documents its
// events as text and Go field names, open question Q2):
// - structuredContent keys are snake_case: watch_process -> {shell_id};
//   watch_process_events -> {events: [{id, type, at, pattern, line,
//   exit_code}]}; BashOutput (Claude Code's) -> {status, stdout, stderr}.
// - An `error` event's `pattern` is the pattern's source, `line` the stderr
//   line; only stderr is matched (the seed).
// - A process stopped by KillShell gets an `exited` event (the seed's
//   lifecycle stamps `exited` after any kill); an idle timeout gives
//   `idle_timeout` then `exited`.
// - KillShell's text says `killed` and names the shell (the seed's flow:
//   "killed: abc-123").
// - The start tool's text names the shell_id (the seed's flow: "shell_id: ...").

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Engine, Adapter, sessionName, sh, TEST_TIMEOUT, textOf } from './harness.mjs';

let engine;
before(async () => { engine = await Engine.start(); });
after(async () => { await engine?.stop(); });

test('watch_process surfaces a stderr error as an event and a notification, paged by since_event_id, and KillShell ends it',
  { timeout: TEST_TIMEOUT }, async () => {
    const a = await Adapter.start(engine, { session: sessionName('wp'), profile: 'watch_process' });
    const gate = engine.gate('wp');
    const started = await a.ok('watch_process', {
      command: sh(`echo ready; echo "Error: on stdout is not an event"; echo "Error: Module not found" >&2; ${gate.until()}`),
      description: 'next dev server',
    });
    const shellId = started.structuredContent.shell_id;
    assert.match(shellId, /^mon_[0-9a-z]{12}$/);
    assert.ok(textOf(started).includes(shellId), `the text names the shell_id: ${textOf(started)}`);

    // Pushed as it happens.
    const pushed = await a.waitChannel(shellId, { type: 'output', contains: 'Error: Module not found' });
    assert.doesNotMatch(pushed.params.content, /Error: on stdout/, 'stdout is not matched');

    const first = await a.ok('watch_process_events', { shell_id: shellId });
    const events = first.structuredContent.events;
    assert.deepEqual(events.map((e) => e.type), ['started', 'error'], JSON.stringify(events));
    assert.deepEqual(events.map((e) => e.id), [1, 2]);
    assert.equal(events[1].pattern, '^Error:', 'the error event names the default pattern that matched');
    assert.equal(events[1].line, 'Error: Module not found');
    for (const e of events) assert.equal(typeof e.at, 'string');
    assert.match(textOf(first), /Error: Module not found/);

    // Quiet now: nothing after the last id seen.
    const quiet = await a.ok('watch_process_events', { shell_id: shellId, since_event_id: 2 });
    assert.deepEqual(quiet.structuredContent.events, []);

    // BashOutput returns only new output.
    const out1 = await a.ok('BashOutput', { bash_id: shellId });
    assert.equal(out1.structuredContent.status, 'running');
    assert.match(out1.structuredContent.stdout, /^ready$/m);
    assert.match(out1.structuredContent.stderr, /^Error: Module not found$/m);
    const out2 = await a.ok('BashOutput', { bash_id: shellId });
    assert.equal(out2.structuredContent.stdout, '', 'a second BashOutput has no stdout already returned');
    assert.equal(out2.structuredContent.stderr, '', 'a second BashOutput has no stderr already returned');

    const killed = await a.ok('KillShell', { shell_id: shellId });
    assert.match(textOf(killed), /killed/);
    assert.ok(textOf(killed).includes(shellId));
    const end = await a.waitEnding(shellId);
    assert.equal(end.params.meta.type, 'stopped');

    const after = await a.ok('watch_process_events', { shell_id: shellId, since_event_id: 2 });
    assert.deepEqual(after.structuredContent.events.map((e) => e.type), ['exited'], JSON.stringify(after.structuredContent));
    assert.ok(after.structuredContent.events[0].id > 2);
    await a.close();
  });

test('idle_timeout_seconds stops a silent process with an idle_timeout event, then an exited one', { timeout: TEST_TIMEOUT }, async () => {
  const a = await Adapter.start(engine, { session: sessionName('wp-idle'), profile: 'watch_process' });
  const started = await a.ok('watch_process', {
    command: sh('echo hello; exec sleep 300'), description: 'silent server', idle_timeout_seconds: 1,
  });
  const shellId = started.structuredContent.shell_id;
  const end = await a.waitEnding(shellId);
  assert.equal(end.params.meta.type, 'idle_timeout');
  const r = await a.ok('watch_process_events', { shell_id: shellId });
  const types = r.structuredContent.events.map((e) => e.type);
  assert.deepEqual(types.slice(-2), ['idle_timeout', 'exited'], JSON.stringify(r.structuredContent.events));
  assert.equal(types[0], 'started');
  await a.close();
});

test('an empty error_patterns pushes no output, only the ending', { timeout: TEST_TIMEOUT }, async () => {
  const a = await Adapter.start(engine, { session: sessionName('wp-none'), profile: 'watch_process' });
  const started = await a.ok('watch_process', {
    command: sh('echo "Error: a" >&2; echo b; echo "Fatal: c" >&2'), description: 'no matching', error_patterns: [],
  });
  const shellId = started.structuredContent.shell_id;
  const end = await a.waitEnding(shellId);
  assert.equal(end.params.meta.type, 'exit');
  assert.deepEqual(a.channel().filter((n) => n.params.meta.monitor_id === shellId).map((n) => n.params.meta.type), ['exit']);
  const r = await a.ok('watch_process_events', { shell_id: shellId });
  assert.ok(!r.structuredContent.events.some((e) => e.type === 'error'), JSON.stringify(r.structuredContent.events));
  await a.close();
});

test('watch_process errors are tool results: a bad pattern is invalid_pattern, an unknown shell_id is not_found', { timeout: TEST_TIMEOUT }, async () => {
  const a = await Adapter.start(engine, { session: sessionName('wp-err'), profile: 'watch_process' });
  const bad = await a.toolError('watch_process', { command: 'sleep 300', description: 'x', error_patterns: ['(foo'] }, 'invalid_pattern');
  assert.match(textOf(bad), /\(foo/, 'the error names the pattern');
  await a.toolError('watch_process_events', { shell_id: 'mon_000000000000' }, 'not_found');
  await a.toolError('KillShell', { shell_id: 'mon_000000000000' }, 'not_found');
  await a.close();
});

// Issue 22 point 21: the engine's incident events were hidden but numbered,
// so ids had gaps, and they counted toward the cap: 1100 errors left 489
// visible events and "1224 earlier events dropped". Seed 000's own model:
// started, 1100 errors and exited are 1102 events; at the 1025th the oldest
// 102 go, so 1000 are kept, ids 103..1102.
test('watch_process_events numbers the seed\'s events densely and caps them at 1024 on their own, across a restart of the adapter',
  { timeout: TEST_TIMEOUT }, async () => {
    const session = sessionName('wp-cap');
    let a = await Adapter.start(engine, { session, profile: 'watch_process' });
    const shellId = (await a.ok('watch_process', {
      command: sh('i=1; while [ $i -le 1100 ]; do echo "Error: boom $i" >&2; i=$((i+1)); done'),
      description: 'crash loop',
    })).structuredContent.shell_id;
    await a.waitEnding(shellId);
    for (const round of [1, 2]) {
      const all = await a.ok('watch_process_events', { shell_id: shellId });
      const { events, dropped } = all.structuredContent;
      assert.equal(dropped, 102, `round ${round}: dropped`);
      assert.equal(events.length, 1000, `round ${round}: events kept`);
      assert.deepEqual(events.map((e) => e.id), Array.from({ length: 1000 }, (_, i) => 103 + i), 'dense ids');
      assert.ok(events.slice(0, -1).every((e) => e.type === 'error'), 'every kept event but the last is an error');
      assert.equal(events[0].line, 'Error: boom 102', 'id N is the seed\'s Nth event: started, then the errors');
      assert.equal(events.at(-1).type, 'exited');
      assert.match(textOf(all), /^NOTE: 102 earlier events dropped \(per-shell cap of 1024 reached\)$/m);
      const page = await a.ok('watch_process_events', { shell_id: shellId, since_event_id: 1100 });
      assert.deepEqual(page.structuredContent.events.map((e) => [e.id, e.type]), [[1101, 'error'], [1102, 'exited']]);
      assert.equal(page.structuredContent.events[0].line, 'Error: boom 1100');
      const none = await a.ok('watch_process_events', { shell_id: shellId, since_event_id: 1102 });
      assert.deepEqual(none.structuredContent.events, []);
      // The ids come from the engine's data alone: a new adapter gives the same.
      await a.close();
      if (round === 1) a = await Adapter.start(engine, { session, profile: 'watch_process' });
    }
  });
