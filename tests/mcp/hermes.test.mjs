// Seed 002's flow (--profile hermes; Hermes's terminal and process tools;
// docs/mcp-mapping.md section 5 and 9.4): a background terminal with
// watch_patterns and notify_on_complete, the matched lines pushed, then
// process list/poll/log/kill; wait; the foreground terminal.
//
// Assumptions where the contract leaves a shape open (keys are Hermes's,
// from its source, as docs/mcp-mapping.md 5.1-5.2 gives them):
// - terminal foreground -> {output, exit_code, error}; a timeout gives
//   exit_code 124 and an error saying it timed out. Background ->
//   {session_id, pid, ...}; session_id is the monitor id.
// - watch_patterns are plain substrings (Hermes's `pat in line`), so
//   "[WARN]" matches "x [WARN] y" and not "x W y".
// - process: list -> {processes: [{session_id, status}]}; poll -> {session_id,
//   status ("running"/"exited"), output_preview}; log {limit} -> {output (the
//   last `limit` lines), total_lines}; wait -> {status: "exited", exit_code};
//   kill -> {status: "killed"}.
// - notify_on_complete without watch_patterns pushes the ending only.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Engine, Adapter, sessionName, sh, envelopeLine, TEST_TIMEOUT, WAIT_MS } from './harness.mjs';

let engine;
before(async () => { engine = await Engine.start(); });
after(async () => { await engine?.stop(); });

test('a foreground terminal command returns its output and exit code', { timeout: TEST_TIMEOUT }, async () => {
  const a = await Adapter.start(engine, { session: sessionName('h-fg'), profile: 'hermes' });
  const s = (await a.ok('terminal', { command: 'echo 1' })).structuredContent;
  assert.equal(s.output.trim(), '1');
  assert.equal(s.exit_code, 0);
  assert.equal(s.error, null);
  await a.close();
});

test('a foreground terminal command over its timeout answers exit code 124 and says it timed out', { timeout: TEST_TIMEOUT }, async () => {
  const a = await Adapter.start(engine, { session: sessionName('h-to'), profile: 'hermes' });
  const s = (await a.ok('terminal', { command: sh('echo partial; exec sleep 30'), timeout: 1 })).structuredContent;
  assert.equal(s.exit_code, 124);
  assert.match(s.error, /timed out/i);
  await a.close();
});

test('a background terminal with watch_patterns pushes the matching lines, and process list, poll, log and kill manage it',
  { timeout: TEST_TIMEOUT }, async () => {
    const a = await Adapter.start(engine, { session: sessionName('h-bg'), profile: 'hermes' });
    const gate = engine.gate('hermes');
    const started = (await a.ok('terminal', {
      command: sh(`echo "x W y"; echo plain; echo "x [WARN] y"; echo "ERROR one"; ${gate.until()}; echo "ERROR two"; exec sleep 300`),
      background: true,
      watch_patterns: ['ERROR', '[WARN]'],
      notify_on_complete: true,
    })).structuredContent;
    const id = started.session_id;
    assert.match(id, /^mon_[0-9a-z]{12}$/);
    assert.ok(Number.isInteger(started.pid) && started.pid > 0);

    // "ERROR one" is the last line before the gate: once it is pushed, all are.
    await a.waitChannel(id, { type: 'output', contains: 'ERROR one' });
    const pushed = () => a.channel().filter((n) => n.params.meta.monitor_id === id && n.params.meta.type === 'output')
      .map((n) => n.params.content).join('');
    assert.match(pushed(), envelopeLine('stdout', 'x [WARN] y'), 'a watch pattern is a plain substring');
    assert.doesNotMatch(pushed(), envelopeLine('stdout', 'x W y'), '"[WARN]" is not a character class');
    assert.doesNotMatch(pushed(), envelopeLine('stdout', 'plain'), 'an unmatched line is not pushed');

    const list = (await a.ok('process', { action: 'list' })).structuredContent;
    assert.ok(list.processes.some((p) => p.session_id === id && p.status === 'running'), JSON.stringify(list));

    const poll = (await a.ok('process', { action: 'poll', session_id: id })).structuredContent;
    assert.equal(poll.session_id, id);
    assert.equal(poll.status, 'running');
    assert.match(poll.output_preview, /ERROR one/);

    const log = (await a.ok('process', { action: 'log', session_id: id, limit: 2 })).structuredContent;
    assert.deepEqual(log.output.trimEnd().split('\n'), ['x [WARN] y', 'ERROR one'], 'the last 2 lines');
    assert.equal(log.total_lines, 4);

    gate.open();
    await a.waitChannel(id, { type: 'output', contains: 'ERROR two' });

    const killed = (await a.ok('process', { action: 'kill', session_id: id })).structuredContent;
    assert.equal(killed.status, 'killed');
    const end = await a.waitEnding(id);
    assert.equal(end.params.meta.type, 'stopped');
    const after = (await a.ok('process', { action: 'poll', session_id: id })).structuredContent;
    assert.equal(after.status, 'exited');
    await a.close();
  });

test('process wait returns the exit code of a background command, and notify_on_complete alone pushes only the ending',
  { timeout: TEST_TIMEOUT }, async () => {
    const a = await Adapter.start(engine, { session: sessionName('h-wait'), profile: 'hermes' });
    const id = (await a.ok('terminal', {
      command: sh('echo hi; exit 3'), background: true, notify_on_complete: true,
    })).structuredContent.session_id;
    const waited = (await a.ok('process', { action: 'wait', session_id: id, timeout: 60 })).structuredContent;
    assert.equal(waited.status, 'exited');
    assert.equal(waited.exit_code, 3);
    const end = await a.waitEnding(id);
    assert.equal(end.params.meta.type, 'exit');
    assert.deepEqual(a.channel().filter((n) => n.params.meta.monitor_id === id).map((n) => n.params.meta.type), ['exit']);
    await a.toolError('process', { action: 'poll', session_id: 'mon_000000000000' }, 'not_found');
    await a.close();
  });

// Issue 22 point 20: the PR's own end-to-end case, a 30-line loop printing
// ERROR every 5th line. vigil gathers the six alike lines into one incident
// and its repeats (numbers do not tell them apart); the text the agent reads
// must say how many times it repeated, not only the data.
test('repeats of a watched line coalesced into one alert are told in the text, with their count',
  { timeout: TEST_TIMEOUT }, async () => {
    const a = await Adapter.start(engine, { session: sessionName('h-rep'), profile: 'hermes' });
    const id = (await a.ok('terminal', {
      command: sh('for i in $(seq 1 30); do if [ $((i % 5)) = 0 ]; then echo "ERROR at line $i"; else echo "line $i"; fi; done'),
      background: true, watch_patterns: ['ERROR'],
    })).structuredContent.session_id;
    const end = await a.waitEnding(id);
    await a.twinOf(end); // every structured twin is in
    const mine = a.vigilLogs().filter((m) => m.params.data?.monitor_id === id).map((m) => m.params.data);
    const incidents = mine.flatMap((n) => (n.incidents ?? []).map((inc) => ({ n, inc })));
    const repeats = incidents.reduce((k, { inc }) => k + (inc.repeats ?? 0), 0);
    assert.equal(1 + repeats, 6, `one incident and five repeats in the data: ${JSON.stringify(incidents)}`);
    for (const { n, inc } of incidents.filter(({ inc }) => inc.repeats > 0)) {
      const text = a.channel().find((c) => Number(c.params.meta.seq) === n.seq).params.content;
      assert.match(text, new RegExp(`repeated ${inc.repeats} times`), `the text says what the data says:\n${text}`);
    }
    await a.close();
  });

// Issue 22 point 22, Hermes's side: process list and poll after a restart
// of the adapter show the command as given, not the resolved program.
test('process list and poll show the command as it was given after a restart of the adapter',
  { timeout: TEST_TIMEOUT }, async () => {
    const session = sessionName('h-cmd');
    let a = await Adapter.start(engine, { session, profile: 'hermes' });
    const command = sh('echo hi; exec sleep 300');
    const id = (await a.ok('terminal', { command, background: true })).structuredContent.session_id;
    for (const round of [1, 2]) {
      const list = (await a.ok('process', { action: 'list' })).structuredContent;
      const mine = list.processes.find((p) => p.session_id === id);
      assert.equal(mine?.command, command, `round ${round}: list`);
      assert.equal(typeof mine.cwd, 'string', `round ${round}: cwd`);
      const poll = (await a.ok('process', { action: 'poll', session_id: id })).structuredContent;
      assert.equal(poll.command, command, `round ${round}: poll`);
      await a.close();
      a = await Adapter.start(engine, { session, profile: 'hermes' });
    }
    await a.ok('process', { action: 'kill', session_id: id });
    await a.close();
  });

test('hermes with --delivery poll: its own poll tool, process(action="poll"), is listed and returns the notifications above the model cursor',
  { timeout: TEST_TIMEOUT }, async () => {
    const a = await Adapter.start(engine, { session: sessionName('h-poll'), profile: 'hermes', delivery: 'poll' });
    const listed = a.tools.find((t) => t.name === 'process');
    assert.ok(listed && /"poll"/.test(JSON.stringify(listed.inputSchema)), 'process with its poll action is listed');
    const id = (await a.ok('terminal', {
      command: sh('echo hi; exit 3'), background: true, notify_on_complete: true,
    })).structuredContent.session_id;
    const waited = (await a.ok('process', { action: 'wait', session_id: id, timeout: 60 })).structuredContent;
    assert.equal(waited.exit_code, 3);
    // The ending is numbered by the time the wait answers; poll until it is carried.
    const got = [];
    const deadline = Date.now() + WAIT_MS;
    while (!got.some((n) => n.monitor_id === id && n.type === 'exit')) {
      assert.ok(Date.now() < deadline, `poll carried the ending within ${WAIT_MS} ms: ${JSON.stringify(got)}`);
      const r = await a.ok('process', { action: 'poll', session_id: id });
      got.push(...(r.structuredContent.notifications ?? []));
      await new Promise((res) => setTimeout(res, 50));
    }
    const seqs = got.map((n) => n.seq);
    assert.deepEqual(seqs, [...new Set(seqs)], 'none twice');
    await a.close();
  });
