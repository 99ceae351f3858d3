// Codex CLI against a fake OpenAI Responses API, with vigil mcp as its MCP
// server (lib/codex.mjs). Proves the test bed: the fake can make Codex call
// a vigil tool and sees the tool's result come back; a Stop hook answering
// {"decision": "block", "reason": ...} continues the turn with the reason;
// `codex queue --resume` on the app-server daemon starts a turn on the idle
// thread with nobody at a terminal.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { FakeModel, when, reply } from './lib/fake/core.mjs';
import { responses } from './lib/fake/responses.mjs';
import { Codex, codexToolName } from './lib/codex.mjs';
import { HookRecorder } from './lib/hooks.mjs';
import { Sandbox } from './lib/sandbox.mjs';
import { Engine, vigilMcp, saveSamples } from './lib/vigil.mjs';

const TEST_TIMEOUT = 240000;
const LIST = codexToolName('vigil', 'monitor_list');

let engine;
before(async () => { engine = await Engine.start(); });
after(async () => { await engine?.stop(); });

async function withCodex(t, { script, hooks, session }, f) {
  const sandbox = new Sandbox('codex');
  const fake = await FakeModel.start(responses, { script });
  try {
    const codex = new Codex({ sandbox, fake, hooks: hooks?.(sandbox) ?? null,
      mcp: { vigil: vigilMcp(engine, { session, delivery: 'piggyback', toolNames: 'underscore' }) } });
    await f({ sandbox, fake, codex });
  } catch (e) {
    e.message += `\n${fake.transcript()}`;
    throw e;
  } finally {
    await fake.stop();
    await sandbox.cleanup();
  }
}

// Codex prefixes an MCP tool's output with its wall time: the result text
// ends with vigil mcp's JSON.
function assertMonitorListResult(r) {
  const res = r.newToolResults.find((p) => p.name === LIST);
  assert.ok(res, `the request after the call carries monitor_list's result: ${r.tailText.slice(0, 400)}`);
  const json = res.text.slice(res.text.indexOf('{'));
  assert.ok(Array.isArray(JSON.parse(json).monitors), `monitor_list's result carries its JSON: ${res.text}`);
}

test('codex exec: the model calls vigil mcp monitor_list and receives its result; a Stop hook blocks with a reason that reaches the model', { timeout: TEST_TIMEOUT }, async (t) => {
  const MARKER = 'STOP-BLOCK-MARKER-51c2';
  const script = [
    { when: when.userSays('list the monitors'), reply: reply.call(LIST, {}) },
    { when: when.toolResult('monitor_list'), reply: reply.say('LISTED-OK') },
    { when: when.tailHas(MARKER), reply: reply.say('CONTINUED-OK') },
  ];
  let recorder;
  const hooks = (sandbox) => {
    recorder = new HookRecorder(sandbox.file('hooks'));
    const plain = (event) => [{ hooks: [{ type: 'command', command: recorder.command(event) }] }];
    return Object.fromEntries(['SessionStart', 'UserPromptSubmit', 'PreToolUse', 'PostToolUse', 'Stop'].map((e) => [e, plain(e)]));
  };
  await withCodex(t, { script, hooks, session: 'codex-exec' }, async ({ fake, codex }) => {
    // The first Stop answers block with the marker; the next one nothing.
    recorder.answer('Stop', { stdout: `${JSON.stringify({ decision: 'block', reason: MARKER })}\n` });
    const out = await codex.exec('please list the monitors');
    assert.equal(out.code, 0, `codex exec exits 0:\n${out.stdout}\n${out.stderr}`);
    assert.ok(out.threadId, `codex exec --json names its thread: ${out.stdout.slice(0, 300)}`);
    const listed = await fake.waitFor(when.toolResult('monitor_list'), { what: "the request carrying monitor_list's result" });
    assertMonitorListResult(listed);
    const continued = await fake.waitFor(when.tailHas(MARKER), { after: listed, what: `the Stop hook's reason ${MARKER}` });
    t.diagnostic(`codex Stop block: the continuation request came ${continued.at - listed.repliedAt} ms after the turn ended`);
    assert.equal(fake.seen(MARKER), 1, 'the reason reaches the model once');
    assert.ok(out.events.some((e) => e.type === 'item.completed' && e.item?.text === 'CONTINUED-OK'),
      'codex exec reports the continued turn');
    for (const ev of ['SessionStart', 'UserPromptSubmit', 'PreToolUse', 'PostToolUse', 'Stop']) await recorder.waitInput(ev);
    assert.equal(recorder.inputs('PostToolUse')[0].input.tool_name, LIST);
    saveSamples(recorder, 'codex');
    assert.deepEqual(fake.errors, []);
  });
});

test('codex queue --resume: a message queued for an idle thread starts a turn on the app-server daemon', { timeout: TEST_TIMEOUT }, async (t) => {
  const MARKER = 'QUEUED-MARKER-9d0e';
  const script = [
    { when: when.userSays('list the monitors'), reply: reply.call(LIST, {}) },
    { when: when.toolResult('monitor_list'), reply: reply.say('LISTED-OK') },
    { when: when.tailHas(MARKER), reply: reply.say('QUEUED-OK') },
  ];
  await withCodex(t, { script, session: 'codex-queue' }, async ({ fake, codex }) => {
    const out = await codex.exec('please list the monitors');
    assert.equal(out.code, 0, `codex exec exits 0:\n${out.stdout}\n${out.stderr}`);
    const listed = await fake.waitFor(when.toolResult('monitor_list'));
    assertMonitorListResult(listed);
    await codex.startDaemon();
    const queuedAt = Date.now();
    await codex.queue(out.threadId, MARKER);
    const woken = await fake.waitFor(when.tailHas(MARKER), { after: listed, what: `the queued ${MARKER}` });
    t.diagnostic(`codex queue: the queued turn's request came ${woken.at - queuedAt} ms after codex queue started`);
    assert.equal(fake.thread(woken), fake.thread(listed), 'the queued turn continues the same thread');
    assert.equal(fake.seen(MARKER), 1, 'the queued message reaches the model once');
    assert.deepEqual(fake.errors, []);
  });
});
