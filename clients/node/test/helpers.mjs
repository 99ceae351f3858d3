// What the vigil-client tests share: the build's vigild, a config written
// for the tests, a vigild listening on a socket in a private temp dir, and
// a way to see which processes a test file left behind.
//
// Every process a test file starts carries VIGIL_NODE_TEST_ID (this file's
// id) in its environment: vigild by inheritance, monitored children through
// the config's env_inherit. So a file can check that none of its own is
// alive at its end, whatever else ctest runs meanwhile; ctest's run tag
// (VIGIL_TEST_RUN) is passed on the same way for the suite's no_orphans.
//
// Tests wait on events (an answer, a notification, a log line, an exit)
// bounded by WAIT_MS, never on the clock. The one exception is said where it
// is: reading /proc until a process is gone.

import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const HERE = path.dirname(fileURLToPath(import.meta.url));
export const PACKAGE_DIR = path.resolve(HERE, '..');
export const REPO = path.resolve(HERE, '../../..');
export const BUILD_DIR = path.resolve(process.env.VIGIL_BUILD_DIR ?? path.join(REPO, 'build'));
export const VIGILD = path.join(BUILD_DIR, 'vigild');

/** The bound on one awaited event. CI is a loaded 2-core machine: generous,
 * and never what a test measures. */
export const WAIT_MS = 30000;
/** node:test's bound on one test. */
export const TEST_TIMEOUT = 180000;

/** This test file's id (see the top of the file). */
export const FILE_ID = `node-client-${process.pid}-${crypto.randomBytes(4).toString('hex')}`;

for (const dep of ['@msgpack/msgpack', 'nats']) {
  if (!fs.existsSync(path.join(PACKAGE_DIR, 'node_modules', dep))) {
    throw new Error(`${dep} is not installed in ${PACKAGE_DIR}/node_modules ` +
      '(run scripts/install-deps.sh, which runs npm ci there)');
  }
}

/** What a sanitizer build (-DVIGIL_SANITIZE=ON) reports on vigild's stderr. */
export const SANITIZER_REPORT = /ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:/;

/** The environment of every process the tests start. */
export function testEnv(extra = {}) {
  return { ...process.env, VIGIL_NODE_TEST_ID: FILE_ID, ...extra };
}

/** A JavaScript value as Lua source, for configs. */
export function lua(v) {
  if (typeof v === 'boolean' || typeof v === 'number') return String(v);
  if (typeof v === 'string') return JSON.stringify(v); // a JSON string is a valid Lua string here (ASCII)
  if (Array.isArray(v)) return `{${v.map(lua).join(', ')}}`;
  return `{${Object.entries(v).map(([k, x]) => `${k} = ${lua(x)}`).join(', ')}}`;
}

/** The tests' config: the programs they run, shell allowed, short grace
 * times, and the environment children need to be found by. */
export function testConfig(monitor = {}) {
  return {
    monitor: {
      allowed_commands: ['sh', 'echo', 'printf', 'sleep', 'seq', 'true', 'false', 'cat'],
      allow_shell: true,
      kill_grace_ms: 500,
      exit_drain_ms: 300,
      env_inherit: ['PATH', 'HOME', 'USER', 'LOGNAME', 'LANG', 'LC_*', 'TERM', 'TZ', 'TMPDIR',
        'VIGIL_TEST_RUN', 'VIGIL_NODE_TEST_ID', 'ASAN_OPTIONS', 'UBSAN_OPTIONS', 'LSAN_OPTIONS'],
      ...monitor,
    },
  };
}

/** A private temp dir (0700), removed by removeTempDirs(). */
const tempDirs = [];
export function tempDir(tag = 'test') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `vigil-node-${tag}-`));
  tempDirs.push(dir);
  return dir;
}
export function removeTempDirs() {
  for (const d of tempDirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
}

/** Writes cfg as a config file in dir; returns its path. */
export function writeConfig(dir, cfg = testConfig()) {
  const file = path.join(dir, 'config.lua');
  fs.writeFileSync(file, `return ${lua(cfg)}\n`);
  return file;
}

/** promise, or a rejection naming what after ms. */
export function within(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** A shell command for the tokenizer: script single-quoted, so without a single quote. */
export function sh(script) {
  if (script.includes("'")) throw new Error(`sh(): no single quote in the script: ${script}`);
  return `sh -c '${script}'`;
}

/** A file the test creates to let a child go on: the child's script waits
 * for it (`until`), the test calls open(). */
export class Gate {
  constructor(dir, name) {
    this.path = path.join(dir, `gate-${name}`);
  }

  get until() {
    return `until [ -e ${this.path} ]; do sleep 0.05; done`;
  }

  open() {
    fs.writeFileSync(this.path, 'go\n');
  }
}

/**
 * vigild listening on a socket in a private temp dir, with the tests'
 * config. stateDir: true for the default one beside the socket (needed by
 * a SIGUSR2 restart), false for --no-state. args: more arguments for
 * vigild (--nats URL --nats-engine NAME).
 */
export class SocketEngine {
  static async start({ config = testConfig(), stateDir = false, args = [] } = {}) {
    const e = new SocketEngine(config, stateDir, args);
    await within(e.listening, WAIT_MS, `vigild to listen on ${e.socket}`).catch(async (err) => {
      await e.stop().catch(() => {});
      throw new Error(`${err.message}; its log:\n${e.log}`);
    });
    return e;
  }

  constructor(config, stateDir, extraArgs = []) {
    this.dir = tempDir('engine');
    this.configPath = writeConfig(this.dir, config);
    this.socket = path.join(this.dir, 'run', 'vigil.sock');
    const args = ['--listen', this.socket, '--config', this.configPath];
    if (!stateDir) args.push('--no-state');
    args.push(...extraArgs);
    this.child = spawn(VIGILD, args, { stdio: ['ignore', 'ignore', 'pipe'], env: testEnv(), cwd: this.dir });
    this.log = '';
    this.logWaiters = [];
    this.child.stderr.setEncoding('utf8');
    this.child.stderr.on('data', (text) => {
      this.log += text;
      for (const w of [...this.logWaiters]) w();
    });
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve({ code, signal })));
    this.child.once('error', (e) => { this.log += `spawn error: ${e.message}\n`; });
    this.listening = this.logLine(/listening on/, 1);
  }

  /** Resolves once the log has `count` lines matching re (vigild logs
   * "listening on PATH" each time it is ready, after a restart too). */
  logLine(re, count) {
    const g = new RegExp(re.source, 'g');
    const enough = () => (this.log.match(g) ?? []).length >= count;
    return new Promise((resolve, reject) => {
      const check = () => {
        if (enough()) {
          this.logWaiters.splice(this.logWaiters.indexOf(check), 1);
          resolve();
        }
      };
      this.logWaiters.push(check);
      this.exited.then(({ code, signal }) => reject(new Error(`vigild exited (${signal ?? code})`)));
      check();
    });
  }

  /** SIGTERM, and its exit {code, signal} (bounded). Fails when a
   * sanitizer build reported an error in its log. */
  async stop() {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGTERM');
    const exit = await within(this.exited, WAIT_MS, 'vigild to exit after SIGTERM');
    if (SANITIZER_REPORT.test(this.log)) throw new Error(`vigild's sanitizer report:\n${this.log.slice(-4000)}`);
    return exit;
  }
}

/** Live (not zombie) processes whose environment has name=value. */
export function processesWithEnv(name = 'VIGIL_NODE_TEST_ID', value = FILE_ID) {
  const want = `${name}=${value}`;
  const found = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const env = fs.readFileSync(`/proc/${entry}/environ`, 'latin1');
      if (!env.split('\0').includes(want)) continue;
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'latin1');
      if (stat.slice(stat.lastIndexOf(')') + 2)[0] === 'Z') continue;
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, 'latin1');
      found.push({ pid: Number(entry), cmdline: cmdline.split('\0').filter(Boolean).join(' ') });
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return found;
}

/** Waits (bounded) until no process of this file is alive; returns those
 * still alive at the bound. Reads /proc every 50 ms: nothing announces that
 * another process has gone. */
export async function waitNoneLeft(timeout = WAIT_MS) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const left = processesWithEnv();
    if (left.length === 0 || Date.now() >= deadline) return left;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The ending notification of monitorId, from a wait-able client or session. */
export function endingOf(monitorId) {
  return (n) => n.monitor_id === monitorId && ['exit', 'stopped', 'timed_out', 'idle_timeout', 'overload'].includes(n.type);
}
