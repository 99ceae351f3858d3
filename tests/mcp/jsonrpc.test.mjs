// JSON-RPC 2.0 strictness (issue 22 point 17; MCP.md section 1, docs/mcp.md
// "Limits and choices"), as raw lines, since an SDK client never sends these:
//
// - A request's id is a string or a number. Any other id (an object, an
//   array, a boolean, null) is answered with -32600 and id null, and the
//   request is not carried out: echoing such an id back would hand the
//   client a reply it cannot match, and MCP forbids null ids.
// - `jsonrpc` must be "2.0", `method` a string and `params`, when present,
//   an object: otherwise -32600 (-32602 for array params, which JSON-RPC
//   allows but no MCP method takes).
// - A response sent to the server (it sends no requests) is not answered.
// - Before `initialize` has been answered only `ping` is served; any other
//   request gets -32600 naming initialize, and nothing reaches the engine.
//
// Assumptions where the contract leaves a shape open: the messages of these
// errors are free text; the tests look only for the words that name the
// rule (id, initialize, params).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Engine, RawAdapter, sessionName, TEST_TIMEOUT } from './harness.mjs';

let engine;
before(async () => { engine = await Engine.start(); });
after(async () => { await engine?.stop(); });

async function initialized(label) {
  const a = await RawAdapter.start(engine, { session: sessionName(label) });
  await a.initialize();
  return a;
}

/** Sends line, then a ping with a fresh id; returns what arrived in between
 * (the adapter answers in order, so the ping's answer closes the window). */
async function exchange(a, line) {
  const from = a.inbox.items.length;
  a.sendLine(line);
  const id = `after-${a.nextId++}`;
  a.send({ jsonrpc: '2.0', id, method: 'ping' });
  await a.response(id);
  // A tools/call runs beside the requests after it (requests are served
  // concurrently): a valid id's answer may come after the ping's.
  let sent;
  try { sent = JSON.parse(line); } catch { sent = undefined; }
  if (sent?.method === 'tools/call' && (typeof sent.id === 'string' || typeof sent.id === 'number')) {
    await a.response(sent.id);
  }
  return a.inbox.items.slice(from).filter((m) => m.id !== id);
}

test('an id that is an object, an array, a boolean or null gets -32600 with id null, and the request is not carried out',
  { timeout: TEST_TIMEOUT }, async () => {
    const a = await initialized('ids');
    for (const id of [{ x: 1 }, [1, 2], true, false, null]) {
      const start = {
        jsonrpc: '2.0', id, method: 'tools/call',
        params: { name: 'monitor_start', arguments: { command: 'sleep 300', label: 'bad-id' } },
      };
      const got = await exchange(a, JSON.stringify(start));
      assert.equal(got.length, 1, `one answer to id ${JSON.stringify(id)}: ${JSON.stringify(got)}`);
      assert.equal(got[0].error?.code, -32600, JSON.stringify(got[0]));
      assert.equal(got[0].id, null, `the id is not echoed: ${JSON.stringify(got[0])}`);
      assert.match(got[0].error.message, /\bid\b/);
    }
    const list = await a.call('tools/call', { name: 'monitor_list', arguments: { include_exited: true } });
    assert.deepEqual(list.structuredContent.monitors, [], 'no request with a bad id started anything');
    a.assertOnlyJsonOnStdout();
    await a.close();
  });

test('string and number ids are echoed exactly', { timeout: TEST_TIMEOUT }, async () => {
  const a = await initialized('good-ids');
  for (const id of ['', 'req-1', 'ünïcödé', 0, -7, 2 ** 53 - 1, 1.5]) {
    const got = await exchange(a, JSON.stringify({ jsonrpc: '2.0', id, method: 'ping' }));
    assert.equal(got.length, 1, JSON.stringify(got));
    assert.deepEqual(got[0], { jsonrpc: '2.0', id, result: {} });
  }
  await a.close();
});

test('a message that is not JSON-RPC 2.0 gets -32600 (or -32602 for array params), and a response sent to the server gets nothing',
  { timeout: TEST_TIMEOUT }, async () => {
    const a = await initialized('shape');
    const cases = [
      [{ jsonrpc: '1.0', id: 11, method: 'ping' }, -32600, 11],
      [{ id: 12, method: 'ping' }, -32600, 12],
      [{ jsonrpc: '2.0', id: 13, method: 42 }, -32600, 13],
      [{ jsonrpc: '2.0', id: 14, method: 'ping', params: 'x' }, -32600, 14],
      [{ jsonrpc: '2.0', id: 15, method: 'tools/list', params: [] }, -32602, 15],
      [{ jsonrpc: '2.0', method: 42 }, -32600, null],
      [{ jsonrpc: '2.0', id: 16 }, -32600, 16],
    ];
    for (const [msg, code, id] of cases) {
      const got = await exchange(a, JSON.stringify(msg));
      assert.equal(got.length, 1, `one answer to ${JSON.stringify(msg)}: ${JSON.stringify(got)}`);
      assert.equal(got[0].error?.code, code, `${JSON.stringify(msg)}: ${JSON.stringify(got[0])}`);
      assert.equal(got[0].id, id, `${JSON.stringify(msg)}: ${JSON.stringify(got[0])}`);
    }
    for (const response of [{ jsonrpc: '2.0', id: 17, result: {} },
      { jsonrpc: '2.0', id: 18, error: { code: -1, message: 'no' } }]) {
      assert.deepEqual(await exchange(a, JSON.stringify(response)), [],
        `a response is not answered: ${JSON.stringify(response)}`);
    }
    a.assertOnlyJsonOnStdout();
    await a.close();
  });

test('an error quoting the input is valid UTF-8 even where the quote cuts a character',
  { timeout: TEST_TIMEOUT }, async () => {
    const a = await initialized('utf8');
    // The message quotes at most 64 bytes of the method: 'x' then two-byte
    // characters puts the cut inside one.
    const method = `x${'é'.repeat(60)}`;
    const got = await exchange(a, JSON.stringify({ jsonrpc: '2.0', id: 'u1', method }));
    assert.equal(got.length, 1, `one answer: ${JSON.stringify(got)}`);
    assert.equal(got[0].error?.code, -32601);
    assert.equal(got[0].id, 'u1');
    const tool = await exchange(a, JSON.stringify({
      jsonrpc: '2.0', id: 'u2', method: 'tools/call', params: { name: method, arguments: {} },
    }));
    assert.equal(tool.length, 1, `one answer: ${JSON.stringify(tool)}`);
    assert.equal(tool[0].error?.code, -32602);
    a.assertOnlyJsonOnStdout();
    await a.close();
  });

test('before initialize only ping is served: other requests get -32600 naming initialize and reach no engine; after it they are served',
  { timeout: TEST_TIMEOUT }, async () => {
    const a = await RawAdapter.start(engine, { session: sessionName('early') });
    const ping = await a.response(a.request('ping'));
    assert.deepEqual(ping.result, {});
    for (const [method, params] of [
      ['tools/list', undefined],
      ['tools/call', { name: 'monitor_start', arguments: { command: 'sleep 300', label: 'too-early' } }],
      ['logging/setLevel', { level: 'debug' }],
      ['no/such/method', {}],
    ]) {
      const r = await a.response(a.request(method, params));
      assert.equal(r.error?.code, -32600, `${method} before initialize: ${JSON.stringify(r)}`);
      assert.match(r.error.message, /initialize/);
    }
    await a.initialize();
    const tools = await a.call('tools/list');
    assert.ok(tools.tools.length > 0);
    const list = await a.call('tools/call', { name: 'monitor_list', arguments: { include_exited: true } });
    assert.deepEqual(list.structuredContent.monitors, [], 'the early tools/call started nothing');
    a.assertOnlyJsonOnStdout();
    await a.close();
  });
