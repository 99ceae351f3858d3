// A client on an engine's Unix socket: it connects (and refuses a socket
// someone else could have put there), every refusal arrives as a VigilError
// with the protocol's code and the engine's message, deadlines the caller
// gives are kept, and notifications come the way the host chose (wait(),
// `for await`, or 'notification' listeners) as objects whose keys are the
// ones index.d.ts declares.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Client, ERROR_CODES, VigilConnectionError, VigilError, VigilTimeoutError, defaultSocketPath } from '../index.js';
import {
  PACKAGE_DIR, SocketEngine, TEST_TIMEOUT, WAIT_MS, endingOf, removeTempDirs, sh, tempDir, testConfig,
  waitNoneLeft,
} from './helpers.mjs';

let engine;

before(async () => {
  engine = await SocketEngine.start({ config: testConfig({ allowed_commands: ['sh', 'echo', 'sleep', 'vigil-no-such-program'] }) });
});

after(async () => {
  const exit = await engine?.stop();
  removeTempDirs();
  assert.deepEqual(exit, { code: 0, signal: null }, `vigild exits 0: ${engine?.log}`);
  assert.deepEqual(await waitNoneLeft(), [], 'no process of this file is left');
});

test('the default socket path is the engine\'s', () => {
  assert.equal(defaultSocketPath({ XDG_RUNTIME_DIR: '/run/user/1000' }), '/run/user/1000/vigil/vigil.sock');
  assert.equal(defaultSocketPath({ XDG_RUNTIME_DIR: '' }), `/tmp/vigil-${process.geteuid()}/vigil.sock`);
  assert.equal(defaultSocketPath({}), `/tmp/vigil-${process.geteuid()}/vigil.sock`);
});

test('each refusal is a VigilError with the protocol\'s code and the engine\'s message, and changes nothing',
  { timeout: TEST_TIMEOUT }, async () => {
    const client = await Client.connect(engine.socket);
    try {
      const refusals = [
        [() => client.monitorStart({ command: 'rm -rf /tmp/x' }), 'denied',
          /^denied: command: program "rm" is not in monitor\.allowed_commands/],
        [() => client.monitorStart({}), 'invalid_params', /^invalid_params: .*\bcommand\b.*\bargv\b/],
        [() => client.monitorStart({ command: 'echo x', colour: 'red' }), 'invalid_params',
          /^invalid_params: unknown argument "colour"/],
        [() => client.monitorStart({ command: 'echo x', patterns: ['(foo'] }), 'invalid_pattern',
          /^invalid_pattern: patterns\[0\] "\(foo": missing closing parenthesis/],
        [() => client.monitorStart({ command: 'vigil-no-such-program' }), 'command_not_found',
          /^command_not_found: command: "vigil-no-such-program" was not found/],
        [() => client.monitorStatus({ monitor_id: 'mon_zzzzzzzzzzzz' }), 'not_found',
          /^not_found: monitor_id: no monitor "mon_zzzzzzzzzzzz"/],
        [() => client.call('bogus'), 'unknown_method', /^unknown_method: no method "bogus"/],
        [() => client.sessionState({ state: 'asleep' }), 'invalid_params', /^invalid_params: state must be/],
      ];
      for (const [attempt, name, message] of refusals) {
        await assert.rejects(attempt(), (e) => {
          assert.ok(e instanceof VigilError, `${e.stack}`);
          assert.equal(e.code, ERROR_CODES[name]);
          assert.equal(e.codeName, name);
          assert.match(e.message, message);
          return true;
        });
      }
      const list = await client.monitorList({ include_exited: true });
      assert.equal(list.total, 0, 'no refused start left a monitor');

      // already_exited: stopping a monitor that ended by itself.
      const m = await client.monitorStart({ command: 'sh -c "exit 0"', notify: 'exit' });
      const ending = await client.wait({ timeoutMs: WAIT_MS, filter: endingOf(m.monitor_id) });
      assert.equal(ending.type, 'exit');
      await assert.rejects(client.monitorStop({ monitor_id: m.monitor_id }),
        (e) => e instanceof VigilError && e.code === 8 && /^already_exited: /.test(e.message));
    } finally {
      await client.close();
    }
  });

test('a method sent as a notification that fails comes back as an "engineError"', { timeout: TEST_TIMEOUT }, async () => {
  const client = await Client.connect(engine.socket);
  try {
    const failed = new Promise((resolve) => client.once('engineError', resolve));
    client.notify('no_such_method', { x: 1 });
    const e = await failed;
    assert.ok(e instanceof VigilError);
    assert.equal(e.codeName, 'unknown_method');
    assert.match(e.message, /no method "no_such_method"/);
    assert.deepEqual(await client.ping(), { version: '0.1.0', api_level: 1 }, 'the connection goes on');
  } finally {
    await client.close();
  }
});

test('a deadline the caller gives is kept, and the connection goes on after it', { timeout: TEST_TIMEOUT }, async () => {
  const client = await Client.connect(engine.socket);
  try {
    const m = await client.monitorStart({ command: 'sleep 303' });
    await assert.rejects(client.monitorWait({ monitor_id: m.monitor_id, timeout_ms: 600000 }, { timeoutMs: 50 }),
      (e) => e instanceof VigilTimeoutError && /monitor_wait: no answer from the engine at .* within 50 ms/.test(e.message));
    assert.equal(await client.wait({ timeoutMs: 50 }), null, 'wait() resolves null when nothing comes in time');
    const stopped = await client.monitorStop({ monitor_id: m.monitor_id });
    assert.equal(stopped.status, 'stopped');
    const ending = await client.wait({ timeoutMs: WAIT_MS });
    assert.equal(ending.type, 'stopped');
  } finally {
    await client.close();
  }
});

test('notifications go to "notification" listeners when there are any, else to wait() and for-await, each once',
  { timeout: TEST_TIMEOUT }, async () => {
    const client = await Client.connect(engine.socket);
    try {
      const heard = [];
      const listener = (n) => heard.push(n);
      client.on('notification', listener);
      const a = await client.monitorStart({ command: sh('echo one'), patterns: [] });
      const endA = await new Promise((resolve) => {
        const check = (n) => { if (endingOf(a.monitor_id)(n)) { client.off('notification', check); resolve(n); } };
        client.on('notification', check);
      });
      client.off('notification', listener);
      assert.deepEqual(heard.map((n) => n.type), ['output', 'exit']);
      assert.equal(endA.seq, 2);
      assert.equal(await client.wait({ timeoutMs: 0 }), null, 'what listeners got is not also in the inbox');

      const b = await client.monitorStart({ command: sh('echo two'), patterns: [] });
      const seen = [];
      for await (const n of client) {
        seen.push([n.seq, n.type, n.lines.map((l) => l.text)]);
        if (endingOf(b.monitor_id)(n)) break;
      }
      assert.deepEqual(seen, [[3, 'output', ['two']], [4, 'exit', ['two']]]);
    } finally {
      await client.close();
    }
  });

test('a notification has exactly the keys index.d.ts declares for it', { timeout: TEST_TIMEOUT }, async () => {
  const dts = fs.readFileSync(path.join(PACKAGE_DIR, 'index.d.ts'), 'utf8');
  const body = dts.match(/export interface Notification \{([\s\S]*?)\n\}/)[1];
  const declared = [...body.matchAll(/^ {2}(\w+)\??:/gm)].map((m) => m[1]).sort();
  const client = await Client.connect(engine.socket);
  try {
    await client.monitorStart({ command: sh('echo Error: x'), patterns: ['Error'] });
    const n = await client.wait({ timeoutMs: WAIT_MS });
    assert.deepEqual(Object.keys(n).sort(), declared);
  } finally {
    await client.close();
  }
});

test('a socket someone else could have put there is refused before a byte is sent', { timeout: TEST_TIMEOUT }, async () => {
  const dir = tempDir('shared');
  fs.chmodSync(dir, 0o777);
  const sock = path.join(dir, 'vigil.sock');
  let accepted = 0;
  const server = net.createServer((c) => { accepted += 1; c.destroy(); });
  await new Promise((resolve) => server.listen(sock, resolve));
  try {
    await assert.rejects(Client.connect(sock), (e) => {
      assert.ok(e instanceof VigilConnectionError);
      assert.match(e.message, new RegExp(`refusing the engine at ${sock}: its directory ${dir} belongs to uid \\d+ ` +
        'with mode 0777; it must belong to uid \\d+ \\(yours\\) or root and be writable by nobody else'));
      return true;
    });
    assert.equal(accepted, 0, 'the client never connected');
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
  await assert.rejects(Client.connect(path.join(dir, 'none.sock')),
    (e) => e instanceof VigilConnectionError && /the socket does not exist/.test(e.message));
});

test('a start runs in the host\'s working directory, as from a shell; cwd "." asks for the engine\'s',
  { timeout: TEST_TIMEOUT }, async () => {
    // The engine runs in its own directory; the host is in a project of
    // its own: `make test` from a project must run there.
    const hostDir = process.cwd();
    const engineDir = fs.realpathSync(engine.dir);
    const project = fs.realpathSync(tempDir('project'));
    process.chdir(project);
    const client = await Client.connect(engine.socket);
    try {
      const ran = await client.processRun({ argv: ['sh', '-c', 'pwd -P'] });
      assert.equal(ran.stdout_summary.trim(), project);
      const own = await client.processRun({ argv: ['sh', '-c', 'pwd -P'], cwd: '.' });
      assert.equal(own.stdout_summary.trim(), engineDir);
    } finally {
      process.chdir(hostDir);
      await client.close();
    }
  });
