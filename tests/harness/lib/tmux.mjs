// A harness that needs a terminal, run in a private tmux server.
//
// Claude Code's hooks and its idle wake (asyncRewake) only run in its
// interactive mode, which needs a terminal: the test starts it in a tmux
// session on a socket inside the sandbox (never the user's tmux), types
// into it (send-keys) and reads the screen (capture-pane). A screen has no
// "changed" event of its own, so the pane's output is also piped to a file
// (pipe-pane) whose changes (fs.watch) tell a wait to look again.

import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { promisify } from 'node:util';
import { HARNESS_WAIT_MS } from './sandbox.mjs';

const run = promisify(execFile);

export class Tmux {
  /** A tmux server for sandbox (not started yet). */
  constructor(sandbox, { width = 200, height = 50 } = {}) {
    this.sandbox = sandbox;
    this.socket = sandbox.file('tmux', 'sock');
    this.conf = sandbox.write('tmux/tmux.conf', [
      // keep a dead pane (and its last screen) for the failure message
      'set -g remain-on-exit on',
      'set -g history-limit 5000',
      // the harness's own escape sequences reach it quickly
      'set -s escape-time 0',
      '',
    ].join('\n'));
    this.pipe = sandbox.file('tmux', 'pane.log');
    this.width = width;
    this.height = height;
    this.target = 'h:0.0';
    this.started = false;
    sandbox.onCleanup(() => this.kill());
  }

  async tmux(...args) {
    const { stdout } = await run('tmux', ['-S', this.socket, ...args],
      { env: this.sandbox.env(), maxBuffer: 16 * 1024 * 1024 });
    return stdout;
  }

  /** Starts command (argv) in the session's only pane, in cwd with env
   * (each variable passed with -e: the pane does not inherit the client's). */
  async start(argv, { cwd = this.sandbox.proj, env = this.sandbox.env() } = {}) {
    const envArgs = Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]);
    await run('tmux', ['-S', this.socket, '-f', this.conf, 'new-session', '-d', '-s', 'h',
      '-x', String(this.width), '-y', String(this.height), '-c', cwd, ...envArgs, '--', ...argv],
    { env: this.sandbox.env() });
    this.started = true;
    fs.writeFileSync(this.pipe, '');
    await this.tmux('pipe-pane', '-t', this.target, '-o', `cat >> ${this.pipe}`);
  }

  /** The visible screen (and the lines above it), as text. */
  async capture() {
    return this.tmux('capture-pane', '-p', '-J', '-S', '-100', '-t', this.target);
  }

  /** {dead, status} of the pane (its command exited). */
  async paneState() {
    const s = (await this.tmux('display-message', '-p', '-t', this.target, '#{pane_dead} #{pane_dead_status}')).trim().split(' ');
    return { dead: s[0] === '1', status: s[1] === undefined || s[1] === '' ? null : Number(s[1]) };
  }

  /** Waits until the screen matches re (or pred(screen) holds); returns the
   * screen. Fails when the pane's command exits first, or at the bound. */
  waitScreen(re, { timeout = HARNESS_WAIT_MS, what } = {}) {
    const test = typeof re === 'function' ? re : (s) => re.test(s);
    return new Promise((resolve, reject) => {
      let timer;
      let recheck;
      let watcher;
      let busy = false;
      let last = '';
      let finished = false;
      const done = () => {
        finished = true;
        clearTimeout(timer);
        clearInterval(recheck);
        watcher?.close();
      };
      const check = async () => {
        if (busy || finished) return;
        busy = true;
        try {
          last = await this.capture();
          if (finished) return;
          if (test(last)) {
            done();
            resolve(last);
            return;
          }
          const st = await this.paneState();
          if (st.dead && !finished) {
            done();
            reject(new Error(`the terminal's program exited (status ${st.status}) before ${what ?? re}; its screen:\n${last}`));
          }
        } catch (e) {
          if (!finished) {
            done();
            reject(e);
          }
        } finally {
          busy = false;
        }
      };
      watcher = fs.watch(this.pipe, () => { check(); });
      // A screen redrawn without new output, or an inotify event dropped
      // under load: look again every 500 ms too.
      recheck = setInterval(check, 500);
      timer = setTimeout(() => {
        done();
        reject(new Error(`timed out after ${timeout} ms waiting for ${what ?? re} on the terminal; its screen:\n${last}`));
      }, timeout);
      check();
    });
  }

  /** Types text literally (no key names). */
  async type(text) {
    await this.tmux('send-keys', '-t', this.target, '-l', text);
  }

  /** Sends keys by name (Enter, Escape, C-c...). */
  async keys(...names) {
    await this.tmux('send-keys', '-t', this.target, ...names);
  }

  /** Stops the tmux server (and the pane's program with it); idempotent. */
  async kill() {
    if (!this.started) return;
    this.started = false;
    try {
      await this.tmux('kill-server');
    } catch {
      // already gone
    }
  }
}
