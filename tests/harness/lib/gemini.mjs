// Gemini CLI (@google/gemini-cli) driven by a fake Gemini API.
//
// Pointed at the fake by GOOGLE_GEMINI_BASE_URL with a dummy GEMINI_API_KEY
// and security.auth.selectedType = "gemini-api-key" in
// ~/.gemini/settings.json, which also holds the MCP servers (mcpServers,
// with trust: true so a call needs no confirmation) and the hooks (hooks:
// {Event: [{matcher?, hooks: [{type: "command", command, name}]}]}). The
// model is named with -m, so the CLI's router asks no model which model to
// use. GEMINI_CLI_TRUST_WORKSPACE=true trusts the project folder (else a
// headless run refuses to start, exit 55).
//
// Two ways to run it:
// - prompt(text): `gemini -p`, headless, one prompt (the agent's turn and
//   whatever an AfterAgent hook continues), exits; resume: 'latest' or a
//   session id continues a recorded session.
// - interactive(): `gemini` in a tmux pane; type(text) submits a message.
//
// Kept off: usage statistics, telemetry, the update check and its nag.

import path from 'node:path';
import { FAKE_GEMINI_MODEL } from './fake/gemini.mjs';
import { cliPath, HARNESS_WAIT_MS, requirePackage } from './sandbox.mjs';
import { Tmux } from './tmux.mjs';

export const GEMINI_PACKAGE = '@google/gemini-cli';

// How Gemini CLI names an MCP server's tool to the model (and in hooks).
export const geminiToolName = (server, tool) => `mcp_${server}_${tool}`;

export class Gemini {
  /** opts: sandbox, fake (a FakeModel of gemini), mcp ({name: {command,
   * args}}), hooks, settings (more settings.json keys), env. */
  constructor({ sandbox, fake, mcp = {}, hooks = {}, settings = {}, env = {} }) {
    this.version = requirePackage(GEMINI_PACKAGE);
    this.bin = cliPath(GEMINI_PACKAGE, 'gemini');
    this.sandbox = sandbox;
    this.fake = fake;
    this.extraEnv = env;
    this.tmux = null;
    sandbox.write(path.join(sandbox.home, '.gemini', 'settings.json'), {
      security: { auth: { selectedType: 'gemini-api-key' } },
      general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
      privacy: { usageStatisticsEnabled: false },
      telemetry: { enabled: false },
      ui: { theme: 'Default' },
      model: { name: FAKE_GEMINI_MODEL },
      mcpServers: Object.fromEntries(Object.entries(mcp).map(([name, s]) => [name, { ...s, trust: true }])),
      hooks,
      ...settings,
    });
  }

  env() {
    return this.sandbox.env({
      GEMINI_API_KEY: 'fake-gemini-key',
      GOOGLE_GEMINI_BASE_URL: this.fake.url,
      GEMINI_CLI_TRUST_WORKSPACE: 'true',
      ...this.extraEnv,
    });
  }

  /** `gemini -p text -m MODEL` to its exit: {code, signal, stdout, stderr}. */
  async prompt(text, { resume, args = [], timeout = HARNESS_WAIT_MS } = {}) {
    const extra = resume ? ['--resume', resume] : [];
    const p = this.sandbox.spawn('gemini -p', this.bin, ['-m', FAKE_GEMINI_MODEL, ...extra, ...args, '-p', text],
      { env: this.env() });
    const { code, signal } = await p.waitExit(timeout);
    return { code, signal, stdout: p.out, stderr: p.err, proc: p };
  }

  /** Starts `gemini` in a tmux pane and waits for its input box. */
  async interactive({ args = [], timeout = HARNESS_WAIT_MS } = {}) {
    this.tmux = new Tmux(this.sandbox);
    await this.tmux.start([this.bin, '-m', FAKE_GEMINI_MODEL, ...args], { env: this.env() });
    await this.tmux.waitScreen(/Type your message/, { timeout, what: "Gemini CLI's input box" });
    return this.tmux;
  }

  /** Types a message into the interactive session and submits it. */
  async type(text, { timeout = HARNESS_WAIT_MS } = {}) {
    await this.tmux.type(text);
    const probe = text.slice(-Math.min(text.length, 30));
    await this.tmux.waitScreen((s) => s.includes(probe), { timeout, what: `the typed text ${JSON.stringify(probe)} on screen` });
    await this.tmux.keys('Enter');
  }

  async screen() {
    return this.tmux ? this.tmux.capture().catch((e) => `(no screen: ${e.message})`) : '(not interactive)';
  }
}
