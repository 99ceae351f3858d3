// vigil's own hooks in the real harnesses: `vigil hook HARNESS EVENT` (and
// vigil's OpenCode plugin) installed as `vigil setup` installs them, a
// monitor the model started through vigil mcp crashing, and the crash
// reaching the fake model by each harness's wake path:
// - Claude Code (interactive, tmux): the crash comes after the turn ended;
//   the Stop hook (asyncRewake) was waiting on the session's model cursor,
//   prints it and exits 2, and the idle agent is woken, nobody typing;
// - OpenCode (`opencode serve`): the same, by the plugin's session.idle ->
//   `vigil hook opencode session.idle --wait` -> client.session.promptAsync;
// - Codex CLI (`codex exec`) and Gemini CLI (`gemini -p`), which cannot wake
//   an idle agent: the crash comes during the turn, is held while the turn
//   runs (the hooks made the session busy), and the turn's end (Codex Stop,
//   Gemini AfterAgent) blocks with it, so the turn goes on with the crash.
// Each test prints the wake time (from the crash, stamped by the crashing
// process itself, to the request at the fake) and checks that no
// notification reaches the model twice (each envelope's nonce once).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { when, reply } from './lib/fake/core.mjs';
import { anthropic } from './lib/fake/anthropic.mjs';
import { responses } from './lib/fake/responses.mjs';
import { gemini } from './lib/fake/gemini.mjs';
import { chat } from './lib/fake/chat.mjs';
import { Claude, claudeToolName } from './lib/claude.mjs';
import { Codex, codexToolName } from './lib/codex.mjs';
import { Gemini, geminiToolName } from './lib/gemini.mjs';
import { OpenCode, opencodeToolName } from './lib/opencode.mjs';
import { Engine, vigilMcp, withHarness } from './lib/vigil.mjs';
import { VIGIL } from '../mcp/harness.mjs';
import { assertEachEnvelopeOnce, crashedAt, devServer, startedId } from './lib/crash.mjs';
import { Client } from '../../clients/node/index.js';

const TEST_TIMEOUT = 300000;
const CRASH = 'CRASH-MARK-5e1d';
const PLUGIN = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'plugins', 'harness', 'opencode.js');

let engine;
before(async () => { engine = await Engine.start(); });
after(async () => { await engine?.stop(); });

/** The command line a harness runs for a hook: vigil's own, on the test's
 * engine and session (vigil setup writes the same without --socket and
 * --session, which default to the user's engine and the project's). */
const hookCommand = (harness, event, session, extra = '') =>
  `${VIGIL} hook ${harness} ${event} --socket ${engine.socket} --session ${session}${extra}`;

/** An observer of the session on the test's engine: waits (bounded, on the
 * engine's own answers) until the monitor has ended and count of its
 * notifications are made, held while the session is busy. */
async function waitHeld(session, monitorId, count) {
  const client = await Client.connect(engine.socket);
  try {
    await client.call('session_open', { session });
    await client.call('monitor_wait', { monitor_id: monitorId, for: 'exit', timeout_ms: 60000 }, { timeoutMs: 90000 });
    const deadline = Date.now() + 60000;
    for (;;) {
      const s = (await client.call('session_list')).sessions.find((x) => x.session === session);
      if (s && s.queued >= count) return s;
      assert.ok(Date.now() < deadline, `the crash's ${count} notifications held in ${session}: ${JSON.stringify(s)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    await client.close();
  }
}

/** A wake test's pieces for harness: its session, the crash's gate and
 * stamp, and the model's script (start the dev server, end the turn, say
 * SAW-CRASH when the crash comes). START: the harness's name of
 * monitor_start. */
function wakeCase(harness, START) {
  const gate = engine.gate(`${harness}-crash`);
  const stamp = path.join(engine.dir, `${harness}-crashed-at`);
  const script = [
    { when: when.userSays('start the dev server'), reply: reply.call(START, { command: devServer(gate, stamp, CRASH), label: 'dev' }) },
    { when: when.toolResult('monitor_start'), reply: reply.say('STARTED-OK') },
    { when: when.tailHas(CRASH), reply: reply.say('SAW-CRASH'), times: 3 },
  ];
  return { session: `wake-${harness}`, gate, stamp, script };
}

test('claude interactive with vigil hook: a crash after the turn ended wakes the idle agent (Stop, asyncRewake), nobody typing', { timeout: TEST_TIMEOUT }, async (t) => {
  const { session, gate, stamp, script } = wakeCase('claude', claudeToolName('vigil', 'monitor_start'));
  const hooks = {
    SessionStart: [{ hooks: [{ type: 'command', command: hookCommand('claude-code', 'SessionStart', session) }] }],
    UserPromptSubmit: [{ hooks: [{ type: 'command', command: hookCommand('claude-code', 'UserPromptSubmit', session) }] }],
    PostToolUse: [{ hooks: [{ type: 'command', command: hookCommand('claude-code', 'PostToolUse', session) }] }],
    Stop: [{ hooks: [{ type: 'command', command: hookCommand('claude-code', 'Stop', session), asyncRewake: true, timeout: 3660 }] }],
  };
  await withHarness({ label: 'wake-claude', api: anthropic, script,
    make: ({ sandbox, fake }) => new Claude({ sandbox, fake, hooks,
      mcp: { vigil: vigilMcp(engine, { session, delivery: 'poll' }) } }) }, async ({ fake, cli: claude }) => {
    try {
      await claude.interactive();
      await claude.type('please start the dev server');
      const started = await fake.waitFor(when.toolResult('monitor_start'), { what: "the request carrying monitor_start's result" });
      startedId(started);
      await claude.tmux.waitScreen(/STARTED-OK/, { what: "the turn's end on screen" });
      // Nobody types from here. The crash:
      gate.open();
      const woken = await fake.waitFor(when.tailHas(CRASH), { after: started, what: 'the woken request carrying the crash' });
      const wakeMs = woken.at - crashedAt(stamp);
      t.diagnostic(`claude asyncRewake with vigil hook: the crash reached the model ${wakeMs} ms after it happened`);
      assert.match(woken.tailText, /Stop hook/, 'it came by the Stop hook');
      assert.match(woken.tailText, /<<<VIGIL OBSERVATION [0-9a-f]+ BEGIN>>>/, 'as the envelope');
      await claude.tmux.waitScreen(/SAW-CRASH/, { what: "the woken turn's answer on screen" });
      assertEachEnvelopeOnce(fake);
    } catch (e) {
      e.message += `\n--- screen ---\n${await claude.screen()}`;
      throw e;
    }
    assert.deepEqual(fake.errors, []);
  });
});

test('opencode serve with vigil\'s plugin: a crash after the turn ended starts a new turn (session.idle, promptAsync), nobody typing', { timeout: TEST_TIMEOUT }, async (t) => {
  const { session, gate, stamp, script } = wakeCase('opencode', opencodeToolName('vigil', 'monitor_start'));
  await withHarness({ label: 'wake-opencode', api: chat, script,
    make: ({ sandbox, fake }) => {
      const oc = new OpenCode({ sandbox, fake, env: { VIGIL_SOCKET: engine.socket, VIGIL_SESSION: session },
        mcp: { vigil: vigilMcp(engine, { session, delivery: 'poll' }) } });
      // As vigil setup writes it: vigil's path in place of "__VIGIL_PATH__".
      const source = fs.readFileSync(PLUGIN, 'utf8').replace('"__VIGIL_PATH__"', JSON.stringify(VIGIL));
      assert.ok(source.includes(JSON.stringify(VIGIL)), "the plugin's placeholder for vigil's path");
      sandbox.write(path.join(sandbox.proj, '.opencode', 'plugin', 'vigil.js'), source);
      return oc;
    } }, async ({ fake, cli: oc }) => {
    await oc.serve();
    const s = await oc.createSession();
    await oc.promptAsync(s.id, 'please start the dev server');
    const started = await fake.waitFor(when.toolResult('monitor_start'), { what: "the request carrying monitor_start's result" });
    startedId(started);
    // The turn ends once STARTED-OK is answered; the plugin's waiter then
    // waits on the cursor. Nobody prompts from here. The crash:
    gate.open();
    const woken = await fake.waitFor(when.tailHas(CRASH), { after: started, what: 'the new turn carrying the crash' });
    t.diagnostic(`opencode plugin with vigil hook: the crash reached the model ${woken.at - crashedAt(stamp)} ms after it happened`);
    assert.match(woken.newUserText, /<<<VIGIL OBSERVATION [0-9a-f]+ BEGIN>>>/, 'as the user message of a new turn');
    assert.equal(fake.thread(woken), fake.thread(started), 'on the same session');
    assertEachEnvelopeOnce(fake);
    assert.deepEqual(fake.errors, []);
  });
});

/** The harnesses that cannot wake an idle agent: the crash comes while the
 * turn runs (the model's reply to monitor_start waits for it to be made and
 * held), and the turn's end blocks with it. */
function blockScript(START, gate, stamp, session) {
  return [
    { when: when.userSays('start the dev server'), reply: reply.call(START, { command: devServer(gate, stamp, CRASH), label: 'dev' }) },
    { when: when.toolResult('monitor_start'),
      reply: async (r) => {
        gate.open();
        await waitHeld(session, startedId(r), 1);
        return reply.say('STARTED-OK');
      } },
    { when: when.tailHas(CRASH), reply: reply.say('SAW-CRASH'), times: 3 },
  ];
}

test('codex exec with vigil hook: a crash during the turn is held, and the Stop hook blocks with it: the turn goes on with the crash', { timeout: TEST_TIMEOUT }, async (t) => {
  const session = 'wake-codex';
  const gate = engine.gate('codex-crash');
  const stamp = path.join(engine.dir, 'codex-crashed-at');
  const hooks = Object.fromEntries(['SessionStart', 'UserPromptSubmit', 'PostToolUse', 'Stop'].map((e) =>
    [e, [{ hooks: [{ type: 'command', command: hookCommand('codex', e, session) }] }]]));
  await withHarness({ label: 'wake-codex', api: responses, script: blockScript(codexToolName('vigil', 'monitor_start'), gate, stamp, session),
    make: ({ sandbox, fake }) => new Codex({ sandbox, fake, hooks,
      mcp: { vigil: vigilMcp(engine, { session, delivery: 'poll', toolNames: 'underscore' }) } }) }, async ({ fake, cli: codex }) => {
    const out = await codex.exec('please start the dev server');
    assert.equal(out.code, 0, `codex exec exits 0:\n${out.stdout}\n${out.stderr}`);
    const woken = await fake.waitFor(when.tailHas(CRASH), { what: 'the request carrying the crash' });
    const ended = fake.turnRequests.find((r) => r.reply?.text === 'STARTED-OK');
    t.diagnostic(`codex Stop block with vigil hook: the crash reached the model ${woken.at - ended.repliedAt} ms after the turn ended (${woken.at - crashedAt(stamp)} ms after the crash, held while the turn ran)`);
    assert.match(woken.tailText, /hook_prompt/, "as the Stop hook's reason");
    assert.ok(out.events.some((e) => e.type === 'item.completed' && e.item?.text === 'SAW-CRASH'), 'the turn went on');
    assertEachEnvelopeOnce(fake);
    assert.deepEqual(fake.errors, []);
  });
});

test('gemini -p with vigil hook: a crash during the turn is held, and AfterAgent blocks with it: the turn goes on with the crash', { timeout: TEST_TIMEOUT }, async (t) => {
  const session = 'wake-gemini';
  const gate = engine.gate('gemini-crash');
  const stamp = path.join(engine.dir, 'gemini-crashed-at');
  const hooks = Object.fromEntries(['SessionStart', 'BeforeAgent', 'AfterTool', 'AfterAgent'].map((e) =>
    [e, [{ hooks: [{ type: 'command', name: `vigil-${e}`, command: hookCommand('gemini', e, session) }] }]]));
  await withHarness({ label: 'wake-gemini', api: gemini, script: blockScript(geminiToolName('vigil', 'monitor_start'), gate, stamp, session),
    make: ({ sandbox, fake }) => new Gemini({ sandbox, fake, hooks,
      mcp: { vigil: vigilMcp(engine, { session, delivery: 'poll', toolNames: 'underscore' }) } }) }, async ({ fake, cli }) => {
    const out = await cli.prompt('please start the dev server');
    assert.equal(out.code, 0, `gemini -p exits 0:\n${out.stdout}\n${out.stderr}`);
    const woken = await fake.waitFor(when.tailHas(CRASH), { what: 'the request carrying the crash' });
    const ended = fake.turnRequests.find((r) => r.reply?.text === 'STARTED-OK');
    t.diagnostic(`gemini AfterAgent block with vigil hook: the crash reached the model ${woken.at - ended.repliedAt} ms after the turn ended (${woken.at - crashedAt(stamp)} ms after the crash, held while the turn ran)`);
    assert.match(out.stdout, /SAW-CRASH/, 'the turn went on');
    assertEachEnvelopeOnce(fake);
    assert.deepEqual(fake.errors, []);
  });
});
