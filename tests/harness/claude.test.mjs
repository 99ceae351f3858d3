// Claude Code against a fake Anthropic API, with vigil mcp as its MCP
// server (lib/claude.mjs). Proves the test bed: the fake can make Claude
// Code call a vigil tool and sees the tool's result come back; a Stop hook
// with asyncRewake wakes the idle agent with nobody typing, and its output
// reaches the model.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { when } from './lib/fake/core.mjs';
import { anthropic } from './lib/fake/anthropic.mjs';
import { Claude, claudeToolName } from './lib/claude.mjs';
import { contextAnswer } from './lib/hooks.mjs';
import { Engine, vigilMcp, saveSamples, assertMonitorListResult, withHarness, listScript } from './lib/vigil.mjs';

const TEST_TIMEOUT = 240000;

let engine;
before(async () => { engine = await Engine.start(); });
after(async () => { await engine?.stop(); });

const withClaude = ({ script, hooks, session }, f) => withHarness({ label: 'claude', api: anthropic, script,
  make: ({ sandbox, fake, recorder }) => new Claude({ sandbox, fake, mcp: { vigil: vigilMcp(engine, { session }) },
    hooks: hooks?.(recorder) ?? {} }) }, f);

test('claude -p: the model calls vigil mcp monitor_list and receives its result; SessionStart, UserPromptSubmit and PostToolUse hooks add context', { timeout: TEST_TIMEOUT }, async (t) => {
  const script = listScript(claudeToolName('vigil', 'monitor_list'));
  const hooks = (recorder) => {
    return Object.fromEntries(['SessionStart', 'UserPromptSubmit', 'PostToolUse'].map((e) => [e, recorder.entry(e)]));
  };
  await withClaude({ script, hooks, session: 'claude-print' }, async ({ fake, recorder, cli: claude }) => {
    recorder.answer('SessionStart', contextAnswer('SessionStart', 'CTX-SESSIONSTART-a1'));
    recorder.answer('UserPromptSubmit', contextAnswer('UserPromptSubmit', 'CTX-PROMPT-b2'));
    recorder.answer('PostToolUse', contextAnswer('PostToolUse', 'CTX-POSTTOOL-c3'));
    const out = await claude.print('please list the monitors');
    assert.equal(out.code, 0, `claude -p exits 0:\n${out.stdout}\n${out.stderr}`);
    assert.equal(out.result?.result, 'LISTED-OK', `claude -p prints the model's last words: ${out.stdout.slice(0, 500)}`);
    const first = fake.turnRequests[0];
    assert.ok(first.conv.tools.includes(claudeToolName('vigil', 'monitor_list')),
      `the first request offers vigil's tools: ${first.conv.tools.join(', ')}`);
    assert.ok(first.has('CTX-SESSIONSTART-a1') && first.has('CTX-PROMPT-b2'), 'SessionStart and UserPromptSubmit context reach the first request');
    const after = await fake.waitFor(when.toolResult('monitor_list'), { what: "the request carrying monitor_list's result" });
    assertMonitorListResult(after, claudeToolName('vigil', 'monitor_list'));
    assert.ok(after.tailText.includes('CTX-POSTTOOL-c3'), `PostToolUse context comes with the tool result: ${after.tailText.slice(-300)}`);
    assert.equal(first.has('CTX-POSTTOOL-c3'), false);
    for (const m of ['CTX-SESSIONSTART-a1', 'CTX-PROMPT-b2', 'CTX-POSTTOOL-c3']) assert.equal(fake.seen(m), 1, `${m} reaches the model once`);
    assert.deepEqual(fake.errors, []);
  });
});

test('claude interactive: a Stop hook with asyncRewake wakes the idle agent, nobody typing', { timeout: TEST_TIMEOUT }, async (t) => {
  const MARKER = 'REWAKE-MARKER-7f3a';
  const script = listScript(claudeToolName('vigil', 'monitor_list'), [[MARKER, 'WOKEN-OK']]);
  const hooks = (recorder) => {
    return {
      SessionStart: recorder.entry('SessionStart'),
      UserPromptSubmit: recorder.entry('UserPromptSubmit'),
      PreToolUse: recorder.entry('PreToolUse'),
      PostToolUse: recorder.entry('PostToolUse'),
      Stop: recorder.entry('Stop', { asyncRewake: true }),
    };
  };
  await withClaude({ script, hooks, session: 'claude-interactive' }, async ({ fake, recorder, cli: claude }) => {
    // The first Stop hook run waits, prints the marker and exits 2: the
    // wake. Later runs answer nothing (status 0), so the agent stays idle.
    recorder.answer('Stop', { stderr: `${MARKER}\n`, code: 2 });
    try {
      await claude.interactive();
      await claude.type('please list the monitors');
      const listed = await fake.waitFor(when.toolResult('monitor_list'), { what: "the request carrying monitor_list's result" });
      assertMonitorListResult(listed, claudeToolName('vigil', 'monitor_list'));
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
