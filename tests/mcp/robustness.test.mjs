// Bad input on the adapter's stdin (MCP.md section 1), written as raw lines
// (an SDK client never sends these): malformed JSON -> -32700 and the server
// goes on; an unknown method -> -32601; an unknown tool or a bad argument ->
// -32602 naming it; a line over 1 MiB -> -32600, discarded, and the server
// goes on; nothing of that reaches the engine.
//
// Assumptions where the contract leaves a shape open:
// - Errors for input whose id cannot be read (malformed JSON, an over-long
//   line) carry `id: null`, as JSON-RPC 2.0 says for parse errors and
//   invalid requests.
// - The -32602 error's message or data names the tool or the argument.
// - "The line is discarded": a request inside an over-long line is not
//   carried out (the monitor it asks for is never started), and the line
//   after it is read as the next message.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Engine, RawAdapter, VIGIL, sessionName, testEnv, TEST_TIMEOUT } from './harness.mjs';

let engine;
before(async () => { engine = await Engine.start(); });
after(async () => { await engine?.stop(); });

const MiB = 1024 * 1024;

async function started(label) {
  const a = await RawAdapter.start(engine, { session: sessionName(label) });
  await a.initialize();
  return a;
}

async function stillAnswers(a) {
  const r = await a.response(a.request('ping'));
  assert.deepEqual(r.result, {}, `the server still answers: ${JSON.stringify(r)}`);
}

test('malformed JSON is answered with -32700 and the server goes on', { timeout: TEST_TIMEOUT }, async () => {
  const a = await started('parse');
  a.sendLine('{"jsonrpc": "2.0", "id": 5, "method": "ping"');
  const e1 = await a.error(-32700);
  assert.equal(e1.jsonrpc, '2.0');
  assert.equal(e1.id, null);
  a.sendLine('this is not json at all');
  a.sendLine('{"jsonrpc":"2.0","id":6,"method":"ping","params":{}}}');
  await a.inbox.waitFor((m) => m.error?.code === -32700 && m !== e1, { what: 'a second -32700' });
  await stillAnswers(a);
  assert.equal(a.inbox.items.filter((m) => m.error?.code === -32700).length, 3, 'one -32700 per malformed line');
  assert.equal(a.inbox.items.filter((m) => m.id === 5 || m.id === 6).filter((m) => m.result !== undefined).length, 0,
    'no malformed request was carried out');
  a.assertOnlyJsonOnStdout();
  assert.deepEqual(await a.endInput(), { code: 0, signal: null });
});

test('a request split across two writes is answered once its line is complete', { timeout: TEST_TIMEOUT }, async () => {
  const a = await started('split');
  a.child.stdin.write('{"jsonrpc":"2.0","id":"split-1",');
  const answered = a.response('split-1');
  await new Promise((resolve) => a.child.stdin.write('"method":"ping"}\n', resolve));
  assert.deepEqual((await answered).result, {});
  a.assertOnlyJsonOnStdout();
  await a.close();
});

test('an unknown method is answered with -32601 and the server goes on', { timeout: TEST_TIMEOUT }, async () => {
  const a = await started('method');
  const id = a.request('no/such/method', {});
  const r = await a.response(id);
  assert.equal(r.error?.code, -32601, JSON.stringify(r));
  assert.equal(r.id, id);
  await stillAnswers(a);
  a.assertOnlyJsonOnStdout();
  await a.close();
});

test('an unknown tool is answered with -32602 naming it and the server goes on', { timeout: TEST_TIMEOUT }, async () => {
  const a = await started('tool');
  const r = await a.response(a.request('tools/call', { name: 'no_such_tool', arguments: {} }));
  assert.equal(r.error?.code, -32602, JSON.stringify(r));
  assert.match(JSON.stringify(r.error), /no_such_tool/);
  await stillAnswers(a);
  a.assertOnlyJsonOnStdout();
  await a.close();
});

test('an argument failing the schema is answered with -32602 naming it and the server goes on', { timeout: TEST_TIMEOUT }, async () => {
  const a = await started('arg');
  const r = await a.response(a.request('tools/call', { name: 'monitor_list', arguments: { include_exited: 'yes please' } }));
  assert.equal(r.error?.code, -32602, JSON.stringify(r));
  assert.match(JSON.stringify(r.error), /include_exited/);
  await stillAnswers(a);
  a.assertOnlyJsonOnStdout();
  await a.close();
});

test('a line over 1 MiB is answered with -32600 and discarded, and the lines around it are still read', { timeout: TEST_TIMEOUT }, async () => {
  const a = await started('long');
  // A well-formed request whose line is over the limit: it must not start anything.
  const long = JSON.stringify({
    jsonrpc: '2.0', id: 'too-long', method: 'tools/call',
    params: { name: 'monitor_start', arguments: { command: 'sleep 300', label: 'too-long', description: 'x'.repeat(MiB + 16) } },
  });
  assert.ok(Buffer.byteLength(long) > MiB);
  const before = { jsonrpc: '2.0', id: 'before', method: 'ping' };
  const after = { jsonrpc: '2.0', id: 'after', method: 'ping' };
  a.child.stdin.write(`${JSON.stringify(before)}\n${long}\n${JSON.stringify(after)}\n`);
  assert.deepEqual((await a.response('before')).result, {});
  const e = await a.error(-32600);
  assert.equal(e.id, null);
  assert.deepEqual((await a.response('after')).result, {}, 'the line after the long one is read');
  assert.ok(!a.inbox.items.some((m) => m.id === 'too-long'), 'the long line was not carried out');

  const list = await a.call('tools/call', { name: 'monitor_list', arguments: { include_exited: true } });
  assert.notEqual(list.isError, true);
  assert.deepEqual(list.structuredContent.monitors, [], 'nothing of the long line reached the engine');

  // Twice in a row, and with no newline for a while: still survived.
  a.child.stdin.write('x'.repeat(MiB + 1));
  a.child.stdin.write(`${'y'.repeat(1024)}\n${'z'.repeat(2 * MiB)}\n`);
  await a.inbox.waitFor((m) => m.error?.code === -32600 && m !== e, { what: 'a second -32600' });
  await stillAnswers(a);
  assert.equal(a.inbox.items.filter((m) => m.error?.code === -32600).length, 3, 'one -32600 per over-long line');
  a.assertOnlyJsonOnStdout();
  assert.deepEqual(await a.endInput(), { code: 0, signal: null });
});

test('a --session that is no session name is refused before anything is written, naming it',
  { timeout: TEST_TIMEOUT }, async () => {
    // The session's name becomes the state file's name next to the socket: a
    // name with a slash would put that file anywhere.
    const { spawn } = await import('node:child_process');
    const fs = await import('node:fs');
    const path = await import('node:path');
    const evil = '../escaped-state';
    const child = spawn(VIGIL, ['mcp', '--socket', engine.socket, '--no-spawn', '--session', evil],
                        { stdio: ['pipe', 'pipe', 'pipe'], env: testEnv() });
    let stderr = '';
    child.stderr.on('data', (d) => { stderr += d; });
    const code = await new Promise((resolve) => child.on('exit', (c) => resolve(c)));
    assert.equal(code, 1, stderr);
    assert.match(stderr, /--session: "\.\.\/escaped-state" must be characters of \[A-Za-z0-9\._:-\]/);
    const outside = path.join(path.dirname(path.dirname(engine.socket)), 'escaped-state.seq');
    assert.equal(fs.existsSync(outside), false, `no state file at ${outside}`);
  });

test('a long multi-byte name echoed in an error is cut at a character boundary, and every request is answered',
  { timeout: TEST_TIMEOUT }, async () => {
    // Issue 22, point 13: "%.64s" cut a three-byte character in half, the
    // error text was not UTF-8, building the JSON failed and no answer came.
    const a = await started('utf8-cut');
    const euros = '\u20ac'.repeat(40); // 120 bytes: 64 falls inside the 22nd
    const asked = [
      ['unknown tool', -32602, 'tools/call', { name: euros, arguments: {} }],
      ['unknown method', -32601, euros, {}],
      ['unknown argument', -32602, 'tools/call', { name: 'monitor_list', arguments: { [euros]: 1 } }],
      ['a bad env value', -32602, 'tools/call', {
        name: 'monitor_start', arguments: { command: 'true', env: { [euros.repeat(4)]: 1 } },
      }],
    ];
    for (const [what, code, method, params] of asked) {
      const r = await a.response(a.request(method, params));
      assert.equal(r.error?.code, code, `${what}: ${JSON.stringify(r)}`);
      const msg = r.error.message;
      assert.ok(!msg.includes('\ufffd'), `${what}: the message is valid UTF-8: ${JSON.stringify(msg)}`);
      assert.match(msg, /\u20ac{10,}/, `${what}: the message names what was asked, cut between characters: ${msg}`);
    }
    await stillAnswers(a);
    a.assertOnlyJsonOnStdout();
    await a.close();
  });
