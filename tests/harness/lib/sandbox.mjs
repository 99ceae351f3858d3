// Where a harness CLI runs in the tests: a private HOME, a project
// directory, an environment built from nothing, and every process it
// started found and ended at the end.
//
// A Sandbox is one temp directory holding home/ (HOME, and the XDG
// directories under it: never the real user's), proj/ (the working
// directory, the "project"), hooks/ (what hooks recorded, hook.mjs) and
// logs/. Its environment is not process.env: only PATH, the locale, the
// test-run tags and what the driver adds (the fake's URL, a dummy key), so
// no real API key, no CI variable and no user config leaks into a harness.
// Every process started in it carries VIGIL_HARNESS_SANDBOX=<dir> (and
// ctest's VIGIL_TEST_RUN, which tests/support/no_orphans.sh looks for), so
// cleanup() ends whatever a harness left behind: a daemon it forked, an MCP
// server it did not stop, a tmux server.
//
// Proc is one spawned process in its own process group: its output kept
// (bounded), awaitable (an exit, a line matching a pattern), stopped with
// SIGTERM then SIGKILL to the whole group.

import { spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { within, processesWithEnv } from '../../mcp/harness.mjs';

export { within };

export const HARNESS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const NODE_MODULES = path.join(HARNESS_DIR, 'node_modules');
export const BUILD_DIR = path.resolve(process.env.VIGIL_BUILD_DIR ?? path.join(HARNESS_DIR, '../../build'));
export const VIGIL = path.join(BUILD_DIR, 'vigil');

// The bound on one awaited event of a harness (its start, an exit, a line).
// The CLIs start in seconds on a loaded 2-core machine; generous.
export const HARNESS_WAIT_MS = 90000;

// The most of a process's stdout or stderr kept (the tail); what is cut is
// counted in Proc.dropped.
export const PROC_OUTPUT_KEEP = 1024 * 1024;

// After a process exits, how long its output pipes may take to reach end of
// file: a daemon it forked may hold them open forever (Neovim drains at most
// one buffer after an exit for the same reason).
export const PROC_DRAIN_MS = 2000;

// How long a process group gets between SIGTERM and SIGKILL.
export const STOP_GRACE_MS = 5000;

/** The installed version of npm package pkg in tests/harness/node_modules,
 * or throws an Error naming the package and how to install it: a harness
 * that is not installed fails its test, never skips it. */
export function requirePackage(pkg) {
  const file = path.join(NODE_MODULES, pkg, 'package.json');
  let version;
  try {
    version = JSON.parse(fs.readFileSync(file, 'utf8')).version;
  } catch (e) {
    throw new Error(`the harness package ${pkg} is not installed (${file}: ${e.code ?? e.message}); ` +
      'run ./scripts/install-deps.sh, which runs npm ci in tests/harness');
  }
  const pinned = JSON.parse(fs.readFileSync(path.join(HARNESS_DIR, 'package.json'), 'utf8')).dependencies?.[pkg];
  if (pinned && pinned !== version) {
    throw new Error(`the harness package ${pkg} is ${version} in ${NODE_MODULES}, but package.json pins ${pinned}; ` +
      'run ./scripts/install-deps.sh');
  }
  return version;
}

/** The path of an installed CLI's executable (node_modules/.bin/NAME), or
 * throws naming the package. */
export function cliPath(pkg, bin) {
  requirePackage(pkg);
  const p = path.join(NODE_MODULES, '.bin', bin);
  try {
    fs.accessSync(p, fs.constants.X_OK);
  } catch {
    throw new Error(`the harness package ${pkg} is installed but ${p} is not an executable; run ./scripts/install-deps.sh`);
  }
  return p;
}

export class Proc {
  /** Spawns command in its own process group, stdin from /dev/null (no CLI
   * may wait on a terminal or a pipe that never closes). */
  constructor(name, command, args, { cwd, env }) {
    this.name = name;
    this.command = command;
    this.args = args;
    this.out = '';
    this.err = '';
    this.dropped = 0; // bytes of output cut to keep PROC_OUTPUT_KEEP
    this.events = new EventEmitter();
    this.events.setMaxListeners(0);
    this.child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    this.pid = this.child.pid;
    this.spawnError = null;
    this.child.on('error', (e) => {
      this.spawnError = e;
      this.events.emit('output');
    });
    const keep = (which) => (d) => {
      let s = this[which] + d.toString();
      if (s.length > PROC_OUTPUT_KEEP) {
        this.dropped += s.length - PROC_OUTPUT_KEEP;
        s = s.slice(-PROC_OUTPUT_KEEP);
      }
      this[which] = s;
      this.events.emit('output');
    };
    this.child.stdout.on('data', keep('out'));
    this.child.stderr.on('data', keep('err'));
    this.result = null;
    const closed = new Promise((resolve) => this.child.once('close', resolve));
    this.exited = new Promise((resolve) => {
      this.child.once('exit', async (code, signal) => {
        let timer;
        await Promise.race([closed, new Promise((r) => { timer = setTimeout(r, PROC_DRAIN_MS); })]);
        clearTimeout(timer);
        this.result = { code, signal };
        this.events.emit('output');
        resolve(this.result);
      });
    });
  }

  get running() {
    return this.result === null && this.spawnError === null;
  }

  /** The last lines of its output, for failure messages. */
  tail(n = 3000) {
    return `--- ${this.name} stdout ---\n${this.out.slice(-n)}\n--- ${this.name} stderr ---\n${this.err.slice(-n)}`;
  }

  /** Its exit ({code, signal}), bounded; the message says what it printed. */
  async waitExit(timeout = HARNESS_WAIT_MS) {
    try {
      return await within(this.exited, timeout, `${this.name} to exit`);
    } catch (e) {
      throw new Error(`${e.message}\n${this.tail()}`);
    }
  }

  /** The first match of re in its stdout+stderr (arrived or to come); fails
   * when it exits first, or at the bound. */
  waitOutput(re, timeout = HARNESS_WAIT_MS) {
    return new Promise((resolve, reject) => {
      let timer;
      const check = () => {
        const m = re.exec(this.out) ?? re.exec(this.err);
        if (m) {
          done();
          resolve(m);
        } else if (!this.running) {
          done();
          reject(new Error(`${this.name} ended (${JSON.stringify(this.result ?? String(this.spawnError))}) before printing ${re}\n${this.tail()}`));
        }
      };
      const done = () => {
        clearTimeout(timer);
        this.events.off('output', check);
      };
      timer = setTimeout(() => {
        done();
        reject(new Error(`timed out after ${timeout} ms waiting for ${this.name} to print ${re}\n${this.tail()}`));
      }, timeout);
      this.events.on('output', check);
      check();
    });
  }

  /** SIGTERM to its process group, SIGKILL after STOP_GRACE_MS; idempotent. */
  async stop() {
    if (this.running) {
      try {
        process.kill(-this.pid, 'SIGTERM');
      } catch {
        // already gone
      }
      try {
        await within(this.exited, STOP_GRACE_MS, 'exit');
      } catch {
        try {
          process.kill(-this.pid, 'SIGKILL');
        } catch {
          // already gone
        }
        await this.exited;
      }
    }
    return this.result;
  }
}

export class Sandbox {
  /** A new sandbox under the system temp dir; label names it. */
  constructor(label) {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), `vigil-harness-${label}-`));
    this.home = path.join(this.dir, 'home');
    this.proj = path.join(this.dir, 'proj');
    this.logs = path.join(this.dir, 'logs');
    for (const d of [this.home, this.proj, this.logs]) fs.mkdirSync(d, { recursive: true });
    this.procs = [];
    this.cleanups = []; // functions run first by cleanup(), last added first
  }

  /** The environment of every process started here: nothing of
   * process.env but PATH, the locale and the test-run tags, plus extra. */
  env(extra = {}) {
    const env = {
      PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
      HOME: this.home,
      USER: os.userInfo().username,
      LOGNAME: os.userInfo().username,
      LANG: 'C.UTF-8',
      TMPDIR: os.tmpdir(),
      XDG_CONFIG_HOME: path.join(this.home, '.config'),
      XDG_DATA_HOME: path.join(this.home, '.local', 'share'),
      XDG_STATE_HOME: path.join(this.home, '.local', 'state'),
      XDG_CACHE_HOME: path.join(this.home, '.cache'),
      VIGIL_HARNESS_SANDBOX: this.dir,
    };
    // ctest's run tag (no_orphans.sh), tests/mcp's file id, and a sanitizer
    // build's options for the vigil mcp the harness starts, whose stderr
    // the harness keeps: its reports go to files in logs/ instead, which
    // sanitizerReports() reads.
    for (const k of ['VIGIL_TEST_RUN', 'VIGIL_MCP_TEST_ID', 'ASAN_OPTIONS', 'UBSAN_OPTIONS', 'LSAN_OPTIONS']) {
      if (process.env[k] !== undefined) env[k] = process.env[k];
    }
    if (env.ASAN_OPTIONS !== undefined) env.ASAN_OPTIONS += `:log_path=${path.join(this.logs, 'asan')}`;
    if (env.UBSAN_OPTIONS !== undefined) env.UBSAN_OPTIONS += `:log_path=${path.join(this.logs, 'ubsan')}`;
    return { ...env, ...extra };
  }

  /** A path inside the sandbox (parents made). */
  file(...parts) {
    const p = path.join(this.dir, ...parts);
    fs.mkdirSync(path.dirname(p), { recursive: true });
    return p;
  }

  /** Writes a file inside the sandbox (a string, or a value as JSON). */
  write(rel, content, mode) {
    const p = path.isAbsolute(rel) ? rel : this.file(rel);
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.writeFileSync(p, typeof content === 'string' ? content : `${JSON.stringify(content, null, 2)}\n`);
    if (mode !== undefined) fs.chmodSync(p, mode);
    return p;
  }

  /** Starts a process here (its own group, stdin /dev/null). */
  spawn(name, command, args, { cwd = this.proj, env = this.env() } = {}) {
    const p = new Proc(name, command, args, { cwd, env });
    this.procs.push(p);
    return p;
  }

  /** Runs f at cleanup, before processes are ended. */
  onCleanup(f) {
    this.cleanups.push(f);
  }

  /** The sanitizer reports written by processes of a sanitizer build
   * started here (vigil mcp under a harness): [{file, text}]. */
  sanitizerReports() {
    return fs.readdirSync(this.logs).filter((n) => /^(asan|ubsan)\./.test(n))
      .map((n) => ({ file: n, text: fs.readFileSync(path.join(this.logs, n), 'utf8') }));
  }

  /** Processes carrying this sandbox's mark that are still alive. */
  leftovers() {
    return processesWithEnv('VIGIL_HARNESS_SANDBOX', this.dir);
  }

  /** Runs the cleanups, stops every Proc, then ends whatever else carries
   * the sandbox's mark (SIGTERM, then SIGKILL), reads the sanitizer reports
   * (written as processes exit), and removes the directory unless keep.
   * Returns {leftovers: the processes that had to be ended that way (a
   * harness's leftovers), sanitizer: sanitizerReports()}. */
  async cleanup({ keep = process.env.VIGIL_HARNESS_KEEP === '1' } = {}) {
    for (const f of this.cleanups.reverse()) {
      try {
        await f();
      } catch {
        // a cleanup that fails must not keep the rest from running
      }
    }
    await Promise.allSettled(this.procs.map((p) => p.stop()));
    const left = this.leftovers();
    for (const sig of ['SIGTERM', 'SIGKILL']) {
      const alive = this.leftovers();
      if (alive.length === 0) break;
      for (const p of alive) {
        try {
          process.kill(p.pid, sig);
        } catch {
          // gone meanwhile
        }
      }
      // Nothing announces that an unrelated process is gone: read /proc
      // every 50 ms, up to the grace time.
      const deadline = Date.now() + STOP_GRACE_MS;
      while (this.leftovers().length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    }
    const sanitizer = this.sanitizerReports();
    if (!keep) fs.rmSync(this.dir, { recursive: true, force: true });
    return { leftovers: left, sanitizer };
  }
}
