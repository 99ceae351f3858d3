// Requests served concurrently (MCP.md section 1, issue 23 item 6): a
// `ping`, a `monitor_list` or a second tool call is answered while a
// `monitor_wait` or a foreground `process_run` waits, and notifications still
// arrive meanwhile; `notifications/cancelled` ends a waiting call, which is
// then answered nothing, and frees its place; past MCP_CALLS_MAX (16) tool
// calls in flight a call is refused at once with the documented error.
//
// Before: one request at a time, so a `monitor_wait` of 10 minutes held every
// later request (even `ping`) for 10 minutes, and a cancellation was read
// only after the call it cancelled had been answered.
//
// How a test knows a call is still waiting: the call waits for a gate file
// (harness.mjs) that the test opens only after the other requests have been
// answered, so "answered before it" holds by construction; a serial adapter
// fails these tests by never answering the later requests (within WAIT_MS).
//
// Assumptions where the contract leaves a shape open:
// - The refusal past the bound is the JSON-RPC error -32003 whose message
//   starts with "busy: 16 tool calls are in flight" (docs/mcp.md, "Limits
//   and choices").
// - A cancelled call's place is free at once (the bound counts the calls a
//   harness still waits for), so the next call is not refused for it.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  Engine, Adapter, RawAdapter, McpError, sessionName, sh, textOf, TEST_TIMEOUT, WAIT_MS, within,
} from './harness.mjs';

// MCP_CALLS_MAX (core/mcp/mcp_calls.h) and the code of its refusal.
const CALLS_MAX = 16;
const BUSY = -32003;

let engine;
before(async () => { engine = await Engine.start(); });
after(async () => { await engine?.stop(); });

/** A promise with a flag saying whether it has settled yet. */
function tracked(promise) {
  const t = { settled: false };
  t.promise = promise.finally(() => { t.settled = true; });
  return t;
}

/** Starts a monitor that waits for gate, then prints `done` and exits. */
async function gated(a, gate, label) {
  return (await a.ok('monitor_start', { command: sh(`${gate.until()}; echo done-${label}`), label }))
    .structuredContent.monitor_id;
}

test('while a monitor_wait waits, ping, monitor_list and a second tool call are answered, and a notification arrives',
  { timeout: TEST_TIMEOUT }, async () => {
    const a = await Adapter.start(engine, { session: sessionName('conc-wait') });
    const gate = engine.gate('conc-wait');
    const id = await gated(a, gate, 'waited');
    const wait = tracked(a.ok('monitor_wait', { monitor_id: id, for: 'exit', timeout_ms: 600000 }));

    assert.deepEqual(await within(a.client.ping(), WAIT_MS, 'ping'), {});
    assert.equal(wait.settled, false, 'ping was answered while monitor_wait waits');
    const listed = await within(a.ok('monitor_list', {}), WAIT_MS, 'monitor_list');
    assert.ok(listed.structuredContent.monitors.some((m) => m.monitor_id === id && m.state === 'running'),
      JSON.stringify(listed.structuredContent));
    assert.equal(wait.settled, false, 'monitor_list was answered while monitor_wait waits');
    // A second tool call that starts something: its output is pushed while
    // the first call still waits.
    const other = (await within(a.ok('monitor_start', { command: 'echo second-call', label: 'second', notify: 'lines' }),
      WAIT_MS, 'a second tool call')).structuredContent.monitor_id;
    await a.waitChannel(other, { contains: 'second-call' });
    await a.waitEnding(other);
    const status = await within(a.ok('monitor_status', { monitor_id: id }), WAIT_MS, 'monitor_status');
    assert.equal(status.structuredContent.state, 'running');
    assert.equal(wait.settled, false, 'the second tool call and its notifications came while monitor_wait waits');

    gate.open();
    const w = await wait.promise;
    assert.equal(w.structuredContent.timed_out, false, JSON.stringify(w.structuredContent));
    assert.equal(w.structuredContent.state, 'exited');
    assert.deepEqual(await a.endInput(), { code: 0, signal: null });
  });

test('while a foreground process_run waits, ping, monitor_list and another tool call are answered, and notifications of another monitor arrive',
  { timeout: TEST_TIMEOUT }, async () => {
    const a = await Adapter.start(engine, { session: sessionName('conc-run') });
    const gate = engine.gate('conc-run');
    const run = tracked(a.ok('process_run', {
      command: sh(`echo run-started; ${gate.until()}; echo run-finished`), label: 'foreground', timeout_s: 600,
    }));

    assert.deepEqual(await within(a.client.ping(), WAIT_MS, 'ping'), {});
    const listed = await within(a.ok('monitor_list', {}), WAIT_MS, 'monitor_list');
    assert.ok(Array.isArray(listed.structuredContent.monitors), JSON.stringify(listed.structuredContent));
    assert.equal(run.settled, false, 'monitor_list was answered while the foreground run waits');
    // Another monitor's notifications are pushed meanwhile.
    const other = (await within(a.ok('monitor_start', { command: 'echo beside-the-run', label: 'beside', notify: 'lines' }),
      WAIT_MS, 'monitor_start')).structuredContent.monitor_id;
    await a.waitChannel(other, { contains: 'beside-the-run' });
    await a.waitEnding(other);
    assert.equal(run.settled, false, 'every answer and notification came while the foreground run waits');

    gate.open();
    const r = (await run.promise).structuredContent;
    assert.equal(r.exit_code, 0, JSON.stringify(r));
    assert.match(r.stdout_summary, /run-started\nrun-finished/, JSON.stringify(r));
    assert.deepEqual(await a.endInput(), { code: 0, signal: null });
  });

test('answers leave in the order calls end, each with its own id: a later ping before an earlier wait (raw JSON-RPC)',
  { timeout: TEST_TIMEOUT }, async () => {
    const a = await RawAdapter.start(engine, { session: sessionName('conc-raw') });
    await a.initialize();
    const gate = engine.gate('conc-raw');
    const started = await a.call('tools/call', { name: 'monitor_start', arguments: { command: sh(`${gate.until()}; echo x`) } });
    const id = started.structuredContent.monitor_id;
    const waitId = a.request('tools/call', { name: 'monitor_wait', arguments: { monitor_id: id, for: 'exit', timeout_ms: 600000 } });
    const pingId = a.request('ping');
    await a.response(pingId);
    assert.equal(a.inbox.items.some((m) => m.id === waitId), false, 'nothing answered the wait yet');
    gate.open();
    const w = await a.response(waitId);
    assert.equal(w.result.structuredContent.state, 'exited', JSON.stringify(w));
    const ids = a.inbox.items.filter((m) => m.id !== undefined && m.method === undefined).map((m) => m.id);
    assert.ok(ids.indexOf(pingId) < ids.indexOf(waitId), `the ping's answer came first: ${ids.join(' ')}`);
    a.assertOnlyJsonOnStdout();
    await a.endInput();
  });

test('notifications/cancelled ends a waiting call: nothing is answered for it, and its place is free at once',
  { timeout: TEST_TIMEOUT }, async () => {
    const a = await RawAdapter.start(engine, { session: sessionName('conc-cancel') });
    await a.initialize();
    const gate = engine.gate('conc-cancel');
    const started = await a.call('tools/call', { name: 'monitor_start', arguments: { command: sh(`${gate.until()}; echo x`) } });
    const id = started.structuredContent.monitor_id;
    const wait = (n) => ({ name: 'monitor_wait', arguments: { monitor_id: id, for: 'exit', timeout_ms: 600000 } });

    // CALLS_MAX calls in flight, one of them cancelled: CALLS_MAX more fit
    // before the bound refuses one.
    const first = Array.from({ length: CALLS_MAX }, (_, i) => a.request('tools/call', wait(i)));
    await a.response(a.request('ping'));
    a.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: first[0], reason: 'test' } });
    const more = a.request('tools/call', wait(CALLS_MAX));
    const refused = a.request('tools/call', wait(CALLS_MAX + 1));
    const busy = await a.error(BUSY, [refused, more]);
    assert.equal(busy.id, refused, `the call past the bound is refused, not the one that took the cancelled call's place: ${JSON.stringify(busy)}`);
    assert.match(busy.error.message, new RegExp(`^busy: ${CALLS_MAX} tool calls are in flight`), busy.error.message);

    // Every other call is cancelled too; one more waits to the end.
    for (const r of [...first.slice(1), more]) {
      a.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: r } });
    }
    const last = a.request('tools/call', wait(0));
    gate.open();
    const done = await a.response(last);
    assert.equal(done.result.structuredContent.state, 'exited', JSON.stringify(done));
    // Answers leave in order on one stream: a ping answered after the last
    // wait comes after any answer the cancelled waits could still have had.
    await a.response(a.request('ping'));
    const answered = a.inbox.items.filter((m) => [...first, more].includes(m.id));
    assert.deepEqual(answered, [], `no answer for a cancelled call: ${JSON.stringify(answered)}`);
    a.assertOnlyJsonOnStdout();
    await a.endInput();
  });

test(`past ${CALLS_MAX} tool calls in flight a call is refused at once with "busy", ping is still answered, and the others answer`,
  { timeout: TEST_TIMEOUT }, async () => {
    const a = await Adapter.start(engine, { session: sessionName('conc-busy') });
    const gate = engine.gate('conc-busy');
    const id = await gated(a, gate, 'busy');
    const waits = Array.from({ length: CALLS_MAX }, () =>
      tracked(a.ok('monitor_wait', { monitor_id: id, for: 'exit', timeout_ms: 600000 })));
    let refused;
    try {
      await within(a.call('monitor_list', {}), WAIT_MS, 'the call past the bound');
    } catch (e) {
      refused = e;
    }
    assert.ok(refused instanceof McpError, `a JSON-RPC error: ${refused}`);
    assert.equal(refused.code, BUSY, refused.message);
    assert.match(refused.message, new RegExp(`busy: ${CALLS_MAX} tool calls are in flight`), refused.message);
    assert.deepEqual(await within(a.client.ping(), WAIT_MS, 'ping'), {});
    assert.ok(waits.every((w) => !w.settled), 'the waits still wait');

    gate.open();
    for (const w of waits) assert.equal((await w.promise).structuredContent.state, 'exited');
    // The bound counts calls in flight only: the next one is served, even
    // sent the moment the last answer came.
    const listed = (await a.ok('monitor_list', { include_exited: true })).structuredContent;
    assert.ok(listed.monitors.some((m) => m.monitor_id === id), JSON.stringify(listed));
    assert.deepEqual(await a.endInput(), { code: 0, signal: null });
  });

test('the SDK\'s cancellation (an AbortSignal) ends a waiting monitor_wait and frees its place; stdin EOF with calls in flight exits 0 at once',
  { timeout: TEST_TIMEOUT }, async () => {
    const a = await Adapter.start(engine, { session: sessionName('conc-abort') });
    const gate = engine.gate('conc-abort');
    const id = await gated(a, gate, 'abort');
    const aborts = [];
    const calls = [];
    for (let i = 0; i < CALLS_MAX; i++) {
      const ac = new AbortController();
      aborts.push(ac);
      calls.push(a.client.callTool({ name: 'monitor_wait', arguments: { monitor_id: id, for: 'exit', timeout_ms: 600000 } },
        undefined, { signal: ac.signal, timeout: 600000 }).then(() => 'answered', () => 'rejected'));
    }
    assert.deepEqual(await within(a.client.ping(), WAIT_MS, 'ping'), {});
    for (const ac of aborts) ac.abort('the test cancels');
    assert.deepEqual(await Promise.all(calls), calls.map(() => 'rejected'));
    // All CALLS_MAX places are free again: as many new waits run, and one
    // more call is refused.
    const again = Array.from({ length: CALLS_MAX }, () =>
      tracked(a.ok('monitor_wait', { monitor_id: id, for: 'exit', timeout_ms: 600000 })));
    const over = await a.call('monitor_list', {}).then(() => null, (e) => e);
    assert.equal(over?.code, BUSY, `the call past the bound: ${over}`);
    assert.ok(again.every((w) => !w.settled));
    // The harness goes away while CALLS_MAX calls wait: the adapter exits 0
    // without waiting for them (their monitor keeps running in the engine).
    assert.deepEqual(await a.endInput(), { code: 0, signal: null });
    gate.open();
    await Promise.allSettled(again.map((w) => w.promise));
  });

test('a long notifications_read wait does not hold other calls back, and is answered when a notification comes',
  { timeout: TEST_TIMEOUT }, async () => {
    const a = await Adapter.start(engine, { session: sessionName('conc-read'), delivery: 'poll' });
    const read = tracked(a.ok('notifications_read', { wait_ms: 60000 }));
    assert.deepEqual(await within(a.client.ping(), WAIT_MS, 'ping'), {});
    const id = (await within(a.ok('monitor_start', { command: 'echo read-me', notify: 'lines' }), WAIT_MS, 'monitor_start'))
      .structuredContent.monitor_id;
    const r = await read.promise;
    const list = r.structuredContent.notifications;
    assert.ok(list.length >= 1 && list[0].monitor_id === id, JSON.stringify(r.structuredContent));
    assert.match(textOf(r), /read-me/);
    await a.close();
  });
