// Codex CLI against a fake OpenAI Responses API, with vigil mcp as its MCP
// server (lib/codex.mjs). Proves the test bed: the fake can make Codex call
// a vigil tool and sees the tool's result come back; a Stop hook answering
// {"decision": "block", "reason": ...} continues the turn with the reason;
// `codex queue --resume` on the app-server daemon starts a turn on the idle
// thread with nobody at a terminal.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { when } from './lib/fake/core.mjs';
import { responses } from './lib/fake/responses.mjs';
import { Codex, codexToolName } from './lib/codex.mjs';
import { contextAnswer, blockAnswer } from './lib/hooks.mjs';
import { Engine, vigilMcp, saveSamples, assertMonitorListResult, withHarness, listScript } from './lib/vigil.mjs';

const TEST_TIMEOUT = 240000;
const LIST = codexToolName('vigil', 'monitor_list');

let engine;
before(async () => { engine = await Engine.start(); });
after(async () => { await engine?.stop(); });

const withCodex = ({ script, hooks, session }, f) => withHarness({ label: 'codex', api: responses, script,
  make: ({ sandbox, fake, recorder }) => new Codex({ sandbox, fake, hooks: hooks?.(recorder) ?? null,
    mcp: { vigil: vigilMcp(engine, { session, delivery: 'piggyback', toolNames: 'underscore' }) } }) }, f);

test('codex exec: the model calls vigil mcp monitor_list and receives its result; hooks add context; a Stop hook blocks with a reason that reaches the model', { timeout: TEST_TIMEOUT }, async (t) => {
  const MARKER = 'STOP-BLOCK-MARKER-51c2';
  const script = listScript(LIST, [[MARKER, 'CONTINUED-OK']]);
  const hooks = (recorder) => {
    return Object.fromEntries(['SessionStart', 'UserPromptSubmit', 'PreToolUse', 'PostToolUse', 'Stop'].map((e) => [e, recorder.entry(e)]));
  };
  await withCodex({ script, hooks, session: 'codex-exec' }, async ({ fake, recorder, cli: codex }) => {
    recorder.answer('SessionStart', contextAnswer('SessionStart', 'CTX-SESSIONSTART-d4'));
    recorder.answer('UserPromptSubmit', contextAnswer('UserPromptSubmit', 'CTX-PROMPT-e5'));
    recorder.answer('PostToolUse', contextAnswer('PostToolUse', 'CTX-POSTTOOL-f6'));
    // The first Stop answers block with the marker; the next one nothing.
    recorder.answer('Stop', blockAnswer(MARKER));
    const out = await codex.exec('please list the monitors');
    assert.equal(out.code, 0, `codex exec exits 0:\n${out.stdout}\n${out.stderr}`);
    assert.ok(out.threadId, `codex exec --json names its thread: ${out.stdout.slice(0, 300)}`);
    const listed = await fake.waitFor(when.toolResult('monitor_list'), { what: "the request carrying monitor_list's result" });
    assertMonitorListResult(listed, LIST);
    const first = fake.turnRequests[0];
    assert.ok(first.has('CTX-SESSIONSTART-d4') && first.has('CTX-PROMPT-e5'), 'SessionStart and UserPromptSubmit context reach the first request');
    assert.ok(listed.tailText.includes('CTX-POSTTOOL-f6'), `PostToolUse context comes with the tool result: ${listed.tailText.slice(-300)}`);
    assert.equal(first.has('CTX-POSTTOOL-f6'), false);
    for (const m of ['CTX-SESSIONSTART-d4', 'CTX-PROMPT-e5', 'CTX-POSTTOOL-f6']) assert.equal(fake.seen(m), 1, `${m} reaches the model once`);
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
  const script = listScript(LIST, [[MARKER, 'QUEUED-OK']]);
  await withCodex({ script, session: 'codex-queue' }, async ({ fake, recorder, cli: codex }) => {
    const out = await codex.exec('please list the monitors');
    assert.equal(out.code, 0, `codex exec exits 0:\n${out.stdout}\n${out.stderr}`);
    const listed = await fake.waitFor(when.toolResult('monitor_list'));
    assertMonitorListResult(listed, LIST);
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
