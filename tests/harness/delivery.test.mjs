// Issue 23's cases (a) to (d) in the four real harnesses, each set
// up by `vigil setup HARNESS --project` itself (the real files it writes,
// nothing of the test's in the harness's config), on an engine listening on
// the default socket of the sandbox's XDG_RUNTIME_DIR, in the project's
// session:
// - (b) a crash during a busy turn: the model starts a dev server through
//   vigil's monitor_start in live_safe mode (the engine's config allows
//   it; an idle-mode crash is held while the turn runs and comes at its
//   end, wake.test.mjs); when the fake model gets that result it opens
//   the crash gate, waits on the engine until the crash's notification
//   exists, and only then calls the next tool (vigil's monitor_list); that
//   tool's result, as the model receives it, carries the crash (Claude
//   Code's PostToolUse, Codex's PostToolUse, Gemini CLI's AfterTool, the
//   OpenCode plugin's tool.execute.after);
// - (a) where the harness has a wake path (Claude Code interactive, `opencode
//   serve`): the model then starts a worker (idle mode) and ends its turn;
//   the worker crashes, nobody types, and a new request carries the crash
//   (the Stop hook with asyncRewake; the plugin's session.idle and
//   promptAsync). Codex and Gemini CLI have none: their worker crashes
//   while they are down, and comes with (c);
// - (c) a restart: the harness is stopped (Claude Code and `opencode
//   serve` killed; `codex exec` and `gemini -p` have exited), a dev server
//   the person started in the project crashes while it is down, and the
//   harness is started again on the same conversation (`claude
//   --continue`, `codex exec resume`, `gemini --resume latest`, the same
//   OpenCode session): the crash reaches the model. Claude Code is killed
//   and gone before the crash: a crash in the moment between its SIGHUP
//   and its exit is taken by the Stop hook still waiting and lost with it
//   (told to the lead, issue 23);
// - (d) in the whole conversation the fake last received, every envelope
//   (its nonce) appears once, and every crash is there: nothing lost,
//   nothing twice.
// Each test prints the time from a crash (stamped by the crashing process)
// to the request carrying it ((c): the restart and the first prompt
// included).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { when, reply } from './lib/fake/core.mjs';
import { anthropic } from './lib/fake/anthropic.mjs';
import { responses } from './lib/fake/responses.mjs';
import { gemini } from './lib/fake/gemini.mjs';
import { chat } from './lib/fake/chat.mjs';
import { Claude, claudeToolName } from './lib/claude.mjs';
import { Codex, CODEX_PACKAGE, codexToolName } from './lib/codex.mjs';
import { Gemini, geminiToolName } from './lib/gemini.mjs';
import { OpenCode, opencodeToolName } from './lib/opencode.mjs';
import { jsonLines } from './lib/driver.mjs';
import { cliPath, HARNESS_WAIT_MS, VIGIL } from './lib/sandbox.mjs';
import { withHarness } from './lib/vigil.mjs';
import { assertEachEnvelopeOnce, crashedAt, devServer, envelopeNonces, sessionReport, startedId, waitNotified, waitSessionState } from './lib/crash.mjs';
import { projectEngine, projectSession, runInProject, runSetup } from './lib/project.mjs';

const TEST_TIMEOUT = 400000;
const BUSY = 'BUSY-CRASH-7a31';
const DOWN = 'DOWN-CRASH-c92e';
const WAKE = 'WAKE-CRASH-03bd';

/** The project, its engine, `vigil setup harness --project` and the three
 * crash gates: {engine, env, session, busy, down, wake: {gate, stamp}}. setupEnv: more variables for setup only. */
async function project(sandbox, harness, setupEnv = {}) {
  const { engine, env } = await projectEngine(sandbox, { monitor: { live_mode_enabled: true } });
  await runSetup(sandbox, harness, { args: ['--project'], env: { ...env, ...setupEnv } });
  const session = await projectSession(sandbox, env);
  const crash = (name) => ({ gate: engine.gate(`${harness}-${name}`), stamp: path.join(engine.dir, `${harness}-${name}-at`) });
  return { engine, env, session, busy: crash('busy'), down: crash('down'), wake: crash('wake') };
}

/** The model's side: the user's "start the dev server" makes it start the
 * busy dev server (live_safe: what it says goes at once, busy or not); its
 * result makes it open the crash gate, wait until the crash's notification
 * exists and call monitor_list (b); that result makes it start a worker
 * (idle mode) and its result makes it end the turn, the worker still
 * running (a). A request carrying the worker's crash or the one made while
 * the harness was down makes it say so. p is filled in once the project is
 * set up; p.workerId once the worker runs. */
function script(START, LIST, p) {
  return [
    { when: when.userSays('start the dev server'), reply: () => reply.call(START, { command: devServer(p.busy.gate, p.busy.stamp, BUSY), label: 'dev', mode: 'live_safe' }) },
    { when: when.toolResult('monitor_start', /label\W+dev\b/),
      reply: async (r) => {
        p.busy.gate.open();
        await waitNotified(p.engine.socket, p.session, startedId(r), BUSY);
        return reply.call(LIST, {});
      } },
    { when: when.toolResult('monitor_list'), reply: () => reply.call(START, { command: devServer(p.wake.gate, p.wake.stamp, WAKE), label: 'worker' }) },
    { when: when.toolResult('monitor_start', /label\W+worker\b/),
      reply: (r) => {
        p.workerId = startedId(r);
        return reply.say('STARTED-OK');
      } },
    { when: when.tailHas(WAKE), reply: reply.say('SAW-WAKE'), times: 3 },
    { when: when.tailHas(DOWN), reply: reply.say('SAW-DOWN'), times: 3 },
  ];
}

/** (b): the request carrying monitor_list's result carries the busy crash
 * after the tool's own text. Returns that request. */
async function assertBusyCrashWithTheNextResult(t, fake, p, harness) {
  const listed = await fake.waitFor(when.toolResult('monitor_list'), { what: "the request carrying monitor_list's result" });
  assert.ok(listed.tailText.includes(BUSY), `the next tool's result carries the crash made during the turn: ${listed.tailText.slice(0, 1500)}`);
  // Gemini CLI writes a hook's context with < and > as entities.
  assert.ok(envelopeNonces(listed.tailText).length >= 1, 'as the envelope');
  t.diagnostic(`${harness} (b): the crash made during the turn reached the model with the next tool's result ${listed.at - crashedAt(p.busy.stamp)} ms after it happened`);
  return listed;
}

/** (c), while the harness is down: the person's dev server crashes (and
 * the model's worker, with worker: true); waits until the engine has the
 * crashes' notifications. */
async function crashWhileDown(sandbox, p, { worker = false } = {}) {
  const out = await runInProject(sandbox, 'vigil start', VIGIL,
    ['start', '--label', 'web', '--', 'sh', '-c', devServer(p.down.gate, p.down.stamp, DOWN).replace(/^sh -c '(.*)'$/s, '$1')],
    sandbox.env(p.env));
  const id = out.trim();
  assert.match(id, /^mon_/, `vigil start prints the monitor's id: ${out}`);
  p.down.gate.open();
  await waitNotified(p.engine.socket, p.session, id, DOWN);
  if (worker) {
    p.wake.gate.open();
    await waitNotified(p.engine.socket, p.session, p.workerId, WAKE);
  }
}

/** (a) where the harness has a wake path: the turn has ended, nobody
 * types, the worker crashes: a new request carries it (how: its way). */
async function assertWoken(t, fake, p, harness, after, how) {
  p.wake.gate.open();
  const woken = await fake.waitFor(when.tailHas(WAKE), { after, what: 'the request carrying the crash made after the turn ended, nobody typing' })
    .catch(async (e) => {
      e.message += `\nthe session on the engine: ${JSON.stringify(await sessionReport(p.engine.socket, p.session))}`;
      throw e;
    });
  t.diagnostic(`${harness} (a): the crash made after the turn ended reached the model ${woken.at - crashedAt(p.wake.stamp)} ms after it happened, nobody typing (${how})`);
  assert.ok(envelopeNonces(woken.tailText).length >= 1, 'as the envelope');
  return woken;
}

/** (c) and (d) after the restart: the crash made while the harness was
 * down reaches the model; in the conversation the fake last received both
 * crashes are there and each envelope once. */
async function assertDownCrashOnce(t, fake, p, harness, after, how, { worker = false } = {}) {
  const got = await fake.waitFor(when.tailHas(DOWN), { after, what: 'the request carrying the crash made while the harness was down' });
  t.diagnostic(`${harness} (c): the crash made while the harness was down reached the model ${got.at - crashedAt(p.down.stamp)} ms after it happened (${how})`);
  if (worker) await fake.waitFor(when.has(WAKE), { after, what: "the worker's crash, made while the harness was down" });
  const last = fake.turnRequests[fake.turnRequests.length - 1];
  for (const mark of [BUSY, WAKE, DOWN]) assert.ok(last.text.includes(mark), `${mark} is in the conversation the model last got`);
  t.diagnostic(`${harness} (d): ${assertEachEnvelopeOnce(fake)} envelopes, each once`);
}

/** Runs f({sandbox, fake, cli, p}) with harness (vigil setup's name for
 * it) driven by make({sandbox, fake}) against a fake of api answering the
 * script (toolName(server, tool): the harness's names of vigil's tools),
 * once the project is set up (p: project()'s; setupEnv(sandbox, cli): more
 * variables for vigil setup) and the driver has its variables. */
function withProject({ harness, api, toolName, make, setupEnv = () => ({}) }, f) {
  const p = {};
  return withHarness({ label: `deliver-${harness}`, api, make,
    script: script(toolName('vigil', 'monitor_start'), toolName('vigil', 'monitor_list'), p) }, async ({ sandbox, fake, cli }) => {
    Object.assign(p, await project(sandbox, harness, setupEnv(sandbox, cli)));
    cli.extraEnv = { ...cli.extraEnv, ...p.env };
    await f({ sandbox, fake, cli, p });
  });
}

/** Kills the harness in the driver's terminal (the tmux server goes, its
 * pane's process gets SIGHUP) and waits, bounded, until that process is
 * gone. */
async function killTerminal(cli, { timeout = HARNESS_WAIT_MS } = {}) {
  const pid = Number((await cli.tmux.tmux('display-message', '-p', '-t', cli.tmux.target, '#{pane_pid}')).trim());
  assert.ok(pid > 1, `the pane's process: ${pid}`);
  await cli.tmux.kill();
  const deadline = Date.now() + timeout;
  for (;;) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    assert.ok(Date.now() < deadline, `the harness (pid ${pid}) is gone ${timeout} ms after its terminal was killed`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('claude-code, as vigil setup --project sets it up: (a) a crash after the turn ended wakes the idle agent, nobody typing; (b) a crash during a busy turn comes with the next tool result; (c) one made while Claude Code was killed comes once with --continue; (d) each envelope once', { timeout: TEST_TIMEOUT }, async (t) => {
  class SetupClaude extends Claude {
    args(extra = []) { return ['--debug-file', this.debugLog, ...extra]; }
  }
  await withProject({ harness: 'claude-code', api: anthropic, toolName: claudeToolName,
    make: ({ sandbox, fake }) => new SetupClaude({ sandbox, fake, allow: [] }) }, async ({ sandbox, fake, cli, p }) => {
    try {
      await cli.interactive();
      await cli.waitDebug(/MCP server "vigil": Successfully connected/);
      await cli.type('please start the dev server');
      const listed = await assertBusyCrashWithTheNextResult(t, fake, p, 'claude-code');
      await cli.tmux.waitScreen(/STARTED-OK/, { what: "the turn's end on screen" });
      const woken = await assertWoken(t, fake, p, 'claude-code', listed, 'the Stop hook, asyncRewake');
      assert.match(woken.tailText, /Stop hook/, 'it came by the Stop hook');
      await cli.tmux.waitScreen(/SAW-WAKE/, { what: "the woken turn's answer on screen" });
      await killTerminal(cli);
      await crashWhileDown(sandbox, p);
      cli.debugLog = sandbox.file('logs', 'claude-debug-2.log');
      await cli.interactive({ args: ['--continue'] });
      await cli.waitDebug(/MCP server "vigil": Successfully connected/);
      await cli.type('what happened while I was away');
      await assertDownCrashOnce(t, fake, p, 'claude-code', listed, 'SessionStart or UserPromptSubmit after --continue');
      await cli.tmux.waitScreen(/SAW-DOWN/, { what: "the model's answer on screen" });
    } catch (e) {
      e.message += `\n--- screen ---\n${await cli.screen()}`;
      throw e;
    }
    assert.deepEqual(fake.errors, []);
  });
});

/** Codex as `vigil setup codex --project` sets it up, without
 * --dangerously-bypass-hook-trust (setup recorded the trust): exec runs a
 * turn on its own, or with remote on the app-server daemon (`codex exec
 * --remote unix://`, which takes only the prompt and output options). */
class SetupCodex extends Codex {
  async exec(prompt, { resume, remote = false, timeout = HARNESS_WAIT_MS } = {}) {
    const sub = resume ? ['exec', 'resume', resume] : ['exec'];
    const args = remote ? ['--json', '--remote', 'unix://'] : ['--json', '--skip-git-repo-check'];
    const out = await this.runToExit('codex exec', [...sub, ...args, prompt], { timeout });
    out.events = jsonLines(out.stdout);
    out.threadId = out.events.find((e) => e.type === 'thread.started')?.thread_id ?? resume ?? null;
    return out;
  }
}

/** withProject for Codex: setup asks the codex the person runs (on PATH)
 * to trust vigil's hooks. */
const withSetupCodex = (f) => withProject({ harness: 'codex', api: responses, toolName: codexToolName,
  make: ({ sandbox, fake }) => new SetupCodex({ sandbox, fake,
    config: { projects: { [sandbox.proj]: { trust_level: 'trusted' } } } }),
  setupEnv: (sandbox, cli) => ({ CODEX_HOME: cli.codexHome,
    PATH: `${path.dirname(cliPath(CODEX_PACKAGE, 'codex'))}:${sandbox.env().PATH}` }) }, f);

test('codex, as vigil setup --project sets it up: (b) a crash during a busy turn comes with the next tool result; (c) one made between two codex exec and the worker the model started come once with exec resume; (d) each envelope once', { timeout: TEST_TIMEOUT }, async (t) => {
  await withSetupCodex(async ({ sandbox, fake, cli, p }) => {
    const first = await cli.exec('please start the dev server');
    assert.equal(first.code, 0, `codex exec exits 0:\n${first.stdout}\n${first.stderr}`);
    const listed = await assertBusyCrashWithTheNextResult(t, fake, p, 'codex');
    assert.ok(first.threadId, 'codex exec names its thread');
    await crashWhileDown(sandbox, p, { worker: true });
    const second = await cli.exec('what happened while I was away', { resume: first.threadId });
    assert.equal(second.code, 0, `codex exec resume exits 0:\n${second.stdout}\n${second.stderr}`);
    await assertDownCrashOnce(t, fake, p, 'codex', listed, 'SessionStart or UserPromptSubmit of exec resume', { worker: true });
    assert.deepEqual(fake.errors, []);
  });
});

test('codex on its app-server daemon, as vigil setup --project sets it up: (a) a crash after the turn ended starts a new turn, nobody typing; (b); (d) each envelope once', { timeout: TEST_TIMEOUT }, async (t) => {
  await withSetupCodex(async ({ sandbox, fake, cli, p }) => {
    await cli.startDaemon();
    try {
      await codexOnTheDaemon(t, fake, cli, p);
    } finally {
      // The daemon (and the vigil mcp it runs) goes before the engine: a
      // vigil mcp that outlived the engine would start another one on the
      // project's socket, which nothing of the test would then stop.
      await cli.stopDaemon();
    }
    await p.engine.stop();
    assert.deepEqual(vigildsUnder(sandbox.dir), [], 'no engine of the project is left running');
  });
});

/** The wake itself: (b), then (a) by the watcher, (d). */
async function codexOnTheDaemon(t, fake, cli, p) {
  {
    const first = await cli.exec('please start the dev server', { remote: true });
    assert.equal(first.code, 0, `codex exec --remote exits 0:\n${first.stdout}\n${first.stderr}`);
    const listed = await assertBusyCrashWithTheNextResult(t, fake, p, 'codex (daemon)');
    await fake.waitFor(when.toolResult('monitor_start', /label\W+worker\b/), { what: "the worker's start" });
    await waitSessionState(p.engine.socket, p.session, 'idle');
    const woken = await assertWoken(t, fake, p, 'codex (daemon)', listed, "the SessionStart hook's watcher, codex queue --resume");
    assert.equal(fake.thread(woken), fake.thread(listed), 'the woken turn continues the same thread');
    t.diagnostic(`codex (daemon) (d): ${assertEachEnvelopeOnce(fake)} envelopes, each once`);
    assert.deepEqual(fake.errors, []);
  }
}

/** The pids of the vigild processes whose command line names dir. */
function vigildsUnder(dir) {
  const found = [];
  for (const pid of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    let cmd;
    try {
      cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    } catch {
      continue; // gone meanwhile
    }
    if (path.basename(cmd[0]) === 'vigild' && cmd.some((a) => a.includes(dir))) found.push(Number(pid));
  }
  return found;
}

test('gemini, as vigil setup --project sets it up: (b) a crash during a busy turn comes with the next tool result; (c) one made between two gemini -p and the worker the model started come once with --resume; (d) each envelope once', { timeout: TEST_TIMEOUT }, async (t) => {
  await withProject({ harness: 'gemini', api: gemini, toolName: geminiToolName,
    make: ({ sandbox, fake }) => new Gemini({ sandbox, fake }) }, async ({ sandbox, fake, cli, p }) => {
    const first = await cli.prompt('please start the dev server');
    assert.equal(first.code, 0, `gemini -p exits 0:\n${first.stdout}\n${first.stderr}`);
    const listed = await assertBusyCrashWithTheNextResult(t, fake, p, 'gemini');
    await crashWhileDown(sandbox, p, { worker: true });
    const second = await cli.prompt('what happened while I was away', { resume: 'latest' });
    assert.equal(second.code, 0, `gemini -p --resume exits 0:\n${second.stdout}\n${second.stderr}`);
    await assertDownCrashOnce(t, fake, p, 'gemini', listed, 'SessionStart or BeforeAgent of --resume latest', { worker: true });
    assert.deepEqual(fake.errors, []);
  });
});

/** OpenCode under `opencode serve` with vigil setup's plugin: (b), then
 * with wake (a) (the worker crashes after the turn ended, nobody
 * prompting), else the worker crashes while the server is down; then (c)
 * and (d). */
function opencodeCase(wake) {
  return async (t) => {
    await withProject({ harness: 'opencode', api: chat, toolName: opencodeToolName,
      make: ({ sandbox, fake }) => new OpenCode({ sandbox, fake }) }, async ({ sandbox, fake, cli, p }) => {
      await cli.serve();
      const s = await cli.createSession();
      await cli.promptAsync(s.id, 'please start the dev server');
      const listed = await assertBusyCrashWithTheNextResult(t, fake, p, 'opencode');
      await fake.waitFor(when.toolResult('monitor_start', /label\W+worker\b/), { after: listed, what: "the worker's start" });
      await waitSessionState(p.engine.socket, p.session, 'idle');
      if (wake) await assertWoken(t, fake, p, 'opencode', listed, "the plugin's session.idle, promptAsync");
      await cli.server.stop();
      await crashWhileDown(sandbox, p, { worker: !wake });
      await cli.serve();
      await cli.promptAsync(s.id, 'what happened while I was away');
      await assertDownCrashOnce(t, fake, p, 'opencode', listed, "the plugin's session.idle wake after the first turn of the restarted server", { worker: !wake });
      assert.deepEqual(fake.errors, []);
    });
  };
}

test('opencode, as vigil setup --project sets it up: (b) a crash during a busy turn comes with the next tool result; (c) one made while opencode serve was killed, and the worker the model started, come once on the same session; (d) each envelope once', { timeout: TEST_TIMEOUT }, opencodeCase(false));

// The wake: it missed about one run in two under load until the plugin ran
// a session's status hooks and its waiter's start in the order of their
// events (a `busy` hook process that finished after the turn's end had
// ended the new waiter, or left the session busy).
test('opencode, as vigil setup --project sets it up: (a) a crash after the turn ended starts a new turn, nobody typing; then (b), (c), (d)', {
  timeout: TEST_TIMEOUT,
}, opencodeCase(true));
