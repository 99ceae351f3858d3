// The config of the engine `vigil mcp` uses (MCP.md section 5, docs/mcp.md
// "Which config"): an adapter without --config gives the engine it starts the
// config the lookup finds ($VIGIL_CONFIG, ~/.config/vigil/vigil.lua, the
// bundled file) and says which on stderr; an adapter that attaches to an
// engine running another config, or an older state of the same file, says so
// on stderr and in its first tool result, once, as a text item of its own
// after the result's (whose first item keeps its form), with the command
// that fixes it.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  Engine, Adapter, FILE_ID, defaultConfig, luaValue, processesWithEnv, sessionName, textOf,
  waitNoneLeft, TEST_TIMEOUT,
} from './harness.mjs';

const mine = () => processesWithEnv('VIGIL_MCP_TEST_ID', FILE_ID);
const isVigild = (p) => path.basename(p.cmdline.split(' ')[0]) === 'vigild';
const dirs = [];

/** The warning text item of a tool result, or undefined. */
const warningOf = (r) => r.content.map((c) => c.text).find((t) => typeof t === 'string' && t.startsWith('warning: '));
const engines = [];

after(async () => {
  for (const e of engines) await e.stop().catch(() => {});
  for (const p of mine().filter(isVigild)) {
    try { process.kill(p.pid, 'SIGTERM'); } catch { /* gone */ }
  }
  await waitNoneLeft();
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

function tempDir(prefix) {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  dirs.push(d);
  return d;
}

test('without --config, the engine an adapter starts gets ~/.config/vigil/vigil.lua, said on stderr, and a start it allows works',
  { timeout: TEST_TIMEOUT }, async () => {
    const dir = tempDir('vigil-mcp-cfg-');
    const home = path.join(dir, 'home');
    const userConfig = path.join(home, '.config', 'vigil', 'vigil.lua');
    fs.mkdirSync(path.dirname(userConfig), { recursive: true });
    // Only echo (and the env the tests' processes need): the bundled config
    // would allow more, so a start of `true` tells which one the engine runs.
    const cfg = defaultConfig();
    cfg.monitor.allowed_commands = ['echo'];
    fs.writeFileSync(userConfig, `return ${luaValue(cfg)}\n`);
    const socket = path.join(dir, 'run', 'vigil.sock');
    const owner = { socket, dir, adapters: new Set() };
    const a = await Adapter.start(owner, {
      session: sessionName('cfg'), noSpawn: false, socket,
      env: { HOME: home, XDG_CONFIG_HOME: '', VIGIL_CONFIG: '' },
    });
    assert.ok(a.stderr.includes(`config: ${userConfig} (the user's config)`),
      `the adapter says which config and why: ${a.stderr}`);
    const started = await a.ok('monitor_start', { command: 'echo from-the-user-config' });
    assert.match(started.structuredContent.monitor_id, /^mon_/);
    const denied = await a.toolError('monitor_start', { command: 'true' }, 'denied');
    assert.ok(textOf(denied).includes(`in ${userConfig} (set at line 1)`),
      `the denial names the user's config and its line: ${textOf(denied)}`);
    assert.equal(warningOf(started), undefined, 'no mismatch with the engine it started');
    assert.deepEqual(await a.endInput(), { code: 0, signal: null });
    for (const p of mine().filter(isVigild)) process.kill(p.pid, 'SIGTERM');
    assert.deepEqual(await waitNoneLeft(), [], 'the started engine is gone');
  });

test('attached to an engine running another config, the adapter warns on stderr and in its first tool result only',
  { timeout: TEST_TIMEOUT }, async () => {
    const engine = await Engine.start();
    engines.push(engine);
    const other = path.join(tempDir('vigil-mcp-cfg-'), 'other.lua');
    fs.writeFileSync(other, `return ${luaValue(defaultConfig())}\n`);
    const a = await Adapter.start(engine, { session: sessionName('other'), args: ['--config', other] });
    // A denial: its first item still starts with denied:, the warning follows.
    const first = await a.toolError('monitor_start', { command: 'pnpm dev' }, 'denied');
    const text = warningOf(first);
    assert.equal(typeof text, 'string', `the first result carries the warning: ${JSON.stringify(first.content)}`);
    assert.equal(first.content[first.content.length - 1].text, text, 'after the result\'s own text');
    for (const needle of [`runs the config ${engine.configPath}`, other, `kill ${engine.proc.pid}`,
      `vigil shutdown --socket ${engine.socket}`, `vigild --daemon --listen ${engine.socket} --config ${other}`]) {
      assert.ok(text.includes(needle), `the warning names ${needle}: ${text}`);
    }
    assert.ok(a.stderr.includes(`runs the config ${engine.configPath}`), `and on stderr: ${a.stderr}`);
    const second = await a.ok('monitor_list', {});
    assert.equal(warningOf(second), undefined, `only once: ${JSON.stringify(second.content)}`);
    await engine.stop();
  });

test('attached to an engine whose config file changed since it loaded it, the adapter says to reload with SIGHUP',
  { timeout: TEST_TIMEOUT }, async () => {
    const engine = await Engine.start();
    engines.push(engine);
    const cfg = defaultConfig();
    cfg.monitor.allowed_commands.push('seq');
    fs.writeFileSync(engine.configPath, `return ${luaValue(cfg)}\n`);
    const a = await Adapter.start(engine, { session: sessionName('changed'), args: ['--config', engine.configPath] });
    const text = warningOf(await a.ok('monitor_list', {})) ?? '';
    assert.ok(text.includes('changed since') &&
      text.includes(`kill -HUP ${engine.proc.pid}`), `the warning says to reload: ${text}`);
    // Reloaded as it says: a later adapter finds the engine and the file alike.
    process.kill(engine.proc.pid, 'SIGHUP');
    await waitLog(engine, `reloaded ${engine.configPath}`);
    const c = await Adapter.start(engine, { session: sessionName('reloaded'), args: ['--config', engine.configPath] });
    const later = await c.ok('monitor_list', {});
    assert.equal(warningOf(later), undefined, `after the reload no warning: ${JSON.stringify(later.content)}`);
    await engine.stop();
  });

/** Waits (bounded) until vigild's log holds text: the log file is the only
 * witness that a SIGHUP was handled. */
async function waitLog(engine, text) {
  const deadline = Date.now() + 30000;
  while (!engine.log().includes(text)) {
    if (Date.now() > deadline) throw new Error(`"${text}" never in vigild's log:\n${engine.log()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
