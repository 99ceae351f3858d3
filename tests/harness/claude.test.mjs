// Claude Code against a fake Anthropic API, with vigil mcp as its MCP
// server (lib/claude.mjs). Proves the test bed: the fake can make Claude
// Code call a vigil tool and sees the tool's result come back; a Stop hook
// with asyncRewake wakes the idle agent with nobody typing, and its output
// reaches the model.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { FakeModel, when, reply } from './lib/fake/core.mjs';
import { anthropic } from './lib/fake/anthropic.mjs';
import { Claude, claudeToolName } from './lib/claude.mjs';
import { HookRecorder } from './lib/hooks.mjs';
import { Sandbox } from './lib/sandbox.mjs';
import { Engine, vigilMcp, saveSamples } from './lib/vigil.mjs';

const TEST_TIMEOUT = 240000;

let engine;
before(async () => { engine = await Engine.start(); });
after(async () => { await engine?.stop(); });

/** A sandbox, a fake with script, and a Claude with vigil mcp as server
 * "vigil"; the caller's f runs with them; everything is cleaned up. */
async function withClaude(t, { script, hooks, session }, f) {
  const sandbox = new Sandbox('claude');
  const fake = await FakeModel.start(anthropic, { script });
  try {
    const claude = new Claude({ sandbox, fake, mcp: { vigil: vigilMcp(engine, { session }) }, hooks: hooks?.(sandbox) ?? {} });
    await f({ sandbox, fake, claude });
  } catch (e) {
    e.message += `\n${fake.transcript()}`;
    throw e;
  } finally {
    await fake.stop();
    await sandbox.cleanup();
  }
}

/** The monitor_list result as vigil mcp's text: a JSON object with monitors. */
function assertMonitorListResult(r) {
  const res = r.newToolResults.find((p) => p.name === claudeToolName('vigil', 'monitor_list'));
  assert.ok(res, `the request after the call carries monitor_list's result: ${r.tailText.slice(0, 400)}`);
  const parsed = JSON.parse(res.text);
  assert.ok(Array.isArray(parsed.monitors), `monitor_list's result text is its JSON: ${res.text}`);
  return res;
}

test('claude -p: the model calls vigil mcp monitor_list and receives its result', { timeout: TEST_TIMEOUT }, async (t) => {
  const script = [
    { when: when.userSays('list the monitors'), reply: reply.call(claudeToolName('vigil', 'monitor_list'), {}) },
    { when: when.toolResult('monitor_list'), reply: reply.say('LISTED-OK') },
  ];
  await withClaude(t, { script, session: 'claude-print' }, async ({ fake, claude }) => {
    const out = await claude.print('please list the monitors');
    assert.equal(out.code, 0, `claude -p exits 0:\n${out.stdout}\n${out.stderr}`);
    assert.equal(out.result?.result, 'LISTED-OK', `claude -p prints the model's last words: ${out.stdout.slice(0, 500)}`);
    const first = fake.turnRequests[0];
    assert.ok(first.conv.tools.includes(claudeToolName('vigil', 'monitor_list')),
      `the first request offers vigil's tools: ${first.conv.tools.join(', ')}`);
    const after = await fake.waitFor(when.toolResult('monitor_list'), { what: "the request carrying monitor_list's result" });
    assertMonitorListResult(after);
    assert.deepEqual(fake.errors, []);
  });
});

test('claude interactive: a Stop hook with asyncRewake wakes the idle agent, nobody typing', { timeout: TEST_TIMEOUT }, async (t) => {
  const MARKER = 'REWAKE-MARKER-7f3a';
  const script = [
    { when: when.userSays('list the monitors'), reply: reply.call(claudeToolName('vigil', 'monitor_list'), {}) },
    { when: when.toolResult('monitor_list'), reply: reply.say('LISTED-OK') },
    { when: when.tailHas(MARKER), reply: reply.say('WOKEN-OK') },
  ];
  let recorder;
  const hooks = (sandbox) => {
    recorder = new HookRecorder(sandbox.file('hooks'));
    const plain = (event) => [{ hooks: [{ type: 'command', command: recorder.command(event) }] }];
    return {
      SessionStart: plain('SessionStart'),
      UserPromptSubmit: plain('UserPromptSubmit'),
      PreToolUse: plain('PreToolUse'),
      PostToolUse: plain('PostToolUse'),
      Stop: [{ hooks: [{ type: 'command', command: recorder.command('Stop'), asyncRewake: true }] }],
    };
  };
  await withClaude(t, { script, hooks, session: 'claude-interactive' }, async ({ fake, claude }) => {
    // The first Stop hook run waits, prints the marker and exits 2: the
    // wake. Later runs answer nothing (status 0), so the agent stays idle.
    recorder.answer('Stop', { stderr: `${MARKER}\n`, code: 2 });
    try {
      await claude.interactive();
      await claude.type('please list the monitors');
      const listed = await fake.waitFor(when.toolResult('monitor_list'), { what: "the request carrying monitor_list's result" });
      assertMonitorListResult(listed);
      assert.ok(fake.turnRequests[0].conv.tools.includes(claudeToolName('vigil', 'monitor_list')),
        `the first request offers vigil's tools: ${fake.turnRequests[0].conv.tools.join(', ')}`);
      // Nobody types from here: the idle agent is woken by the hook.
      const woken = await fake.waitFor(when.tailHas(MARKER), { after: listed, what: `a request carrying the Stop hook's ${MARKER}` });
      const wakeMs = woken.at - listed.repliedAt;
      t.diagnostic(`claude asyncRewake: the wake request came ${wakeMs} ms after the turn ended`);
      assert.equal(fake.seen(MARKER), 1, 'the marker reaches the model once');
      const stops = await recorder.waitInput('Stop');
      assert.equal(stops.input.hook_event_name, 'Stop');
      await claude.tmux.waitScreen(/WOKEN-OK/, { what: "the woken turn's answer on screen" });
      for (const ev of ['SessionStart', 'UserPromptSubmit', 'PreToolUse', 'PostToolUse']) await recorder.waitInput(ev);
      saveSamples(recorder, 'claude');
    } catch (e) {
      e.message += `\n--- screen ---\n${await claude.screen()}`;
      throw e;
    }
    assert.deepEqual(fake.errors, []);
  });
});
