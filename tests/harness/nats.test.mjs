// Claude Code against a remote engine, through NATS (issue 28; docs/fleet.md
// section 6, "vigil mcp and hooks"): the dev server runs under a vigild
// --nats on "host B"; Claude Code's MCP server and hooks, on "host A", are
// `vigil --nats URL --engine NAME --session S mcp` and `... hook
// claude-code EVENT`, the entries `vigil setup claude-code --project`
// writes with those options added (lib/remote.mjs), and reach the engine
// only through the broker, as a NATS user granted that one session (its
// inbox prefix in the settings' env, which hooks and MCP servers get).
// tests/functional/test_mcp_nats.py proves the same path by its MCP stdio
// contract; here a notification counts only once the model has read it,
// in the real CLI:
// - (b) a crash during a busy turn: the model starts a dev server (live_safe)
//   through monitor_start; with that result it opens the crash gate, waits
//   until the engine has the crash's notification, and calls monitor_list;
//   the request carrying monitor_list's result carries the crash as
//   vigil's envelopes, each once (vigil mcp's own delivery takes it from
//   the model cursor into the result; the PostToolUse hook after it finds
//   nothing left);
// - (b') the same with a tool that is not vigil's (Claude Code's Read),
//   whose result only the PostToolUse hook, over NATS, can add the crash
//   to;
// - (a) the wake: the model then starts an idle worker and ends its turn;
//   the worker crashes, nobody types, and the Stop hook (asyncRewake),
//   waiting on the session's notification subject, wakes the agent: a new
//   request carries the crash, once;
// - (d) in the whole conversation the fake last received, each envelope
//   (its nonce) appears once.
// The test prints the time from each crash (stamped by the crashing
// process) to the request carrying it.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { when, reply } from './lib/fake/core.mjs';
import { anthropic } from './lib/fake/anthropic.mjs';
import { Claude, claudeToolName } from './lib/claude.mjs';
import { withHarness } from './lib/vigil.mjs';
import { assertEachEnvelopeOnce, crashedAt, devServer, sessionReport, startedId, waitNotified } from './lib/crash.mjs';
import { runSetup } from './lib/project.mjs';
import { ENGINE_NAME, engineConnections, pointSetupAtNats, remoteEngine } from './lib/remote.mjs';
import { Client } from '../../clients/node/index.js';

const TEST_TIMEOUT = 300000;
const SESSION = 'web';
const BUSY = 'NATS-BUSY-CRASH-4e8a';
const HOOK = 'NATS-HOOK-CRASH-29d0';
const WAKE = 'NATS-WAKE-CRASH-b61f';
const START = claudeToolName('vigil', 'monitor_start');
const LIST = claudeToolName('vigil', 'monitor_list');

/** The model's side (p: the remote engine and the crash gates, filled in
 * once they exist; p.workerId once the worker runs): the user's "start the
 * dev server" makes it start the dev server (live_safe: what it says goes
 * at once, busy or not); that result makes it open the crash gate, wait
 * until the engine has the crash's notification and call monitor_list
 * (b). The list makes it start a second server, the api, the same way; its
 * result makes it open that gate, wait the same way, and call a tool that
 * is not vigil's (Claude Code's Read), whose result only the PostToolUse
 * hook can add the crash to (b'). Read's result makes it start the worker
 * (idle mode) and its result makes it end the turn (a). A request carrying
 * the worker's crash makes it say so. */
function script(p) {
  // crash: the name of p's gate and stamp (p is filled in later).
  const crashingServer = (crash, mark, label) => reply.call(START, { command: devServer(p[crash].gate, p[crash].stamp, mark), label, mode: 'live_safe' });
  const crashThen = (crash, mark, next) => async (r) => {
    p[crash].gate.open();
    await waitNotified(p.engine.socket, SESSION, startedId(r), mark);
    return next();
  };
  return [
    { when: when.userSays('start the dev server'), reply: () => crashingServer('busy', BUSY, 'dev') },
    { when: when.toolResult('monitor_start', /label\W+dev\b/), reply: crashThen('busy', BUSY, () => reply.call(LIST, {})) },
    { when: when.toolResult('monitor_list'), reply: () => crashingServer('hook', HOOK, 'api') },
    { when: when.toolResult('monitor_start', /label\W+api\b/), reply: crashThen('hook', HOOK, () => reply.call('Read', { file_path: p.notes })) },
    { when: when.toolResult('Read'), reply: () => reply.call(START, { command: devServer(p.wake.gate, p.wake.stamp, WAKE), label: 'worker' }) },
    { when: when.toolResult('monitor_start', /label\W+worker\b/),
      reply: (r) => {
        p.workerId = startedId(r);
        return reply.say('STARTED-OK');
      } },
    { when: when.tailHas(WAKE), reply: reply.say('SAW-WAKE'), times: 3 },
  ];
}

/** The envelopes in text that hold mark: [{nonce, body}]. */
function envelopesWith(text, mark) {
  const found = [];
  for (const m of text.matchAll(/<<<VIGIL OBSERVATION ([0-9a-f]+) BEGIN>>>([\s\S]*?)<<<VIGIL OBSERVATION \1 END>>>/g)) {
    if (m[2].includes(mark)) found.push({ nonce: m[1], body: m[2] });
  }
  return found;
}

/** Asserts that request r (what names it) brings the crash holding mark
 * to the model: as vigil's envelopes (the crash's output, its exit), each
 * once, one of them telling the crash as such. */
function assertCrashOnce(r, mark, what) {
  const found = envelopesWith(r.tailText, mark);
  assert.ok(found.some((e) => /incident \d+: crash/.test(e.body)), `${what} carries the crash ${mark} as vigil's envelope: ${r.tailText.slice(0, 3000)}`);
  const nonces = found.map((e) => e.nonce);
  assert.equal(new Set(nonces).size, nonces.length, `${what}: no envelope twice: ${nonces.join(' ')}`);
}

/** What the engine counted of the requests it got through the broker. */
async function rpcCounters(engine) {
  const client = await Client.connect(engine.socket);
  try {
    return (await client.call('api_info')).nats.rpc;
  } finally {
    await client.close();
  }
}

test('claude-code through NATS, entries as vigil --nats URL --engine NAME setup --project writes them: (b) a crash during a busy turn comes once with the next tool result, vigil\'s or (PostToolUse) another; (a) a crash after the turn ended wakes the idle agent, nobody typing; (d) each envelope once', { timeout: TEST_TIMEOUT }, async (t) => {
  // Claude Code loads the project's .mcp.json and .claude/settings.json
  // (what setup wrote), not a --mcp-config of the test's.
  class ProjectClaude extends Claude {
    args(extra = []) { return ['--debug-file', this.debugLog, ...extra]; }
  }
  const p = {};
  await withHarness({ label: 'nats-claude', api: anthropic, script: script(p),
    make: ({ sandbox, fake }) => new ProjectClaude({ sandbox, fake, allow: [] }) }, async ({ sandbox, fake, cli }) => {
    const remote = await remoteEngine(sandbox, SESSION, { monitor: { live_mode_enabled: true } });
    const crash = (name) => ({ gate: remote.engine.gate(name), stamp: path.join(remote.engine.dir, `${name}-at`) });
    Object.assign(p, { engine: remote.engine, busy: crash('busy'), hook: crash('hook'), wake: crash('wake'),
      notes: sandbox.write('proj/NOTES.md', 'Notes of the project.\n') });
    // A project with the files `vigil --nats URL --engine NAME --session S
    // setup` wrote, the person's password put in the URL (setup refuses to
    // write one) and the inbox prefix in the settings' env.
    const setupOut = await runSetup(sandbox, 'claude-code', { args: ['--project'], env: remote.env,
      pre: ['--nats', remote.broker.url, '--engine', ENGINE_NAME, '--session', SESSION] });
    assert.match(setupOut, new RegExp(`reaches engine ${ENGINE_NAME} through the NATS server`), setupOut);
    const { mcp, settings } = pointSetupAtNats(sandbox.proj, { setupUrl: remote.broker.url, url: remote.url,
      session: SESSION, inbox: remote.inbox });
    // Nothing the harness runs is told of the engine's socket.
    const told = JSON.stringify({ mcp, settings, env: cli.env(remote.env) });
    assert.ok(!told.includes(remote.engine.socket) && !told.includes(path.dirname(remote.engine.socket)),
      `the harness's config and environment do not name the engine's socket: ${told}`);
    cli.extraEnv = { ...cli.extraEnv, ...remote.env };
    const before = await rpcCounters(remote.engine);
    try {
      await cli.interactive();
      await cli.waitDebug(/MCP server "vigil": Successfully connected/);
      await cli.type('please start the dev server');

      // (b)
      const listed = await fake.waitFor(when.toolResult('monitor_list'), { what: "the request carrying monitor_list's result" });
      assertCrashOnce(listed, BUSY, "the request carrying monitor_list's result");
      t.diagnostic(`claude-code over NATS (b): the crash made during the turn reached the model with monitor_list's result ${listed.at - crashedAt(p.busy.stamp)} ms after it happened`);

      // (b'): a tool that is not vigil's; only the hook can add the crash.
      const read = await fake.waitFor(when.toolResult('Read'), { after: listed, what: "the request carrying Read's result" });
      assertCrashOnce(read, HOOK, "the request carrying Read's result");
      assert.match(read.tailText, /PostToolUse/, 'it came by the PostToolUse hook');
      t.diagnostic(`claude-code over NATS (b'): the crash made during the turn reached the model with Read's result, by the PostToolUse hook, ${read.at - crashedAt(p.hook.stamp)} ms after it happened`);

      // (a): nobody types from here.
      await cli.tmux.waitScreen(/STARTED-OK/, { what: "the turn's end on screen" });
      p.wake.gate.open();
      const woken = await fake.waitFor(when.tailHas(WAKE), { after: read, what: 'the request carrying the crash made after the turn ended, nobody typing' })
        .catch(async (e) => {
          e.message += `\nthe session on the engine: ${JSON.stringify(await sessionReport(p.engine.socket, SESSION))}`;
          throw e;
        });
      t.diagnostic(`claude-code over NATS (a): the crash made after the turn ended reached the model ${woken.at - crashedAt(p.wake.stamp)} ms after it happened, nobody typing (the Stop hook, asyncRewake)`);
      assert.match(woken.tailText, /Stop hook/, 'it came by the Stop hook');
      assertCrashOnce(woken, WAKE, 'the woken request');
      await cli.tmux.waitScreen(/SAW-WAKE/, { what: "the woken turn's answer on screen" });

      // (d)
      const last = fake.turnRequests[fake.turnRequests.length - 1];
      for (const mark of [BUSY, HOOK, WAKE]) assert.ok(envelopesWith(last.text, mark).length >= 1, `${mark} is in the conversation the model last got`);
      t.diagnostic(`claude-code over NATS (d): ${assertEachEnvelopeOnce(fake)} envelopes, each once`);
    } catch (e) {
      e.message += `\n--- screen ---\n${await cli.screen()}`;
      throw e;
    }
    // It all went through the broker, and the engine took none of it for
    // malformed or out of the session's scope.
    const after = await rpcCounters(remote.engine);
    assert.ok(after.requests > before.requests, `the engine got the harness's requests through the broker: ${JSON.stringify(after)}`);
    assert.equal(after.refused, before.refused, `no request refused: ${JSON.stringify(after)}`);
    assert.equal(after.malformed, before.malformed, `no request malformed: ${JSON.stringify(after)}`);
    // Nothing but the test itself connected to the engine's socket; the MCP
    // server and every hook run were requesters on the session's subject.
    const seen = engineConnections(remote.engine);
    assert.ok(seen.socketPids.has(process.pid), `the engine's log names who connected to its socket: ${[...seen.socketPids]}`);
    assert.deepEqual([...seen.socketPids].filter((pid) => pid !== process.pid), [],
      `only the test (pid ${process.pid}) connected to the engine's socket`);
    const requesters = seen.natsClients.get(`vigil.${ENGINE_NAME}.${SESSION}.rpc`)?.size ?? 0;
    assert.ok(requesters >= 3, `vigil mcp and the hooks reached the engine through the session's subject: ${requesters} requesters\n${remote.engine.log().slice(-3000)}`);
    t.diagnostic(`claude-code over NATS: ${requesters} requesters on the session's subject (vigil mcp, one per hook run), ${after.requests - before.requests} requests`);
    assert.deepEqual(fake.errors, []);
    // The engine's exit (status 0, no sanitizer report) is checked here; at
    // the sandbox's cleanup a failure would only be logged.
    await cli.tmux.kill();
    await remote.engine.stop();
  });
});
