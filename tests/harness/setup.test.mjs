// `vigil setup HARNESS` with the real harnesses (issue 23, item 4): after
// setup in a sandbox project (a repository, so the project's own files are
// the default), each harness, with nothing of vigil in its config but what
// setup wrote, lists and calls vigil's tools and runs vigil's hooks
// (Claude Code with claude -p, Codex with codex exec, Gemini CLI with
// gemini -p, OpenCode with opencode run).
//
// What each proves beyond the files' shapes (tests/setup checks those):
// - the MCP entry reaches the engine of the person's terminal: the engine
//   listens on the default socket under a private XDG_RUNTIME_DIR, which
//   must reach vigil mcp (Codex passes an MCP server only a few variables:
//   setup's env_vars), and the model's monitor_list result holds the
//   monitor a person started with `vigil start` in that project, so the
//   agent and the person share the project's session;
// - the hooks are the harness's own, where it reads them: each runs. Until
//   `vigil hook` exists, the vigil that setup names is, once setup has run,
//   a wrapper that records a hook's input (lib/hook.sh) and passes
//   everything else to the real vigil; the hook's command line, and
//   Codex's trust of it, stay exactly what setup wrote;
// - Codex runs them without --dangerously-bypass-hook-trust: setup recorded
//   the trust;
// - OpenCode resolves the plugin setup wrote (opencode debug config).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { when } from './lib/fake/core.mjs';
import { anthropic } from './lib/fake/anthropic.mjs';
import { responses } from './lib/fake/responses.mjs';
import { gemini } from './lib/fake/gemini.mjs';
import { chat } from './lib/fake/chat.mjs';
import { Claude, claudeToolName } from './lib/claude.mjs';
import { Codex, CODEX_PACKAGE, codexToolName } from './lib/codex.mjs';
import { Gemini, geminiToolName } from './lib/gemini.mjs';
import { OpenCode } from './lib/opencode.mjs';
import { jsonLines } from './lib/driver.mjs';
import { HOOK_SH } from './lib/hooks.mjs';
import { cliPath, HARNESS_WAIT_MS, VIGIL } from './lib/sandbox.mjs';
import { assertMonitorListResult, withHarness, listScript } from './lib/vigil.mjs';
import { projectEngine, runInProject, runSetup } from './lib/project.mjs';

const TEST_TIMEOUT = 300000;
const PROBE = 'setup-probe';

/** Sets the sandbox up as a person would: the project is a repository; an
 * engine listens on the default socket of XDG_RUNTIME_DIR; `vigil setup
 * harness` runs (a copy of vigil in the sandbox, so that the path setup
 * writes can then be the wrapper); a monitor runs that the person started
 * in the project. Returns {engine, env (what the harness gets too), out
 * (setup's output)}. */
async function personSetsUp(sandbox, recorder, harness, { env = {}, args = [] } = {}) {
  const { engine, env: runtimeEnv } = await projectEngine(sandbox);
  const runEnv = sandbox.env({ ...runtimeEnv, ...env });
  const bin = sandbox.file('bin', 'vigil');
  fs.copyFileSync(VIGIL, bin);
  fs.chmodSync(bin, 0o755);
  const out = await runSetup(sandbox, harness, { bin, args, env: { ...runtimeEnv, ...env } });
  // From now on `vigil hook` is the recorder, anything else the real vigil.
  fs.unlinkSync(bin);
  sandbox.write(bin, '#!/bin/sh\n# vigil as the setup test sees it (setup.test.mjs)\n'
    + `if [ "$1" = hook ]; then exec sh ${HOOK_SH} ${recorder.dir} "$3"; fi\n`
    + `exec ${VIGIL} "$@"\n`, 0o755);
  const id = await runInProject(sandbox, 'vigil start', VIGIL, ['start', '--label', PROBE, '--', 'sleep', '300'], runEnv);
  assert.match(id.trim(), /^mon_/);
  return { engine, env: { ...runtimeEnv, ...env }, out };
}

/** The model got monitor_list's result, and it holds the person's monitor. */
async function assertSeesProbe(fake, toolName, unwrap) {
  const listed = await fake.waitFor(when.toolResult('monitor_list'), { what: "the request carrying monitor_list's result" });
  const res = assertMonitorListResult(listed, toolName, unwrap);
  assert.ok(res.text.includes(PROBE), `the monitor the person started in the project is in the agent's list: ${res.text.slice(0, 600)}`);
}

/** Each event's hook ran, with that event's input. */
async function assertHooksRan(recorder, events) {
  for (const ev of events) {
    const run1 = await recorder.waitInput(ev);
    const name = run1.input?.hook_event_name ?? run1.input?.hookEventName;
    assert.equal(name, ev, `the ${ev} hook got its own event's input: ${run1.raw.slice(0, 300)}`);
  }
}

test('claude-code: after vigil setup, claude -p lists and calls vigil\'s tools from .mcp.json and runs its hooks from .claude/settings.json', { timeout: TEST_TIMEOUT }, async () => {
  class SetupClaude extends Claude {
    // Nothing of vigil's on the command line: what setup wrote is all.
    args(extra = []) { return ['--debug-file', this.debugLog, ...extra]; }
  }
  const LIST = claudeToolName('vigil', 'monitor_list');
  let setup;
  await withHarness({ label: 'setup-claude', api: anthropic, script: listScript(LIST),
    make: ({ sandbox, fake }) => new SetupClaude({ sandbox, fake, allow: [] }) }, async ({ sandbox, fake, recorder, cli }) => {
    setup = await personSetsUp(sandbox, recorder, 'claude-code');
    cli.extraEnv = { ...cli.extraEnv, ...setup.env };
    const out = await cli.print('please list the monitors');
    assert.equal(out.code, 0, `claude -p exits 0:\n${out.stdout}\n${out.stderr}`);
    assert.equal(out.result?.result, 'LISTED-OK', `claude -p prints the model's last words: ${out.stdout.slice(0, 500)}`);
    assert.ok(fake.turnRequests[0].conv.tools.includes(LIST), `vigil's tools are offered: ${fake.turnRequests[0].conv.tools.join(', ')}`);
    await assertSeesProbe(fake, LIST);
    await assertHooksRan(recorder, ['SessionStart', 'UserPromptSubmit', 'PostToolUse', 'Stop']);
    assert.equal(recorder.inputs('PostToolUse')[0].input.tool_name, LIST);
    assert.deepEqual(fake.errors, []);
  });
});

test('claude-code interactive: after vigil setup, the project\'s vigil server connects without a question, and the Stop hook setup installed (asyncRewake) wakes the idle agent', { timeout: TEST_TIMEOUT }, async () => {
  class SetupClaude extends Claude {
    args(extra = []) { return ['--debug-file', this.debugLog, ...extra]; }
  }
  const LIST = claudeToolName('vigil', 'monitor_list');
  const MARKER = 'SETUP-REWAKE-MARKER-c41d';
  await withHarness({ label: 'setup-claude-tty', api: anthropic, script: listScript(LIST, [[MARKER, 'WOKEN-OK']]),
    make: ({ sandbox, fake }) => new SetupClaude({ sandbox, fake, allow: [] }) }, async ({ sandbox, fake, recorder, cli }) => {
    const setup = await personSetsUp(sandbox, recorder, 'claude-code');
    cli.extraEnv = { ...cli.extraEnv, ...setup.env };
    // The first Stop hook run exits 2 with the marker: the wake.
    recorder.answer('Stop', { stderr: `${MARKER}\n`, code: 2 });
    try {
      await cli.interactive();
      await cli.waitDebug(/MCP server "vigil": Successfully connected/);
      await cli.type('please list the monitors');
      await assertSeesProbe(fake, LIST);
      const listed = await fake.waitFor(when.toolResult('monitor_list'));
      await fake.waitFor(when.tailHas(MARKER), { after: listed, what: `the Stop hook's ${MARKER} waking the agent` });
      await cli.tmux.waitScreen(/WOKEN-OK/, { what: "the woken turn's answer on screen" });
    } catch (e) {
      e.message += `\n--- screen ---\n${await cli.screen()}`;
      throw e;
    }
    assert.deepEqual(fake.errors, []);
  });
});

test('codex: after vigil setup, codex exec (hook trust not bypassed) calls vigil\'s tools from .codex/config.toml and runs its trusted hooks', { timeout: TEST_TIMEOUT }, async () => {
  class SetupCodex extends Codex {
    // Without --dangerously-bypass-hook-trust: setup recorded the trust.
    async exec(prompt, { timeout = HARNESS_WAIT_MS } = {}) {
      const out = await this.runToExit('codex exec', ['exec', '--json', '--skip-git-repo-check', prompt], { timeout });
      out.events = jsonLines(out.stdout);
      return out;
    }
  }
  const LIST = codexToolName('vigil', 'monitor_list');
  await withHarness({ label: 'setup-codex', api: responses, script: listScript(LIST),
    make: ({ sandbox, fake }) => new SetupCodex({ sandbox, fake,
      // Codex reads a project's .codex/ only in a project the person trusts.
      config: { projects: { [sandbox.proj]: { trust_level: 'trusted' } } } }) }, async ({ sandbox, fake, recorder, cli }) => {
    // setup asks the codex the person runs (on PATH) to trust vigil's hooks.
    const codexDir = path.dirname(cliPath(CODEX_PACKAGE, 'codex'));
    const setup = await personSetsUp(sandbox, recorder, 'codex', {
      env: { CODEX_HOME: cli.codexHome, PATH: `${codexDir}:${sandbox.env().PATH}` } });
    assert.match(setup.out, /recorded Codex's trust of vigil's 4 hooks/, setup.out);
    cli.extraEnv = { ...cli.extraEnv, XDG_RUNTIME_DIR: setup.env.XDG_RUNTIME_DIR };
    const out = await cli.exec('please list the monitors');
    assert.equal(out.code, 0, `codex exec exits 0:\n${out.stdout}\n${out.stderr}`);
    await assertSeesProbe(fake, LIST);
    await assertHooksRan(recorder, ['SessionStart', 'UserPromptSubmit', 'PostToolUse', 'Stop']);
    assert.equal(recorder.inputs('PostToolUse')[0].input.tool_name, LIST);
    assert.deepEqual(fake.errors, []);
  });
});

test('gemini: after vigil setup, gemini -p calls vigil\'s tools from .gemini/settings.json and runs its hooks', { timeout: TEST_TIMEOUT }, async () => {
  const LIST = geminiToolName('vigil', 'monitor_list');
  await withHarness({ label: 'setup-gemini', api: gemini, script: listScript(LIST),
    make: ({ sandbox, fake }) => new Gemini({ sandbox, fake }) }, async ({ sandbox, fake, recorder, cli }) => {
    const setup = await personSetsUp(sandbox, recorder, 'gemini');
    cli.extraEnv = { ...cli.extraEnv, ...setup.env };
    const out = await cli.prompt('please list the monitors');
    assert.equal(out.code, 0, `gemini -p exits 0:\n${out.stdout}\n${out.stderr}`);
    await assertSeesProbe(fake, LIST, (text) => JSON.parse(text).output);
    await assertHooksRan(recorder, ['SessionStart', 'BeforeAgent', 'AfterTool', 'AfterAgent']);
    assert.equal(recorder.inputs('AfterTool')[0].input.tool_name, LIST);
    assert.deepEqual(fake.errors, []);
  });
});

test('opencode: after vigil setup, opencode run calls vigil\'s tools from opencode.json and resolves vigil\'s plugin', { timeout: TEST_TIMEOUT }, async () => {
  const LIST = 'vigil_monitor_list';
  await withHarness({ label: 'setup-opencode', api: chat, script: listScript(LIST),
    make: ({ sandbox, fake }) => new OpenCode({ sandbox, fake }) }, async ({ sandbox, fake, recorder, cli }) => {
    const setup = await personSetsUp(sandbox, recorder, 'opencode');
    cli.extraEnv = { ...cli.extraEnv, ...setup.env };
    const plugin = path.join(sandbox.proj, '.opencode', 'plugin', 'vigil.js');
    const config = await cli.runToExit('opencode debug config', ['debug', 'config']);
    assert.equal(config.code, 0, `opencode debug config exits 0:\n${config.stdout}\n${config.stderr}`);
    assert.ok(config.stdout.includes(`file://${plugin}`), `OpenCode loads the plugin setup wrote: ${config.stdout.slice(0, 2000)}`);
    const out = await cli.run('please list the monitors');
    assert.equal(out.code, 0, `opencode run exits 0:\n${out.stdout}\n${out.stderr}`);
    await assertSeesProbe(fake, LIST);
    assert.deepEqual(fake.errors, []);
  });
});
