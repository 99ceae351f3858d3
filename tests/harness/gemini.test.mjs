// Gemini CLI against a fake Gemini API, with vigil mcp as its MCP server
// (lib/gemini.mjs). Proves the test bed: the fake can make Gemini CLI call
// a vigil tool and sees the tool's result come back; an AfterAgent hook
// answering {"decision": "block", "reason": ...} continues with the reason
// as a new user message, headless and in the interactive mode.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { when } from './lib/fake/core.mjs';
import { gemini } from './lib/fake/gemini.mjs';
import { Gemini, geminiToolName } from './lib/gemini.mjs';
import { contextAnswer, blockAnswer } from './lib/hooks.mjs';
import { Engine, vigilMcp, saveSamples, assertMonitorListResult, withHarness, listScript } from './lib/vigil.mjs';

const TEST_TIMEOUT = 240000;
const LIST = geminiToolName('vigil', 'monitor_list');
const EVENTS = ['SessionStart', 'BeforeAgent', 'BeforeTool', 'AfterTool', 'AfterAgent'];

let engine;
before(async () => { engine = await Engine.start(); });
after(async () => { await engine?.stop(); });

const withGemini = ({ script, session }, f) => withHarness({ label: 'gemini', api: gemini, script,
  make: ({ sandbox, fake, recorder }) => new Gemini({ sandbox, fake,
    hooks: Object.fromEntries(EVENTS.map((e) => [e, recorder.entry(e, { name: `record-${e}` })])),
    mcp: { vigil: vigilMcp(engine, { session, delivery: 'piggyback', toolNames: 'underscore' }) } }) }, f);


test('gemini -p: the model calls vigil mcp monitor_list and receives its result; BeforeAgent and AfterTool hooks add context; an AfterAgent block continues with its reason', { timeout: TEST_TIMEOUT }, async (t) => {
  const MARKER = 'AFTERAGENT-MARKER-c41b';
  await withGemini({ script: listScript(LIST, [[MARKER, 'CONTINUED-OK']]), session: 'gemini-print' }, async ({ fake, cli, recorder }) => {
    recorder.answer('BeforeAgent', contextAnswer('BeforeAgent', 'CTX-BEFOREAGENT-g7'));
    recorder.answer('AfterTool', contextAnswer('AfterTool', 'CTX-AFTERTOOL-h8'));
    recorder.answer('AfterAgent', blockAnswer(MARKER));
    const out = await cli.prompt('please list the monitors');
    assert.equal(out.code, 0, `gemini -p exits 0:\n${out.stdout}\n${out.stderr}`);
    const listed = await fake.waitFor(when.toolResult('monitor_list'), { what: "the request carrying monitor_list's result" });
    assertMonitorListResult(listed, LIST, (text) => JSON.parse(text).output);
    const first = fake.turnRequests[0];
    assert.ok(first.has('CTX-BEFOREAGENT-g7'), 'BeforeAgent context reaches the first request');
    assert.ok(listed.tailText.includes('CTX-AFTERTOOL-h8'), `AfterTool context comes with the tool result: ${listed.tailText.slice(-300)}`);
    assert.equal(first.has('CTX-AFTERTOOL-h8'), false);
    for (const m of ['CTX-BEFOREAGENT-g7', 'CTX-AFTERTOOL-h8']) assert.equal(fake.seen(m), 1, `${m} reaches the model once`);
    const continued = await fake.waitFor(when.userSays(MARKER), { after: listed, what: `the AfterAgent hook's reason ${MARKER}` });
    t.diagnostic(`gemini AfterAgent block: the continuation request came ${continued.at - listed.repliedAt} ms after the turn ended`);
    assert.equal(fake.seen(MARKER), 1, 'the reason reaches the model once');
    assert.match(out.stdout, /CONTINUED-OK/, 'gemini -p prints the continued turn');
    for (const ev of EVENTS) await recorder.waitInput(ev);
    assert.equal(recorder.inputs('AfterTool')[0].input.tool_name, LIST);
    saveSamples(recorder, 'gemini');
    assert.deepEqual(fake.errors, []);
  });
});

test('gemini interactive: a typed message leads to the tool call; an AfterAgent block continues with its reason', { timeout: TEST_TIMEOUT }, async (t) => {
  const MARKER = 'AFTERAGENT-MARKER-8e27';
  await withGemini({ script: listScript(LIST, [[MARKER, 'CONTINUED-OK']]), session: 'gemini-interactive' }, async ({ fake, cli, recorder }) => {
    recorder.answer('AfterAgent', blockAnswer(MARKER));
    try {
      await cli.interactive();
      await cli.type('please list the monitors');
      const listed = await fake.waitFor(when.toolResult('monitor_list'), { what: "the request carrying monitor_list's result" });
      assertMonitorListResult(listed, LIST, (text) => JSON.parse(text).output);
      const continued = await fake.waitFor(when.userSays(MARKER), { after: listed, what: `the AfterAgent hook's reason ${MARKER}` });
      t.diagnostic(`gemini interactive AfterAgent block: the continuation came ${continued.at - listed.repliedAt} ms after the turn ended`);
      await cli.tmux.waitScreen(/CONTINUED-OK/, { what: "the continued turn's answer on screen" });
      assert.equal(fake.seen(MARKER), 1, 'the reason reaches the model once');
    } catch (e) {
      e.message += `\n--- screen ---\n${await cli.screen()}`;
      throw e;
    }
    assert.deepEqual(fake.errors, []);
  });
});
