// An engine embedded in the host: `vigild --stdio` started as a child, the
// connection its stdin and stdout (docs/protocol.md 2.1). An Engine is a
// Client (every method, sessions, notifications) that owns its engine:
// close() ends the engine's stdin, which makes it stop every monitor
// (SIGTERM, then SIGKILL after the grace, to everything each started) and
// exit. If the host dies without closing, the pipe closes all the same and
// the engine does the same.
//
// The engine logs to stderr, embedded (--stdio) only its warnings and
// errors unless VIGIL_LOG in its env asks for more (VIGIL_LOG=info). By
// default its lines go on to the host's stderr; with `log: 'quiet'` they
// do not. Either way the last
// ENGINE_LOG_TAIL_BYTES are kept (engine.logTail), and an engine that
// exits before answering is reported with them (a bad config says why
// there).

import { spawn } from 'node:child_process';
import { Client } from './client.js';
import { VigilConnectionError, VigilTimeoutError } from './errors.js';

/** How much of the engine's log (stderr) is kept for error messages. */
export const ENGINE_LOG_TAIL_BYTES = 16384;

/** Default bound on the engine's start (its first answer) and on its stop. */
export const ENGINE_TIMEOUT_MS = 30000;

export class Engine extends Client {
  /**
   * Starts `vigild --stdio` and resolves once it answers.
   * @param {object} [options]
   * @param {string} [options.vigild] the program (default: `vigild` on PATH)
   * @param {string} [options.config] `--config FILE`; without one every start is denied (an embedded engine looks up no config: fail closed)
   * @param {string} [options.stateDir] `--state-dir DIR` (docs/restart.md)
   * @param {string[]} [options.args] more arguments for vigild
   * @param {NodeJS.ProcessEnv} [options.env] its environment (default: the host's)
   * @param {string} [options.cwd] its working directory (monitors' default cwd)
   * @param {'inherit'|'quiet'} [options.log] whether its log goes on to the host's stderr
   * @param {number} [options.timeoutMs] bound on the start
   * @param {number} [options.inboxMax] notifications kept for wait()
   */
  static async spawn({ vigild = 'vigild', config, stateDir, args = [], env, cwd, log = 'inherit',
    timeoutMs = ENGINE_TIMEOUT_MS, inboxMax } = {}) {
    if (log !== 'inherit' && log !== 'quiet') {
      throw new RangeError(`log must be "inherit" or "quiet", got ${JSON.stringify(log)}`);
    }
    const argv = ['--stdio'];
    if (config !== undefined) argv.push('--config', config);
    if (stateDir !== undefined) argv.push('--state-dir', stateDir);
    argv.push(...args);
    const child = spawn(vigild, argv, { stdio: ['pipe', 'pipe', 'pipe'], env, cwd });
    await new Promise((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', (e) => reject(new VigilConnectionError(
        `cannot start ${vigild}: ${e.message} (give Engine.spawn({vigild: '/path/to/vigild'}))`, { cause: e })));
    });
    const engine = new Engine({ inboxMax });
    engine.own(child, log);
    try {
      await engine.call('ping', {}, { timeoutMs });
    } catch (e) {
      await engine.close({ timeoutMs });
      if (e instanceof VigilTimeoutError) throw e;
      const { code, signal } = await engine.exited;
      throw new VigilConnectionError(`${vigild} exited (${signal ?? `status ${code}`}) before answering; ` +
        `its log: ${engine.logTail.trim() || '(nothing)'}`, { cause: e });
    }
    return engine;
  }

  /** Talks to child over its stdio, keeps its log's tail. */
  own(child, log) {
    this.child = child;
    this.pid = child.pid;
    this.logTail = '';
    /** Resolves with {code, signal} once the engine has exited. */
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => resolve({ code, signal }));
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (text) => {
      if (log === 'inherit') process.stderr.write(text);
      this.logTail = (this.logTail + text).slice(-ENGINE_LOG_TAIL_BYTES);
    });
    this.attach(child.stdout, child.stdin, `vigild --stdio (pid ${child.pid})`);
  }

  /** The engine's stderr, for a host that wants its log lines itself. */
  get stderr() {
    return this.child.stderr;
  }

  /**
   * Ends the engine: closes its stdin, so it stops every monitor and exits,
   * and resolves with its exit {code, signal} (code 0 after a normal
   * shutdown). If it has not exited within timeoutMs it is sent SIGTERM
   * twice (the second makes it SIGKILL its monitors at once), and after
   * another timeoutMs SIGKILL.
   */
  async close({ timeoutMs = ENGINE_TIMEOUT_MS } = {}) {
    await super.close();
    this.child.stdin.end();
    const timer = (ms) => new Promise((resolve) => setTimeout(resolve, ms, null).unref());
    let exit = await Promise.race([this.exited, timer(timeoutMs)]);
    if (exit === null) {
      this.child.kill('SIGTERM');
      this.child.kill('SIGTERM');
      exit = await Promise.race([this.exited, timer(timeoutMs)]);
      if (exit === null) {
        this.child.kill('SIGKILL');
        exit = await this.exited;
      }
    }
    return exit;
  }
}
