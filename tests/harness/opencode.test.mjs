// OpenCode against a fake OpenAI-compatible chat API, with vigil mcp as
// its MCP server (lib/opencode.mjs). Proves the test bed: the fake can make
// OpenCode call a vigil tool and sees the tool's result come back, with
// `opencode run` and through `opencode serve`'s HTTP API; a plugin that
// gets session.idle starts a new turn on the idle session
// (client.session.promptAsync) with nobody typing, and its text reaches the
// model.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { when } from './lib/fake/core.mjs';
import { chat } from './lib/fake/chat.mjs';
import { OpenCode, opencodeToolName } from './lib/opencode.mjs';
import { Engine, vigilMcp, saveSamples, assertMonitorListResult, withHarness, listScript } from './lib/vigil.mjs';

const TEST_TIMEOUT = 240000;
const LIST = opencodeToolName('vigil', 'monitor_list');

let engine;
before(async () => { engine = await Engine.start(); });
after(async () => { await engine?.stop(); });

const withOpenCode = ({ script, session, plugin = false }, f) => withHarness({ label: 'opencode', api: chat, script,
  make: ({ sandbox, fake }) => new OpenCode({ sandbox, fake, plugin,
    mcp: { vigil: vigilMcp(engine, { session, delivery: 'piggyback' }) } }) }, f);


test('opencode run: the model calls vigil mcp monitor_list and receives its result; the title request is marked side', { timeout: TEST_TIMEOUT }, async (t) => {
  await withOpenCode({ script: listScript(LIST), session: 'opencode-run' }, async ({ fake, cli: oc }) => {
    const out = await oc.run('please list the monitors');
    assert.equal(out.code, 0, `opencode run exits 0:\n${out.stdout}\n${out.stderr}`);
    const listed = await fake.waitFor(when.toolResult('monitor_list'), { what: "the request carrying monitor_list's result" });
    assertMonitorListResult(listed, LIST);
    assert.ok(fake.sideRequests.some((r) => /title/i.test(r.text)), `OpenCode asked its small model for a title, marked side:\n${fake.transcript()}`);
    assert.equal(fake.turnRequests.length, 2, 'two turn requests: the call, then its result');
    assert.deepEqual(fake.errors, []);
  });
});

test('opencode serve: a plugin adds text to a tool result in tool.execute.after, and on session.idle starts a new turn with promptAsync, nobody typing', { timeout: TEST_TIMEOUT }, async (t) => {
  const MARKER = 'IDLE-PROMPT-MARKER-3b9d';
  const script = listScript(LIST, [[MARKER, 'WOKEN-OK']]);
  await withOpenCode({ script, session: 'opencode-serve', plugin: true }, async ({ fake, cli: oc }) => {
    oc.wake(MARKER);
    oc.afterTool('CTX-TOOLAFTER-i9');
    await oc.serve();
    const session = await oc.createSession();
    assert.match(session.id, /^ses_/, `POST /session gives a session: ${JSON.stringify(session)}`);
    await oc.promptAsync(session.id, 'please list the monitors');
    const listed = await fake.waitFor(when.toolResult('monitor_list'), { what: "the request carrying monitor_list's result" });
    assertMonitorListResult(listed, LIST);
    assert.ok(listed.newToolResults.some((p) => p.text.includes('CTX-TOOLAFTER-i9')),
      `tool.execute.after's text is in the tool result: ${listed.tailText.slice(-300)}`);
    assert.equal(fake.seen('CTX-TOOLAFTER-i9'), 1, 'it reaches the model once');
    const woken = await fake.waitFor(when.userSays(MARKER), { after: listed, what: `the plugin's ${MARKER}` });
    t.diagnostic(`opencode session.idle -> promptAsync: the new turn's request came ${woken.at - listed.repliedAt} ms after the turn ended`);
    assert.equal(fake.seen(MARKER), 1, 'the plugin\'s text reaches the model once');
    const rec = oc.pluginRecords();
    assert.deepEqual(rec.wakes.map((w) => [w.sessionID, w.ok]), [[session.id, true]], 'one wake, on that session');
    const after = rec.hooks.find((h) => h.hook === 'tool.execute.after');
    assert.equal(after?.input?.tool, LIST, `tool.execute.after sees the vigil call: ${JSON.stringify(after)}`);
    saveSamples([
      ...['session.idle', 'session.status'].map((type) => rec.events.find((e) => e.event.type === type))
        .filter(Boolean).map((e) => ({ event: e.event.type, raw: JSON.stringify({ event: e.event }) })),
      ...['tool.execute.before', 'tool.execute.after'].map((hook) => rec.hooks.find((h) => h.hook === hook))
        .filter(Boolean).map((h) => ({ event: h.hook, raw: JSON.stringify({ input: h.input, output: h.output }) })),
    ], 'opencode');
    assert.deepEqual(fake.errors, []);
  });
});
