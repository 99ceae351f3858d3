// What every harness driver (claude.mjs, codex.mjs, gemini.mjs,
// opencode.mjs) does the same way: find its installed CLI (or fail naming
// the package), run it to its exit in the sandbox, or start it in a tmux
// pane and type into it.

import { cliPath, HARNESS_WAIT_MS, requirePackage } from './sandbox.mjs';
import { Tmux } from './tmux.mjs';

/** The JSON objects of text's lines that start with '{' (what a CLI's
 * --json / --format json output, or a JSON-lines file, holds); a line
 * that does not parse is kept as {unparsed: line}. */
export function jsonLines(text) {
  return text.split('\n').filter((l) => l.startsWith('{')).map((l) => {
    try {
      return JSON.parse(l);
    } catch {
      return { unparsed: l };
    }
  });
}

export class Driver {
  /** pkg: the npm package, bin: its executable's name; opts: sandbox, fake
   * (the FakeModel it talks to), env (more variables for the CLI). Throws,
   * naming the package, when it is not installed. */
  constructor(pkg, bin, { sandbox, fake, env = {} }) {
    this.version = requirePackage(pkg);
    this.bin = cliPath(pkg, bin);
    this.sandbox = sandbox;
    this.fake = fake;
    this.extraEnv = env;
    this.tmux = null;
  }

  /** The CLI's environment: the sandbox's, what the driver needs
   * (overridden by each driver) and the caller's env. */
  env(own = {}) {
    return this.sandbox.env({ ...own, ...this.extraEnv });
  }

  /** Runs the CLI with args to its exit: {code, signal, stdout, stderr, proc}. */
  async runToExit(name, args, { timeout = HARNESS_WAIT_MS } = {}) {
    const p = this.sandbox.spawn(name, this.bin, args, { env: this.env() });
    const { code, signal } = await p.waitExit(timeout);
    return { code, signal, stdout: p.out, stderr: p.err, proc: p };
  }

  /** Starts the CLI with args in a tmux pane and waits until its screen
   * matches ready (what names it in a failure). */
  async startTerminal(args, ready, what, { timeout = HARNESS_WAIT_MS } = {}) {
    this.tmux = new Tmux(this.sandbox);
    await this.tmux.start([this.bin, ...args], { env: this.env() });
    await this.tmux.waitScreen(ready, { timeout, what });
    return this.tmux;
  }

  /** Types a message into the terminal and submits it: the text first,
   * Enter once the text is on screen (Enter sent in the same burst would be
   * taken as part of a paste). */
  async type(text, { timeout = HARNESS_WAIT_MS } = {}) {
    await this.tmux.type(text);
    const probe = text.slice(-Math.min(text.length, 30));
    await this.tmux.waitScreen((s) => s.includes(probe), { timeout, what: `the typed text ${JSON.stringify(probe)} on screen` });
    await this.tmux.keys('Enter');
  }

  /** The terminal's last screen, for failure messages. */
  async screen() {
    return this.tmux ? this.tmux.capture().catch((e) => `(no screen: ${e.message})`) : '(not started in a terminal)';
  }
}
