// The engine an adapter starts (MCP.md section 1, issue 22 point 10): the
// socket's directory is checked before anything is made in it (a directory
// another user owns is refused, with nothing written there), the engine's
// log is never opened through a symbolic link, and it is vigild's own
// bounded log file (--log-file with --log-max-bytes), which rotates.
//
// Before: `vigil mcp` opened SOCKETDIR/vigild-mcp.log itself (O_APPEND,
// following links) before the directory was checked, so the owner of a
// squatted /tmp/vigil-$UID had the victim's engine append to any file of
// the victim's, and the log was never rotated.
//
// Assumptions where the contract leaves a shape open:
// - A refused directory ends the adapter at start with status 1 and a
//   message naming the directory and its owner (it has no engine to serve).
// - A log path that is a symbolic link is refused the same way, naming it.
// - The tests that need another user's directory run as root (chown); as
//   another user they are skipped, saying so.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  VIGIL, BUILD_DIR, FILE_ID, WAIT_MS, TEST_TIMEOUT, defaultConfig, luaValue, processesWithEnv,
  testEnv, waitNoneLeft, within, exitOf,
} from './harness.mjs';

const NOBODY = 65534;
const dirs = [];
const mine = () => processesWithEnv('VIGIL_MCP_TEST_ID', FILE_ID);
const isVigild = (p) => path.basename(p.cmdline.split(' ')[0]) === 'vigild';

after(async () => {
  for (const p of mine().filter(isVigild)) {
    try { process.kill(p.pid, 'SIGTERM'); } catch { /* gone */ }
  }
  await waitNoneLeft();
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

function tempDir(label) {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), `vigil-mcp-${label}-`));
  dirs.push(d);
  return d;
}

function writeConfig(dir) {
  const config = path.join(dir, 'config.lua');
  fs.writeFileSync(config, `return ${luaValue(defaultConfig())}\n`);
  return config;
}

/** Runs `vigil mcp ARGS` (engine spawning allowed) with stdin held open;
 * resolves with its exit and stderr once it exits on its own. */
async function runAdapter(args, env = {}) {
  const child = spawn(VIGIL, ['mcp', ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: testEnv({ PATH: `${BUILD_DIR}:${process.env.PATH ?? '/usr/bin:/bin'}`, ...env }),
  });
  let stderr = '';
  let stdout = '';
  child.stderr.on('data', (d) => { stderr += d; });
  child.stdout.on('data', (d) => { stdout += d; });
  child.stdin.on('error', () => {});
  const exit = await within(exitOf(child), WAIT_MS, `vigil mcp ${args.join(' ')} to exit`).catch((e) => {
    child.kill('SIGKILL');
    throw new Error(`${e.message}; its stderr: ${stderr}`);
  });
  return { ...exit, stderr, stdout };
}

test('a socket directory owned by another user is refused before anything is made in it (by --socket and by XDG_RUNTIME_DIR)',
  { timeout: TEST_TIMEOUT }, async (t) => {
    if (process.getuid() !== 0) {
      t.skip('needs root to give a directory to another user');
      return;
    }
    const base = tempDir('squat');
    const config = writeConfig(base);

    const squatted = path.join(base, 'squatted');
    fs.mkdirSync(squatted, { mode: 0o700 });
    fs.chownSync(squatted, NOBODY, NOBODY);
    const bySocket = await runAdapter(['--socket', path.join(squatted, 'vigil.sock'), '--session', 's1',
      '--config', config]);
    assert.deepEqual([bySocket.code, bySocket.signal], [1, null], `refused: ${bySocket.stderr}`);
    assert.match(bySocket.stderr, new RegExp(`${squatted.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}.*uid ${NOBODY}`),
      `the message names the directory and its owner: ${bySocket.stderr}`);
    assert.deepEqual(fs.readdirSync(squatted), [], 'nothing was made in the directory');
    assert.equal(bySocket.stdout, '', 'nothing on stdout but protocol');

    // The default socket, $XDG_RUNTIME_DIR/vigil/vigil.sock, in a squatted directory.
    const runtime = path.join(base, 'runtime');
    fs.mkdirSync(path.join(runtime, 'vigil'), { recursive: true, mode: 0o700 });
    fs.chownSync(path.join(runtime, 'vigil'), NOBODY, NOBODY);
    const env = { XDG_RUNTIME_DIR: runtime, VIGIL_SOCKET: '' };
    const byDefault = await runAdapter(['--session', 's2', '--config', config], env);
    assert.deepEqual([byDefault.code, byDefault.signal], [1, null], `refused: ${byDefault.stderr}`);
    assert.match(byDefault.stderr, new RegExp(`uid ${NOBODY}`), byDefault.stderr);
    assert.deepEqual(fs.readdirSync(path.join(runtime, 'vigil')), [], 'nothing was made in the directory');
    assert.deepEqual(mine().filter(isVigild), [], 'no engine was started');
  });

test('a log path that is a symbolic link is refused: nothing is written through it',
  { timeout: TEST_TIMEOUT }, async () => {
    const base = tempDir('link');
    const config = writeConfig(base);
    const run = path.join(base, 'run');
    fs.mkdirSync(run, { mode: 0o700 });
    const victim = path.join(base, 'victim-bashrc');
    fs.writeFileSync(victim, 'export PS1=untouched\n');
    fs.symlinkSync(victim, path.join(run, 'vigild-mcp.log'));

    const r = await runAdapter(['--socket', path.join(run, 'vigil.sock'), '--session', 's3', '--config', config]);
    assert.deepEqual([r.code, r.signal], [1, null], `refused: ${r.stderr}`);
    assert.match(r.stderr, /vigild-mcp\.log/, `the message names the log: ${r.stderr}`);
    assert.equal(fs.readFileSync(victim, 'utf8'), 'export PS1=untouched\n', 'nothing was written through the link');
    assert.deepEqual(mine().filter(isVigild), [], 'no engine was started');
  });

test('the engine an adapter starts logs to vigild\'s own bounded log file beside the socket, made 0600',
  { timeout: TEST_TIMEOUT }, async () => {
    const base = tempDir('log');
    const config = writeConfig(base);
    const socket = path.join(base, 'run', 'vigil.sock');
    const child = spawn(VIGIL, ['mcp', '--socket', socket, '--session', 's4', '--config', config], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: testEnv({ PATH: `${BUILD_DIR}:${process.env.PATH ?? '/usr/bin:/bin'}` }),
    });
    let stderr = '';
    child.stderr.on('data', (d) => { stderr += d; });
    // It serves once it has an engine: the line saying so is the event.
    await within(new Promise((resolve) => {
      const check = () => { if (/serving session/.test(stderr)) resolve(); };
      child.stderr.on('data', check);
      check();
    }), WAIT_MS, 'the adapter to serve').catch((e) => { throw new Error(`${e.message}: ${stderr}`); });
    const engines = mine().filter(isVigild);
    assert.equal(engines.length, 1, JSON.stringify(mine()));
    const argv = fs.readFileSync(`/proc/${engines[0].pid}/cmdline`, 'latin1').split('\0');
    const log = path.join(base, 'run', 'vigild-mcp.log');
    assert.equal(argv[argv.indexOf('--log-file') + 1], log, `vigild logs to ${log} itself: ${argv.join(' ')}`);
    const max = Number(argv[argv.indexOf('--log-max-bytes') + 1]);
    assert.ok(max >= 65536 && max <= 16 * 1024 * 1024, `with a bound: ${argv.join(' ')}`);
    const st = fs.lstatSync(log);
    assert.ok(st.isFile(), 'the log is a regular file');
    assert.equal(st.mode & 0o777, 0o600);
    child.stdin.end();
    assert.deepEqual(await within(exitOf(child), WAIT_MS, 'the adapter to exit'), { code: 0, signal: null });
    process.kill(engines[0].pid, 'SIGTERM');
    assert.deepEqual(await waitNoneLeft(), [], 'stopping the engine leaves no process of this test');
  });
