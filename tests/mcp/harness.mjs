// The harness of the `vigil mcp` functional tests (tests/mcp/*.test.mjs).
//
// Each test file starts one private vigild (Engine.start) on a Unix socket in
// a temp directory, with a config written for the tests, and drives
// `vigil mcp --socket SOCK --session NAME --no-spawn ...` two ways:
//
// - Adapter: through the official MCP TypeScript SDK (`Client` over
//   `StdioClientTransport`), as MCP.md requires of external tests. Every
//   server notification is kept, in arrival order, in an Inbox that tests
//   await ("the first notification matching pred, within a generous bound").
// - RawAdapter: child_process directly, one JSON-RPC message a line, for what
//   an SDK client never sends (malformed JSON, over-long lines, other
//   protocol revisions).
//
// Nothing here sleeps to let time pass: tests await an event (a message, a
// process exit) bounded by WAIT_MS. The two exceptions are said where they
// are: waiting for vigild's socket to accept at start-up, and reading /proc
// until a process is gone (the process table is the only witness there).
//
// Processes: vigild, the adapters and (through monitor.env_inherit) every
// monitored child carry VIGIL_TEST_RUN (ctest's run tag, which the suite-wide
// tests/support/no_orphans.sh looks for) and VIGIL_MCP_TEST_ID, an id of this
// test file's process, so a test can look for leftovers of its own file
// without seeing other tests that ctest runs at the same time.

import { spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import crypto from 'node:crypto';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';

export const HERE = path.dirname(fileURLToPath(import.meta.url));
export const BUILD_DIR = path.resolve(process.env.VIGIL_BUILD_DIR ?? path.join(HERE, '../../build'));
export const VIGIL = path.join(BUILD_DIR, 'vigil');
export const VIGILD = path.join(BUILD_DIR, 'vigild');

// The bound on one awaited event (a notification, an answer, an exit). CI is
// a loaded 2-core machine: generous, and never the thing a test measures.
export const WAIT_MS = 30000;
// node:test's timeout for one test; several events fit in it.
export const TEST_TIMEOUT = 180000;

// This test file's id (see the top of the file).
export const FILE_ID = `mcp-${process.pid}-${crypto.randomBytes(4).toString('hex')}`;

let sdk;
try {
  const [client, stdio, types] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/stdio.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]);
  sdk = { Client: client.Client, StdioClientTransport: stdio.StdioClientTransport, McpError: types.McpError };
} catch (e) {
  throw new Error(`the MCP SDK client is not installed in ${HERE}/node_modules ` +
    `(run ./scripts/install-deps.sh, which runs npm ci there): ${e.message}`);
}
export const { McpError } = sdk;

// The tool names of each profile, MCP.md section 3; notifications_read is in
// every one (section 4, "a read tool in every profile").
export const PROFILES = {
  vigil: ['monitor_start', 'monitor_stop', 'monitor_list', 'monitor_status', 'monitor_output',
    'monitor_logs', 'monitor_events', 'monitor_wait', 'process_run', 'notifications_read',
    'incident_ignore', 'incident_ignored', 'incident_unignore'],
  watch_process: ['watch_process', 'watch_process_events', 'KillShell', 'BashOutput', 'notifications_read',
    'watch_process_ignore'],
  process: ['process.run', 'process.monitor', 'process.kill', 'process.list', 'process.logs', 'notifications_read',
    'process.ignore'],
  monitor: ['Monitor', 'TaskStop', 'TaskOutput', 'notifications_read', 'MonitorIgnore'],
  hermes: ['terminal', 'process', 'notifications_read'],
};

// What a sanitizer build (build-asan) reports on stderr: vigild's log and
// the adapters' stderr are searched for it when the engine stops.
const SANITIZER_REPORT = /ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:/;

// The ending notification types (docs/protocol.md section 6).
export const ENDINGS = ['exit', 'stopped', 'timed_out', 'idle_timeout', 'overload'];

// ---------------------------------------------------------------- config

/** A JavaScript value as Lua source (tests/functional/vigiltest.py's lua_value). */
export function luaValue(v) {
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'number') return String(v);
  if (typeof v === 'string') {
    return '"' + v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n') + '"';
  }
  if (Array.isArray(v)) return '{' + v.map(luaValue).join(', ') + '}';
  if (v && typeof v === 'object') {
    return '{' + Object.entries(v).map(([k, x]) => `${k} = ${luaValue(x)}`).join(', ') + '}';
  }
  throw new TypeError(`no Lua value for ${v}`);
}

/** The tests' engine config: the programs the tests run, shell allowed, short
 * grace times, and vigiltest.py's env_inherit list plus this file's id.
 * overrides: {group: {key: value}} merged into the groups. */
export function defaultConfig(overrides = {}) {
  const cfg = {
    monitor: {
      allowed_commands: ['echo', 'printf', 'sh', 'sleep', 'true', 'cat', 'seq', 'yes'],
      allow_shell: true,
      kill_grace_ms: 500,
      exit_drain_ms: 300,
      max_monitors_per_session: 16,
      env_inherit: ['PATH', 'HOME', 'USER', 'LOGNAME', 'LANG', 'LC_*', 'TERM', 'TZ', 'TMPDIR',
        'VIGIL_TEST_RUN', 'ASAN_OPTIONS', 'UBSAN_OPTIONS', 'LSAN_OPTIONS', 'VIGIL_MCP_TEST_ID'],
    },
  };
  for (const [group, values] of Object.entries(overrides)) {
    if (values && typeof values === 'object' && !Array.isArray(values)) {
      cfg[group] = { ...(cfg[group] ?? {}), ...values };
    } else {
      cfg[group] = values;
    }
  }
  return cfg;
}

/** The environment of every process the tests start. */
export function testEnv(extra = {}) {
  return { ...process.env, VIGIL_MCP_TEST_ID: FILE_ID, ...extra };
}

// ---------------------------------------------------------------- waiting

/** promise, or a rejection naming `what` after ms. */
export function within(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** The exit of a child process as {code, signal} (at once if it has exited). */
export function exitOf(child) {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  }
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

/** Messages kept in arrival order, awaitable by predicate. */
export class Inbox {
  constructor(name) {
    this.name = name;
    this.items = [];
    this.closed = null;
    this.events = new EventEmitter();
    this.events.setMaxListeners(0);
  }

  push(m) {
    this.items.push(m);
    this.events.emit('change');
  }

  /** No more messages will come (why). Waits that find nothing fail now. */
  close(why) {
    this.closed = why;
    this.events.emit('change');
  }

  summary() {
    const shown = this.items.slice(-20).map((m) => {
      if (m.method === 'notifications/claude/channel') {
        const meta = m.params?.meta ?? {};
        return `channel(seq ${meta.seq} ${meta.type} ${meta.monitor_id})`;
      }
      if (m.method) return m.method;
      return `response(id ${m.id}${m.error ? ` error ${m.error.code}` : ''})`;
    });
    return `${this.items.length} received${shown.length ? `, last: ${shown.join(', ')}` : ''}`;
  }

  /** The first message (arrived or to come) matching pred. */
  waitFor(pred, { timeout = WAIT_MS, what = 'a message' } = {}) {
    return new Promise((resolve, reject) => {
      let timer;
      const check = () => {
        const m = this.items.find(pred);
        if (m !== undefined) {
          finish();
          resolve(m);
        } else if (this.closed !== null) {
          finish();
          reject(new Error(`${this.name}: ${what} never came: ${this.closed} (${this.summary()})`));
        }
      };
      const finish = () => {
        clearTimeout(timer);
        this.events.off('change', check);
      };
      timer = setTimeout(() => {
        finish();
        reject(new Error(`${this.name}: timed out after ${timeout} ms waiting for ${what} (${this.summary()})`));
      }, timeout);
      this.events.on('change', check);
      check();
    });
  }
}

// ---------------------------------------------------------------- predicates

export const isChannel = (m) => m.method === 'notifications/claude/channel';
export const isVigilLog = (m) => m.method === 'notifications/message' && m.params?.logger === 'vigil';
/** A notifications/message carrying a vigil notification (not some other log line). */
export const isNotificationLog = (m) => isVigilLog(m) && typeof m.params?.data?.seq === 'number';

/** A channel notification of monitorId, of type (a name or a list), whose
 * content includes `contains` (a string or a list of strings). */
export function channelOf(monitorId, { type, contains } = {}) {
  const types = type === undefined ? null : [].concat(type);
  const needles = contains === undefined ? [] : [].concat(contains);
  return (m) => isChannel(m) && m.params?.meta?.monitor_id === monitorId &&
    (types === null || types.includes(m.params.meta.type)) &&
    needles.every((s) => typeof m.params.content === 'string' && m.params.content.includes(s));
}

/** The envelope line of an output line: `[stdout seq=N] TEXT`. */
export function envelopeLine(stream, text) {
  return new RegExp(`^\\[${stream} seq=\\d+\\] ${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm');
}

// ---------------------------------------------------------------- children

/** A command string running script with sh -c, for the tokenizer: the script
 * is single-quoted, so it must hold no single quote. */
export function sh(script) {
  assert.ok(!script.includes("'"), `sh(): no single quote in the script: ${script}`);
  return `sh -c '${script}'`;
}

/** A file the test creates to let a child go on: the child's script waits
 * for it with until(), the test calls open(). */
export class Gate {
  constructor(dir, name) {
    this.path = path.join(dir, 'gates', name);
    fs.mkdirSync(path.dirname(this.path), { recursive: true });
    assert.ok(!/['"\s$`\\]/.test(this.path), `a gate path the scripts can hold: ${this.path}`);
  }

  /** sh code waiting (inside the child) until the test opens the gate. */
  until() {
    return `until [ -e ${this.path} ]; do sleep 0.05; done`;
  }

  open() {
    fs.writeFileSync(this.path, 'go\n');
  }
}

// ---------------------------------------------------------------- /proc

/** Live (not zombie) processes whose environment has name=value. */
export function processesWithEnv(name, value) {
  const want = `${name}=${value}`;
  const found = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    let env, stat, cmdline;
    try {
      env = fs.readFileSync(`/proc/${entry}/environ`, 'latin1');
      stat = fs.readFileSync(`/proc/${entry}/stat`, 'latin1');
      cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, 'latin1');
    } catch {
      continue; // gone meanwhile, or not ours to read
    }
    if (!env.split('\0').includes(want)) continue;
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] === 'Z') continue;
    found.push({ pid: Number(entry), state: fields[0], sid: Number(fields[3]),
      cmdline: cmdline.split('\0').filter(Boolean).join(' ') });
  }
  return found;
}

/** Waits (bounded) until no live process carries this file's id; returns
 * those still alive at the bound. Reads /proc every 50 ms: nothing announces
 * that another process has gone. */
export async function waitNoneLeft(timeout = WAIT_MS) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const left = processesWithEnv('VIGIL_MCP_TEST_ID', FILE_ID);
    if (left.length === 0 || Date.now() >= deadline) return left;
    await new Promise((r) => setTimeout(r, 50));
  }
}

// ---------------------------------------------------------------- vigild

export class Engine {
  /** Starts vigild on a socket in a new temp dir (or at socket: a path
   * whose directory vigild makes), with more command-line arguments args
   * (`--nats URL --nats-engine NAME`); resolves once it accepts. */
  static async start({ config, socket, args = [] } = {}) {
    const engine = new Engine(config ?? defaultConfig(), socket, args);
    try {
      await engine.waitListening();
    } catch (e) {
      await engine.stop().catch(() => {});
      throw e;
    }
    return engine;
  }

  constructor(config, socket, args = []) {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vigil-mcp-'));
    this.configPath = path.join(this.dir, 'config.lua');
    fs.writeFileSync(this.configPath, `return ${luaValue(config)}\n`);
    this.socket = socket ?? path.join(this.dir, 'run', 'vigil.sock');
    this.logPath = path.join(this.dir, 'vigild.log');
    this.adapters = new Set(); // open ones
    this.everyAdapter = []; // every one started, for their stderr
    this.stopped = null;
    const log = fs.openSync(this.logPath, 'w');
    this.proc = spawn(VIGILD, ['--listen', this.socket, '--config', this.configPath, ...args], {
      stdio: ['ignore', 'ignore', log], env: testEnv(), cwd: this.dir,
    });
    fs.closeSync(log);
    this.spawnError = null;
    this.proc.on('error', (e) => { this.spawnError = e; });
    this.exited = exitOf(this.proc);
  }

  log() {
    try {
      return fs.readFileSync(this.logPath, 'utf8');
    } catch {
      return '';
    }
  }

  /** Connects (and hangs up) until vigild accepts on its socket. Polls every
   * 20 ms at start-up only, as vigiltest.py does: nothing else says when the
   * socket is there. */
  async waitListening(timeout = WAIT_MS) {
    const deadline = Date.now() + timeout;
    for (;;) {
      if (this.spawnError) throw new Error(`cannot start ${VIGILD}: ${this.spawnError.message}`);
      if (this.proc.exitCode !== null || this.proc.signalCode !== null) {
        throw new Error(`vigild exited (${this.proc.exitCode ?? this.proc.signalCode}) before listening:\n${this.log()}`);
      }
      const ok = await new Promise((resolve) => {
        const s = net.connect(this.socket);
        s.once('connect', () => { s.destroy(); resolve(true); });
        s.once('error', () => resolve(false));
      });
      if (ok) return;
      if (Date.now() >= deadline) throw new Error(`vigild never listened on ${this.socket}:\n${this.log()}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** A gate (see Gate) in this engine's temp dir. */
  gate(name) {
    return new Gate(this.dir, name);
  }

  /** Closes every adapter, then stops vigild (SIGTERM, wait for its exit)
   * and removes its dir. Fails when vigild did not exit 0 (its log then says
   * why), or when vigild or an adapter reported a sanitizer error (a
   * sanitizer build reports on stderr, not in an exit status a test sees).
   * Idempotent. */
  stop() {
    if (!this.stopped) this.stopped = this._stop();
    return this.stopped;
  }

  async _stop() {
    await Promise.allSettled([...this.adapters].map((a) => a.close()));
    let result;
    if (this.proc.exitCode === null && this.proc.signalCode === null && !this.spawnError) {
      this.proc.kill('SIGTERM');
      try {
        result = await within(this.exited, WAIT_MS, 'vigild to exit after SIGTERM');
      } catch (e) {
        this.proc.kill('SIGKILL');
        await this.exited;
        throw new Error(`${e.message}:\n${this.log().slice(-4000)}`);
      }
    } else {
      result = { code: this.proc.exitCode, signal: this.proc.signalCode };
    }
    const log = this.log();
    fs.rmSync(this.dir, { recursive: true, force: true });
    if (result.code !== 0) {
      throw new Error(`vigild ended with ${JSON.stringify(result)}:\n${log.slice(-4000)}`);
    }
    const reports = [['vigild', log], ...this.everyAdapter.map((a) => [a.name, a.stderr])]
      .filter(([, text]) => SANITIZER_REPORT.test(text));
    if (reports.length > 0) {
      throw new Error(`sanitizer reports:\n${reports.map(([who, text]) => `--- ${who} ---\n${text.slice(-4000)}`).join('\n')}`);
    }
    return result;
  }
}

// ---------------------------------------------------------------- adapters

/** The `vigil mcp` arguments for engine and opts. An adapter of an Engine
 * is given that engine's config (unless opts.args names one), as a set-up
 * would give the config its engine runs: otherwise the adapter's lookup
 * finds another one (the user's, the bundled) and its first tool result
 * carries the mismatch warning (config.test.mjs tests that). */
export function mcpArgs(engine, opts = {}) {
  const args = ['mcp', '--socket', opts.socket ?? engine.socket];
  if (opts.session !== undefined) args.push('--session', opts.session);
  if (opts.noSpawn !== false) args.push('--no-spawn');
  if (opts.profile !== undefined) args.push('--profile', opts.profile);
  if (opts.delivery !== undefined) args.push('--delivery', opts.delivery);
  if (opts.toolNames !== undefined) args.push('--tool-names', opts.toolNames);
  if (engine.configPath !== undefined && !(opts.args ?? []).includes('--config')) {
    args.push('--config', engine.configPath);
  }
  return args.concat(opts.args ?? []);
}

/** The text of a tool result's first content item. */
export function textOf(result) {
  const first = result?.content?.[0];
  return first && first.type === 'text' ? first.text : undefined;
}

/** Waits for a's exit after its stdin was closed; fails (with its stderr)
 * unless it exits with status 0. */
async function expectCleanExit(a) {
  const x = await within(a.exited, WAIT_MS, `${a.name} to exit after stdin EOF (stderr: ${a.stderr})`);
  assert.deepEqual(x, { code: 0, signal: null }, `${a.name} exits 0 at stdin EOF; its stderr:\n${a.stderr}`);
  return x;
}

/** `vigil mcp` driven by the SDK's Client over StdioClientTransport. */
export class Adapter {
  /** Spawns and initializes `vigil mcp` (opts: session, profile, delivery,
   * toolNames, noSpawn, socket, args, env, listTools), then lists its tools
   * (so the SDK validates structuredContent against each outputSchema). */
  static async start(engine, opts = {}) {
    const a = new Adapter(engine, opts);
    engine.adapters.add(a);
    engine.everyAdapter?.push(a);
    await a.connect();
    if (opts.listTools !== false) a.tools = (await a.client.listTools()).tools;
    return a;
  }

  constructor(engine, opts) {
    this.engine = engine;
    this.args = mcpArgs(engine, opts);
    this.name = `vigil ${this.args.join(' ')}`;
    this.stderr = '';
    this.inbox = new Inbox(this.name);
    this.transport = new sdk.StdioClientTransport({
      command: VIGIL, args: this.args, env: testEnv(opts.env), stderr: 'pipe', cwd: opts.cwd ?? engine.dir,
    });
    this.stderrDone = new Promise((resolve) => {
      this.transport.stderr.on('data', (d) => { this.stderr += d.toString(); });
      this.transport.stderr.on('end', resolve);
      this.transport.stderr.on('close', resolve);
    });
    this.client = new sdk.Client({ name: 'vigil-mcp-tests', version: '1.0.0' }, { capabilities: {} });
    this.client.fallbackNotificationHandler = async (n) => this.inbox.push(n);
    this.client.onerror = (e) => { this.lastError = e; };
    this.child = null;
    this.exited = null;
  }

  async connect() {
    try {
      await this.client.connect(this.transport);
    } catch (e) {
      await within(this.stderrDone, 2000, 'its stderr').catch(() => {});
      throw new Error(`${this.name} did not initialize: ${e.message}\n--- its stderr ---\n${this.stderr}`);
    }
    // The SDK keeps the child private; the tests need its exit status.
    this.child = this.transport._process;
    assert.ok(this.child, `${this.name}: the SDK transport has no child process`);
    this.exited = exitOf(this.child);
    // 'close' (stdout drained), not 'exit': the last messages may still be on the way at 'exit'.
    this.child.once('close', (code, signal) => setImmediate(() =>
      this.inbox.close(`the adapter exited (${JSON.stringify({ code, signal })}); stderr: ${this.stderr}`)));
  }

  get pid() {
    return this.child?.pid;
  }

  tool(name) {
    return this.tools?.find((t) => t.name === name);
  }

  /** tools/call; resolves with the result (isError ones too), rejects with
   * the SDK's McpError on a JSON-RPC error. */
  call(name, args = {}, { timeout = 120000 } = {}) {
    return this.client.callTool({ name, arguments: args }, undefined, { timeout });
  }

  /** A result that is not an error; returns it. */
  async ok(name, args = {}, opts) {
    const r = await this.call(name, args, opts);
    assert.notEqual(r.isError, true, `${name} ${JSON.stringify(args)} failed: ${JSON.stringify(r.content)}`);
    return r;
  }

  /** A tool result with isError whose text starts with `errName:`; returns it. */
  async toolError(name, args, errName) {
    const r = await this.call(name, args);
    assert.equal(r.isError, true, `${name} ${JSON.stringify(args)} should be an isError result, got ${JSON.stringify(r)}`);
    const text = textOf(r);
    assert.equal(typeof text, 'string', `the error result has a text item: ${JSON.stringify(r)}`);
    assert.ok(text.startsWith(`${errName}:`), `the error text starts with "${errName}:": ${JSON.stringify(text)}`);
    return r;
  }

  /** A JSON-RPC error (McpError) with code; returns it. */
  async rpcError(name, args, code) {
    let result;
    try {
      result = await this.call(name, args);
    } catch (e) {
      assert.ok(e instanceof McpError, `expected a JSON-RPC error ${code}, got ${e}`);
      assert.equal(e.code, code, `expected JSON-RPC error ${code}, got ${e.code}: ${e.message}`);
      return e;
    }
    assert.fail(`${name} ${JSON.stringify(args)} should be JSON-RPC error ${code}, got the result ${JSON.stringify(result)}`);
  }

  channel() {
    return this.inbox.items.filter(isChannel);
  }

  vigilLogs() {
    return this.inbox.items.filter(isVigilLog);
  }

  /** The first channel notification matching channelOf(monitorId, opts). */
  waitChannel(monitorId, opts = {}) {
    const what = `a notifications/claude/channel of ${monitorId}` +
      (opts.type ? ` of type ${[].concat(opts.type).join('/')}` : '') +
      (opts.contains ? ` containing ${JSON.stringify(opts.contains)}` : '');
    return this.inbox.waitFor(channelOf(monitorId, opts), { what, timeout: opts.timeout });
  }

  /** The ending channel notification of monitorId. */
  waitEnding(monitorId, opts = {}) {
    return this.waitChannel(monitorId, { type: ENDINGS, ...opts });
  }

  /** Waits for the notifications/message twin of channel notification n
   * (MCP.md section 4 sends both in channel mode, the twin right after):
   * once it is in, whatever the adapter wrote before it is in too, so a
   * test can count what it received. */
  twinOf(n) {
    const seq = Number(n.params.meta.seq);
    return this.inbox.waitFor((m) => isNotificationLog(m) && m.params.data.seq === seq,
      { what: `the notifications/message of seq ${seq}` });
  }

  /** Closes stdin (what a harness does when it goes) and waits for the
   * adapter's exit, which must be status 0 (MCP.md section 2). */
  async endInput() {
    this.child.stdin.end();
    return expectCleanExit(this);
  }

  /** The SDK's close (stdin EOF, then SIGTERM, then SIGKILL). */
  async close() {
    this.engine.adapters.delete(this);
    await this.client.close().catch(() => {});
  }
}

/** `vigil mcp` spawned directly: raw lines in, JSON-RPC messages out. */
export class RawAdapter {
  static async start(engine, opts = {}) {
    const a = new RawAdapter(engine, opts);
    engine.adapters.add(a);
    engine.everyAdapter.push(a);
    await a.spawned;
    return a;
  }

  constructor(engine, opts) {
    this.engine = engine;
    this.args = mcpArgs(engine, opts);
    this.name = `vigil ${this.args.join(' ')} (raw)`;
    this.inbox = new Inbox(this.name);
    this.notJson = []; // stdout lines that are not JSON-RPC messages
    this.stderr = '';
    this.nextId = 1;
    this.child = spawn(VIGIL, this.args, { stdio: ['pipe', 'pipe', 'pipe'], env: testEnv(opts.env), cwd: engine.dir });
    this.spawned = new Promise((resolve, reject) => {
      this.child.once('spawn', resolve);
      this.child.once('error', reject);
    });
    this.child.stdin.on('error', () => {}); // EPIPE after an early exit: the waits report it
    this.child.stderr.on('data', (d) => { this.stderr += d.toString(); });
    let pending = '';
    this.child.stdout.on('data', (d) => {
      pending += d.toString();
      let nl;
      while ((nl = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, nl);
        pending = pending.slice(nl + 1);
        let m;
        try {
          m = JSON.parse(line);
        } catch {
          this.notJson.push(line);
          continue;
        }
        if (!m || m.jsonrpc !== '2.0') this.notJson.push(line);
        this.inbox.push(m);
      }
    });
    this.exited = exitOf(this.child);
    // 'close' (stdout drained), not 'exit': the last lines may still be on the way at 'exit'.
    this.child.once('close', (code, signal) =>
      this.inbox.close(`the adapter exited (${JSON.stringify({ code, signal })}); stderr: ${this.stderr}`));
  }

  sendLine(line) {
    this.child.stdin.write(line.endsWith('\n') ? line : `${line}\n`);
  }

  send(obj) {
    this.sendLine(JSON.stringify(obj));
  }

  /** Sends a request; returns its id. */
  request(method, params) {
    const id = this.nextId++;
    this.send(params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params });
    return id;
  }

  /** The response to id (result or error). */
  response(id, timeout) {
    return this.inbox.waitFor((m) => m.id === id && (m.result !== undefined || m.error !== undefined),
      { what: `the response to request ${JSON.stringify(id)}`, timeout });
  }

  /** request + response; fails on an error response. */
  async call(method, params) {
    const r = await this.response(this.request(method, params));
    assert.equal(r.error, undefined, `${method} failed: ${JSON.stringify(r.error)}`);
    return r.result;
  }

  /** The first error response with code whose id is one of ids (null
   * included when given). */
  error(code, ids = [null]) {
    return this.inbox.waitFor((m) => m.error?.code === code && ids.includes(m.id ?? null),
      { what: `a JSON-RPC error ${code} with id ${ids.map((x) => JSON.stringify(x)).join(' or ')}` });
  }

  /** initialize + notifications/initialized; returns the initialize result. */
  async initialize(protocolVersion = '2025-11-25') {
    const result = await this.call('initialize', {
      protocolVersion, capabilities: {}, clientInfo: { name: 'vigil-mcp-tests-raw', version: '1.0.0' },
    });
    this.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    return result;
  }

  /** Closes stdin and waits for the exit, which must be status 0. */
  async endInput() {
    this.child.stdin.end();
    return expectCleanExit(this);
  }

  /** Every stdout line was a JSON-RPC 2.0 message. */
  assertOnlyJsonOnStdout() {
    assert.deepEqual(this.notJson, [], `${this.name} wrote lines that are not JSON-RPC messages on stdout`);
  }

  async close() {
    this.engine.adapters.delete(this);
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.stdin.end();
    try {
      await within(this.exited, 5000, 'exit');
    } catch {
      this.child.kill('SIGTERM');
      try {
        await within(this.exited, 5000, 'exit after SIGTERM');
      } catch {
        this.child.kill('SIGKILL');
        await this.exited;
      }
    }
  }
}

/** A session name unique to this test file and label. */
let sessionCounter = 0;
export function sessionName(label) {
  sessionCounter += 1;
  return `t-${label}-${process.pid}-${sessionCounter}`.slice(0, 64);
}

/** Reads notifications (notifications_read, poll delivery) until the ending
 * of monitor id has come; returns that monitor's notifications. */
export async function untilEnding(a, id) {
  const all = [];
  for (let i = 0; !all.some((n) => n.monitor_id === id && n.type === 'exit'); i++) {
    assert.ok(i < 20, `the ending came: ${JSON.stringify(all.map((n) => [n.seq, n.type]))}`);
    const r = await a.ok('notifications_read', { wait_ms: WAIT_MS });
    all.push(...r.structuredContent.notifications);
  }
  return all.filter((n) => n.monitor_id === id);
}
