// The examples do what their pages say: the example in clients/node's
// README.md, run as a reader would (imported as 'vigil-client', from the
// checkout, with the bundled config and vigild on PATH), prints exactly the
// output the README shows; and examples/node-host/host.mjs runs a command,
// prints its notifications and exits with the command's status, or 126,
// 127, 128+N and 125 as its README says.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  BUILD_DIR, PACKAGE_DIR, REPO, SocketEngine, TEST_TIMEOUT, VIGILD, WAIT_MS, removeTempDirs, tempDir, testConfig,
  testEnv, waitNoneLeft, within, writeConfig,
} from './helpers.mjs';

const HOST = path.join(REPO, 'examples', 'node-host', 'host.mjs');
const CONFIG = testConfig({ allowed_commands: ['sh', 'echo', 'vigil-no-such-program'] });
let engine;

before(async () => {
  engine = await SocketEngine.start({ config: CONFIG });
});

after(async () => {
  const exit = await engine?.stop();
  removeTempDirs();
  assert.deepEqual(exit, { code: 0, signal: null }, engine?.log);
  assert.deepEqual(await waitNoneLeft(), [], 'no process of this file is left');
});

/** Runs node with args; resolves with {status, stdout, stderr}. */
function runNode(args, { cwd = REPO, env = testEnv() } = {}) {
  const child = spawn(process.execPath, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (t) => { stdout += t; });
  child.stderr.setEncoding('utf8').on('data', (t) => { stderr += t; });
  const done = new Promise((resolve) => child.once('close', (status, signal) => resolve({ status, signal, stdout, stderr })));
  return within(done, WAIT_MS * 2, `node ${args.join(' ')}`);
}

/** The first fenced block of kind (`js`, or '' for a bare fence) after the line `after`. */
function fencedBlock(text, after, kind) {
  const from = text.indexOf(after);
  assert.ok(from >= 0, `the README has "${after}"`);
  const m = text.slice(from).match(new RegExp('^```' + kind + '\\n([\\s\\S]*?)^```$', 'm'));
  assert.ok(m, `a \`\`\`${kind} block after "${after}"`);
  return m[1];
}

test('the README\'s example runs and prints what the README says', { timeout: TEST_TIMEOUT }, async () => {
  const readme = fs.readFileSync(path.join(PACKAGE_DIR, 'README.md'), 'utf8');
  const code = fencedBlock(readme, '## Example', 'js');
  const expected = fencedBlock(readme, 'It prints:', '');
  // A project that installed the package: node_modules/vigil-client is it.
  const project = tempDir('readme');
  fs.mkdirSync(path.join(project, 'node_modules'));
  fs.symlinkSync(PACKAGE_DIR, path.join(project, 'node_modules', 'vigil-client'), 'dir');
  fs.writeFileSync(path.join(project, 'example.mjs'), code);
  const r = await runNode([path.join(project, 'example.mjs')],
    { env: testEnv({ PATH: `${BUILD_DIR}:${process.env.PATH ?? '/usr/bin:/bin'}` }) });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, expected);
});

test('node-host runs a command on a socket engine, prints its notifications, and exits with its status',
  { timeout: TEST_TIMEOUT }, async () => {
    const r = await runNode([HOST, '-s', engine.socket, '-l', 'build', '-p', '^Error:', '--',
      'sh', '-c', 'echo ok; echo Error: boom >&2; exit 3']);
    assert.equal(r.status, 3, r.stderr);
    assert.match(r.stderr, /^vigil-node-host: session ses_[0-9a-z]+$/m);
    assert.match(r.stderr, /^vigil-node-host: started mon_[0-9a-z]+ \(pid \d+\)$/m);
    const headers = [...r.stdout.matchAll(/^--- notification seq=(\d+) type=(\w+) ---$/gm)].map((m) => `${m[1]} ${m[2]}`);
    assert.deepEqual(headers, ['1 output', '2 exit']);
    assert.match(r.stdout, /^monitor: build \(mon_[0-9a-z]+\)$/m);
    assert.match(r.stdout, /^\[stderr seq=2\] Error: boom$/m);
    assert.doesNotMatch(r.stdout, /echo ok/, 'the raw command never appears');
  });

test('node-host with an engine of its own (-c) reports the same, and 128+N for a signal',
  { timeout: TEST_TIMEOUT }, async () => {
    const config = writeConfig(tempDir('host'), CONFIG);
    const r = await runNode([HOST, '-c', config, '--vigild', VIGILD, '-n', 'lines', '--', 'echo', 'hello']);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^\[stdout seq=1\] hello$/m);
    const killed = await runNode([HOST, '-c', config, '--vigild', VIGILD, '-n', 'none', '--', 'sh', '-c', 'kill -TERM $$']);
    assert.equal(killed.status, 128 + 15, killed.stderr);
    assert.equal(killed.stdout, '', 'notify none: nothing to print');
  });

test('node-host exits 126 when the command is denied, 127 when it is not found, 125 with no engine',
  { timeout: TEST_TIMEOUT }, async () => {
    const denied = await runNode([HOST, '-s', engine.socket, '--', 'rm', '-rf', '/tmp/x']);
    assert.equal(denied.status, 126);
    assert.match(denied.stderr, /denied: command: program "rm" is not in monitor\.allowed_commands/);
    const missing = await runNode([HOST, '-s', engine.socket, '--', 'vigil-no-such-program']);
    assert.equal(missing.status, 127);
    assert.match(missing.stderr, /command_not_found: /);
    const none = await runNode([HOST, '-s', path.join(tempDir('none'), 'vigil.sock'), '--', 'echo', 'x']);
    assert.equal(none.status, 125);
    assert.match(none.stderr, /no engine at .*: the socket does not exist/);
  });
