// Lifecycle (MCP.md section 2): initialize and version negotiation, what the
// server says about itself, ping, and stdin EOF.
//
// Assumptions where the contract leaves a shape open:
// - serverInfo.version is a non-empty string (its format is not fixed).
// - "instructions ... which tool to call first": the text names at least one
//   tool that tools/list lists.
// - The SDK client always offers 2025-11-25; the other revisions are offered
//   by writing initialize on the adapter's stdin directly.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Engine, Adapter, RawAdapter, sessionName, sh, TEST_TIMEOUT } from './harness.mjs';

let engine;
before(async () => { engine = await Engine.start(); });
after(async () => { await engine?.stop(); });

function checkCapabilities(caps) {
  assert.equal(typeof caps?.tools, 'object', `capabilities.tools: ${JSON.stringify(caps)}`);
  assert.equal(caps.tools.listChanged, false, 'capabilities.tools.listChanged is false');
  assert.equal(typeof caps.logging, 'object', `capabilities.logging: ${JSON.stringify(caps)}`);
  assert.equal(typeof caps.experimental?.['claude/channel'], 'object',
    `capabilities.experimental["claude/channel"]: ${JSON.stringify(caps)}`);
}

test('the SDK client connects and the server introduces itself as vigil, with tools, logging, the claude/channel capability and instructions',
  { timeout: TEST_TIMEOUT }, async () => {
    const a = await Adapter.start(engine, { session: sessionName('hello') });
    const info = a.client.getServerVersion();
    assert.equal(info?.name, 'vigil');
    assert.equal(typeof info.version, 'string');
    assert.match(info.version, /\S/);
    checkCapabilities(a.client.getServerCapabilities());
    const instructions = a.client.getInstructions();
    assert.equal(typeof instructions, 'string');
    assert.ok(instructions.trim().length > 0, 'instructions are not empty');
    assert.match(instructions, /untrusted/i, 'the instructions say notifications are untrusted');
    const names = a.tools.map((t) => t.name);
    assert.ok(names.some((n) => instructions.includes(n)),
      `the instructions name a tool to call first (one of ${names.join(', ')}): ${instructions}`);
    await a.close();
  });

for (const version of ['2025-06-18', '2025-11-25', '2025-03-26']) {
  test(`a client asking for protocol revision ${version} is answered with ${version}`,
    { timeout: TEST_TIMEOUT }, async () => {
      const a = await RawAdapter.start(engine, { session: sessionName('ver') });
      const result = await a.initialize(version);
      assert.equal(result.protocolVersion, version);
      assert.equal(result.serverInfo?.name, 'vigil');
      checkCapabilities(result.capabilities);
      assert.equal(typeof result.instructions, 'string');
      assert.ok(result.instructions.trim().length > 0);
      a.assertOnlyJsonOnStdout();
      await a.close();
    });
}

test('a client asking for an unknown protocol revision is answered with 2025-11-25',
  { timeout: TEST_TIMEOUT }, async () => {
    const a = await RawAdapter.start(engine, { session: sessionName('ver') });
    const result = await a.initialize('1999-01-01');
    assert.equal(result.protocolVersion, '2025-11-25');
    assert.equal(result.serverInfo?.name, 'vigil');
    a.assertOnlyJsonOnStdout();
    await a.close();
  });

test('ping is answered with an empty result, through the SDK and on the raw stream',
  { timeout: TEST_TIMEOUT }, async () => {
    const a = await Adapter.start(engine, { session: sessionName('ping') });
    assert.deepEqual(await a.client.ping(), {});
    await a.close();

    const raw = await RawAdapter.start(engine, { session: sessionName('ping') });
    await raw.initialize();
    const r = await raw.response(raw.request('ping'));
    assert.equal(r.jsonrpc, '2.0');
    assert.deepEqual(r.result, {});
    raw.assertOnlyJsonOnStdout();
    await raw.close();
  });

test('stdin EOF ends the adapter with exit status 0, and the monitor it started keeps running for the next adapter of the session',
  { timeout: TEST_TIMEOUT }, async () => {
    const session = sessionName('eof');
    const gate = engine.gate('eof');
    const first = await RawAdapter.start(engine, { session });
    await first.initialize();
    const started = await first.call('tools/call', {
      name: 'monitor_start', arguments: { command: sh(`echo up; ${gate.until()}; echo bye`), label: 'eof' },
    });
    assert.notEqual(started.isError, true, JSON.stringify(started));
    const id = started.structuredContent?.monitor_id;
    assert.match(id ?? '', /^mon_[0-9a-z]{12}$/);
    assert.deepEqual(await first.endInput(), { code: 0, signal: null });
    first.assertOnlyJsonOnStdout();

    const second = await Adapter.start(engine, { session });
    const status = await second.ok('monitor_status', { monitor_id: id });
    assert.equal(status.structuredContent.state, 'running', 'the monitor outlived the adapter that started it');
    gate.open();
    await second.waitEnding(id, { type: 'exit' });
    assert.deepEqual(await second.endInput(), { code: 0, signal: null });
  });
