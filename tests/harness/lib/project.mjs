// A person's project as `vigil setup` finds it (setup.test.mjs,
// delivery.test.mjs): the sandbox's project made a repository, an engine on
// the default socket of a private XDG_RUNTIME_DIR (where vigil mcp and
// vigil hook, with nothing of the test on their command lines, find it),
// `vigil setup HARNESS` run there, and the project's session as vigil
// names it.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Engine, defaultConfig } from '../../mcp/harness.mjs';
import { HARNESS_WAIT_MS, VIGIL } from './sandbox.mjs';

/** Runs a command in the sandbox's project to its exit; fails on a status
 * other than 0; resolves with its stdout. */
export async function runInProject(sandbox, name, command, args, env) {
  const p = sandbox.spawn(name, command, args, { env });
  const { code } = await p.waitExit(HARNESS_WAIT_MS);
  assert.equal(code, 0, `${name} exits 0:\n${p.out}\n${p.err}`);
  return p.out;
}

/** Makes the project a repository and starts an engine on the default
 * socket of a new XDG_RUNTIME_DIR in the sandbox (stopped at its cleanup),
 * with the MCP tests' config (config: overrides, as defaultConfig takes
 * them). Returns {engine, env: {XDG_RUNTIME_DIR} (what vigil and the harness need
 * to find it)}. */
export async function projectEngine(sandbox, config = {}) {
  fs.mkdirSync(path.join(sandbox.proj, '.git'), { recursive: true });
  const runtime = sandbox.file('run');
  fs.mkdirSync(runtime, { recursive: true, mode: 0o700 });
  const engine = await Engine.start({ config: defaultConfig(config), socket: path.join(runtime, 'vigil', 'vigil.sock') });
  sandbox.onCleanup(() => engine.stop());
  return { engine, env: { XDG_RUNTIME_DIR: runtime } };
}

/** Runs `bin setup harness ...args` in the project (env: more variables)
 * and checks that it says what it set up; resolves with its output. */
export async function runSetup(sandbox, harness, { bin = VIGIL, pre = [], args = [], env = {} } = {}) {
  const out = await runInProject(sandbox, 'vigil setup', bin, [...pre, 'setup', harness, ...args], sandbox.env(env));
  assert.match(out, new RegExp(`^vigil setup ${harness} \\(${sandbox.proj}\\)`), out);
  return out;
}

/** The name of the project's session, as `vigil sessions --json` run in
 * the project gives it (the entry marked current). */
export async function projectSession(sandbox, env) {
  const out = await runInProject(sandbox, 'vigil sessions', VIGIL, ['sessions', '--json'], sandbox.env(env));
  const current = JSON.parse(out).sessions.find((s) => s.current);
  assert.ok(current?.session, `vigil sessions marks the project's session: ${out}`);
  return current.session;
}
